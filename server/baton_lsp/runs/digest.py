"""The plan hash a checkpoint records (`baton.plan_sha256`): one definition for the engine
that writes it and the rules that compare a plan against it."""

from __future__ import annotations

import hashlib
import os


def sha256_file(path: str | os.PathLike[str]) -> str | None:
    """Hex SHA-256 of a file's saved bytes (never an editor's unsaved buffer); None when it
    cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()

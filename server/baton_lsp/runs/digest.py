"""The plan hash a checkpoint records (`baton.plan_sha256`): one definition for the engine
that writes it and the rules that compare a plan against it.

`hashlib` (which loads OpenSSL) is imported where a hash is computed: a check imports this
module for every plan, and only a plan some checkpoint recorded is ever hashed."""

from __future__ import annotations

import os
from pathlib import Path

from ..parse.plan_marks import plan_fingerprint
from . import confine


def sha256_file(path: str | os.PathLike[str], root: Path | None = None) -> str | None:
    """Hex SHA-256 of a file's saved bytes (never an editor's unsaved buffer); None when it
    cannot be read — not a regular file (a FIFO is never waited on) or, with the workspace
    `root`, reached through a link leaving it (never read)."""
    # OpenSSL only when a plan is hashed
    import hashlib

    h = hashlib.sha256()
    try:
        with confine.open_read(root, path) if root is not None else \
                confine.open_regular(path) as (fd, _, _):
            while chunk := os.read(fd, 1 << 20):
                h.update(chunk)
    except OSError:
        return None
    return h.hexdigest()


def plan_edited(plan: Path, sha256: str | None, progress_free: str | None,
                root: Path | None = None) -> bool:
    """The plan differs from what a checkpoint recorded in more than progress: its bytes
    changed and — when the checkpoint has it (`baton.plan_progress_free`) — so did its
    fingerprint without status markers and task boxes. The engine marks phases between
    checkpoints and people tick boxes: neither is an edit that re-runs anything."""
    if sha256 is None or sha256_file(plan, root) == sha256:
        return False
    if progress_free is None:
        return True
    try:
        raw = confine.read_bytes(root, plan) if root is not None else \
            confine.read_regular(plan)
        return bytes_edited(raw, sha256, progress_free)
    except OSError:
        return True


def bytes_edited(data: bytes, sha256: str | None, progress_free: str | None) -> bool:
    """`plan_edited` of a plan's bytes read already (by a reader that would not follow a
    link out of the workspace nor wait on a FIFO)."""
    if sha256 is None:
        return False
    # OpenSSL only when a plan is hashed
    import hashlib

    if hashlib.sha256(data).hexdigest() == sha256:
        return False
    return progress_free is None or plan_fingerprint(data) != progress_free

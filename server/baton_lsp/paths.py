"""Path helpers with no dependencies, importable from the server's start-up path."""

from __future__ import annotations

import os
from pathlib import Path


def norm(path: str | Path) -> str:
    """Absolute, normalised path string: the one key every cache and index uses."""
    return os.path.normpath(os.path.abspath(path))

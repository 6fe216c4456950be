"""Path helpers with no dependencies, importable from the server's start-up path."""

from __future__ import annotations

import os
from pathlib import Path


def norm(path: str | Path) -> str:
    """Absolute, normalised path string: the one key every cache and index uses."""
    return os.path.normpath(os.path.abspath(path))


WORKTREES = (".claude", "worktrees")
"""Where Claude Code (`claude --worktree`) and Baton's isolated phases keep git worktrees:
full checkouts of the repository, so nothing under them is a workspace of its own or part
of the one around them."""


def in_worktrees(parts: tuple[str, ...]) -> bool:
    """A path (as parts) lies inside some `.claude/worktrees/` directory."""
    return any(parts[i:i + 2] == WORKTREES for i in range(len(parts) - 1))

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


FINE_RACY_NS = 50_000_000
COARSE_RACY_NS = 2_000_000_000
"""How long before a read a change must have happened for `stat` to prove it was seen:
a few clock ticks where timestamps have sub-second precision (the kernel stamps files with
a coarse clock: two changes within one tick look alike), two seconds where not."""


def settled(changed_ns: int, before_ns: int, strict: bool = True) -> bool:
    """Whether a change stamped `changed_ns` happened safely before `before_ns` (wall clock):
    a few timestamp ticks earlier (`strict`), or merely earlier (tests that write a file and
    read it at once; the margin is for file systems whose clock is coarser than ours)."""
    racy = COARSE_RACY_NS if changed_ns % 1_000_000_000 == 0 else FINE_RACY_NS
    return changed_ns + (racy if strict else 0) < before_ns


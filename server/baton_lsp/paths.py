"""Path helpers with no dependencies, importable from the server's start-up path."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
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



_looking: list[list[str]] = []


@contextmanager
def recording_looks() -> Iterator[list[str]]:
    """Collect every path the workspace discovery looks at (directories listed, files read,
    names probed) while the block runs: a whole check can then be replayed for as long as
    none of them changed (`rules/replay.py`). Outside such a block `look` does nothing."""
    found: list[str] = []
    _looking.append(found)
    try:
        yield found
    finally:
        _looking.remove(found)


def look(path: str | Path) -> None:
    """Note that the discovery looked at `path`: its listing if a directory, its content if a
    file, its existence either way (a name probed inside a directory is covered by a look at
    the directory: adding or removing it changes the directory)."""
    if _looking:
        _looking[-1].append(os.fspath(path))

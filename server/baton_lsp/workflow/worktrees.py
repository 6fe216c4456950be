"""Where Baton's phase worktrees live and how their names read, apart from the implement
state's machinery (`isolation`): `baton status` lists them without importing the engine."""

from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path

from .. import paths
from .git import GitError, repo_of

WORKTREES = Path(*paths.WORKTREES)
TREE_NAME = re.compile(r"^baton-(?P<wid>.+)-phase-(?P<pid>[A-Za-z0-9._-]+)$")
"""A phase worktree's directory name: `baton-<workflow id>-phase-<phase id>`."""


def live_worktrees(root: Path) -> list[dict[str, str | None]]:
    """Baton's phase worktrees in the workspace (`baton status`): path, branch, workflow
    id and phase of each."""
    repo = repo_of(root)
    if repo is None or not os.path.isdir(root / WORKTREES):
        return []
    base = os.path.realpath(root / WORKTREES)
    out: list[dict[str, str | None]] = []
    with contextlib.suppress(GitError):
        for path, branch in repo.worktrees()[1:]:
            m = TREE_NAME.match(path.name)
            if m and os.path.realpath(path.parent) == base:
                out.append({"path": str(path), "branch": branch, "workflow_id": m["wid"],
                            "phase": m["pid"]})
    return out

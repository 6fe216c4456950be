"""Finding `.claude/` workspaces and deciding what each file is from its path."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..model.base import Kind

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".hypothesis"}


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds a `.claude/` directory."""
    cur = start if start.is_dir() else start.parent
    cur = Path(os.path.abspath(cur))
    parts = cur.parts
    if ".claude" in parts:  # inside .claude/: its parent is the root
        idx = len(parts) - 1 - parts[::-1].index(".claude")
        return Path(*parts[:idx]) if idx > 0 else None
    for cand in (cur, *cur.parents):
        if (cand / ".claude").is_dir():
            return cand
    return None


def _is_backup(name: str, parts: tuple[str, ...]) -> bool:
    return (".backup" in name or name.endswith(".bak") or "backups" in parts
            or any(p.endswith(".backup") for p in parts))


def classify(rel: str) -> Kind | None:
    """Kind of the file at `rel` (POSIX, relative to the workspace root); None = not ours."""
    parts = tuple(rel.split("/"))
    name = parts[-1]
    if ".claude" in parts[1:]:
        return None  # stray nested copies such as .claude/tests/.claude/...
    if _is_backup(name, parts):
        return None
    in_claude = parts[0] == ".claude"
    sub = parts[1:] if in_claude else parts
    if not sub:
        return None
    if name.endswith(".md"):
        if name.lower() == "readme.md":
            return None
        if in_claude and sub[0] == "agents":
            return Kind.AGENT
        if in_claude and sub[0] == "commands":
            return Kind.COMMAND if len(sub) == 2 else None
        if sub[0] == "specs":
            if "plans" in sub:
                return Kind.PLAN
            if "reports" in sub:
                return Kind.REPORT
            if "summaries" in sub:
                return Kind.SUMMARY
            if "debug" in sub and "plan" in name:
                return Kind.PLAN
            return None
        if in_claude and sub[0] == "lib" and "fixtures" in sub:
            return Kind.PLAN
        return None
    if not in_claude:
        return None
    if name.endswith(".jsonl") and ("logs" in sub or name.startswith("errors")):
        return Kind.ERRORS_LOG
    if name.endswith(".json") and ("checkpoints" in sub) and sub[0] in ("data", "checkpoints") \
            and name != "run.json" and "logs" not in sub:  # the engine's owner file, agent logs
        return Kind.CHECKPOINT
    if name.endswith(".state") or (name.endswith(".sh") and (
            (sub[0] == "tmp" and ("workflow_" in name or "state" in name)) or ".state" in sub)):
        return Kind.STATE
    return None


_ENGINE_HISTORY = re.compile(
    r"(^|[/\\])\.claude[/\\]data[/\\]checkpoints[/\\][A-Za-z0-9][A-Za-z0-9_.-]*$")


def engine_history_dir(directory: str) -> bool:
    """A workflow's directory of the engine's own history (`.claude/data/checkpoints/<id>`,
    relative or absolute)."""
    return _ENGINE_HISTORY.search(directory) is not None


def excluded(rel: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.rstrip("/") + "/*")
               for p in patterns)


def walk(root: Path, exclude: Iterable[str] = ()) -> Iterator[tuple[Path, Kind]]:
    """Every classified file of the workspace at `root` (its `.claude/` and `specs/`)."""
    patterns = list(exclude)
    root_str = os.path.abspath(root)
    for top in (".claude", "specs"):
        base = os.path.join(root_str, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in _SKIP_DIRS and d != ".claude")
            rel_dir = os.path.relpath(dirpath, root_str).replace(os.sep, "/")
            if engine_history_dir(rel_dir):
                # the engine's own checksummed history (up to 500 files per workflow):
                # checked when opened or named, not on every workspace walk
                dirnames[:] = []
                continue
            for fname in sorted(filenames):
                rel = f"{rel_dir}/{fname}"
                kind = classify(rel)
                if kind is None or (patterns and excluded(rel, patterns)):
                    continue
                yield Path(dirpath, fname), kind


def find_workspaces(path: Path) -> list[Path]:
    """Workspace roots at or below `path` (a directory may hold several, e.g. a corpus)."""
    path = Path(os.path.abspath(path))
    roots: list[Path] = []
    above = find_root(path)
    if above is not None:
        roots.append(above)
    if path.is_dir():
        for dirpath, dirnames, _ in os.walk(path):
            here = Path(dirpath)
            if ".claude" in dirnames and here not in roots and ".claude" not in here.parts:
                roots.append(here)
            dirnames[:] = [d for d in dirnames if d not in _SKIP_DIRS and d != ".claude"]
    return roots

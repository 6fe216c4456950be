"""Finding workspaces and deciding what each file is from its path.

A workspace root holds `.claude/`, or a `specs/` directory with plans or a `state.json` task
registry (trees that keep their plans in the repository but their Claude Code setup in the
user's home). Plans also live outside `specs/`: `docs/**/plans/`, a root `PLAN.md`,
`.claude/plans/`, `.claude/TODO.md`. Those places hold notes and templates too, so a file
found there is a plan only when its text looks like one (phase headings or task checkboxes).
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..model.base import Kind

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".hypothesis"}

_NOT_COMMAND_DIRS = {"shared", "templates"}
"""`.claude/commands/` subdirectories that hold fragments included by commands, not commands."""

_SNIFF_BYTES = 65536
_PLAN_SHAPE = re.compile(
    r"^(?:#{1,6}[ \t]+(?:\S.*?[ \t])?(?:Phase|Stage)[ \t]+\d|[ \t]*[-*+][ \t]+\[[ xX]\][ \t])",
    re.MULTILINE | re.IGNORECASE)
"""A phase heading (`## Phase 2: ...`, `### Stage 1`) or a task checkbox (`- [ ] ...`)."""


def specs_root(directory: Path) -> bool:
    """True when `directory/specs/` holds a task registry or plans (`specs/plans/`,
    `specs/<topic>/plans/`): a workspace root even without `.claude/`."""
    specs = directory / "specs"
    try:
        if (specs / "state.json").is_file() or (specs / "plans").is_dir():
            return True
        with os.scandir(specs) as entries:
            return any(e.is_dir() and os.path.isdir(os.path.join(e.path, "plans"))
                       for e in entries)
    except OSError:
        return False


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds `.claude/` or a `specs/` with
    plans or a registry (the nearest wins: a path is classified relative to its root)."""
    cur = start if start.is_dir() else start.parent
    cur = Path(os.path.abspath(cur))
    parts = cur.parts
    if ".claude" in parts:  # inside .claude/: its parent is the root
        idx = len(parts) - 1 - parts[::-1].index(".claude")
        return Path(*parts[:idx]) if idx > 0 else None
    for cand in (cur, *cur.parents):
        if (cand / ".claude").is_dir() or specs_root(cand):
            return cand
    return None


_ARCHIVE_DIRS = frozenset({"archive", "archives", "archived", "_archive", "_archived",
                           ".archive", "analysis-archive"})
"""Directories of retired files: archived agents disabled on purpose, frozen eval runs, done
plans filed away. Nothing reads them any more, so nothing in them is checked."""


def _is_backup(name: str, parts: tuple[str, ...]) -> bool:
    return (".backup" in name or name.endswith(".bak") or "backups" in parts
            or any(p.endswith(".backup") or p.lower() in _ARCHIVE_DIRS for p in parts[:-1]))


def _is_template(name: str) -> bool:
    """A file whose name says it is a template to copy (`TEMPLATE.md`, `x-template.md`,
    `x_template.md`, `x.template.md`): its placeholders are meant, so it is not checked."""
    stem = name.rsplit(".", 1)[0].lower()
    return stem == "template" or stem.endswith(("-template", "_template", ".template"))


def plan_candidate(rel: str) -> bool:
    """True for the places outside `specs/` where plans live beside other notes:
    `docs/**/plans/**.md`, a root `PLAN.md`, `.claude/plans/**.md`, `.claude/TODO.md`."""
    parts = tuple(rel.split("/"))
    name = parts[-1]
    if not name.endswith(".md") or name.lower() == "readme.md" or _is_template(name):
        return False
    if len(parts) == 1:
        return name.lower() == "plan.md"
    if parts[0] == "docs":
        return "plans" in parts[1:-1]
    if parts[0] == ".claude":
        return parts[1:] == ("TODO.md",) or (len(parts) > 2 and parts[1] == "plans")
    return False


def looks_like_plan(path: Path) -> bool:
    """True when the start of the file has a phase heading or a task checkbox."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(_SNIFF_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    return _PLAN_SHAPE.search(head) is not None


def classify(rel: str, root: Path | None = None) -> Kind | None:
    """Kind of the file at `rel` (POSIX, relative to the workspace root); None = not ours.

    Decided from the path alone, except for `plan_candidate` paths: with `root` their text
    is read to tell a plan from a note; without it they are not ours."""
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
    if sub == ("specs", "state.json"):
        return Kind.REGISTRY
    if plan_candidate(rel):
        return Kind.PLAN if root is not None and looks_like_plan(root / rel) else None
    if name.endswith(".md"):
        if name.lower() == "readme.md":
            return None
        if in_claude and sub[0] == "agents":
            # Templates to copy from are not agents: their placeholders are on purpose.
            if _is_template(name) or "templates" in sub[1:-1]:
                return None
            return Kind.AGENT
        if in_claude and sub[0] == "commands":
            # namespaced commands (`commands/<ns>/x.md` is `/ns:x`) at any depth
            return Kind.COMMAND if len(sub) == 2 or (
                len(sub) > 2 and sub[1] not in _NOT_COMMAND_DIRS) else None
        if in_claude and sub[0] == "skills":
            # `skills/<name>/SKILL.md`, or grouped: `skills/<group>/<name>/SKILL.md`
            return Kind.SKILL if len(sub) >= 3 and name == "SKILL.md" else None
        if sub[0] == "specs":
            if _is_template(name):
                return None
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
    """Every classified file of the workspace at `root` (its `.claude/`, `specs/`, `docs/`
    and a root `PLAN.md`)."""
    patterns = list(exclude)
    root_str = os.path.abspath(root)
    try:
        top_files = sorted(n for n in os.listdir(root_str) if n.lower() == "plan.md")
    except OSError:
        top_files = []
    for fname in top_files:  # listed, not probed: `PLAN.md` and `plan.md` once each
        kind = classify(fname, Path(root_str))
        if kind is not None and not (patterns and excluded(fname, patterns)):
            yield Path(root_str, fname), kind
    for top in (".claude", "specs", "docs"):
        base = os.path.join(root_str, top)
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in _SKIP_DIRS and d != ".claude"
                                 and d.lower() not in _ARCHIVE_DIRS)
            rel_dir = os.path.relpath(dirpath, root_str).replace(os.sep, "/")
            if engine_history_dir(rel_dir):
                # the engine's own checksummed history (up to 500 files per workflow):
                # checked when opened or named, not on every workspace walk
                dirnames[:] = []
                continue
            for fname in sorted(filenames):
                rel = f"{rel_dir}/{fname}"
                kind = classify(rel, Path(root_str))
                if kind is None or (patterns and excluded(rel, patterns)):
                    continue
                yield Path(dirpath, fname), kind


def find_workspaces(path: Path) -> list[Path]:
    """Workspace roots at or below `path` (a directory may hold several, e.g. a corpus):
    directories with `.claude/` or with a `specs/` that holds plans or a registry."""
    path = Path(os.path.abspath(path))
    roots: list[Path] = []
    above = find_root(path)
    if above is not None:
        roots.append(above)
    if path.is_dir():
        for dirpath, dirnames, _ in os.walk(path):
            here = Path(dirpath)
            if here not in roots and ".claude" not in here.parts and (
                    ".claude" in dirnames or ("specs" in dirnames and specs_root(here))):
                roots.append(here)
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and d != ".claude"
                                 and d.lower() not in _ARCHIVE_DIRS)
    return roots

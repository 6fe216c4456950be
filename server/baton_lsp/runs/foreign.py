"""Runs of the seeds' bash orchestration system, found where that system writes them.

Baton's own runs are directories of checksummed history (`store.py`); the bash system
(`checkpoint-utils.sh`, `save_json_checkpoint`) writes one JSON file per checkpoint:
flat files in `.claude/data/checkpoints/`, the older `.claude/checkpoints/<dir>/<name>.json`
(where the corpus keeps its test checkpoints) and `.claude/tmp/<name>.json`. Listing them
beside Baton's runs — read-only, with what `check_safe_resume_conditions` would say — is
what lets `baton status`, the editor and `baton adopt` treat them as runs at all.

Discovery is bounded: symbolic links that leave the workspace, files over `MAX_BYTES`,
non-regular files and JSON that is not a workflow checkpoint (supervisor and build-iteration
checkpoints, other `.claude/tmp/` data) are skipped; a file that cannot be read is listed as
`unreadable` with the reason, never raised.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from ..model.checkpoint import Checkpoint
from ..model.states import RunStatus, Scope, State
from . import confine
from .checkpoint import (
    CheckpointError,
    LoadedCheckpoint,
    detect_kind,
    parse_checkpoint,
    read_json_object,
    safe_resume_problems,
)
from .places import checkpoints_root
from .record import RecordError, RunRecord, read_record
from .store import CheckpointStore, list_workflows, verify_file

ID_PREFIX = "bash:"
"""Marks a run of the bash system; never part of a Baton workflow id (`store.valid_id`)."""
MAX_BYTES = 4 * 1024 * 1024
MAX_FILES = 2000
"""Entries looked at per directory, and candidates in all: a `.claude/tmp/` full of scratch
files stays cheap."""
PLAN_PHASE_TYPES = frozenset({"implement", "build"})
"""Workflow types whose `current_phase`/`completed_phases` count the plan's phases, not
the state machine's (the implement command checkpoints after each plan phase)."""

ORIGIN = "bash"

_ITERATION_NAME = re.compile(r"^build_.+_iteration_\d+\.json$")
_CHECKPOINT_KEYS = ("schema_version", "state_machine", "checkpoint_id", "workflow_type",
                    "current_phase")


@dataclass(frozen=True)
class BashState:
    """Where a bash checkpoint stands, in the engine's vocabulary."""

    state: State
    scope: Scope
    completed_states: tuple[State, ...]
    plan_phases: bool
    """`current_phase`/`completed_phases` are plan phases (implement/build workflows)."""
    from_state_machine: bool
    """The state came from the file's own `state_machine` (2.x), not from phase numbers."""
    current_phase: int | None = None
    total_phases: int | None = None
    completed_phases: tuple[int, ...] = ()


def bash_state(loaded: LoadedCheckpoint) -> BashState:
    """The state a bash checkpoint is in. A 2.x file says so in its state machine; a 1.x
    implement/build file counts plan phases, so it is implementing (scope implement-only);
    any other 1.x file's phase numbers name states, as the 1.3 → 2.0 migration maps them."""
    cp = loaded.checkpoint
    assert isinstance(cp, Checkpoint)
    sm = cp.state_machine
    real = loaded.effective_version in ("2.0", "2.1")
    plan_phases = cp.workflow_type.strip().lower() in PLAN_PHASE_TYPES
    done = tuple(cp.completed_phases)
    if plan_phases and not real:
        return BashState(State.IMPLEMENT, Scope.IMPLEMENT_ONLY, (State.IMPLEMENT,), True,
                         False, cp.current_phase, cp.total_phases, done)
    return BashState(sm.current_state, sm.workflow_config.scope,
                     tuple(dict.fromkeys(sm.completed_states)), plan_phases, real,
                     cp.current_phase, cp.total_phases, done)


@dataclass(frozen=True)
class ForeignRun:
    """One checkpoint file of the bash system, summarised (or why it cannot be read)."""

    id: str
    path: Path
    status: str
    """The file's own status (in_progress, completed, failed, …) or `unreadable`."""
    problem: str | None = None
    state: str | None = None
    scope: str | None = None
    workflow_type: str | None = None
    description: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    checkpoint_id: str | None = None
    schema_version: str | None = None
    current_phase: int | None = None
    total_phases: int | None = None
    completed_phases: tuple[int, ...] = ()
    plan_phases: bool = False
    plan: str | None = None
    """The plan the checkpoint names, absolute (a relative path is the workspace's)."""
    plan_exists: bool = False
    problems: tuple[str, ...] = ()
    """What `check_safe_resume_conditions` would refuse (empty: safe to resume)."""
    notes: tuple[str, ...] = ()
    sha256: str | None = None

    @property
    def readable(self) -> bool:
        return self.status != RunStatus.UNREADABLE

    def phase_text(self) -> str | None:
        """`plan phase 2 of 5 (done: 1)` or `phase 3 of 8`, as the checkpoint counts."""
        if self.current_phase is None:
            return None
        what = "plan phase" if self.plan_phases else "phase"
        text = f"{what} {self.current_phase}"
        if self.total_phases:
            text += f" of {self.total_phases}"
        if self.completed_phases:
            text += f" (done: {', '.join(map(str, self.completed_phases))})"
        return text

    def as_dict(self, adopted_by: str | None = None) -> dict[str, Any]:
        """A `baton status --json` row, marked `origin: bash`."""
        return {
            "workflow_id": self.id, "origin": ORIGIN, "running": False,
            "status": self.status, "state": self.state, "scope": self.scope,
            "workflow_type": self.workflow_type, "description": self.description,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "checkpoint_id": self.checkpoint_id, "schema_version": self.schema_version,
            "phase": None if self.current_phase is None else {
                "current": self.current_phase, "total": self.total_phases,
                "completed": list(self.completed_phases),
                "counts": "plan" if self.plan_phases else "state"},
            "plan": self.plan, "plan_exists": self.plan_exists,
            "checkpoint_path": str(self.path), "sha256": self.sha256,
            "problems": list(self.problems), "problem": self.problem,
            "notes": list(self.notes), "adopted_by": adopted_by}


# -- ids and locations -------------------------------------------------------------------------


def _claude(root: Path) -> Path:
    return root / ".claude"


def run_id(root: Path, path: Path) -> str:
    """`bash:<name>` for a flat file of `.claude/data/checkpoints/`, else `bash:` and the
    path under `.claude/` (`bash:checkpoints/test_524747/test_checkpoint`,
    `bash:tmp/x`), without `.json`: unique per file, and never a Baton workflow id."""
    real = os.path.join(os.path.realpath(path.parent), path.name)
    rel = os.path.relpath(real, os.path.realpath(_claude(root))).replace(os.sep, "/")
    rel = rel[:-5] if rel.endswith(".json") else rel
    flat = rel.removeprefix("data/checkpoints/")
    return ID_PREFIX + (flat if flat != rel and "/" not in flat else rel)


def path_of_id(root: Path, run: str) -> Path | None:
    """The file a `bash:` id names, or None when the id cannot name one."""
    rel = run.removeprefix(ID_PREFIX)
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..") for p in parts):
        return None
    if len(parts) == 1:
        return checkpoints_root(root) / f"{rel}.json"
    return _claude(root).joinpath(*parts[:-1], f"{parts[-1]}.json")


def is_foreign_id(token: str) -> bool:
    return token.startswith(ID_PREFIX)


def inside(root: Path, path: str | os.PathLike[str]) -> bool:
    """Whether `path`, symbolic links resolved, is in the workspace."""
    root_r = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == root_r or real.startswith(root_r.rstrip(os.sep) + os.sep)


def _locations(root: Path) -> list[tuple[Path, bool]]:
    """(directory, strict): in a strict directory every `*.json` is meant as a checkpoint,
    so one that cannot be read is listed; in `.claude/tmp/` only names saying so are."""
    out = [(checkpoints_root(root), True)]
    legacy = _claude(root) / "checkpoints"
    out.append((legacy, True))
    for entry in _scandir(legacy):
        if entry.is_dir() and not entry.name.startswith("."):
            out.append((Path(entry.path), True))
    out.append((_claude(root) / "tmp", False))
    return out


def _scandir(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            out = []
            for entry in it:
                out.append(entry)
                if len(out) >= MAX_FILES:
                    break
            return sorted(out, key=lambda e: e.name)
    except OSError:
        return []


def candidates(root: Path) -> list[tuple[Path, bool]]:
    """Checkpoint-looking files of the bash system's locations: (path, strict)."""
    out: list[tuple[Path, bool]] = []
    for directory, strict in _locations(root):
        if not directory.is_dir() or not inside(root, directory):
            continue
        for entry in _scandir(directory):
            name = entry.name
            if not name.endswith(".json") or name.startswith(".") or \
                    _ITERATION_NAME.match(name):
                continue  # temp files; Baton's and the bash system's build iterations
            if entry.is_symlink() and not inside(root, entry.path):
                continue
            out.append((Path(entry.path), strict or "checkpoint" in name.lower()))
            if len(out) >= MAX_FILES:
                return out
    return out


# -- reading -----------------------------------------------------------------------------------


def _stamp(st: os.stat_result) -> tuple[int, int, int]:
    return (st.st_mtime_ns, st.st_size, st.st_ino)


@dataclass
class _Parsed:
    """What reading a file gave, before the time- and plan-dependent judgement."""

    stamp: tuple[int, int, int]
    run: ForeignRun | None
    loaded: LoadedCheckpoint | None = None
    plan: str | None = None


def _plan_of(root: Path, loaded: LoadedCheckpoint) -> str | None:
    ws = loaded.checkpoint.workflow_state  # type: ignore[union-attr]
    raw = ws.plan_path if ws is not None else None
    if not raw or not isinstance(raw, str) or "\x00" in raw:
        return None
    p = Path(raw)
    return str(p if p.is_absolute() else root / p)


def _parse(root: Path, path: Path, raw: bytes, st: os.stat_result, strict: bool) -> _Parsed:
    rid = run_id(root, path)
    stamp = _stamp(st)
    digest = hashlib.sha256(raw).hexdigest()

    def unreadable(why: str) -> _Parsed:
        if not strict:
            return _Parsed(stamp, None)
        return _Parsed(stamp, ForeignRun(rid, path, RunStatus.UNREADABLE, problem=why,
                                         sha256=digest))

    try:
        data = read_json_object(raw, str(path))
    except CheckpointError as exc:
        return unreadable(str(exc))
    if isinstance(data.get("baton"), dict) and "checksum" in data["baton"]:
        return _Parsed(stamp, None)  # a Baton record somewhere else: not the bash system's
    try:
        kind = detect_kind(data, str(path))[0]
    except CheckpointError as exc:
        return unreadable(str(exc))
    if kind != "checkpoint":
        return _Parsed(stamp, None)  # supervisor or build-iteration: not a run
    if not any(k in data for k in _CHECKPOINT_KEYS):
        return unreadable("not a workflow checkpoint (no schema_version, checkpoint_id, "
                          "workflow_type or state_machine)")
    try:
        loaded = parse_checkpoint(raw, str(path), path)
    except CheckpointError as exc:
        return unreadable(str(exc))
    if loaded.kind != "checkpoint":
        return _Parsed(stamp, None)  # supervisor or build-iteration: not a run
    where = bash_state(loaded)
    cp = loaded.checkpoint
    assert isinstance(cp, Checkpoint)
    plan = _plan_of(root, loaded)
    run = ForeignRun(
        id=rid, path=path, status=str(cp.status), state=where.state.value,
        scope=where.scope.value, workflow_type=cp.workflow_type,
        description=cp.workflow_description, created_at=cp.created_at,
        updated_at=cp.updated_at or cp.created_at, checkpoint_id=cp.checkpoint_id,
        schema_version=loaded.source_version, current_phase=where.current_phase,
        total_phases=where.total_phases, completed_phases=where.completed_phases,
        plan_phases=where.plan_phases, plan=plan, notes=tuple(loaded.notes), sha256=digest)
    return _Parsed(stamp, run, loaded, plan)


def _load(root: Path, path: Path, st: os.stat_result, strict: bool) -> _Parsed:
    if st.st_size > MAX_BYTES:
        why = (f"{st.st_size // (1024 * 1024)} MB, more than a checkpoint can be "
               f"({MAX_BYTES // (1024 * 1024)} MB); not read")
        return _Parsed(_stamp(st), ForeignRun(run_id(root, path), path, RunStatus.UNREADABLE,
                                              problem=why) if strict else None)
    try:
        raw = confine.read_bytes(root, path, MAX_BYTES)
    except OSError as exc:
        return _Parsed(_stamp(st), ForeignRun(run_id(root, path), path, RunStatus.UNREADABLE,
                                              problem=f"cannot read: {confine.describe(exc)}")
                       if strict else None)
    return _parse(root, path, raw, st, strict)


def _judged(parsed: _Parsed, now: datetime | None = None) -> ForeignRun | None:
    """The run with what would stop a safe resume now (age, plan edits change over time)."""
    run = parsed.run
    if run is None or parsed.loaded is None:
        return run
    plan = parsed.plan
    exists = plan is not None and os.path.isfile(plan)
    problems = safe_resume_problems(parsed.loaded.checkpoint,  # type: ignore[arg-type]
                                    plan if exists else None, now)
    return replace(run, plan_exists=exists, problems=tuple(problems))


class ForeignRuns:
    """The bash system's runs of one workspace, each file re-read only when its `stat`
    changed (a rescan with nothing new costs a directory listing and a stat per file)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: dict[str, _Parsed] = {}

    def scan(self, now: datetime | None = None) -> list[ForeignRun]:
        seen: set[str] = set()
        out: list[ForeignRun] = []
        for path, strict in candidates(self.root):
            key = str(path)
            seen.add(key)
            parsed = self._get(path, strict)
            run = _judged(parsed, now) if parsed is not None else None
            if run is not None:
                out.append(run)
        for gone in set(self._cache) - seen:
            del self._cache[gone]
        return out

    def _get(self, path: Path, strict: bool) -> _Parsed | None:
        key = str(path)
        try:
            st = os.stat(path)
        except OSError as exc:
            self._cache.pop(key, None)
            return _Parsed((0, 0, 0), ForeignRun(
                run_id(self.root, path), path, RunStatus.UNREADABLE,
                problem=f"cannot read: {exc.strerror or exc}")) if strict else None
        if not stat.S_ISREG(st.st_mode):
            self._cache.pop(key, None)
            return None
        old = self._cache.get(key)
        if old is not None and old.stamp == _stamp(st):
            return old
        parsed = _load(self.root, path, st, strict)
        self._cache[key] = parsed
        return parsed

    def get(self, run: str) -> ForeignRun | None:
        """One run by its `bash:` id (read now), or None when no such checkpoint exists."""
        path = path_of_id(self.root, run)
        return self.read(path) if path is not None else None

    def read(self, path: Path) -> ForeignRun | None:
        """The run of one checkpoint file (read now); None when it is no checkpoint, gone,
        or a symbolic link out of the workspace."""
        if not os.path.lexists(path) or not inside(self.root, path):
            return None
        parsed = self._get(path, True)
        return _judged(parsed) if parsed is not None else None


def discover(root: Path) -> list[ForeignRun]:
    """Every bash-system run of the workspace, read now."""
    return ForeignRuns(root).scan()


def read_run(root: Path, path: Path) -> tuple[ForeignRun, LoadedCheckpoint, bytes]:
    """One bash checkpoint read for adoption: the summary, the migrated checkpoint and the
    exact bytes (their SHA-256 is what the adopting run records). Raises `CheckpointError`
    with a one-line reason for anything that is not a readable bash checkpoint inside the
    workspace."""
    if not inside(root, path):
        raise CheckpointError(f"{path}: outside the workspace {root} (a symbolic link "
                              "leaving it is not followed); refused")
    try:
        st = os.stat(path)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(st.st_mode):
        raise CheckpointError(f"{path}: not a regular file")
    if st.st_size > MAX_BYTES:
        raise CheckpointError(f"{path}: {st.st_size} bytes, more than a checkpoint can be")
    try:
        raw = confine.read_bytes(root, path, MAX_BYTES)
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read: {confine.describe(exc)}") from None
    parsed = _parse(root, path, raw, st, True)
    if parsed.run is None:
        raise CheckpointError(f"{path}: not a workflow checkpoint of the bash system (a "
                              "record Baton wrote, or a supervisor or build-iteration "
                              "checkpoint): nothing to adopt")
    run = _judged(parsed)
    if run is None or parsed.loaded is None:
        raise CheckpointError(parsed.run.problem or f"{path}: unreadable")
    return run, parsed.loaded, raw


def resolve(root: Path, token: str, cwd: Path | None = None) -> Path:
    """The bash checkpoint a `bash:` id or a path names (a relative path is tried against
    the working directory, then the workspace); the bash system keeps its checkpoints under
    `.claude/`, so a path elsewhere is refused. Raises `CheckpointError` saying why."""
    if is_foreign_id(token):
        path = path_of_id(root, token)
        if path is None:
            raise CheckpointError(f"{token!r} is not a valid bash run id (see `baton status`)")
        if not os.path.lexists(path):
            raise CheckpointError(f"no bash checkpoint {token} ({path} does not exist); "
                                  "`baton status` lists them")
        return path
    p = Path(token)
    tries = [p] if p.is_absolute() else [(cwd or Path.cwd()) / p, root / p]
    for candidate in tries:
        if os.path.lexists(candidate):
            # the directory is resolved, the file itself not: a link is judged by read_run
            found = Path(os.path.realpath(candidate.parent), candidate.name)
            claude = os.path.realpath(_claude(root))
            if not str(found).startswith(claude + os.sep):
                raise CheckpointError(f"{token}: not under {claude}: the bash system keeps "
                                      "its checkpoints there (data/checkpoints, checkpoints, "
                                      "tmp)")
            return found
    raise CheckpointError(f"no such checkpoint file or bash run id: {token!r}")


# -- which runs adopted what -------------------------------------------------------------------


@dataclass(frozen=True)
class Adoption:
    """A Baton run made from a bash checkpoint (`baton.adopted_from` of its record)."""

    workflow_id: str
    path: str
    sha256: str | None


def adoption_of(workflow_id: str, record: RunRecord) -> Adoption | None:
    src = record.baton.adopted_from
    if src is None or src.path is None:
        return None
    return Adoption(workflow_id, src.path, src.sha256)


def adoptions(root: Path) -> list[Adoption]:
    """Every Baton run of the workspace that was adopted from a bash checkpoint. The run's
    first record names its source (the store always keeps it, and every later record
    carries it too: the newest sound one answers when the first is damaged)."""
    out: list[Adoption] = []
    for wid in list_workflows(root):
        data, _problem = verify_file(checkpoints_root(root) / wid / "000001.json", root)
        if data is None:
            try:
                data = CheckpointStore(root, wid).latest().data
            except CheckpointError:
                continue
        try:
            found = adoption_of(wid, read_record(data or {}))
        except RecordError:
            continue
        if found is not None:
            out.append(found)
    return out


def adopted_by(run: ForeignRun, found: list[Adoption]) -> str | None:
    """The Baton run that adopted this file (same file, or the same bytes elsewhere)."""
    real = os.path.realpath(run.path)
    for a in found:
        if os.path.realpath(a.path) == real or (run.sha256 and a.sha256 == run.sha256):
            return a.workflow_id
    return None

"""Following workflows from outside their engine: what editors (and `baton check`) show.

The engine's durable outputs are the whole interface — the newest sound checkpoint of each
workflow, its lock (is an engine alive?) and the workflow's `errors.jsonl` records — so a
follower started after the engine (a restarted language server) sees exactly what one
started before it sees. `RunIndex` reads them on demand and caches each workflow by its
checkpoint directory's mtime, so asking again when nothing changed costs one `stat`. The
bash system's own checkpoint files (`foreign.py`) are views too, marked `origin == "bash"`
and never resumable here (`baton adopt` makes a Baton run of one).
`DirWatcher` says when to ask: inotify on Linux (no polling at all), a short `stat` poll
where inotify is missing.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import json
import logging
import os
import re
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model.base import Range
from ..model.data import ErrorRecord, LoggedError
from ..model.states import RunStatus, StepStatus
from ..paths import settled
from . import confine
from .diagnosis import Diagnosis, diagnose
from .foreign import Adoption, ForeignRun, ForeignRuns, adopted_by, adoption_of, is_foreign_id
from .places import checkpoints_root, errors_log_path
from .record import (
    PhaseGit,
    RecordError,
    RunRecord,
    StepRecord,
    SupervisorState,
    read_record,
)
from .store import CheckpointStore, valid_id

log = logging.getLogger(__name__)

PHASE_STEP = re.compile(r"^implement\.phase-(.+)$")
_LOG_CHUNK = 1 << 22
"""Bytes of `errors.jsonl` read at once: a huge log is read in pieces, never whole."""
_SEQ_NAME = re.compile(r"^\d{6}\.json$")
BARRIER_PREFIX = "HARD BARRIER FAILED"
_BARRIER_KINDS = ("missing", "empty", "elsewhere", "outside", "not-a-file")


@dataclass(frozen=True)
class StepView:
    id: str
    state: str
    role: str
    status: StepStatus
    attempts: int
    artifact: str | None
    message: str | None
    failure: str | None  # transient | permanent | fatal
    duration_ms: int | None
    signals: tuple[str, ...]
    usage: dict[str, Any] | None = None
    """Cost and tokens the agent CLI reported for this step (all attempts)."""
    git: PhaseGit | None = None
    """Where a phase's work is in git (its commit, merge or conflict)."""
    worker: str | None = None
    """The Dask worker that ran its last attempt (`executor = "dask"`); None: this machine."""

    @property
    def phase(self) -> str | None:
        m = PHASE_STEP.match(self.id)
        return m.group(1) if m else None

    @property
    def barrier(self) -> bool:
        return bool(self.message and BARRIER_PREFIX in self.message)


@dataclass
class RunView:
    """One workflow as its newest sound checkpoint (and lock) describe it."""

    root: Path
    workflow_id: str
    status: RunStatus | str
    """A `RunStatus`; for a run of the bash system, its file's own word (`completed`, …)."""
    running: bool
    state: str | None = None
    scope: str | None = None
    description: str | None = None
    updated_at: str | None = None
    sequence: int = 0
    checkpoint_path: str | None = None
    plan: str | None = None
    plan_sha256: str | None = None
    plan_progress_free: str | None = None
    steps: dict[str, StepView] = field(default_factory=dict)
    waves: list[list[str]] = field(default_factory=list)
    current_wave: int | None = None
    failure: dict[str, Any] | None = None
    outcome: dict[str, Any] | None = None
    """A `complete` run's `baton.outcome` (`needs_attention`: tests still failing)."""
    problem: str | None = None
    errors: tuple[LoggedError, ...] = ()
    stamp: tuple[Any, ...] = ()
    stamp_settled: bool = False
    """Whether `stamp` was old enough when read to tell every later change (see `_view`)."""
    usage: dict[str, Any] | None = None
    """The workflow's reported cost and tokens (`baton.usage.total`)."""
    adoption: Adoption | None = None
    """The bash checkpoint this Baton run was adopted from (`baton.adopted_from`)."""
    foreign: ForeignRun | None = None
    """Set for a run of the bash system: its checkpoint file, summarised."""
    adopted_by: str | None = None
    """For a bash run: the Baton workflow made from it by `baton adopt`."""
    locked: bool = False
    """An engine holds the run's lock (`running` is that and the record `in_progress`: an
    engine that wrote its final state may hold it a moment longer while it exits)."""
    signature: str | None = None
    """The newest checkpoint's signature verdict (`store.Entry.trust`)."""
    untrusted: str | None = None
    """Why that checkpoint is not trusted (`Entry.distrust`); None when it is."""
    record: RunRecord | None = None
    """The typed record the view was read from (None: unreadable, or a bash run): what
    `baton status` shows beyond the fields above is read from it."""

    def diagnosis(self) -> Diagnosis | None:
        """The seeds' five-part error of a failed run, read from the workspace when asked
        (the follower of every refresh does not pay for it)."""
        if self.record is None or self.status != RunStatus.FAILED:
            return None
        return diagnose(self.root, self.record)

    def topics(self) -> list[str | None]:
        """The recorded research topics' short names (older records store bare names)."""
        if self.record is None:
            return []
        return [t if isinstance(t, str) else t.short_name
                for t in self.record.state_machine.classification.research_topics]

    def tiers(self) -> SupervisorState:
        """`supervisor_state` by coordination tier, typed (an old flat research section
        read nested)."""
        return self.record.supervisor_state if self.record else SupervisorState()

    @property
    def origin(self) -> str:
        return "bash" if self.foreign is not None else "baton"

    @property
    def resumable(self) -> bool:
        """`baton resume` can take it: the bash system's runs must be adopted first."""
        return self.foreign is None and isinstance(self.status, RunStatus) and \
            self.status.resumable

    @property
    def finished(self) -> bool:
        return not self.running and self.status != RunStatus.IN_PROGRESS

    def phase_step(self, phase_id: str) -> StepView | None:
        return self.steps.get(f"implement.phase-{phase_id}")

    def errors_of(self, step_id: str) -> list[LoggedError]:
        return [e for e in self.errors if e.record.source == step_id]

    def barrier_kind(self, step: StepView) -> str | None:
        """missing | empty | elsewhere | outside | not-a-file, from the step's error record
        (its context names it), else from the message."""
        if not step.barrier:
            return None
        for entry in reversed(self.errors_of(step.id)):
            kind = entry.record.context.get("error")
            if kind in _BARRIER_KINDS:
                return str(kind)
        text = step.message or ""
        if "wrong location" in text:
            return "elsewhere"
        if "is empty" in text:
            return "empty"
        if "outside the workspace" in text:
            return "outside"
        if "not a regular file" in text:
            return "not-a-file"
        return "missing"

    def reported_path(self, step: StepView) -> str | None:
        for entry in reversed(self.errors_of(step.id)):
            if entry.record.context.get("reported_path"):
                return str(entry.record.context["reported_path"])
        return None

    def log_path(self, step: StepView) -> Path | None:
        """The agent's output of the step's last attempt (`logs/<step>.attempt-N.log`)."""
        path = self._log_name(step)
        return path if path is not None and path.is_file() else None

    def _log_name(self, step: StepView) -> Path | None:
        if self.checkpoint_path is None:
            return None
        return Path(self.checkpoint_path).parent / "logs" / \
            f"{step.id}.attempt-{max(step.attempts, 1)}.log"

    def agent_report(self, step: StepView, limit: int = 240) -> str | None:
        """The agent's own last words: its last signals, else the tail of its output."""
        lines = [s for s in step.signals if not s.startswith("PROGRESS:")]
        if not lines:
            path = self._log_name(step)  # a FIFO or link there is named by `_tail`
            if path is not None and os.path.lexists(path):
                tail = [ln.strip() for ln in _tail(self.root, path).splitlines()
                        if ln.strip()]
                lines = [ln for ln in tail if not ln.startswith("PROGRESS:")] or tail
        if not lines:
            return None
        text = " | ".join(lines[-3:])
        return text if len(text) <= limit else "…" + text[-limit:]

    def done_phases(self) -> int:
        return sum(1 for s in self.steps.values()
                   if s.phase is not None and s.status == StepStatus.DONE)

    def total_phases(self) -> int:
        return sum(len(w) for w in self.waves)


def _tail(root: Path, path: Path, size: int = 4096) -> str:
    """The last `size` bytes of an agent's log; nothing when it is not a regular file
    inside the workspace (a planted FIFO or a link out of it is never read)."""
    try:
        with confine.open_read(root, path) as (fd, end, _):
            return os.pread(fd, size, max(0, end - size)).decode("utf-8", "replace")
    except OSError as exc:
        log.warning("not showing the agent log %s: %s", path, confine.describe(exc))
        return ""


def _step(sid: str, step: StepRecord) -> StepView:
    return StepView(id=sid, state=step.state, role=step.role, status=step.status,
                    attempts=step.attempts, artifact=step.artifact, message=step.message,
                    failure=step.failure, duration_ms=step.duration_ms,
                    signals=tuple(step.signals), usage=step.usage, git=step.git,
                    worker=step.worker)


def read_view(root: Path, workflow_id: str, errors: tuple[LoggedError, ...] = ()) -> RunView:
    """The view of one workflow; never raises (an unusable history is `unreadable`)."""
    store = CheckpointStore(root, workflow_id)
    running = store.locked()
    try:
        entry = store.latest()
    except Exception as exc:
        return RunView(root, workflow_id, RunStatus.UNREADABLE, running, problem=str(exc),
                       errors=errors, locked=running)
    try:
        record = read_record(entry.data or {}, str(entry.path))
    except RecordError as exc:
        return RunView(root, workflow_id, RunStatus.UNREADABLE, running, problem=str(exc),
                       errors=errors, locked=running)
    baton = record.baton
    locked = running
    status = record.status
    if status == RunStatus.IN_PROGRESS and not running:
        status = RunStatus.INTERRUPTED  # the engine died without writing its final state
    running = running and status == RunStatus.IN_PROGRESS  # final is final while it exits
    ws = record.workflow_state
    return RunView(
        root=root, workflow_id=workflow_id, status=status, running=running,
        state=record.state, scope=record.scope, description=record.workflow_description,
        updated_at=record.updated_at, sequence=entry.sequence, checkpoint_path=str(entry.path),
        plan=record.plan, plan_sha256=baton.plan_sha256,
        plan_progress_free=baton.plan_progress_free,
        steps={sid: _step(sid, step) for sid, step in baton.steps.items()},
        waves=record.waves(), current_wave=ws.current_wave if ws else None,
        failure=baton.failure.model_dump(by_alias=True, exclude_unset=True)
        if status == RunStatus.FAILED and baton.failure else None,
        outcome=baton.outcome.model_dump(mode="json")
        if status == RunStatus.COMPLETE and baton.outcome is not None else None,
        errors=errors, usage=baton.usage_total(), adoption=adoption_of(workflow_id, record),
        locked=locked, signature=entry.trust, untrusted=entry.distrust, record=record)


def foreign_view(root: Path, run: ForeignRun, adopted: str | None = None) -> RunView:
    """A bash-system run as a view: its file's status and state, never running here."""
    return RunView(root=root, workflow_id=run.id, status=run.status, running=False,
                   state=run.state, scope=run.scope, description=run.description,
                   updated_at=run.updated_at, checkpoint_path=str(run.path), plan=run.plan,
                   problem=run.problem, foreign=run, adopted_by=adopted)


class ErrorLog:
    """The records of `errors.jsonl`, by workflow, read incrementally: appends cost only the
    new bytes; a rotation (new inode or a shorter file) starts over. A line that is not a
    JSON object, or names no workflow, is skipped (the BTN4xx rules report it)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = errors_log_path(root)
        self._key: tuple[int, int] | None = None
        self._offset = 0
        self._line = 0
        self._by_workflow: dict[str, list[LoggedError]] = {}
        self._warned: str | None = None

    def refresh(self) -> bool:
        """Read what was appended; True when anything changed."""
        try:
            with confine.open_read(self.root, self.path) as (fd, size, _):
                st = os.fstat(fd)
                key = (st.st_dev, st.st_ino)
                if key != self._key or size < self._offset:
                    self._key, self._offset, self._line, self._by_workflow = key, 0, 0, {}
                changed = False
                while size > self._offset:  # bounded chunks: the log may be huge
                    chunk = os.pread(fd, min(size - self._offset, _LOG_CHUNK), self._offset)
                    end = chunk.rfind(b"\n") + 1  # a half-written last line waits
                    if end == 0:
                        if len(chunk) < _LOG_CHUNK:
                            break
                        self._offset += len(chunk)  # a line longer than a chunk: no record
                        continue
                    for raw in chunk[:end].splitlines():
                        self._add(raw)
                        self._line += 1
                    self._offset += end
                    changed = True
                return changed
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                self._warn(exc)
            changed = bool(self._by_workflow)
            self._key, self._offset, self._line, self._by_workflow = None, 0, 0, {}
            return changed

    def _warn(self, exc: OSError) -> None:
        """Once per kind of problem: a planted FIFO or link must be said, not repeated at
        every refresh of a follower."""
        why = confine.describe(exc)
        if why != self._warned:
            self._warned = why
            log.warning("not reading the error log: %s", why)

    def _add(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace")
        try:
            obj = json.loads(text)
            if not isinstance(obj, dict) or not isinstance(obj.get("workflow_id"), str):
                return
            record = ErrorRecord.model_validate(obj)
        except (ValueError, RecursionError):
            return
        self._by_workflow.setdefault(obj["workflow_id"], []).append(LoggedError(
            line=self._line, range=Range.of_line(self._line, 0, len(text)), record=record))

    def of(self, workflow_id: str) -> tuple[LoggedError, ...]:
        return tuple(self._by_workflow.get(workflow_id, ()))


class RunIndex:
    """Every workflow of one workspace, re-read only when its checkpoint directory changed,
    and the bash system's runs, re-read only when their file's `stat` changed.
    Thread-safe: rules run on checker threads, the language server on its loop.

    `views()` (and `for_plan`, which every plan check asks) re-stats the workflow
    directories at most every `max_age` seconds: a bulk check of thousands of plans costs
    one pass, not one per plan. `view(id)` is always current; followers call it on each
    change, which also updates what `views()` returns. `workflow_ids()` names Baton's
    workflows only: the bash system's runs have no engine to follow."""

    FRESH_SECONDS = 0.25

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base = checkpoints_root(root)
        self.errors = ErrorLog(root)
        self.foreign = ForeignRuns(root)
        self._views: dict[str, RunView] = {}
        self._foreign_views: dict[str, RunView] = {}
        self._plans: dict[str, str] = {}  # workflow id → realpath of its plan
        self._scanned = -1e9
        self._lock = threading.RLock()

    def workflow_ids(self) -> list[str]:
        try:
            return sorted(e.name for e in os.scandir(self.base)
                          if e.is_dir() and valid_id(e.name))
        except OSError:
            return []

    def view(self, workflow_id: str) -> RunView:
        """Current view of one workflow (cached while its directory and errors are
        unchanged and, for a live run, while its engine still holds the lock); a `bash:`
        id is the bash system's run of that file."""
        with self._lock:
            if is_foreign_id(workflow_id):
                return self._foreign_view(workflow_id)
            self.errors.refresh()
            return self._view(workflow_id)

    def _foreign_view(self, run_id: str) -> RunView:
        run = self.foreign.get(run_id)
        if run is None:
            self._foreign_views.pop(run_id, None)
            self._plans.pop(run_id, None)
            return RunView(self.root, run_id, RunStatus.UNREADABLE, False,
                           problem="no such checkpoint of the bash system (the file is gone)")
        view = foreign_view(self.root, run, adopted_by(run, self._adoptions()))
        self._foreign_views[run_id] = view
        self._plan_of(view)
        return view

    def _adoptions(self) -> list[Adoption]:
        return [v.adoption for v in self._views.values() if v.adoption is not None]

    def _plan_of(self, view: RunView) -> None:
        """Record the plan a view runs; an adopted bash run leaves it to its Baton run."""
        if view.plan and view.adopted_by is None:
            self._plans[view.workflow_id] = os.path.realpath(view.plan)
        else:
            self._plans.pop(view.workflow_id, None)

    def _scan_foreign(self) -> None:
        adoptions = self._adoptions()
        views = {run.id: foreign_view(self.root, run, adopted_by(run, adoptions))
                 for run in self.foreign.scan()}
        for gone in set(self._foreign_views) - set(views):
            self._plans.pop(gone, None)
        self._foreign_views = views
        for view in views.values():
            self._plan_of(view)

    def _view(self, workflow_id: str) -> RunView:
        errors = self.errors.of(workflow_id)
        read_at = time.time_ns()
        try:
            st = os.stat(self.base / workflow_id)
            stamp: tuple[Any, ...] = (st.st_mtime_ns, st.st_ino, len(errors))
        except OSError:
            stamp = (None, None, len(errors))
        old = self._views.get(workflow_id)
        if old is not None and old.stamp == stamp and old.stamp_settled and (
                not old.running or CheckpointStore(self.root, workflow_id).locked()):
            return old  # a live run is re-read once its engine lets go of the lock
        view = read_view(self.root, workflow_id, errors)
        view.stamp = stamp
        # A checkpoint written in the same timestamp tick as an earlier one leaves the
        # directory's mtime as it was: a stamp that recent proves nothing, read again.
        view.stamp_settled = stamp[0] is None or settled(stamp[0], read_at)
        self._views[workflow_id] = view
        self._plan_of(view)
        return view

    def views(self, max_age: float | None = None) -> list[RunView]:
        age = self.FRESH_SECONDS if max_age is None else max_age
        with self._lock:
            if time.monotonic() - self._scanned >= age:
                ids = self.workflow_ids()
                for gone in set(self._views) - set(ids):
                    del self._views[gone]
                    self._plans.pop(gone, None)
                self.errors.refresh()
                for wid in ids:
                    self._view(wid)
                self._scan_foreign()
                self._scanned = time.monotonic()
            return [self._views[wid] for wid in sorted(self._views)] + \
                [self._foreign_views[rid] for rid in sorted(self._foreign_views)]

    def for_plan(self, plan: str | Path) -> RunView | None:
        """The most recently updated workflow whose plan is `plan` (a run of the bash system
        too, unless a Baton run adopted it)."""
        want = os.path.realpath(plan)
        best: RunView | None = None
        for v in self.views():
            if self._plans.get(v.workflow_id) == want and (
                    best is None or (v.updated_at or "", v.sequence) >
                    (best.updated_at or "", best.sequence)):
                best = v
        return best


# -- watching ------------------------------------------------------------------------------

_IN_MODIFY, _IN_CLOSE_WRITE, _IN_MOVED_TO, _IN_CREATE = 0x2, 0x8, 0x80, 0x100
_IN_DELETE, _IN_DELETE_SELF, _IN_MOVE_SELF, _IN_IGNORED = 0x200, 0x400, 0x800, 0x8000
_IN_ONLYDIR, _IN_ISDIR = 0x01000000, 0x40000000
_IN_NONBLOCK, _IN_CLOEXEC = os.O_NONBLOCK, 0o2000000
_EVENT = struct.Struct("iIII")
_DIR_MASK = _IN_CREATE | _IN_MOVED_TO | _IN_DELETE | _IN_DELETE_SELF | _IN_MOVE_SELF | \
    _IN_CLOSE_WRITE | _IN_ONLYDIR
Change = tuple[str, str | None]
"""("checkpoint", workflow id) | ("errors", None) | ("workflows", None)."""


def _libc() -> Any:
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        lib.inotify_init1  # noqa: B018 - probe: AttributeError on systems without it
        return lib
    except (OSError, AttributeError):
        return None


class DirWatcher:
    """Changes to a workspace's checkpoints and errors log, as `Change` tuples.

    With inotify, `fileno()` is a descriptor to select on (an asyncio reader) and `read()`
    drains it; directories that appear later (`.claude/data/checkpoints/<id>/`) are added
    as they are created. Without inotify, `fileno()` is None and `poll()` compares a
    `stat` signature — call it a few times a second.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base = checkpoints_root(root)
        self.logs = errors_log_path(root).parent
        self._lib = _libc() if os.environ.get("BATON_NO_INOTIFY") != "1" else None
        self._fd: int | None = None
        self._wds: dict[int, Path] = {}
        self._watched: set[Path] = set()
        self._signature: dict[str, Any] = {}
        if self._lib is not None:
            fd = self._lib.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
            if fd >= 0:
                self._fd = fd
                self._sync_watches()
            else:
                log.info("inotify unavailable (errno %s); polling", ctypes.get_errno())
        if self._fd is None:
            self._signature = self._snapshot()

    @property
    def native(self) -> bool:
        return self._fd is not None

    def fileno(self) -> int | None:
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def _add(self, path: Path) -> bool:
        if path in self._watched or self._fd is None or self._lib is None:
            return path in self._watched
        wd = self._lib.inotify_add_watch(self._fd, os.fsencode(path), _DIR_MASK | (
            _IN_MODIFY if path == self.logs else 0))
        if wd < 0:
            return False
        self._wds[wd] = path
        self._watched.add(path)
        return True

    def _sync_watches(self) -> None:
        """Watch the deepest existing ancestor up to the checkpoints root and the logs dir,
        and every workflow directory under the root."""
        claude = self.root / ".claude"
        data = claude / "data"
        for chain in ((claude, data, self.base), (claude, data, self.logs)):
            for path in chain:
                if not path.is_dir() or not self._add(path):
                    break
        if self.base in self._watched:
            with contextlib.suppress(OSError):
                for e in os.scandir(self.base):
                    if e.is_dir() and valid_id(e.name):
                        self._add(Path(e.path))

    def read(self) -> set[Change]:
        """Drain pending inotify events into changes (empty when nothing relevant)."""
        out: set[Change] = set()
        if self._fd is None:
            return out
        structure = False
        while True:
            try:
                buf = os.read(self._fd, 65536)
            except BlockingIOError:
                break
            except OSError:
                break
            if not buf:
                break
            pos = 0
            while pos + _EVENT.size <= len(buf):
                wd, mask, _cookie, length = _EVENT.unpack_from(buf, pos)
                name = buf[pos + _EVENT.size: pos + _EVENT.size + length].rstrip(b"\0")
                pos += _EVENT.size + length
                where = self._wds.get(wd)
                if mask & _IN_IGNORED:
                    if where is not None:
                        self._watched.discard(where)
                        del self._wds[wd]
                    structure = True
                    continue
                if where is None:
                    continue
                text = os.fsdecode(name)
                if where == self.logs:
                    if text.startswith("errors.jsonl"):
                        out.add(("errors", None))
                elif where == self.base:
                    structure = True
                    out.add(("workflows", None))
                    if valid_id(text):
                        out.add(("checkpoint", text))
                elif where.parent == self.base:
                    if _SEQ_NAME.match(text) or mask & (_IN_DELETE_SELF | _IN_MOVE_SELF):
                        out.add(("checkpoint", where.name))
                elif mask & (_IN_CREATE | _IN_MOVED_TO | _IN_ISDIR):
                    structure = True  # .claude/data or checkpoints/ appeared
        if structure:
            before = set(self._watched)
            self._sync_watches()
            for path in self._watched - before:
                if path.parent == self.base:
                    out.add(("checkpoint", path.name))
                elif path == self.base:
                    out.add(("workflows", None))
                    out |= {("checkpoint", p.name) for p in self._watched
                            if p.parent == self.base}
                elif path == self.logs:
                    out.add(("errors", None))
        return out

    def _snapshot(self) -> dict[str, Any]:
        sig: dict[str, Any] = {}
        with contextlib.suppress(OSError):
            st = os.stat(errors_log_path(self.root))
            sig["errors"] = (st.st_ino, st.st_size, st.st_mtime_ns)
        with contextlib.suppress(OSError):
            for e in os.scandir(self.base):
                if e.is_dir() and valid_id(e.name):
                    st = e.stat()
                    sig[e.name] = (st.st_ino, st.st_mtime_ns)
        return sig

    def poll(self) -> set[Change]:
        """Without inotify: what changed since the last poll."""
        now = self._snapshot()
        old, self._signature = self._signature, now
        out: set[Change] = set()
        if now.get("errors") != old.get("errors"):
            out.add(("errors", None))
        ids = (set(now) | set(old)) - {"errors"}
        if ids != (set(old) - {"errors"}) or ids != (set(now) - {"errors"}):
            out.add(("workflows", None))
        out |= {("checkpoint", wid) for wid in ids if now.get(wid) != old.get(wid)}
        return out


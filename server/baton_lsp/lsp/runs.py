"""The one run follower: one state per workflow of the open workspaces, from which every
surface the editor shows is derived — the `baton/workflowChanged` notification (the
Workflows view and the status bar read its `run` and `workflow.list`'s rows), the plan's code
lenses, `$/progress` and the plan graph — so they always name the same state.

Each state is a `RunView` built from the workflow's checkpoints (one `DirWatcher` per
workspace: inotify, the server sleeps until the engine renames a new checkpoint into place; a
0.15 s `stat` poll where inotify is missing) and, for a run this server launched
(`workflows.Runs`), updated by the engine's typed events (`model/events.py`) as they arrive:
the events are newer than any checkpoint, so they overlay the view until the run ends and its
final checkpoint is read. A state that changed re-checks the files whose run findings depend
on it (the plan, agent files), refreshes code lenses, notifies the client and reports
progress (re-attached after a restart). A 2 s lock probe runs only while some followed
workflow is live, to notice an engine that died without writing its final checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import logging
import uuid
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from lsprotocol import types

from . import diagnostics
from .convert import path_to_uri
from .engine_cli import cancel_process
from .server import BatonServer

if TYPE_CHECKING:
    from ..model.events import Event
    from ..model.plan import Plan
    from ..model.states import RunStatus, StepStatus
    from ..runs.follow import DirWatcher, RunView

log = logging.getLogger(__name__)

POLL_SECONDS = 0.15  # only without inotify: a few stats per workflow, ~0.3 % CPU
LIVENESS_SECONDS = 2.0
COALESCE_SECONDS = 0.005
ADOPT_SECONDS = 0.5
CHANGED = "baton/workflowChanged"
"""Notification sent when a followed workflow moves: `{workflow_id, workspace, event, run}`,
`run` being the state every surface shows (`RunState.snapshot`)."""

VERBS = {"initialize": "initializing", "research": "researching", "plan": "planning",
         "implement": "implementing", "test": "testing", "debug": "debugging",
         "document": "documenting", "complete": "completing"}
NOTIFIED = ("transition", "wave", "step", "finished", "waiting", "reconciled")
"""Engine event kinds forwarded to the client (the rest only change the state)."""


def describe(view: RunView) -> str:
    """The one text of a run's state: `implementing · wave 2/3 · 1/4 phases` while it runs,
    `complete · 4/4 phases` or `failed in implement · 1/4 phases` once it stopped."""
    from ..model.states import RunStatus, State  # the core loads after `initialize`

    if view.running or view.status == RunStatus.IN_PROGRESS:
        parts = [VERBS.get(view.state or "", view.state or "starting")]
        if view.waves and view.state == State.IMPLEMENT and view.current_wave:
            parts.append(f"wave {view.current_wave}/{len(view.waves)}")
    else:
        where = "" if view.status == RunStatus.COMPLETE or not view.state \
            else f" in {view.state}"
        parts = [f"{view.status}{where}"]
    if view.waves:
        parts.append(f"{view.done_phases()}/{view.total_phases()} phases")
    return " · ".join(parts)


def phase_statuses(view: RunView | None, plan: Plan) -> dict[str, str]:
    """Phase id → `done | running | failed | pending` for the plan graph: what the run did
    to the phase, else the plan's own marker (`[COMPLETE]` is done without any run)."""
    # the core loads after `initialize`
    from ..model.plan import is_complete
    from ..model.states import StepStatus

    out: dict[str, str] = {}
    for phase in plan.phases:
        step = view.phase_step(phase.id) if view is not None else None
        if step is not None and step.status == StepStatus.RUNNING and not (
                view and view.running):
            status = "failed"  # the run stopped while the phase was at work
        elif step is not None and step.status in (StepStatus.DONE, StepStatus.RUNNING,
                                                  StepStatus.FAILED):
            status = step.status.value
        else:
            status = "done" if is_complete(phase) else "pending"
        out.setdefault(phase.id, status)
    return out


@dataclass
class Overlay:
    """What the engine's event stream said that the last checkpoint read may not show yet."""

    state: str | None = None
    wave: int | None = None
    steps: dict[str, tuple[str, StepStatus, int]] = field(default_factory=dict)
    """Step id → (state, status, attempt) of its latest step event."""
    status: RunStatus | str | None = None
    note: str | None = None
    """The latest thing worth saying besides the state: waiting, reconciled, a failure."""


@dataclass
class RunState:
    """One workflow as every surface shows it: the checkpoint's view with the live events
    of a launched run laid over it (`view`), and the text all of them print (`text`)."""

    root: Path
    workflow_id: str
    base: RunView | None = None
    live: Overlay | None = None
    launched: bool = False
    description: str | None = None
    token: str | None = None

    @property
    def view(self) -> RunView:
        from ..model.states import RunStatus  # the core loads on first use
        from ..runs.follow import RunView, StepView

        base = self.base or RunView(self.root, self.workflow_id, RunStatus.IN_PROGRESS, True,
                                    description=self.description)
        live = self.live
        if live is None:
            return base
        steps = dict(base.steps)
        for sid, (state, status, attempt) in live.steps.items():
            old = steps.get(sid)
            steps[sid] = dataclasses.replace(old, status=status, attempts=max(
                old.attempts, attempt)) if old is not None else StepView(
                id=sid, state=state, role="", status=status, attempts=attempt, artifact=None,
                message=None, failure=None, duration_ms=None, signals=())
        running = live.status is None
        return dataclasses.replace(
            base, steps=steps, state=live.state or base.state,
            current_wave=live.wave if live.wave is not None else base.current_wave,
            running=running,
            status=RunStatus.IN_PROGRESS if running else live.status or base.status)

    @property
    def text(self) -> str:
        note = self.live.note if self.live is not None else None
        return describe(self.view) + (f" · {note}" if note else "")

    def snapshot(self) -> dict[str, object]:
        """The state as the client reads it (notification, list rows, graph)."""
        view = self.view
        return {"workflow_id": self.workflow_id, "workspace": str(self.root),
                "state": view.state, "status": view.status, "running": view.running,
                "wave": view.current_wave, "waves": len(view.waves), "text": self.text,
                "plan": view.plan,
                "steps": {sid: s.status for sid, s in view.steps.items()}}

    def apply(self, event: Event) -> None:
        """Lay one engine event over the view."""
        from ..model import events as ev  # the core loads on first use
        from ..model.states import RunStatus, StepStatus

        live = self.live = self.live or Overlay()
        match event:
            case ev.TransitionEvent():
                live.state, live.wave, live.note = event.target, None, None
            case ev.WaveEvent():
                live.wave, live.note = event.wave, None
            case ev.StepEvent():
                live.state = event.state or live.state
                live.steps[event.step] = (event.state, event.status, event.attempt or 1)
                live.note = f"{event.step} failed: {event.message}" \
                    if event.status == StepStatus.FAILED else None
            case ev.WaitingEvent():  # another run of the repository is merging: say whom for
                who = event.holder
                live.note = (f"waiting for workflow {who}" if who else "waiting for another run") \
                    + (f" ({event.holder_what})" if event.holder_what else "")
            case ev.ReconciledEvent():
                live.note = f"reconciled: {event.what}"
            case ev.FinishedEvent():
                live.status = event.status
                live.state = event.state or live.state
                live.note = "needs attention" if event.outcome else None
                if event.status != RunStatus.COMPLETE and event.message:
                    live.note = event.message


def row_overlay(row: dict[str, object], state: RunState | None) -> dict[str, object]:
    """A `workflow.list`/`workflow.status` row with the follower's state laid over it: the
    Workflows view and the status bar read the same state as the lenses and the progress."""
    if state is None:
        return row
    view = state.view
    steps = row.get("steps")
    merged = {**steps} if isinstance(steps, dict) else {}
    for sid, step in view.steps.items():
        old = merged.get(sid)
        merged[sid] = {**old, "status": step.status} if isinstance(old, dict) else \
            {"state": step.state, "status": step.status}
    return {**row, "state": view.state, "status": view.status, "running": view.running,
            "steps": merged, "text": state.text, "current_wave": view.current_wave}


class Follower:
    def __init__(self, ls: BatonServer) -> None:
        self.ls = ls
        self.watchers: dict[Path, DirWatcher] = {}
        self.states: dict[tuple[Path, str], RunState] = {}
        self.scheduled: dict[tuple[Path, str | None], asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Future[object]] = set()
        self.cancellers: dict[tuple[Path, str], Callable[[], None]] = {}
        self.beginning: set[tuple[Path, str]] = set()
        self._poller: asyncio.TimerHandle | None = None
        self._liveness: asyncio.TimerHandle | None = None
        self._lens_pending = False
        self.refreshes = 0  # for benchmarks and tests

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Watch every workspace root and pick up workflows already there."""
        for root in self.ls.session.discover_roots():
            self.watch(Path(root))

    def watch(self, root: Path) -> None:
        if root in self.watchers:
            return
        from ..runs.follow import DirWatcher  # the core loads after `initialize`

        watcher = DirWatcher(root)
        self.watchers[root] = watcher
        loop = asyncio.get_running_loop()
        fd = watcher.fileno()
        if fd is not None:
            loop.add_reader(fd, self._readable, root)
        elif self._poller is None:
            self._poller = loop.call_later(POLL_SECONDS, self._poll)
        self._spawn(self.scan(root))

    def unwatch(self, root: Path) -> None:
        watcher = self.watchers.pop(root, None)
        if watcher is None:
            return
        fd = watcher.fileno()
        if fd is not None and self.ls.event_loop is not None:
            with contextlib.suppress(Exception):
                self.ls.event_loop.remove_reader(fd)
        watcher.close()
        for key in [k for k in self.states if k[0] == root]:
            del self.states[key]

    def native(self, root: Path) -> bool:
        watcher = self.watchers.get(root)
        return watcher is not None and watcher.native

    def stop(self) -> None:
        loop = self.ls.event_loop
        for watcher in self.watchers.values():
            fd = watcher.fileno()
            if fd is not None and loop is not None:
                with contextlib.suppress(Exception):
                    loop.remove_reader(fd)
            watcher.close()
        self.watchers.clear()
        for handle in (self._poller, self._liveness, *self.scheduled.values()):
            if handle is not None:
                handle.cancel()

    def _spawn(self, coro: Coroutine[object, object, object]) -> None:
        task: asyncio.Future[object] = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # -- the states -----------------------------------------------------------------------

    def state(self, root: Path, wid: str) -> RunState | None:
        return self.states.get((root, wid))

    def for_plan(self, plan: str) -> RunState | None:
        """The state the lenses and the graph show for `plan`: its latest workflow, with
        what a launched run's events said laid over it."""
        runs = self.ls.session.index_for(plan).runs
        found = runs.for_plan(plan)
        if found is None:
            return None
        state = self.states.get((runs.root, found.workflow_id))
        if state is not None and state.base is not None:
            return state
        return RunState(runs.root, found.workflow_id, base=found)  # not followed (yet)

    def row(self, view: RunView, row: dict[str, object]) -> dict[str, object]:
        """`row` (`runs.status.as_json(view)`, read off the loop) with the state the
        follower holds for `view`'s workflow laid over it."""
        return row_overlay(row, self.states.get((view.root, view.workflow_id)))

    # -- change detection -----------------------------------------------------------------

    def _readable(self, root: Path) -> None:
        watcher = self.watchers.get(root)
        if watcher is not None:
            self._dispatch(root, watcher.read())

    def _poll(self) -> None:
        self._poller = None
        for root, watcher in list(self.watchers.items()):
            if not watcher.native:
                self._dispatch(root, watcher.poll())
        loop = asyncio.get_running_loop()
        self._poller = loop.call_later(POLL_SECONDS, self._poll)

    def _dispatch(self, root: Path, changes: set[tuple[str, str | None]]) -> None:
        for kind, wid in changes:
            if kind == "checkpoint" and wid:
                self.poke(root, wid)
            elif kind == "errors":
                for (r, w), st in list(self.states.items()):
                    if r == root and st.base is not None and (st.base.running
                                                               or st.base.resumable):
                        self.poke(root, w)
            elif kind == "workflows":
                self.poke(root, None)

    def poke(self, root: Path, wid: str | None) -> None:
        """Refresh `wid` (None: rescan the workspace) soon, once per burst of events."""
        key = (root, wid)
        if key in self.scheduled:
            return
        loop = asyncio.get_running_loop()

        def fire() -> None:
            self.scheduled.pop(key, None)
            self._spawn(self.scan(root) if wid is None else self.refresh(root, wid))

        self.scheduled[key] = loop.call_later(COALESCE_SECONDS, fire)

    async def scan(self, root: Path) -> None:
        runs = self.ls.session.index_for_root(root).runs
        for wid in await asyncio.to_thread(runs.workflow_ids):
            st = self.states.get((root, wid))
            if st is None or st.base is None:
                await self.refresh(root, wid)

    async def refresh(self, root: Path, wid: str) -> None:
        runs = self.ls.session.index_for_root(root).runs
        try:
            view = await asyncio.to_thread(runs.view, wid)
        except Exception:
            log.exception("reading workflow %s failed", wid)
            return
        self.refreshes += 1
        st = self.states.setdefault((root, wid), RunState(root, wid))
        old, before = st.base, (st.text, st.view.running, st.view.status)
        st.base = view
        if old is not None and _same(old, view) and before == (
                st.text, st.view.running, st.view.status):
            return
        await self._changed(st, old, {
            "event": "checkpoint", "status": st.view.status, "state": st.view.state,
            "running": st.view.running, "checkpoint": view.checkpoint_path})

    # -- a launched run's events ----------------------------------------------------------

    def launched(self, root: Path, wid: str, description: str, token: str | None,
                 cancel: Callable[[], None]) -> RunState:
        """A run this server started named itself: its events overlay the state from now."""
        st = self.states.setdefault((root, wid), RunState(root, wid))
        st.launched, st.description, st.live = True, description, Overlay()
        self.cancellers[(root, wid)] = cancel
        if token is not None:
            if st.token is not None and st.token != token:  # followed before it named itself
                self._end_progress(st.token, st.text)
            st.token = token
        return st

    def on_event(self, root: Path, wid: str, event: Event) -> None:
        from ..model import events as ev  # pydantic: loaded when a run is followed

        st = self.states.get((root, wid))
        if st is None:
            return
        st.apply(event)
        if isinstance(event, ev.CheckpointEvent | ev.TransitionEvent | ev.FinishedEvent):
            self.poke(root, wid)  # the checkpoint it names: read it now, not on inotify's time
        if event.event in NOTIFIED:
            self._report(st)
            self._notify(st, ev.to_json(event))

    async def finished(self, root: Path, wid: str, ending: str | None) -> None:
        """A launched run's engine exited (`ending`: how, when it printed no `finished`):
        the final checkpoint is the state again, and its progress ends."""
        from ..model.states import RunStatus  # the core loads after `initialize`

        st = self.states.get((root, wid))
        if st is None:
            return
        if st.live is not None and st.live.status is None:
            st.live.status = ending or RunStatus.INTERRUPTED
        self.cancellers.pop((root, wid), None)
        text = st.text
        live, st.live = st.live, None
        await self.refresh(root, wid)
        if st.base is None or st.base.running:
            st.live = live  # no final checkpoint (it never got that far): the events stand
        if st.token is not None:
            token, st.token = st.token, None
            self._end_progress(token, st.text)
        elif st.launched:
            ok = live is None or live.status == RunStatus.COMPLETE
            self.ls.window_show_message(types.ShowMessageParams(  # no progress UI
                type=types.MessageType.Info if ok else types.MessageType.Warning,
                message=f"Baton: workflow {wid} {text}"))
        st.launched = False

    # -- reactions ------------------------------------------------------------------------

    async def _changed(self, st: RunState, old: RunView | None,
                       event: Mapping[str, object]) -> None:
        self._progress(st)
        self._refresh_lenses()
        self.ls.protocol.notify(CHANGED, {
            "workflow_id": st.workflow_id, "workspace": str(st.root), "event": dict(event),
            "run": st.snapshot()})
        if st.base is not None:
            await self._recheck(st.root, old, st.base)
        self._arm_liveness()

    def _notify(self, st: RunState, event_json: str) -> None:
        self._refresh_lenses()
        self.ls.protocol.notify(CHANGED, {
            "workflow_id": st.workflow_id, "workspace": str(st.root),
            "event": json.loads(event_json), "run": st.snapshot()})

    async def _recheck(self, root: Path, old: RunView | None, view: RunView) -> None:
        """Re-check and publish the files whose run findings `view` may have changed: its
        plan and whatever recorded the workflow's directory; agent files (they depend on
        every workflow) only when the run started, stopped or its failed agent steps
        changed — a failed run failing again elsewhere keeps its status."""
        idx = self.ls.session.index_for_root(root)
        targets = idx.direct_dependents(idx.runs.base / view.workflow_id)
        if old is None or old.status != view.status or old.running != view.running or \
                _agent_failures(old) != _agent_failures(view):
            targets |= idx.direct_dependents(idx.runs.base)  # agent files: any workflow
        if view.plan:
            targets.add(str(Path(view.plan)))
        for path in sorted(targets):
            if idx.kind_of(path) is None:
                continue
            await diagnostics.validate(self.ls, path_to_uri(path), dependents=False)
        if targets and self.ls.pull_diagnostics and self.ls.refresh_support:
            with contextlib.suppress(Exception):
                self.ls.workspace_diagnostic_refresh(None)

    def _refresh_lenses(self) -> None:
        if self._lens_pending or not self.ls.code_lens_refresh:
            return
        self._lens_pending = True

        def send() -> None:
            self._lens_pending = False
            with contextlib.suppress(Exception):
                self.ls.workspace_code_lens_refresh(None)

        asyncio.get_running_loop().call_soon(send)

    def _arm_liveness(self) -> None:
        if self._liveness is not None:
            return
        if not any(st.base is not None and st.base.running for st in self.states.values()):
            return

        def check() -> None:
            self._liveness = None
            for (root, wid), st in list(self.states.items()):
                if st.base is not None and st.base.running:
                    self.poke(root, wid)  # re-read: the view probes the lock when unchanged
            self._arm_liveness()

        self._liveness = asyncio.get_running_loop().call_later(LIVENESS_SECONDS, check)

    # -- progress -------------------------------------------------------------------------

    def _report(self, st: RunState) -> None:
        if st.token is not None and st.view.running:
            self.ls.work_done_progress.report(st.token, types.WorkDoneProgressReport(
                message=st.text, percentage=_percent(st.view), cancellable=True))

    def _progress(self, st: RunState) -> None:
        running = st.view.running
        if st.launched:
            self._report(st)  # its launcher began the progress and ends it (`finished`)
        elif running and st.token is None:
            # a run this server just launched names itself on its event stream, possibly
            # after its first checkpoint: give it a moment before beginning a progress
            asyncio.get_running_loop().call_later(
                ADOPT_SECONDS, lambda: self._spawn(self._begin(st)))
        elif st.token is not None and running:
            self._report(st)
        elif st.token is not None:
            token, st.token = st.token, None
            self._end_progress(token, st.text)

    async def begin(self, title: str, on_cancel: Callable[[], None]) -> str | None:
        """A cancellable progress titled `title` (None: the client has no progress UI)."""
        ls = self.ls
        window = ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return None
        token = f"baton-workflow-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
        except Exception:
            log.info("client refused a progress token; following the workflow silently")
            return None
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=title, message="starting", percentage=0, cancellable=True))
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:
            loop = asyncio.get_running_loop()

            def cancelled(fut: Future[object]) -> None:
                if fut.cancelled():
                    loop.call_soon_threadsafe(on_cancel)

            future.add_done_callback(cancelled)
        return token

    async def _begin(self, st: RunState) -> None:
        key = (st.root, st.workflow_id)
        if self._shown(st) or key in self.beginning or not st.view.running:
            return
        self.beginning.add(key)
        try:
            token = await self.begin(f"Baton: {st.view.description or st.workflow_id}",
                                     lambda: self._cancel(*key))
        finally:
            self.beginning.discard(key)
        if token is None:
            return
        if self._shown(st):  # launched meanwhile: its launcher's progress is the one
            self._end_progress(token, st.text)
            return
        st.token = token
        self._report(st)
        latest = st.view
        if not latest.running:  # it finished while the client was creating the token
            self._progress(st)

    @staticmethod
    def _shown(st: RunState) -> bool:
        """A progress shows `st` already (its launcher's, or the follower's)."""
        return st.launched or st.token is not None

    def _end_progress(self, token: str, message: str) -> None:
        self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(token, None)

    def end_unnamed(self, token: str, message: str) -> None:
        """End the progress of a launched run that never named itself."""
        self._end_progress(token, message)

    def _cancel(self, root: Path, wid: str) -> None:
        canceller = self.cancellers.get((root, wid))
        if canceller is not None:
            canceller()
        else:
            self._spawn(cancel_process(root, wid))


def _agent_failures(view: RunView) -> frozenset[tuple[str, str, str | None]]:
    """What BTN505 reports of `view` on agent files, to compare two views by."""
    from ..rules.run_state import agent_barrier_failures  # the core loads after initialize

    return frozenset((s.id, s.role, s.message) for s in agent_barrier_failures(view))


def _same(a: RunView, b: RunView) -> bool:
    return (a.sequence, a.running, a.status, len(a.errors)) == \
        (b.sequence, b.running, b.status, len(b.errors))


def _percent(view: RunView) -> int:
    total = view.total_phases()
    return min(99, int(100 * view.done_phases() / total)) if total else 0


def follower(ls: BatonServer) -> Follower:
    found = ls.run_follower
    if not isinstance(found, Follower):
        found = ls.run_follower = Follower(ls)
    return found

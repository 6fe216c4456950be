"""Following every workflow of the open workspaces — including ones started by another
server, the CLI, or before a restart — through their checkpoint directories.

One `DirWatcher` per workspace (inotify: the server sleeps until the engine renames a new
checkpoint into place; a 0.15 s `stat` poll where inotify is missing) feeds `refresh`, which
re-reads the workflow's view off the loop and, when its checkpoint sequence, lock or error
records changed: re-checks the files whose run findings depend on it (the plan, agent
files), asks the client to refresh code lenses, notifies `baton/workflowChanged`, and keeps a
work-done progress for runs this server did not launch (re-attached after a restart). A
2 s lock probe runs only while some followed workflow is live, to notice an engine that died
without writing its final checkpoint.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from pathlib import Path
from typing import Any

from lsprotocol import types

from . import diagnostics
from .convert import path_to_uri
from .engine_cli import cancel_process
from .server import BatonServer

log = logging.getLogger(__name__)

POLL_SECONDS = 0.15  # only without inotify: a few stats per workflow, ~0.3 % CPU
LIVENESS_SECONDS = 2.0
COALESCE_SECONDS = 0.005
ADOPT_SECONDS = 0.5
CHANGED = "baton/workflowChanged"
"""Notification sent when a followed workflow moves (the extension refreshes its views)."""

VERBS = {"initialize": "initializing", "research": "researching", "plan": "planning",
         "implement": "implementing", "test": "testing", "debug": "debugging",
         "document": "documenting", "complete": "completing"}


def describe(view: Any) -> str:
    """`implementing · wave 2/5 · 3/8 phases` for progress messages and lenses."""
    parts = [VERBS.get(view.state or "", view.state or "starting")]
    if view.waves and view.state == "implement" and view.current_wave:
        parts.append(f"wave {view.current_wave}/{len(view.waves)}")
    if view.waves:
        parts.append(f"{view.done_phases()}/{view.total_phases()} phases")
    return " · ".join(parts)


class Tracker:
    def __init__(self, ls: BatonServer) -> None:
        self.ls = ls
        self.watchers: dict[Path, Any] = {}
        self.seen: dict[tuple[Path, str], Any] = {}
        self.progress: dict[str, str] = {}
        self.scheduled: dict[tuple[Path, str | None], asyncio.TimerHandle] = {}
        self.tasks: set[asyncio.Task[Any]] = set()
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
        from ..runs.follow import DirWatcher

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
        for key in [k for k in self.seen if k[0] == root]:
            del self.seen[key]

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

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

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
                for (r, w), view in list(self.seen.items()):
                    if r == root and (view.running or view.resumable):
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
            if (root, wid) not in self.seen:
                await self.refresh(root, wid)

    async def refresh(self, root: Path, wid: str) -> None:
        runs = self.ls.session.index_for_root(root).runs
        try:
            view = await asyncio.to_thread(runs.view, wid)
        except Exception:
            log.exception("reading workflow %s failed", wid)
            return
        self.refreshes += 1
        old = self.seen.get((root, wid))
        self.seen[(root, wid)] = view
        if old is not None and _same(old, view):
            return
        await self._changed(root, old, view)

    # -- reactions ------------------------------------------------------------------------

    async def _changed(self, root: Path, old: Any, view: Any) -> None:
        self._progress(view)
        self._refresh_lenses()
        launched = getattr(self.ls, "workflow_runs", None)
        if launched is None or view.workflow_id not in launched.live:
            self.ls.protocol.notify(CHANGED, {
                "workflow_id": view.workflow_id, "workspace": str(root),
                "event": {"event": "checkpoint", "status": view.status, "state": view.state,
                          "running": view.running, "checkpoint": view.checkpoint_path}})
        await self._recheck(root, old, view)
        self._arm_liveness()

    async def _recheck(self, root: Path, old: Any, view: Any) -> None:
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
        if not any(v.running for v in self.seen.values()):
            return

        def check() -> None:
            self._liveness = None
            for (root, wid), view in list(self.seen.items()):
                if view.running:
                    self.poke(root, wid)  # re-read: the view probes the lock when unchanged
            self._arm_liveness()

        self._liveness = asyncio.get_running_loop().call_later(LIVENESS_SECONDS, check)

    # -- progress for workflows this server did not launch --------------------------------

    def _progress(self, view: Any) -> None:
        launched = getattr(self.ls, "workflow_runs", None)
        if launched is not None and view.workflow_id in launched.live:
            return  # its launcher reports richer progress from the event stream
        token = self.progress.get(view.workflow_id)
        if view.running and token is None:
            # a run this server just launched names itself on its event stream, possibly
            # after its first checkpoint: give it a moment before showing a second progress
            asyncio.get_running_loop().call_later(
                ADOPT_SECONDS, lambda: self._spawn(self._begin(view)))
        elif token is not None and view.running:
            self.ls.work_done_progress.report(token, types.WorkDoneProgressReport(
                message=describe(view), percentage=_percent(view), cancellable=True))
        elif token is not None:
            del self.progress[view.workflow_id]
            self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
                message=f"{view.status} in {view.state}"))
            self.ls.work_done_progress.tokens.pop(token, None)

    async def _begin(self, view: Any) -> None:
        ls = self.ls
        window = ls.client_capabilities.window
        if not (window and window.work_done_progress) or view.workflow_id in self.progress:
            return
        launched = getattr(ls, "workflow_runs", None)
        latest = self.seen.get((view.root, view.workflow_id))
        if (launched is not None and view.workflow_id in launched.live) or \
                latest is None or not latest.running:
            return
        token = f"baton-follow-{uuid.uuid4()}"
        self.progress[view.workflow_id] = token
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
        except Exception:
            self.progress.pop(view.workflow_id, None)
            return
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"Baton: {view.description or view.workflow_id}",
            message=describe(view), percentage=_percent(view), cancellable=True))
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:
            loop = asyncio.get_running_loop()
            root, wid = view.root, view.workflow_id

            def on_cancel(fut: Any) -> None:
                if fut.cancelled():
                    loop.call_soon_threadsafe(self._cancel, root, wid)

            future.add_done_callback(on_cancel)
        latest = self.seen.get((view.root, view.workflow_id))
        if latest is not None and not latest.running:
            self._progress(latest)  # it finished while the client was creating the token

    def _cancel(self, root: Path, wid: str) -> None:
        self._spawn(cancel_process(root, wid))


def _agent_failures(view: Any) -> frozenset[tuple[str, str, str | None]]:
    """What BTN505 reports of `view` on agent files, to compare two views by."""
    from ..rules.run_state import agent_barrier_failures  # the core loads after initialize

    return frozenset((s.id, s.role, s.message) for s in agent_barrier_failures(view))


def _same(a: Any, b: Any) -> bool:
    return (a.sequence, a.running, a.status, len(a.errors)) == \
        (b.sequence, b.running, b.status, len(b.errors))


def _percent(view: Any) -> int:
    total = view.total_phases()
    return min(99, int(100 * view.done_phases() / total)) if total else 0


def tracker(ls: BatonServer) -> Tracker:
    found = getattr(ls, "run_tracker", None)
    if found is None:
        found = Tracker(ls)
        ls.run_tracker = found  # type: ignore[attr-defined]
    return found

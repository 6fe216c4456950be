"""`baton.server.workflow.*`: launch and follow workflows from the editor.

A workflow never runs in the server's event loop: `start` and `resume` spawn
`baton run|resume … --events` as its own process (argv only, its own session, so a server
crash leaves it running) and follow the JSON lines it prints: one work-done progress per
workflow, a `workspace/codeLens/refresh` and a `baton/workflowChanged` notification on each
transition, step and end. Cancelling the progress in the client runs `baton cancel`.
Nothing is launched in an untrusted workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import subprocess
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from ..model.states import RunStatus, StepStatus
from .convert import path_to_uri
from .engine_cli import cancel_process, engine_argv
from .runs import CHANGED, tracker
from .server import BatonServer

if TYPE_CHECKING:
    from ..model.events import Event
    from .workflow_args import AtArgs, IdArgs, NoArgs, OpenArgs, ResumeArgs, StartArgs, StepArgs

log = logging.getLogger(__name__)

START = "baton.server.workflow.start"
RESUME = "baton.server.workflow.resume"
CANCEL = "baton.server.workflow.cancel"
LIST = "baton.server.workflow.list"
STATUS = "baton.server.workflow.status"
PREVIEW_RESUME = "baton.server.workflow.previewResume"
CHECKPOINT_SHOW = "baton.server.checkpoint.show"
RESUME_PREVIEW = "baton.server.workflow.resumeWithPreview"
RESUME_FROM = "baton.server.workflow.resumeFromCheckpoint"
CHECKPOINT_OPEN = "baton.server.checkpoint.open"
OPEN = "baton.server.open"
STEP_LOG = "baton.server.step.log"
RERUN = "baton.server.workflow.rerun"
HISTORY = "baton.server.workflow.checkpoints"
MAX_CHOICES = 8  # checkpoints offered by "Resume from an earlier checkpoint…"

ID_TIMEOUT = 30.0  # seconds to wait for a launched workflow to name itself


class WorkflowRefused(JsonRpcException):
    """The request was valid but the server will not do it (LSP RequestFailed)."""

    CODE = -32803
    MESSAGE = "Request Failed"


# -- arguments -----------------------------------------------------------------------------


def parse(command: str, model: str, args: tuple[Any, ...]) -> Any:
    """`workflow_args.parse` with the model named: that module (pydantic) loads with the
    first command, not with the server (start-up speed)."""
    from . import workflow_args

    return workflow_args.parse(command, getattr(workflow_args, model), args)


# -- workspaces ----------------------------------------------------------------------------


def _roots(ls: BatonServer) -> list[Path]:
    roots = ls.session.discover_roots()
    return roots or list(ls.session.folders)


def _root(ls: BatonServer, command: str, workspace: str | None) -> Path:
    import os

    from .convert import uri_to_path

    roots = _roots(ls)
    if workspace is None:
        if not roots:
            raise WorkflowRefused(f"{command}: no workspace with a .claude/ directory is open")
        return roots[0]
    path = uri_to_path(workspace) if workspace.startswith("file:") else workspace
    if not path or "\x00" in path:
        raise JsonRpcInvalidParams(f"{command}: {workspace!r} is not a workspace path")
    wanted = os.path.realpath(path)
    for root in roots:
        if os.path.realpath(root) == wanted:
            return root
    raise JsonRpcInvalidParams(f"{command}: {workspace} is not one of the open workspaces "
                               f"({', '.join(map(str, roots)) or 'none'})")


def _find(ls: BatonServer, command: str, wid: str, workspace: str | None) -> Path:
    """The workspace holding workflow `wid`."""
    from ..runs.store import list_workflows, valid_id

    if not valid_id(wid):
        raise JsonRpcInvalidParams(f"{command}: invalid workflow id {wid!r}")
    roots = [_root(ls, command, workspace)] if workspace else _roots(ls)
    for root in roots:
        if wid in list_workflows(root):
            return root
    raise JsonRpcInvalidParams(f"{command}: no workflow {wid!r} in "
                               f"{', '.join(map(str, roots)) or 'any open workspace'}")


def bash_status(ls: BatonServer, run_id: str, workspace: str | None) -> dict[str, Any]:
    """The bash system's run `run_id` (`baton status bash:… --json`), from the workspace
    holding it."""
    from ..runs.foreign import ForeignRuns, adopted_by, adoptions

    roots = [_root(ls, STATUS, workspace)] if workspace else _roots(ls)
    for root in roots:
        run = ForeignRuns(root).get(run_id)
        if run is not None:
            return {**run.as_dict(adopted_by(run, adoptions(root))), "workspace": str(root),
                    "followed": False}
    raise JsonRpcInvalidParams(f"{STATUS}: no bash checkpoint {run_id!r} in "
                               f"{', '.join(map(str, roots)) or 'any open workspace'}")


def _trusted(ls: BatonServer) -> bool:
    return bool(ls.session.settings.trusted or ls.session.initialization_options.get("trusted"))


def _require_trust(ls: BatonServer, command: str) -> None:
    if not _trusted(ls):
        raise WorkflowRefused(
            f"{command}: refused: this workspace is not trusted, and running a workflow "
            "launches agents and commands from its configuration. Trust it with the "
            "`baton.trustWorkspace` setting (or initializationOptions.trusted = true) and "
            "try again.")


# -- following a run -----------------------------------------------------------------------


class Child:
    """A `baton run|resume` process whose output the server reads without owning it.

    asyncio's subprocess transport kills a still-running child when it is closed, which
    happens on every server exit: the workflow must outlive the editor, so the process is a
    plain `Popen` in its own session and only its pipes are attached to the loop."""

    def __init__(self, popen: subprocess.Popen[bytes], stdout: asyncio.StreamReader,
                 stderr: asyncio.StreamReader) -> None:
        self.popen = popen
        self.pid = popen.pid
        self.stdout = stdout
        self.stderr = stderr

    @classmethod
    async def spawn(cls, argv: list[str], cwd: Path) -> Child:
        popen = subprocess.Popen(argv, cwd=str(cwd), stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 start_new_session=True)
        loop = asyncio.get_running_loop()
        readers = []
        for pipe in (popen.stdout, popen.stderr):
            reader = asyncio.StreamReader(limit=4 * 1024 * 1024)
            await loop.connect_read_pipe(lambda r=reader: asyncio.StreamReaderProtocol(r), pipe)
            readers.append(reader)
        return cls(popen, readers[0], readers[1])

    @property
    def returncode(self) -> int | None:
        return self.popen.poll()

    async def wait(self) -> int:
        """Exit status, without a thread the interpreter would wait for at exit (a pidfd
        readable on exit; else a daemon thread)."""
        code = self.popen.poll()
        if code is not None:
            return code
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()

        def exited() -> None:
            if not done.done():
                done.set_result(None)

        fd: int | None = None
        try:
            fd = os.pidfd_open(self.pid)
            loop.add_reader(fd, exited)
        except (AttributeError, OSError):
            fd = None
            threading.Thread(target=lambda: (self.popen.wait(), loop.call_soon_threadsafe(
                exited)), daemon=True).start()
        try:
            await done
        finally:
            if fd is not None:
                loop.remove_reader(fd)
                os.close(fd)
        return self.popen.wait()


@dataclass
class Run:
    root: Path
    description: str
    proc: Child
    workflow_id: str | None = None
    known: asyncio.Future[str | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    token: str | None = None
    state: str | None = None
    wave: str | None = None
    latest: str | None = None
    seen: set[str] = field(default_factory=set)
    done: set[str] = field(default_factory=set)
    percentage: int = 0
    status: str | None = None
    stderr: list[str] = field(default_factory=list)
    cancelling: bool = False
    task: asyncio.Task[None] | None = None

    def message(self) -> str:
        return " · ".join(p for p in (self.state, self.wave, self.latest) if p)

    def name(self, wid: str | None) -> None:
        if wid and self.workflow_id is None:
            self.workflow_id = wid
        if self.workflow_id and not self.known.done():
            self.known.set_result(self.workflow_id)


class Runs:
    """The workflows this server launched and follows, by workflow id."""

    def __init__(self, ls: BatonServer) -> None:
        self.ls = ls
        self.live: dict[str, Run] = {}
        self.tasks: set[asyncio.Task[None]] = set()

    async def launch(self, root: Path, description: str, argv: list[str],
                     workflow_id: str | None = None) -> dict[str, Any]:
        proc = await Child.spawn(argv, root)
        run = Run(root=root, description=description, proc=proc)
        run.name(workflow_id)
        task = run.task = asyncio.create_task(self.follow(run))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        try:
            wid = await asyncio.wait_for(asyncio.shield(run.known), ID_TIMEOUT)
        except TimeoutError:
            wid = None
        if wid is None and proc.returncode is not None:
            tail = "\n".join(run.stderr[-5:]).strip()
            raise WorkflowRefused(f"baton exited with code {proc.returncode} before the "
                                  f"workflow started: {tail or 'no output'}")
        return {"workflow_id": wid, "pid": proc.pid}

    async def follow(self, run: Run) -> None:
        from ..model.events import read_event  # pydantic: loaded when a run is followed

        stderr_task = asyncio.create_task(self._drain(run))
        await self._begin(run)
        try:
            assert run.proc.stdout is not None
            async for raw in run.proc.stdout:
                event = read_event(raw)
                if event is not None:
                    self._on_event(run, event)
        except asyncio.CancelledError:
            stderr_task.cancel()  # the server is exiting: leave the workflow running
            raise
        except Exception:  # pragma: no cover - a broken pipe must not kill the server
            log.exception("following workflow %s failed", run.workflow_id)
        await self._finish(run, stderr_task)

    async def _finish(self, run: Run, stderr_task: asyncio.Task[None]) -> None:
        code = await run.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(stderr_task, 5)
        run.name(None)
        if not run.known.done():
            run.known.set_result(None)
        if run.status is None:
            run.status = "cancelled" if run.cancelling else f"exited ({code})"
        self._end(run)
        if run.workflow_id and self.live.get(run.workflow_id) is run:
            del self.live[run.workflow_id]
        if code not in (0, 1, 130) and run.workflow_id is None:
            log.warning("baton exited with %s: %s", code, "\n".join(run.stderr[-5:]))

    async def _drain(self, run: Run) -> None:
        assert run.proc.stderr is not None
        async for raw in run.proc.stderr:
            run.stderr = [*run.stderr[-50:], raw.decode("utf-8", "replace").rstrip()]

    async def _begin(self, run: Run) -> None:
        ls = self.ls
        window = ls.client_capabilities.window
        if not (window and window.work_done_progress):
            return
        token = f"baton-workflow-{uuid.uuid4()}"
        try:
            await asyncio.wait_for(ls.work_done_progress.create_async(token), 5)
        except Exception:
            log.info("client refused a progress token; following the workflow silently")
            return
        run.token = token
        ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"Baton: {run.description}", message=run.message() or "starting",
            percentage=0, cancellable=True))
        future = ls.work_done_progress.tokens.get(token)
        if future is not None:
            loop = asyncio.get_running_loop()

            def on_cancel(fut: Any) -> None:
                if fut.cancelled():
                    loop.call_soon_threadsafe(self._client_cancelled, run)

            future.add_done_callback(on_cancel)

    def _client_cancelled(self, run: Run) -> None:
        if run.status is not None or run.cancelling:
            return
        task = asyncio.create_task(self.cancel(run))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def cancel(self, run: Run) -> dict[str, Any]:
        run.cancelling = True
        wid = run.workflow_id
        if wid is None:
            wid = await asyncio.wait_for(asyncio.shield(run.known), ID_TIMEOUT)
        assert wid is not None
        return await cancel_process(run.root, wid)

    def _on_event(self, run: Run, event: Event) -> None:
        from ..model import events as ev  # pydantic: loaded when a run is followed, not at start

        run.name(event.workflow_id)
        if run.workflow_id and run.workflow_id not in self.live and run.status is None:
            self.live[run.workflow_id] = run
        match event:
            case ev.LogEvent():
                return
            case ev.TransitionEvent():
                run.state = event.target
                run.wave = None
            case ev.WaveEvent():
                run.wave = f"wave {event.wave}/{event.total}"
            case ev.StepEvent():
                run.state = event.state or run.state
                run.seen.add(event.step)
                if event.status == StepStatus.DONE:
                    run.done.add(event.step)
                elif event.status == StepStatus.FAILED:
                    run.latest = f"{event.step} failed: {event.message}"
            case ev.SignalEvent():
                run.latest = f"{event.step} {event.name}: {event.value}"
            case ev.WaitingEvent():  # another run of the repository is merging: say whom for
                who = event.holder
                run.latest = (f"waiting for workflow {who}" if who
                              else "waiting for another run") \
                    + (f" ({event.holder_what})" if event.holder_what else "")
            case ev.ReconciledEvent():  # what a dead run left in the repository, and what was done
                run.latest = f"reconciled: {event.what}"
            case ev.FinishedEvent():
                run.status = event.status + (", needs attention" if event.outcome else "")
                run.state = event.state or run.state
                run.latest = event.message or run.latest
        if run.seen:
            run.percentage = max(run.percentage, int(100 * len(run.done) / len(run.seen)))
        if run.token and run.status is None:
            self.ls.work_done_progress.report(run.token, types.WorkDoneProgressReport(
                message=run.message(), percentage=min(run.percentage, 99), cancellable=True))
        if isinstance(event, ev.CheckpointEvent | ev.FinishedEvent) and run.workflow_id:
            tracker(self.ls).poke(run.root, run.workflow_id)
        if isinstance(event, ev.TransitionEvent | ev.StepEvent | ev.FinishedEvent
                      | ev.WaitingEvent | ev.ReconciledEvent):
            self._changed(run, event)

    def _changed(self, run: Run, event: Event) -> None:
        from ..model import events as ev

        self.ls.protocol.notify(CHANGED, {"workflow_id": run.workflow_id,
                                          "workspace": str(run.root),
                                          "event": json.loads(ev.to_json(event))})

    def _end(self, run: Run) -> None:
        if run.token is None:
            if run.workflow_id and run.status not in (None, RunStatus.COMPLETE):
                self.ls.window_show_message(types.ShowMessageParams(  # no progress UI
                    type=types.MessageType.Warning,
                    message=f"Baton: workflow {run.workflow_id} {run.status}"
                            + (f" in {run.state}" if run.state else "")
                            + (f": {run.latest}" if run.latest else "")))
            elif run.workflow_id:
                self.ls.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Info,
                    message=f"Baton: workflow {run.workflow_id} complete"))
            return
        token, run.token = run.token, None
        self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
            message=f"{run.status}" + (f" in {run.state}" if run.state else "")))
        self.ls.work_done_progress.tokens.pop(token, None)


def editor_settings(ls: BatonServer) -> list[str]:
    """The editor's `baton.workflow.*` settings as `--set workflow.key=value` for a run
    (camelCase keys become the kebab-case of the files; unset values are left out)."""
    import re

    from ..runs.rerun import toml_value

    raw = ls.session.settings.overrides.get("workflow")
    if not isinstance(raw, dict):
        return []
    out: list[str] = []
    for key, value in raw.items():
        if value is None or value == "" or isinstance(value, dict):
            continue
        kebab = re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", str(key)).lower().replace("_", "-")
        out += ["--set", f"workflow.{kebab}={toml_value(value)}"]
    return out


def preview_text(p: dict[str, Any]) -> str:
    """The resume preview as the message a user confirms."""
    lines = [f"Resume {p.get('workflow_id')} ({p.get('status')} in {p.get('failed_state') or '?'})"
             f" from checkpoint {p.get('checkpoint')}, restarting in {p.get('resume_state')}."]
    rerun = p.get("rerun") or []
    skip = p.get("skip") or []
    if rerun:
        lines.append("Will run again: " + "; ".join(
            f"{r.get('step')} ({r.get('reason')})" if r.get("reason") else str(r.get("step"))
            for r in rerun))
    if skip:
        lines.append(f"Will skip ({len(skip)} done): " + ", ".join(str(x.get("step"))
                                                                  for x in skip))
    if p.get("problems"):
        lines.append("Needs force: " + "; ".join(map(str, p["problems"])))
    if p.get("untrusted"):
        lines.append(f"Not trusted: {p['untrusted']}. Its paths and steps decide what the "
                     "resume writes and runs; resume only if you know where it came from.")
    return "\n".join(lines)


def resume_action(p: dict[str, Any]) -> str:
    """The confirming button of a resume preview: it names what the user agrees to."""
    if p.get("untrusted"):
        return "Trust checkpoint and resume"
    return "Resume anyway" if p.get("problems") else "Resume"


# -- registration --------------------------------------------------------------------------


def register(server: BatonServer) -> None:
    runs = Runs(server)
    server.workflow_runs = runs  # type: ignore[attr-defined]

    @server.command(START)
    async def start(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Start a workflow; returns {workflow_id, pid} once the workflow has named itself."""
        a: StartArgs = parse(START, "StartArgs", args)
        root = _root(ls, START, a.workspace)
        _require_trust(ls, START)
        # Values as `--opt=value` and the description after `--`: text the user typed that
        # starts with `-` (`-x …`, `--scope=…`) must never be read as an option.
        argv = [*engine_argv(), "run", f"--scope={a.scope}"]
        if a.runner:
            argv.append(f"--runner={a.runner}")
        if a.plan:
            argv.append(f"--plan={a.plan}")
        if a.complexity is not None:
            argv.append(f"--complexity={a.complexity}")
        argv += [*editor_settings(ls), f"--workspace={root}", "--events", "--", a.description]
        return await runs.launch(root, a.description, argv)

    async def settle(command: str, wid: str) -> None:
        """Refuse a workflow this server is running; wait out one that has finished but
        whose engine is still exiting (it holds the lock until then)."""
        previous = runs.live.get(wid)
        if previous is not None and previous.status is None:
            raise WorkflowRefused(f"{command}: workflow {wid} is running")
        if previous is not None and previous.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(previous.task), 10)

    async def do_resume(ls: BatonServer, command: str, root: Path, wid: str, at: int | None,
                        force: bool, trust: bool = False) -> dict[str, Any]:
        _require_trust(ls, command)
        await settle(command, wid)
        argv = [*engine_argv(), "resume", wid]
        if at is not None:
            argv += ["--at", str(at)]
        if force:
            argv.append("--force")
        if trust:
            argv.append("--trust-checkpoint")
        argv += [*editor_settings(ls), "--workspace", str(root), "--events"]
        from ..runs.status import summary

        info = await asyncio.to_thread(summary, root, wid)
        return await runs.launch(root, info.get("description") or wid, argv, wid)

    async def preview(command: str, root: Path, wid: str, at: int | None) -> dict[str, Any]:
        def compute() -> dict[str, Any]:
            from ..workflow.resume import preview_resume
            from ..workspace.config import load_config

            return preview_resume(root, load_config(root).workflow, wid, at)

        try:
            return await asyncio.to_thread(compute)
        except JsonRpcException:
            raise
        except Exception as exc:
            raise WorkflowRefused(f"{command}: {exc}") from None

    @server.command(RESUME)
    async def resume(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Resume a failed, cancelled or interrupted workflow; returns {workflow_id, pid}."""
        a: ResumeArgs = parse(RESUME, "ResumeArgs", args)
        root = _find(ls, RESUME, a.id, a.workspace)
        return await do_resume(ls, RESUME, root, a.id, a.at, a.force, a.trust)

    @server.command(RESUME_PREVIEW)
    async def resume_with_preview(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """The `Resume workflow` action: show what resume would skip and run again, and
        resume only when the user confirms. {resumed, preview, workflow_id?, pid?}."""
        a: AtArgs = parse(RESUME_PREVIEW, "AtArgs", args)
        root = _find(ls, RESUME_PREVIEW, a.id, a.workspace)
        _require_trust(ls, RESUME_PREVIEW)
        await settle(RESUME_PREVIEW, a.id)
        p = await preview(RESUME_PREVIEW, root, a.id, a.at)
        if p.get("running"):
            raise WorkflowRefused(f"{RESUME_PREVIEW}: workflow {a.id} is running")
        go = resume_action(p)
        choice = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
            type=types.MessageType.Info, message=preview_text(p),
            actions=[types.MessageActionItem(title=go),
                     types.MessageActionItem(title="Cancel")]))
        if choice is None or choice.title != go:
            return {"resumed": False, "preview": p}
        started = await do_resume(ls, RESUME_PREVIEW, root, a.id, a.at, bool(p.get("problems")),
                                  bool(p.get("untrusted")))
        return {"resumed": True, "preview": p, **started}

    @server.command(RESUME_FROM)
    async def resume_from_checkpoint(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """`Resume from an earlier checkpoint…`: offer the latest sound history entries, then
        preview and resume from the chosen one."""
        a: IdArgs = parse(RESUME_FROM, "IdArgs", args)
        root = _find(ls, RESUME_FROM, a.id, a.workspace)
        _require_trust(ls, RESUME_FROM)
        from ..runs.store import CheckpointStore

        entries = [e for e in await asyncio.to_thread(CheckpointStore(root, a.id).entries)
                   if e.ok][-MAX_CHOICES:]
        if not entries:
            raise WorkflowRefused(f"{RESUME_FROM}: workflow {a.id} has no usable checkpoint")
        from ..runs.record import RecordError, read_record

        titles = {}
        for e in reversed(entries):
            try:
                record = read_record(e.data or {}, str(e.path))
            except RecordError:
                continue  # not a record a resume could start from
            titles[f"#{e.sequence} {record.state}: {record.baton.event or ''}"[:80]] = \
                e.sequence
        choice = await ls.window_show_message_request_async(types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=f"Resume {a.id} from which checkpoint? (newest first)",
            actions=[types.MessageActionItem(title=t) for t in titles]))
        if choice is None or choice.title not in titles:
            return {"resumed": False}
        return await resume_with_preview(ls, {"id": a.id, "workspace": str(root),
                                              "at": titles[choice.title]})

    async def checkpoint_entry(ls: BatonServer, command: str, args: tuple[Any, ...]) -> Any:
        """The store entry `{id, at?}` names: the newest sound one, or number `at`."""
        a: AtArgs = parse(command, "AtArgs", args)
        root = _find(ls, command, a.id, a.workspace)
        try:
            from ..runs.store import CheckpointStore

            return await asyncio.to_thread(CheckpointStore(root, a.id).latest, a.at)
        except Exception as exc:
            raise WorkflowRefused(f"{command}: {exc}") from None

    async def show(ls: BatonServer, path: Path, line: int | None) -> dict[str, Any]:
        selection = types.Range(start=types.Position(line=line, character=0),
                                end=types.Position(line=line, character=0)) \
            if line is not None else None
        result = await ls.window_show_document_async(types.ShowDocumentParams(
            uri=path_to_uri(str(path)), take_focus=True, selection=selection))
        return {"path": str(path), "shown": bool(result and result.success)}

    @server.command(CHECKPOINT_OPEN)
    async def checkpoint_open(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Open the workflow's newest sound checkpoint (or number `at`) in the editor."""
        entry = await checkpoint_entry(ls, CHECKPOINT_OPEN, args)
        return await show(ls, entry.path, None)

    @server.command(RERUN)
    async def rerun(ls: BatonServer, *args: object) -> dict[str, object]:
        """Start a new run of a finished workflow with the same request and pinned settings
        (GitHub Actions' *Re-run*); returns {workflow_id, pid, rerun_of}."""
        a: IdArgs = parse(RERUN, "IdArgs", args)
        root = _find(ls, RERUN, a.id, a.workspace)
        _require_trust(ls, RERUN)
        from ..runs.rerun import NotRerunnable, rerun_args

        live = runs.live.get(a.id)
        if live is not None and live.status is None:
            raise WorkflowRefused(f"{RERUN}: workflow {a.id} is running; cancel it first")
        try:
            opts, description = await asyncio.to_thread(rerun_args, root, a.id)
        except NotRerunnable as exc:
            raise WorkflowRefused(f"{RERUN}: {exc}") from None
        argv = [*engine_argv(), *opts, f"--workspace={root}", "--events", "--", description]
        return {**await runs.launch(root, description, argv), "rerun_of": a.id}

    @server.command(HISTORY)
    async def checkpoints(ls: BatonServer, *args: object) -> list[dict[str, object]]:
        """The workflow's checkpoint history, oldest first (`baton checkpoints ID --json`)."""
        a: IdArgs = parse(HISTORY, "IdArgs", args)
        root = _find(ls, HISTORY, a.id, a.workspace)
        from ..runs.status import history

        return await asyncio.to_thread(history, root, a.id)

    @server.command(STEP_LOG)
    async def step_log(ls: BatonServer, *args: object) -> dict[str, object]:
        """The agent log of a step's last attempt (or attempt `attempt`):
        `{path, attempt}`, the path resolved inside the workflow's workspace."""
        import os

        a: StepArgs = parse(STEP_LOG, "StepArgs", args)
        root = _find(ls, STEP_LOG, a.id, a.workspace)
        entry = await checkpoint_entry(ls, STEP_LOG, ({"id": a.id, "workspace": str(root)},))
        from ..runs.record import RecordError, read_record

        try:
            record = read_record(entry.data or {}, str(entry.path))
        except RecordError as exc:
            raise WorkflowRefused(f"{STEP_LOG}: {exc}") from None
        step = record.baton.steps.get(a.step)
        if step is None:
            raise WorkflowRefused(f"{STEP_LOG}: workflow {a.id} has no step {a.step!r}")
        attempt = a.attempt or max(step.attempts, 1)
        log_file = entry.path.parent / "logs" / f"{a.step}.attempt-{attempt}.log"
        real, top = os.path.realpath(log_file), os.path.realpath(root)
        if not real.startswith(top + os.sep):  # a link out of the workspace is not followed
            raise WorkflowRefused(f"{STEP_LOG}: {log_file} is outside the workspace")
        if not os.path.isfile(real):
            raise WorkflowRefused(f"{STEP_LOG}: step {a.step} of {a.id} has no log for "
                                  f"attempt {attempt} ({log_file} does not exist)")
        return {"path": real, "attempt": attempt}

    @server.command(OPEN)
    async def open_file(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Open a file of an open workspace (an error-log entry, an agent's output, an
        artifact) at `line`. Paths outside every workspace are refused."""
        import os

        a: OpenArgs = parse(OPEN, "OpenArgs", args)
        real = os.path.realpath(a.path)
        if not any(real == str(r) or real.startswith(os.path.realpath(r) + os.sep)
                   for r in _roots(ls)):
            raise WorkflowRefused(f"{OPEN}: {a.path} is outside the open workspaces")
        if not os.path.isfile(real):
            raise WorkflowRefused(f"{OPEN}: {a.path} does not exist")
        return await show(ls, Path(real), a.line)

    @server.command(CANCEL)
    async def cancel(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Cancel a running workflow (it stays resumable): {workflow_id, code, message}."""
        a: IdArgs = parse(CANCEL, "IdArgs", args)
        run = runs.live.get(a.id)
        if run is not None:
            return await runs.cancel(run)
        root = _find(ls, CANCEL, a.id, a.workspace)
        return await cancel_process(root, a.id)

    @server.command(LIST)
    async def list_(ls: BatonServer, *args: Any) -> list[dict[str, Any]]:
        """Every workflow of every open workspace, as `baton status --json` rows (the bash
        system's checkpoints too, `origin: bash`)."""
        a: NoArgs = parse(LIST, "NoArgs", args)
        roots = [_root(ls, LIST, a.workspace)] if a.workspace else _roots(ls)

        def rows() -> list[dict[str, Any]]:
            from ..runs.status import summaries

            return [{**row, "workspace": str(root)}
                    for root in roots for row in summaries(root)]

        out = await asyncio.to_thread(rows)
        for row in out:
            row["followed"] = row["workflow_id"] in runs.live
        return out

    @server.command(STATUS)
    async def status(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """One workflow in detail, as `baton status ID --json` (a `bash:` id: the bash
        system's checkpoint)."""
        a: IdArgs = parse(STATUS, "IdArgs", args)
        if a.id.startswith("bash:"):
            return await asyncio.to_thread(bash_status, ls, a.id, a.workspace)
        root = _find(ls, STATUS, a.id, a.workspace)
        from ..runs.status import summary

        info = await asyncio.to_thread(summary, root, a.id)
        info["workspace"] = str(root)
        info["followed"] = a.id in runs.live
        return info

    @server.command(PREVIEW_RESUME)
    async def preview_resume(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """What resuming would skip and run again (`baton resume ID --dry-run --json`)."""
        a: AtArgs = parse(PREVIEW_RESUME, "AtArgs", args)
        root = _find(ls, PREVIEW_RESUME, a.id, a.workspace)
        return await preview(PREVIEW_RESUME, root, a.id, a.at)

    @server.command(CHECKPOINT_SHOW)
    async def checkpoint_show(ls: BatonServer, *args: Any) -> Any:
        """The checkpoint JSON of a workflow (the latest usable one, or number `at`)."""
        return (await checkpoint_entry(ls, CHECKPOINT_SHOW, args)).data

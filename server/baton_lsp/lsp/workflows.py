"""`baton.server.workflow.*`: launch and follow workflows from the editor.

A workflow never runs in the server's event loop: `start` and `resume` spawn
`baton run|resume … --events` as its own process (argv only, its own session, so a server
crash leaves it running) and hand the typed events it prints to the run follower
(`runs.Follower`), which owns the run's state and every surface showing it (progress, lenses,
`baton/workflowChanged`). Cancelling the progress in the client runs `baton cancel`.
Nothing is launched in an untrusted workspace.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import re
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from .convert import path_to_uri, uri_to_path
from .engine_cli import cancel_process, engine_argv
from .runs import follower
from .server import BatonServer

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..model.events import Event
    from ..runs.follow import RunView
    from ..runs.store import Entry
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


def parse(command: str, model: str, args: tuple[object, ...]) -> BaseModel:
    """`workflow_args.parse` with the model named: that module (pydantic) loads with the
    first command, not with the server (start-up speed). Callers `cast` the result to the
    model they named."""
    from . import workflow_args  # pydantic: loaded with the first command, not at start

    found: BaseModel = workflow_args.parse(command, getattr(workflow_args, model), args)
    return found


# -- workspaces ----------------------------------------------------------------------------


def _roots(ls: BatonServer) -> list[Path]:
    roots = ls.session.discover_roots()
    return roots or list(ls.session.folders)


def _root(ls: BatonServer, command: str, workspace: str | None) -> Path:
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
    from ..runs.store import list_workflows, valid_id  # the core loads after `initialize`

    if not valid_id(wid):
        raise JsonRpcInvalidParams(f"{command}: invalid workflow id {wid!r}")
    roots = [_root(ls, command, workspace)] if workspace else _roots(ls)
    for root in roots:
        if wid in list_workflows(root):
            return root
    raise JsonRpcInvalidParams(f"{command}: no workflow {wid!r} in "
                               f"{', '.join(map(str, roots)) or 'any open workspace'}")


def bash_status(ls: BatonServer, run_id: str, workspace: str | None) -> dict[str, object]:
    """The bash system's run `run_id` (`baton status bash:… --json`), from the workspace
    holding it."""
    from ..runs.foreign import ForeignRuns, adopted_by, adoptions  # the core: after start

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
            await loop.connect_read_pipe(
                functools.partial(asyncio.StreamReaderProtocol, reader), pipe)
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
    """A launched engine process: what launching, cancelling and refusing need. What the run
    is doing is the follower's (`runs.RunState`), not kept here."""

    root: Path
    description: str
    proc: Child
    workflow_id: str | None = None
    known: asyncio.Future[str | None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future())
    token: str | None = None
    ended: str | None = None
    """How the run ended (its `finished` status, or how the engine exited); None: running."""
    stderr: list[str] = field(default_factory=list)
    cancelling: bool = False
    task: asyncio.Task[None] | None = None

    def name(self, wid: str | None) -> bool:
        """Learn the workflow id; True the first time."""
        first = bool(wid) and self.workflow_id is None
        if first:
            self.workflow_id = wid
        if self.workflow_id and not self.known.done():
            self.known.set_result(self.workflow_id)
        return first


class Runs:
    """The workflows this server launched, by workflow id: it starts and cancels their
    engines and hands their events to the follower (`runs.Follower`), which renders them."""

    def __init__(self, ls: BatonServer) -> None:
        self.ls = ls
        self.live: dict[str, Run] = {}
        self.tasks: set[asyncio.Task[object]] = set()

    async def launch(self, root: Path, description: str, argv: list[str],
                     workflow_id: str | None = None) -> dict[str, object]:
        proc = await Child.spawn(argv, root)
        run = Run(root=root, description=description, proc=proc)
        task = run.task = asyncio.create_task(self.follow(run, workflow_id))
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

    async def follow(self, run: Run, workflow_id: str | None) -> None:
        from ..model.events import read_event  # pydantic: loaded when a run is followed

        stderr_task = asyncio.create_task(self._drain(run))
        # the progress begins before the first event: a client cancels it from the start
        run.token = await follower(self.ls).begin(f"Baton: {run.description}",
                                                  lambda: self._client_cancelled(run))
        self._named(run, workflow_id)
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

    def _named(self, run: Run, wid: str | None) -> None:
        if run.name(wid) and run.workflow_id is not None:
            self.live[run.workflow_id] = run
            follower(self.ls).launched(run.root, run.workflow_id, run.description, run.token,
                                       lambda: self._client_cancelled(run))

    async def _finish(self, run: Run, stderr_task: asyncio.Task[None]) -> None:
        code = await run.proc.wait()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(stderr_task, 5)
        run.name(None)
        if not run.known.done():
            run.known.set_result(None)
        if run.ended is None:
            run.ended = "cancelled" if run.cancelling else f"exited ({code})"
        if run.workflow_id is not None:
            await follower(self.ls).finished(run.root, run.workflow_id, run.ended)
        elif run.token is not None:
            follower(self.ls).end_unnamed(run.token, run.ended)
        if run.workflow_id and self.live.get(run.workflow_id) is run:
            del self.live[run.workflow_id]
        if code not in (0, 1, 130) and run.workflow_id is None:
            log.warning("baton exited with %s: %s", code, "\n".join(run.stderr[-5:]))

    async def _drain(self, run: Run) -> None:
        assert run.proc.stderr is not None
        async for raw in run.proc.stderr:
            run.stderr = [*run.stderr[-50:], raw.decode("utf-8", "replace").rstrip()]

    def _client_cancelled(self, run: Run) -> None:
        if run.ended is not None or run.cancelling:
            return
        task = asyncio.create_task(self.cancel(run))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def cancel(self, run: Run) -> dict[str, object]:
        run.cancelling = True
        wid = run.workflow_id
        if wid is None:
            wid = await asyncio.wait_for(asyncio.shield(run.known), ID_TIMEOUT)
        assert wid is not None
        return await cancel_process(run.root, wid)

    def _on_event(self, run: Run, event: Event) -> None:
        from ..model import events as ev  # pydantic: loaded when a run is followed, not at start

        self._named(run, event.workflow_id)
        if isinstance(event, ev.FinishedEvent):
            run.ended = event.status
        if run.workflow_id is not None:
            follower(self.ls).on_event(run.root, run.workflow_id, event)


def editor_settings(ls: BatonServer) -> list[str]:
    """The editor's `baton.workflow.*` settings as `--set workflow.key=value` for a run
    (camelCase keys become the kebab-case of the files; unset values are left out)."""
    from ..runs.rerun import toml_value  # the core loads after `initialize`

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


def _entries(value: object) -> list[Mapping[str, object]]:
    """A preview's `rerun`/`skip` list, its `{step, reason?}` items."""
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, Mapping)]


def preview_text(p: Mapping[str, object]) -> str:
    """The resume preview as the message a user confirms."""
    lines = [f"Resume {p.get('workflow_id')} ({p.get('status')} in {p.get('failed_state') or '?'})"
             f" from checkpoint {p.get('checkpoint')}, restarting in {p.get('resume_state')}."]
    rerun = _entries(p.get("rerun"))
    skip = _entries(p.get("skip"))
    if rerun:
        lines.append("Will run again: " + "; ".join(
            f"{r.get('step')} ({r.get('reason')})" if r.get("reason") else str(r.get("step"))
            for r in rerun))
    if skip:
        lines.append(f"Will skip ({len(skip)} done): " + ", ".join(str(x.get("step"))
                                                                  for x in skip))
    problems = p.get("problems")
    if problems:
        lines.append("Needs force: " + "; ".join(
            map(str, problems if isinstance(problems, list) else [problems])))
    if p.get("untrusted"):
        lines.append(f"Not trusted: {p['untrusted']}. Its paths and steps decide what the "
                     "resume writes and runs; resume only if you know where it came from.")
    return "\n".join(lines)


def resume_action(p: Mapping[str, object]) -> str:
    """The confirming button of a resume preview: it names what the user agrees to."""
    if p.get("untrusted"):
        return "Trust checkpoint and resume"
    return "Resume anyway" if p.get("problems") else "Resume"


# -- registration --------------------------------------------------------------------------


def register(server: BatonServer) -> None:
    runs = Runs(server)

    @server.command(START)
    async def start(ls: BatonServer, *args: object) -> dict[str, object]:
        """Start a workflow; returns {workflow_id, pid} once the workflow has named itself."""
        a = cast("StartArgs", parse(START, "StartArgs", args))
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
        if previous is not None and previous.ended is None:
            raise WorkflowRefused(f"{command}: workflow {wid} is running")
        if previous is not None and previous.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(previous.task), 10)

    async def do_resume(ls: BatonServer, command: str, root: Path, wid: str, at: int | None,
                        force: bool, trust: bool = False) -> dict[str, object]:
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
        from ..runs.follow import read_view  # the core loads after `initialize`

        view = await asyncio.to_thread(read_view, root, wid)
        return await runs.launch(root, view.description or wid, argv, wid)

    async def preview(command: str, root: Path, wid: str, at: int | None) -> dict[str, object]:
        def compute() -> dict[str, object]:
            # the engine's modules load with the first preview, not with the server
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
    async def resume(ls: BatonServer, *args: object) -> dict[str, object]:
        """Resume a failed, cancelled or interrupted workflow; returns {workflow_id, pid}."""
        a = cast("ResumeArgs", parse(RESUME, "ResumeArgs", args))
        root = _find(ls, RESUME, a.id, a.workspace)
        return await do_resume(ls, RESUME, root, a.id, a.at, a.force, a.trust)

    @server.command(RESUME_PREVIEW)
    async def resume_with_preview(ls: BatonServer, *args: object) -> dict[str, object]:
        """The `Resume workflow` action: show what resume would skip and run again, and
        resume only when the user confirms. {resumed, preview, workflow_id?, pid?}."""
        a = cast("AtArgs", parse(RESUME_PREVIEW, "AtArgs", args))
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
    async def resume_from_checkpoint(ls: BatonServer, *args: object) -> dict[str, object]:
        """`Resume from an earlier checkpoint…`: offer the latest sound history entries, then
        preview and resume from the chosen one."""
        a = cast("IdArgs", parse(RESUME_FROM, "IdArgs", args))
        root = _find(ls, RESUME_FROM, a.id, a.workspace)
        _require_trust(ls, RESUME_FROM)
        from ..runs.store import CheckpointStore  # the core loads after `initialize`

        entries = [e for e in await asyncio.to_thread(CheckpointStore(root, a.id).entries)
                   if e.ok][-MAX_CHOICES:]
        if not entries:
            raise WorkflowRefused(f"{RESUME_FROM}: workflow {a.id} has no usable checkpoint")
        from ..runs.record import RecordError, read_record  # pydantic: after `initialize`

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

    async def checkpoint_entry(ls: BatonServer, command: str, args: tuple[object, ...]
                               ) -> Entry:
        """The store entry `{id, at?}` names: the newest sound one, or number `at`."""
        a = cast("AtArgs", parse(command, "AtArgs", args))
        root = _find(ls, command, a.id, a.workspace)
        try:
            from ..runs.store import CheckpointStore  # the core loads after `initialize`

            return await asyncio.to_thread(CheckpointStore(root, a.id).latest, a.at)
        except Exception as exc:
            raise WorkflowRefused(f"{command}: {exc}") from None

    async def show(ls: BatonServer, path: Path, line: int | None) -> dict[str, object]:
        selection = types.Range(start=types.Position(line=line, character=0),
                                end=types.Position(line=line, character=0)) \
            if line is not None else None
        result = await ls.window_show_document_async(types.ShowDocumentParams(
            uri=path_to_uri(str(path)), take_focus=True, selection=selection))
        return {"path": str(path), "shown": bool(result and result.success)}

    @server.command(CHECKPOINT_OPEN)
    async def checkpoint_open(ls: BatonServer, *args: object) -> dict[str, object]:
        """Open the workflow's newest sound checkpoint (or number `at`) in the editor."""
        entry = await checkpoint_entry(ls, CHECKPOINT_OPEN, args)
        return await show(ls, entry.path, None)

    @server.command(RERUN)
    async def rerun(ls: BatonServer, *args: object) -> dict[str, object]:
        """Start a new run of a finished workflow with the same request and pinned settings
        (GitHub Actions' *Re-run*); returns {workflow_id, pid, rerun_of}."""
        a = cast("IdArgs", parse(RERUN, "IdArgs", args))
        root = _find(ls, RERUN, a.id, a.workspace)
        _require_trust(ls, RERUN)
        from ..runs.rerun import NotRerunnable, rerun_args  # the core: after `initialize`

        live = runs.live.get(a.id)
        if live is not None and live.ended is None:
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
        a = cast("IdArgs", parse(HISTORY, "IdArgs", args))
        root = _find(ls, HISTORY, a.id, a.workspace)
        from ..runs.status import history  # the core loads after `initialize`

        return await asyncio.to_thread(history, root, a.id)

    @server.command(STEP_LOG)
    async def step_log(ls: BatonServer, *args: object) -> dict[str, object]:
        """The agent log of a step's last attempt (or attempt `attempt`):
        `{path, attempt}`, the path resolved inside the workflow's workspace."""
        a = cast("StepArgs", parse(STEP_LOG, "StepArgs", args))
        root = _find(ls, STEP_LOG, a.id, a.workspace)
        entry = await checkpoint_entry(ls, STEP_LOG, ({"id": a.id, "workspace": str(root)},))
        from ..runs.record import RecordError, read_record  # pydantic: after `initialize`

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
    async def open_file(ls: BatonServer, *args: object) -> dict[str, object]:
        """Open a file of an open workspace (an error-log entry, an agent's output, an
        artifact) at `line`. Paths outside every workspace are refused."""
        a = cast("OpenArgs", parse(OPEN, "OpenArgs", args))
        real = os.path.realpath(a.path)
        if not any(real == str(r) or real.startswith(os.path.realpath(r) + os.sep)
                   for r in _roots(ls)):
            raise WorkflowRefused(f"{OPEN}: {a.path} is outside the open workspaces")
        if not os.path.isfile(real):
            raise WorkflowRefused(f"{OPEN}: {a.path} does not exist")
        return await show(ls, Path(real), a.line)

    @server.command(CANCEL)
    async def cancel(ls: BatonServer, *args: object) -> dict[str, object]:
        """Cancel a running workflow (it stays resumable): {workflow_id, code, message}."""
        a = cast("IdArgs", parse(CANCEL, "IdArgs", args))
        run = runs.live.get(a.id)
        if run is not None:
            return await runs.cancel(run)
        root = _find(ls, CANCEL, a.id, a.workspace)
        return await cancel_process(root, a.id)

    @server.command(LIST)
    async def list_(ls: BatonServer, *args: object) -> list[dict[str, object]]:
        """Every workflow of every open workspace, as `baton status --json` rows (the bash
        system's checkpoints too, `origin: bash`)."""
        a = cast("NoArgs", parse(LIST, "NoArgs", args))
        roots = [_root(ls, LIST, a.workspace)] if a.workspace else _roots(ls)

        def rows() -> list[tuple[RunView, dict[str, object]]]:
            from ..runs.status import as_json, views  # the core loads after `initialize`

            return [(view, {**as_json(view), "workspace": str(root)})
                    for root in roots for view in views(root)]

        follow = follower(ls)
        return [{**follow.row(view, row), "followed": view.workflow_id in runs.live}
                for view, row in await asyncio.to_thread(rows)]

    @server.command(STATUS)
    async def status(ls: BatonServer, *args: object) -> dict[str, object]:
        """One workflow in detail, as `baton status ID --json` (a `bash:` id: the bash
        system's checkpoint)."""
        a = cast("IdArgs", parse(STATUS, "IdArgs", args))
        if a.id.startswith("bash:"):
            return await asyncio.to_thread(bash_status, ls, a.id, a.workspace)
        root = _find(ls, STATUS, a.id, a.workspace)

        def row() -> tuple[RunView, dict[str, object]]:
            from ..runs.follow import read_view  # the core loads after `initialize`
            from ..runs.status import as_json

            view = read_view(root, a.id)
            return view, as_json(view)

        view, info = await asyncio.to_thread(row)
        return {**follower(ls).row(view, info), "workspace": str(root),
                "followed": a.id in runs.live}

    @server.command(PREVIEW_RESUME)
    async def preview_resume(ls: BatonServer, *args: object) -> dict[str, object]:
        """What resuming would skip and run again (`baton resume ID --dry-run --json`)."""
        a = cast("AtArgs", parse(PREVIEW_RESUME, "AtArgs", args))
        root = _find(ls, PREVIEW_RESUME, a.id, a.workspace)
        return await preview(PREVIEW_RESUME, root, a.id, a.at)

    @server.command(CHECKPOINT_SHOW)
    async def checkpoint_show(ls: BatonServer, *args: object) -> dict[str, object] | None:
        """The checkpoint JSON of a workflow (the latest usable one, or number `at`)."""
        return (await checkpoint_entry(ls, CHECKPOINT_SHOW, args)).data

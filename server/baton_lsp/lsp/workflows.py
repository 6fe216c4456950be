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
import sys
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lsprotocol import types
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams

from .server import BatonServer

log = logging.getLogger(__name__)

START = "baton.server.workflow.start"
RESUME = "baton.server.workflow.resume"
CANCEL = "baton.server.workflow.cancel"
LIST = "baton.server.workflow.list"
STATUS = "baton.server.workflow.status"
PREVIEW_RESUME = "baton.server.workflow.previewResume"
CHECKPOINT_SHOW = "baton.server.checkpoint.show"
CHANGED = "baton/workflowChanged"

Scope = Literal["research-only", "research-and-plan", "research-and-revise",
                "full-implementation", "debug-only", "implement-only", "test-and-debug"]
ID_TIMEOUT = 30.0  # seconds to wait for a launched workflow to name itself


class WorkflowRefused(JsonRpcException):
    """The request was valid but the server will not do it (LSP RequestFailed)."""

    CODE = -32803
    MESSAGE = "Request Failed"


# -- arguments -----------------------------------------------------------------------------


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    workspace: str | None = Field(None, description="workspace root (path or file URI); "
                                  "default: the only/first one")


class StartArgs(_Args):
    description: str = Field(min_length=1)
    scope: Scope = "full-implementation"
    runner: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$")
    plan: str | None = None
    complexity: int | None = Field(None, ge=1, le=4)


class IdArgs(_Args):
    id: str = Field(min_length=1)


class ResumeArgs(IdArgs):
    at: int | None = Field(None, ge=0)
    force: bool = False


class AtArgs(IdArgs):
    at: int | None = Field(None, ge=0)


class NoArgs(_Args):
    pass


def parse(command: str, model: type[BaseModel], args: tuple[Any, ...]) -> Any:
    """One JSON object (or nothing, when every field is optional) → `model`, else
    InvalidParams naming the command and the offending fields."""
    if len(args) == 1 and isinstance(args[0], list):  # some clients nest the arguments
        args = tuple(args[0])
    if not args:
        raw: Any = {}
    elif len(args) == 1 and args[0] is None:
        raw = {}
    elif len(args) == 1:
        raw = args[0]
    else:
        raise JsonRpcInvalidParams(f"{command} takes one object argument, got {len(args)}")
    if not isinstance(raw, dict):
        raise JsonRpcInvalidParams(f"{command} takes one object argument, got "
                                   f"{type(raw).__name__}")
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'argument'}: {e['msg']}"
                             for e in exc.errors())
        raise JsonRpcInvalidParams(f"{command}: invalid arguments: {problems}") from None


# -- workspaces ----------------------------------------------------------------------------


def _roots(ls: BatonServer) -> list[Path]:
    roots = ls.discover_roots()
    return roots or list(ls.folders)


def _root(ls: BatonServer, command: str, workspace: str | None) -> Path:
    import os

    from pygls.uris import to_fs_path

    roots = _roots(ls)
    if workspace is None:
        if not roots:
            raise WorkflowRefused(f"{command}: no workspace with a .claude/ directory is open")
        return roots[0]
    path = to_fs_path(workspace) if workspace.startswith("file:") else workspace
    wanted = os.path.realpath(path or "")
    for root in roots:
        if os.path.realpath(root) == wanted:
            return root
    raise JsonRpcInvalidParams(f"{command}: {workspace} is not one of the open workspaces "
                               f"({', '.join(map(str, roots)) or 'none'})")


def _find(ls: BatonServer, command: str, wid: str, workspace: str | None) -> Path:
    """The workspace holding workflow `wid`."""
    from ..workflow.store import list_workflows, valid_id

    if not valid_id(wid):
        raise JsonRpcInvalidParams(f"{command}: invalid workflow id {wid!r}")
    roots = [_root(ls, command, workspace)] if workspace else _roots(ls)
    for root in roots:
        if wid in list_workflows(root):
            return root
    raise JsonRpcInvalidParams(f"{command}: no workflow {wid!r} in "
                               f"{', '.join(map(str, roots)) or 'any open workspace'}")


def _trusted(ls: BatonServer) -> bool:
    return bool(ls.settings.trusted or ls.initialization_options.get("trusted"))


def _require_trust(ls: BatonServer, command: str) -> None:
    if not _trusted(ls):
        raise WorkflowRefused(
            f"{command}: refused: this workspace is not trusted, and running a workflow "
            "launches agents and commands from its configuration. Trust it with the "
            "`baton.trustWorkspace` setting (or initializationOptions.trusted = true) and "
            "try again.")


# -- following a run -----------------------------------------------------------------------


@dataclass
class Run:
    root: Path
    description: str
    proc: asyncio.subprocess.Process
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
        proc = await asyncio.create_subprocess_exec(
            *argv, cwd=str(root), stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, limit=4 * 1024 * 1024)
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
        stderr_task = asyncio.create_task(self._drain(run))
        await self._begin(run)
        try:
            assert run.proc.stdout is not None
            async for raw in run.proc.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(event, dict):
                    self._on_event(run, event)
        except Exception:  # pragma: no cover - a broken pipe must not kill the server
            log.exception("following workflow %s failed", run.workflow_id)
        finally:
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

    def _on_event(self, run: Run, event: dict[str, Any]) -> None:
        kind = event.get("event")
        run.name(event.get("workflow_id"))
        if run.workflow_id and run.workflow_id not in self.live and run.status is None:
            self.live[run.workflow_id] = run
        if kind == "log":
            return
        if kind == "transition":
            run.state = event.get("target")
            run.wave = None
        elif kind == "wave":
            run.wave = f"wave {event.get('wave')}/{event.get('total')}"
        elif kind == "step":
            sid = str(event.get("step"))
            run.state = event.get("state") or run.state
            run.seen.add(sid)
            if event.get("status") == "done":
                run.done.add(sid)
            elif event.get("status") == "failed":
                run.latest = f"{sid} failed: {event.get('message')}"
        elif kind == "signal":
            run.latest = f"{event.get('step')} {event.get('name')}: {event.get('value')}"
        elif kind == "finished":
            run.status = str(event.get("status"))
            run.state = event.get("state") or run.state
            run.latest = event.get("message") or run.latest
        if run.seen:
            run.percentage = max(run.percentage, int(100 * len(run.done) / len(run.seen)))
        if run.token and run.status is None:
            self.ls.work_done_progress.report(run.token, types.WorkDoneProgressReport(
                message=run.message(), percentage=min(run.percentage, 99), cancellable=True))
        if kind in ("transition", "step", "finished"):
            self._changed(run, event)

    def _changed(self, run: Run, event: dict[str, Any]) -> None:
        ls = self.ls
        if ls.code_lens_refresh:
            with contextlib.suppress(Exception):
                ls.workspace_code_lens_refresh(None)
        ls.protocol.notify(CHANGED, {"workflow_id": run.workflow_id,
                                     "workspace": str(run.root), "event": event})

    def _end(self, run: Run) -> None:
        if run.token is None:
            return
        token, run.token = run.token, None
        self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(
            message=f"{run.status}" + (f" in {run.state}" if run.state else "")))
        self.ls.work_done_progress.tokens.pop(token, None)


async def cancel_process(root: Path, wid: str) -> dict[str, Any]:
    """`baton cancel ID` in its own process (it waits for the engine to stop)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "baton_lsp", "cancel", wid, "--workspace", str(root),
        cwd=str(root), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    out, err = await proc.communicate()
    message = (out or err).decode("utf-8", "replace").strip()
    return {"workflow_id": wid, "code": proc.returncode, "message": message}


def _base() -> list[str]:
    return [sys.executable, "-m", "baton_lsp"]


# -- registration --------------------------------------------------------------------------


def register(server: BatonServer) -> None:
    runs = Runs(server)
    server.workflow_runs = runs  # type: ignore[attr-defined]

    @server.command(START)
    async def start(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Start a workflow; returns {workflow_id, pid} once the workflow has named itself."""
        a: StartArgs = parse(START, StartArgs, args)
        root = _root(ls, START, a.workspace)
        _require_trust(ls, START)
        argv = [*_base(), "run", a.description, "--scope", a.scope]
        if a.runner:
            argv += ["--runner", a.runner]
        if a.plan:
            argv += ["--plan", a.plan]
        if a.complexity is not None:
            argv += ["--complexity", str(a.complexity)]
        argv += ["--workspace", str(root), "--events"]
        return await runs.launch(root, a.description, argv)

    @server.command(RESUME)
    async def resume(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Resume a failed, cancelled or interrupted workflow; returns {workflow_id, pid}."""
        a: ResumeArgs = parse(RESUME, ResumeArgs, args)
        root = _find(ls, RESUME, a.id, a.workspace)
        _require_trust(ls, RESUME)
        previous = runs.live.get(a.id)
        if previous is not None and previous.status is None:
            raise WorkflowRefused(f"{RESUME}: workflow {a.id} is running")
        if previous is not None and previous.task is not None:  # finished, still exiting
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(previous.task), 10)
        argv = [*_base(), "resume", a.id]
        if a.at is not None:
            argv += ["--at", str(a.at)]
        if a.force:
            argv.append("--force")
        argv += ["--workspace", str(root), "--events"]
        from ..workflow.status import summary

        info = await asyncio.to_thread(summary, root, a.id)
        return await runs.launch(root, info.get("description") or a.id, argv, a.id)

    @server.command(CANCEL)
    async def cancel(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Cancel a running workflow (it stays resumable): {workflow_id, code, message}."""
        a: IdArgs = parse(CANCEL, IdArgs, args)
        run = runs.live.get(a.id)
        if run is not None:
            return await runs.cancel(run)
        root = _find(ls, CANCEL, a.id, a.workspace)
        return await cancel_process(root, a.id)

    @server.command(LIST)
    async def list_(ls: BatonServer, *args: Any) -> list[dict[str, Any]]:
        """Every workflow of every open workspace, as `baton status --json` rows."""
        a: NoArgs = parse(LIST, NoArgs, args)
        roots = [_root(ls, LIST, a.workspace)] if a.workspace else _roots(ls)

        def rows() -> list[dict[str, Any]]:
            from ..workflow.status import summary
            from ..workflow.store import list_workflows

            return [{**summary(root, wid), "workspace": str(root)}
                    for root in roots for wid in list_workflows(root)]

        out = await asyncio.to_thread(rows)
        for row in out:
            row["followed"] = row["workflow_id"] in runs.live
        return out

    @server.command(STATUS)
    async def status(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """One workflow in detail, as `baton status ID --json`."""
        from ..workflow.status import summary

        a: IdArgs = parse(STATUS, IdArgs, args)
        root = _find(ls, STATUS, a.id, a.workspace)
        info = await asyncio.to_thread(summary, root, a.id)
        info["workspace"] = str(root)
        info["followed"] = a.id in runs.live
        return info

    @server.command(PREVIEW_RESUME)
    async def preview_resume(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """What resuming would skip and run again (`baton resume ID --dry-run --json`)."""
        a: AtArgs = parse(PREVIEW_RESUME, AtArgs, args)
        root = _find(ls, PREVIEW_RESUME, a.id, a.workspace)

        def preview() -> dict[str, Any]:
            from ..workflow.engine import Engine
            from ..workspace.config import load_config

            return Engine(root, load_config(root)).preview_resume(a.id, a.at)

        try:
            return await asyncio.to_thread(preview)
        except JsonRpcException:
            raise
        except Exception as exc:
            raise WorkflowRefused(f"{PREVIEW_RESUME}: {exc}") from None

    @server.command(CHECKPOINT_SHOW)
    async def checkpoint_show(ls: BatonServer, *args: Any) -> Any:
        """The checkpoint JSON of a workflow (the latest usable one, or number `at`)."""
        from ..workflow.store import CheckpointStore

        a: AtArgs = parse(CHECKPOINT_SHOW, AtArgs, args)
        root = _find(ls, CHECKPOINT_SHOW, a.id, a.workspace)
        try:
            entry = await asyncio.to_thread(CheckpointStore(root, a.id).latest, a.at)
        except Exception as exc:
            raise WorkflowRefused(f"{CHECKPOINT_SHOW}: {exc}") from None
        return entry.data

"""The Dask executor: agent attempts run on the workers of a Dask distributed cluster.

Each attempt is ONE task (`task.run_attempt`), submitted with `retries=0` and for the
resource its runner needs (`claude=1`, `script=1`, … as `baton worker` advertises them);
the cluster Baton starts (`local:N`) has `allowed-failures = 0`, and a scheduler Baton
connects to is asked for its own value and warned about, because a scheduler that retries a
task whose worker died runs a paid agent twice. A lost worker (`KilledWorker`, a closed
comm) becomes `WorkerLost`, which `agent_step` retries as a transient failure through
Baton's own attempts, backoff, budget and checkpoints; each future is released as soon as
its result is read, so no finished attempt's result lives on in the cluster to be
recomputed.

Lines come back through Dask's event log (`Worker.log_event` on the worker, one
`Client.subscribe_topic` per executor here): pushed, batched and ordered per worker, with
no polling and no request per line (a `Queue` costs a scheduler round trip per line and a
poll here). The scheduler keeps a bounded log per topic, so one topic serves the whole
run; every line carries its attempt's key and number, and the task returns how many it
sent, so the attempt ends only once all of them are here."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import dask
import distributed
from distributed import Scheduler
from distributed.client import FutureCancelledError
from distributed.comm.core import CommClosedError
from distributed.scheduler import KilledWorker
from distributed.security import Security

from ...model.config import DaskSettings
from ...paths import python_module_argv
from ...runs import confine
from ..process import AgentLaunchError, run_process
from ..shipping import ShippingError, WorkerTree
from . import Executed, StepLaunch, WorkerLost, parse_scheduler
from .task import (
    PROJECT_FILES,
    Payload,
    Returned,
    gather_files,
    not_started,
    run_attempt,
    shipped_env,
)

log = logging.getLogger(__name__)

Event: Any = distributed.Event  # distributed's Client and Event are untyped
Client: Any = distributed.Client

LINES_GRACE = 30.0
"""Seconds to wait, after an attempt's result, for the lines it logged still on the way."""
WORKER_DEATH_TIMEOUT = 60
"""Seconds a `local:N` worker outlives an unreachable scheduler (a killed `baton run`)."""


def security_of(settings: DaskSettings) -> Any:
    """The `distributed.Security` of the TLS files configured, or None without any: this
    process's certificate for its client and, with `local:N`, for its own scheduler."""
    files = (settings.ca, settings.cert, settings.key)
    if not any(files):
        return None
    if not all(files):
        raise ValueError("[workflow.dask] TLS needs all of ca, cert and key")
    secure: Any = Security
    return secure(tls_ca_file=settings.ca, tls_client_cert=settings.cert,
                  tls_client_key=settings.key, tls_scheduler_cert=settings.cert,
                  tls_scheduler_key=settings.key, require_encryption=True)


def offered_resources(dask_scheduler: Any) -> list[dict[str, float]]:
    """Run on the scheduler: the resources each worker offers now."""
    return [dict(ws.resources) for ws in dask_scheduler.workers.values()]


def scheduler_allowed_failures(dask_scheduler: Any) -> int:
    """Run on the scheduler: how often it lets a task's workers die before giving up."""
    return int(dask_scheduler.allowed_failures)


class _Lines:
    """The lines of one attempt, delivered to its `on_line` in order whatever the arrival."""

    def __init__(self, on_line: Callable[[str], None]) -> None:
        self.on_line = on_line
        self.next = 0
        self.early: dict[int, str] = {}
        self.changed = asyncio.Event()
        self.error: BaseException | None = None

    def take(self, n: int, line: str) -> None:
        self.early[n] = line
        while self.next in self.early:
            text = self.early.pop(self.next)
            self.next += 1
            if self.error is None:
                try:
                    self.on_line(text)
                except Exception as exc:  # an output handler's bug ends the attempt
                    self.error = exc
        self.changed.set()


class DaskExecutor:
    """Runs the attempts of the configured states on a Dask cluster, the others here."""

    name = "dask"

    def __init__(self, settings: DaskSettings, root: Path, say: Callable[[str], None],
                 logs: Path | None = None) -> None:
        # Dask logs every connection at INFO: only what this command's own level shows
        logging.getLogger("distributed").setLevel(
            logging.getLogger().getEffectiveLevel())
        self.settings = settings
        self.root = root
        self.say = say
        self.logs = logs
        self.local_workers, self.address = parse_scheduler(settings.scheduler)
        self.security = security_of(settings)
        if self.address.startswith("tls://") and self.security is None:
            raise ValueError(f"[workflow.dask] scheduler {settings.scheduler!r}: tls:// needs "
                             "ca, cert and key")
        self.states = frozenset(settings.remote_states)
        self.topic = f"baton-lines-{uuid.uuid4().hex}"
        self.cancel_name = f"baton-cancel-{uuid.uuid4().hex}"
        self._client: Any = None
        self._scheduler: Scheduler | None = None
        self._workers: list[subprocess.Popen[bytes]] = []
        self._ready = asyncio.Lock()
        self._lines: dict[str, _Lines] = {}
        self._cancel_sent = False

    def remote(self, state: str) -> bool:
        return state in self.states

    @property
    def worker_pids(self) -> list[int]:
        """The `baton worker` processes of a `local:N` cluster."""
        return [p.pid for p in self._workers]

    # == the cluster ================================================================

    async def client(self) -> Any:
        """The client, connected on first use (a `local:N` cluster started first)."""
        async with self._ready:
            if self._client is None:
                try:
                    self._client = await self._connect()
                except BaseException:
                    await self._stop_cluster()  # a retry starts afresh, nothing leaks
                    raise
            return self._client

    async def _connect(self) -> Any:
        timeout = self.settings.connect_timeout
        address = self.address
        if self.local_workers is not None:
            address = await self._start_local()
        client = await Client(address, asynchronous=True, security=self.security,
                              timeout=timeout, set_as_default=False)
        try:
            client.subscribe_topic(self.topic, self._deliver)
            if self.local_workers is not None:
                await client.wait_for_workers(self.local_workers, timeout=timeout)
                self.say(f"dask: scheduler {address} with {self.local_workers} worker(s)")
            else:
                allowed = await client.run_on_scheduler(scheduler_allowed_failures)
                if allowed:
                    self.say(f"dask: warning: the scheduler at {address} lets {allowed} "
                             "worker(s) die under one task and runs it again elsewhere: an "
                             "agent may run twice; set distributed.scheduler.allowed-failures: "
                             "0 there")
        except BaseException:
            with contextlib.suppress(Exception):
                await client.close()
            raise
        return client

    async def _start_local(self) -> str:
        """A scheduler in this process on 127.0.0.1 (allowed-failures 0) and N `baton
        worker` processes, for the run's lifetime."""
        protocol = "tls://" if self.security is not None else "tcp://"
        with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
            self._scheduler = await Scheduler(host=f"{protocol}127.0.0.1", port=0,
                                              dashboard=False, security=self.security,
                                              dashboard_address="127.0.0.1:0",
                                              allowed_failures=0)
        address = str(self._scheduler.address)
        argv = [*python_module_argv("baton_lsp"), "worker", address,
                "--death-timeout", str(WORKER_DEATH_TIMEOUT)]
        if self.security is not None:
            argv += ["--tls-ca", str(self.settings.ca), "--tls-cert", str(self.settings.cert),
                     "--tls-key", str(self.settings.key)]
        assert self.local_workers is not None
        for i in range(self.local_workers):
            out: Any = subprocess.DEVNULL
            if self.logs is not None:
                self.logs.mkdir(parents=True, exist_ok=True)
                out = open(self.logs / f"dask-worker-{i + 1}.log", "ab")  # noqa: SIM115
            try:
                self._workers.append(subprocess.Popen(
                    [*argv, "--name", f"baton-local-{i + 1}"], stdin=subprocess.DEVNULL,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True))
            finally:
                if out is not subprocess.DEVNULL:
                    out.close()
        return address

    def _deliver(self, event: tuple[float, Any]) -> None:
        msg = event[1]
        if not isinstance(msg, dict):
            return
        lines = self._lines.get(str(msg.get("key")))
        n, line = msg.get("n"), msg.get("line")
        if lines is not None and isinstance(n, int) and isinstance(line, str):
            lines.take(n, line)

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                if self._cancel_sent:
                    await Event(self.cancel_name, client=client).clear()
            with contextlib.suppress(Exception):
                await client.close()
        await self._stop_cluster()

    async def _stop_cluster(self) -> None:
        """Stop the `local:N` workers and scheduler this executor started, if any."""
        for proc in self._workers:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        for proc in self._workers:
            try:
                await asyncio.to_thread(proc.wait, 30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.to_thread(proc.wait)
        self._workers.clear()
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None:
            with contextlib.suppress(Exception):
                await scheduler.close()

    # == one attempt ================================================================

    def payload(self, launch: StepLaunch, key: str, tree: WorkerTree | None = None
                ) -> tuple[Payload, list[str]]:
        """The task of `launch`: its argv, contract, prompt and input files, relative to the
        workspace; no variable of this process's environment."""
        root = launch.root
        # a shipped phase's checkout has the repository's own project files: what is not
        # committed there stays out of it (the worker would commit it into the phase)
        own = () if launch.shipment is not None else PROJECT_FILES
        # the artifact too when it is there: a revise agent edits the plan it is given
        paths = [*launch.inputs, launch.artifact, *(root / p for p in own)]
        state_file = launch.contract.get("STATE_FILE")
        if state_file:
            paths.append(Path(state_file))
        files, skipped = gather_files(root, paths)
        rel_cwd = "/".join(confine.relative(root, launch.cwd)) if launch.cwd != root else ""
        return Payload(
            key=key, workflow_id=launch.workflow_id, sid=launch.sid, attempt=launch.attempt,
            root=str(root), cwd=rel_cwd, artifact="/".join(confine.relative(root,
                                                                             launch.artifact)),
            argv=tuple(launch.argv), env=shipped_env(launch.env, launch.contract, os.environ),
            stdin=launch.stdin, files=files, timeout=launch.timeout,
            stall_timeout=launch.stall_timeout, grace=launch.grace, topic=self.topic,
            cancel=self.cancel_name, stop=f"baton-stop-{key}", tree=tree), skipped

    async def execute(self, launch: StepLaunch, *, on_line: Callable[[str], None],
                      on_start: Callable[[int], None], cancel: asyncio.Event,
                      stop: asyncio.Event) -> Executed:
        if not launch.remote:
            out = await run_process(
                launch.argv, cwd=launch.cwd, env=launch.env, stdin=launch.stdin,
                on_line=on_line, timeout=launch.timeout, stall_timeout=launch.stall_timeout,
                cancel=cancel, grace=launch.grace, on_start=on_start, stop=stop)
            return Executed(out)
        try:
            client = await self.client()
        except (OSError, TimeoutError, CommClosedError, RuntimeError, ValueError) as exc:
            # Dask says "Scheduler failed to start" (RuntimeError) for a bad certificate
            raise WorkerLost(f"cannot reach the Dask scheduler {self.settings.scheduler}: "
                             f"{exc}") from None
        offered = await client.run_on_scheduler(offered_resources)
        if not any(r.get(launch.runner) for r in offered):
            # Dask would hold the task until such a worker joins: said now, not a hang
            raise AgentLaunchError(
                f"cannot start agent: no worker of the Dask cluster {self.settings.scheduler} "
                f"offers `{launch.runner}` ({len(offered)} worker(s); start `baton worker` on "
                f"a machine where the {launch.runner} CLI is installed and logged in)")
        key = f"baton-{launch.workflow_id}-{launch.sid}-a{launch.attempt}-{uuid.uuid4().hex[:8]}"
        tree = None
        if launch.shipment is not None:
            # an earlier attempt's bundle is forgotten; the base bundle is made once per
            # base (off the event loop): a base that cannot be bundled fails the attempt
            await asyncio.to_thread(launch.shipment.start_attempt)
            try:
                tree = await asyncio.to_thread(launch.shipment.for_worker)
            except ShippingError as exc:
                launch.shipment.fail(exc)
                return Executed(not_started(str(exc)))
        payload, skipped = self.payload(launch, key, tree)
        for line in skipped:
            self.say(f"[{launch.sid}] not shipped to the worker: {line}")
        lines = self._lines[key] = _Lines(on_line)
        try:
            returned = await self._run(client, payload, launch.runner, cancel, stop)
            await self._all_lines(lines, returned.lines)
        finally:
            self._lines.pop(key, None)
        if lines.error is not None:
            raise lines.error
        if launch.shipment is not None:  # before the artifact: a resume that finds the
            if returned.shipping_error is not None:  # artifact finds the bundle kept
                launch.shipment.fail(returned.shipping_error)
            elif returned.bundle is not None:
                await asyncio.to_thread(launch.shipment.receive, returned.bundle)
        if returned.artifact is not None:
            confine.write_atomic(self.root, launch.artifact, returned.artifact, mode=0o644)
        return Executed(returned.outcome, returned.worker, list(returned.notes))

    async def _run(self, client: Any, payload: Payload, runner: str,
                   cancel: asyncio.Event, stop: asyncio.Event) -> Returned:
        future: Any = client.submit(run_attempt, payload, key=payload.key, pure=False, retries=0,
                               resources={runner: 1})
        result: asyncio.Future[Any] = asyncio.ensure_future(future.result())
        stopped = False
        try:
            while True:
                waits: list[asyncio.Future[Any]] = [result]
                cancelled = asyncio.ensure_future(cancel.wait())
                halted = asyncio.ensure_future(stop.wait()) if not stopped else None
                waits += [cancelled] + ([halted] if halted is not None else [])
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for w in waits[1:]:
                        w.cancel()
                if result.done():
                    break
                if cancel.is_set() and not self._cancel_sent:
                    self._cancel_sent = True
                    await Event(self.cancel_name, client=client).set()
                    await asyncio.wait([result])
                if halted is not None and stop.is_set():
                    stopped = True
                    await Event(payload.stop, client=client).set()
            returned = result.result()
        except (Exception, asyncio.CancelledError) as exc:
            if _lost(exc):
                last = getattr(getattr(exc, "last_worker", None), "address", None)
                where = f" {last}" if last else ""
                raise WorkerLost(f"the Dask worker{where} running it was lost: {exc}",
                                 str(last) if last else None) from None
            raise
        finally:
            if not result.done():
                result.cancel()
            future.release()
            if stopped:
                with contextlib.suppress(Exception):
                    await Event(payload.stop, client=client).clear()
        if not isinstance(returned, Returned):
            raise WorkerLost(f"the worker returned {type(returned).__name__}, not an outcome")
        return returned

    async def _all_lines(self, lines: _Lines, count: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LINES_GRACE
        while lines.next < count:
            left = deadline - loop.time()
            if left <= 0:
                log.warning("%d of %d output lines of an attempt never arrived",
                            count - lines.next, count)
                return
            lines.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(lines.changed.wait(), left)


def _lost(exc: BaseException) -> bool:
    """Whether an attempt's failure is the cluster's (its worker died or went away)."""
    return isinstance(exc, (KilledWorker, CommClosedError, FutureCancelledError)) or (
        isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError))


__all__ = ["DaskExecutor", "security_of"]

"""Where an agent attempt's process runs: the executor seam of `agent_step`.

`local` runs it here (`process.run_process`, as always); `dask` runs the same code on a
worker of a Dask cluster and streams its lines back, so everything `agent_step` does with
an attempt — signals, usage, budget halts, the hard barrier, the checkpoint — is the same
whichever executor ran it. Only `dask` (and `task`, its worker side) import `distributed`,
and only when the configuration asks for it: the check and editor paths never load it."""

from __future__ import annotations

import asyncio
import importlib.util
import ipaddress
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ...model.config import WorkflowSettings
from ..process import ProcessOutcome
from ..shipping import Shipment


@dataclass(frozen=True)
class StepLaunch:
    """One attempt of one agent step as an executor receives it: what the runner built
    (`argv`, `env`, `stdin`) and what a remote executor needs besides to run it elsewhere
    (the contract, the workspace, the files it reads, where its artifact goes)."""

    workflow_id: str
    sid: str
    state: str
    attempt: int
    runner: str
    root: Path
    cwd: Path
    artifact: Path
    argv: list[str]
    env: Mapping[str, str]
    stdin: bytes | None
    contract: Mapping[str, str]
    timeout: float
    stall_timeout: float | None
    grace: float
    inputs: tuple[Path, ...] = ()
    """Workspace files the step reads (its declared inputs, the runner's temp files): what a
    worker without a checkout receives."""
    remote: bool = False
    """Whether it runs on a worker (`Executor.remote` of its state; an implement step only
    when it is shipped as a bundle: without a repository its code would stay there)."""
    shipment: Shipment | None = None
    """An implement phase shipped as git bundles (`shipping`): the worker checks its base
    out, the agent works there, and the branch comes back to `Shipment.receive`."""


@dataclass
class Executed:
    """How an attempt ended, and where it ran (a Dask worker's address; None here)."""

    outcome: ProcessOutcome
    worker: str | None = None
    notes: list[str] = field(default_factory=list)


class WorkerLost(Exception):
    """The attempt's worker died or became unreachable while it ran (Dask's `KilledWorker`,
    a closed comm): no fault of the step, retried as a transient failure by Baton's own
    attempts, never by the cluster. `worker`: the lost worker's address, when known."""

    def __init__(self, message: str, worker: str | None = None) -> None:
        super().__init__(message)
        self.worker = worker


class Executor(Protocol):
    name: str

    def remote(self, state: str) -> bool:
        """Whether steps of `state` run through this executor's workers."""
        ...

    async def execute(self, launch: StepLaunch, *, on_line: Callable[[str], None],
                      on_start: Callable[[int], None], cancel: asyncio.Event,
                      stop: asyncio.Event) -> Executed: ...

    async def close(self) -> None: ...


def parse_scheduler(value: str) -> tuple[int | None, str]:
    """(N, "") for `local:N`, else (None, the address); ValueError with the fix for an
    address Baton will not use: plain tcp:// to anything but this machine."""
    text = value.strip()
    if text.startswith("local:") or text == "local":
        count = text.partition(":")[2] or "2"
        if not count.isdigit() or not 1 <= int(count) <= 64:
            raise ValueError(f"[workflow.dask] scheduler {value!r}: `local:N` needs N from 1 "
                             "to 64 workers")
        return int(count), ""
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in ("tcp", "tls") or not rest:
        raise ValueError(f"[workflow.dask] scheduler {value!r}: expected `local:N`, "
                         "`tls://host:port` or `tcp://127.0.0.1:port`")
    host = rest.rsplit(":", 1)[0].strip("[]") if ":" in rest else rest
    if scheme == "tcp" and not _loopback(host):
        raise ValueError(
            f"[workflow.dask] scheduler {value!r}: plain tcp:// is refused for a host other "
            "than this machine (agents' prompts, contracts and artifacts would cross the "
            "network unauthenticated and unencrypted); use tls://… with ca, cert and key")
    return None, text


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


REMOTE_ROLES = frozenset({"research", "plan", "revise", "implement"})
"""Roles whose agent makes only its artifact (an implement phase: its branch): what a worker
can run. Supervisors and coordinators that launch or stand for other agents run here."""
REMOTE_CAPABLE = ("research", "plan", "implement")
"""States whose steps can run on a worker: what they make comes back (the artifact; an
implement phase's branch as a git bundle)."""


def check_executor(settings: WorkflowSettings) -> None:
    """Refuse, before a run writes anything, an executor that cannot work: `dask` without
    the extra installed, a scheduler address Baton will not use, TLS files half given.
    Raises ValueError with the fix."""
    if settings.executor != "dask":
        return
    if importlib.util.find_spec("distributed") is None:
        raise ValueError("[workflow] executor = \"dask\" needs Dask: pip install "
                         "'baton-lsp[dask]'")
    dask = settings.dask
    _, address = parse_scheduler(dask.scheduler)
    other = sorted(set(dask.remote_states) - set(REMOTE_CAPABLE))
    if other:
        raise ValueError(f"[workflow.dask] remote-states: {', '.join(other)} cannot run on a "
                         f"worker (only {', '.join(REMOTE_CAPABLE)}: a worker returns the "
                         "step's artifact and an implement phase's branch, and the changes "
                         "a debug or document agent makes elsewhere would be lost)")
    files = (dask.ca, dask.cert, dask.key)
    if any(files) and not all(files):
        raise ValueError("[workflow.dask] TLS needs all of ca, cert and key")
    if address.startswith("tls://") and not all(files):
        raise ValueError(f"[workflow.dask] scheduler {dask.scheduler!r}: tls:// needs ca, "
                         "cert and key")


def make_executor(settings: WorkflowSettings, root: Path, say: Callable[[str], None],
                  logs: Path | None = None) -> Executor:
    """The executor `[workflow] executor` names; `dask` is imported only here, on demand."""
    if settings.executor == "dask":
        from .dask import DaskExecutor  # lazy: Dask is an optional extra, and slow to import

        return DaskExecutor(settings.dask, root, say, logs)
    from .local import LocalExecutor  # here, not at the top: `local` imports this package

    return LocalExecutor()


__all__ = ["REMOTE_CAPABLE", "REMOTE_ROLES", "Executed", "Executor", "StepLaunch", "WorkerLost",
           "check_executor", "make_executor", "parse_scheduler"]

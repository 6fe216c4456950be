"""The worker side of the Dask executor: the task payload and the one function a Dask worker
runs for an agent attempt (`run_attempt`).

The payload carries the argv, the input contract, the prompt and the files the step reads:
never the caller's environment (its API keys stay on the caller; the worker's own
environment, with its own credentials, is the agent's). The caller's workspace path is
rewritten to the worker's scratch directory in everything the agent receives, and back in
every line it prints, so the caller reads the same signals and paths as from a local
agent. The function runs the same `run_process` as the local executor — the spawn gate,
timeouts, the stall watchdog, process groups — and records each agent group it starts in
the worker machine's own directory before the agent is let go, so a group that outlived its
worker (SIGKILLed: the agent runs in its own session) is stopped by the next attempt that
runs on that machine, or by `baton worker` when it starts."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import distributed
import platformdirs

from ...runs import confine
from ..process import (
    ProcessOutcome,
    alive_as_recorded,
    group_alive,
    kill_group,
    prove_agent_group,
    run_process,
    start_ticks,
)
from ..shipping import ShippingError, WorkerTree

log = logging.getLogger(__name__)

MAX_FILE_BYTES = 4 << 20
"""Largest input file shipped to a worker; a bigger one is left out (and said)."""
MAX_FILES_BYTES = 32 << 20
"""All input files of one payload together."""
MAX_ARTIFACT_BYTES = 16 << 20
"""Largest artifact a worker returns (the same cap as Baton's own reads of artifacts)."""
CONTRACT_KEYS = frozenset({"CLAUDE_PROJECT_DIR", "WORKFLOW_ID", "STATE_FILE",
                           "SUPERVISOR_METADATA_PATH"})
"""Contract variables shipped besides every `BATON_*` one."""
PROJECT_FILES = (".claude/settings.json", "CLAUDE.md", "AGENTS.md", "GEMINI.md",
                 ".claude/baton-script.json")
"""Workspace files an agent reads from its project directory when they exist (the CLIs'
project settings and memory, the scripted agent's behaviour table): shipped with research
and the other steps that run in a scratch directory."""
_SECRET = re.compile(r"(?i)(API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)")
WORKER_DIR_ENV = "BATON_WORKER_DIR"
"""Where a worker machine records the agent groups its attempts start (default: the user's
cache directory, `baton/worker`)."""
_WATCH = 0.5


@dataclass(frozen=True)
class Payload:
    """One attempt as a Dask task: everything the worker needs, nothing of the caller's
    environment."""

    key: str
    workflow_id: str
    sid: str
    attempt: int
    root: str
    """The caller's workspace: rewritten to the worker's directory wherever it appears."""
    cwd: str
    """The agent's working directory, relative to the workspace ("" for the workspace)."""
    artifact: str
    """The artifact's path relative to the workspace: read back on the worker."""
    argv: tuple[str, ...]
    env: dict[str, str]
    """The contract and the runner's own variables (never a caller's value unchanged)."""
    stdin: bytes | None
    files: dict[str, bytes] = field(default_factory=dict)
    """Workspace files the step reads, by relative path."""
    timeout: float = 300.0
    stall_timeout: float | None = None
    grace: float = 3.0
    topic: str = ""
    """The Dask event topic each output line is logged to."""
    cancel: str = ""
    """The `distributed.Event` the caller sets to cancel the workflow."""
    stop: str = ""
    """The `distributed.Event` the caller sets to stop this attempt (a budget crossed)."""
    tree: WorkerTree | None = None
    """An implement phase shipped as a git bundle: checked out, and the workspace's place
    in it is the agent's workspace; its branch goes back as a bundle."""


@dataclass(frozen=True)
class Returned:
    """What the worker function returns: the outcome, the artifact's bytes, how many lines
    it logged (the caller waits for all of them) and which worker ran it."""

    outcome: ProcessOutcome
    artifact: bytes | None
    lines: int
    worker: str
    notes: tuple[str, ...] = ()
    bundle: bytes | None = None
    """A shipped phase's branch, committed and bundled (`WorkerTree.bring_back`)."""
    shipping_error: ShippingError | None = None
    """Why the phase's tree could not be checked out or brought back."""


def shipped_env(launch_env: Mapping[str, str], contract: Mapping[str, str],
                caller_env: Mapping[str, str]) -> dict[str, str]:
    """The agent variables a payload may carry: the contract's `BATON_*` and seed keys, and
    what the runner added of its own (a value the caller's environment does not hold);
    nothing that looks like a credential, and no value of one of the caller's secrets."""
    secrets = {v for k, v in caller_env.items() if _SECRET.search(k) and v}
    out = {k: v for k, v in contract.items() if k.startswith("BATON_") or k in CONTRACT_KEYS}
    for key, value in launch_env.items():
        if key in out or caller_env.get(key) == value:
            continue
        out[key] = value
    return {k: v for k, v in out.items() if not _SECRET.search(k) and v not in secrets}


def gather_files(root: Path, paths: list[Path]) -> tuple[dict[str, bytes], list[str]]:
    """The bytes of the workspace files a step reads (read as Baton reads its own state: no
    link out of the workspace, no FIFO), bounded; what was left out, one line each."""
    files: dict[str, bytes] = {}
    skipped: list[str] = []
    total = 0
    for path in dict.fromkeys(paths):
        try:
            rel = "/".join(confine.relative(root, path))
            data = confine.read_bytes(root, path, MAX_FILE_BYTES)
        except FileNotFoundError:
            continue
        except (OSError, ValueError) as exc:
            skipped.append(f"{path}: {exc}")
            continue
        if total + len(data) > MAX_FILES_BYTES:
            skipped.append(f"{path}: the payload's files would exceed {MAX_FILES_BYTES} bytes")
            continue
        files[rel] = data
        total += len(data)
    return files, skipped


def _rewriter(old: str, new: str) -> Callable[[str], str]:
    """Replace the path `old` (as a whole path component prefix) by `new` in a string."""
    pattern = re.compile(re.escape(old) + r"(?=/|$|[^\w.-])")
    return lambda text: pattern.sub(lambda _: new, text)


# == the agent groups a worker machine started ==================================================

def worker_dir() -> Path:
    given = os.environ.get(WORKER_DIR_ENV)
    if given:
        return Path(given)
    return Path(platformdirs.user_cache_dir("baton", appauthor=False)) / "worker"


def _record_path(base: Path, pgid: int) -> Path:
    return base / "groups" / f"{pgid}.json"


def record_group(base: Path, pgid: int, workflow_id: str, scratch: Path) -> None:
    """Durably, before the agent is let go: this worker process started group `pgid`."""
    base.mkdir(parents=True, exist_ok=True)
    record = {"pgid": pgid, "start_ticks": start_ticks(pgid), "owner": os.getpid(),
              "owner_ticks": start_ticks(os.getpid()), "workflow_id": workflow_id,
              "root": str(scratch)}
    confine.write_atomic(base, _record_path(base, pgid), json.dumps(record).encode())


def forget_group(base: Path, pgid: int) -> None:
    with contextlib.suppress(OSError):
        confine.unlink(base, _record_path(base, pgid))


@dataclass(frozen=True)
class _Group:
    """One agent group record a worker process wrote (`record_group`)."""

    pgid: int
    owner: int
    owner_ticks: object
    workflow_id: str
    root: Path
    start_ticks: int | None

    def proven(self) -> tuple[bool, str | None]:
        """Whether /proc shows the recorded agent (`prove_agent_group`)."""
        return prove_agent_group(self.pgid, self.workflow_id, self.root, self.start_ticks)


def _groups(base: Path) -> Iterator[_Group]:
    """Every readable group record under `base`; damaged ones are skipped."""
    groups = base / "groups"
    try:
        names = sorted(os.listdir(groups))
    except OSError:
        return
    for name in names:
        try:
            rec = json.loads(confine.read_bytes(base, groups / name, 1 << 16))
            ticks = rec.get("start_ticks")
            yield _Group(int(rec["pgid"]), int(rec["owner"]), rec.get("owner_ticks"),
                         str(rec.get("workflow_id")), Path(str(rec["root"])),
                         ticks if isinstance(ticks, int) else None)
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue


def sweep_orphans(base: Path, grace: float = 3.0) -> list[int]:
    """Stop the agent groups whose worker process is gone (killed while its agent ran):
    only those /proc proves to be the recorded agent (`prove_agent_group`). Returns them."""
    stopped: list[int] = []
    for g in _groups(base):
        if g.owner == os.getpid():
            continue  # ours: run_process stops its own groups
        if alive_as_recorded(g.owner, g.owner_ticks):
            continue  # its worker is alive: the group is that worker's to stop
        ok, why = g.proven()
        if ok and kill_group(g.pgid, grace):
            log.warning("stopped agent group %d left by dead worker process %d", g.pgid,
                        g.owner)
            stopped.append(g.pgid)
        elif why is not None:
            log.warning("agent group %d of a dead worker not stopped: %s", g.pgid, why)
            continue
        if not group_alive(g.pgid):
            forget_group(base, g.pgid)
    return stopped


def stop_own_groups(base: Path, grace: float = 3.0) -> list[int]:
    """Stop the agent groups this worker process started and that still run: a worker
    that leaves the cluster (its scheduler gone with a killed `baton run`, a SIGTERM)
    leaves no agent behind."""
    stopped: list[int] = []
    for g in _groups(base):
        if g.owner != os.getpid():
            continue
        ok, _ = g.proven()
        if ok and kill_group(g.pgid, grace):
            stopped.append(g.pgid)
        if not group_alive(g.pgid):
            forget_group(base, g.pgid)
    return stopped


# == the worker function ========================================================================

def run_attempt(payload: Payload) -> Returned:
    """The Dask task of one agent attempt (a module-level function: workers import it)."""
    event: Any = distributed.Event  # untyped
    worker = distributed.get_worker()
    base = worker_dir()
    sweep_orphans(base, payload.grace)
    scratch = Path(os.path.realpath(worker.local_directory)) / "baton" / \
        f"{payload.key}-{os.urandom(4).hex()}"
    scratch.mkdir(parents=True)
    try:
        client = distributed.get_client()  # here: the watcher thread is not a task's
        return _run_in(payload, scratch, base, worker, event(payload.cancel, client=client),
                       event(payload.stop, client=client))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run_in(payload: Payload, scratch: Path, base: Path, worker: Any, cancel_ev: Any,
            stop_ev: Any) -> Returned:
    notes: list[str] = []
    top = scratch / "tree"
    if payload.tree is not None:
        try:
            scratch = payload.tree.checkout(top)  # the workspace's place in the checkout
        except ShippingError as exc:
            return Returned(not_started(str(exc)), None, 0, str(worker.address),
                            shipping_error=exc)
    for rel, data in payload.files.items():
        try:
            confine.write_atomic(scratch, scratch / rel, data, mode=0o644, durable=False)
        except (OSError, ValueError) as exc:
            notes.append(f"input {rel} not written on the worker: {exc}")
    inward = _rewriter(payload.root, str(scratch))
    outward = _rewriter(str(scratch), payload.root)
    env = dict(os.environ)
    env.update({k: inward(v) for k, v in payload.env.items()})
    argv = [inward(a) for a in payload.argv]
    stdin = inward(payload.stdin.decode("utf-8", "surrogateescape")).encode(
        "utf-8", "surrogateescape") if payload.stdin is not None else None
    cwd = scratch / payload.cwd if payload.cwd else scratch
    cwd.mkdir(parents=True, exist_ok=True)
    count = [0]
    started: list[int] = []

    def on_line(line: str) -> None:
        worker.log_event(payload.topic, {"key": payload.key, "n": count[0],
                                         "line": outward(line)})
        count[0] += 1

    def on_start(pid: int) -> None:
        record_group(base, pid, payload.workflow_id, scratch)
        started.append(pid)

    async def attempt() -> ProcessOutcome:
        loop = asyncio.get_running_loop()
        cancel, stop, done = asyncio.Event(), asyncio.Event(), threading.Event()

        def watch() -> None:  # the caller's events, polled on the scheduler
            while not done.is_set():
                try:
                    if cancel_ev.is_set() or not _wanted(worker, payload.key):
                        loop.call_soon_threadsafe(cancel.set)
                    if stop_ev.is_set():
                        loop.call_soon_threadsafe(stop.set)
                except Exception as exc:  # the scheduler is gone: the task will be too
                    log.debug("cannot read the caller's events: %s", exc)
                done.wait(_WATCH)

        watcher = threading.Thread(target=watch, name=f"baton-watch-{payload.key}",
                                   daemon=True)
        watcher.start()
        try:
            return await run_process(argv, cwd=cwd, env=env, stdin=stdin, on_line=on_line,
                                     timeout=payload.timeout,
                                     stall_timeout=payload.stall_timeout, cancel=cancel,
                                     grace=payload.grace, on_start=on_start, stop=stop)
        finally:
            done.set()

    try:
        out = asyncio.run(attempt())
    finally:
        for pid in started:
            if not group_alive(pid):
                forget_group(base, pid)
    out.stderr_tail = outward(out.stderr_tail)
    artifact: bytes | None = None
    try:
        artifact = confine.read_bytes(scratch, scratch / payload.artifact, MAX_ARTIFACT_BYTES)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:
        notes.append(f"artifact not returned: {exc}")
    bundle: bytes | None = None
    failed: ShippingError | None = None
    if payload.tree is not None and out.exit_code == 0 and not out.killed_by_us:
        try:  # committed as a local worktree's is, only once the agent succeeded
            bundle = payload.tree.bring_back(top)
        except ShippingError as exc:
            failed = exc
    return Returned(out, artifact, count[0], str(worker.address), tuple(notes), bundle,
                    failed)


def _wanted(worker: Any, key: str) -> bool:
    """Whether the scheduler still wants the task: a caller that died (`baton run` killed)
    or released its future leaves it `cancelled` here, and its agent is then stopped rather
    than paid for until it ends on its own (Dask cannot interrupt a running task)."""
    ts = worker.state.tasks.get(key)
    return ts is not None and ts.state not in ("cancelled", "released", "forgotten")


def not_started(why: str) -> ProcessOutcome:
    """The outcome of an attempt whose agent never started (its tree could not be made)."""
    return ProcessOutcome(exit_code=1, timed_out=False, stalled=False, cancelled=False,
                          duration=0.0, stderr_tail=f"baton worker: {why}", signal=None)

"""Stopping a workflow: from inside (SIGINT/SIGTERM cancel the engine, which stops its
agents by process group and writes a resumable checkpoint) and from another process
(`baton cancel`, the editor's Cancel)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from ..runs.store import CheckpointStore
from .process import START_TICKS, kill_group, not_signalled, owned_agent_groups, prove_engine


def install_signal_handlers(cancel: Callable[[], None]) -> None:
    """SIGINT/SIGTERM call `cancel` (the engine's) in the running event loop."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, cancel)


def cancel_workflow(root: Path, workflow_id: str, grace: float = 10.0) -> tuple[str, int]:
    """Stop a workflow run by another process: SIGTERM to its engine, SIGKILL after `grace`;
    agents left behind by a dead engine are stopped directly. Returns (message, exit code).

    `run.json` and the lock are files in the workspace anyone can plant, so nothing is
    signalled that /proc does not prove to be this workflow's (`process.prove_engine`,
    `prove_agent_group`): a record it cannot prove is named in the message instead, and
    the exit code is 1. The lock must be the workflow's own regular file, not a link."""
    store = CheckpointStore(root, workflow_id)
    if not store.dir.is_dir():
        return f"baton: error: no workflow {workflow_id!r} in {root}", 2
    probe = store.probe_lock()
    if probe.problem is not None:
        return f"workflow {workflow_id}: nothing signalled: {probe.problem}", 1
    owner, unreadable = store.read_owner()
    if not probe.held:
        owned, refused = owned_agent_groups(owner, workflow_id, root)
        stopped = sum(kill_group(pgid, min(grace, 5.0)) for pgid in owned)
        if unreadable is not None:  # leftover agents cannot be known: say so, not "done"
            refused.append(f"leftover agents not looked for: {unreadable}")
        return (f"workflow {workflow_id} is not running"
                + (f"; stopped {stopped} leftover agent group(s)" if stopped else "")
                + "".join(f"; {line}" for line in refused), 1 if refused else 0)
    pid = owner.get("pid")
    if unreadable is not None:
        return (f"workflow {workflow_id} is running but nothing was signalled: {unreadable} "
                "(the engine's record; stop it with Ctrl-C or kill its process)", 1)
    if not isinstance(pid, int) or isinstance(pid, bool):
        return f"baton: error: workflow {workflow_id} is locked but names no engine pid", 2
    recorded = owner.get(START_TICKS)
    recorded = recorded if isinstance(recorded, int) else None
    ok, why = prove_engine(pid, probe.ident, recorded)
    if not ok:
        return (f"workflow {workflow_id} is running but its engine is not proven: "
                + not_signalled(pid, workflow_id, why or "no such process is alive"), 1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and store.locked():
        time.sleep(0.05)
    if store.locked():
        if prove_engine(pid, probe.ident, recorded)[0]:  # still that process, still locked
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        owned, refused = owned_agent_groups(store.owner(), workflow_id, root)
        for pgid in owned:
            kill_group(pgid, 0.5)
        return (f"workflow {workflow_id}: engine {pid} did not stop within {grace:.0f} s and "
                "was killed; resume with `baton resume " + workflow_id + "`"
                + "".join(f"; {line}" for line in refused), 1 if refused else 0)
    return f"workflow {workflow_id} cancelled; resume with `baton resume {workflow_id}`", 0

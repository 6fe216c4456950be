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
from .process import kill_group, owned_agent_groups


def install_signal_handlers(cancel: Callable[[], None]) -> None:
    """SIGINT/SIGTERM call `cancel` (the engine's) in the running event loop."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, cancel)


def cancel_workflow(root: Path, workflow_id: str, grace: float = 10.0) -> tuple[str, int]:
    """Stop a workflow run by another process: SIGTERM to its engine, SIGKILL after `grace`;
    agents left behind by a dead engine are stopped directly. Returns (message, exit code)."""
    store = CheckpointStore(root, workflow_id)
    if not store.dir.is_dir():
        return f"baton: error: no workflow {workflow_id!r} in {root}", 2
    owner = store.owner()
    pid = owner.get("pid")
    if not store.locked():
        stopped = sum(kill_group(pgid, min(grace, 5.0))
                      for pgid in owned_agent_groups(owner.get("pgids", []), workflow_id))
        return (f"workflow {workflow_id} is not running"
                + (f"; stopped {stopped} leftover agent group(s)" if stopped else ""), 0)
    if not isinstance(pid, int):
        return f"baton: error: workflow {workflow_id} is locked but names no engine pid", 2
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and store.locked():
        time.sleep(0.05)
    if store.locked():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for pgid in store.owner().get("pgids", []):
            kill_group(pgid, 0.5)
        return (f"workflow {workflow_id}: engine {pid} did not stop within {grace:.0f} s and "
                "was killed; resume with `baton resume " + workflow_id + "`", 0)
    return f"workflow {workflow_id} cancelled; resume with `baton resume {workflow_id}`", 0

"""The local executor: the attempt's process runs on this machine (`process.run_process`:
the spawn gate, the timeouts, the stall watchdog, process groups, cancel)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ..process import run_process
from . import Executed, StepLaunch


class LocalExecutor:
    """Today's behaviour, unchanged: every state runs here."""

    name = "local"

    def remote(self, state: str) -> bool:
        return False

    async def execute(self, launch: StepLaunch, *, on_line: Callable[[str], None],
                      on_start: Callable[[int], None], cancel: asyncio.Event,
                      stop: asyncio.Event) -> Executed:
        out = await run_process(
            launch.argv, cwd=launch.cwd, env=launch.env, stdin=launch.stdin, on_line=on_line,
            timeout=launch.timeout, stall_timeout=launch.stall_timeout, cancel=cancel,
            grace=launch.grace, on_start=on_start, stop=stop)
        return Executed(out)

    async def close(self) -> None:
        return None

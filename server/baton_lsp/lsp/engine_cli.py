"""The engine as a process of its own (`python -m baton_lsp run|resume|cancel`): the server
never runs a workflow in its event loop, so launching and cancelling are subprocesses."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from ..paths import python_module_argv


def engine_argv() -> list[str]:
    """The command line that starts Baton's CLI with this server's interpreter."""
    return python_module_argv("baton_lsp")


async def cancel_process(root: Path, wid: str) -> dict[str, Any]:
    """`baton cancel ID` in its own process (it waits for the engine to stop)."""
    proc = await asyncio.create_subprocess_exec(
        *engine_argv(), "cancel", wid, "--workspace", str(root),
        cwd=str(root), stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE, start_new_session=True)
    out, err = await proc.communicate()
    message = (out or err).decode("utf-8", "replace").strip()
    return {"workflow_id": wid, "code": proc.returncode, "message": message}

"""The cancellation helpers on their own: a cancelled task stops its worker between items."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from baton_lsp.lsp.cancel import CancelToken, map_cancellable, run_cancellable
from baton_lsp.lsp.session import Session

TIMEOUT = 30.0


class FakeServer:
    """What the helpers use of the server: its pool and its session."""

    def __init__(self) -> None:
        self.executor = ThreadPoolExecutor(max_workers=1)
        self.session = Session()


async def _wait(event: threading.Event) -> None:
    assert await asyncio.get_running_loop().run_in_executor(None, event.wait, TIMEOUT)


async def test_cancelling_the_task_stops_the_worker_after_the_current_item() -> None:
    ls = FakeServer()
    started, release = threading.Event(), threading.Event()
    seen: list[int] = []

    def work(item: int) -> int:
        seen.append(item)
        if item == 3:
            started.set()
            release.wait(TIMEOUT)  # still busy with item 3 when the task is cancelled
        return item

    task = asyncio.ensure_future(map_cancellable(ls, range(100), work, what="test"))
    await _wait(started)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    ls.executor.shutdown(wait=True)
    assert seen == [0, 1, 2, 3]


async def test_run_cancellable_sets_the_token_of_a_running_job() -> None:
    ls = FakeServer()
    started, stopped = threading.Event(), threading.Event()

    def work(token: CancelToken) -> None:
        started.set()
        while True:  # a long job that checks between steps
            try:
                token.check()
            except Exception:
                stopped.set()
                raise
            started.wait(0.001)

    task = asyncio.ensure_future(run_cancellable(ls, work, what="test"))
    await _wait(started)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await _wait(stopped)
    ls.executor.shutdown(wait=True)


async def test_results_in_order_and_failures_logged_and_left_out(
        caplog: pytest.LogCaptureFixture) -> None:
    ls = FakeServer()

    def work(item: int) -> int:
        if item == 2:
            raise ValueError("bad item")
        return item * 10

    logger = logging.getLogger("baton_lsp.lsp.cancel")
    logger.addHandler(caplog.handler)  # the server's logging may not propagate to the root
    try:
        got = await map_cancellable(ls, list(range(5)), work, what="test",
                                    label=lambda item: f"file-{item}")
    finally:
        logger.removeHandler(caplog.handler)
    assert got == [0, 10, 30, 40]
    assert "test failed on file-2" in caplog.text and "bad item" in caplog.text
    assert await map_cancellable(ls, [], work, what="test") == []
    ls.executor.shutdown(wait=True)

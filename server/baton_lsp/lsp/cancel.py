"""Cancellable heavy requests: the work runs on the server's thread pool in short slices,
with a token the worker checks between items.

pygls cancels a request by cancelling its asyncio task, and only if that task is still
pending when `$/cancelRequest` is read; the stdin reader hops through a thread for every
line, so a handler doing its work on the event loop has answered before the cancel is even
seen. Here the handler's task waits on the pool, so the cancel lands at an `await`: pygls
answers RequestCancelled (-32800), and the token makes the worker stop at the next item
instead of finishing its slice.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .server import BatonServer

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

SLICE_SECONDS = 0.02
"""How long one pool job runs before handing back: per-document checks queued behind a
workspace request wait at most this long for a worker."""


class OperationCancelled(Exception):
    """Raised in a worker whose token was set; nobody is waiting for its result any more."""


class CancelToken:
    """Set from the event loop when the request is cancelled; read by the worker."""

    __slots__ = ("_event", "done")

    def __init__(self) -> None:
        self._event = threading.Event()
        self.done = 0
        """Items finished so far (written by the worker only)."""

    def cancel(self) -> None:
        self._event.set()

    def check(self) -> None:
        if self._event.is_set():
            raise OperationCancelled


def _when_stopped(job: Future[Any], what: str, token: CancelToken, total: int | None) -> None:
    """Log on the event loop once the cancelled worker has actually stopped."""
    loop = asyncio.get_running_loop()

    def report() -> None:
        if total is None:
            log.info("%s cancelled", what)
        else:
            log.info("%s cancelled after %d of %d items", what, token.done, total)

    def done(_: Future[Any]) -> None:
        with contextlib.suppress(RuntimeError):  # a closed loop: the server is exiting
            loop.call_soon_threadsafe(report)

    job.add_done_callback(done)


async def _await_job(ls: BatonServer, fn: Callable[[], T], what: str, token: CancelToken,
                     total: int | None) -> T:
    ls.session.load_core()
    job = ls.executor.submit(fn)
    try:
        return await asyncio.wrap_future(job)
    except asyncio.CancelledError:
        token.cancel()  # a running job stops at its next check; a queued one never starts
        _when_stopped(job, what, token, total)
        raise
    except OperationCancelled:  # only if the token was set without cancelling the task
        raise asyncio.CancelledError from None


async def run_cancellable(ls: BatonServer, fn: Callable[[CancelToken], T], *,
                          what: str) -> T:
    """`fn(token)` on the server's pool; `fn` should call `token.check()` between steps."""
    token = CancelToken()
    return await _await_job(ls, functools.partial(fn, token), what, token, None)


def _run_slice(items: Sequence[T], fn: Callable[[T], R], token: CancelToken,
               failed: list[tuple[T, Exception]]) -> list[R]:
    out: list[R] = []
    start = time.perf_counter()
    while token.done < len(items):
        token.check()
        item = items[token.done]
        try:
            out.append(fn(item))
        except Exception as exc:  # one bad file must not fail the whole request
            failed.append((item, exc))
        token.done += 1
        if time.perf_counter() - start >= SLICE_SECONDS:
            break
    return out


async def map_cancellable(ls: BatonServer, items: Sequence[T], fn: Callable[[T], R], *,
                          what: str, label: Callable[[T], object] = lambda item: item,
                          ) -> list[R]:
    """`[fn(item) for item in items]` on the server's pool, in slices of ~20 ms, checking
    for cancellation between items. An item whose `fn` raises is logged (as `label(item)`)
    and left out."""
    token = CancelToken()
    failed: list[tuple[T, Exception]] = []
    out: list[R] = []
    job = functools.partial(_run_slice, items, fn, token, failed)
    while token.done < len(items):
        out.extend(await _await_job(ls, job, what, token, len(items)))
    for item, exc in failed:
        log.error("%s failed on %s", what, label(item), exc_info=exc)
    return out

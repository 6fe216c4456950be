"""Which file to check next: one entry per file, newest edit first.

A burst of edits (a search-and-replace over 2,000 open files, a checkout) used to queue one
check per edit, plus one per file depending on each edited one, in a first-in first-out
pool: the file being typed in waited behind thousands of checks nobody would read. Here a
file waiting to be checked has exactly one entry, however often it is edited or
invalidated before its check starts (superseded work is dropped, not queued), and entries
are taken in this order:

1. `EDIT`: files just edited, opened or saved — the newest first, since that is where the
   user is (a debounce delay makes an entry wait until it is due);
2. `DEPENDENT`: files whose findings may change because another one did, oldest first.

`CheckQueue` is plain data; `CheckRunner` runs it on the event loop with a handler that
`diagnostics` provides (no LSP here).
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

EDIT, DEPENDENT = 0, 1


@dataclass(order=True)
class Entry:
    """A file waiting to be checked."""

    sort: tuple[int, int]
    path: str = field(compare=False)
    uri: str = field(compare=False)
    priority: int = field(compare=False)
    due: float = field(compare=False)
    dependents: bool = field(compare=False)
    """Whether the files depending on this one are queued after its check."""
    live: bool = field(default=True, compare=False)


class CheckQueue:
    """Files waiting to be checked, each once, best first (see the module docstring)."""

    def __init__(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._ready: list[Entry] = []
        self._delayed: list[tuple[float, int, Entry]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, path: str) -> bool:
        return path in self._entries

    def add(self, path: str, uri: str, priority: int, due: float,
            dependents: bool = True) -> None:
        """Queue `path` (checked no earlier than `due`). A file already waiting keeps its
        place unless this is an edit (it becomes the newest, its debounce restarts) or a
        better priority: being a dependent of yet another file must not move a waiting
        file ahead of the one being typed in."""
        old = self._entries.get(path)
        if old is not None and priority != EDIT and priority >= old.priority:
            old.dependents = old.dependents or dependents
            return
        if old is not None:
            del self._entries[path]
            old.live = False
            if priority == EDIT and old.priority == EDIT:
                due = max(due, old.due)
            dependents = dependents or old.dependents
        seq = next(self._seq)
        sort = (priority, -seq if priority == EDIT else seq)
        entry = Entry(sort, path, uri, priority, due, dependents)
        self._entries[path] = entry
        heapq.heappush(self._delayed, (due, seq, entry))

    def discard(self, path: str) -> None:
        entry = self._entries.pop(path, None)
        if entry is not None:
            entry.live = False

    def pop(self, now: float, busy: set[str] | frozenset[str] = frozenset()) -> Entry | None:
        """The best entry that is due and whose file is not in `busy` (being checked: it
        stays queued and is checked again afterwards), or None."""
        self._promote(now)
        skipped: list[Entry] = []
        found = None
        while self._ready:
            entry = heapq.heappop(self._ready)
            if not entry.live:
                continue
            if entry.path in busy:
                skipped.append(entry)
                continue
            found = entry
            break
        for entry in skipped:
            heapq.heappush(self._ready, entry)
        if found is not None:
            found.live = False
            del self._entries[found.path]
        return found

    def next_due(self, now: float) -> float | None:
        """When the earliest entry not yet due at `now` becomes due (None if none waits:
        entries already due wait for a free slot, not for a time)."""
        self._promote(now)
        while self._delayed and not self._delayed[0][2].live:
            heapq.heappop(self._delayed)
        return self._delayed[0][0] if self._delayed else None

    def _promote(self, now: float) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            _, _, entry = heapq.heappop(self._delayed)
            if entry.live:
                heapq.heappush(self._ready, entry)


class CheckRunner:
    """Takes entries off a `CheckQueue` and runs `handler(entry)` for each, at most `slots`
    at once; a file is never checked twice at the same time (edited while its check runs,
    it is checked again afterwards)."""

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.queue = CheckQueue()
        self.running: set[str] = set()
        self.handler: Callable[[Entry], Awaitable[None]] | None = None
        self.idle: Callable[[], None] | None = None
        """Called when the queue has drained and nothing runs (a pull client's refresh)."""
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._jobs: set[asyncio.Task[None]] = set()
        self._idle_waiters: list[asyncio.Future[None]] = []

    def __len__(self) -> int:
        return len(self.queue) + len(self.running)

    def add(self, path: str, uri: str, priority: int, delay: float = 0.0,
            dependents: bool = True) -> None:
        loop = asyncio.get_running_loop()
        self.queue.add(path, uri, priority, loop.time() + delay, dependents)
        if self._task is None or self._task.done():
            self._wake = asyncio.Event()
            self._task = loop.create_task(self._run())
        assert self._wake is not None
        self._wake.set()

    def discard(self, path: str) -> None:
        self.queue.discard(path)

    async def wait_idle(self) -> None:
        """Return once nothing is queued or running (at once when nothing is)."""
        while len(self):
            waiter = asyncio.get_running_loop().create_future()
            self._idle_waiters.append(waiter)
            await waiter

    def stop(self) -> None:
        for task in [self._task, *self._jobs]:
            if task is not None:
                task.cancel()

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._wake is not None and self.handler is not None
        while True:
            while len(self.running) < self.slots:
                entry = self.queue.pop(loop.time(), self.running)
                if entry is None:
                    break
                self.running.add(entry.path)
                job = loop.create_task(self._job(entry))
                self._jobs.add(job)
                job.add_done_callback(self._jobs.discard)
            if not self.running and not self.queue:
                if self.idle is not None:
                    self.idle()
                waiters, self._idle_waiters = self._idle_waiters, []
                for waiter in waiters:
                    if not waiter.done():
                        waiter.set_result(None)
            due = self.queue.next_due(loop.time())
            self._wake.clear()
            timeout = None if due is None else max(0.0, due - loop.time())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)

    async def _job(self, entry: Entry) -> None:
        assert self.handler is not None and self._wake is not None
        try:
            await self.handler(entry)
        finally:
            self.running.discard(entry.path)
            self._wake.set()

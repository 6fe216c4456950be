"""Locks one repository's runs share: the user's branch, and git's worktree admin files.

Every workflow of a repository — in this process or another, started from a terminal or
the editor — changes the user's working tree only while it holds the repository's
integration lock, and adds or prunes worktrees only while it holds the worktree lock. Both
are `flock`s on files in the clone's common git directory (so the linked worktrees of one
clone share them), released by the kernel when their holder dies: a killed run never
leaves a lock behind. The integration lock's file names its holder (workflow, phase, pid),
so a run that waits can say for whom.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from ..runs import confine

INTEGRATION_LOCK = "baton-integrate.lock"
"""Held while a run changes the user's branch or working tree (merges, the clean check)."""
WORKTREE_LOCK = "baton-worktrees.lock"
"""Held while a run adds, prunes or deletes worktrees and their branches."""
POLL = 0.1
"""Seconds between two tries of a held lock (flock has no timeout of its own)."""


class LockTimeout(Exception):
    """The lock stayed held for longer than the caller would wait."""


def holder(common_dir: Path, name: str = INTEGRATION_LOCK) -> dict[str, Any] | None:
    """Who holds (or last held) the lock, as its file says; None when it says nothing."""
    try:
        fd = confine.open_lock(common_dir, name, os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.pread(fd, 4096, 0)
    except OSError:
        return None
    finally:
        os.close(fd)
    with contextlib.suppress(ValueError):
        found = json.loads(raw.decode("utf-8", "replace") or "null")
        if isinstance(found, dict):
            return found
    return None


class RepoLock:
    """One flock on a file of the common git directory."""

    def __init__(self, common_dir: Path, name: str) -> None:
        self.common_dir = common_dir
        self.name = name
        self._fd: int | None = None
        self._owner: dict[str, Any] = {}
        self.previous: dict[str, Any] | None = None
        """What the lock's file said when it was taken: a holder that released it left it
        empty, so anything here is a holder that died holding it (and its last intent)."""

    def try_acquire(self, owner: dict[str, Any] | None = None) -> bool:
        """Take the lock if it is free (writing `owner` into its file); False if held."""
        fd = confine.open_lock(self.common_dir, self.name)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        self.previous = None
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(os.pread(fd, 65536, 0).decode("utf-8", "replace") or "null")
            self.previous = found if isinstance(found, dict) else None
        if owner is not None:
            self._owner = {**owner, "pid": os.getpid(), "since": time.time()}
            self._write(self._owner)
        return True

    def note(self, intent: dict[str, Any] | None) -> None:
        """Record what the holder is about to do (or, with None, that it is done), durably:
        if it dies in the middle, the next holder finds the intent and reconciles it."""
        if self._fd is not None:
            self._write({**self._owner, "intent": intent})
            with contextlib.suppress(OSError):
                os.fsync(self._fd)

    def _write(self, content: dict[str, Any]) -> None:
        assert self._fd is not None
        payload = json.dumps(content).encode()
        with contextlib.suppress(OSError):  # a courtesy to waiters and to the next holder
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, payload, 0)

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing the last descriptor releases the flock

    @contextlib.contextmanager
    def held(self, timeout: float, owner: dict[str, Any] | None = None,
             on_wait: Callable[[dict[str, Any] | None], None] | None = None
             ) -> Iterator[None]:
        """Block (a thread, not the event loop) until the lock is ours, at most `timeout`
        seconds, calling `on_wait(holder)` once if it has to wait; for short git work."""
        deadline = time.monotonic() + timeout
        told = on_wait is None
        while not self.try_acquire(owner):
            if not told and on_wait is not None:
                on_wait(holder(self.common_dir, self.name))
                told = True
            if time.monotonic() > deadline:
                raise LockTimeout(f"{self.common_dir / self.name} stayed locked for "
                                  f"{timeout:.0f} s")
            time.sleep(POLL)
        try:
            yield
        finally:
            self.release()

    @contextlib.asynccontextmanager
    async def waiting(self, owner: dict[str, Any],
                      on_wait: Callable[[dict[str, Any] | None], None],
                      cancelled: Callable[[], None]) -> AsyncIterator[None]:
        """Wait on the event loop until the lock is ours: `on_wait(holder)` once when it is
        held by someone else, `cancelled()` (which raises) checked between tries."""
        told = False
        while not self.try_acquire(owner):
            cancelled()
            if not told:
                on_wait(holder(self.common_dir, self.name))
                told = True
            await asyncio.sleep(POLL)
        try:
            yield
        finally:
            self.release()

"""A check shared with forked copies of this process, each taking files as it frees up.

A spawned pool worker starts an interpreter and imports Baton again before it checks
anything, which only pays on trees of hundreds of files. A forked copy starts with what the
parent already holds (every module imported, the workspace's listing), so on a machine with
a free core a tree of a few dozen files is checked sooner by two processes than by one.

Each process is given a run of files of the same kinds (`segments`), so the rule modules
and the cross-file facts a kind needs are loaded in as few processes as possible, and takes
them one at a time from a pipe of file numbers; when its own run is done it takes from the
others' (a process on a busy core, or given the costlier files, is helped instead of
waited for). The parent checks too, then collects from each copy its findings, the
result-cache entries it stored, the paths it looked at and what it wrote to stderr, in copy
order. Findings are sorted by the caller, so they never depend on which process checked
which file; a copy that fails in any way (killed, crashed, cut short) has the files it took
checked again by the parent.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from ..lazylog import LazyLogger
from ..model.base import Finding
from ..paths import note_looks, recording_looks
from .cache import ResultCache

log = LazyLogger(__name__)

_Item = TypeVar("_Item")
Check = Callable[[Sequence[_Item]], list[Finding]]

FORK_MIN_FILES = 32
"""Below this many files a forked copy saves little or nothing (BENCHMARKS.md)."""

MAX_COPIES = 8

_NUMBER = 4
"""Bytes per file number in a pipe: reads of this size from a pipe filled before any
reader started never split a number."""


def usable_cores() -> int:
    """Cores this process may run on: its affinity mask where the OS has one (a container
    limited to two cores of a large host counts two)."""
    affinity = getattr(os, "sched_getaffinity", None)
    if affinity is not None:
        try:
            return max(1, len(affinity(0)))
        except OSError:
            pass
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether copies may be forked here: Linux or another POSIX system but macOS (whose
    system libraries are not safe to use in a forked child), no other thread running (a
    fork copies only the calling thread, so a lock another thread held would stay held in
    the copy), and `sys.stderr` writes to a file descriptor (a copy's stderr is collected
    through it; a host that holds `sys.stderr` in memory gets a check in one process)."""
    if not hasattr(os, "fork") or sys.platform == "darwin" or threading.active_count() != 1:
        return False
    return _stderr_fd() is not None


def _stderr_fd() -> int | None:
    try:
        return sys.stderr.fileno() if sys.stderr is not None else None
    except (AttributeError, OSError, ValueError):
        return None


def busy_cores() -> int:
    """How many cores other processes keep busy right now: Linux's count of runnable tasks
    (`/proc/loadavg`, less this process), else the one-minute load average."""
    try:
        with open("/proc/loadavg", "rb") as loadavg:
            return max(0, int(loadavg.read().split()[3].split(b"/")[0]) - 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        return round(os.getloadavg()[0])
    except (OSError, AttributeError):
        return 0


def copies_for(files: int, jobs: int | None) -> int:
    """How many processes check `files` files: `jobs` when given, else, from
    `FORK_MIN_FILES` files on, one per usable core that no other process is using. On a
    machine whose cores are all busy a copy would only take turns with its parent, and
    two processes then cost more than one (each must load its own rules), as `make -l`
    knows."""
    if jobs is not None:
        return max(1, min(jobs, files))
    if files < FORK_MIN_FILES:
        return 1
    idle = (os.cpu_count() or 1) - busy_cores()
    return max(1, min(usable_cores(), idle, MAX_COPIES, files))


class _Queues:
    """One pipe of file numbers per process, filled before the fork. Where a run does not
    fit in a pipe (Linux's hold 64 KiB: 16,384 files), the runs are not shared: each
    process checks its own."""

    def __init__(self, segments: Sequence[Sequence[int]]) -> None:
        self.fds: list[int] = []
        self.segments = segments
        self.shared = True
        try:
            for segment in segments:
                read_end, write_end = os.pipe()
                self.fds.append(read_end)
                try:
                    os.set_blocking(write_end, False)  # a full pipe must not hang the check
                    _write_all(write_end, b"".join(n.to_bytes(_NUMBER, "little")
                                                   for n in segment))
                finally:
                    os.close(write_end)
        except BlockingIOError:
            self.close()
            self.shared = False
        except OSError:
            self.close()
            raise

    def taken_by(self, me: int) -> Iterator[int]:
        """File numbers for process `me`: its own run first, then what is left of the
        others', each taken by exactly one process."""
        if not self.shared:
            yield from self.segments[me]
            return
        count = len(self.fds)
        for k in range(count):
            fd = self.fds[(me + k) % count]
            while True:
                raw = os.read(fd, _NUMBER)
                if len(raw) < _NUMBER:
                    break
                yield int.from_bytes(raw, "little")

    def close(self) -> None:
        for fd in self.fds:
            os.close(fd)
        self.fds = []


def check_forked(items: Sequence[_Item], segments: Sequence[Sequence[int]],
                 check: Check[_Item], cache: ResultCache | None,
                 own: Callable[[], Callable[[], list[Finding]]] | None = None
                 ) -> list[Finding]:
    """`check` every item of `items`, in as many processes as `segments` (runs of item
    numbers, one per process: this one first, a forked copy for each other).

    `own` is work for this process alone: called once the copies are forked (so it may
    start threads), and what it returns is called when no run has files left; its findings
    are added. A copy's cache entries are absorbed into `cache` (this process alone writes
    the cache file), the paths it looked at join the current `recording_looks`, and its
    stderr is written after this process's own check, copy by copy."""
    queues = _Queues(segments)
    children: list[tuple[int, int]] = []
    sys.stderr.flush()  # or a copy would write out this process's pending text again
    try:
        for me in range(1, len(segments)):
            try:
                children.append(_fork(me, items, queues, check, cache))
            except OSError as exc:  # no room for another process: the others take its run
                log.info("cannot fork a copy for the check (%s): going on without it", exc)
                break
        finish = own() if own is not None else None
        found: list[Finding] = []
        done: set[int] = set()
        for n in queues.taken_by(0):
            done.add(n)
            found.extend(check([items[n]]))
        if finish is not None:
            found.extend(finish())
        while children:
            pid, fd = children.pop(0)
            received = _collect(pid, fd, cache)
            if received is not None:
                found.extend(received[0])
                done.update(received[1])
        missed = [n for n in range(len(items)) if n not in done]
        if missed:
            log.info("a forked check ended early: checking its %d files here", len(missed))
            found.extend(check([items[n] for n in missed]))
    finally:
        queues.close()
        for pid, fd in children:  # interrupted: the copies go with the check
            _stop(pid, fd)
    return found


def _fork(me: int, items: Sequence[_Item], queues: _Queues, check: Check[_Item],
          cache: ResultCache | None) -> tuple[int, int]:
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        raise
    if pid == 0:  # the copy: never returns
        os.close(read_end)
        _run_copy(me, write_end, items, queues, check, cache)
    os.close(write_end)
    return pid, read_end


def _run_copy(me: int, fd: int, items: Sequence[_Item], queues: _Queues,
              check: Check[_Item], cache: ResultCache | None) -> None:
    """Check what `queues` gives process `me`, send (findings, file numbers, cache entries,
    looks, stderr) down `fd`, and leave through `os._exit`: no exit handler, buffer flush
    or test-runner teardown of the parent's runs twice. Any failure exits 1 and the parent
    checks this copy's files again."""
    status = 1
    try:
        import pickle  # a copy only

        err = _scratch_file()
        for target in {2, _stderr_fd() or 2}:
            os.dup2(err, target)
        found: list[Finding] = []
        done: list[int] = []
        parent = os.getppid()
        with recording_looks() as looks:
            for n in queues.taken_by(me):
                if os.getppid() != parent:  # the check was killed: nobody waits for this
                    return
                done.append(n)
                found.extend(check([items[n]]))
        exported = cache.export() if cache is not None else None
        sys.stderr.flush()
        os.lseek(err, 0, os.SEEK_SET)
        written = _read_all(err)
        _write_all(fd, pickle.dumps((found, done, exported, looks, written),
                                    pickle.HIGHEST_PROTOCOL))
        status = 0
    except BaseException:  # anything at all: the parent checks again
        pass
    finally:
        shellcheck = sys.modules.get("baton_lsp.rules.shellcheck_run")
        if shellcheck is not None:
            shellcheck.kill_running()
        os._exit(status)


def _scratch_file() -> int:
    """A file descriptor open on an anonymous file: memory on Linux, else an unlinked
    temporary file."""
    memfd = getattr(os, "memfd_create", None)
    if memfd is not None:
        with contextlib.suppress(OSError):
            return int(memfd("baton-check-stderr"))
    import tempfile  # where there is no memfd

    handle, name = tempfile.mkstemp(prefix="baton-check-")
    os.unlink(name)
    return handle


def _collect(pid: int, fd: int, cache: ResultCache | None
             ) -> tuple[list[Finding], list[int]] | None:
    """A copy's findings and file numbers, its cache entries absorbed, its looks noted and
    its stderr written; None when it failed."""
    import pickle  # a forked check only

    try:
        payload = _read_all(fd)
    finally:
        os.close(fd)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        return None
    try:
        found, done, exported, looks, written = pickle.loads(payload)
    except Exception:  # a short or garbled payload: checked again here
        return None
    if cache is not None and exported is not None:
        cache.absorb(exported)
    note_looks(looks)
    if written:
        sys.stderr.flush()
        _write_all(_stderr_fd() or 2, written)
    return found, done


def _read_all(fd: int) -> bytes:
    parts: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _stop(pid: int, fd: int) -> None:
    import signal  # an interrupted check only

    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    os.close(fd)


def segments_of(costs: Sequence[int], ranks: Sequence[int], count: int) -> list[list[int]]:
    """Item numbers in `count` runs of about equal total cost, items of the same rank (a
    group of file kinds) kept together: numbers are ordered by rank, then cut where the
    running cost crosses each `count`-th of the total, so only the groups at a cut are
    split. Within a run the costliest come first, so a run ends on small files and no
    process is left alone with a big one. The first run (this process's) has its groups
    in reverse: a copy that runs out takes from its front, which is then the group that
    copy was already checking."""
    order = sorted(range(len(costs)), key=lambda n: (ranks[n], n))
    total = max(sum(costs), 1)
    runs: list[list[int]] = [[] for _ in range(count)]
    spent = 0
    for n in order:
        runs[min(count - 1, (spent + costs[n] // 2) * count // total)].append(n)
        spent += costs[n]
    for k, run in enumerate(runs):
        run.sort(key=lambda n: (-ranks[n] if k == 0 else ranks[n], -costs[n], n))
    return runs

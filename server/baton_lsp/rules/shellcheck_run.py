"""Running ShellCheck on bash blocks: bounded, cached by content, several blocks per process,
started ahead of need.

Separate from the BTN330 rule (what to check, how findings map back to markdown): this is
how ShellCheck is run. A block is checked alone (`--shell=bash`, no rc file); several blocks
go to one process as in-memory files (`memfd_create`, read through `/dev/fd/N`), which
saves a process per block, and the process writes to an in-memory file too, waited for
through its pidfd: nothing on the way needs the GIL, so the threads waiting for ShellCheck
do not slow the thread that parses. Where that is not available (not Linux, no `/dev/fd`)
each block is piped to its own process. `submit` starts blocks in the background (the CLI
starts every command's blocks before it checks anything else); `run_many` waits for them.

Every limit counts work, not wall time, so that which blocks are checked is a function of
the input, the same on an idle and on a loaded machine: each process may use `CPU_SECONDS`
of CPU time (`RLIMIT_CPU`, set in the child before it becomes ShellCheck), and the rule
hands at most `MAX_FILE_BLOCKS` blocks / `MAX_FILE_CHARS` characters of one file to
ShellCheck. `WALL_SECONDS` is only a safety net for a stopped or starved process.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import hashlib
import json
import logging
import os
import queue
import re
import select
import signal
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from .cache import ShellcheckResults

log = logging.getLogger(__name__)

CPU_SECONDS = 5
"""CPU time one ShellCheck process may use (whole seconds: `RLIMIT_CPU`). A real block takes
10-50 ms and a batch of `BATCH_CHARS` about a second; CPU time, unlike the wall-clock
budgets this replaced (3 s a run, 10 s a file), does not grow when other processes keep the
machine busy, so the same blocks are checked on any machine."""
WALL_SECONDS = 60.0
"""Safety net for one process in wall time (a process stopped, or starved for a minute):
far above what `CPU_SECONDS` allows on any plausible load, and reported as `OVER_LIMIT`
too, so that hitting it never tells a different story."""
OVER_LIMIT = f"ShellCheck did not finish within its limit of {CPU_SECONDS} s of CPU time"
"""Why a block was not checked when its own process ran out of its limit."""
MAX_FILE_BLOCKS = 64
"""Most distinct script blocks of one file handed to ShellCheck (in document order); the
largest real command has 14."""
MAX_FILE_CHARS = 256_000
"""Most characters of script of one file handed to ShellCheck (the largest real: 81,000)."""
FILE_LIMIT = (f"ShellCheck checks the first {MAX_FILE_BLOCKS} script blocks and "
              f"{MAX_FILE_CHARS:,} characters of script of a file; this block is past them")
MAX_BLOCK_CHARS = 100_000
MAX_NESTING = 16
"""Unclosed `(`/`[` deeper than this are not handed to ShellCheck: its parser backtracks
on them (ten `$((` took 13 s, 400 `(` 2.6 s, a 10,000-character `[[[…` line over 20 s),
while real scripts stay under 8."""
CACHE_SIZE = 1024
BATCH_CHARS = 64_000
"""Most script text handed to one process: a batch that size takes about a second."""

Result = list[dict[str, Any]] | str
"""ShellCheck's json1 comments for a block, or why the block was not checked."""


@dataclass(frozen=True)
class Options:
    """How blocks are run: part of every result's key."""

    binary: str
    exclude: tuple[str, ...] = ()
    graph: bool = True
    """ShellCheck's control-flow analysis (`--extended-analysis`); see `shellcheck_cfg`."""

    def argv(self) -> list[str]:
        argv = [self.binary, "--norc", "--format=json1", "--shell=bash"]
        if self.exclude:
            argv.append("--exclude=" + ",".join(self.exclude))
        if not self.graph:
            argv.append("--extended-analysis=false")
        return argv

    def key(self, script: str) -> str:
        options = ",".join(self.exclude) + ("" if self.graph else " --extended-analysis=false")
        return hashlib.sha256("\0".join([self.binary, options, script])
                              .encode("utf-8", "surrogatepass")).hexdigest()


_cache: OrderedDict[str, Result] = OrderedDict()
_cache_lock = threading.Lock()
PROCESSES = os.cpu_count() or 2
"""How many processes one file's blocks are spread over."""
_slots = threading.BoundedSemaphore(PROCESSES)
"""ShellCheck processes running at once, over every thread checking commands: one per core
keeps the machine busy without a queue of processes fighting over it."""
_memfd_failed = False
"""Set when ShellCheck could not read its `/dev/fd` inputs here: one process per block."""
_inflight: dict[str, Future[Result]] = {}
"""Blocks being checked now, by result key: a second request waits for the first run."""
_running: set[subprocess.Popen[bytes]] = set()
"""ShellCheck processes running now, killed when this process exits."""
_running_lock = threading.Lock()


def forget() -> None:
    """Forget every result held in memory (tests, a configuration change)."""
    with _cache_lock:
        _cache.clear()


_NESTING_CHARS = re.compile(r"[()\[\]'\\#\n]")


def nesting(script: str) -> int:
    """Deepest run of unclosed `(` and `[` outside single quotes and comments."""
    if script.count("(") + script.count("[") <= MAX_NESTING:
        return 0  # cannot pass the limit: not worth the walk
    depth = deepest = 0
    skip_to = 0
    for m in _NESTING_CHARS.finditer(script):
        i = m.start()
        if i < skip_to:
            continue
        ch = script[i]
        if ch == "'":
            end = script.find("'", i + 1)
            skip_to = len(script) if end < 0 else end + 1
        elif ch == "\\":
            skip_to = i + 2
        elif ch == "#":
            if i == 0 or script[i - 1] in " \t\n;":
                end = script.find("\n", i)
                skip_to = len(script) if end < 0 else end
        elif ch in "([":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in ")]" and depth:
            depth -= 1
    return deepest


def file_limits(scripts: Sequence[str]) -> set[str]:
    """The distinct `scripts` (a file's, in document order) past `MAX_FILE_BLOCKS` or
    `MAX_FILE_CHARS`: counted from the top, so a file always has the same ones."""
    seen: set[str] = set()
    over: set[str] = set()
    chars = 0
    for script in scripts:
        if script in seen or script in over:
            continue
        chars += len(script)
        if len(seen) >= MAX_FILE_BLOCKS or chars > MAX_FILE_CHARS:
            over.add(script)
        else:
            seen.add(script)
    return over


def input_problem(script: str) -> str | None:
    """Why `script` is not handed to ShellCheck at all (its limits), or None."""
    if len(script) > MAX_BLOCK_CHARS:
        return (f"it is {len(script):,} characters, over the {MAX_BLOCK_CHARS:,}-character "
                "limit for ShellCheck input")
    depth = nesting(script)
    if depth > MAX_NESTING:
        return (f"it nests brackets and parentheses {depth:,} deep (the limit is "
                f"{MAX_NESTING}: deeper unclosed nesting makes ShellCheck's parser run for "
                "minutes)")
    return None


def _remember(key: str, result: Result) -> Result:
    with _cache_lock:
        _cache[key] = result
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return result


def _known(key: str, store: ShellcheckResults | None) -> Result | None:
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    if store is not None:
        found = store.get(key)
        if found is not None:
            with _cache_lock:
                _cache[key] = found
            return found
    return None


def _comments(outcome: Outcome) -> list[dict[str, Any]] | None:
    """json1's comments, or None (logged) when ShellCheck failed or printed something else."""
    stdout = outcome.stdout.decode("utf-8", "replace")
    try:
        comments = json.loads(stdout or "{}").get("comments", [])
        if outcome.returncode in (0, 1) and isinstance(comments, list):
            return comments
    except (ValueError, AttributeError):
        pass
    log.warning("unexpected shellcheck output (exit %s): %s", outcome.returncode,
                (outcome.stderr.decode("utf-8", "replace") or stdout)[:200])
    return None


@dataclass(frozen=True)
class Outcome:
    """What a finished ShellCheck process gave back."""

    returncode: int
    stdout: bytes
    stderr: bytes

    @property
    def over_limit(self) -> bool:
        """Killed at its CPU-time limit (SIGXCPU at the soft limit, SIGKILL at the hard)."""
        return self.returncode in (-signal.SIGXCPU, -signal.SIGKILL)


class OverLimit(Exception):
    """A ShellCheck process ran out of `CPU_SECONDS`, or of `WALL_SECONDS` (killed)."""


_LIMIT_SCRIPT = 'ulimit -t "$1" 2>/dev/null; shift; exec "$@"'
"""Sets the CPU-time limit in the child itself, then becomes ShellCheck (same pid): no
`preexec_fn` (unsafe with threads), and no window, as a `prlimit` from the parent after
the spawn would leave, in which the process runs unlimited. A shell without `ulimit -t`
runs ShellCheck unlimited (the wall-clock net still applies)."""


def _limited(argv: list[str]) -> list[str]:
    """`argv` run under `CPU_SECONDS` of CPU time where there is a POSIX shell."""
    if os.name != "posix" or not os.path.exists("/bin/sh"):
        return argv
    return ["/bin/sh", "-c", _LIMIT_SCRIPT, "baton-shellcheck", str(CPU_SECONDS), *argv]


def _execute(argv: list[str], stdin: bytes | None, pass_fds: Sequence[int],
             timeout: float) -> Outcome:
    """Run ShellCheck once under its CPU-time limit: `stdin` piped, or (None) its input in
    `pass_fds` and its output into in-memory files. Raises OverLimit (out of CPU time, or
    of `timeout` wall seconds: the process is killed) and OSError."""
    limited = _limited(argv)
    if stdin is not None:
        with subprocess.Popen(limited, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as piped, _tracked(piped):
            try:
                stdout, stderr = piped.communicate(stdin, timeout=timeout)
            except subprocess.TimeoutExpired:
                piped.kill()
                piped.communicate()
                raise OverLimit(f"killed after {timeout:.3g} s of wall time") from None
        outcome = Outcome(piped.returncode, stdout, stderr)
    else:
        outcome = _execute_memfd(limited, pass_fds, timeout)
    if outcome.over_limit:
        raise OverLimit(f"killed by signal {-outcome.returncode} (CPU time)")
    return outcome


def _execute_memfd(argv: list[str], pass_fds: Sequence[int], timeout: float) -> Outcome:
    out = os.memfd_create("baton-shellcheck-out", os.MFD_CLOEXEC)
    err = os.memfd_create("baton-shellcheck-err", os.MFD_CLOEXEC)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                pass_fds=tuple(pass_fds))
        with _tracked(proc):
            if not _exited(proc, timeout):
                proc.kill()
                proc.wait()
                raise OverLimit(f"killed after {timeout:.3g} s of wall time")
        return Outcome(proc.returncode if proc.returncode is not None else -1,
                       _contents(out), _contents(err))
    finally:
        os.close(out)
        os.close(err)


@contextlib.contextmanager
def _tracked(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    """`proc` is in `_running` (killed at exit) while it is waited for."""
    with _running_lock:
        _running.add(proc)
    try:
        yield
    finally:
        with _running_lock:
            _running.discard(proc)


def _exited(proc: subprocess.Popen[bytes], timeout: float) -> bool:
    """Wait for `proc` up to `timeout` seconds in `poll` on its pidfd (no GIL held, woken
    at the exit); `Popen.wait`'s backoff polling where there are no pidfds."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:
            proc.wait(timeout)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        if not poller.poll(max(0.0, timeout) * 1000):
            return False
    finally:
        os.close(pidfd)
    proc.wait()
    return True


def _contents(fd: int) -> bytes:
    return os.pread(fd, os.fstat(fd).st_size, 0)


def _alone(options: Options, script: str, key: str, store: ShellcheckResults | None) -> Result:
    """One block piped to its own ShellCheck (`key` its result's key), not looked up: its
    comments, or why it was not checked (`OVER_LIMIT`)."""
    try:
        # Editor text may hold lone surrogates: they reach ShellCheck as `?`, one column.
        with _slots:
            outcome = _execute([*options.argv(), "-"], script.encode("utf-8", "replace"), (),
                               WALL_SECONDS)
    except OverLimit as exc:
        log.info("shellcheck did not finish a %d-line block: %s", script.count("\n") + 1, exc)
        return _remember(key, OVER_LIMIT)
    except OSError as exc:
        log.warning("cannot run shellcheck (%s): %s", options.binary, exc)
        return []
    comments = _comments(outcome)
    if comments is None:
        return []
    if store is not None:
        store.put(key, comments)
    return _remember(key, comments)


def _run_batch(options: Options, scripts: Sequence[str]) -> list[list[dict[str, Any]]] | None:
    """Several blocks in one ShellCheck process, each an in-memory file; None when that
    did not work (no memfd, ShellCheck failed). Raises OverLimit: the caller runs them
    alone, each under its own limit, so a block's result never depends on its batch."""
    fds: list[int] = []
    try:
        for script in scripts:
            fd = os.memfd_create("baton-block", os.MFD_CLOEXEC)
            fds.append(fd)
            data = memoryview(script.encode("utf-8", "replace"))
            while data:
                data = data[os.write(fd, data):]
        paths = [f"/dev/fd/{fd}" for fd in fds]
        with _slots:
            outcome = _execute([*options.argv(), *paths], None, fds, WALL_SECONDS)
    except OSError as exc:
        log.info("cannot hand shellcheck several blocks at once (%s); one by one", exc)
        _give_up_memfd()
        return None
    finally:
        for fd in fds:
            os.close(fd)
    comments = _comments(outcome)
    if comments is None:
        if b"openBinaryFile" in outcome.stderr:  # it could not read the in-memory files
            _give_up_memfd()
        return None
    by_path: dict[str, list[dict[str, Any]]] = {path: [] for path in paths}
    for comment in comments:
        if isinstance(comment, dict) and comment.get("file") in by_path:
            by_path[comment["file"]].append(comment)
    return [by_path[path] for path in paths]


def _give_up_memfd() -> None:
    global _memfd_failed
    _memfd_failed = True


def batches(scripts: Sequence[str], count: int) -> list[list[str]]:
    """`scripts` in at most `count` groups (more when a group would pass `BATCH_CHARS`) of
    about equal size, largest first onto the lightest group; the largest group first."""
    total = sum(len(s) for s in scripts)
    count = max(1, min(len(scripts), max(count, -(-total // BATCH_CHARS))))
    groups: list[list[str]] = [[] for _ in range(count)]
    loads = [0] * count
    for script in sorted(scripts, key=len, reverse=True):
        i = loads.index(min(loads))
        groups[i].append(script)
        loads[i] += len(script) + 256
    return sorted((g for g in groups if g), key=lambda g: -sum(map(len, g)))


def _check_group(options: Options, group: list[str], keys: list[str],
                 store: ShellcheckResults | None) -> list[Result]:
    """A group's results: one process, or one per block when that did not work."""
    if hasattr(os, "memfd_create") and not _memfd_failed:
        try:
            found = _run_batch(options, group)
        except OverLimit as exc:
            log.info("shellcheck did not finish %d blocks (%s)", len(group), exc)
            if len(group) == 1:
                return [_remember(keys[0], OVER_LIMIT)]
            found = None  # one by one, each under its own limit
        if found is not None:
            for key, comments in zip(keys, found, strict=True):
                if store is not None:
                    store.put(key, comments)
                _remember(key, comments)
            return list(found)
    return [_alone(options, script, key, store) for script, key in zip(group, keys, strict=True)]


_Job = tuple[Options, list[str], list[str], list[Future[Result]], ShellcheckResults | None]
"""(options, scripts, their result keys, their futures, the persistent store): one batch."""


class Workers:
    """The threads that run ShellCheck batches, and their queue: started on the first
    batch, ended by `close`. Daemon threads: they spend their time blocked on a pidfd or
    on a process slot, and never hold up the interpreter's exit (the processes they wait
    for are killed then, see `kill_running`). A few more than there are processes lets
    the next batch wait for a slot, ready."""

    def __init__(self, threads: int = PROCESSES * 3) -> None:
        self.size = threads
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._closed = False

    def put(self, job: _Job) -> None:
        """Queue `job`, starting the threads first if they are not running yet."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the ShellCheck workers are closed")
            while len(self._threads) < self.size:
                thread = threading.Thread(target=self._work, name="baton-shellcheck",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)
        self._jobs.put(job)

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            _run_job(*job)

    def threads(self) -> list[threading.Thread]:
        with self._lock:
            return list(self._threads)

    def close(self, timeout: float | None = None) -> None:
        """Refuse new jobs; each thread ends after the jobs queued before (their futures
        are all settled); wait up to `timeout` seconds for each."""
        with self._lock:
            self._closed = True
            threads = list(self._threads)
        for _ in threads:
            self._jobs.put(None)
        for thread in threads:
            thread.join(timeout)


@functools.cache
def _workers() -> Workers:
    """This process's workers, made on the first batch (not at import: a check that
    runs no ShellCheck starts no thread)."""
    return Workers()


@atexit.register
def kill_running() -> None:
    """At exit (the editor closed the server, Ctrl-C on `baton check`), no ShellCheck
    process is left to finish a batch nobody will read. Public: a process that ends with
    `os._exit` (the language server) calls it itself."""
    with _running_lock:
        running = list(_running)
    for proc in running:
        with contextlib.suppress(OSError):
            proc.kill()


def submit(blocks: Sequence[tuple[Options, str]], store: ShellcheckResults | None,
           spread: int | None = None, workers: Workers | None = None
           ) -> dict[tuple[Options, str], Future[Result]]:
    """Start checking each distinct (options, script) in the background: results known in
    memory or `store` are ready at once, a block already running is shared, the rest go in
    about `spread` processes (one per core by default), largest first (a batch over its
    limit is run again one block per process), on `workers` (this process's own by
    default)."""
    futures: dict[tuple[Options, str], Future[Result]] = {}
    keys = {block: block[0].key(block[1]) for block in dict.fromkeys(blocks)}
    todo: dict[Options, list[str]] = {}
    with _cache_lock:
        for (options, script), key in keys.items():
            running = _inflight.get(key)
            if running is None:
                running = _inflight[key] = Future()
                todo.setdefault(options, []).append(script)
            futures[(options, script)] = running
    jobs: list[tuple[Options, list[str]]] = []
    for options, scripts in todo.items():
        waiting: list[str] = []
        for script in scripts:
            key = keys[(options, script)]
            found = _known(key, store)
            if found is None:
                problem = input_problem(script)
                if problem is None:
                    waiting.append(script)
                    continue
                found = _remember(key, problem)
            _settle(key, futures[(options, script)], found)
        jobs += [(options, group) for group in batches(waiting, spread or PROCESSES)]
    if jobs:
        pool = workers or _workers()
        for options, group in sorted(jobs, key=lambda job: -sum(map(len, job[1]))):
            pool.put((options, group, [keys[(options, s)] for s in group],
                      [futures[(options, s)] for s in group], store))
    return futures


def _settle(key: str, future: Future[Result], result: Result) -> None:
    with _cache_lock:
        _inflight.pop(key, None)
    future.set_result(result)


def _run_job(options: Options, group: list[str], keys: list[str],
             futures: list[Future[Result]], store: ShellcheckResults | None) -> None:
    try:
        results = _check_group(options, group, keys, store)
    except BaseException as exc:  # never leave a waiter hanging
        log.exception("shellcheck run failed")
        results = [f"ShellCheck could not be run: {type(exc).__name__}: {exc}"] * len(group)
    for key, future, result in zip(keys, futures, results, strict=True):
        _settle(key, future, result)


def run_many(blocks: Sequence[tuple[Options, str]], store: ShellcheckResults | None
             ) -> dict[tuple[Options, str], Result]:
    """Each distinct (options, script)'s ShellCheck comments, or why it was not checked (over
    a limit), cached by content and options in memory and in `store` (the
    persistent cache of this ShellCheck version): checked in about as many processes as
    there are cores (see `submit`), or taken over from a run already started."""
    futures = submit(blocks, store)
    return {block: future.result() for block, future in futures.items()}

"""Supervised agent subprocesses: stream stdout by line, keep a stderr tail, enforce limits.

An agent CLI is a tree of processes (node, shells, tool commands, MCP servers), so every
agent runs in its own session and process group and is always stopped as a group: SIGTERM,
`grace` seconds, then SIGKILL. Offline agents do not fail on their own (codex retries its
websocket forever), so the overall timeout, the stall watchdog and the cancel event are the
only things that end such a run. Nothing here knows about agents' output formats; runners
decode the lines.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import signal as _signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..terminal import terminal_safe

logger = logging.getLogger(__name__)

MAX_LINE = 1 << 20
"""Longest stdout line passed on; the rest of a longer line is dropped (and logged)."""
STDERR_TAIL = 4096
"""Bytes of stderr kept for classification and error messages."""
DRAIN_IDLE = 0.5
"""After the main child exits, the pipes may stay open only while bytes keep arriving: a
grandchild that holds them silently for this long is killed with its group."""
_POLL = 0.05
_READ_CHUNK = 1 << 16
_REAP_TIMEOUT = 5.0


class AgentLaunchError(Exception):
    """The agent could not be started at all (missing or non-executable program, bad cwd)."""


@dataclass
class ProcessOutcome:
    """How one agent process ended. Exactly one of timed_out/stalled/cancelled/stopped is set
    when we stopped it ourselves (then `exit_code` is None); `signal` reports a signal death
    whoever sent it. `stopped`: the caller's `stop` event (a budget crossed mid-step, or a
    line saying the agent cannot succeed)."""

    exit_code: int | None
    timed_out: bool
    stalled: bool
    cancelled: bool
    duration: float
    stderr_tail: str
    signal: int | None
    stopped: bool = False

    @property
    def killed_by_us(self) -> bool:
        return self.timed_out or self.stalled or self.cancelled or self.stopped


class _Activity:
    """Monotonic time of the last byte on stdout or stderr, shared by both pumps."""

    def __init__(self) -> None:
        self.last = time.monotonic()

    def touch(self) -> None:
        self.last = time.monotonic()


class _LineSplitter:
    """Bytes in, decoded lines out; a line longer than MAX_LINE is cut, never buffered whole
    (a runaway agent printing one huge JSON blob must not exhaust memory)."""

    def __init__(self, emit: Callable[[str], None], max_line: int = MAX_LINE) -> None:
        self._emit = emit
        self._max = max_line
        self._buf = bytearray()
        self._dropped = 0

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            if nl < 0:
                self._append(chunk, start, len(chunk))
                return
            self._append(chunk, start, nl)
            self._flush()
            start = nl + 1

    def close(self) -> None:
        """Emit a last line that had no trailing newline."""
        if self._buf or self._dropped:
            self._flush()

    def _append(self, chunk: bytes, start: int, end: int) -> None:
        room = self._max - len(self._buf)
        n = end - start
        if n <= room:
            self._buf += chunk[start:end]
        else:
            if room > 0:
                self._buf += chunk[start:start + room]
            self._dropped += n - max(room, 0)

    def _flush(self) -> None:
        line = bytes(self._buf)
        if line.endswith(b"\r"):
            line = line[:-1]
        if self._dropped:
            logger.warning("agent output line of %d bytes cut to %d bytes",
                           len(self._buf) + self._dropped, self._max)
        self._buf.clear()
        self._dropped = 0
        self._emit(line.decode("utf-8", errors="replace"))


class _Tail:
    """The last `size` bytes of a stream."""

    def __init__(self, size: int = STDERR_TAIL) -> None:
        self._size = size
        self._buf = bytearray()
        self._trimmed = False

    def feed(self, chunk: bytes) -> None:
        self._buf += chunk
        if len(self._buf) > self._size:
            del self._buf[:len(self._buf) - self._size]
            self._trimmed = True

    def text(self) -> str:
        data = bytes(self._buf)
        if self._trimmed:  # do not start in the middle of a UTF-8 sequence
            skip = 0
            while skip < min(3, len(data)) and data[skip] & 0xC0 == 0x80:
                skip += 1
            data = data[skip:]
        return data.decode("utf-8", errors="replace")


async def _pump(stream: asyncio.StreamReader, activity: _Activity,
                sink: Callable[[bytes], None]) -> None:
    # read() in chunks, not readline(): a line over the StreamReader limit would raise and
    # lose data, and partial lines (progress dots) must still count as activity.
    while True:
        chunk = await stream.read(_READ_CHUNK)
        if not chunk:
            return
        activity.touch()
        sink(chunk)


async def _feed_stdin(writer: asyncio.StreamWriter, data: bytes) -> None:
    """Write the prompt and close; an agent that exits without reading it is not an error."""
    try:
        if data:
            writer.write(data)
            await writer.drain()
        writer.close()
        await writer.wait_closed()
    except ConnectionError as exc:  # BrokenPipeError, ConnectionResetError
        logger.debug("agent closed stdin early: %s", exc)
        writer.close()
    except asyncio.CancelledError:
        # The run is over but something (outside the group) holds stdin without reading:
        # close() would wait for the unwritten rest forever, so drop it.
        if writer.transport.get_write_buffer_size():
            writer.transport.abort()
        else:
            writer.close()
        raise


def _live_members(pgid: int) -> list[int] | None:
    """Non-zombie pids in the group, or None when /proc is not available.

    A zombie left behind by a killed process is still a group member for kill(2) until its
    new parent reaps it, and some init processes (this container's included) reap slowly,
    so `killpg(pgid, 0)` alone would report a dead group as alive.
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    out: list[int] = []
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(int(name))
        if _alive(fields) and fields is not None and len(fields) >= 3 and \
                int(fields[2]) == pgid:
            out.append(int(name))
    return out


def group_alive(pgid: int) -> bool:
    """Whether any process (not counting zombies, where /proc can tell) is left in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    members = _live_members(pgid)
    return True if members is None else bool(members)


def _check_pgid(pgid: int) -> None:
    # killpg(0) or killpg(1) would hit our own group or everything we may signal
    if pgid <= 1 or pgid == os.getpgrp():
        raise ValueError(f"refusing to signal process group {pgid}")


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    except PermissionError as exc:
        logger.warning("cannot signal process group %d: %s", pgid, exc)
        return False
    return True


def kill_group(pgid: int, grace: float = 3.0) -> bool:
    """Stop a whole agent process group from any process (`baton cancel` runs in another one
    than `baton run`): SIGTERM, wait up to `grace` seconds, then SIGKILL what is left.

    Returns whether there was anything (other than zombies) to signal.
    """
    _check_pgid(pgid)
    if not group_alive(pgid) or not _signal_group(pgid, _signal.SIGTERM):
        return False
    logger.info("sent SIGTERM to agent process group %d", pgid)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if not group_alive(pgid):
            return True
        time.sleep(_POLL)
    if group_alive(pgid) and _signal_group(pgid, _signal.SIGKILL):
        logger.warning("agent process group %d ignored SIGTERM for %.1fs: sent SIGKILL",
                       pgid, grace)
    return True


async def _wait_exit(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    # Poll returncode instead of awaiting proc.wait(): on Python 3.11 wait() only returns
    # once every pipe is closed, which never happens while a grandchild holds stdout.
    deadline = time.monotonic() + timeout
    while proc.returncode is None:
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


async def _terminate(proc: asyncio.subprocess.Process, pgid: int, grace: float) -> None:
    """SIGTERM the group, give it `grace` seconds to go, then SIGKILL it."""
    _signal_group(pgid, _signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc.returncode is not None and not group_alive(pgid):
            return
        await asyncio.sleep(_POLL)
    if group_alive(pgid):
        logger.warning("agent process group %d still running %.1fs after SIGTERM: sent SIGKILL",
                       pgid, grace)
        _signal_group(pgid, _signal.SIGKILL)
    if not await _wait_exit(proc, _REAP_TIMEOUT):
        logger.error("agent process %d did not exit after SIGKILL", proc.pid)


class _ExitNotifying(asyncio.subprocess.SubprocessStreamProtocol):
    """Sets `exited` the moment the child is reaped. `Process.wait()` also waits for the
    pipes to close (which a grandchild may hold), and polling would notice the exit late."""

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited = asyncio.Event()

    def process_exited(self) -> None:
        super().process_exited()
        self.exited.set()


_GATE = """\
import os, sys
gate, status = int(sys.argv[1]), int(sys.argv[2])
if os.read(gate, 1) != b"1":
    os._exit(125)
os.close(gate)
os.set_inheritable(status, False)
try:
    os.execv(sys.argv[3], sys.argv[4:])
except OSError as exc:
    os.write(status, str(exc.errno).encode())
    os._exit(127)
"""
"""The agent's first program: it waits on a pipe before it `exec`s the agent (same pid, so
the same process group). The engine opens the gate only once the group is recorded in
`run.json` durably; if the engine dies first the pipe reads EOF and the agent never
starts. Exec errors come back on a second pipe that a successful `exec` closes, as
`subprocess` reports its own. `-I -S`: no site, no user environment (~6 ms)."""


class _Gate:
    """The two pipes of one held agent: `open` lets it run (and reports a failed exec),
    `close` without opening makes it exit without running."""

    def __init__(self, gate_w: int, status_r: int, program: str) -> None:
        self._gate_w: int | None = gate_w
        self._status_r: int | None = status_r
        self.program = program

    async def open(self) -> None:
        assert self._gate_w is not None and self._status_r is not None
        os.write(self._gate_w, b"1")
        self.close_gate()
        loop = asyncio.get_running_loop()
        fd, self._status_r = self._status_r, None
        try:
            status = await loop.run_in_executor(None, _read_to_eof, fd)
        finally:
            os.close(fd)
        if status:
            code = int(status) if status.isdigit() else 0
            raise _launch_error(self.program, OSError(code, os.strerror(code), self.program))

    def close_gate(self) -> None:
        if self._gate_w is not None:
            os.close(self._gate_w)
            self._gate_w = None

    def close(self) -> None:
        self.close_gate()
        if self._status_r is not None:
            os.close(self._status_r)
            self._status_r = None


def _read_to_eof(fd: int) -> bytes:
    out = b""
    while chunk := os.read(fd, 64):
        out += chunk
    return out


def _resolve(program: str, env: Mapping[str, str]) -> str:
    """The file `exec` would run for `program`, looked up in the agent's own PATH as
    `subprocess` does (a path with a slash is used as it is, relative to the cwd)."""
    if os.sep in program:
        return program
    found = shutil.which(program, path=os.pathsep.join(os.get_exec_path(dict(env))))
    if found is None:
        raise AgentLaunchError(f"cannot start agent: {program!r} not found")
    return found


def _launch_error(program: str, exc: OSError) -> AgentLaunchError:
    if isinstance(exc, FileNotFoundError) or exc.errno == errno.ENOENT:
        return AgentLaunchError(f"cannot start agent: {program!r} not found")
    if isinstance(exc, PermissionError) or exc.errno == errno.EACCES:
        return AgentLaunchError(
            f"cannot start agent: {program!r} is not executable (permission denied)")
    if exc.errno == errno.ENOEXEC:
        return AgentLaunchError(
            f"cannot start agent: {program!r} is not a program (no #! line?)")
    return AgentLaunchError(f"cannot start agent: {program!r}: {exc.strerror or exc}")


async def _spawn(argv: Sequence[str], cwd: Path, env: Mapping[str, str], with_stdin: bool
                 ) -> tuple[asyncio.subprocess.Process, asyncio.Event, _Gate]:
    """Start the agent held at its gate (see `_GATE`) in a new session and process group."""
    if not argv:
        raise AgentLaunchError("cannot start agent: empty command")
    program = argv[0]
    target = _resolve(program, env)
    loop = asyncio.get_running_loop()
    gate_r, gate_w = os.pipe()
    status_r, status_w = os.pipe()
    gate = _Gate(gate_w, status_r, program)
    try:
        transport, protocol = await loop.subprocess_exec(
            lambda: _ExitNotifying(MAX_LINE, loop), sys.executable, "-I", "-S", "-c", _GATE,
            str(gate_r), str(status_w), target, *argv, cwd=cwd, env=dict(env),
            stdin=asyncio.subprocess.PIPE if with_stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, pass_fds=(gate_r, status_w))
    except OSError as exc:
        gate.close()
        # A failed chdir in the child is reported with the directory as the filename.
        if exc.filename is not None and os.fspath(exc.filename) == os.fspath(cwd):
            raise AgentLaunchError(
                f"cannot start agent: working directory {str(cwd)!r}: "
                f"{exc.strerror or exc}") from exc
        raise _launch_error(program, exc) from exc
    finally:
        os.close(gate_r)
        os.close(status_w)
    return asyncio.subprocess.Process(transport, protocol, loop), protocol.exited, gate


async def run_process(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
                      stdin: bytes | None, on_line: Callable[[str], None], timeout: float,
                      stall_timeout: float | None, cancel: asyncio.Event | None = None,
                      grace: float = 3.0,
                      on_start: Callable[[int], None] | None = None,
                      stop: asyncio.Event | None = None) -> ProcessOutcome:
    """Run one agent to completion under supervision and report how it ended.

    `env` is the complete environment (nothing is inherited implicitly). `on_line` gets every
    stdout line as it arrives; `on_start(pid)` gets the pid, which is also the process group
    id, while the agent is held before it runs (see `_GATE`): whatever it records, it
    records before the agent can do anything, and if it raises the agent never runs. Raises
    AgentLaunchError when the program cannot start, and re-raises an exception from
    `on_line`/`on_start` (or this task's cancellation) only after the process group is gone.
    `stop` is the caller's own reason to end the run early (`on_line` sets it when the usage
    it reads crosses a budget, or a line says the agent cannot succeed): the group is stopped
    like on a timeout, and `stopped` says so.
    """
    started = time.monotonic()
    proc, exited, gate = await _spawn(argv, cwd, env, stdin is not None)
    pgid = proc.pid
    logger.debug("started agent %r pid=%d cwd=%s", argv[0], pgid, cwd)
    assert proc.stdout is not None and proc.stderr is not None

    activity = _Activity()
    lines = _LineSplitter(on_line)
    tail = _Tail()
    readers = [asyncio.create_task(_pump(proc.stdout, activity, lines.feed)),
               asyncio.create_task(_pump(proc.stderr, activity, tail.feed))]
    feeder: asyncio.Task[None] | None = None
    if stdin is not None:
        assert proc.stdin is not None
        feeder = asyncio.create_task(_feed_stdin(proc.stdin, stdin))

    reason: str | None = None
    try:
        if on_start is not None:
            on_start(pgid)  # recorded (durably) while the agent is still held …
        await gate.open()  # … and only then let go
        reason = await _supervise(proc, exited, readers, activity, started + timeout,
                                  stall_timeout, cancel, stop)
        if reason is not None:
            logger.info("stopping agent %r (pid %d): %s", argv[0], pgid, reason)
            await _terminate(proc, pgid, grace)
        else:
            await _drain(readers, activity, started + timeout, cancel)
            if group_alive(pgid):
                logger.info("agent %r exited but left processes in group %d: stopping them",
                            argv[0], pgid)
                await _terminate(proc, pgid, grace)
        await _finish_readers(proc, readers)
        for task in readers:  # an exception from on_line
            exc = None if task.cancelled() else task.exception()
            if exc is not None:
                raise exc
        lines.close()
    except BaseException:
        try:
            if proc.returncode is None or group_alive(pgid):
                await _terminate(proc, pgid, grace)
        finally:
            if group_alive(pgid):
                _signal_group(pgid, _signal.SIGKILL)
            for task in readers:
                task.cancel()
        raise
    finally:
        gate.close()  # not opened (on_start failed): the held agent exits without running
        if feeder is not None:
            feeder.cancel()
            await asyncio.gather(feeder, return_exceptions=True)

    rc = proc.returncode
    assert rc is not None
    return ProcessOutcome(
        exit_code=None if reason is not None or rc < 0 else rc,
        timed_out=reason == "timeout", stalled=reason == "stalled",
        cancelled=reason == "cancelled", duration=time.monotonic() - started,
        stderr_tail=terminal_safe(tail.text(), multiline=True,
                                  strip_sequences=True), signal=-rc if rc < 0 else None,
        stopped=reason == "stopped")


async def _supervise(proc: asyncio.subprocess.Process, exited: asyncio.Event,
                     readers: list[asyncio.Task[None]], activity: _Activity, deadline: float,
                     stall_timeout: float | None, cancel: asyncio.Event | None,
                     stop: asyncio.Event | None = None) -> str | None:
    """Wait for the main child to exit (woken by `exited` at once); return why we must stop
    it instead, if we must. The checks run every `_POLL` seconds at most."""
    while proc.returncode is None:
        now = time.monotonic()
        if cancel is not None and cancel.is_set():
            return "cancelled"
        if stop is not None and stop.is_set():
            return "stopped"
        if now >= deadline:
            return "timeout"
        if stall_timeout is not None and now - activity.last >= stall_timeout:
            return "stalled"
        if any(t.done() and not t.cancelled() and t.exception() is not None for t in readers):
            return "error in output handler"
        wake = deadline - now
        if stall_timeout is not None:
            wake = min(wake, activity.last + stall_timeout - now)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(exited.wait(), max(0.0, min(wake, _POLL)))
    return None


async def _drain(readers: list[asyncio.Task[None]], activity: _Activity, deadline: float,
                 cancel: asyncio.Event | None) -> None:
    """Read what the exited child left in the pipes while bytes keep coming."""
    exited = time.monotonic()
    while not all(t.done() for t in readers):
        now = time.monotonic()
        if (now - max(activity.last, exited) >= DRAIN_IDLE or now >= deadline
                or (cancel is not None and cancel.is_set())):
            return
        await asyncio.wait(readers, timeout=_POLL)


async def _finish_readers(proc: asyncio.subprocess.Process,
                          readers: list[asyncio.Task[None]]) -> None:
    """Give the pipes a last moment to reach EOF, then stop reading. A pipe still open now is
    held by a process outside the group (it called setsid); we close our end of it."""
    _, pending = await asyncio.wait(readers, timeout=DRAIN_IDLE)
    if not pending:
        return
    logger.warning("agent pid %d: output pipe held open by a process outside its group; "
                   "no longer reading it", proc.pid)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    transport = getattr(proc, "_transport", None)  # no public way to close the pipes
    if transport is not None:
        transport.close()


# == ownership: which recorded processes may be signalled ========================================
#
# `run.json` is a file in the workspace, and a repository (or anyone who can write there) can
# plant one naming any pid. Nothing recorded there is signalled until /proc proves it is the
# process the engine recorded: the same start time (field 22 of /proc/<pid>/stat, clock ticks
# since boot: a reused pid starts later) and, for an agent group, an environment carrying
# this workflow's id and workspace; for the engine, this workflow's own lock file held open.
# The engine's environment cannot carry its id (it is fixed at exec, before the id exists),
# and holding the lock is the stronger proof anyway: only the running engine does.

START_TICKS = "start_ticks"
"""run.json: the engine's own start time, clock ticks since boot."""
GROUP_START_TICKS = "pgid_start_ticks"
"""run.json: {pgid: its leader's start time} of every agent group the engine started."""


def proc_available() -> bool:
    """Whether /proc can prove who a process is (Linux); elsewhere nothing is signalled."""
    return os.path.isfile("/proc/self/stat") and os.path.isfile("/proc/self/environ")


def _stat_fields(pid: int) -> list[bytes] | None:
    """/proc/<pid>/stat from field 3 (state) on, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    # "pid (comm) state ppid pgrp ..." -- comm may contain spaces and parentheses
    return data[data.rfind(b")") + 2:].split()


def start_ticks(pid: int) -> int | None:
    """When process `pid` started, in clock ticks since boot (field 22 of its stat)."""
    fields = _stat_fields(pid)
    try:
        return int(fields[19]) if fields is not None else None
    except (IndexError, ValueError):
        return None


def alive_as_recorded(pid: int, recorded: object) -> bool:
    """Whether process `pid` runs (a zombie does not) and started at the recorded tick: the
    same process, not a later one with its pid."""
    fields = _stat_fields(pid)
    if not _alive(fields) or fields is None:
        return False
    try:
        return int(fields[19]) == recorded
    except (IndexError, ValueError):
        return False


def _recorded(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def recorded_groups(owner: Mapping[str, object]) -> dict[int, int | None]:
    """{pgid: recorded start ticks} of a run.json; entries that are not pids are dropped."""
    starts = owner.get(GROUP_START_TICKS)
    starts = starts if isinstance(starts, dict) else {}
    pgids = owner.get("pgids")
    out: dict[int, int | None] = {}
    for item in pgids if isinstance(pgids, list) else []:
        pgid = _recorded(item)
        if pgid is not None and pgid > 1:
            out[pgid] = _recorded(starts.get(str(pgid)))
    return out


def _alive(fields: list[bytes] | None) -> bool:
    return fields is not None and bool(fields) and fields[0] not in (b"Z", b"X")


def _started_as_recorded(pid: int, fields: list[bytes], recorded: int | None) -> str | None:
    if recorded is None:
        return "run.json records no start time for it"
    try:
        now = int(fields[19])
    except (IndexError, ValueError):
        return "its start time cannot be read"
    if now != recorded:
        return (f"it started at tick {now}, not at tick {recorded} as recorded: another "
                "process has that pid now")
    return None


def _live_as_recorded(pid: int, recorded: int | None
                      ) -> tuple[list[bytes] | None, tuple[bool, str | None]]:
    """The process's stat fields when it is alive and started at the recorded tick; else
    None and the verdict the provers return (nothing alive, or why it is not the one)."""
    if not proc_available():
        return None, (False, "/proc is not available on this system to prove who it is")
    fields = _stat_fields(pid)
    if not _alive(fields):
        return None, (False, None)
    assert fields is not None
    why = _started_as_recorded(pid, fields, recorded)
    if why is not None:
        return None, (False, why)
    return fields, (True, None)


def prove_agent_group(pgid: int, workflow_id: str, root: Path, recorded: int | None
                      ) -> tuple[bool, str | None]:
    """(True, None) when the group `pgid` is an agent this workflow started; (False, None)
    when no such process is alive (nothing to signal); else (False, why not)."""
    fields, verdict = _live_as_recorded(pgid, recorded)
    if fields is None:
        return verdict
    if len(fields) < 3 or fields[2] != str(pgid).encode():
        return False, "it does not lead a process group of its own"
    try:
        env = Path(f"/proc/{pgid}/environ").read_bytes().split(b"\0")
    except OSError as exc:
        return False, f"its environment cannot be read ({exc.strerror or exc})"
    wanted = (f"BATON_WORKFLOW_ID={workflow_id}".encode(),
              os.fsencode(f"BATON_WORKSPACE={root}"))
    if not all(marker in env for marker in wanted):
        return False, (f"its environment does not carry BATON_WORKFLOW_ID={workflow_id} "
                       f"and BATON_WORKSPACE={root}")
    return True, None


def prove_engine(pid: int, lock: tuple[int, int] | None, recorded: int | None
                 ) -> tuple[bool, str | None]:
    """(True, None) when `pid` is the engine running the workflow: started when run.json
    says, and holding the workflow's lock file (`lock`: its st_dev, st_ino) open; (False,
    None) when no such process is alive; else (False, why not)."""
    fields, verdict = _live_as_recorded(pid, recorded)
    if fields is None:
        return verdict
    if lock is None:
        return False, "the workflow has no lock file of its own"
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError as exc:
        return False, f"its open files cannot be read ({exc.strerror or exc})"
    for fd in fds:
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if (st.st_dev, st.st_ino) == lock:
            return True, None
    return False, "it does not hold the workflow's lock"


def not_signalled(pid: int, workflow_id: str, why: str) -> str:
    """The line a refused record gets, in one wording everywhere."""
    if not proc_available():
        return (f"not signalled: process {pid} cannot be proven to belong to workflow "
                f"{workflow_id} ({why}; Baton refuses to signal rather than guess)")
    return f"not signalled: process {pid} does not belong to workflow {workflow_id} ({why})"


def owned_agent_groups(owner: Mapping[str, object], workflow_id: str, root: Path
                       ) -> tuple[list[int], list[str]]:
    """The agent groups of a run.json proven to be this workflow's (`prove_agent_group`),
    and a `not_signalled` line for each recorded one alive but not proven."""
    owned: list[int] = []
    refused: list[str] = []
    for pgid, recorded in recorded_groups(owner).items():
        ok, why = prove_agent_group(pgid, workflow_id, root, recorded)
        if ok:
            owned.append(pgid)
        elif why is not None:
            refused.append(not_signalled(pgid, workflow_id, why))
    return owned, refused

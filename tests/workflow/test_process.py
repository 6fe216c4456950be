"""Supervised agent processes: real subprocesses, process groups and signals, no mocks."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from baton_lsp.workflow.process import (
    MAX_LINE,
    STDERR_TAIL,
    AgentLaunchError,
    ProcessOutcome,
    group_alive,
    kill_group,
    run_process,
)

PY = sys.executable
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX process groups")


def alive(pid: int) -> bool:
    """Whether pid is a running process (a zombie awaiting its reaper counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")


async def run(argv: list[str], cwd: Path, *, stdin: bytes | None = None, timeout: float = 2.0,
              stall: float | None = None, cancel: asyncio.Event | None = None,
              grace: float = 1.0, on_line: Callable[[str], None] | None = None,
              on_start: Callable[[int], None] | None = None,
              ) -> tuple[ProcessOutcome, list[str]]:
    lines: list[str] = []

    def collect(line: str) -> None:
        lines.append(line)
        if on_line is not None:
            on_line(line)

    out = await asyncio.wait_for(
        run_process(argv, cwd=cwd, env=dict(os.environ), stdin=stdin, on_line=collect,
                    timeout=timeout, stall_timeout=stall, cancel=cancel, grace=grace,
                    on_start=on_start),
        timeout=15)
    return out, lines


async def test_lines_arrive_in_order_and_stdin_is_delivered(tmp_path: Path) -> None:
    script = ("import sys\n"
              "print('first', flush=True)\n"
              "for line in sys.stdin.read().splitlines():\n"
              "    print('echo:' + line)\n"
              "sys.stdout.write('crlf\\r\\n')\n"
              "sys.stdout.buffer.write(b'bad \\xff byte\\n')\n"
              "sys.stdout.write('no newline at the end')\n")
    out, lines = await run([PY, "-c", script], tmp_path, stdin="alpha\nbéta\n".encode())
    assert lines == ["first", "echo:alpha", "echo:béta", "crlf", "bad \ufffd byte",
                     "no newline at the end"]
    assert out == ProcessOutcome(exit_code=0, timed_out=False, stalled=False, cancelled=False,
                                 duration=out.duration, stderr_tail="", signal=None)
    assert not out.killed_by_us


async def test_exit_code_and_stderr_tail_are_reported(tmp_path: Path) -> None:
    out, lines = await run(["sh", "-c", "echo out; echo oops >&2; exit 3"], tmp_path)
    assert (out.exit_code, out.signal, lines, out.stderr_tail) == (3, None, ["out"], "oops\n")


async def test_a_signal_death_is_reported_as_a_signal(tmp_path: Path) -> None:
    out, _ = await run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGUSR1)"],
                       tmp_path)
    assert out.exit_code is None and out.signal == signal.SIGUSR1
    assert not out.killed_by_us


async def test_stderr_keeps_only_its_tail(tmp_path: Path) -> None:
    script = "import sys; sys.stderr.write('é' * 20000 + 'END')"
    out, _ = await run([PY, "-c", script], tmp_path)
    assert out.stderr_tail.endswith("éEND")
    assert len(out.stderr_tail.encode()) <= STDERR_TAIL
    assert "\ufffd" not in out.stderr_tail


async def test_overall_timeout_kills_the_child_and_its_grandchild(tmp_path: Path) -> None:
    pids: list[int] = []
    out, lines = await run(["sh", "-c", "sleep 60 & echo $!; sleep 60"], tmp_path,
                           timeout=0.5, on_start=pids.append)
    grandchild = int(lines[0])
    assert out.timed_out and not out.stalled and not out.cancelled
    assert out.exit_code is None and out.signal == signal.SIGTERM
    assert 0.5 <= out.duration < 2.0
    assert not alive(pids[0]) and not alive(grandchild)
    assert not group_alive(pids[0])


async def test_a_group_ignoring_sigterm_gets_sigkill_after_the_grace(tmp_path: Path) -> None:
    # An ignored signal stays ignored across fork and exec, so both sleeps ignore TERM; the
    # first line says the trap is in place, and cancelling then starts the kill.
    cancel = asyncio.Event()
    out, lines = await run(["sh", "-c", "trap '' TERM; sleep 60 & echo $!; sleep 60"],
                           tmp_path, cancel=cancel, grace=0.4,
                           on_line=lambda _: cancel.set())
    assert out.cancelled and out.signal == signal.SIGKILL
    assert out.duration >= 0.4
    assert not alive(int(lines[0]))


async def test_stall_watchdog_fires_when_output_stops(tmp_path: Path) -> None:
    out, lines = await run(["sh", "-c", "echo hi; sleep 60"], tmp_path, timeout=2.0,
                           stall=0.3)
    assert out.stalled and not out.timed_out and out.exit_code is None
    assert lines == ["hi"]
    assert out.duration < 1.5


async def test_steady_output_on_either_stream_is_not_a_stall(tmp_path: Path) -> None:
    loop = "for i in 1 2 3 4 5 6 7 8; do echo $i; echo e$i >&2; sleep 0.1; done"
    out, lines = await run(["sh", "-c", loop], tmp_path, timeout=2.0, stall=0.6)
    assert out.exit_code == 0 and not out.stalled
    assert lines == [str(i) for i in range(1, 9)]
    quiet_stdout = "for i in 1 2 3 4 5 6 7 8; do echo e$i >&2; sleep 0.1; done"
    out, _ = await run(["sh", "-c", quiet_stdout], tmp_path, timeout=2.0, stall=0.6)
    assert out.exit_code == 0 and not out.stalled


async def test_cancel_event_stops_a_running_agent(tmp_path: Path) -> None:
    cancel = asyncio.Event()

    def on_line(line: str) -> None:  # lines stream while the child still runs
        if line == "ready":
            cancel.set()

    out, lines = await run(["sh", "-c", "echo ready; sleep 60"], tmp_path, cancel=cancel,
                           on_line=on_line)
    assert out.cancelled and not out.timed_out and out.exit_code is None
    assert lines == ["ready"] and out.duration < 1.0


async def test_an_already_set_cancel_event_stops_at_once(tmp_path: Path) -> None:
    cancel = asyncio.Event()
    cancel.set()
    out, _ = await run(["sleep", "60"], tmp_path, cancel=cancel)
    assert out.cancelled and out.duration < 1.0


async def test_missing_executable_is_a_clear_launch_error(tmp_path: Path) -> None:
    with pytest.raises(AgentLaunchError,
                       match=r"^cannot start agent: 'baton-no-such-agent-xyz' not found$"):
        await run(["baton-no-such-agent-xyz", "-p"], tmp_path)


async def test_unusable_programs_and_directories_are_launch_errors(tmp_path: Path) -> None:
    plain = tmp_path / "agent.sh"
    plain.write_text("#!/bin/sh\necho hi\n")
    plain.chmod(0o644)
    with pytest.raises(AgentLaunchError, match="not executable"):
        await run([str(plain)], tmp_path)
    no_shebang = tmp_path / "agent.bin"
    no_shebang.write_bytes(b"\x00\x01 not a program\n")
    no_shebang.chmod(0o755)
    with pytest.raises(AgentLaunchError, match="cannot start agent"):
        await run([str(no_shebang)], tmp_path)
    with pytest.raises(AgentLaunchError, match="working directory"):
        await run(["true"], tmp_path / "missing")
    with pytest.raises(AgentLaunchError, match="empty command"):
        await run([], tmp_path)


async def test_a_five_megabyte_line_is_cut_not_fatal(tmp_path: Path) -> None:
    script = "import sys; sys.stdout.write('x' * 5_000_000 + '\\nafter\\n')"
    out, lines = await run([PY, "-c", script], tmp_path)
    assert out.exit_code == 0
    assert [len(x) for x in lines] == [MAX_LINE, 5] and lines[1] == "after"


async def test_grandchild_holding_stdout_after_exit_does_not_hang(tmp_path: Path) -> None:
    out, lines = await run(["sh", "-c", "sleep 60 & echo $!; echo parent-done"], tmp_path,
                           timeout=5.0)
    assert out.exit_code == 0 and not out.killed_by_us
    assert lines[-1] == "parent-done"
    assert out.duration < 2.0
    assert not alive(int(lines[0]))


@pytest.mark.skipif(shutil.which("setsid") is None, reason="needs setsid(1)")
async def test_pipes_held_outside_the_group_are_abandoned(tmp_path: Path) -> None:
    # a process in its own session keeps stdout and stdin (never reading the big prompt)
    script = "exec 3<&0; setsid sleep 60 <&3 & echo $!; echo parent-done"
    out, lines = await run(["sh", "-c", script], tmp_path, timeout=5.0,
                           stdin=b"p" * (4 << 20))
    outsider = int(lines[0])
    try:
        assert out.exit_code == 0 and lines[-1] == "parent-done"
        assert out.duration < 2.5
    finally:
        os.kill(outsider, signal.SIGKILL)


async def test_child_that_never_reads_stdin_is_fine(tmp_path: Path) -> None:
    out, _ = await run(["sh", "-c", "exit 0"], tmp_path, stdin=b"p" * (4 << 20))
    assert out.exit_code == 0


async def test_kill_group_from_another_process(tmp_path: Path) -> None:
    killers: list[asyncio.Task[int]] = []

    async def killer(pgid: int) -> int:
        code = ("import sys\nfrom baton_lsp.workflow.process import kill_group\n"
                "sys.exit(0 if kill_group(int(sys.argv[1]), 1.0) else 1)")
        proc = await asyncio.create_subprocess_exec(PY, "-c", code, str(pgid))
        return await proc.wait()

    pids: list[int] = []

    def on_start(pid: int) -> None:
        pids.append(pid)
        killers.append(asyncio.get_running_loop().create_task(killer(pid)))

    out, lines = await run(["sh", "-c", "sleep 60 & echo $!; sleep 60"], tmp_path,
                           timeout=10.0, on_start=on_start)
    assert await killers[0] == 0
    assert out.exit_code is None and out.signal == signal.SIGTERM
    assert not out.killed_by_us
    assert not alive(pids[0]) and not alive(int(lines[0]))
    assert kill_group(pids[0], 0.1) is False  # nothing left to signal


def test_kill_group_escalates_to_sigkill() -> None:
    proc = subprocess.Popen(["sh", "-c", "trap '' TERM; echo ready; sleep 60"],
                            stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        assert kill_group(proc.pid, grace=0.3) is True
        assert proc.wait(timeout=5) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def test_kill_group_refuses_our_own_group_and_init() -> None:
    for pgid in (0, 1, os.getpgrp()):
        with pytest.raises(ValueError, match="refusing"):
            kill_group(pgid)


async def test_an_on_line_error_propagates_after_the_group_is_gone(tmp_path: Path) -> None:
    pids: list[int] = []

    def on_line(line: str) -> None:
        if line == "boom":
            raise RuntimeError("handler failed")

    with pytest.raises(RuntimeError, match="handler failed"):
        await run(["sh", "-c", "sleep 60 & echo $!; echo boom; sleep 60"], tmp_path,
                  on_line=on_line, on_start=pids.append)
    assert not group_alive(pids[0])


async def test_cancelling_the_task_kills_the_group(tmp_path: Path) -> None:
    ready = asyncio.Event()
    pids: list[int] = []

    def on_line(line: str) -> None:
        ready.set()

    task = asyncio.create_task(run(["sh", "-c", "echo ready; sleep 60"], tmp_path,
                                   timeout=10.0, on_line=on_line, on_start=pids.append))
    await asyncio.wait_for(ready.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not group_alive(pids[0])


async def test_the_agent_is_held_until_on_start_has_recorded_it(tmp_path: Path) -> None:
    """`on_start` runs while the agent is held at its gate: the program has not been
    exec'd yet (the held process is the gate's Python), and it has done nothing."""
    marker = tmp_path / "ran"
    seen: list[bytes] = []

    def on_start(pid: int) -> None:
        seen.append(Path(f"/proc/{pid}/cmdline").read_bytes())
        assert not marker.exists()

    out, _ = await run(["touch", str(marker)], tmp_path, on_start=on_start)
    assert out.exit_code == 0 and marker.exists()
    assert b"touch" in seen[0] and b"-S\0-c\0" in seen[0]  # the gate, with touch as its argv


async def test_an_agent_whose_start_cannot_be_recorded_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    pids: list[int] = []

    def on_start(pid: int) -> None:
        pids.append(pid)
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        await run([PY, "-c", f"open({str(marker)!r}, 'w').write('x')"], tmp_path,
                  on_start=on_start)
    assert not marker.exists() and not alive(pids[0])

"""Process lifecycle of the real server: orphan watch over stdio, and the `--tcp` transport.

Both speak raw JSON-RPC (Content-Length framing) on purpose: pytest-lsp owns the server
process, so it can neither kill the client's side out from under the server nor use TCP.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.lsp import lifecycle

SERVER_CMD = [sys.executable, "-m", "baton_lsp", "lsp"]
START_TIMEOUT = 30.0
# The server polls its parent every 3 s (lifecycle.PARENT_POLL_SECONDS); allow for a slow CI.
ORPHAN_EXIT_TIMEOUT = 15.0

# Starts the server as its own child on the given pipe fds, reports the server's pid and
# waits: it plays the editor whose death the server must notice.
LAUNCHER = """
import subprocess, sys
server = subprocess.Popen(sys.argv[3:], stdin=int(sys.argv[1]), stdout=int(sys.argv[2]))
print(server.pid, flush=True)
server.wait()
"""


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)


class Reader:
    """LSP messages from a pipe or socket; every wait is bounded by a deadline."""

    def __init__(self, fileno: int, recv: Callable[[int], bytes]) -> None:
        self.fileno = fileno
        self.recv = recv
        self.buffer = b""
        self.seen: list[dict[str, Any]] = []

    def _fill(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        ready = select.select([self.fileno], [], [], max(remaining, 0))[0] if remaining > 0 else []
        if not ready:
            raise TimeoutError(f"no message in time; seen: {self.seen}")
        chunk = self.recv(65536)
        if not chunk:
            raise EOFError
        self.buffer += chunk

    def message(self, deadline: float) -> dict[str, Any]:
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                match = re.search(rb"content-length:\s*(\d+)", head, re.IGNORECASE)
                assert match, head
                length = int(match.group(1))
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    msg: dict[str, Any] = json.loads(rest[:length])
                    self.seen.append(msg)
                    return msg
            self._fill(deadline)

    def response(self, request_id: int, timeout: float = START_TIMEOUT) -> dict[str, Any]:
        """The response to `request_id`, skipping notifications such as window/logMessage."""
        deadline = time.monotonic() + timeout
        while True:
            msg = self.message(deadline)
            if msg.get("id") == request_id and "method" not in msg:
                return msg

    def drain_to_eof(self, timeout: float) -> bool:
        """Read until the peer closes; False if it is still open at the deadline."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                self.message(deadline)
        except EOFError:
            return True
        except TimeoutError:
            return False


def initialize(request_id: int, process_id: int | None, root: Path) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
        "processId": process_id, "rootUri": root.as_uri(), "capabilities": {},
        "workspaceFolders": [{"uri": root.as_uri(), "name": "ws"}]}}


INITIALIZED = {"jsonrpc": "2.0", "method": "initialized", "params": {}}


def wait_exit(pid: int, timeout: float) -> bool | None:
    """Whether the (non-child) process `pid` ended within `timeout`; None if unknowable.

    A pidfd becomes readable when the process terminates, even while it is an unreaped
    zombie, so this neither polls nor depends on who reaps the orphan.
    """
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None
    try:
        return bool(select.select([fd], [], [], timeout)[0])
    finally:
        os.close(fd)


@contextmanager
def orphanable_server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], int, int, Reader]]:
    """The server as a grandchild: yields (launcher, server pid, server stdin fd, reader).

    We keep the server's stdin open throughout, so an exit can only come from the parent
    watch, never from end-of-input.
    """
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()
    stderr = (tmp_path / "server.stderr").open("wb")
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCHER, str(to_r), str(from_w),
                                 *SERVER_CMD],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=stderr,
                                pass_fds=(to_r, from_w), text=True)
    os.close(to_r)
    os.close(from_w)
    server_pid = 0
    try:
        assert launcher.stdout is not None
        line = launcher.stdout.readline()  # printed at once, or EOF if the launcher failed
        assert line.strip().isdigit(), f"launcher failed: {line!r}"
        server_pid = int(line)
        yield launcher, server_pid, to_w, Reader(from_r, lambda n: os.read(from_r, n))
    finally:
        if server_pid:
            with suppress(ProcessLookupError):
                os.kill(server_pid, signal.SIGKILL)
        launcher.kill()
        launcher.wait(timeout=10)
        assert launcher.stdout is not None
        launcher.stdout.close()
        stderr.close()
        os.close(to_w)
        os.close(from_r)


def test_server_exits_when_its_client_process_dies(tmp_path: Path) -> None:
    """An editor crash must not leave a server behind, even while its stdin stays open."""
    with orphanable_server(tmp_path) as (launcher, server_pid, to_server, reader):
        os.write(to_server, frame(initialize(1, launcher.pid, tmp_path)))
        result = reader.response(1)["result"]
        assert result["serverInfo"]["name"] == "baton-lsp"
        os.write(to_server, frame(INITIALIZED))

        launcher.kill()
        launcher.wait(timeout=10)  # reaped: the pid is really gone, as after an editor crash
        started = time.monotonic()

        ended = wait_exit(server_pid, ORPHAN_EXIT_TIMEOUT)
        closed = reader.drain_to_eof(max(ORPHAN_EXIT_TIMEOUT - (time.monotonic() - started), 1))
        elapsed = time.monotonic() - started
        stderr = (tmp_path / "server.stderr").read_text(errors="replace")
        assert ended is not False and closed, (
            f"server {server_pid} still running {elapsed:.1f}s after its client died\n{stderr}")
        assert elapsed < ORPHAN_EXIT_TIMEOUT
        logs = [m["params"]["message"] for m in reader.seen
                if m.get("method") == "window/logMessage"]
        assert any(f"client process {launcher.pid} is gone" in m for m in logs), logs


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _connect(port: int, server: subprocess.Popen[bytes]) -> socket.socket:
    """Connect once the server listens; the wait between attempts is `server.wait`, which
    also ends the loop early if the server dies."""
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            return socket.create_connection(("127.0.0.1", port), timeout=5)
        except ConnectionRefusedError:
            if time.monotonic() > deadline:
                raise
        try:
            server.wait(timeout=0.05)
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"server exited early with {server.returncode}")


def test_tcp_transport_initialize_shutdown_exit(tmp_path: Path) -> None:
    """`baton lsp --tcp` serves one client on loopback and exits 0 after shutdown/exit."""
    port = _free_loopback_port()
    stderr_path = tmp_path / "server.stderr"
    with stderr_path.open("wb") as stderr:
        server = subprocess.Popen([*SERVER_CMD, "--tcp", f"127.0.0.1:{port}"],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=stderr)
    try:
        with _connect(port, server) as sock:
            reader = Reader(sock.fileno(), sock.recv)
            sock.sendall(frame(initialize(1, os.getpid(), tmp_path)))
            result = reader.response(1)["result"]
            assert result["serverInfo"]["name"] == "baton-lsp"
            assert result["capabilities"]["textDocumentSync"]
            sock.sendall(frame(INITIALIZED))
            sock.sendall(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
            shutdown = reader.response(2)
            assert "error" not in shutdown and shutdown["result"] is None
            sock.sendall(frame({"jsonrpc": "2.0", "method": "exit"}))
            assert reader.drain_to_eof(START_TIMEOUT), "server kept the connection open"
        assert server.wait(timeout=START_TIMEOUT) == 0, stderr_path.read_text(errors="replace")
    finally:
        if server.poll() is None:
            server.kill()
            server.wait(timeout=10)


def test_process_probe_posix_alive_and_reaped() -> None:
    """The parent watch's probe: this process is alive, a reaped child is not."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    assert lifecycle._process_alive(os.getpid())
    assert not lifecycle._process_alive(child.pid)


class _FakeKernel32:
    """Just enough of kernel32 to run the Windows probe's decisions on any OS."""

    def __init__(self, handle: int, exit_code: int = 0, error: int = 0) -> None:
        self.handle, self.exit_code, self.error, self.closed = handle, exit_code, error, False

        def open_process(access: int, inherit: bool, pid: int) -> int:
            return self.handle

        def get_exit_code(handle: int, code: Any) -> bool:
            code._obj.value = self.exit_code
            return True

        def close(handle: int) -> None:
            self.closed = True

        self.OpenProcess, self.GetExitCodeProcess, self.CloseHandle = (
            open_process, get_exit_code, close)


@pytest.mark.parametrize(("handle", "exit_code", "error", "alive"), [
    (42, 259, 0, True),   # STILL_ACTIVE
    (42, 1, 0, False),    # exited, handle still held somewhere
    (0, 0, 87, False),    # ERROR_INVALID_PARAMETER: no such pid
    (0, 0, 5, True),      # ERROR_ACCESS_DENIED: exists, belongs to someone else
])
def test_windows_probe_reads_the_exit_code_instead_of_signalling(
        monkeypatch: pytest.MonkeyPatch, handle: int, exit_code: int, error: int,
        alive: bool) -> None:
    """os.kill(pid, 0) sends Ctrl+C on Windows; the probe must only query the process."""
    kernel32 = _FakeKernel32(handle, exit_code, error)
    monkeypatch.setattr(ctypes, "WinDLL", lambda *a, **k: kernel32, raising=False)
    monkeypatch.setattr(ctypes, "get_last_error", lambda: error, raising=False)
    monkeypatch.setattr(os, "kill", lambda *a: pytest.fail("os.kill used as a probe"))
    assert lifecycle._windows_process_alive(1234) is alive
    assert kernel32.closed is bool(handle)

"""Framing errors on the server's stdin: raw bytes, a real server process.

After a message with a missing, negative, non-numeric, huge, short or too long
`Content-Length`, garbage between messages, or a body that is not a JSON-RPC message, the
server must keep answering (resynchronised on the next header) and say in its log what it
dropped or repaired — never stay alive and silent. pytest-lsp cannot send broken frames,
so these tests write to the server's pipe themselves.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_lifecycle import INITIALIZED, Reader, frame, initialize

ANSWER_TIMEOUT = 20.0
"""Generous for a loaded CI machine; a deaf server never answers at all."""


def body(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode("utf-8")


def symbol_request(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "workspace/symbol",
            "params": {"query": "zzz-no-such-symbol"}}


class RawServer:
    """`baton lsp` on pipes, spoken to in bytes."""

    def __init__(self, root: Path) -> None:
        self.stderr = root / "server.stderr"
        with self.stderr.open("wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "baton_lsp", "lsp"],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=err)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        self.reader = Reader(fd, lambda n: os.read(fd, n))
        self.send(frame(initialize(1, os.getpid(), root)))
        self.reader.response(1, ANSWER_TIMEOUT)
        self.send(frame(INITIALIZED))

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def logs(self) -> list[str]:
        return [m["params"]["message"] for m in self.reader.seen
                if m.get("method") == "window/logMessage"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawServer]:
    (tmp_path / ".claude").mkdir()
    raw = RawServer(tmp_path)
    try:
        yield raw
    finally:
        raw.close()


BAD = body(symbol_request(5))
BROKEN_FRAMES = {
    "missing": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + BAD,
    "negative": b"Content-Length: -5\r\n\r\n" + BAD,
    "non-numeric": b"Content-Length: twelve\r\n\r\n" + BAD,
    "huge": b"Content-Length: 99999999999999999999\r\n\r\n" + BAD,
    "short": b"Content-Length: %d\r\n\r\n" % (len(BAD) // 2) + BAD,
    "too-long": b"Content-Length: %d\r\n\r\n" % (len(BAD) + 5000) + BAD,
    "garbage-before": b"\x00\xff\xfe garbage }{ \r\n\r\n" + frame(symbol_request(5)),
    "no-headers": BAD,
}


@pytest.mark.parametrize("case", list(BROKEN_FRAMES))
def test_a_framing_error_never_silences_the_server(server: RawServer, case: str) -> None:
    """The next well-formed request is answered, the broken one is answered (repaired) or
    reported, and the log says what went wrong."""
    server.send(BROKEN_FRAMES[case])
    server.send(frame(symbol_request(6)))
    deadline = time.monotonic() + ANSWER_TIMEOUT
    answered: dict[Any, dict[str, Any]] = {}
    while 6 not in answered:
        msg = server.reader.message(deadline)
        if "id" in msg and "method" not in msg:
            answered[msg["id"]] = msg
    assert answered[6].get("result") == [], answered[6]
    if case == "garbage-before":  # the message itself was fine
        assert 5 in answered
    else:
        logs = "\n".join(server.logs())
        assert "Content-Length" in logs or "header" in logs, logs
    assert server.proc.poll() is None


def test_a_request_with_a_lying_length_is_answered_without_a_next_message(
        server: RawServer) -> None:
    """A client that sends one message with a too large length and then waits: the server
    notices the stream went quiet with a whole message in hand, and answers it."""
    server.send(BROKEN_FRAMES["too-long"])
    assert server.reader.response(5, ANSWER_TIMEOUT).get("result") == []
    assert any("Content-Length" in m for m in server.logs()), server.logs()


def errors_before_next_answer(server: RawServer) -> list[dict[str, Any]]:
    """Send a well-formed request and return the error responses that came before its
    answer (which must be a result: the server went on)."""
    server.send(frame(symbol_request(8)))
    deadline = time.monotonic() + ANSWER_TIMEOUT
    errors = []
    while True:
        msg = server.reader.message(deadline)
        if "error" in msg:
            errors.append(msg)
        if msg.get("id") == 8 and "method" not in msg:
            assert "result" in msg, msg
            return errors


@pytest.mark.parametrize("payload,code", [
    (b"{not json at all", -32700),
    (b"[1, 2, 3]", -32600),
    (body({"id": 7, "method": "workspace/symbol", "params": {"query": ""}}), -32600),
])
def test_a_body_that_is_not_a_message_gets_an_error_response(
        server: RawServer, payload: bytes, code: int) -> None:
    server.send(b"Content-Length: %d\r\n\r\n" % len(payload) + payload)
    errors = errors_before_next_answer(server)
    assert [e["error"]["code"] for e in errors] == [code], errors


def test_a_request_whose_params_do_not_fit_is_answered_with_an_error(
        server: RawServer) -> None:
    """pygls raised while structuring it and never answered: the client waited forever."""
    server.send(frame({"jsonrpc": "2.0", "id": 9, "method": "textDocument/hover",
                       "params": {"textDocument": 5}}))
    reply = server.reader.response(9, ANSWER_TIMEOUT)
    assert reply["error"]["code"] in (-32602, -32600), reply


def test_exit_ends_the_process_cleanly_while_stdin_is_still_open(server: RawServer) -> None:
    """The reader thread blocked on stdin must not turn the exit into a crash ("Fatal
    Python error: could not acquire lock for <stdin>", exit code 134)."""
    server.send(frame({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
    server.reader.response(2, ANSWER_TIMEOUT)
    server.send(frame({"jsonrpc": "2.0", "method": "exit"}))
    assert server.proc.wait(timeout=ANSWER_TIMEOUT) == 0
    assert "Fatal" not in server.stderr.read_text(errors="replace")


def test_end_of_input_in_the_middle_of_a_message_exits_with_a_reason(
        server: RawServer) -> None:
    server.send(b"Content-Length: 500\r\n\r\n{\"jsonrpc\": \"2.0\", ")
    assert server.proc.stdin is not None
    server.proc.stdin.close()
    assert server.proc.wait(timeout=ANSWER_TIMEOUT) is not None
    assert server.reader.drain_to_eof(ANSWER_TIMEOUT)
    assert any("closed" in m and "message" in m for m in server.logs()), server.logs()


# -- the framer on its own ----------------------------------------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from baton_lsp.lsp.framing import Frame, Framer  # noqa: E402
from tests.fuzzing import FRAME_BREAKERS  # noqa: E402

_TEXT = st.text(st.characters(codec="utf-8"), max_size=40)
MESSAGES = st.lists(st.fixed_dictionaries({
    "jsonrpc": st.just("2.0"), "id": st.integers(0, 10**6), "method": _TEXT,
    "params": st.dictionaries(_TEXT, _TEXT | st.integers(), max_size=3)}),
    min_size=1, max_size=6)


def _cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]


def _run(chunks: list[bytes]) -> list[Frame]:
    framer = Framer()
    out = [frame for chunk in chunks for frame in framer.feed(chunk)]
    return out + framer.eof()


@settings(max_examples=150, deadline=None)
@given(MESSAGES, st.lists(st.integers(0, 10**6), max_size=8))
def test_well_formed_messages_come_out_whole_however_the_bytes_are_split(
        messages: list[dict[str, Any]], cuts: list[int]) -> None:
    data = b"".join(frame(m) for m in messages)
    frames = _run(_cut(data, cuts))
    assert [f.message for f in frames] == messages
    assert not [f.problem for f in frames if f.problem]


@settings(max_examples=200, deadline=None)
@given(MESSAGES, st.integers(0, 5), st.sampled_from(range(len(FRAME_BREAKERS))),
       st.lists(st.integers(0, 10**6), max_size=6))
def test_one_broken_frame_never_costs_the_messages_after_it(
        messages: list[dict[str, Any]], which: int, breaker: int, cuts: list[int]) -> None:
    """Every other message comes out intact and in order; the broken one comes out
    repaired or is reported; nothing is lost silently."""
    which %= len(messages)
    data = b"".join(FRAME_BREAKERS[breaker](json.dumps(m).encode()) if i == which else frame(m)
                    for i, m in enumerate(messages))
    frames = _run(_cut(data, cuts))
    got = [f.message for f in frames if f.message is not None]
    others = [m for i, m in enumerate(messages) if i != which]
    assert [m for m in got if m != messages[which]] == \
        [m for m in others if m != messages[which]]
    assert messages[which] in got or any(f.problem for f in frames)


@pytest.mark.parametrize("message,answer_id", [
    ({"jsonrpc": "2.0", "id": "x", "method": 1}, "x"),
    ({"jsonrpc": "2.0", "id": 11, "method": None, "params": {}}, 11),
    ({"jsonrpc": "2.0", "id": 12, "method": ["workspace/symbol"]}, 12),
    ({"jsonrpc": "2.0", "id": 13, "method": "workspace/symbol", "params": "query"}, 13),
    ({"jsonrpc": "2.0", "id": 14, "method": "workspace/symbol", "params": 5}, 14),
    ({"jsonrpc": "2.0", "method": 1, "params": "bar"}, None),  # the spec's own example
    ({"jsonrpc": "2.0", "id": 15}, 15),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "workspace/symbol", "params": {}}, None),
    ({"jsonrpc": "2.0", "id": True, "method": "workspace/symbol", "params": {}}, None),
])
def test_a_malformed_request_is_answered_invalid_request(
        server: RawServer, message: dict[str, Any], answer_id: Any) -> None:
    """JSON-RPC 2.0: a request object that is not valid is -32600 Invalid Request (with its
    id when it has a usable one, else null), not -32603 Internal Error; the server goes on."""
    server.send(frame(message))
    errors = errors_before_next_answer(server)
    assert [(e["id"], e["error"]["code"]) for e in errors] == [(answer_id, -32600)], errors
    assert "Invalid Request" in errors[0]["error"]["message"]


def test_a_malformed_response_from_the_client_is_not_answered(server: RawServer) -> None:
    """A reply is never replied to, however broken (it would echo back and forth)."""
    server.send(frame({"jsonrpc": "2.0", "id": 3, "result": 1, "error": {"code": 1}}))
    server.send(frame({"jsonrpc": "2.0", "result": None}))
    server.send(frame(symbol_request(8)))
    reply = server.reader.response(8, ANSWER_TIMEOUT)
    assert "result" in reply
    assert not [m for m in server.reader.seen if "error" in m], server.reader.seen

"""Reading JSON-RPC messages from the client, resynchronising after framing errors.

pygls 2.1.1 (`pygls.io_.run_async`) reads a header line at a time and only ever acts on
`Content-Length: <digits>\\r\\n`. After a missing, negative, non-numeric or short length
it stays alive but never answers again: every later body runs into the next header line,
which then never matches. A huge length blocks on reading bytes that never come. And a
request whose params do not fit its type is logged and never answered.

Here the stream is cut into messages by `framing.Framer`, which needs no trust in the
client:

* a header is `Content-Length: N` on a line of its own; bytes before it that are not
  headers are garbage, reported and dropped (whitespace is ignored silently);
* a body is the N bytes after the header block. When those bytes are not JSON, or the
  header was unusable, the body is everything up to the next header (or to the point the
  stream goes quiet) and is parsed leniently: a message in it is handled, with a warning
  naming the broken header; otherwise it is reported and answered with a JSON-RPC parse
  error (id null);
* the next header is found even inside a too long body: `Content-Length: …` followed by a
  raw line break cannot occur in valid JSON (strings cannot hold raw line breaks, and
  outside strings the words are not JSON), so a message never swallows the next one.

Every repair or drop is logged (`window/logMessage`), so the server is never alive and
silent; end of input in the middle of a message is logged before the server exits.

pygls is handed each framed message through its protocol's public entry points
(`structure_message`, then `handle_message`) rather than through `start_io` with a stream
that drops broken frames: such a stream could only drop, while a broken body must be
answered (a parse error with id null, an invalid request with its id), a `start_io` stream
is stdio only (TCP is served the same way here), and pygls' reader would parse each header
a second time.

Reading and writing happen on threads of their own (`_pump`, `QueuedWriter`), so neither a
silent client nor a slow reader holds up the event loop, and messages are dispatched as
they are framed (see `serve` for when the loop turns between them).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO, Protocol

from pygls.exceptions import JsonRpcException

from .framing import (
    IDLE_SECONDS,
    INVALID_REQUEST,
    PARSE_ERROR,
    READ_BYTES,
    Frame,
    Framer,
    QueuedWriter,
)


class RpcProtocol(Protocol):
    """What the reader needs of pygls' protocol: its public `structure_message` and
    `handle_message`."""

    def structure_message(self, data: dict[str, Any]) -> Any: ...
    def handle_message(self, message: Any) -> None: ...


class RpcServer(Protocol):
    """What the reader needs of the server (`server.BatonServer`)."""

    @property
    def protocol(self) -> RpcProtocol: ...

    def connect(self, writer: Any) -> None: ...
    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None: ...
    def shutdown(self) -> None: ...


log = logging.getLogger(__name__)

# -- serving ------------------------------------------------------------------------------


def _valid_id(value: Any) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def malformed(raw: dict[str, Any]) -> str | None:
    """Why the JSON-RPC 2.0 object `raw` is neither a request, a notification nor a
    response (JSON-RPC 2.0, section 4 and 5); None when it is one. pygls takes a message
    with a method for a request whatever the method's type and fails inside with an
    internal error (-32603 "Internal Error: 1"): the client sent the mistake, so it gets
    -32600. A null `params` counts as absent, as pygls and clients in the wild treat it."""
    if "method" in raw:
        if not isinstance(raw["method"], str):
            return "the method is not a string"
        params = raw.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return "the params are neither an object nor an array"
        return None
    if "result" in raw and "error" in raw:
        return "a response with both a result and an error"
    if "result" not in raw and "error" not in raw:
        return "neither a method nor a result or an error"
    if "id" not in raw:
        return "a response without an id"
    error = raw.get("error")
    if "error" in raw and not (isinstance(error, dict) and isinstance(error.get("code"), int)
                               and isinstance(error.get("message"), str)):
        return "a response whose error is not an object with a code and a message"
    return None


def dispatch(server: RpcServer, frame: Frame) -> None:
    """Hand one frame to pygls, answering what it would leave unanswered."""
    protocol = server.protocol
    if frame.problem:
        level = logging.WARNING if frame.message is not None else logging.ERROR
        log.log(level, "message framing: %s", frame.problem)
    if frame.message is None:
        if frame.unparsable:
            server.send_error(None, PARSE_ERROR, f"Parse error: {frame.problem}")
        return
    raw = frame.message
    if not isinstance(raw, dict) or raw.get("jsonrpc") != "2.0":
        msg_id = raw.get("id") if isinstance(raw, dict) else None
        log.error("dropped a message that is not JSON-RPC 2.0: %.200s", json.dumps(raw))
        if not isinstance(raw, dict) or "method" in raw or "id" in raw:
            server.send_error(msg_id if _valid_id(msg_id) else None, INVALID_REQUEST,
                                "Invalid Request: not a JSON-RPC 2.0 message")
        return
    if "id" in raw and not _valid_id(raw["id"]) and raw["id"] is not None:
        log.error("dropped a message whose id is neither a number nor a string")
        server.send_error(None, INVALID_REQUEST, "Invalid Request: bad id")
        return
    problem = malformed(raw)
    if problem is not None:
        msg_id = raw.get("id")
        log.error("dropped an invalid JSON-RPC message (%s): %.200s", problem, json.dumps(raw))
        if "method" in raw or not ("result" in raw or "error" in raw):  # never answer a reply
            server.send_error(msg_id if _valid_id(msg_id) else None, INVALID_REQUEST,
                                f"Invalid Request: {problem}")
        return
    try:
        message = protocol.structure_message(raw)
    except JsonRpcException as exc:
        method = raw.get("method")
        log.error("cannot read %s: %s", method or "a response", exc)
        if method is not None and _valid_id(raw.get("id")):
            server.send_error(raw["id"], exc.code, f"{exc.message}: {method}")
        return
    try:
        protocol.handle_message(message)
    except (SystemExit, KeyboardInterrupt):
        raise
    except Exception:
        log.exception("handling %s failed", raw.get("method") or "a response")


async def serve(server: RpcServer, next_chunk: Callable[[], Awaitable[bytes]]) -> None:
    """Read messages until end of input, dispatching each as soon as it is framed."""
    framer = Framer()
    frames: list[Frame] = []
    while True:
        for frame in frames:
            dispatch(server, frame)
            if not isinstance(frame.message, dict) or \
                    frame.message.get("method") != "textDocument/didChange":
                # An async handler starts before the next message is read: a setting it
                # applies holds for the requests behind it, and a `$/cancelRequest` right
                # behind a request finds it running. didChange is handled at once (a plain
                # handler, see `server.BatonProtocol`) and needs no turn of the loop: each
                # turn polls the selector, a system call that gives the GIL away to the
                # checker threads (~0.5 ms per keystroke under a burst of edits).
                await asyncio.sleep(0)
        await asyncio.sleep(0)
        try:
            if framer.pending:
                data = await asyncio.wait_for(next_chunk(), IDLE_SECONDS)
            else:
                data = await next_chunk()
        except TimeoutError:
            frames = framer.idle()
        else:
            if not data:
                for frame in framer.eof():
                    dispatch(server, frame)
                log.info("the client closed the connection; exiting")
                return
            frames = framer.feed(data)


def _pump(stream: BinaryIO, loop: asyncio.AbstractEventLoop,
          queue: asyncio.Queue[bytes]) -> None:
    """Reader thread: blocking reads, each chunk handed to the event loop.

    The pipe's file descriptor is read directly: a daemon thread blocked inside
    `BufferedReader.read1` holds the reader's lock, and interpreter shutdown then aborts
    with "could not acquire lock for <stdin>" (a Fatal Python error, exit 134)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        read = getattr(stream, "read1", stream.read)
    else:
        def read(n: int) -> bytes:
            return os.read(fd, n)
    while True:
        try:
            data = read(READ_BYTES)
        except (OSError, ValueError) as exc:
            loop.call_soon_threadsafe(log.error, "reading from the client failed: %s", exc)
            data = b""
        try:
            loop.call_soon_threadsafe(queue.put_nowait, data)
        except RuntimeError:  # the loop is closed: the server is exiting
            return
        if not data:
            return


def _client_gone() -> None:
    raise SystemExit(0)  # on the event loop: ends `asyncio.run`, then the server


def run_stdio(server: RpcServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve over a pair of byte streams (the client's pipes)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()

        def broken() -> None:
            with contextlib.suppress(RuntimeError):  # the loop may be closed already
                loop.call_soon_threadsafe(_client_gone)

        writer = QueuedWriter(stdout, on_broken=broken)
        server.connect(writer)
        queue: asyncio.Queue[bytes] = asyncio.Queue()
        # A daemon thread: a read blocked on a silent client must not hold up the exit.
        threading.Thread(target=_pump, args=(stdin, loop, queue), name="baton-stdin",
                         daemon=True).start()
        await serve(server, queue.get)

    try:
        asyncio.run(main())
    except BrokenPipeError:
        log.error("the connection to the client is lost; exiting")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        with contextlib.suppress(Exception):
            server.shutdown()


def run_tcp(server: RpcServer, host: str, port: int) -> None:
    """Serve one client at a time on a TCP port (`baton lsp --tcp`)."""

    listening: list[asyncio.Server] = []

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connect(writer)
        await serve(server, lambda: reader.read(READ_BYTES))
        server.shutdown()
        for tcp in listening:  # like pygls: the server ends with its client
            tcp.close()

    async def main() -> None:
        tcp = await asyncio.start_server(connection, host, port)
        listening.append(tcp)
        log.info("serving on %s", ", ".join(str(s.getsockname()) for s in tcp.sockets))
        async with tcp:
            await tcp.serve_forever()

    with contextlib.suppress(KeyboardInterrupt, SystemExit, asyncio.CancelledError):
        asyncio.run(main())



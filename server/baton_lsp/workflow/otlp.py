"""A loopback OTLP/HTTP (JSON) log receiver: how Baton sees what codex spends while it runs.

codex 0.169's `exec --json` gives token counts only in its final `turn.completed`; its
OpenTelemetry log export, pointed here for one attempt (`-c otel.exporter=…`), carries a
`codex.sse_event` record per model response with that response's token counts and model,
batched about once a second. The receiver listens on 127.0.0.1 only, on a port the system
picks, for the length of one agent attempt, answers every request with an empty success,
and hands each log record's attributes to `on_record`; anything it cannot read is dropped
(logged at debug), never an error of the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any

logger = logging.getLogger(__name__)

MAX_BODY = 8 << 20
"""Largest export request read; a bigger one is answered 413 and dropped."""
_HEAD_LIMIT = 64 << 10
_IDLE = 30.0

Record = dict[str, str]
"""One log record's attributes, every value as a string (OTLP's int values come as strings
in JSON too)."""


def records(body: bytes) -> Iterator[Record]:
    """The attributes of every log record in an OTLP `ExportLogsServiceRequest` (JSON)."""
    try:
        data = json.loads(body)
    except ValueError:
        return
    for rl in _list(data, "resourceLogs"):
        for sl in _list(rl, "scopeLogs"):
            for rec in _list(sl, "logRecords"):
                out: Record = {}
                for attr in _list(rec, "attributes"):
                    key, value = attr.get("key"), attr.get("value")
                    if isinstance(key, str) and isinstance(value, dict) and len(value) == 1:
                        (scalar,) = value.values()
                        if isinstance(scalar, (str, int, float, bool)):
                            out[key] = str(scalar)
                yield out


def _list(obj: object, key: str) -> list[dict[str, Any]]:
    value = obj.get(key) if isinstance(obj, dict) else None
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    """A chunked request body (at most MAX_BODY bytes; more is a ValueError)."""
    body = bytearray()
    while True:
        size = int((await asyncio.wait_for(reader.readline(), _IDLE)).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")  # no trailers are sent; the closing CRLF
            return bytes(body)
        if len(body) + size > MAX_BODY:
            raise ValueError("chunked body over the size limit")
        body += await reader.readexactly(size)
        await reader.readexactly(2)


class Receiver:
    """`async with Receiver(on_record) as r:` serves on `r.endpoint` until the block ends."""

    def __init__(self, on_record: Callable[[Record], None]) -> None:
        self._on_record = on_record
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def endpoint(self) -> str:
        """The URL to export logs to."""
        return f"http://127.0.0.1:{self.port}/v1/logs"

    async def __aenter__(self) -> Receiver:
        self._server = await asyncio.start_server(self._client, "127.0.0.1", 0,
                                                  limit=_HEAD_LIMIT)
        self.port = int(self._server.sockets[0].getsockname()[1])
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._server.wait_closed(), 2.0)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while await self._one(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
                TimeoutError, ValueError) as exc:
            logger.debug("usage receiver: %s", exc)
        finally:
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request of a keep-alive connection; False when the peer is done."""
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), _IDLE)
        lines = head.decode("latin-1").split("\r\n")
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in lines[1:] if line)}
        if headers.get("content-encoding", "identity") != "identity":
            await self._reply(writer, 413, close=True)
            return False
        if headers.get("transfer-encoding", "").lower() == "chunked":  # gemini's exporter
            body = await _chunked(reader)
        else:
            length = int(headers.get("content-length") or 0)
            if length > MAX_BODY:
                await self._reply(writer, 413, close=True)
                return False
            body = await reader.readexactly(length)
        if lines[0].startswith("POST "):
            for record in records(body):
                self._on_record(record)
        close = headers.get("connection", "").lower() == "close"
        await self._reply(writer, 200, close=close)
        return not close

    @staticmethod
    async def _reply(writer: asyncio.StreamWriter, status: int, close: bool) -> None:
        reason = {200: "OK", 413: "Payload Too Large"}[status]
        writer.write(f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
                     f"content-length: 2\r\nconnection: {'close' if close else 'keep-alive'}"
                     f"\r\n\r\n{{}}".encode())
        await writer.drain()

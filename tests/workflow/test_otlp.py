"""The loopback OTLP log receiver codex's usage reaches Baton through, over real sockets:
records are read from keep-alive requests, and bad input is answered, never raised."""

from __future__ import annotations

import asyncio
import json

from baton_lsp.workflow import otlp


def export(*records: dict[str, object]) -> bytes:
    """An ExportLogsServiceRequest (JSON) with these attributes per record."""
    def value(v: object) -> dict[str, object]:
        return {"intValue": str(v)} if isinstance(v, int) else {"stringValue": str(v)}

    recs = [{"attributes": [{"key": k, "value": value(v)} for k, v in r.items()]}
            for r in records]
    return json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": recs}]}]}).encode()


async def post(port: int, bodies: list[bytes], raw: bytes | None = None) -> list[bytes]:
    """Send each body as a POST on one keep-alive connection (or `raw` as it is); the
    status lines of the answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    out: list[bytes] = []
    try:
        if raw is not None:
            writer.write(raw)
            await writer.drain()
            out.append((await reader.readline()).strip())
            return out
        for body in bodies:
            writer.write(b"POST /v1/logs HTTP/1.1\r\nhost: x\r\ncontent-type: application/json"
                         b"\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            out.append(head.split(b"\r\n", 1)[0])
            length = int(head.lower().split(b"content-length: ")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
        return out
    finally:
        writer.close()


def test_records_of_every_request_reach_the_callback() -> None:
    async def main() -> list[otlp.Record]:
        seen: list[otlp.Record] = []
        async with otlp.Receiver(seen.append) as rx:
            assert rx.endpoint == f"http://127.0.0.1:{rx.port}/v1/logs"
            first = export({"event.name": "codex.sse_event", "input_token_count": 1000,
                            "model": "gpt-5.5"})
            second = export({"event.name": "a"}, {"event.name": "b"})
            assert await post(rx.port, [first, second]) == [b"HTTP/1.1 200 OK"] * 2
        return seen

    seen = asyncio.run(main())
    assert seen == [{"event.name": "codex.sse_event", "input_token_count": "1000",
                     "model": "gpt-5.5"}, {"event.name": "a"}, {"event.name": "b"}]


def test_bad_input_is_answered_and_dropped() -> None:
    async def main() -> tuple[list[otlp.Record], list[list[bytes]]]:
        seen: list[otlp.Record] = []
        async with otlp.Receiver(seen.append) as rx:
            answers = [
                await post(rx.port, [b"not json", b'{"resourceLogs": 5}',
                                     b'{"resourceLogs": [{"scopeLogs": [{"logRecords": '
                                     b'[{"attributes": [{"key": 1}]}]}]}]}']),
                await post(rx.port, [], raw=b"POST /v1/logs HTTP/1.1\r\ncontent-length: "
                           + str(otlp.MAX_BODY + 1).encode() + b"\r\n\r\n"),
                await post(rx.port, [], raw=b"POST /v1/logs HTTP/1.1\r\ncontent-length: 2\r\n"
                           b"content-encoding: gzip\r\n\r\n{}"),
            ]
            # still serving after all that
            assert await post(rx.port, [export({"k": "v"})]) == [b"HTTP/1.1 200 OK"]
        return seen, answers

    seen, answers = asyncio.run(main())
    assert answers[0] == [b"HTTP/1.1 200 OK"] * 3
    assert answers[1] == answers[2] == [b"HTTP/1.1 413 Payload Too Large"]
    assert seen == [{}, {"k": "v"}]


def test_a_chunked_request_is_read() -> None:
    """gemini's exporter posts with `transfer-encoding: chunked`."""
    body = export({"event.name": "gemini_cli.api_response", "input_token_count": 120})
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part)
                      for part in (body[:10], body[10:])) + b"0\r\n\r\n"

    async def main() -> tuple[list[otlp.Record], list[bytes]]:
        seen: list[otlp.Record] = []
        async with otlp.Receiver(seen.append) as rx:
            answer = await post(rx.port, [], raw=b"POST /v1/logs HTTP/1.1\r\ntransfer-encoding:"
                                b" chunked\r\n\r\n" + chunks)
        return seen, answer

    seen, answer = asyncio.run(main())
    assert answer == [b"HTTP/1.1 200 OK"]
    assert seen == [{"event.name": "gemini_cli.api_response", "input_token_count": "120"}]

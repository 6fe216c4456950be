"""What the fake model APIs share: a quiet threaded server on 127.0.0.1 with a start/stop
lifecycle and request log, and a JSON/SSE request handler. Each fake adds its own routes,
request record and wire format (fake_anthropic, fake_openai)."""

from __future__ import annotations

import itertools
import json
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar

JSON = dict[str, Any]
R = TypeVar("R")


class QuietServer(ThreadingHTTPServer):
    """Threads die with the test; a client hanging up mid-answer is normal, not an error."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeApi(Generic[R]):
    """`with Fake(responder) as api:` serves on `api.url` until the block ends; every
    request is kept in `requests`, the paths nobody scripted in `other_paths`."""

    def __init__(self, responder: Callable[[R], Any], record: Callable[..., R],
                 handler: Callable[[Any], type[JsonHandler]]) -> None:
        self.responder = responder
        self.record = record
        """Builds a request record from (method, path, headers, body)."""
        self.requests: list[R] = []
        self.other_paths: list[str] = []
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ids = itertools.count(1)
        self._server = QuietServer(("127.0.0.1", 0), handler(self))
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()

    def _record(self, req: R) -> None:
        with self._lock:
            self.requests.append(req)

    def _other(self, req: R, method: str, path: str) -> None:
        with self._lock:
            self.requests.append(req)
            self.other_paths.append(f"{method} {path}")

    def _recorded(self, predicate: Callable[[R], bool]) -> list[R]:
        with self._lock:
            return [r for r in self.requests if predicate(r)]


class JsonHandler(BaseHTTPRequestHandler):
    """HTTP/1.1, silent, JSON in and JSON or SSE out; GET and HEAD get an empty object."""

    protocol_version = "HTTP/1.1"
    request_id_header = "request-id"
    api: FakeApi[Any]

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_GET(self) -> None:
        self._other(self.api.record("GET", self.path, dict(self.headers), {}))

    def do_HEAD(self) -> None:
        self._send_json(200, {})

    def _other(self, req: Any) -> None:
        """A path no test scripted: recorded, answered with an empty object."""
        self.api._other(req, self.command, self.path)
        self._send_json(200, {})

    def _body(self) -> JSON:
        """The request's JSON body (`{"_raw": text}` when it is not JSON)."""
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return {"_raw": raw.decode("utf-8", "replace")}
        return body if isinstance(body, dict) else {"_raw": raw.decode("utf-8", "replace")}

    def _send_json(self, status: int, payload: JSON,
                   headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header(self.request_id_header, "req_fake")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _start_sse(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True

    def _sse(self, event: JSON) -> None:
        self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()

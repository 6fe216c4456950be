"""The early start: `initialize` answered and the first opened documents checked before pygls
and lsprotocol are imported, then the server takes the connection over.

Importing pygls and lsprotocol is most of the server's start-up, and a client shows nothing
until it has its first diagnostics. So the first messages are read here, on the main thread,
with the pygls-free layers (`framing`, `wire`, `session`): `initialize` is answered with the
capabilities pygls would build (`capabilities`), each `textDocument/didOpen` is checked by
the core and its diagnostics published (or kept for a pull client's `textDocument/diagnostic`,
which is answered here too). The first message of any other kind, a framing problem or the
end of input end this phase; so does `QUIET_SECONDS` without a message, after the workspaces
were indexed here if the result cache holds every file (`_Reader.index`). Log records go to
the client as `window/logMessage` meanwhile.

The server then handles every message read here again, in order, for its effects (pygls'
workspace and documents, the `initialized` work): its answer to `initialize` is not sent a
second time (`server.BatonProtocol.answered`), and a document checked here is not published
again while its findings are unchanged (the `Session` with their results is taken over).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, BinaryIO

from .capabilities import initialize_result
from .framing import READ_BYTES, Frame, Framer, QueuedWriter
from .session import INDEXED, DocResult, Session
from .wire import (
    CLIENT_LOG_FORMAT,
    diagnostic_json,
    log_message,
    path_to_uri,
    publish_diagnostics,
    uri_path,
)

if TYPE_CHECKING:
    from ..model.base import Finding

log = logging.getLogger(__name__)

QUIET_SECONDS = 0.02
"""How long after its last message the early start waits for another before handing over:
editors send `initialized` and the visible documents' `didOpen` right after `initialize`."""
ENV_SWITCH = "BATON_LSP_EARLY"
"""Set to 0 to start pygls first (to compare, or if a client ever disagrees with this)."""


class EarlySession(Session):
    """A `Session` with the documents opened so far and configuration errors to show later
    (the server shows them once it can)."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: dict[str, str] = {}
        self.config_messages: list[str] = []

    def open_text(self, path: str) -> str | None:
        return self.texts.get(path)

    def config_error_found(self, message: str) -> None:
        self.config_messages.append(message)


@dataclass
class Start:
    """What the early start hands the server."""

    writer: QueuedWriter
    framer: Framer
    """Holds the bytes read after the last whole message."""
    session: EarlySession
    frames: list[Frame] = field(default_factory=list)
    """Every message the server must handle, in the order they came."""
    answered: dict[int | str, Any] = field(default_factory=dict)
    """Requests answered here (id → result), for the server to recognise."""


def enabled() -> bool:
    """Only where a pipe can be waited on with a timeout (`select` on Windows takes sockets
    only), and unless switched off."""
    return os.name == "posix" and os.environ.get(ENV_SWITCH, "1") != "0"


def _frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()  # ASCII: the length counts bytes and characters
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _well_formed_initialize(params: Any) -> bool:
    """The fields this start reads have the types LSP gives them; anything else is left to
    pygls, which answers with an error."""
    if not isinstance(params, dict) or not isinstance(params.get("capabilities"), dict):
        return False
    process_id = params.get("processId")
    if process_id is not None and (not isinstance(process_id, int) or
                                   isinstance(process_id, bool)):
        return False
    for key in ("rootUri", "rootPath"):
        if params.get(key) is not None and not isinstance(params[key], str):
            return False
    folders = params.get("workspaceFolders")
    return folders is None or (isinstance(folders, list) and all(
        isinstance(f, dict) and isinstance(f.get("uri"), str) for f in folders))


def _pull(params: dict[str, Any]) -> bool:
    """Whether the client pulls diagnostics (then none are pushed: `diagnostics.publish`)."""
    text_document = params["capabilities"].get("textDocument")
    return isinstance(text_document, dict) and bool(text_document.get("diagnostic"))


class _Reader:
    def __init__(self, stdin: BinaryIO, stdout: BinaryIO, session: EarlySession) -> None:
        self.fd = stdin.fileno()
        self.start = Start(QueuedWriter(stdout), Framer(), session)
        self.session = session
        self.pull = False
        self.initialized = False

    def run(self) -> Start:
        timeout: float | None = None  # the client speaks first
        while True:
            ready, _, _ = select.select([self.fd], [], [], timeout)
            if not ready:
                if not self.start.framer.pending:
                    self.index()
                return self.start
            try:
                data = os.read(self.fd, READ_BYTES)
            except OSError:
                return self.start  # the server's reader meets the same error and reports it
            if not data:
                return self.start  # and its reader sees the end of input again
            frames = self.start.framer.feed(data)
            for i, frame in enumerate(frames):
                try:
                    handled = self.handle(frame)
                except Exception:  # never a lost message: the server handles it (again)
                    log.exception("the early start failed on a message; the server takes over")
                    handled = False
                if not handled:
                    kept = any(f is frame for f in self.start.frames)
                    self.start.frames.extend(frames[i + 1 if kept else i:])
                    return self.start
            if self.initialized:
                timeout = QUIET_SECONDS

    def handle(self, frame: Frame) -> bool:
        """Handle one message; False when the server must take over from this one."""
        message = frame.message
        if frame.problem or not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method, params, msg_id = message.get("method"), message.get("params"), message.get("id")
        if method == "initialize" and not self.initialized:
            if not (isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
                    and _well_formed_initialize(params)):
                return False
            return self.initialize(frame, msg_id, params)
        if not self.initialized:
            return False
        if method == "initialized" and "id" not in message:
            self.start.frames.append(frame)
            return True
        if method == "textDocument/didOpen" and "id" not in message:
            self.start.frames.append(frame)  # the server opens it too, for its features
            self.open(params)
            return True
        if method == "textDocument/diagnostic" and isinstance(msg_id, (int, str)):
            return self.diagnostic(msg_id, params)
        return False

    def initialize(self, frame: Frame, msg_id: int | str, params: dict[str, Any]) -> bool:
        result = initialize_result(params)
        self.start.writer.write(_frame({"jsonrpc": "2.0", "id": msg_id, "result": result}))
        self.start.answered[msg_id] = result
        self.start.frames.append(frame)
        self.pull = _pull(params)
        self.initialized = True
        # Then the settings: reading them may import the configuration model.
        folders = [f["uri"] for f in params.get("workspaceFolders") or []]
        self.session.initialize(params.get("initializationOptions"), folders,
                                params.get("rootUri"), params.get("rootPath"))
        return True

    def open(self, params: Any) -> None:
        document = params.get("textDocument") if isinstance(params, dict) else None
        if not isinstance(document, dict):
            return
        uri, text, version = document.get("uri"), document.get("text"), document.get("version")
        path = uri_path(uri) if isinstance(uri, str) else None
        if path is None or not isinstance(text, str) or not isinstance(version, int):
            return
        session = self.session
        try:
            session.texts[path] = text
            session.index_for(path).set_overlay(path, text)
            findings = session.check(path)
            if self.pull:
                session.results[path] = DocResult(version, findings)
            else:
                self.publish(path, uri, version, findings)
        except Exception:  # the server checks it again and reports what is wrong
            log.exception("checking %s at start-up failed", path)
            session.results.pop(path, None)
            session.published.discard(path)

    def publish(self, path: str, uri: str, version: int | None,
                findings: list[Finding]) -> None:
        """Push `path`'s findings and keep them as its result (`diagnostics.publish`)."""
        lines = self.session.lines_of(path)
        diagnostics = [diagnostic_json(f, lines, self.session.lines_of) for f in findings]
        self.session.results[path] = DocResult(version, findings)
        self.session.published.add(path)
        self.start.writer.write(_frame(publish_diagnostics(uri, version, diagnostics)))

    def index(self) -> None:
        """Nothing more came: when the result cache holds every file of the workspaces, their
        findings are published here, before pygls loads, and the server's indexing has
        nothing left to do. Otherwise the server indexes,
        with progress; the walk and the hashes taken here are kept for it."""
        session = self.session
        if self.pull or not session.use_cache or not session.folders:
            return
        try:
            walked = session.walk_workspaces()
            closed = [item for item in walked if item[1] not in session.texts]
            cache = session.result_cache()
            if cache is None:
                return
            cache.new_pass()
            hits, todo = session.cached_findings(closed)
            if todo:
                return
            for path, findings in hits.items():
                if findings:
                    self.publish(path, path_to_uri(path), None, findings)
                else:
                    session.results[path] = DocResult(None, findings)
            cache.save()
        except Exception:  # the server indexes (again) and reports what is wrong
            log.exception("indexing at start-up failed")
            return
        session.indexed = tuple(session.folders)
        log.info(INDEXED, len(walked), len(session.discover_roots()), len(hits))

    def diagnostic(self, msg_id: int | str, params: Any) -> bool:
        """A pull for a document checked here, at the version checked: answered as the
        server's `textDocument/diagnostic` would (a full report)."""
        document = params.get("textDocument") if isinstance(params, dict) else None
        uri = document.get("uri") if isinstance(document, dict) else None
        path = uri_path(uri) if isinstance(uri, str) else None
        result = self.session.results.get(path) if path is not None else None
        if path is None or result is None or path not in self.session.texts:
            return False
        try:
            lines = self.session.lines_of(path)
            items = [diagnostic_json(f, lines, self.session.lines_of) for f in result.findings]
        except Exception:
            log.exception("reporting %s at start-up failed", path)
            return False
        self.start.writer.write(_frame({"jsonrpc": "2.0", "id": msg_id,
                                        "result": {"kind": "full", "items": items}}))
        return True


class _ClientLog(logging.Handler):
    """Log records to the client as `window/logMessage`, until the server's handler is set
    up (`app.setup_logging`)."""

    def __init__(self, writer: QueuedWriter) -> None:
        super().__init__()
        self.writer = writer
        self.setFormatter(logging.Formatter(CLIENT_LOG_FORMAT))

    def emit(self, record: logging.LogRecord) -> None:
        with contextlib.suppress(Exception):  # logging must never take the start down
            self.writer.write(_frame(log_message(record.levelno, self.format(record))))


def run(stdin: BinaryIO, stdout: BinaryIO, session: EarlySession) -> Start:
    """Serve the first messages (see the module docstring); returns what the server takes
    over. Meanwhile the `baton_lsp` logger writes to the client itself."""
    started = time.perf_counter()
    reader = _Reader(stdin, stdout, session)
    logger = logging.getLogger("baton_lsp")
    handler = _ClientLog(reader.start.writer)
    logger.addHandler(handler)
    try:
        start = reader.run()
        log.debug("early start: %d message(s) for the server after %.0f ms",
                  len(start.frames), (time.perf_counter() - started) * 1000)
    finally:
        logger.removeHandler(handler)
    return start

"""The Baton language server object: pygls' server plus the `Session` (workspaces,
configuration, findings cache).

Handlers live in feature modules; this module owns the state they share. Validation runs
on a small thread pool against the workspace index (which holds editor overlays), never on
the event loop, and results are published only if the document version is still current.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from .. import __version__
from .capabilities import SERVER_NAME
from .convert import apply_change, path_to_uri, to_diagnostic
from .framing import QueuedWriter
from .scheduling import CheckRunner
from .session import ClientSettings as ClientSettings
from .session import DocResult as DocResult
from .session import Session
from .session import config_finding as config_finding
from .wire import uri_path as uri_path

if TYPE_CHECKING:  # the core loads on first use, so `initialize` is answered quickly
    from ..model.base import Finding
    from .early import Start

log = logging.getLogger(__name__)

CHECK_SLOTS = 2
"""Document checks running at once on the pool."""


class BatonProtocol(LanguageServerProtocol):
    """pygls 2.1.1 keeps the future of every notification whose handler is a generator
    (its built-in didOpen/didChange wrappers are) in `_request_futures` under a random id
    and never removes it: about 1 KB per keystroke, +26 % RSS over 10,000 edits. Finished
    notification futures are noted and dropped before the next notification is handled
    (not inside the callback: pygls cancels futures while iterating over that dict)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._finished: collections.deque[Any] = collections.deque()
        self.answered: dict[int | str, Any] = {}
        """Requests the early start answered (id → the result it sent): handled again here
        for their effects, their second answer is not sent."""

    def _check_handler_result(self, future: Any) -> None:
        super()._check_handler_result(future)
        self._finished.append(future)  # may run on a worker thread; deque.append is atomic

    def handle_message(self, message: Any) -> None:
        # The hot path of an edit burst skips pygls' dispatch, whose isinstance checks
        # against typing Protocols cost ~60 µs a message.
        if type(message) is types.DidChangeTextDocumentNotification and not self._shutdown:
            self._did_change(message.params)
            return
        if type(message) is types.InitializeRequest:
            general = message.params.capabilities.general
            if general is not None:  # Baton's columns are UTF-16 (see `wire`)
                general.position_encodings = None
        super().handle_message(message)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        sent = self.answered.pop(msg_id, None) if msg_id is not None else None
        if sent is None:
            super()._send_response(msg_id, result, error)
            return
        mine = json.loads(json.dumps(result, default=self._serialize_message))
        if error is not None or mine != sent:
            log.error("the early start's answer to request %s differs from the server's: "
                      "sent %s, the server has %s", msg_id, json.dumps(sent), json.dumps(mine))

    def _handle_notification(self, method_name: str, params: Any) -> None:
        if method_name == types.TEXT_DOCUMENT_DID_CHANGE:
            self._did_change(params)
            return
        if self._finished:
            done = set()
            while self._finished:
                done.add(id(self._finished.popleft()))
            for key, pending in list(self._request_futures.items()):
                if id(pending) in done:
                    del self._request_futures[key]
        super()._handle_notification(method_name, params)

    def _did_change(self, params: types.DidChangeTextDocumentParams) -> None:
        """What pygls' didChange does (apply the changes, then call the feature's handler),
        but with LSP's lines and without its generator machinery.

        pygls finds lines with `str.splitlines`, which also breaks at U+2028, U+0085 and
        form feeds: every edit below such a character landed a line off. And per keystroke
        it made two `uuid4` (system calls, each giving the GIL to the checker threads),
        two Futures and a leaked entry."""
        uri = params.text_document.uri
        doc = self.workspace.text_documents.get(unquote(uri))
        if doc is None:
            log.warning("didChange for %s, which is not open: ignored", uri)
            return
        source = doc.source
        for change in params.content_changes:
            source = apply_change(source, change)
        self.workspace.put_text_document(types.TextDocumentItem(
            uri=uri, language_id=doc.language_id or "", version=params.text_document.version,
            text=source))
        handler = self.fm.features.get(types.TEXT_DOCUMENT_DID_CHANGE)
        if handler is not None:
            try:
                handler(params)
            except Exception:
                log.exception("handling textDocument/didChange failed")

    def send_message(self, message: dict[str, Any]) -> None:
        """Send a message already in its JSON form (see `wire`): no cattrs on the way."""
        self._send_data(message)

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """A JSON-RPC error response; `msg_id` None when the request's id is unknowable
        (a body that is not JSON), as JSON-RPC 2.0 prescribes."""
        if msg_id is not None and self.answered.pop(msg_id, None) is not None:
            log.error("request %s was answered at start-up, but the server cannot read it: "
                      "%s", msg_id, message)
            return
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": message}})


class BatonServer(LanguageServer, Session):
    """pygls server plus the state every feature module shares (`Session`)."""

    def __init__(self) -> None:
        super().__init__(SERVER_NAME, __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=BatonProtocol)
        Session.__init__(self)
        self.checks_changed = False
        """A check changed some file's results since the queue last drained (pull mode)."""
        # One worker more than the check slots: a request's work never waits for a check.
        self.executor = ThreadPoolExecutor(max_workers=CHECK_SLOTS + 1,
                                           thread_name_prefix="baton-check")
        self.checks = CheckRunner(CHECK_SLOTS)
        """Documents waiting to be checked, newest edit first (see `scheduling`)."""
        self.stopping = False
        """The client asked for `shutdown`: the executor takes no more checks."""
        self.parent_watch: asyncio.Future[None] | None = None
        self.config_error_files: set[str] = set()
        self.preflight_task: asyncio.Future[None] | None = None
        self.preflight_shown = ""
        self.event_loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread = threading.get_ident()

    def carry_on(self, start: Start) -> None:
        """Take over from the early start: its session, its writer, the answers it sent."""
        self.take_over(start.session)
        self.protocol.answered.update(start.answered)
        self.protocol.set_writer(start.writer)

    def flush_writer(self, timeout: float) -> None:
        """Wait (at most `timeout` s) until what is queued for the client was written (by
        the stdio writer thread; a TCP stream is written as it goes)."""
        writer = getattr(self.protocol, "writer", None)
        if isinstance(writer, QueuedWriter):
            writer.flush(timeout)

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None,
                 start: Start | None = None) -> None:
        """Serve over stdio with Baton's reader, which resynchronises after framing errors
        (pygls' own stops answering for good, see `transport`); `start`: carry on from the
        early start."""
        from .transport import run_stdio

        run_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer, start)

    def start_tcp(self, host: str, port: int) -> None:
        from .transport import run_tcp

        run_tcp(self, host, port)

    def on_loop(self, fn: Any, *args: Any) -> None:
        """Call `fn` on the event loop: checker threads must not write to the transport."""
        if threading.get_ident() == self.loop_thread or self.event_loop is None:
            fn(*args)
        else:
            self.event_loop.call_soon_threadsafe(fn, *args)

    # -- capabilities ---------------------------------------------------------------------

    @property
    def pull_diagnostics(self) -> bool:
        td = self.client_capabilities.text_document
        return bool(td and td.diagnostic)

    @property
    def refresh_support(self) -> bool:
        ws = self.client_capabilities.workspace
        return bool(ws and ws.diagnostics and ws.diagnostics.refresh_support)

    @property
    def code_lens_refresh(self) -> bool:
        ws = self.client_capabilities.workspace
        return bool(ws and ws.code_lens and ws.code_lens.refresh_support)

    # -- documents ------------------------------------------------------------------------

    def open_document(self, uri: str) -> Any:
        """The editor's document for `uri`, or None if it is not open. pygls keys open
        documents by the unquoted URI: looked up as sent (`%20`, `%C3%A9`), nothing was
        found, and diagnostics lost their version."""
        return self.workspace.text_documents.get(unquote(uri))

    def open_text(self, path: str) -> str | None:
        doc = self.open_document(path_to_uri(path))
        return doc.source if doc is not None else None

    def config_error_found(self, message: str) -> None:
        self.on_loop(self.window_show_message, types.ShowMessageParams(
            type=types.MessageType.Error,
            message=f"Baton: invalid configuration, using defaults until it is fixed: {message}"))

    def open_version(self, uri: str) -> int | None:
        doc = self.open_document(uri)
        return doc.version if doc is not None else None

    def diagnostics_for(self, path: str, findings: list[Finding]) -> list[types.Diagnostic]:
        lines = self.lines_of(path)
        return [to_diagnostic(f, lines, self.lines_of) for f in findings]


def guard(default: Any = None) -> Any:
    """Isolate a feature handler: an exception is logged and the client gets `default`.

    One failing feature (a hover on an odd document, a lens on a half-typed plan) must never
    take down the others or the server; the log names the handler so it can be reported.
    """
    import inspect

    def wrap(fn: Any) -> Any:
        if inspect.iscoroutinefunction(fn):
            @functools.wraps(fn)
            async def run_async(ls: BatonServer, params: Any) -> Any:
                try:
                    return await fn(ls, params)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    log.exception("%s failed", fn.__name__)
                    return default() if callable(default) else default
            return run_async

        @functools.wraps(fn)
        def run(ls: BatonServer, params: Any) -> Any:
            try:
                return fn(ls, params)
            except Exception:
                log.exception("%s failed", fn.__name__)
                return default() if callable(default) else default
        return run

    return wrap

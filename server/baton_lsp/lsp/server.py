"""The Baton language server: pygls' `LanguageServer` on its public API, holding one
`Session` (documents, workspaces, configuration, results) that every handler reaches as
`ls.session`.

One dispatch place: pygls' protocol. Feature modules register their handlers with
`server.feature`/`server.command` (`app.FEATURES`), and pygls builds the `initialize`
answer's capabilities from exactly those registrations, so there is no second list.
`BatonProtocol` replaces three of pygls' built-in handlers (didOpen, didChange, didClose)
through the protocol's public extension point, an `lsp_method` of the protocol class:
they update the session's document store (pygls' `Workspace` holds no documents, see
`session`) and then call the feature registered for the method, as pygls' own do. They are
plain functions, not generators: pygls 2.1.1 keeps the future of every generator
notification handler for good (its built-in didOpen/didChange are ones: about 1 KB per
keystroke, +26 % RSS over 10,000 edits); a plain handler's future is never stored.

Validation runs on a small thread pool against the workspace index (which holds editor
overlays), never on the event loop, and results are published only if the document
version is still current.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, BinaryIO, Generic, Protocol, TypeVar, TypeVarTuple, overload

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method

from .. import __version__
from .convert import converter, to_diagnostic
from .framing import QueuedWriter
from .scheduling import CheckRunner
from .session import ClientSettings as ClientSettings
from .session import DocResult as DocResult
from .session import Session
from .session import config_finding as config_finding
from .transport import run_stdio, run_tcp
from .wire import uri_path as uri_path

if TYPE_CHECKING:  # the core loads on first use, so `initialize` is answered quickly
    from collections.abc import Awaitable, Callable, Coroutine, Generator

    from cattrs import Converter

    from ..model.base import Finding

log = logging.getLogger(__name__)

SERVER_NAME = "baton-lsp"
CHECK_SLOTS = 2
"""Document checks running at once on the pool."""


class Writer(Protocol):
    """What the server writes messages to: a `framing.QueuedWriter` (stdio) or an asyncio
    `StreamWriter` (TCP)."""

    def write(self, data: bytes) -> Any: ...


class BatonProtocol(LanguageServerProtocol):
    """pygls' protocol with Baton's built-in handlers (see the module docstring)."""

    def __init__(self, server: BatonServer, converter: Converter) -> None:
        super().__init__(server, converter)
        self.baton = server

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams
                       ) -> Generator[Any, Any, types.InitializeResult]:
        """pygls' initialize with the client's position encodings left out: Baton's columns
        are UTF-16 (see `wire`), LSP's default that every client must support."""
        general = params.capabilities.general
        if general is not None:
            general.position_encodings = None
        return (yield from super().lsp_initialize(params))

    def document_event(self, method: str, params: object, update: Callable[[Session], object]
                       ) -> None:
        """`update` the session's document store, then run the feature registered for
        `method` (unless `update` found no document of ours); a failure is logged."""
        try:
            if update(self.baton.session) is None:
                return
            handler = self.fm.features.get(method)
            if handler is not None:
                handler(params)
        except Exception:
            log.exception("handling %s failed", method)

    @lsp_method(types.TEXT_DOCUMENT_DID_OPEN)
    def lsp_text_document__did_open(self, params: types.DidOpenTextDocumentParams) -> None:
        doc = params.text_document
        self.document_event(types.TEXT_DOCUMENT_DID_OPEN, params, lambda session: session.open(
            doc.uri, doc.text, doc.version, doc.language_id))

    @lsp_method(types.TEXT_DOCUMENT_DID_CHANGE)
    def lsp_text_document__did_change(self, params: types.DidChangeTextDocumentParams
                                      ) -> None:
        doc = params.text_document
        self.document_event(types.TEXT_DOCUMENT_DID_CHANGE, params, lambda session: session.change(
            doc.uri, doc.version, params.content_changes))

    @lsp_method(types.TEXT_DOCUMENT_DID_CLOSE)
    def lsp_text_document__did_close(self, params: types.DidCloseTextDocumentParams) -> None:
        self.document_event(types.TEXT_DOCUMENT_DID_CLOSE, params,
                            lambda session: session.close(params.text_document.uri))


class BatonServer(LanguageServer):
    """pygls server plus the `Session` every feature module shares."""

    def __init__(self) -> None:
        self.session = Session(self.config_error_found)
        super().__init__(SERVER_NAME, __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=BatonProtocol, converter_factory=converter)
        self.writer: Writer | None = None
        """Where messages go (`connect`); pygls' protocol writes to the same."""
        self.checks_changed = False
        """A check changed some file's results since the queue last drained (pull mode)."""
        # One worker more than the check slots: a request's work never waits for a check.
        self.executor = ThreadPoolExecutor(max_workers=CHECK_SLOTS + 1,
                                           thread_name_prefix="baton-check")
        self.checks = CheckRunner(CHECK_SLOTS)
        """Documents waiting to be checked, newest edit first (see `scheduling`)."""
        self.stopping = threading.Event()
        """Set when the client asks for `shutdown`: the executor takes no more checks. An event,
        not a flag, so a check reads it afresh after each `await` (it may be set meanwhile)."""
        self.parent_watch: asyncio.Future[None] | None = None
        self.config_error_files: set[str] = set()
        self.preflight_task: asyncio.Future[None] | None = None
        self.preflight_shown = ""
        self.event_loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread = threading.get_ident()
        self.run_follower: object = None
        """The one run follower, `runs.Follower` (`runs.follower` makes it when first asked;
        typed `object`: this module may not import `runs`, which imports it)."""

    # -- the connection -------------------------------------------------------------------

    def connect(self, writer: Any) -> None:
        """Write to `writer` from now on (the server's messages and pygls' answers)."""
        self.writer = writer
        self.protocol.set_writer(writer)

    def send_json(self, message: dict[str, Any]) -> None:
        """Send a message already in its JSON form (see `wire`): no cattrs on the way."""
        if self.writer is None:
            log.error("no connection to send %s on", message.get("method") or "an answer")
            return
        body = json.dumps(message).encode()  # ASCII: the length counts bytes and characters
        self.writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """A JSON-RPC error response; `msg_id` None when the request's id is unknowable
        (a body that is not JSON), as JSON-RPC 2.0 prescribes."""
        self.send_json({"jsonrpc": "2.0", "id": msg_id,
                        "error": {"code": code, "message": message}})

    def flush_writer(self, timeout: float) -> None:
        """Wait (at most `timeout` s) until what is queued for the client was written (by
        the stdio writer thread; a TCP stream is written as it goes)."""
        if isinstance(self.writer, QueuedWriter):
            self.writer.flush(timeout)

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio with Baton's reader, which resynchronises after framing errors
        (pygls' own stops answering for good, see `transport`)."""
        run_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    def start_tcp(self, host: str, port: int) -> None:
        run_tcp(self, host, port)

    def on_loop(self, fn: Callable[[*Ts], object], *args: *Ts) -> None:
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

    @property
    def create_files(self) -> bool:
        """Whether the client applies a workspace edit that creates a file: it announces
        `documentChanges` and the `create` resource operation (LSP 3.13)."""
        ws = self.client_capabilities.workspace
        edit = ws.workspace_edit if ws else None
        return bool(edit and edit.document_changes and edit.resource_operations
                    and types.ResourceOperationKind.Create in edit.resource_operations)

    # -- the session's reports ------------------------------------------------------------

    def config_error_found(self, message: str) -> None:
        self.on_loop(self.window_show_message, types.ShowMessageParams(
            type=types.MessageType.Error,
            message=f"Baton: invalid configuration, using defaults until it is fixed: {message}"))

    def diagnostics_for(self, path: str, findings: list[Finding]) -> list[types.Diagnostic]:
        lines = self.session.lines_of(path)
        return [to_diagnostic(f, lines, self.session.lines_of) for f in findings]


Params = TypeVar("Params")
Result = TypeVar("Result")
Default = TypeVar("Default")
Ts = TypeVarTuple("Ts")


def _none() -> None:
    return None


class Guard(Generic[Default]):
    """Isolate a feature handler: an exception is logged and the client gets `default()`.

    One failing feature (a hover on an odd document, a lens on a half-typed plan) must never
    take down the others or the server; the log names the handler so it can be reported.
    Typed, so that mypy checks every handler through it: the handler keeps its parameter
    type and its result widens by the default's (pygls' `feature` and `command` keep the
    type of what they decorate).
    """

    def __init__(self, default: Callable[[], Default]) -> None:
        self.default = default

    def __call__(self, fn: Callable[[BatonServer, Params], Result]
                 ) -> Callable[[BatonServer, Params], Result | Default]:
        @functools.wraps(fn)
        def run(ls: BatonServer, params: Params) -> Result | Default:
            try:
                return fn(ls, params)
            except Exception:
                log.exception("%s failed", fn.__name__)
                return self.default()
        return run


class AsyncGuard(Generic[Default]):
    """`Guard` for a coroutine handler: its failure surfaces when it is awaited, not when it
    is called, and a cancellation is no failure."""

    def __init__(self, default: Callable[[], Default]) -> None:
        self.default = default

    def __call__(self, fn: Callable[[BatonServer, Params], Awaitable[Result]]
                 ) -> Callable[[BatonServer, Params], Coroutine[object, object, Result | Default]]:
        @functools.wraps(fn)
        async def run(ls: BatonServer, params: Params) -> Result | Default:
            try:
                return await fn(ls, params)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed", fn.__name__)
                return self.default()
        return run


@overload
def guard(default: None = None) -> Guard[None]: ...
@overload
def guard(default: Callable[[], Default]) -> Guard[Default]: ...
def guard(default: Callable[[], Default] | None = None) -> Guard[Default] | Guard[None]:
    """A `Guard` answering `default()` on a failure, None without a default."""
    return Guard(_none) if default is None else Guard(default)


@overload
def guard_async(default: None = None) -> AsyncGuard[None]: ...
@overload
def guard_async(default: Callable[[], Default]) -> AsyncGuard[Default]: ...
def guard_async(default: Callable[[], Default] | None = None
                ) -> AsyncGuard[Default] | AsyncGuard[None]:
    """`guard` for an `async def` handler."""
    return AsyncGuard(_none) if default is None else AsyncGuard(default)

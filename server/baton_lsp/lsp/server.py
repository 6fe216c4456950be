"""The Baton language server object: workspaces, configuration, findings cache.

Handlers live in feature modules; this module owns the state they share. Validation runs
on a small thread pool against the workspace index (which holds editor overlays), never on
the event loop, and results are published only if the document version is still current.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import logging
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from .. import __version__
from ..paths import norm
from .convert import apply_change, path_to_uri, to_diagnostic, uri_to_path
from .scheduling import CheckRunner

if TYPE_CHECKING:  # the core loads on first use, so `initialize` is answered quickly
    from ..model.base import Finding
    from ..model.config import BatonConfig
    from ..rules.cache import ResultCache
    from ..workspace.index import WorkspaceIndex

log = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_MS = 150
OVERSIZE_PREFIX = 65536
"""What of a document over the size limit features still see (its finding is on line 0)."""
CHECK_SLOTS = 2
"""Document checks running at once on the pool."""


@functools.cache
def _config_keys() -> frozenset[str]:
    from ..model.config import BatonConfig

    fields = BatonConfig.model_fields
    return frozenset(fields) | {f.alias for f in fields.values() if f.alias} | {
        k.replace("_", "-") for k in fields}


def _kebab(key: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", key).lower().replace("_", "-")


@dataclass
class ClientSettings:
    """The `baton` section of the editor settings, split into config overrides and server
    options. Unknown keys (client-only settings such as the interpreter) are ignored."""

    overrides: dict[str, Any] = field(default_factory=dict)
    debounce_ms: int = DEFAULT_DEBOUNCE_MS
    trusted: bool = False
    log_level: str | None = None

    @classmethod
    def from_raw(cls, raw: Any) -> ClientSettings:
        out = cls()
        if not isinstance(raw, dict):
            return out
        flat: dict[str, Any] = {}
        for key, value in raw.items():
            if isinstance(value, dict) and key in ("rules", "diagnostics", "server", "lint"):
                for k2, v2 in value.items():
                    flat[_kebab(k2)] = v2
            else:
                flat[_kebab(key)] = value
        for key, value in flat.items():
            if value is None:
                continue
            if key in ("debounce", "debounce-ms"):
                try:
                    out.debounce_ms = max(0, int(value))
                except (TypeError, ValueError):
                    log.warning("baton.debounce must be a number of milliseconds, got %r", value)
            elif key in ("trust-workspace", "trusted"):
                out.trusted = bool(value)
            elif key == "log-level":
                out.log_level = str(value)
            elif key in _config_keys():
                if value in ([], {}, "") and key in ("select", "ignore", "severity", "exclude"):
                    continue  # an empty editor default must not override the project file
                out.overrides[key] = value
        return out


class BatonProtocol(LanguageServerProtocol):
    """pygls 2.1.1 keeps the future of every notification whose handler is a generator
    (its built-in didOpen/didChange wrappers are) in `_request_futures` under a random id
    and never removes it: about 1 KB per keystroke, +26 % RSS over 10,000 edits. Finished
    notification futures are noted and dropped before the next notification is handled
    (not inside the callback: pygls cancels futures while iterating over that dict)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._finished: collections.deque[Any] = collections.deque()

    def _check_handler_result(self, future: Any) -> None:
        super()._check_handler_result(future)
        self._finished.append(future)  # may run on a worker thread; deque.append is atomic

    def handle_message(self, message: Any) -> None:
        # The hot path of an edit burst skips pygls' dispatch, whose isinstance checks
        # against typing Protocols cost ~60 µs a message.
        if type(message) is types.DidChangeTextDocumentNotification and not self._shutdown:
            self._did_change(message.params)
            return
        super().handle_message(message)

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

    def send_error(self, msg_id: int | str | None, code: int, message: str) -> None:
        """A JSON-RPC error response; `msg_id` None when the request's id is unknowable
        (a body that is not JSON), as JSON-RPC 2.0 prescribes."""
        self._send_data({"jsonrpc": "2.0", "id": msg_id,
                         "error": {"code": code, "message": message}})


@dataclass
class DocResult:
    version: int | None
    findings: list[Finding]


class BatonServer(LanguageServer):
    """pygls server plus the state every feature module shares."""

    def __init__(self) -> None:
        super().__init__("baton-lsp", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         protocol_cls=BatonProtocol)
        self.settings = ClientSettings()
        self.indexes: dict[str, WorkspaceIndex] = {}
        self.indexes_lock = threading.Lock()
        self.config_errors: dict[str, tuple[str, str]] = {}
        self.results: dict[str, DocResult] = {}
        self.published: set[str] = set()
        """Paths whose diagnostics the client was sent (push mode)."""
        self.checks_changed = False
        """A check changed some file's results since the queue last drained (pull mode)."""
        # One worker more than the check slots: a request's work never waits for a check.
        self.executor = ThreadPoolExecutor(max_workers=CHECK_SLOTS + 1,
                                           thread_name_prefix="baton-check")
        self.checks = CheckRunner(CHECK_SLOTS)
        """Documents waiting to be checked, newest edit first (see `scheduling`)."""
        self._roots: dict[str, Path] = {}
        self._discovered: tuple[tuple[Path, ...], list[Path]] | None = None
        self.folders: list[Path] = []
        self.initialization_options: dict[str, Any] = {}
        self.parent_watch: asyncio.Future[None] | None = None
        self.config_error_files: set[str] = set()
        self.preflight_findings: dict[str, list[Finding]] = {}
        self.preflight_task: asyncio.Future[None] | None = None
        self.preflight_shown = ""
        self.event_loop: asyncio.AbstractEventLoop | None = None
        self.loop_thread = threading.get_ident()
        self.cache_dir: Path | None = None
        """Where the result cache lives (`baton lsp --cache-dir`; None: the default)."""
        self.use_cache = True
        self._result_cache: ResultCache | None = None

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio with Baton's reader, which resynchronises after framing errors
        (pygls' own stops answering for good, see `transport`)."""
        from .transport import run_stdio

        run_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

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

    # -- workspaces -----------------------------------------------------------------------

    def root_for(self, path: str) -> Path:
        """The workspace root of `path`, remembered per directory: finding it walks up the
        tree with a `stat` per level, and every edit, publication and request asks."""
        directory = os.path.dirname(path)
        root = self._roots.get(directory)
        if root is None:
            root = self._find_root(path)
            if len(self._roots) > 50_000:
                self._roots.clear()
            self._roots[directory] = root
        return root

    def forget_roots(self) -> None:
        """Directories came or went (a `.claude/` may have been created): find roots anew."""
        self._roots.clear()
        self._discovered = None

    def _find_root(self, path: str) -> Path:
        from ..workspace.discovery import find_root

        root = find_root(Path(path))
        if root is not None:
            return root
        for folder in self.folders:
            if (path + os.sep).startswith(str(folder) + os.sep):
                return folder
        return Path(path).parent

    def index_for(self, path: str) -> WorkspaceIndex:
        return self.index_for_root(self.root_for(path))

    def index_for_root(self, root_path: Path) -> WorkspaceIndex:
        from ..workspace.index import WorkspaceIndex

        idx = self.indexes.get(str(root_path))  # roots are normalised already (find_root)
        if idx is not None:
            return idx
        root = norm(root_path)
        idx = self.indexes.get(root)
        if idx is None:
            with self.indexes_lock:  # checker threads and the event loop both get here
                idx = self.indexes.get(root)
                if idx is None:
                    idx = WorkspaceIndex(Path(root), self.load_config(Path(root)))
                    self.indexes[root] = idx
        return idx

    def load_config(self, root: Path) -> BatonConfig:
        """Project files merged with editor overrides; errors are reported, not swallowed."""
        from ..model.config import BatonConfig
        from ..workspace.config import ConfigError, config_sources, load_config

        key = norm(root)
        try:
            config = load_config(root, self.settings.overrides)
            self.config_errors.pop(key, None)
            return config
        except ConfigError as exc:
            sources = config_sources(root)
            source = str(sources[-1]) if sources else ""
            self.config_errors[key] = (source, str(exc))
            self.on_loop(self.window_show_message, types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"Baton: invalid configuration, using defaults until it is fixed: {exc}"))
            log.error("invalid configuration: %s", exc)
            try:
                return load_config(None, self.settings.overrides)
            except ConfigError:
                return BatonConfig()

    def reload_configs(self) -> None:
        for root, idx in list(self.indexes.items()):
            idx.reconfigure(self.load_config(Path(root)))

    def discover_roots(self) -> list[Path]:
        """The workspaces in the open folders (a walk of the folders, remembered until
        files or folders come or go: `forget_roots`)."""
        from ..workspace.discovery import find_workspaces

        key = tuple(self.folders)
        if self._discovered is not None and self._discovered[0] == key:
            return list(self._discovered[1])
        roots: list[Path] = []
        for folder in self.folders:
            for root in find_workspaces(folder):
                if root not in roots:
                    roots.append(root)
        self._discovered = (key, roots)
        return list(roots)

    @staticmethod
    def load_core() -> None:
        """Import the core here, on the event loop, before handing work to the pool.

        The core is imported on first use (after `initialize` was answered); a worker thread
        importing a module while the loop thread does too can see it half-initialised and
        fail with ImportError. Once imported this is a dictionary lookup."""
        from ..workspace import discovery, index  # noqa: F401

    # -- documents ------------------------------------------------------------------------

    def open_document(self, uri: str) -> Any:
        """The editor's document for `uri`, or None if it is not open. pygls keys open
        documents by the unquoted URI: looked up as sent (`%20`, `%C3%A9`), nothing was
        found, and diagnostics lost their version."""
        return self.workspace.text_documents.get(unquote(uri))

    def lines_of(self, path: str) -> list[str]:
        from ..parse.text import split_lines

        doc = self.open_document(path_to_uri(path))
        if doc is not None:
            source = doc.source
            if len(source) > self.index_for(path).config.max_file_size:
                # Not parsed, so nothing is found past its first line: splitting 55 MB
                # for every publication and request cost 250 ms each.
                source = source[:OVERSIZE_PREFIX]
            return split_lines(source)
        text = self.index_for(path).text_of(path)
        return split_lines(text or "")

    def open_version(self, uri: str) -> int | None:
        doc = self.open_document(uri)
        return doc.version if doc is not None else None

    def result_cache(self) -> ResultCache | None:
        """The result cache shared with `baton check` (None with `--no-cache`)."""
        if self._result_cache is None and self.use_cache:
            from ..rules.cache import ResultCache

            self._result_cache = ResultCache(self.cache_dir)
        return self._result_cache

    def save_results(self) -> None:
        """Write what the result cache learnt (a cache that cannot be written is logged)."""
        if self._result_cache is not None:
            self._result_cache.save()

    def cached_findings(self, files: list[tuple[WorkspaceIndex, str]]
                        ) -> tuple[dict[str, list[Finding]], list[str]]:
        """(findings of the files whose cached results still hold, the other files), for
        start-up indexing: one pass over the tree (each file with its workspace's index),
        input fingerprints taken once."""
        cache = self.result_cache()
        if cache is None:
            return {}, [path for _, path in files]
        from ..rules.engine import cached

        hits: dict[str, list[Finding]] = {}
        todo: list[str] = []
        for index, path in files:
            found = cached(cache, index, path)
            if found is None:
                todo.append(path)
            else:
                hits[path] = found
        return hits, todo

    def check(self, path: str, memo: bool = False) -> list[Finding]:
        """Findings for `path` (runs on a worker thread), from the result cache while they
        hold (`memo`: see `WorkspaceCache.lookup`; True only within an indexing pass)."""
        from ..rules.engine import check_file

        idx = self.index_for(path)
        findings = check_file(idx, path, cache=self.result_cache(), memo=memo)
        error = self.config_errors.get(norm(idx.root))
        if error and error[0] and norm(error[0]) == norm(path):
            findings.insert(0, config_finding(path, error[1], self.lines_of(path)))
        return findings + self.preflight_findings.get(norm(path), [])

    def diagnostics_for(self, path: str, findings: list[Finding]) -> list[types.Diagnostic]:
        lines = self.lines_of(path)
        return [to_diagnostic(f, lines, self.lines_of) for f in findings]


def config_finding(path: str, message: str, lines: list[str]) -> Finding:
    """BTN001 on the configuration file itself, at the offending key when it can be found."""
    from ..model.base import Finding, Range, Severity

    line = 0
    m = re.search(r"invalid baton configuration: ([\w.-]+)", message)
    if m:
        key = m.group(1).split(".")[0]
        for i, text in enumerate(lines):
            if re.match(rf"\s*{re.escape(key)}\s*=", text):
                line = i
                break
    return Finding.model_construct(
        code="BTN001", rule="invalid-configuration", severity=Severity.ERROR, message=message,
        path=path, range=Range.of_line(line, 0, len(lines[line]) if line < len(lines) else 0),
        related=[], fix=None, tags=[])


@functools.lru_cache(maxsize=16384)
def uri_path(uri: str) -> str | None:
    """The normalised file path of `uri` (None if it names no file of ours); cached, as
    every edit, publication and request asks."""
    path = uri_to_path(uri)
    return norm(path) if path else None



def guard(default: Any = None) -> Any:
    """Isolate a feature handler: an exception is logged and the client gets `default`.

    One failing feature (a hover on an odd document, a lens on a half-typed plan) must never
    take down the others or the server; the log names the handler so it can be reported.
    """
    import functools
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

"""The language server's state, free of pygls: the open documents, the workspaces, their
configuration, the editor settings and the results of checks.

The server (`server.BatonServer`) holds one `Session` and every handler reaches it as
`ls.session`; documents change only through its named operations (`open`, `change`,
`close`, `withdraw`).

The one store of open documents is this one, not pygls' `Workspace`: pygls splits lines
with `str.splitlines`, which also breaks at U+2028, U+0085 and form feeds, so every edit
below such a character landed a line off, and keeping both meant two copies of every open
text. A document's text reaches the checks as its workspace index's overlay, which only
these operations set.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..paths import norm
from .wire import Change, apply_change, uri_path

if TYPE_CHECKING:  # the core loads on first use, so `initialize` is answered quickly
    from ..model.base import Finding, Kind
    from ..model.config import BatonConfig
    from ..rules.cache import ResultCache
    from ..workspace.index import WorkspaceIndex

log = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_MS = 150
OVERSIZE_PREFIX = 65536
"""What of a document over the size limit features still see (its finding is on line 0)."""


@functools.cache
def _config_keys() -> frozenset[str]:
    from ..model.config import BatonConfig  # the core loads on first use

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


@dataclass
class DocResult:
    version: int | None
    findings: list[Finding]


@dataclass
class Document:
    """A document open in the editor: its text as the editor has it."""

    uri: str
    path: str
    version: int | None
    text: str
    language_id: str = ""


INDEXED = "indexed %d files in %d workspace(s) (%d from the result cache)"
"""The line start-up indexing logs when it is done (clients and benchmarks wait for it)."""


class Session:
    """Workspaces, configuration, settings and check results: everything a check needs."""

    def __init__(self, config_error_found: Callable[[str], None] | None = None) -> None:
        self.documents: dict[str, Document] = {}
        """Open documents by normalised path (a URI quoted one way or another is one file)."""
        self.on_config_error = config_error_found
        self.settings = ClientSettings()
        self.initialization_options: dict[str, Any] = {}
        self.folders: list[Path] = []
        self.indexes: dict[str, WorkspaceIndex] = {}
        self.indexes_lock = threading.Lock()
        self.config_errors: dict[str, tuple[str, str]] = {}
        self.results: dict[str, DocResult] = {}
        self.published: set[str] = set()
        """Paths whose diagnostics the client was sent (push mode)."""
        self.preflight_findings: dict[str, list[Finding]] = {}
        self.cache_dir: Path | None = None
        """Where the result cache lives (`baton lsp --cache-dir`; None: the default)."""
        self.use_cache = True
        self._result_cache: ResultCache | None = None
        self._roots: dict[str, Path] = {}
        self._discovered: tuple[tuple[Path, ...], list[Path]] | None = None

    # -- open documents -------------------------------------------------------------------

    def open(self, uri: str, text: str, version: int | None,
             language_id: str = "") -> Document | None:
        """The editor opened `uri` (None: no file of ours)."""
        path = uri_path(uri)
        if path is None:
            return None
        doc = Document(uri, path, version, text, language_id)
        self.documents[path] = doc
        self.index_for(path).set_overlay(path, text)
        return doc

    def change(self, uri: str, version: int | None,
               changes: Iterable[Change]) -> Document | None:
        """Apply an edit's `contentChanges` with LSP's line rules (see `wire.apply_change`);
        None when `uri` is not open (the edit is dropped and logged)."""
        doc = self.open_document(uri)
        if doc is None:
            log.warning("didChange for %s, which is not open: ignored", uri)
            return None
        text = doc.text
        for item in changes:
            text = apply_change(text, item)
        doc.text, doc.version = text, version
        self.index_for(doc.path).set_overlay(doc.path, text)
        return doc

    def close(self, uri: str) -> str | None:
        """The editor closed `uri`: checks read the file on disk again. Its path, or None."""
        path = uri_path(uri)
        if path is None:
            return None
        self.documents.pop(path, None)
        index = self.index_for(path)
        index.drop_overlay(path)
        index.changed(path)
        return path

    def withdraw(self, path: str) -> None:
        """Forget `path`'s results: its file or its workspace is gone (the server clears the
        client's diagnostics of it)."""
        self.results.pop(path, None)
        self.published.discard(path)

    def open_document(self, uri: str) -> Document | None:
        path = uri_path(uri)
        return self.documents.get(path) if path is not None else None

    def open_version(self, uri: str) -> int | None:
        doc = self.open_document(uri)
        return doc.version if doc is not None else None

    def open_text(self, path: str) -> str | None:
        """The editor's text of `path`, None if it is not open there."""
        doc = self.documents.get(path)
        if doc is None and self.documents:
            doc = self.documents.get(norm(path))
        return doc.text if doc is not None else None

    def initialize(self, options: Any, folders: list[str], root_uri: str | None,
                   root_path: str | None) -> None:
        """What `initialize` tells: the initialization options (with the `baton` settings)
        and the workspace folders: `workspaceFolders`, else `rootUri`, else the deprecated
        `rootPath`."""
        self.initialization_options = options if isinstance(options, dict) else {}
        self.use_settings(ClientSettings.from_raw(self.initialization_options.get("settings")))
        found = [uri_path(uri) for uri in folders]
        if not found and root_uri:
            found = [uri_path(root_uri)]
        elif not found and root_path:
            found = [norm(root_path)]
        self.folders = [Path(f) for f in found if f]

    def use_settings(self, settings: ClientSettings) -> None:
        """Adopt the client's `baton` settings: trust granted at initialize is never withdrawn
        by a later settings push, and `baton.logLevel` takes effect at once."""
        settings.trusted = settings.trusted or bool(self.initialization_options.get("trusted"))
        self.settings = settings
        level = (settings.log_level or "").upper()
        if level in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
            logging.getLogger("baton_lsp").setLevel(level)
        elif settings.log_level:
            log.warning("baton.logLevel must be debug, info, warning or error, got %r",
                        settings.log_level)

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
        from ..workspace.discovery import find_root  # the core loads on first use

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
        from ..workspace.index import WorkspaceIndex  # the core loads on first use

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
        # the core loads on first use
        from ..model.config import BatonConfig
        from ..workspace.config import config_sources, load_config

        key = norm(root)
        try:
            config = load_config(root, self.settings.overrides)
            self.config_errors.pop(key, None)
            return config
        except ConfigError as exc:
            sources = config_sources(root)
            source = str(sources[-1]) if sources else ""
            self.config_errors[key] = (source, str(exc))
            self.config_error_found(str(exc))
            log.error("invalid configuration: %s", exc)
            try:
                return load_config(None, self.settings.overrides)
            except ConfigError:
                return BatonConfig()

    def config_error_found(self, message: str) -> None:
        """A project's configuration is invalid (the server tells the user at once)."""
        if self.on_config_error is not None:
            self.on_config_error(message)

    def reload_configs(self) -> None:
        for root, idx in list(self.indexes.items()):
            idx.reconfigure(self.load_config(Path(root)))

    def discover_roots(self) -> list[Path]:
        """The workspaces in the open folders (a walk of the folders, remembered until
        files or folders come or go: `forget_roots`)."""
        from ..workspace.discovery import find_workspaces  # the core loads on first use

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

    def walk_workspaces(self) -> list[tuple[WorkspaceIndex, str, Kind]]:
        """Every file of every workspace in the open folders, once (with the first index
        holding it, and its kind)."""
        seen: set[str] = set()
        out: list[tuple[WorkspaceIndex, str, Kind]] = []
        for root in self.discover_roots():
            index = self.index_for_root(root)
            for path, kind in index.files().items():
                if path not in seen:
                    seen.add(path)
                    out.append((index, path, kind))
        return out

    @staticmethod
    def load_core() -> None:
        """Import the core here, on the event loop, before handing work to the pool.

        The core is imported on first use (after `initialize` was answered); a worker thread
        importing a module while the loop thread does too can see it half-initialised and
        fail with ImportError. Once imported this is a dictionary lookup."""
        from ..workspace import discovery, index  # noqa: F401

    def lines_of(self, path: str) -> list[str]:
        from ..parse.text import split_lines  # the core loads on first use

        source = self.open_text(path)
        if source is not None:
            if len(source) > self.index_for(path).config.max_file_size:
                # Not parsed, so nothing is found past its first line: splitting 55 MB
                # for every publication and request cost 250 ms each.
                source = source[:OVERSIZE_PREFIX]
            return split_lines(source)
        text = self.index_for(path).text_of(path)
        return split_lines(text or "")

    def result_cache(self) -> ResultCache | None:
        """The result cache shared with `baton check` (None with `--no-cache`)."""
        if self._result_cache is None and self.use_cache:
            from ..rules.cache import ResultCache  # the core loads on first use

            self._result_cache = ResultCache(self.cache_dir)
        return self._result_cache

    def save_results(self) -> None:
        """Write what the result cache learnt (a cache that cannot be written is logged)."""
        if self._result_cache is not None:
            self._result_cache.save()

    def cached_findings(self, files: list[tuple[WorkspaceIndex, str, Kind]]
                        ) -> tuple[dict[str, list[Finding]], list[str]]:
        """(findings of the files whose cached results still hold, the other files), for
        start-up indexing: one pass over the tree (each file with its workspace's index and
        the kind its walk found), input fingerprints taken once."""
        cache = self.result_cache()
        if cache is None:
            return {}, [path for _, path, _ in files]
        from ..rules.engine import cached_files  # the core loads on first use

        hits: dict[str, list[Finding]] = {}
        todo: list[str] = []
        for path, found in cached_files(cache, files):
            if found is None:
                todo.append(path)
            else:
                hits[path] = found
        return hits, todo

    def check(self, path: str, memo: bool = False) -> list[Finding]:
        """Findings for `path` (runs on a worker thread), from the result cache while they
        hold (`memo`: see `WorkspaceCache.lookup`; True only within an indexing pass)."""
        from ..rules.engine import check_file  # the core loads on first use

        idx = self.index_for(path)
        findings = check_file(idx, path, cache=self.result_cache(), memo=memo)
        error = self.config_errors.get(norm(idx.root))
        if error and error[0] and norm(error[0]) == norm(path):
            findings.insert(0, config_finding(path, error[1], self.lines_of(path)))
        return findings + self.preflight_findings.get(norm(path), [])


def config_finding(path: str, message: str, lines: list[str]) -> Finding:
    """BTN001 on the configuration file itself, at the offending key when it can be found."""
    from ..model.base import Finding, Range, Severity  # the core loads on first use

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


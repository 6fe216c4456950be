"""The workspace index: parsed files cached by (mtime, size), editor overlays, and the
reverse dependency graph that tells which files to re-check when one changes.

The language server keeps one index per workspace and calls `changed(path)` on every edit
or file event; the CLI builds one, checks everything and throws it away.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..model.base import Kind
from ..model.config import BatonConfig
from ..model.data import Unreadable
from ..parse.text import scrub, text_problem, too_large
from ..paths import KIND, look, norm
from ..runs.confine import NotRegular, OutsideLink, UnsafePath, read_head
from .discovery import classify, component_layout, excluded, plugin_layout, walk_files
from .symbols import SymbolSummary, summarize

if TYPE_CHECKING:
    from ..model.agent import AgentFile
    from ..model.plan import Plan
    from ..runs.follow import RunIndex

_T = TypeVar("_T")


def _parse(kind: Kind, text: str, path: str, decoded: bool = False) -> Any:
    """`parse.parse_text`, imported on the first parse: a warm check answered from the
    result cache lists and hashes files but never parses one (start-up speed)."""
    from ..parse import parse_text  # lazy: a warm check never parses

    return parse_text(kind, text, path, decoded=decoded)


NOT_REGULAR = "not a regular file (a directory, FIFO, socket or device); it was not read"


def unread(root: Path, path: str, exc: OSError) -> str:
    """Why the workspace file `path` was not read, for a user (a BTN400 reason, a log line):
    what `read_head` refused, never anything from beyond a link."""
    if isinstance(exc, OutsideLink):
        rel = os.path.relpath(path, root)
        if os.path.normpath(exc.link) == os.path.normpath(rel):
            what = "a directory" if os.path.isdir(path) else "a file"  # a linked skill folder
            return (f"{rel} is a symbolic link to {what} outside the workspace "
                    f"({exc.target}); it was not read (Baton reads only inside the "
                    "workspace: make it a file or a link inside it)")
        return (f"{rel} is reached through {exc.link}, a symbolic link to a directory outside "
                f"the workspace ({exc.target}); it was not read (Baton reads only inside the "
                "workspace)")
    if isinstance(exc, NotRegular):
        return NOT_REGULAR
    if isinstance(exc, UnsafePath):
        return f"cannot read file: {exc.message}"
    return f"cannot read file: {exc.strerror or exc}"


def broken_link(path: str, exc: OSError) -> str:
    """Why a listed symbolic link could not be followed, naming its target (the link's own
    text, nothing from beyond it); an absolute target is the usual cause in a checkout."""
    try:
        target = os.readlink(path)
    except OSError:
        return f"cannot read file: {exc.strerror or exc} (a broken or looping symbolic link)"
    if exc.errno == errno.ELOOP:
        return f"symbolic link to {target} loops; nothing can read it"
    hint = (" (an absolute link works only on the machine that made it: link to the file "
            "with a relative path inside the repository, or copy it in)"
            if os.path.isabs(target) else "")
    return f"broken symbolic link to {target}: that file does not exist, so nothing reads " \
        f"it{hint}"


_SYMBOL_KINDS = (Kind.PLAN, Kind.AGENT, Kind.COMMAND, Kind.OPENCODE_AGENT, Kind.OPENCODE_COMMAND)


def _stamp_of(st: os.stat_result) -> tuple[int, int, int]:
    """What a parsed document is cached by: a link retargeted at another file of the same
    size and time (one outside the workspace, say) is another inode, so parsed again."""
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class WorkspaceIndex:
    """Parsed documents of one `.claude/` workspace, safe to use from several threads."""

    max_cached_docs = 400

    def __init__(self, root: Path, config: BatonConfig | None = None) -> None:
        self.root = Path(norm(root))
        self._prefix = str(self.root).rstrip(os.sep) + os.sep
        self.config = config or BatonConfig.defaults()
        self.claude_dir = self.root / ".claude"
        self._read_layout()
        self._lock = threading.RLock()
        self._files: dict[str, Kind] | None = None
        self._docs: OrderedDict[str, tuple[Any, Any]] = OrderedDict()
        self._symbols: dict[str, tuple[Any, tuple[SymbolSummary, ...]]] = {}
        self._overlays: dict[str, str] = {}
        self._agent_paths: dict[str, Path] | None = None
        self._deps: dict[str, set[str]] = {}
        self._rdeps: dict[str, set[str]] = {}
        self._runs: RunIndex | None = None
        self._derived: dict[str, tuple[int, Any]] = {}
        self.generation = 0
        """Bumped on every change the index is told of: the result cache's memo of input
        fingerprints is valid only within one generation."""

    def _read_layout(self) -> None:
        """The plugin layout (None for a plain workspace), read once per configuration."""
        self.plugin = plugin_layout(self.root)
        self.components = component_layout(self.root)
        """`plugin` plus the skills of a marketplace's manifest-less plugins: what
        `classify` reads."""
        look(self.claude_dir, KIND)
        in_plugin = self.plugin is not None and not self.claude_dir.is_dir()
        self.agents_dir = self.root / "agents" if in_plugin else self.claude_dir / "agents"
        """Where the workspace's agents live: a plugin keeps them at its root."""

    def reconfigure(self, config: BatonConfig) -> None:
        """Use `config` from now on: parsed files and the file list are dropped; editor
        overlays and recorded dependencies stay (a check on another thread keeps recording
        into this same index, so nothing it learns is lost to a replaced object)."""
        with self._lock:
            self.generation += 1
            self.config = config
            self._read_layout()  # a changed plugin manifest reloads the configuration
            self._files = None
            self._docs.clear()
            self._symbols.clear()
            self._agent_paths = None

    @property
    def runs(self) -> RunIndex:
        """The workflows of this workspace as their checkpoints describe them, for the
        rules that put run state on plans."""
        with self._lock:
            if self._runs is None:
                from ..runs.follow import RunIndex  # the run store loads only where asked

                self._runs = RunIndex(self.root)
            return self._runs

    # -- files --------------------------------------------------------------------------

    def rel(self, path: str | Path) -> str:
        key = norm(path)
        if key.startswith(self._prefix):  # the usual case, without `relpath`'s list work
            rel = key[len(self._prefix):]
        else:
            rel = os.path.relpath(key, self.root)
        return rel.replace(os.sep, "/") if os.sep != "/" else rel

    def kind_of(self, path: str | Path) -> Kind | None:
        rel = self.rel(path)
        if rel.startswith("../"):
            return None
        if self.config.exclude and excluded(rel, self.config.exclude):
            return None
        return classify(rel, self.root, self.components)

    def files(self) -> dict[str, Kind]:
        with self._lock:
            if self._files is None:
                self._files = dict(walk_files(self.root, self.config.exclude))
            return dict(self._files)

    def exists(self, path: str | Path) -> bool:
        key = norm(path)
        with self._lock:
            if key in self._overlays:
                return True
        return os.path.exists(key)

    # -- documents ----------------------------------------------------------------------

    def set_overlay(self, path: str | Path, text: str) -> None:
        """Use editor text for `path` instead of what is on disk (lone surrogates, which
        JSON can carry and no file can, become U+FFFD: positions do not move). Its symbol
        summary is kept, out of date, until the new text is parsed (see `symbols`)."""
        key = norm(path)
        text = scrub(text)
        with self._lock:
            if self._overlays.get(key) != text:
                self.generation += 1
            self._overlays[key] = text

    def overlays(self) -> dict[str, str]:
        with self._lock:
            return dict(self._overlays)

    def overlay(self, key: str) -> str | None:
        """The editor text of `key` (a `norm`ed path), if it is open: a lookup per file of a
        bulk check, so no copy of every overlay."""
        if not self._overlays:
            return None
        with self._lock:
            return self._overlays.get(key)

    def drop_overlay(self, path: str | Path) -> None:
        key = norm(path)
        with self._lock:
            if self._overlays.pop(key, None) is not None:
                self._symbols.pop(key, None)
                self.generation += 1

    def text_of(self, path: str | Path) -> str | None:
        key = norm(path)
        with self._lock:
            if key in self._overlays:
                return self._overlays[key]
        try:  # a FIFO or device is refused, not waited on; a link out is not followed
            data, _ = read_head(self.root, key, self.config.max_file_size + 1)
        except OSError:
            return None
        # Same text the parser saw: a BOM is not part of line 1 (`decode` drops it too).
        return data.decode("utf-8", errors="replace").removeprefix("\ufeff")

    def document(self, path: str | Path, kind: Kind | None = None) -> Any:
        """Parsed document for `path` (cached), an `Unreadable`, or None if not ours."""
        key = norm(path)
        kind = kind or self.kind_of(key)
        if kind is None:
            return None
        return self.parsed(key, kind)[0]

    def parsed(self, key: str, kind: Kind) -> tuple[Any, str | None]:
        """(document, its text when it was read just now) so a check need not read twice."""
        with self._lock:
            overlay = self._overlays.get(key)
            if overlay is not None:
                stamp: Any = ("overlay", hash(overlay))
                cached = self._docs.get(key)
                if cached and cached[0] == stamp:
                    self._docs.move_to_end(key)
                    return cached[1], overlay
        if overlay is not None:
            # Parsed outside the lock: the event loop takes it for every edit and request,
            # and must not wait for a worker's parse of another document.
            problem = self._outside(key) or text_problem(overlay, self.config.max_file_size)
            doc: Any = Unreadable(path=key, reason=problem) if problem is not None else \
                _parse(kind, overlay, key)
            text = overlay if problem is None else None
            with self._lock:
                if self._overlays.get(key) is overlay:  # still the current text
                    self._remember(key, kind, stamp, doc, text)
            return doc, text
        try:
            st = os.stat(key)
        except OSError as exc:
            with self._lock:
                self._docs.pop(key, None)
                self._symbols.pop(key, None)
            if os.path.islink(key):  # listed, but following the link fails: say why
                return Unreadable(path=key, reason=broken_link(key, exc)), None
            return None, None
        if not stat.S_ISREG(st.st_mode):
            # Opening a FIFO blocks until a writer appears; a device may never end. A link to
            # a folder outside (a linked skill) is named as such.
            return Unreadable(path=key, reason=self._outside(key) or NOT_REGULAR), None
        stamp = _stamp_of(st)
        with self._lock:
            cached = self._docs.get(key)
            if cached and cached[0] == stamp:
                self._docs.move_to_end(key)
                return cached[1], None
        doc, text = self._read(key, kind)
        with self._lock:
            self._remember(key, kind, stamp, doc, text)
        return doc, text

    def _outside(self, key: str) -> str | None:
        """Why the editor's text of `key` is not checked: on disk the name is a link out of
        the workspace (the editor read the target; its findings would quote it)."""
        try:
            read_head(self.root, key, 0)
        except OutsideLink as exc:
            return unread(self.root, key, exc)
        except OSError:
            pass  # a new file, a FIFO: the editor's text is what there is
        return None

    def _remember(self, key: str, kind: Kind, stamp: Any, doc: Any, text: str | None) -> None:
        """Cache a parsed document, evicting the least recently used beyond the bound, and
        record its symbol summary, which is not evicted (see `symbols`).

        A language server indexing 2,000 plans must not keep a million lines of parsed
        models alive; findings and dependencies are kept, documents are re-parsed on demand.
        """
        self._docs[key] = (stamp, doc)
        self._docs.move_to_end(key)
        while len(self._docs) > self.max_cached_docs:
            self._docs.popitem(last=False)
        if kind in _SYMBOL_KINDS:
            self._symbols[key] = (stamp, summarize(doc, text, self.rel(key)))

    def _stamp(self, key: str) -> Any:
        """What the cached document and summary of `key` are keyed by; None if unreadable."""
        with self._lock:
            overlay = self._overlays.get(key)
        if overlay is not None:
            return ("overlay", hash(overlay))
        try:
            st = os.stat(key)
        except OSError:
            return None
        return _stamp_of(st) if stat.S_ISREG(st.st_mode) else None

    def symbols(self, path: str | Path, kind: Kind | None = None,
                fresh: bool = True) -> tuple[SymbolSummary, ...]:
        """Symbols of a plan, agent or command, from the summary recorded when it was last
        parsed; the file is parsed again only if it changed since (or was never parsed).

        With `fresh` False, a file edited in the editor since its last parse keeps its last
        summary (a search over thousands of files in the middle of an edit burst or just
        after opening them answers in time; the queued check of each such file parses it
        soon after). A file changed on disk has none (`changed`), so it is parsed."""
        key = norm(path)
        kind = kind or self.kind_of(key)
        if kind not in _SYMBOL_KINDS:
            return ()
        stamp = self._stamp(key)
        if stamp is None:
            return ()
        with self._lock:
            cached = self._symbols.get(key)
        if cached is not None and (cached[0] == stamp or not fresh):
            return cached[1]
        doc, text = self.parsed(key, kind)  # records the summary if it parses
        with self._lock:
            cached = self._symbols.get(key)
        if cached is not None and cached[0] in (stamp, self._stamp(key)):
            return cached[1]  # from this parse, or a newer one if the file changed again
        # A doc-cache hit whose summary is older: an overlay edited and then set back to the
        # text the cached document was parsed from. Summarize that document again.
        summary = summarize(doc, text if text is not None else self.text_of(key), self.rel(key))
        with self._lock:
            self._symbols[key] = (stamp, summary)
        return summary

    def _read(self, key: str, kind: Kind) -> tuple[Any, str | None]:
        """Parse what is read now (the `stat` before it only keys the cache): walked from
        the root, so a link leaving the workspace is reported, never followed, and a FIFO
        swapped in after the `stat` is refused, not waited on."""
        limit = self.config.max_file_size
        try:
            data, size = read_head(self.root, key, limit + 1)
        except OSError as exc:
            return Unreadable(path=key, reason=unread(self.root, key, exc)), None
        if size > limit:
            return Unreadable(path=key, reason=too_large(size, limit)), None
        from ..parse.text import UnreadableError, decode  # with the parser (see `_parse`)

        try:
            text = decode(data, limit)
        except UnreadableError as exc:
            return Unreadable(path=key, reason=str(exc)), None
        return _parse(kind, text, key, decoded=True), text

    def agent_paths(self) -> dict[str, Path]:
        with self._lock:
            if self._agent_paths is None:
                found: dict[str, Path] = {}
                if self.agents_dir.is_dir():
                    for p in sorted(self.agents_dir.glob("*.md")):
                        if p.name.lower() != "readme.md" and self.kind_of(p) is Kind.AGENT:
                            found[p.stem] = p
                for key in self._overlays:
                    p = Path(key)
                    if p.parent == self.agents_dir and p.suffix == ".md":
                        found.setdefault(p.stem, p)
                self._agent_paths = found
            return dict(self._agent_paths)

    def opencode_agents(self) -> dict[str, str]:
        """OpenCode's name for each `.opencode/agent(s)/` agent → its (first) path. A file
        OpenCode skips (front matter it cannot read at all) is no agent to it: left out."""
        return {name: paths[0] for name, paths in self.opencode_agent_files().items()}

    def derived(self, key: str, compute: Callable[[], _T]) -> _T:
        """`compute()`, done once per generation: a value read from many files (every agent
        of a folder) that the check of each file asks for again, which made a workspace
        check quadratic in the number of such files. The caller gets the shared value and
        must not change it."""
        with self._lock:
            generation = self.generation
            hit = self._derived.get(key)
        if hit is not None and hit[0] == generation:
            value: _T = hit[1]
            return value
        value = compute()
        with self._lock:
            if self.generation == generation:  # nothing changed meanwhile: keep it
                self._derived[key] = (generation, value)
        return value

    def opencode_agent_files(self) -> dict[str, list[str]]:
        """OpenCode's name for each agent → every file that defines it (sorted)."""
        found = self.derived("opencode-agent-files", self._opencode_agent_files)
        return {name: list(paths) for name, paths in found.items()}

    def _opencode_agent_files(self) -> dict[str, list[str]]:
        from ..model.opencode import OpenCodeAgent  # with the parser (see `_parse`)

        found: dict[str, list[str]] = {}
        for path, kind in sorted(self.files().items()):
            if kind is not Kind.OPENCODE_AGENT:
                continue
            doc = self.document(path, kind)
            if isinstance(doc, OpenCodeAgent) and (doc.load.data is not None
                                                   or doc.load.unchecked is not None):
                found.setdefault(doc.agent_name, []).append(path)
        return found

    def agent(self, name: str) -> AgentFile | None:
        from ..model.agent import AgentFile  # with the parser (see `_parse`)

        path = self.agent_paths().get(name)
        doc = self.document(path, Kind.AGENT) if path else None
        return doc if isinstance(doc, AgentFile) else None

    def plan(self, path: str | Path) -> Plan | None:
        from ..model.plan import Plan  # with the parser (see `_parse`)

        doc = self.document(path, Kind.PLAN)
        return doc if isinstance(doc, Plan) else None

    def record_deps(self, key: str, deps: set[str], *, normalized: bool = False) -> None:
        """What `key`'s cross-file findings were computed from (for `dependents`);
        `normalized`: the paths are `norm`'s already (as the result cache stores them)."""
        deps = set(deps) if normalized else {norm(d) for d in deps}
        with self._lock:
            for old in self._deps.get(key, ()):
                self._rdeps.get(old, set()).discard(key)
            self._deps[key] = deps
            for dep in deps:
                self._rdeps.setdefault(dep, set()).add(key)

    def dependents(self, path: str | Path) -> set[str]:
        """Files whose findings may change when `path` changes (created, edited, deleted)."""
        key = norm(path)
        with self._lock:
            out = set(self._rdeps.get(key, ()))
            out |= self._rdeps.get(os.path.dirname(key), set())
        out.discard(key)
        return out

    def direct_dependents(self, path: str | Path) -> set[str]:
        """Files that recorded `path` itself (not its directory) as a dependency."""
        with self._lock:
            return set(self._rdeps.get(norm(path), ()))

    def changed(self, path: str | Path, *, created_or_deleted: bool = False) -> set[str]:
        """Invalidate caches for `path`; return the other files that need re-checking."""
        key = norm(path)
        with self._lock:
            self.generation += 1
            self._docs.pop(key, None)
            self._symbols.pop(key, None)
            if created_or_deleted:
                self._files = None
                if os.path.dirname(key) == str(self.agents_dir):
                    self._agent_paths = None
        out = self.dependents(key)
        if created_or_deleted:  # a file come or gone changes every directory tree above it
            out |= self._tree_dependents(os.path.dirname(os.path.dirname(key)))
            out.discard(key)
        return out

    def _tree_dependents(self, directory: str) -> set[str]:
        """Files that recorded `directory` or one above it (inside the workspace): those that
        read a tree at any depth, such as OpenCode's `agent/**/*.md`."""
        out: set[str] = set()
        root = str(self.root)
        with self._lock:
            while directory.startswith(self._prefix) or directory == root:
                out |= self._rdeps.get(directory, set())
                if directory == root:
                    break
                directory = os.path.dirname(directory)
        return out

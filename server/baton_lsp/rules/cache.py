"""The persistent result cache: a file's findings are reused while nothing they came from
changed, so a warm `baton check` (and the language server's start-up indexing) reads,
hashes and prints instead of parsing and running the rules — ShellCheck above all.

Like ruff's cache, one file per workspace and settings, under the user cache directory
(`platformdirs.user_cache_dir("baton")`, or `BATON_CACHE_DIR`, or `--cache-dir`):
`v1/checks/<hash of root and settings>.json`, plus ShellCheck's results per block in
`v1/shellcheck/<hash of its version>.json`. Nothing is written into the workspace.

An entry is used only when all of these are unchanged (never stale; a miss re-checks):

* the workspace cache file's settings key: Baton's version and a fingerprint of its own
  source files and of the YAML parser, the effective configuration, the plugin layout,
  and the ShellCheck binary when ShellCheck may run;
* the file's kind and the hash of its content (read again unless its `stat`, ctime
  included, is unchanged since it was hashed well after its last change: git's racy check);
* every input its rules recorded: files by content hash (or their editor text), directories
  by their listing, run stores by a `stat` of the whole tree, missing paths as missing;
* its expiry, for findings that depend on the clock (`RuleContext.valid_until`).

Results are stored only when the file and every input last changed before the check
started, so a change made while a file is being checked is never hidden. Writes go to a
temporary file renamed over the old one: concurrent writers (the CLI and the language
server) never leave a torn file, the last one wins, and a file that cannot be read is a miss.

`replay.py` stores a whole check's output on top of this, tied to the inputs entries here
record (`WorkspaceCache.reads_of`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
import os
import stat
import sys
import threading
import time
from pathlib import Path

from .. import __version__
from ..lazylog import LazyLogger
from ..paths import blake2b, settled
from ..runs.confine import UnsafePath, outside, read_head

TYPE_CHECKING = False
"""`typing.TYPE_CHECKING` without importing `typing` (on a replayed check's path)."""
if TYPE_CHECKING:
    from typing import Any

    from ..model.base import Finding, Kind
    from ..model.config import BatonConfig
    from ..workspace.index import WorkspaceIndex

log = LazyLogger(__name__)

CACHE_DIR_ENV = "BATON_CACHE_DIR"
"""Overrides where the cache lives (tests point it at a temporary directory)."""
FORMAT = "v1"
"""Layout version: a directory of its own, so an older Baton never reads a newer cache."""
MAX_CACHE_FILE_BYTES = 1 << 30
"""Far above any real cache file: only what bounds a read of a planted one."""
MAX_HASHED_BYTES = 64 * 1024 * 1024
"""Inputs larger than this are fingerprinted by `stat` alone (never the case in practice)."""
TREE_MAX_ENTRIES = 20_000
"""A run store larger than this is not fingerprinted: its dependants are not cached."""

_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by Baton (baton clean removes it).\n")


def default_dir() -> Path:
    """`BATON_CACHE_DIR`, else the platform's user cache directory for Baton."""
    env = os.environ.get(CACHE_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs  # only where a cache is used: it is not on the server's start-up path

    return Path(platformdirs.user_cache_dir("baton", appauthor=False))


def _hash(data: bytes) -> str:
    return blake2b(data, digest_size=20).hexdigest()


def _stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]


def _changed_ns(st: os.stat_result) -> int:
    """When the file last changed: its ctime (no one can set it) or a later mtime (on
    Windows `st_ctime` is the creation time)."""
    return max(st.st_ctime_ns, st.st_mtime_ns)


_isabs = (lambda p: p.startswith("/")) if os.sep == "/" else os.path.isabs
"""`os.path.isabs`, without its overhead where that is all it does (a lookup per input)."""


class Digest:
    """The content hash of a file about to be checked, and when it was taken. A plain
    class: this module is on a warm check's path, which must not import `dataclasses`."""

    __slots__ = ("overlay", "sha", "started_ns")

    def __init__(self, sha: str, started_ns: int, overlay: bool) -> None:
        self.sha = sha
        self.started_ns = started_ns
        self.overlay = overlay


@functools.cache
def code_fingerprint() -> str:
    """Baton's version plus a `stat` of its own source files and of the YAML parser: an
    edited checkout (same version number) never reuses results of the old code. Once per
    process: the files it stats are the ones this process imported."""
    parts = [__version__, sys.version]
    package = Path(__file__).resolve().parent.parent
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                with contextlib.suppress(OSError):
                    st = os.stat(os.path.join(dirpath, name))
                    parts.append(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}")
    # The YAML parser (PyYAML and its libyaml extension) decides what front matter parses
    # to: a stat of its files, found without importing it (find_spec of a top-level name
    # does not import; of `yaml._yaml` it would).
    for module in ("yaml", "_yaml"):
        with contextlib.suppress(ImportError, ValueError, OSError):
            spec = importlib.util.find_spec(module)
            if spec is None:
                continue
            places = list(spec.submodule_search_locations or ())
            files = [spec.origin] if spec.origin and not places else []
            for place in places:
                files += sorted(os.path.join(place, n) for n in os.listdir(place)
                                if n.endswith((".py", ".so", ".pyd")))
            for path in files:
                st = os.stat(path)
                parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return _hash("\n".join(parts).encode())


def atomic_write(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same directory and a rename,
    so readers see the old file or the new one, never half of one. No fsync: a cache."""
    import tempfile  # only when something is written: it pulls in shutil (start-up speed)

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def read_json(path: Path) -> Any:
    """The JSON in `path`, or None when it is missing, unreadable, truncated or not JSON.
    A cache directory can sit in a checked-out tree (CI): a FIFO planted at a cache file's
    name is a damaged file, not a wait (`O_NONBLOCK`, then `fstat` of what was opened)."""
    try:
        data, _ = read_head(path.parent, path, MAX_CACHE_FILE_BYTES)
    except OSError:
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        log.info("ignoring a damaged cache file %s", path)
        return None


# -- findings <-> JSON --------------------------------------------------------------------


def _range(r: Any) -> list[int]:
    return [r.start_line, r.start_char, r.end_line, r.end_char]


def encode_finding(f: Finding) -> list[Any]:
    fix = None
    if f.fix is not None:
        fix = [f.fix.title, f.fix.safe, [[e.path, _range(e.range), e.new_text]
                                         for e in f.fix.edits]]
    return [f.code, f.rule, f.severity.value, f.message, f.path, _range(f.range),
            [[r.path, _range(r.range), r.message] for r in f.related], fix, list(f.tags)]


def decode_finding(raw: list[Any]) -> Finding:
    """The inverse of `encode_finding`; raises on anything malformed (the entry is a miss)."""
    # kept off the replay path (test_replay)
    from ..model.base import Finding, Fix, Range, Related, Severity, TextEdit

    code, rule, severity, message, path, rng, related, fix, tags = raw
    fix_obj = None
    if fix is not None:
        title, safe, edits = fix
        fix_obj = Fix.model_construct(title=str(title), safe=bool(safe), edits=[
            TextEdit.model_construct(path=str(p), range=Range.span(*r), new_text=str(t))
            for p, r, t in edits])
    return Finding.model_construct(
        code=str(code), rule=str(rule), severity=Severity(severity), message=str(message),
        path=str(path), range=Range.span(*rng),
        related=[Related.model_construct(path=str(p), range=Range.span(*r), message=str(m))
                 for p, r, m in related],
        fix=fix_obj, tags=[str(t) for t in tags])


# -- one workspace ------------------------------------------------------------------------


class WorkspaceCache:
    """The entries of one workspace under one settings key, loaded from and saved to one
    file. Thread-safe: the language server checks on two threads."""

    def __init__(self, path: Path, key: str, strict: bool = True, root: str = "") -> None:
        self.path = path
        self.key = key
        self.strict = strict
        self._prefix = root.rstrip(os.sep) + os.sep if root else "\0"
        """Paths in the workspace are stored relative to it (a third of the file's size)."""
        self._lock = threading.RLock()
        self._entries: dict[str, dict[str, Any]] = {}
        self._hashes: dict[str, list[Any]] = {}
        """path → [size, mtime_ns, ctime_ns, ino, dev, sha, hashed_at_ns]."""
        self._fingerprints: dict[str, str | None] = {}
        self._generation = 0
        self._new: set[str] = set()
        self._hit: set[str] = set()
        """Entries found to hold in this process (`lookup`); with `_new`, the files whose
        stored entry describes them as they are now."""
        self.dirty = False
        self.hits = 0
        self.misses = 0
        raw = read_json(path)
        if isinstance(raw, dict) and raw.get("key") == key:
            entries, hashes = raw.get("entries"), raw.get("hashes")
            if isinstance(entries, dict) and isinstance(hashes, dict):
                self._entries, self._hashes = entries, hashes

    @property
    def root(self) -> str:
        return "" if self._prefix == "\0" else self._prefix.rstrip(os.sep) or os.sep

    def _pack(self, path: str) -> str:
        return path[len(self._prefix):] if path.startswith(self._prefix) else path

    def _unpack(self, stored: str) -> str:
        return stored if _isabs(stored) else self._prefix + stored

    def new_pass(self) -> None:
        """Forget input fingerprints taken so far (files may have changed since)."""
        with self._lock:
            self._fingerprints.clear()
            self._hit.clear()

    # -- hashing ----------------------------------------------------------------------

    def _sha_of(self, root: Path, key: str, st: os.stat_result) -> str | None:
        """Content hash of the regular file `key`, from the table when `stat` proves the
        content is what was hashed; None when it cannot be read. Read as the index reads it
        (`read_head` from the workspace root): a link out of the workspace or a FIFO swapped
        in after the `stat` is never hashed, so never looks like the file it replaced."""
        sk = _stat_key(st)
        packed = self._pack(key)
        with self._lock:
            known = self._hashes.get(packed)
        if (isinstance(known, list) and len(known) == 7 and known[:5] == sk
                and settled(_changed_ns(st), known[6], self.strict)):
            return str(known[5])
        if st.st_size > MAX_HASHED_BYTES:
            return "stat:" + ":".join(map(str, sk))
        now = time.time_ns()
        try:
            data, size = read_head(root, key, MAX_HASHED_BYTES + 1)
        except OSError:
            return None
        if size > MAX_HASHED_BYTES:
            return None  # grew since the `stat`: hashed next time
        sha = _hash(data)
        with self._lock:
            self._hashes[packed] = [*sk, sha, now]
            self.dirty = True
        return sha

    @staticmethod
    def _confined(root: Path, path: str) -> bool:
        """Whether the link `path` is read as the index reads it: walked from the root,
        every link on the way staying inside (`outside` resolves through an alias that
        leads back in; the walk refuses it, so must the cache)."""
        try:
            read_head(root, path, 0)
        except UnsafePath:
            return False
        except OSError:
            pass
        return True

    def digest(self, index: WorkspaceIndex, key: str) -> Digest | None:
        """The hash of what a check of `key` reads now; None when it is not cacheable
        (missing, not a regular file, too large to parse)."""
        started = time.time_ns()
        overlay = index.overlay(key)
        if overlay is not None:
            return Digest(_hash(overlay.encode("utf-8", "surrogatepass")), started, True)
        try:
            st = os.stat(key)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size > index.config.max_file_size:
            return None
        if os.path.islink(key) and not self._confined(index.root, key):
            return None  # a link out (even back in through an alias): checked, not cached
        sha = self._sha_of(index.root, key, st)
        return None if sha is None else Digest(sha, started, False)

    # -- inputs -----------------------------------------------------------------------

    def fingerprint(self, index: WorkspaceIndex, path: str, tree: bool = False,
                    fresh: bool = False) -> str | None:
        """What a recorded input looks like now; None when it cannot be fingerprinted (a
        tree too large). Memoised until `new_pass` unless `fresh`."""
        memo = ("*" if tree else "") + path
        if not fresh:
            with self._lock:
                if self._generation != index.generation:  # the index heard of a change
                    self._fingerprints.clear()
                    self._generation = index.generation
                if memo in self._fingerprints:
                    return self._fingerprints[memo]
        fp = self._tree(path) if tree else self._input(index, path)
        with self._lock:
            self._fingerprints[memo] = fp
        return fp

    def _input(self, index: WorkspaceIndex, path: str) -> str | None:
        overlay = index.overlay(path)
        if overlay is not None:
            return "o" + _hash(overlay.encode("utf-8", "surrogatepass"))
        try:
            st = os.stat(path)
        except OSError as exc:
            return f"-{exc.errno}"
        if stat.S_ISREG(st.st_mode):
            if os.path.islink(path) and not self._confined(index.root, path):
                return "u"  # never read (`WorkspaceIndex` refuses it too): its content is moot
            sha = self._sha_of(index.root, path, st)
            if sha is None and outside(index.root, path) is not None:
                return "u"
            return None if sha is None else "f" + sha
        if stat.S_ISDIR(st.st_mode):
            try:
                with os.scandir(path) as it:
                    names = [e.name + ("/" if e.is_dir() else "@" if e.is_symlink() else "")
                             for e in it]
            except OSError as exc:
                return f"e{exc.errno}"
            # Open documents the disk does not have yet are part of what a rule sees in
            # the directory; one the disk has is listed already (opening a file must not
            # change its directory's fingerprint: every cached neighbour would miss).
            prefix = path + os.sep
            on_disk = {name.rstrip("/@") for name in names}
            names += [">" + p[len(prefix):] for p in index.overlays()
                      if p.startswith(prefix) and os.sep not in p[len(prefix):]
                      and p[len(prefix):] not in on_disk]
            return "d" + _hash("\0".join(sorted(names)).encode("utf-8", "surrogateescape"))
        return f"x{st.st_mode}"

    def _tree(self, path: str) -> str | None:
        """A `stat` of everything under `path` (run stores: checkpoints, locks, logs)."""
        parts: list[str] = []
        newest = 0
        stack = [path]
        while stack:
            current = stack.pop()
            try:
                st = os.stat(current)
            except OSError as exc:
                parts.append(f"{current}-{exc.errno}")
                continue
            newest = max(newest, _changed_ns(st))
            parts.append(f"{current}:{st.st_mode}:{':'.join(map(str, _stat_key(st)))}")
            if stat.S_ISDIR(st.st_mode):
                try:
                    with os.scandir(current) as it:
                        stack.extend(sorted((e.path for e in it), reverse=True))
                except OSError as exc:
                    parts.append(f"{current}!{exc.errno}")
            if len(parts) > TREE_MAX_ENTRIES:
                return None
        return "t" + _hash("\n".join(parts).encode("utf-8", "surrogateescape")) + \
            f":{newest}"

    def _settled_input(self, path: str, fp: str, before_ns: int) -> bool:
        """Whether the input last changed safely before `before_ns` (see `paths.settled`)."""
        if fp.startswith("t"):
            return settled(int(fp.rsplit(":", 1)[1]), before_ns, self.strict)
        if fp.startswith("o"):
            return True  # editor text is hashed whole: nothing to race with
        try:
            st = os.stat(path)
        except OSError:
            return True  # missing: creating it changes the parent directory's listing
        return settled(_changed_ns(st), before_ns, self.strict)

    # -- entries ----------------------------------------------------------------------

    def lookup(self, index: WorkspaceIndex, key: str, kind: Kind, digest: Digest,
               memo: bool = True) -> tuple[list[Finding], set[str]] | None:
        """(findings, the paths to re-check it after) when a stored entry still holds.

        `memo`: reuse input fingerprints taken earlier in this pass (a bulk check of a tree
        that is not changing meanwhile); False looks at every input afresh (an editor's
        single document: a run store may have changed without the index hearing of it)."""
        with self._lock:
            entry = self._entries.get(self._pack(key))
        if not isinstance(entry, dict) or entry.get("kind") != kind.value \
                or entry.get("sha") != digest.sha:
            self.misses += 1
            return None
        try:
            expires = entry.get("expires")
            if expires is not None and time.time() >= float(expires):
                self.misses += 1
                return None
            inputs = entry["inputs"]
            for path, tree, fp in inputs:
                if self.fingerprint(index, self._unpack(path), bool(tree),
                                    fresh=not memo) != fp:
                    self.misses += 1
                    return None
            findings = [decode_finding(raw) for raw in entry["findings"]]
            watch = {self._unpack(p) for p, tree, _ in inputs if not tree}
        except (KeyError, TypeError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        with self._lock:
            self._hit.add(self._pack(key))
        return findings, watch

    def store(self, index: WorkspaceIndex, key: str, kind: Kind, digest: Digest,
              findings: list[Finding], watch: set[str], trees: set[str],
              expires: float | None) -> bool:
        """Remember `findings` for `key`; False (and nothing stored) when the file or an
        input changed too recently to be sure the check saw it as it is now."""
        before = digest.started_ns
        if not digest.overlay:
            try:
                if not settled(_changed_ns(os.stat(key)), before, self.strict):
                    return False
            except OSError:
                return False
        inputs: list[list[Any]] = []
        # Files and listings are fingerprinted afresh (a memo could predate a change the
        # check saw); a tree's fingerprint includes every ctime, so a memo of it can only
        # be older, never equal to a later state.
        for path, tree in [*((p, False) for p in sorted(watch)),
                           *((p, True) for p in sorted(trees))]:
            fp = self.fingerprint(index, path, tree, fresh=not tree)
            if fp is None or not self._settled_input(path, fp, before):
                return False
            inputs.append([self._pack(path), int(tree), fp])
        entry = {"kind": kind.value, "sha": digest.sha, "expires": expires,
                 "inputs": inputs,
                 "findings": [encode_finding(f) for f in findings]}
        with self._lock:
            self._entries[self._pack(key)] = entry
            self._new.add(self._pack(key))
            self.dirty = True
        return True

    def reads_of(self, key: str
                 ) -> tuple[list[tuple[str, bool]], float | None, list[Any]] | None:
        """What the stored result of `key` was computed from — (input path, whether it is a
        run store's whole tree) — its expiry and its findings (encoded), when this process
        found the entry to hold or stored it; None otherwise (not checked through the
        cache, or not storable)."""
        packed = self._pack(key)
        with self._lock:
            if packed not in self._hit and packed not in self._new:
                return None
            entry = self._entries.get(packed)
        if not isinstance(entry, dict):
            return None
        try:
            inputs = [(self._unpack(str(path)), bool(tree)) for path, tree, _ in
                      entry["inputs"]]
            expires = entry.get("expires")
            return inputs, None if expires is None else float(expires), \
                list(entry["findings"])
        except (KeyError, TypeError, ValueError):
            return None

    def export(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Entries stored in this process, and the hashes they use (a worker's results,
        sent to the process that saves the file: one writer per check)."""
        with self._lock:
            entries = {k: self._entries[k] for k in self._new}
            used = {str(i[0]) for e in entries.values() for i in e["inputs"]} | set(entries)
            return entries, {p: h for p, h in self._hashes.items() if p in used}

    def absorb(self, entries: dict[str, Any], hashes: dict[str, Any]) -> None:
        with self._lock:
            self._entries.update(entries)
            self._hashes.update(hashes)
            self._new.update(entries)
            self.dirty = self.dirty or bool(entries or hashes)

    def save(self) -> None:
        with self._lock:
            if not self.dirty:
                return
            used = set(self._entries)
            for entry in self._entries.values():
                used.update(str(i[0]) for i in entry.get("inputs", ()))
            self._hashes = {p: h for p, h in self._hashes.items() if p in used}
            data = json.dumps({"key": self.key, "entries": self._entries,
                               "hashes": self._hashes}, separators=(",", ":"),
                              ensure_ascii=False).encode("utf-8", "surrogateescape")
            self.dirty = False
        try:
            atomic_write(self.path, data)
        except OSError as exc:
            log.warning("cannot write the cache %s: %s", self.path, exc)


# -- the cache directory ------------------------------------------------------------------


class ResultCache:
    """The cache directory: one `WorkspaceCache` per (workspace root, settings), and the
    ShellCheck results shared by all of them."""

    def __init__(self, directory: Path | None = None, *, strict: bool = True) -> None:
        self.strict = strict
        """False: trust any change made before a check started (see `paths.settled`)."""
        self.directory = Path(directory) if directory is not None else default_dir()
        self.base = self.directory / FORMAT
        self._workspaces: dict[str, WorkspaceCache] = {}
        self._shellcheck: dict[str, ShellcheckResults] = {}
        self._lock = threading.Lock()
        self.extra_hits = self.extra_misses = 0
        self._keys: dict[tuple[int, str], tuple[Any, Any, Any, str, Any]] = {}
        """(index, tools) → (its config, plugin layout and agents directory as objects, the
        key, the index itself: kept alive so the id is never reused)."""

    def workspace(self, index: WorkspaceIndex, tools: str = "") -> WorkspaceCache:
        """The entries for `index` as configured now; `tools` names external programs whose
        output the findings contain (ShellCheck's path and version)."""
        config: BatonConfig = index.config
        with self._lock:
            known = self._keys.get((id(index), tools))
        if known is not None and known[0] is config and known[1] is index.plugin \
                and known[2] is index.agents_dir:
            key = known[3]
        else:
            settings = json.dumps([code_fingerprint(), config.model_dump(mode="json"),
                                   repr(index.plugin), str(index.agents_dir), tools],
                                  sort_keys=True, default=str)
            key = _hash(f"{index.root}\0{settings}".encode("utf-8", "surrogateescape"))
            with self._lock:
                self._keys[(id(index), tools)] = (config, index.plugin, index.agents_dir, key,
                                                  index)
        with self._lock:
            found = self._workspaces.get(key)
            if found is None:
                found = self._workspaces[key] = WorkspaceCache(
                    self.base / "checks" / f"{key}.json", key, self.strict, str(index.root))
            return found

    def shellcheck(self, version: str) -> ShellcheckResults:
        with self._lock:
            found = self._shellcheck.get(version)
            if found is None:
                name = _hash(version.encode("utf-8", "surrogateescape"))
                found = self._shellcheck[version] = ShellcheckResults(
                    self.base / "shellcheck" / f"{name}.json")
            return found

    def new_pass(self) -> None:
        """Forget every input fingerprint taken so far (see `WorkspaceCache.new_pass`)."""
        with self._lock:
            parts = list(self._workspaces.values())
        for part in parts:
            part.new_pass()

    def save(self) -> None:
        """Write what changed; a cache that cannot be written is a warning, never an error."""
        with self._lock:
            parts: list[WorkspaceCache | ShellcheckResults] = [
                *self._workspaces.values(), *self._shellcheck.values()]
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tag = self.directory / "CACHEDIR.TAG"
            if not tag.exists():
                atomic_write(tag, _TAG.encode())
        except OSError as exc:
            log.warning("cannot create the cache directory %s: %s", self.directory, exc)
            return
        for part in parts:
            part.save()

    def export(self) -> dict[str, Any]:
        """What this process added (see `WorkspaceCache.export`), picklable."""
        with self._lock:
            workspaces = dict(self._workspaces)
            checks = dict(self._shellcheck)
        return {"workspaces": {k: (w.path, w.key, w.root, *w.export())
                               for k, w in workspaces.items()},
                "shellcheck": {v: r.export() for v, r in checks.items()},
                "stats": self.stats()}

    def absorb(self, exported: dict[str, Any]) -> None:
        """Take a worker's `export` in, to be saved by this process."""
        for key, (path, wkey, root, entries, hashes) in exported["workspaces"].items():
            with self._lock:
                found = self._workspaces.get(key)
                if found is None:
                    found = self._workspaces[key] = WorkspaceCache(path, wkey, self.strict,
                                                                   root)
            found.absorb(entries, hashes)
        for version, results in exported["shellcheck"].items():
            self.shellcheck(version).absorb(results)
        hits, misses = exported["stats"]
        self.extra_hits += hits
        self.extra_misses += misses

    def stats(self) -> tuple[int, int]:
        """(hits, misses) so far, over every workspace."""
        with self._lock:
            parts = list(self._workspaces.values())
        return (self.extra_hits + sum(p.hits for p in parts),
                self.extra_misses + sum(p.misses for p in parts))


class ShellcheckResults:
    """ShellCheck's json1 comments per block, for one ShellCheck version: keyed by a hash
    of the options and the block's text, so an edited command re-runs only its edited
    blocks and a cold check after `baton clean` is the only one that runs them all."""

    MAX_ENTRIES = 20_000

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._results: dict[str, list[Any]] | None = None
        self._new: set[str] = set()
        self.dirty = False

    def _load(self) -> dict[str, list[Any]]:
        if self._results is None:
            raw = read_json(self.path)
            self._results = raw if isinstance(raw, dict) else {}
        return self._results

    def get(self, key: str) -> list[dict[str, Any]] | None:
        with self._lock:
            found = self._load().get(key)
        return found if isinstance(found, list) else None

    def put(self, key: str, comments: list[dict[str, Any]]) -> None:
        with self._lock:
            results = self._load()
            results[key] = comments
            self._new.add(key)
            while len(results) > self.MAX_ENTRIES:
                del results[next(iter(results))]
            self.dirty = True

    def export(self) -> dict[str, list[Any]]:
        with self._lock:
            results = self._load()
            return {k: results[k] for k in self._new if k in results}

    def absorb(self, results: dict[str, list[Any]]) -> None:
        for key, comments in results.items():
            self.put(key, comments)

    def save(self) -> None:
        with self._lock:
            if not self.dirty or self._results is None:
                return
            data = json.dumps(self._results, separators=(",", ":")).encode()
            self.dirty = False
        try:
            atomic_write(self.path, data)
        except OSError as exc:
            log.warning("cannot write the cache %s: %s", self.path, exc)


def clean(directory: Path | None = None) -> list[Path]:
    """Remove every cache file Baton wrote under `directory`; the paths removed."""
    import shutil  # `baton clean` only

    root = Path(directory) if directory is not None else default_dir()
    removed: list[Path] = []
    if not root.is_dir():
        return removed
    for child in sorted(root.iterdir()):
        if child.name == "CACHEDIR.TAG" or (child.is_dir() and child.name.startswith("v")
                                            and child.name[1:].isdigit()):
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=True)
            else:
                child.unlink(missing_ok=True)
            removed.append(child)
    with contextlib.suppress(OSError):
        root.rmdir()  # only if nothing else lives there
    return removed

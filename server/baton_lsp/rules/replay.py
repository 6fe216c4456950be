"""Replaying a whole `baton check` whose inputs have not changed (like git's untracked cache,
one level above the per-file result cache), or only the part of it that did.

A check's output is decided by the request (the paths, the options, the working directory,
Baton's own code, the ShellCheck binary) and by what it read: the tree's shape — the
directories the discovery listed and the files it read or probed (`paths.look`) — and, for
each checked file, the file and every input the result cache recorded for it. When every
one of those last changed safely before the check started (`paths.settled`), the check
stores its output with one hash over their `stat`s, and beside it each path's `stat` and
each file's findings and inputs.

The next identical request `stat`s those paths and nothing else. If each looks the same, it
prints the stored output: no walk, no hashing, no models, no rules (this module imports
neither pydantic nor anything that does). If only files changed — no listing, nothing the
discovery looked at — the files that read a changed path are checked again (through the
result cache) and the others keep their stored findings: no walk either. Anything else — the
tree's shape changed, a stored expiry passed, a damaged file — and the check runs as usual.
Each check then records again.

The stored files live beside the per-file results, `v1/runs/<hash of the request>.json` and
`….more.json`, and `baton clean` removes them with the rest.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import stat
import time
from pathlib import Path

from ..lazylog import LazyLogger
from ..paths import KIND, LISTING, Look, blake2b, kind_of_path, listing_now, settled
from .cache import FORMAT, TREE_MAX_ENTRIES, atomic_write, code_fingerprint, read_json
from .shellcheck_tool import shellcheck_identity

TYPE_CHECKING = False
"""`typing.TYPE_CHECKING` without importing `typing` (this is a replayed check's path)."""
if TYPE_CHECKING:
    from typing import Any

log = LazyLogger(__name__)

MAX_RUNS = 64
"""Stored checks kept (each request has its own); the least recently written go first."""

_INO_MASK = (1 << 63) - 1
"""Inode numbers are unsigned 64-bit; the signature packs signed ones."""
_isabs = (lambda p: p.startswith("/")) if os.sep == "/" else os.path.isabs
"""`os.path.isabs` without its overhead where that is all it does (a call per path read)."""
_STAT_WIDTH = 4
"""Integers per path in the stored `stat`s: size, mtime, ctime, inode."""


class Request:
    """What was asked, as far as it shapes the output (not `--jobs`, not `-v`).

    The records here are plain classes, not dataclasses: `dataclasses` imports `inspect`
    (with `ast` and `dis`), a third of a warm check's imports."""

    __slots__ = ("cwd", "options", "paths")

    def __init__(self, paths: tuple[str, ...], options: tuple[str, ...], cwd: str) -> None:
        self.paths = paths
        """Absolute, as given (their order names the workspaces in the output's order)."""
        self.options = options
        """`--select`, `--ignore`, `--shellcheck`, the output format and whether in colour."""
        self.cwd = cwd
        """Text output names files relative to it."""

    def key(self) -> str:
        """Hash of the request, Baton's code (version, sources, YAML parser, Python) and the
        ShellCheck that would run."""
        raw = json.dumps([FORMAT, code_fingerprint(), shellcheck_identity(), self.cwd,
                          list(self.paths), list(self.options)])
        return blake2b(raw.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


class Target:
    """One checked file as the result cache holds it: what its findings came from."""

    __slots__ = ("expires", "findings", "inputs", "kind", "path", "root", "trees")

    def __init__(self, path: str, kind: str, root: str, inputs: list[str] | None = None,
                 trees: list[str] | None = None, findings: list[Any] | None = None,
                 expires: float | None = None) -> None:
        self.path = path
        self.kind = kind
        """A `Kind` value."""
        self.root = root
        """Its workspace root."""
        self.inputs: list[str] = [] if inputs is None else inputs
        self.trees: list[str] = [] if trees is None else trees
        """Run stores (checkpoint and lock directories) whose every entry was an input."""
        self.findings: list[Any] = [] if findings is None else findings
        """Encoded as the result cache stores them (`cache.encode_finding`)."""
        self.expires = expires


class Reads:
    """Everything a check read, gathered while it ran; `None` in `CheckResult` when some
    file's result could not be tied to its inputs (then nothing is recorded)."""

    __slots__ = ("shape", "started_ns", "targets")

    def __init__(self, started_ns: int, shape: list[Look] | None = None,
                 targets: list[Target] | None = None) -> None:
        self.started_ns = started_ns
        self.shape: list[Look] = [] if shape is None else shape
        """The tree's shape: what the discovery looked at, and how (`paths.look`)."""
        self.targets: list[Target] = [] if targets is None else targets


class Replayed:
    __slots__ = ("errors", "output", "paths")

    def __init__(self, output: str, errors: bool, paths: int) -> None:
        self.output = output
        self.errors = errors
        """Whether the findings held an error (the exit status)."""
        self.paths = paths


class Partial:
    """Only files changed since the stored check: check `changed` again, keep `kept`."""

    __slots__ = ("changed", "kept", "shape")

    def __init__(self, changed: list[Target], kept: list[Target], shape: list[Look]) -> None:
        self.changed = changed
        """To check again (path, kind and root only)."""
        self.kept = kept
        """Unchanged, with their stored findings and inputs."""
        self.shape = shape
        """What the stored check's discovery looked at (as it still is)."""


def _stats(base: str, rels: list[str], settled_before: int | None = None,
           strict: bool = True) -> list[int] | None:
    """The `stat` of every path (`base` + each; size, mtime, ctime, inode; a missing path by
    its error), flat. With `settled_before`, None when a path changed after (or just
    before) that time: the same `stat` judges both, so nothing can change between the
    judgement and what is stored."""
    flat: list[int] = []
    add = flat.extend
    lstat_, stat_, is_link = os.lstat, os.stat, stat.S_ISLNK
    for rel in rels:
        try:
            st = link = lstat_(base + rel)
            if is_link(link.st_mode):  # what it points at, and the link itself: one
                st = stat_(base + rel)  # retargeted (even at the same file) is a change
        except OSError as exc:
            add((-1, exc.errno or 0, 0, 0))
            continue
        ctime = max(st.st_ctime_ns, link.st_ctime_ns)
        if settled_before is not None and not settled(
                max(ctime, st.st_mtime_ns), settled_before, strict):
            return None
        ino = st.st_ino if st is link else st.st_ino ^ (link.st_ino << 17)
        add((st.st_size, st.st_mtime_ns, ctime, ino & _INO_MASK))
    return flat


def _signature(flat: list[int]) -> str:
    """One hash over the `stat`s: equal only while none of the paths changed."""
    return blake2b(array.array("q", flat).tobytes(), digest_size=20).hexdigest()


def _runs_dir(directory: Path) -> Path:
    return Path(directory) / FORMAT / "runs"


def replay(directory: Path, request: Request) -> Replayed | Partial | None:
    """The stored output of `request` if nothing it was computed from has changed since;
    what to check again if only files changed; None: check everything."""
    key = request.key()
    runs = _runs_dir(directory)
    raw = read_json(runs / f"{key}.json")
    if not isinstance(raw, dict) or raw.get("key") != key:
        return None
    try:
        base, rels, expected = str(raw["base"]), list(raw["paths"]), str(raw["signature"])
        output, errors, expires = str(raw["output"]), bool(raw["errors"]), raw["expires"]
        expired = expires is not None and time.time() >= float(expires)
        if not all(isinstance(p, str) for p in rels):
            return None
    except (KeyError, TypeError, ValueError):
        return None
    now = _stats(base, rels)
    if now is None:
        return None
    if _signature(now) == expected and not expired:
        log.info("nothing the last identical check read has changed (%d paths): its output "
                 "replayed", len(rels))
        return Replayed(output, errors, len(rels))
    # Some files changed, or a judgement against the clock turned (theirs are checked).
    return _partial(runs / f"{key}.more.json", key, expected, base, rels, now)


def _partial(path: Path, key: str, signature: str, base: str, rels: list[str],
             now: list[int]) -> Partial | None:
    raw = read_json(path)
    try:
        if not isinstance(raw, dict) or raw.get("key") != key \
                or raw.get("signature") != signature:
            return None
        before = list(raw["stats"])
        shape = [(base + rels[int(i)], str(how), None if seen is None else str(seen))
                 for i, how, seen in raw["shape"]]
        if len(before) != len(now):
            return None
        changed = {i for i in range(len(rels))
                   if now[i * _STAT_WIDTH:(i + 1) * _STAT_WIDTH]
                   != before[i * _STAT_WIDTH:(i + 1) * _STAT_WIDTH]}
        if not all(_still(look) for (i, _, _), look in zip(raw["shape"], shape, strict=True)
                   if int(i) in changed):
            log.info("the tree's shape changed since the last identical check: checking")
            return None
        # Each run store: its path, and whether any of its entries changed.
        stores = [(base + rels[int(top)], bool(changed.intersection(int(i) for i in entries)))
                  for top, entries in raw["trees"]]
        redo: list[Target] = []
        kept: list[Target] = []
        for at, kind, root, deps, tree_ids, findings, expires in raw["targets"]:
            at, deps = int(at), [int(i) for i in deps]
            trees = [stores[int(i)] for i in tree_ids]
            target = Target(base + rels[at], str(kind), str(root))
            if changed.intersection(deps) or any(moved for _, moved in trees) or (
                    expires is not None and time.time() >= float(expires)):
                redo.append(target)
                continue
            target.inputs = [base + rels[i] for i in deps if i != at]
            target.trees = [path for path, _ in trees]
            target.findings = list(findings)
            target.expires = None if expires is None else float(expires)
            kept.append(target)
    except (KeyError, TypeError, ValueError, IndexError):
        return None
    log.info("%d of %d files read something that changed since the last identical check, "
             "or were judged against the clock: checking them again", len(redo),
             len(redo) + len(kept))
    return Partial(redo, kept, shape)


def _still(look: Look) -> bool:
    """Whether a path the discovery looked at, whose `stat` changed, still shows it what it
    saw: the same kind of thing, the same names (a file replaced by a rename, as editors
    and git write them, changes its directory but not the names in it)."""
    path, how, seen = look
    if how == KIND:
        return kind_of_path(path) == seen
    if how == LISTING:
        return seen is not None and listing_now(path) == seen
    return False  # CONTENT, or anything unknown


def _tree_entries(root: str) -> list[str] | None:
    """Every directory and file under `root` (itself included); None past the size limit."""
    out = [root]
    stack = [root]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            out.append(entry.path)
            with contextlib.suppress(OSError):
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
        if len(out) > TREE_MAX_ENTRIES:
            return None
    return out


def record(directory: Path, request: Request, reads: Reads, output: str, errors: bool,
           strict: bool = True) -> bool:
    """Store `output` for `request`; False (nothing stored) when anything read changed too
    recently to be sure the check saw it as it is now, or the cache cannot be written."""
    index: dict[str, int] = {}
    paths: list[str] = []

    def at(path: str) -> int:
        found = index.get(path)
        if found is None:
            absolute = path if _isabs(path) else os.path.abspath(path)
            found = index.get(absolute)
            if found is None:
                found = index[absolute] = len(paths)
                paths.append(absolute)
            index[path] = found
        return found

    shape = sorted({(at(path), how, seen) for path, how, seen in reads.shape},
                   key=lambda look: (look[0], look[1], look[2] or ""))
    rows: list[list[Any]] = []
    expires: float | None = None
    trees: dict[str, int] = {}
    """Each run store's number in `groups`: every plan and agent of a workspace names the
    same ones, walked and stored once."""
    groups: list[list[Any]] = []
    for target in reads.targets:
        deps = {at(target.path), *(at(p) for p in target.inputs)}
        for tree in target.trees:
            if tree not in trees:
                entries = _tree_entries(tree)
                if entries is None:
                    return False
                trees[tree] = len(groups)
                groups.append([at(tree), sorted({at(p) for p in entries})])
        rows.append([at(target.path), target.kind, target.root, sorted(deps),
                     sorted({trees[t] for t in target.trees}), target.findings,
                     target.expires])
        if target.expires is not None:
            expires = target.expires if expires is None else min(expires, target.expires)
    base = os.path.commonprefix(paths)  # noqa: RUF071 - any string prefix shortens them
    rels = [p[len(base):] for p in paths]
    flat = _stats(base, rels, reads.started_ns, strict)
    if flat is None:
        log.info("not storing the check for replay: something it read changed while it ran")
        return False
    key = request.key()
    signature = _signature(flat)
    main = {"key": key, "base": base, "paths": rels, "signature": signature,
            "expires": expires, "output": output, "errors": errors}
    more = {"key": key, "signature": signature, "stats": flat,
            "shape": [list(look) for look in shape], "trees": groups, "targets": rows}
    runs = _runs_dir(directory)
    try:
        # The details first: a reader that finds the new main file finds them too.
        for name, data in ((f"{key}.more.json", more), (f"{key}.json", main)):
            atomic_write(runs / name, json.dumps(data, separators=(",", ":"),
                                                 ensure_ascii=False)
                         .encode("utf-8", "surrogateescape"))
    except OSError as exc:
        log.warning("cannot write the cache %s: %s", runs, exc)
        return False
    _evict(runs)
    return True


def _evict(runs: Path) -> None:
    """Keep the `MAX_RUNS` most recently written checks (each a main file and its details)."""
    try:
        with os.scandir(runs) as it:
            found = [(e.stat().st_mtime_ns, e.path) for e in it
                     if e.name.endswith(".json") and not e.name.endswith(".more.json")
                     and stat.S_ISREG(e.stat().st_mode)]
    except OSError:
        return
    for _, path in sorted(found)[:-MAX_RUNS]:
        for victim in (path, path[:-len(".json")] + ".more.json"):
            with contextlib.suppress(OSError):
                os.unlink(victim)

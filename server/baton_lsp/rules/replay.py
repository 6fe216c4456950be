"""Replaying a whole `baton check` whose inputs have not changed (like git's untracked cache,
one level above the per-file result cache).

A check's output is decided by the request (the paths, the options, the working directory,
Baton's own code, the ShellCheck binary) and by what it read: the directories the discovery
listed and the files it read or probed (`paths.look`), every checked file, and every input
the result cache recorded for each of them. When every one of those last changed safely
before the check started (`paths.settled`), the check stores its output with one hash over
their `stat`s. The next identical request `stat`s those paths and nothing else; if each looks
the same it prints the stored output: no walk, no hashing, no models, no rules (this module
imports neither pydantic nor anything that does). Anything else — a difference, a stored
expiry passed, a damaged file — and the check runs as usual, then records again.

The stored files live beside the per-file results, `v1/runs/<hash of the request>.json`,
and `baton clean` removes them with the rest.
"""

from __future__ import annotations

import array
import contextlib
import hashlib
import json
import logging
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..paths import settled
from .cache import FORMAT, TREE_MAX_ENTRIES, atomic_write, code_fingerprint, read_json
from .shellcheck_tool import shellcheck_identity

log = logging.getLogger(__name__)

MAX_RUNS = 64
"""Stored checks kept (each request has its own); the least recently written go first."""

_INO_MASK = (1 << 63) - 1
"""Inode numbers are unsigned 64-bit; the signature packs signed ones."""


@dataclass(frozen=True)
class Request:
    """What was asked, as far as it shapes the output (not `--jobs`, not `-v`)."""

    paths: tuple[str, ...]
    """Absolute, as given (their order names the workspaces in the output's order)."""
    options: tuple[str, ...]
    """`--select`, `--ignore`, `--shellcheck`, the output format and whether in colour."""
    cwd: str
    """Text output names files relative to it."""

    def key(self) -> str:
        """Hash of the request, Baton's code (version, sources, YAML parser, Python) and the
        ShellCheck that would run."""
        raw = json.dumps([FORMAT, code_fingerprint(), shellcheck_identity(), self.cwd,
                          list(self.paths), list(self.options)])
        return hashlib.blake2b(raw.encode("utf-8", "surrogateescape"),
                               digest_size=20).hexdigest()


@dataclass
class Reads:
    """Everything a check read, gathered while it ran; `None` in `CheckResult` when some
    file's result could not be tied to its inputs (then nothing is recorded)."""

    started_ns: int
    paths: list[str] = field(default_factory=list)
    trees: list[str] = field(default_factory=list)
    """Run stores (checkpoint and lock directories) whose every entry was an input."""
    expires: float | None = None


@dataclass(frozen=True)
class Replayed:
    output: str
    errors: bool
    """Whether the findings held an error (the exit status)."""
    paths: int


def _signature(base: str, rels: list[str], settled_before: int | None = None,
               strict: bool = True) -> str | None:
    """One hash over the `stat` of every path (`base` + each; size, mtime, ctime, inode; a
    missing path by its error): equal only while none of them changed. With
    `settled_before`, None when a path changed after (or just before) that time: the same
    `stat` judges both, so nothing can change between the judgement and the hash."""
    flat: list[int] = []
    add = flat.extend
    st_ = os.stat
    for rel in rels:
        try:
            st = st_(base + rel)
        except OSError as exc:
            add((-1, exc.errno or 0, 0, 0))
            continue
        if settled_before is not None and not settled(
                max(st.st_ctime_ns, st.st_mtime_ns), settled_before, strict):
            return None
        add((st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino & _INO_MASK))
    return hashlib.blake2b(array.array("q", flat).tobytes(), digest_size=20).hexdigest()


def _runs_dir(directory: Path) -> Path:
    return Path(directory) / FORMAT / "runs"


def replay(directory: Path, request: Request) -> Replayed | None:
    """The stored output of `request`, if nothing it was computed from has changed since."""
    key = request.key()
    raw = read_json(_runs_dir(directory) / f"{key}.json")
    if not isinstance(raw, dict) or raw.get("key") != key:
        return None
    try:
        base, rels, expected = str(raw["base"]), list(raw["paths"]), str(raw["signature"])
        output, errors, expires = str(raw["output"]), bool(raw["errors"]), raw["expires"]
        if expires is not None and time.time() >= float(expires):
            log.info("the stored check has expired: checking")
            return None
        if not all(isinstance(p, str) for p in rels):
            return None
    except (KeyError, TypeError, ValueError):
        return None
    if _signature(base, rels) != expected:
        log.info("something the last check read has changed: checking")
        return None
    log.info("nothing the last identical check read has changed (%d paths): its output "
             "replayed", len(rels))
    return Replayed(output, errors, len(rels))


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
    paths = list(reads.paths)
    for tree in reads.trees:
        entries = _tree_entries(tree)
        if entries is None:
            return False
        paths += entries
    paths = list(dict.fromkeys(os.path.abspath(p) for p in paths))
    try:
        base = os.path.commonpath(paths) if paths else ""
    except ValueError:  # paths on different drives
        base = ""
    base = "" if base == os.path.dirname(base) else base  # the file system's root
    rels = [p[len(base):] for p in paths]
    signature = _signature(base, rels, reads.started_ns, strict)
    if signature is None:
        log.info("not storing the check for replay: something it read changed while it ran")
        return False
    data = {"key": request.key(), "base": base, "paths": rels, "signature": signature,
            "expires": reads.expires, "output": output, "errors": errors}
    runs = _runs_dir(directory)
    try:
        atomic_write(runs / f"{data['key']}.json",
                     json.dumps(data, separators=(",", ":"), ensure_ascii=False)
                     .encode("utf-8", "surrogateescape"))
    except OSError as exc:
        log.warning("cannot write the cache %s: %s", runs, exc)
        return False
    _evict(runs)
    return True


def _evict(runs: Path) -> None:
    """Keep the `MAX_RUNS` most recently written checks."""
    try:
        with os.scandir(runs) as it:
            found = [(e.stat().st_mtime_ns, e.path) for e in it
                     if e.name.endswith(".json") and stat.S_ISREG(e.stat().st_mode)]
    except OSError:
        return
    for _, path in sorted(found)[:-MAX_RUNS]:
        with contextlib.suppress(OSError):
            os.unlink(path)

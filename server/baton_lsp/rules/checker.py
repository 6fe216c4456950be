"""`check` over arbitrary paths: find the workspaces, check each file once."""

from __future__ import annotations

import gc
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError, PathError
from ..lazylog import LazyLogger, configure_now
from ..model.base import Finding, Kind
from ..paths import CONTENT, KIND, Look, look, norm, recording_looks
from ..runs.confine import OutsideLink, read_head
from ..workspace.config import config_sources, load_config
from ..workspace.discovery import find_root, find_workspaces
from ..workspace.index import WorkspaceIndex
from .base import unknown_selectors
from .cache import ResultCache, decode_finding
from .engine import cached_files, check_file, read_for_rules, tools_key
from .forked import can_fork, check_forked, copies_for, segments_of
from .replay import Partial, Reads, Target

if TYPE_CHECKING:  # loaded only by a parallel check
    import logging

log = LazyLogger(__name__)  # not `logging`: a check that logs nothing never loads it


@dataclass
class CheckResult:
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    workspaces: list[Path] = field(default_factory=list)
    targets: list[tuple[WorkspaceIndex, str, Kind]] = field(default_factory=list)
    reads: Reads | None = None
    """With a result cache: everything the check read, if every file's result is tied to
    its inputs (for `replay.record`)."""


_PHASE_HEADING = re.compile(r"^#{1,3} Phase \d", re.MULTILINE)


def guess_kind(path: Path, root: Path | None = None) -> Kind | None:
    """Kind of a file outside the usual layout, named explicitly on the command line; its
    head is read from `root` (default: its directory) as the index reads files, so a link
    leaving the workspace is taken for a plan and reported (BTN400), not followed."""
    name = path.name
    if name.endswith(".jsonl"):
        return Kind.ERRORS_LOG
    if name.endswith((".sh", ".state")):
        return Kind.STATE
    if name.endswith(".json") and "checkpoint" in str(path).lower():
        return Kind.CHECKPOINT
    if not name.endswith(".md"):
        return None
    parts = path.parts
    if "agents" in parts:
        return Kind.AGENT
    if "commands" in parts:
        return Kind.COMMAND
    try:
        head = read_head(root or path.parent, path, 65536)[0].decode("utf-8", errors="replace")
    except OutsideLink:
        return Kind.PLAN
    except OSError:
        return None
    return Kind.PLAN if _PHASE_HEADING.search(head) or "plan" in name.lower() else None


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for a bulk check.

    Parsing allocates millions of small, acyclic objects, so collections free nothing;
    yet the full ones walk every document the index holds, which made a 2,000-plan check
    40% slower and superlinear in the number of files.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def check_paths(paths: list[Path], overrides: dict[str, Any] | None = None,
                jobs: int | None = None, cache: ResultCache | None = None) -> CheckResult:
    """Check files and directories; raises PathError / ConfigError for unusable input.

    `overrides` are the CLI's own flags (`--select`, `--ignore`, `--shellcheck`), already
    checked by its argument parser: put over each workspace's configuration unvalidated
    (`load_config`'s `flags`). `jobs` is the number of worker processes (None: one per core
    once there are enough files to pay for starting them; 1: in this process). With
    `cache`, files whose stored results still hold are not checked again (looked up here,
    before any worker starts), what was checked is stored and saved, and `reads` tells what
    the check read."""
    started = time.time_ns()
    result = CheckResult()
    with recording_looks() as looked:
        targets = _find_targets(paths, _Indexes(overrides, result))
        _check_targets(result, targets, jobs, cache)
    if cache is not None and result.workspaces:
        result.reads = _reads(cache, result.targets, looked, started)
    return result


def recheck(partial: Partial, overrides: dict[str, Any] | None = None,
            jobs: int | None = None, cache: ResultCache | None = None
            ) -> CheckResult | None:
    """The result of a stored check of which only some files changed (see `replay`): those
    are checked again, as that check found them (workspace root and kind), the others keep
    their stored findings. No walk: the tree's shape is what it was. None when the stored
    check cannot be read back (then check the paths)."""
    try:
        kept = [decode_finding(raw) for target in partial.kept for raw in target.findings]
        kinds = [Kind(t.kind) for t in partial.changed]
    except (KeyError, TypeError, ValueError):
        log.info("the stored check could not be read back: checking")
        return None
    started = time.time_ns()
    result = CheckResult()
    indexes = _Indexes(overrides, result)
    with recording_looks() as looked:
        targets = [(indexes.get(Path(t.root)), t.path, kind)
                   for t, kind in zip(partial.changed, kinds, strict=True)]
        _check_targets(result, targets, jobs, cache)
    result.files += len(partial.kept)
    result.findings.extend(kept)
    for root in dict.fromkeys(t.root for t in partial.kept):
        if Path(root) not in result.workspaces:
            result.workspaces.append(Path(root))
    result.findings.sort(key=Finding.sort_key)
    if cache is not None:
        reads = _reads(cache, result.targets, looked, started)
        if reads is not None:
            reads.shape += partial.shape
            reads.targets += partial.kept
        result.reads = reads
    return result


class _Indexes:
    """One `WorkspaceIndex` per workspace root a check meets, in the order met."""

    def __init__(self, overrides: dict[str, Any] | None, result: CheckResult) -> None:
        self.overrides = overrides
        self.result = result
        self.known: dict[str, WorkspaceIndex] = {}

    def get(self, root: Path) -> WorkspaceIndex:
        key = norm(root)
        if key not in self.known:
            config = load_config(root, flags=self.overrides)
            _check_selectors(root, config.select, config.ignore)
            self.known[key] = WorkspaceIndex(root, config)
            self.result.workspaces.append(Path(key))
        return self.known[key]


def _check_selectors(root: Path, select: list[str], ignore: list[str]) -> None:
    """Raise ConfigError naming an unknown rule code or prefix in the workspace's `select` or
    `ignore` (the CLI's own flags are checked before: what is left came from a file)."""
    for setting, values in (("select", select), ("ignore", ignore)):
        if not values:
            continue
        bad = unknown_selectors(values)
        if bad:
            where = ", ".join(str(s) for s in config_sources(root)) or str(root)
            named = ", ".join(f"`{b}`" for b in bad)
            raise ConfigError(f"{where}: unknown rule selector {named} in `{setting}`: no rule "
                              "code starts with it (see `baton rule --list`)")


def _reads(cache: ResultCache, targets: list[tuple[WorkspaceIndex, str, Kind]],
           looked: list[Look], started_ns: int) -> Reads | None:
    reads = Reads(started_ns, shape=list(looked))
    for idx, file, kind in targets:
        found = cache.workspace(idx, tools_key(idx.config)).reads_of(file)
        if found is None:
            return None
        inputs, expires, findings = found
        reads.targets.append(Target(
            file, kind.value, str(idx.root), inputs=[p for p, tree in inputs if not tree],
            trees=[p for p, tree in inputs if tree], findings=findings, expires=expires))
    return reads


def _find_targets(paths: list[Path], indexes: _Indexes
                  ) -> list[tuple[WorkspaceIndex, str, Kind]]:
    targets: list[tuple[WorkspaceIndex, str, Kind]] = []
    seen: set[str] = set()
    for raw in paths:
        path = Path(os.path.abspath(raw))
        look(path, CONTENT if path.is_file() else KIND)  # a file named may be read (its kind)
        if not path.exists():
            if path.is_symlink():
                raise PathError(f"{raw}: cannot follow this symbolic link (it is broken or "
                                "loops back on itself)")
            raise PathError(f"{raw}: no such file or directory")
        if not path.is_dir():  # a file, or a FIFO or device named: reported, not read
            root = find_root(path) or path.parent
            idx = indexes.get(root)
            kind = idx.kind_of(path) or guess_kind(path, idx.root)
            if kind is None:
                continue
            if str(path) not in seen:
                seen.add(str(path))
                targets.append((idx, str(path), kind))
            continue
        roots = find_workspaces(path)
        prefix = norm(path) + os.sep
        for root in roots:
            idx = indexes.get(root)
            for file, kind in idx.files().items():
                if (file + os.sep).startswith(prefix) and file not in seen:
                    seen.add(file)
                    targets.append((idx, file, kind))
    return targets


def _check_targets(result: CheckResult, targets: list[tuple[WorkspaceIndex, str, Kind]],
                   jobs: int | None, cache: ResultCache | None) -> None:
    result.files = len(targets)
    result.targets = targets
    todo = targets
    if cache is not None:
        todo = []
        found = cached_files(cache, targets)
        for (idx, file, kind), (_, hit) in zip(targets, found, strict=True):
            if hit is None:
                todo.append((idx, file, kind))
            else:
                result.findings.extend(hit)
    copies = copies_for(len(todo), jobs) if can_fork() else 1
    workers = 1 if copies > 1 else _worker_count(len(todo), jobs)
    if copies > 1:
        # The commands ShellCheck checks stay in this process, where their blocks go to
        # ShellCheck at once (`_shellcheck_first`) while the copies check the other files.
        slow, rest = _by_shellcheck(todo)

        def own() -> Callable[[], list[Finding]]:
            return _shellcheck_first(slow, cache)

        with _gc_paused():
            result.findings.extend(check_forked(
                rest, _segments(rest, copies), lambda some: _check_here(some, cache), cache,
                own=own if slow else None))
    elif workers > 1:
        result.findings.extend(_check_parallel(todo, workers, cache))
    else:
        with _gc_paused():
            result.findings.extend(_check_here(todo, cache))
    if cache is not None:
        cache.save()
        log.info("%d of %d files from the result cache in %s", len(targets) - len(todo),
                 len(targets), cache.directory)
    result.findings.sort(key=Finding.sort_key)


def _shellchecked(item: tuple[WorkspaceIndex, str, Kind | None]) -> bool:
    """Whether BTN330 may run ShellCheck on this file's blocks."""
    idx, _, kind = item
    return kind in (Kind.COMMAND, Kind.OPENCODE_COMMAND) and idx.config.shellcheck != "off"


_Target = tuple[WorkspaceIndex, str, Kind | None]


def _by_shellcheck(todo: Sequence[_Target]) -> tuple[list[_Target], list[_Target]]:
    """(the files BTN330 may run ShellCheck on, the others), each in `todo`'s order."""
    slow: list[_Target] = []
    rest: list[_Target] = []
    for item in todo:
        (slow if _shellchecked(item) else rest).append(item)
    return slow, rest


def _shellcheck_first(commands: Sequence[tuple[WorkspaceIndex, str, Kind | None]],
                      cache: ResultCache | None) -> Callable[[], list[Finding]]:
    """Start ShellCheck on every block of `commands` (in the background, on the other
    cores) and return what checks them once everything else is checked: by then its
    results are ready or nearly."""
    # Largest first: its ShellCheck process starts first and does not finish last, alone.
    ordered = sorted(commands, key=lambda item: -_size(item[1]))
    read: dict[str, Any] = {}  # parsed once, for the prefetch and the check

    def parsed() -> Iterator[tuple[Any, Any]]:
        """Each command as it is parsed: its blocks go to ShellCheck before the next is
        read, so the first process starts after one file, not all of them."""
        for idx, file, kind in ordered:
            found = read[file] = read_for_rules(idx, norm(file), kind or Kind.COMMAND, cache)
            if found is not None:
                yield found

    if ordered:
        from .command_shellcheck import prefetch  # only when commands are checked

        prefetch(parsed())

    def finish() -> list[Finding]:
        return [finding for idx, file, kind in ordered
                for finding in check_file(idx, file, kind, cache, read=read.get(file))]

    return finish


def _check_here(todo: Sequence[tuple[WorkspaceIndex, str, Kind | None]],
                cache: ResultCache | None) -> list[Finding]:
    """Check `todo` in this process: ShellCheck is started first on every command's blocks,
    the commands are checked last."""
    slow, rest = _by_shellcheck(todo)
    finish = _shellcheck_first(slow, cache)
    out: list[Finding] = []
    for idx, file, kind in rest:
        out.extend(check_file(idx, file, kind, cache))
    out.extend(finish())
    return out


COST_PER_BYTE: dict[Kind | None, int] = {
    Kind.COMMAND: 4, Kind.OPENCODE_COMMAND: 4, Kind.SKILL: 3, Kind.REGISTRY: 3,
    Kind.AGENT: 2, Kind.OPENCODE_AGENT: 2,
}
"""A byte's checking time by file kind, relative to a plan's (1, and every kind not named):
bash lexing and the Task blocks make a command's byte about four times a plan's
(BENCHMARKS.md)."""

FILE_COST = 2048
"""What checking any file costs besides its bytes, in plan bytes."""

_KIND_RANK: dict[Kind | None, int] = {
    Kind.COMMAND: 0, Kind.OPENCODE_COMMAND: 0, Kind.SKILL: 0, Kind.PLAN: 1,
    Kind.AGENT: 2, Kind.OPENCODE_AGENT: 2,
}
"""How a forked check orders files before cutting them into runs: the kinds whose rules
and cross-file facts cost most to load at the ends, the plans (cheap to load, and the most
files) in the middle, where two runs meet."""


def _cost(path: str, kind: Kind | None) -> int:
    return FILE_COST + _size(path) * COST_PER_BYTE.get(kind, 1)


def _segments(todo: Sequence[tuple[WorkspaceIndex, str, Kind | None]], count: int
              ) -> list[list[int]]:
    return segments_of([_cost(file, kind) for _, file, kind in todo],
                       [_KIND_RANK.get(kind, 3) for _, _, kind in todo], count)


PARALLEL_MIN_FILES = 400
"""Below this many files a second process costs more than it saves."""


def _worker_count(files: int, jobs: int | None) -> int:
    if jobs is not None:
        return max(1, min(jobs, files))
    if files < PARALLEL_MIN_FILES:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))


def _check_chunk(chunk: list[tuple[str, Any, str, Kind | None]],
                 cache_dir: Path | None, strict: bool = True
                 ) -> tuple[list[Finding], dict[str, Any] | None]:
    """Worker: one index per workspace root, built from the parent's configuration; what it
    stored in the cache goes back to the parent, the one process that writes the file."""
    local: dict[str, WorkspaceIndex] = {}
    out: list[Finding] = []
    cache = ResultCache(cache_dir, strict=strict) if cache_dir is not None else None
    with _gc_paused():
        for root, config, file, kind in chunk:
            idx = local.get(root)
            if idx is None:
                idx = local[root] = WorkspaceIndex(Path(root), config)
            out.extend(check_file(idx, file, kind, cache))
    return out, cache.export() if cache is not None else None


def _worker_logging(level: int, formatter: logging.Formatter | None) -> None:
    """A spawned worker logs like its parent (a forked one inherited the handlers);
    without a handler, logging's last resort would print whole tracebacks."""
    import logging  # a parallel check's workers only

    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler()
    if formatter is not None:
        handler.setFormatter(formatter)
    root.addHandler(handler)
    root.setLevel(level)


def _picklable(value: object) -> bool:
    """Whether `value` can be handed to a spawned worker."""
    import pickle  # a parallel check only

    try:
        pickle.dumps(value)
    except Exception:  # any object's __reduce__ may raise anything
        return False
    return True


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _check_parallel(targets: Sequence[tuple[WorkspaceIndex, str, Kind | None]],
                    workers: int, cache: ResultCache | None = None) -> list[Finding]:
    """Split the files across processes (interleaved, so big and small files mix)."""
    # a parallel check only
    import functools
    import multiprocessing
    import threading
    from concurrent.futures import ProcessPoolExecutor

    items = [(str(idx.root), idx.config, file, kind) for idx, file, kind in targets]
    # Balance by size, largest first onto the least loaded worker: file kinds alternate in
    # directory order (plan, report, plan, …), so a plain interleave can give one worker
    # all the plans.
    sized = sorted(((_size(it[2]), it) for it in items), key=lambda pair: -pair[0])
    chunks: list[list[tuple[str, Any, str, Kind | None]]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for size, item in sized:
        i = loads.index(min(loads))
        chunks[i].append(item)
        loads[i] += size + 512
    method = "fork" if hasattr(os, "fork") and threading.active_count() == 1 else "spawn"
    ctx = multiprocessing.get_context(method)
    findings: list[Finding] = []
    work = functools.partial(_check_chunk, cache_dir=cache.directory if cache else None,
                             strict=cache.strict if cache else True)
    import logging  # a parallel check only

    configure_now()  # the CLI's handler, deferred until now, is what the workers inherit
    root = logging.getLogger()
    formatter = root.handlers[0].formatter if root.handlers else None
    if method == "spawn" and not _picklable(formatter):
        formatter = None  # a host's formatter bound to its stream: the workers' default
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx, initializer=_worker_logging,
                             initargs=(root.level, formatter)) as pool:
        for part, exported in pool.map(work, chunks):
            findings.extend(part)
            if cache is not None and exported is not None:
                cache.absorb(exported)
    return findings

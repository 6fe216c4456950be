"""Phases shipped to other machines as git bundles and brought back as branches.

A phase that runs on a worker gets no worktree of the user's repository: the caller sends a
bundle holding the phase's base commit (`Isolation.base_bundle`), the worker makes a fresh
repository of it with the phase's branch `baton/<workflow>/phase-<N>` checked out
(`checkout_bundle`), the agent works there, and the worker commits what it left with the
same staging rules as a local phase worktree and returns a bundle of `base..branch`
(`bundle_branch`). The caller writes that bundle durably under the run's directory before
it imports anything (`Isolation.land_bundle`), so a branch returned just before the caller
died is imported on resume instead of paying for the agent again, and lands it as the
phase's branch with the git record `Isolation.commit_tree` gives: `merge_wave` merges it
with the same code, so `git log --first-parent` does not depend on where a phase ran.

The worker side is pure git and files (no `Run`): importable on a machine that has only
the package and git. Bundle semantics are git's (`git help bundle`): a bundle is a header
listing prerequisite commits and refs, then a pack; `git bundle create` refuses an empty
range, and `git bundle verify` checks the header and the prerequisites but not the pack,
which only an actual fetch reads in full.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..runs import confine
from .git import GitError, Repo, init_repo, repo_of

MAX_BUNDLE = 1 << 30
"""The largest bundle Baton writes, reads or imports (bytes): a phase's work is far
smaller, and a worker's answer must not fill the caller's disk or memory."""
BASE_BUNDLE_FILE = "baton-base.bundle"
"""Where `checkout_bundle` puts the base bundle while it reads it (in the new repository's
git directory, removed afterwards)."""
OWN_PATHS = (".claude/data", ".claude/tmp", ".claude/worktrees")
"""Baton's own places in a workspace at the repository's top, never in a phase's commit:
what `bundle_branch` leaves out when the caller names nothing (`Isolation.unlike_user` is
the exact list: it adds the topic directory, the agents' scratch directory and a tracked
plan, whose worker copy holds the caller's progress markers)."""
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class ShippingError(Exception):
    """A bundle that cannot be checked out, made or landed; the message says why."""


class ConflictMarkers(ShippingError):
    """The agent's changes hold conflict markers: Baton never commits them (as for a local
    worktree, `Isolation.commit_tree`)."""

    def __init__(self, files: list[str], where: Path) -> None:
        self.files = files
        self.where = where
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10
                                         else "")
        super().__init__(f"conflict markers in {shown} ({where})")

    def __reduce__(self) -> tuple[type[ConflictMarkers], tuple[list[str], Path]]:
        """Pickled as its files and place: a worker's failure crosses to the caller."""
        return (type(self), (self.files, self.where))


@dataclass(frozen=True)
class BaseSource:
    """Where a worker gets a phase's base: a bundle of it and its history; or, when the
    workers fetch from the repository's remote (`remote`, the URL, and `fetch`, the refs
    there whose history the base builds on), a bundle of only the commits the remote lacks
    (empty: none)."""

    bundle: bytes
    remote: str = ""
    fetch: tuple[str, ...] = ()


@dataclass(frozen=True)
class WorkerTree:
    """A shipped phase as a worker receives it: plain data, so a task can carry it (the
    base bundle's bytes, no callables, nothing of the caller's environment)."""

    bundle: bytes
    base: str
    branch: str
    message: str
    prefix: str
    exclude: tuple[str, ...]
    remote: str = ""
    fetch: tuple[str, ...] = ()
    """`BaseSource.remote` and `fetch`: the history the worker fetches before the bundle."""

    def checkout(self, into: Path) -> Path:
        """Check the phase out in the new directory `into` (`checkout_bundle`); returns
        the agent's working directory (the tree joined with the workspace's place)."""
        top = checkout_bundle(self.bundle, self.base, self.branch, into, remote=self.remote,
                              fetch=self.fetch)
        return top / self.prefix if self.prefix not in ("", ".") else top

    def bring_back(self, into: Path) -> bytes:
        """Once the agent is done: its work committed and bundled (`bundle_branch`)."""
        return bundle_branch(into, self.branch, self.base, self.message,
                             exclude=self.exclude)


@dataclass
class Shipment:
    """A phase that runs on another machine, as the implement state hands it to the
    executor: what the worker needs (`bundle()` the base bundle, made once per base, then
    `checkout_bundle(bundle(), base, branch, into)`, the agent in `tree / prefix`, and
    `bundle_branch(tree, branch, base, message, exclude=exclude)`), and where the executor
    puts the bundle the worker returned (`receive`), which the step's `fields` lands in the
    checkpoint that records it done."""

    sid: str
    base: str
    branch: str
    message: str
    key: str
    prefix: str
    """The workspace's place in the repository ("." at the top): the agent's working
    directory and CLAUDE_PROJECT_DIR are the checked-out tree joined with it."""
    exclude: tuple[str, ...]
    bundle: Callable[[], bytes]
    """The base bundle (`BaseSource.bundle` of `source`)."""
    source: Callable[[], BaseSource]
    keep: Callable[[bytes], Path]
    """Write the returned bundle durably under the run's directory (before anything else
    is done with it): a caller that dies after this imports it on resume."""
    discard: Callable[[], None]
    """Remove the bundle an earlier attempt left kept under the key."""
    returned: bytes | None = None
    failed: ShippingError | None = None
    """What the worker's `checkout_bundle`/`bundle_branch` raised (`fail`): the step fails
    with it when it would land (conflict markers as for a local worktree)."""

    def start_attempt(self) -> None:
        """What the executor calls as each attempt starts (after it is recorded launched,
        before the worker runs): the previous attempt's bundle and failure are forgotten,
        so a kept bundle is always the work of the attempt a resume may keep."""
        self.discard()
        self.returned = None
        self.failed = None

    def for_worker(self) -> WorkerTree:
        """What the executor's task carries to the worker."""
        source = self.source()
        return WorkerTree(source.bundle, self.base, self.branch, self.message, self.prefix,
                          self.exclude, source.remote, source.fetch)

    def fail(self, exc: ShippingError) -> None:
        """What the executor calls when the worker could not check out or bundle."""
        self.failed = exc

    def receive(self, bundle: bytes) -> Path:
        """What the executor calls the moment the worker's bundle arrives — before it
        writes the step's artifact, so an artifact a resume finds implies the bundle is
        kept: kept durably (under the run's directory), then held for `fields` to land."""
        path = self.keep(bundle)
        self.returned = bundle
        return path


def bundle_key(inputs: Mapping[str, str | None], base: str) -> str:
    """The key a phase's returned bundle is kept under: its step's inputs (the plan section
    and the dependencies' summaries, by hash) and its base commit. A resume whose phase has
    the same key imports the kept bundle; an edited section or a moved base runs it again."""
    text = json.dumps({"inputs": dict(sorted(inputs.items())), "base": base},
                      sort_keys=True, ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def key_problem(key: str) -> str | None:
    """Why `key` cannot name a kept bundle (it becomes part of a file name), None when it
    can."""
    if not _KEY.match(key) or ".." in key:
        return (f"bundle key {key!r}: use 1-128 letters, digits, `_`, `-` and `.`, starting "
                "with a letter or digit, no `..`")
    return None


def header_problem(head: bytes) -> str | None:
    """Why a bundle whose first bytes are `head` cannot be landed, None when its header is
    one Baton takes (gitformat-bundle(5)): a v2 or v3 signature, and no `@filter`
    capability — a partial pack would leave the repository missing the objects it
    filtered out (git's other capabilities: `object-format`, checked by git itself)."""
    lines = head.split(b"\n")
    if lines[0] not in (b"# v2 git bundle", b"# v3 git bundle"):
        return "it does not start with a git bundle signature (# v2 or # v3 git bundle)"
    for line in lines[1:]:
        if not line.startswith(b"@"):
            break
        if line.startswith(b"@filter"):
            return (f"it is a partial bundle ({line.decode('utf-8', 'replace')}): the "
                    "objects it filtered out would be missing")
    return None


def heads(repo: Repo, bundle: Path) -> list[tuple[str, str]]:
    """(commit, ref) of every ref the bundle holds (`git bundle list-heads`)."""
    out = repo.run("bundle", "list-heads", str(bundle)).stdout
    found = []
    for line in out.splitlines():
        sha, _, ref = line.strip().partition(" ")
        if sha and ref:
            found.append((sha, ref))
    return found


# == worker side ================================================================================


def checkout_bundle(bundle: bytes, base: str, branch: str, into: Path, *, remote: str = "",
                    fetch: Sequence[str] = ()) -> Path:
    """A fresh repository at `into` (a new or empty directory) from the base bundle, with
    `branch` created at `base` and checked out; returns the work tree's path, the top of
    the repository (the agent's working directory is that joined with the workspace's
    place in it, `Shipment.prefix`). With `remote`, the refs `fetch` names are fetched from
    it first (as `origin/…`), and the bundle holds only what the remote lacks (empty:
    nothing). Nothing is written outside `into`."""
    if (not bundle and not remote) or len(bundle) > MAX_BUNDLE:
        raise ShippingError(f"the base bundle has {len(bundle)} bytes (at most {MAX_BUNDLE})")
    if remote.startswith("-") or any(ref.startswith("-") for ref in fetch):
        raise ShippingError(f"refusing to fetch {remote!r} {list(fetch)!r}: git would read "
                            "it as an option")
    into = Path(os.path.abspath(into))
    try:
        mode = os.lstat(into).st_mode
    except FileNotFoundError:
        try:
            os.mkdir(into, 0o755)  # its parent must exist: nothing is made outside `into`
        except OSError as exc:
            raise ShippingError(f"cannot create {into}: {confine.describe(exc)}") from None
    else:
        if not stat.S_ISDIR(mode) or os.listdir(into):
            raise ShippingError(f"cannot check the phase out into {into}: it exists and is "
                                "not an empty directory")
    try:
        repo = init_repo(into)
        if remote:
            repo.run("fetch", "-q", "--no-tags", "--no-recurse-submodules",
                     "--no-write-fetch-head", remote,
                     *[f"+{ref}:refs/remotes/origin/{ref.removeprefix('refs/heads/')}"
                       for ref in fetch], hooks=False)
        if bundle:
            _fetch_base(repo, bundle, base)
        elif repo.ref(base) != base:
            raise ShippingError(f"the remote {remote} does not hold the base commit {base} "
                                f"in {', '.join(fetch) or 'the refs named'}")
        repo.run("checkout", "-q", "-b", branch, base, hooks=False)
    except GitError as exc:
        raise ShippingError(f"cannot check the base bundle out into {into}: {exc}") from None
    except OSError as exc:
        raise ShippingError(f"cannot check the base bundle out into {into}: "
                            f"{confine.describe(exc)}") from None
    return repo.top


def _fetch_base(repo: Repo, bundle: bytes, base: str) -> None:
    """The base bundle's objects into the new repository (its prerequisites, when it has
    any, fetched from the remote before)."""
    file = repo.top / ".git" / BASE_BUNDLE_FILE
    confine.create_exclusive(repo.top, file, bundle)
    try:
        repo.run("bundle", "verify", "-q", str(file))
        tips = heads(repo, file)
        if base not in {sha for sha, _ in tips}:
            raise ShippingError(f"the base bundle does not hold the base commit {base} "
                                f"(it holds {', '.join(r for _, r in tips) or 'no ref'})")
        repo.run("fetch", "-q", "--no-tags", "--no-recurse-submodules",
                 "--no-write-fetch-head", str(file),
                 *{ref for sha, ref in tips if sha == base}, hooks=False)
    finally:
        with contextlib.suppress(OSError):
            confine.unlink(repo.top, file)


def bundle_branch(cwd: Path, branch: str, base: str, message: str, *,
                  exclude: Sequence[str] | None = None) -> bytes:
    """Commit what the agent left in the tree `checkout_bundle` made (its own commits stay)
    with `message`, staged as `Isolation.commit_tree` stages a local phase worktree: every
    change but Baton's own places (`exclude`, pathspecs from the repository's top; default
    `OWN_PATHS`, where the state file's copy under `.claude/tmp` is), never conflict
    markers (`ConflictMarkers`), symlinks stored as links (never followed). Returns a
    bundle of `base..branch`; when the agent changed nothing, a bundle whose `branch` is
    `base` itself (git refuses an empty range), which the caller lands as "empty"."""
    repo = repo_of(cwd)
    if repo is None:
        raise ShippingError(f"{cwd} is not in a git repository")
    try:  # the repository `checkout_bundle` made, not one a link or `.git` file leads to
        own = stat.S_ISDIR(os.lstat(repo.top / ".git").st_mode)
    except OSError:
        own = False
    if not own:
        raise ShippingError(f"{repo.top}/.git is not a directory: not a tree checkout_bundle "
                            "made")
    ref = f"refs/heads/{branch}"
    try:
        repo.stage_all(list(OWN_PATHS if exclude is None else exclude), cwd=repo.top)
        marked = repo.conflict_markers(cwd=repo.top)
        if marked:
            raise ConflictMarkers(marked, repo.top)
        repo.commit(message, cwd=repo.top, allow_nothing=True)
        head = repo.ref(ref)
        if head is None:
            raise ShippingError(f"the phase's branch {branch} is gone from {repo.top}")
        if head == base:  # "no change": the tip is the base, the bundle needs its parents
            return repo.output("bundle", "create", "-q", "-", ref, "--not", f"{base}^@")
        return repo.output("bundle", "create", "-q", "-", f"{base}..{ref}")
    except GitError as exc:
        raise ShippingError(f"cannot bundle the phase's branch {branch}: {exc}") from None

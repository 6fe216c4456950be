"""Parallel phases that cannot trample each other: one git worktree per phase, merged by
Baton in dependency order.

In a git repository with `isolation = "worktree"` (the default) each phase of a wave with
more than one phase runs in `.claude/worktrees/baton-<workflow>-phase-<N>` (Claude Code's
own place for worktrees; the agent's `.claude/` protection is the worktree's own) on branch
`baton/<workflow>/phase-<N>`, created from HEAD: the commit that holds every earlier wave,
so all of the phase's dependencies. The agent works there; its summary still goes to its
pre-calculated path in the main tree's topic directory. When the agent is done its work is
committed on the branch (in the checkpoint that records the step done); when the wave is
done each phase is merged into the user's branch with `--no-ff` — one merge commit per phase
on the branch's first-parent line, and ancestry tells exactly which phases are in however
the user resolves a conflict. A single-phase wave runs in place and is committed in place.

Baton never commits the user's work: it refuses to start a phase while tracked files have
uncommitted changes, and an in-place phase commits only tracked changes plus the untracked
files that appeared while its agent ran.
"""

from __future__ import annotations

import contextlib
import glob
import logging
import os
import re
import secrets
import shutil
import stat
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.config import WorkflowSettings
from ..model.states import PhaseMode, PhaseStatus
from ..parse.plan_marks import plan_fingerprint
from ..runs import confine
from ..runs.places import SCRIPTED_JOURNAL
from ..runs.record import PhaseGit, StepRecord
from ..runs.records import utc_now
from ..runs.store import valid_id
from .failures import PERMANENT, TRANSIENT, StepFailure
from .git import GitError, Repo, init_repo, ref_format_problem, repo_of
from .layout import AGENT_SCRATCH, inside
from .reconcile import Reconcile, git_processes
from .repolock import INTEGRATION_LOCK, WORKTREE_LOCK, LockTimeout, RepoLock
from .run import Run
from .shipping import (
    MAX_BUNDLE,
    BaseSource,
    ConflictMarkers,
    ShippingError,
    header_problem,
    heads,
    key_problem,
)
from .worktrees import TREE_NAME, WORKTREES

log = logging.getLogger(__name__)

INCLUDE_FILE = ".worktreeinclude"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
ADMIN_WAIT = 120.0
"""Seconds a run blocks for another's worktree administration or merge (each takes moments)."""

PlanEdit = Callable[[bytes], "bytes | None"]
"""A phase's marker edit of the plan's bytes (None: nothing to mark)."""


def safe_id(pid: str) -> str:
    """A phase id as a branch and directory name part (`2.1` stays, `a b` → `a_b`)."""
    return _UNSAFE.sub("_", pid).strip(".") or "_"


def branch_name(workflow_id: str, pid: str) -> str:
    return f"baton/{workflow_id}/phase-{safe_id(pid)}"


def workflow_id_problem(workflow_id: str) -> str | None:
    """Why `workflow_id` cannot name a new workflow, None when it can: a checkpoint
    directory name (`runs.store.valid_id`) that also makes valid git branches
    `baton/<id>/phase-N` (and `baton/<id>`, so no trailing `.`) — checked when the id is
    given, not when the first parallel wave needs a worktree."""
    if not valid_id(workflow_id):
        return ("use letters, digits, `_`, `-` and `.`, starting with a letter or digit, at "
                "most 128 characters and no `..`")
    for ref in (branch_name(workflow_id, "1"), f"baton/{workflow_id}"):
        why = ref_format_problem(ref)
        if why is not None:
            return f"git refuses the branch name {ref!r}: {why}"
    return None


def merge_in_progress(repo: Repo) -> str:
    return f"a merge is in progress in {repo.top}: finish it (resolve, commit) or abort it"


def uncommitted(repo: Repo, changed: list[str]) -> str:
    shown = ", ".join(changed[:10]) + (f" and {len(changed) - 10} more"
                                       if len(changed) > 10 else "")
    return (f"uncommitted changes to tracked files in {repo.top}: {shown}. Baton commits each "
            "phase's work on your branch and never yours: commit or stash them (they may be "
            "an interrupted agent's edits)")


def waiting_notice(say: Callable[[str], None], emit: Callable[..., None], what: str,
                   top: Path) -> Callable[[dict[str, Any] | None], None]:
    """What a run says (a line and a `waiting` event) when it has to wait for the
    repository: whom for, doing what (from the lock's file)."""

    def on_wait(held: dict[str, Any] | None) -> None:
        who = (held or {}).get("workflow_id")
        doing = (held or {}).get("what")
        say(f"{what}: waiting for " + (f"workflow {who}" + (f" ({doing})" if doing else "")
                                       if who else "another Baton run")
            + f" to finish with {top}")
        emit("waiting", what=what, holder=who, holder_what=doing)

    return on_wait


def dirty_tree_problem(root: Path, settings: WorkflowSettings, specs: Path,
                       say: Callable[[str], None] | None = None,
                       emit: Callable[..., None] | None = None) -> str | None:
    """Why a run that will implement cannot start in this tree (a merge in progress,
    uncommitted changes to tracked files), None when it can. The same test a phase makes
    (`Isolation.require_clean`), made before the run writes anything: a refused run leaves
    no workflow record and no line in a tracked `errors.jsonl`. Baton's own places are
    not the user's changes. Under the integration lock, so another run's merge is never
    seen half-made, and with what a run that died holding it left put right first."""
    if settings.isolation == "none":
        return None
    repo = repo_of(root)
    if repo is None or repo.head() is None:
        return None
    own = [os.path.relpath(os.path.realpath(p), repo.top) for p in
           (root / ".claude" / "data", root / ".claude" / "tmp", root / WORKTREES,
            specs / AGENT_SCRATCH)]
    try:
        _check_exclude(repo.common_dir / "info" / "exclude")
    except confine.UnsafePath as exc:
        return str(exc)
    tell = say or (lambda line: None)
    lock = RepoLock(repo.common_dir, INTEGRATION_LOCK)
    try:
        with lock.held(ADMIN_WAIT, {"what": "checking the tree before a run starts"},
                       waiting_notice(tell, emit or (lambda *a, **k: None),
                                      "checking the tree", repo.top)):
            if lock.previous:
                Reconcile(repo, root / WORKTREES, own, tell, tell).after(lock.previous)
            if repo.merging():
                return merge_in_progress(repo)
            changed, _ = repo.changes(own)
            changed = users_changes(repo, changed)
    except LockTimeout as exc:
        return f"the repository stayed busy: {exc}"
    except GitError as exc:
        return f"git: {exc}"
    return uncommitted(repo, changed) if changed else None


def users_changes(repo: Repo, changed: list[str]) -> list[str]:
    """The tracked changes that are the user's: a Markdown file whose only difference from
    HEAD is progress — phase markers, task boxes, the Status line, as every run marks its
    plan while it works — is Baton's (another run's plan, or this one's), not the user's."""
    mine = []
    for rel in changed:
        if rel.endswith(".md"):
            try:
                here = confine.read_regular(repo.top / rel)
                then = repo.run("show", f"HEAD:{rel}", check=False)
            except OSError:
                mine.append(rel)
                continue
            if then.returncode == 0:
                was = plan_fingerprint(then.stdout.encode("utf-8", "surrogateescape"))
                if was is not None and was == plan_fingerprint(here):
                    continue
        mine.append(rel)
    return mine


def tree_path(root: Path, workflow_id: str, pid: str) -> Path:
    return root / WORKTREES / f"baton-{workflow_id}-phase-{safe_id(pid)}"


@dataclass(frozen=True)
class PhaseTree:
    """One phase's worktree: its directory, branch and the agent's working directory in it
    (the workspace's place in the repository, for a workspace below the top level)."""

    pid: str
    path: Path
    branch: str
    base: str
    cwd: Path


class Isolation:
    """The git side of one run's implement state."""

    def __init__(self, run: Run, repo: Repo, head: str) -> None:
        self.run = run
        self.repo = repo
        self.root = run.root
        self.prefix = Path(os.path.relpath(run.root, repo.top))
        self.target = repo.branch()
        """The user's branch the phases are merged into (None: a detached HEAD)."""
        self._worktrees = threading.RLock()
        """Held while git adds or prunes worktrees (see `open_tree`)."""
        self._admin_depth = 0
        self._admin = RepoLock(repo.common_dir, WORKTREE_LOCK)
        """The same across processes: every run of the repository adds and prunes worktrees
        one at a time (git reading another's half-written admin directory fails)."""
        self.integration = RepoLock(repo.common_dir, INTEGRATION_LOCK)
        """Held while this run changes the user's branch or reads its tree as clean."""
        topic = run.paths.topic_dir
        own = [run.root / ".claude" / "data", run.root / ".claude" / "tmp",
               run.root / WORKTREES, run.specs_dir() / AGENT_SCRATCH]
        if topic:
            own.append(Path(topic))
        self.own = [self.rel(p) for p in own]
        """Baton's own files (checkpoints, logs, state, worktrees, the topic directory):
        never the user's changes, never in a phase's commit."""
        plan = run.paths.plan
        rel = self.rel(Path(plan)) if plan else None
        self.plan = rel if rel and not rel.startswith(os.pardir) else None
        """The plan (from the top), when the repository holds it: Baton keeps its markers
        (the working tree shows phases in progress), so its changes never count as the
        user's, and a phase's commit takes only its own marker edit (`stage_plan`)."""
        self.unlike_user = [*self.own, *([self.plan] if self.plan else [])]
        self.carried: list[PlanEdit] = []
        """Marker edits of phases whose merge the user committed by hand (that commit is
        theirs): the next commit Baton makes carries them."""
        self._bases: dict[tuple[str, str | None], BaseSource] = {}
        """Where shipped phases' workers get their base, by base commit and remote
        (`base_source`)."""
        self._bundling = threading.Lock()

    @classmethod
    def of(cls, run: Run) -> Isolation | None:
        """The run's isolation, None outside git, with `isolation = "none"` or a repository
        without a commit (nothing to branch from: the phases run in place, uncommitted)."""
        if run.settings.isolation == "none":
            return None
        repo = repo_of(run.root)
        if repo is None:
            return None
        head = repo.head()
        if head is None:
            run.say("implement: the git repository has no commit yet; phases run in place "
                    "and nothing is committed")
            return None
        _check_exclude(repo.common_dir / "info" / "exclude")
        return cls(run, repo, head)

    @contextlib.contextmanager
    def _tree_admin(self) -> Iterator[None]:
        """Exclusive use of git's worktree administration: the thread lock within this
        run (re-entered by `open_tree` → `discard`), the file lock across runs."""
        with self._worktrees:
            outer = self._admin_depth == 0
            self._admin_depth += 1
            try:
                if outer:
                    with self._admin.held(ADMIN_WAIT, {"workflow_id": self.run.workflow_id}):
                        if self._admin.previous:
                            self._after_dead_admin(self._admin.previous)
                        yield
                else:
                    yield
            finally:
                self._admin_depth -= 1

    def _after_dead_admin(self, previous: dict[str, Any]) -> None:
        """The worktree lock's previous holder died holding it (adding, pruning or deleting
        branches): a git it ran there may have been killed in `branch -D` or `worktree add`,
        leaving `packed-refs.lock` — which every later `branch -D` of every run then fails
        on, silently leaving branches behind. Once no git works in the main tree (where
        those run), the lock is stale."""
        self._admin.previous = None
        stale = self.repo.common_dir / "packed-refs.lock"
        if not os.path.lexists(stale):
            return
        deadline = time.monotonic() + ADMIN_WAIT
        while git_processes(self.repo.top, self.root / WORKTREES):
            if time.monotonic() > deadline:
                return
            time.sleep(0.1)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(stale)
            self.reconciled(f"removed the stale {stale} a killed git left (workflow "
                            f"{previous.get('workflow_id')}, while it managed worktrees)")

    def owner(self, what: str) -> dict[str, Any]:
        """What this run writes into a lock it holds, for the runs that wait on it."""
        return {"workflow_id": self.run.workflow_id, "what": what}

    @contextlib.contextmanager
    def integrating_now(self, sid: str, what: str) -> Iterator[None]:
        """The integration lock, blocking this thread (for moments: merges are short),
        with whatever a holder that died left behind reconciled first."""
        with self.integration.held(ADMIN_WAIT, self.owner(what),
                                   self.waiting(f"{sid}: {what}")):
            self.recover()
            yield

    @contextlib.asynccontextmanager
    async def integrating(self, what: str, cancelled: Callable[[], None]
                          ) -> AsyncIterator[None]:
        """The integration lock, waited for on the event loop (cancellable), with whatever
        a holder that died left behind reconciled first."""
        async with self.integration.waiting(self.owner(what),
                                            self.waiting(f"implement: {what}"), cancelled):
            self.recover()
            yield

    def recover(self) -> None:
        """Reconcile what the integration lock's previous holder left when it died holding
        it (`reconcile.Reconcile`), recorded in this run's record."""
        previous, self.integration.previous = self.integration.previous, None
        if previous:
            Reconcile(self.repo, self.root / WORKTREES, self.own, self.reconciled,
                      lambda line: self.run.say(f"implement: {line}")).after(previous)

    def reconciled(self, what: str) -> None:
        """Say what was found and done, and keep it in the run's record (`baton status`
        and the editor show it)."""
        self.run.say(f"implement: {what}")
        self.run.reconciled = [*self.run.reconciled, {"at": utc_now(), "what": what}]
        self.run.emit("reconciled", what=what)

    def waiting(self, what: str) -> Callable[[dict[str, Any] | None], None]:
        """What this run says when it has to wait for the repository."""
        return waiting_notice(self.run.say, self.run.emit, what, self.repo.top)

    def rel(self, path: Path) -> str:
        """`path` relative to the repository's top level (for pathspecs)."""
        return os.path.relpath(os.path.realpath(path), self.repo.top)

    def _fail(self, sid: str, exc: GitError) -> StepFailure:
        return StepFailure(sid, PERMANENT, f"git: {exc}", "execution_error",
                           {"git_exit": exc.code})

    # == before a phase =========================================================================

    def require_clean(self, sid: str) -> None:
        """Refuse while a merge is in progress or tracked files have uncommitted changes:
        Baton merges each phase's work into the user's branch and must never commit
        theirs. Under the integration lock, so another run's merge is never seen
        half-made (merges hold it for moments: blocking here is brief)."""
        try:
            with self.integrating_now(sid, "checking the tree"):
                self.check_clean(sid)
        except LockTimeout as exc:
            raise StepFailure(sid, TRANSIENT, f"the repository stayed busy: {exc}",
                              "timeout") from None

    def check_clean(self, sid: str) -> None:
        """`require_clean` for a caller that holds the integration lock already. The
        plan's markers Baton keeps are not the user's changes."""
        try:
            self.check_target(sid)
            changed = users_changes(self.repo, self.repo.changes(self.unlike_user)[0])
        except GitError as exc:
            raise self._fail(sid, exc) from None
        if changed:
            raise StepFailure(sid, PERMANENT, uncommitted(self.repo, changed) + ", then resume",
                              "execution_error", {"uncommitted": changed[:100]})

    def open_tree(self, sid: str, pid: str, base: str) -> PhaseTree:
        """A fresh worktree for the phase on its own branch from `base` (a leftover of a
        killed run is replaced), with the ignored files `.worktreeinclude` names."""
        wid = self.run.workflow_id
        path, branch = tree_path(self.root, wid, pid), branch_name(wid, pid)
        try:
            # One `git worktree add` at a time: the phases of a wave open theirs at once, and
            # git reading another worktree's half-written admin directory fails ("failed to
            # read .git/worktrees/<other>/commondir").
            with self._tree_admin():
                if os.path.lexists(path):  # `-B` below resets a leftover branch
                    self.discard([pid], branches=False)
                # git creates the directory itself: the parent must be a real directory of
                # the workspace, not a link a repository shipped (`confine` refuses one
                # leaving it)
                confine.makedirs(self.root, path.parent)
                if os.path.lexists(path):
                    raise confine.UnsafePath(f"refusing to create the worktree {path}: "
                                             f"{_what_is(path)} is in its place", path)
                self.repo.run("worktree", "add", "-q", "-B", branch, str(path), base,
                              hooks=False)
            self.copy_included(path)
        except confine.UnsafePath:
            raise
        except LockTimeout as exc:
            raise StepFailure(sid, TRANSIENT, f"cannot create the worktree {path}: {exc}",
                              "timeout") from None
        except (GitError, OSError) as exc:
            raise (self._fail(sid, exc) if isinstance(exc, GitError) else StepFailure(
                sid, PERMANENT, f"cannot create the worktree {path}: {exc}",
                "file_error")) from None
        return PhaseTree(pid, path, branch, base, path / self.prefix)

    def reuse_tree(self, pid: str) -> PhaseTree | None:
        """The worktree a killed run left for the phase, when git still has it on the
        phase's branch (its agent's finished work is there); None otherwise."""
        wid = self.run.workflow_id
        path, branch = tree_path(self.root, wid, pid), branch_name(wid, pid)
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
            if (path, branch) not in [(Path(p), b) for p, b in self.repo.worktrees()]:
                return None
            base = self.repo.run("merge-base", branch, "HEAD").stdout.strip()
            admin = Path(self.repo.run("rev-parse", "--absolute-git-dir", cwd=path
                                       ).stdout.strip())
        except (OSError, GitError):
            return None
        # the dead engine's git may have been killed inside this worktree (its `add` or
        # `commit`): once no git works there, its index lock is stale (the workflow's lock
        # is ours, its agents are stopped)
        deadline = time.monotonic() + ADMIN_WAIT
        while git_processes(path):
            if time.monotonic() > deadline:
                return None
            time.sleep(0.1)
        if admin.is_relative_to(self.repo.common_dir / "worktrees"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(admin / "index.lock")
        return PhaseTree(pid, path, branch, base, path / self.prefix)

    def exclude_worktrees(self) -> None:
        """Keep `.claude/worktrees/`, the run state files (`.claude/tmp/workflow_*.sh`,
        which each phase's worktree gets a copy of) and the scripted agents' journal out of
        the user's `git status` and out of an agent's own `git add -A` (the clone's own
        info/exclude, never their .gitignore). Appended through `confine` rooted at the git
        directory: an `info` or `exclude` planted as a symlink (a repository shipped as an
        archive can carry them) is refused, not written through."""
        common = self.repo.common_dir
        exclude = common / "info" / "exclude"
        tmp = self.rel(self.root / ".claude" / "tmp")
        lines = [f"/{self.rel(self.root / WORKTREES)}/", f"/{tmp}/workflow_*.sh",
                 f"/{tmp}/{SCRIPTED_JOURNAL}"]
        try:
            with confine.open_append(common, "info/exclude") as fd:
                size = os.fstat(fd).st_size
                text = confine.read_regular(exclude).decode("utf-8", "replace") if size else ""
                new = [line for line in lines if line not in text.splitlines()]
                if new:
                    sep = "" if not text or text.endswith("\n") else "\n"
                    os.write(fd, (sep + "\n".join(new) + "\n").encode())
        except confine.UnsafePath as exc:
            log.warning("not adding %s to the git exclude file: %s", ", ".join(lines), exc)
        except OSError as exc:
            log.info("cannot add %s to %s: %s", ", ".join(lines), exclude, exc)

    def copy_included(self, tree: Path) -> list[str]:
        """Copy the ignored files `.worktreeinclude` (gitignore syntax, Claude Code's file)
        names into the worktree: a file must match a pattern and be ignored by git, so a
        tracked file is never copied; regular files only, never through a symlink leaving
        the repository, never over a file the worktree has."""
        include = self.repo.top / INCLUDE_FILE
        if not include.is_file():
            return []
        listed = self.repo.run("ls-files", "-z", "--others", "--ignored",
                               f"--exclude-from={include}").stdout.split("\0")
        skip = self.rel(self.root / WORKTREES) + "/"
        wanted = [p for p in listed if p and not p.startswith(skip) and not p.startswith(".git/")]
        if not wanted:
            return []
        proc = self.repo.run("check-ignore", "-z", "--stdin", check=False,
                             input="\0".join(wanted) + "\0")
        ignored = {p for p in proc.stdout.split("\0") if p}
        copied = []
        for rel in wanted:
            src, dst = self.repo.top / rel, tree / rel
            if rel not in ignored or src.is_symlink() or not src.is_file() or \
                    not inside(self.repo.top, src) or os.path.lexists(dst):
                continue
            try:  # inside the worktree only: never through a link its checkout made
                confine.copy_file(tree, src, dst)
            except confine.UnsafePath as exc:
                log.warning("not copying %s into %s: %s", rel, tree, exc)
                continue
            copied.append(rel)
        if copied:
            log.info("copied %d file(s) named by %s into %s", len(copied), INCLUDE_FILE, tree)
        return copied

    # == when the agent is done =================================================================

    def commit_tree(self, sid: str, tree: PhaseTree, message: str) -> PhaseGit:
        """Commit what the agent left in its worktree (its own commits stay) — never
        Baton's own files, never conflict markers; the phase's git record, stored with the
        step in the checkpoint that records it done."""
        record = PhaseGit(mode=PhaseMode.WORKTREE, branch=tree.branch,
                          worktree=str(tree.path), base=tree.base, target=self.target,
                          top=str(self.repo.top))
        try:
            self.repo.stage_all(self.own, cwd=tree.path)
            marked = self.repo.conflict_markers(cwd=tree.path)
            if marked:
                raise self._marked(sid, marked, f"its worktree {tree.path}")
            self.repo.commit(message, cwd=tree.path, allow_nothing=True)
            head = self.repo.ref(f"refs/heads/{tree.branch}")
        except GitError as exc:
            raise self._fail(sid, exc) from None
        record.status = PhaseStatus.EMPTY if head is None or head == tree.base \
            else PhaseStatus.COMMITTED
        record.commit = None if record.status == PhaseStatus.EMPTY else head
        return record

    # == phases shipped to other machines (`shipping`) ============================================

    def base_bundle(self, base: str) -> bytes:
        """A bundle holding `base` and its history, for a worker's `checkout_bundle`; made
        once per base within the run (every phase of a wave shares it)."""
        return self.base_source(base).bundle

    def base_source(self, base: str, remote: str | None = None) -> BaseSource:
        """Where a worker gets `base` (made once per base and remote within the run): a
        bundle of it and its history; with `remote` (a remote's name), the remote's URL,
        its branches whose history `base` builds on (as this clone last fetched them),
        and a bundle of only the commits they lack — none when a branch there holds `base`.
        git bundles refs, not commits: a ref of this workflow's names `base` for the moment
        it is bundled."""
        with self._bundling:
            found = self._bases.get((base, remote))
            if found is not None:
                return found
            ref = f"refs/baton/{self.run.workflow_id}/base"
            try:
                url, have, holding = self._remote_refs(base, remote) if remote else \
                    ("", {}, [])
                data = b""
                if not holding:
                    self.repo.run("update-ref", ref, base)
                    try:
                        data = self.repo.output("bundle", "create", "-q", "-", ref,
                                                *(["--not", *have.values()] if have else []))
                    finally:
                        self.repo.run("update-ref", "-d", ref, check=False)
            except GitError as exc:
                raise ShippingError(f"cannot bundle the base commit {base}: {exc}") from None
            if len(data) > MAX_BUNDLE:
                raise ShippingError(f"the bundle of {base} has {len(data)} bytes, more than "
                                    f"{MAX_BUNDLE}: ship such a repository by its remote")
            fetch = tuple(holding or have)
            source = BaseSource(data, url, fetch) if remote else BaseSource(data)
            self._bases[(base, remote)] = source
            return source

    def _remote_refs(self, base: str, remote: str) -> tuple[str, dict[str, str], list[str]]:
        """(the remote's URL, {its branch: commit} for the branches that are ancestors of
        `base`, its branches that hold `base`), from this clone's remote-tracking refs."""
        url = self.repo.run("remote", "get-url", remote).stdout.strip()
        prefix = f"refs/remotes/{remote}/"

        def branches(*how: str) -> dict[str, str]:
            out = self.repo.run("for-each-ref", "--format=%(objectname) %(refname)", *how,
                                prefix).stdout
            found = {}
            for line in out.splitlines():
                sha, _, name = line.partition(" ")
                short = name.removeprefix(prefix)
                if short and short != "HEAD":
                    found[f"refs/heads/{short}"] = sha
            return found

        holding = sorted(branches(f"--contains={base}"))
        return url, branches(f"--merged={base}"), holding

    def bundle_path(self, sid: str, key: str) -> Path:
        """Where the bundle a worker returned for `sid` is kept: `bundles/<sid>-<key>.bundle`
        in the run's directory."""
        why = key_problem(key)
        if why is not None:
            raise ShippingError(why)
        assert self.run.store is not None
        return self.run.store.dir / "bundles" / f"{_UNSAFE.sub('_', sid)}-{key}.bundle"

    def kept_bundle(self, sid: str, key: str) -> Path | None:
        """The bundle kept for `sid` under `key` (by an earlier `keep_bundle`, maybe of a
        run that died), None when there is none. Anything but a regular file of its own at
        the name (a link, a FIFO) is refused, naming it, never read or replaced."""
        path = self.bundle_path(sid, key)
        confine.check_dir(self.root, path.parent)  # never through a link leaving
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            what = _what_is(path) if not stat.S_ISREG(st.st_mode) else \
                f"a file with {st.st_nlink} hard links"
            raise confine.UnsafePath(f"refusing to use {path} as the bundle of {sid}: "
                                     f"{what} is in its place (remove it)", path)
        if st.st_size > MAX_BUNDLE:
            raise ShippingError(f"{path} has {st.st_size} bytes, more than {MAX_BUNDLE}")
        return path

    def keep_bundle(self, sid: str, bundle: bytes, key: str) -> Path:
        """Write the bundle a worker returned durably (fsync, through `confine`, atomically)
        before anything is done with it. It replaces a bundle kept under the key before: a
        new answer for the same inputs comes only from a later attempt, whose work is the
        one the step records (a planted link or FIFO at the name is refused, not replaced)."""
        if not bundle or len(bundle) > MAX_BUNDLE:
            raise ShippingError(f"the returned bundle has {len(bundle)} bytes (expected "
                                f"1 to {MAX_BUNDLE})")
        self.kept_bundle(sid, key)
        return confine.write_atomic(self.root, self.bundle_path(sid, key), bundle)

    def discard_bundle(self, sid: str, key: str) -> None:
        """Remove the bundle kept under the key (an earlier attempt's) as a new attempt
        starts: a kept bundle is then always the latest attempt's, so a resume never lands
        an older attempt's work beside a newer attempt's artifact."""
        if self.kept_bundle(sid, key) is not None:
            with contextlib.suppress(FileNotFoundError):
                confine.unlink(self.root, self.bundle_path(sid, key))

    def land_bundle(self, sid: str, pid: str, bundle: bytes | None, key: str, *,
                    base: str | None = None) -> PhaseGit:
        """Land the bundle a worker returned for phase `pid` as its branch
        `baton/<workflow>/phase-<pid>`: kept durably first (`keep_bundle`; with `bundle`
        None, only a bundle kept earlier under `key` is landed), then checked — `git bundle
        verify`, exactly the phase's branch as its only ref, its tip `base` (default HEAD,
        every phase of a wave's base) or a descendant, the pack read in full — in a
        throw-away repository borrowing this one's objects, so a bad bundle imports
        nothing; then fetched. Returns the git record `commit_tree` returns (`merge_wave`
        merges it as a local phase's). Landing the same bundle again imports nothing new."""
        wid = self.run.workflow_id
        branch = branch_name(wid, pid)
        record = PhaseGit(mode=PhaseMode.WORKTREE, branch=branch, worktree=None,
                          target=self.target, top=str(self.repo.top))
        try:
            base = base or self.repo.head()
            if base is None:
                raise ShippingError(f"{self.repo.top} has no commit to land on")
            record.base = base
            if bundle is None:
                path = self.kept_bundle(sid, key)
                if path is None:
                    raise ShippingError(f"no bundle is kept for {sid} under key {key}")
            else:
                path = self.keep_bundle(sid, bundle, key)
            try:
                tip = self._checked_tip(path, branch, base)
            except ShippingError:
                # never kept: the same key must not land this bundle again
                confine.unlink(self.root, path)
                raise
            if self.repo.ref(f"refs/heads/{branch}") != tip:
                self.repo.run("fetch", "-q", "--no-tags", "--no-recurse-submodules",
                              "--no-write-fetch-head", str(path),
                              f"+refs/heads/{branch}:refs/heads/{branch}", hooks=False)
        except (ShippingError, OSError, GitError) as exc:
            why = confine.describe(exc) if isinstance(exc, OSError) else str(exc)
            raise StepFailure(sid, PERMANENT, f"phase {pid}'s work returned from another "
                              f"machine cannot be landed: {why}", "validation_error",
                              {"phase": pid, "bundle_key": key}) from None
        record.shipped = {"bundle": str(path), "key": key}
        record.status = PhaseStatus.EMPTY if tip == base else PhaseStatus.COMMITTED
        record.commit = None if tip == base else tip
        return record

    def _checked_tip(self, path: Path, branch: str, base: str) -> str:
        """The tip of the phase's branch in the kept bundle at `path`, once the bundle is
        shown sound without importing anything into the repository (`land_bundle`)."""
        problem = header_problem(confine.read_head(self.root, path, 1 << 16)[0])
        if problem is not None:
            raise ShippingError(f"{path} cannot be landed: {problem}")
        try:
            self.repo.run("bundle", "verify", "-q", str(path))
        except GitError as exc:
            raise ShippingError(f"{path} is not a bundle this repository can read: "
                                f"{exc.output[-300:]}") from None
        found = heads(self.repo, path)
        want = f"refs/heads/{branch}"
        if len(found) != 1 or found[0][1] != want:
            raise ShippingError(f"{path} holds {', '.join(r for _, r in found) or 'no ref'}; "
                                f"exactly {want} was expected")
        tip = found[0][0]
        assert self.run.store is not None
        scratch = self.run.store.dir / "bundles" / f".check-{secrets.token_hex(6)}"
        confine.makedirs(self.root, scratch)
        try:
            quarantine = init_repo(scratch, bare=True)
            confine.write_atomic(self.root, scratch / "objects" / "info" / "alternates",
                                 f"{self.repo.common_dir / 'objects'}\n".encode(),
                                 durable=False)
            quarantine.run("fetch", "-q", "--no-tags", "--no-recurse-submodules",
                           "--no-write-fetch-head", str(path), f"{want}:refs/heads/check",
                           hooks=False)
            if tip != base and not quarantine.contains(base, tip):
                raise ShippingError(f"the tip {tip} of {path} does not descend from the "
                                    f"phase's base {base}")
        except GitError as exc:
            raise ShippingError(f"{path} cannot be read in full: {exc.output[-300:]}"
                                ) from None
        finally:
            with contextlib.suppress(OSError):
                if stat.S_ISDIR(os.lstat(scratch).st_mode):
                    shutil.rmtree(scratch, ignore_errors=True)
        return tip

    def shipped_failure(self, sid: str, exc: ShippingError) -> StepFailure:
        """The step's failure for what a worker's `checkout_bundle`/`bundle_branch` raised:
        conflict markers as for a local worktree, anything else permanent, named."""
        if isinstance(exc, ConflictMarkers):
            return self._marked(sid, exc.files, f"its tree on the worker {exc.where}")
        return StepFailure(sid, PERMANENT, f"git on the worker: {exc}", "execution_error",
                           {"phase": sid.removeprefix("implement.phase-")})

    def _marked(self, sid: str, files: list[str], where: str) -> StepFailure:
        pid = sid.removeprefix("implement.phase-")
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10
                                         else "")
        return StepFailure(sid, PERMANENT, f"phase {pid} left conflict markers in {shown} "
                           f"({where}); Baton never commits them: fix the files, then "
                           "resume", "execution_error", {"conflict_markers": files[:100],
                                                         "phase": pid})

    def stage_plan(self, mark: PlanEdit) -> bool:
        """Stage the marker edit made on the plan as the index holds it (the last commit's
        text, never the user's uncommitted edits nor other phases' `[IN PROGRESS]`): each
        phase's commit carries exactly its own `[COMPLETE]` and ticked boxes. False when
        git does not track the plan (then only the file is marked) or nothing changes."""
        if self.plan is None:
            return False
        held = self.repo.index_blob(self.plan)
        if held is None:
            return False
        mode, data = held
        new = data
        for edit in [*self.carried, mark]:
            new = edit(new) or new  # None: that phase is not in the plan any more
        if new == data:
            return False
        self.repo.stage_blob(self.plan, mode, new)
        return True

    # == when the wave is done ==================================================================

    def merge(self, sid: str, record: PhaseGit, message: str,
              mark: PlanEdit | None = None) -> None:
        """Merge a committed phase into the user's branch (`--no-ff`), with `mark` the
        phase's marker edit of the plan in the same merge commit; updates `record`. The
        caller holds the integration lock. Refused while another merge is in progress or
        the user has switched branches; a merge result with conflict markers is aborted,
        never committed; a conflict leaves the merge in progress for the user and raises."""
        pid = sid.removeprefix("implement.phase-")
        try:
            self.check_target(sid)
            # git refuses by itself while the index or a file the merge touches has
            # changes; a commit merged before a kill is "Already up to date"
            self.integration.note({"kind": "merge", "phase": pid, "head": self.repo.head(),
                                   "commit": record.commit, "target": self.target})
            proc = self.repo.run("merge", "--no-ff", "--no-commit", "-m", message,
                                 str(record.commit), check=False, hooks=False)
            if proc.returncode == 0:
                self.conclude(sid, record, message, mark)
                return
            conflicts = self.repo.unmerged()
        except GitError as exc:
            raise self._fail(sid, exc) from None
        if not conflicts:  # refused before it started: untracked files in the way, …
            raise StepFailure(sid, PERMANENT, f"phase {pid}'s branch {record.branch} "
                              f"could not be merged: {(proc.stderr or proc.stdout).strip()}",
                              "execution_error", {"branch": record.branch})
        record.status, record.conflicts = PhaseStatus.CONFLICT, conflicts
        raise StepFailure(sid, PERMANENT, conflict_message(pid, record), "execution_error",
                          {"merge_conflict": True, "branch": record.branch,
                           "conflicts": conflicts, "phase": pid})

    def check_target(self, sid: str) -> None:
        """The user's tree is where this run may merge: on the branch it started on and
        with no merge in progress (another run's conflict waiting for the user, or the
        user's own) — a commit now would conclude that merge."""
        if self.repo.merging():
            raise StepFailure(sid, PERMANENT, f"a merge is in progress in {self.repo.top}"
                              f"{self.merge_owner()}: finish it (resolve, commit) or abort "
                              "it, then resume", "execution_error",
                              {"git": "merge in progress"})
        branch = self.repo.branch()
        if branch != self.target:
            now, then = branch or "a detached HEAD", self.target or "the detached HEAD"
            raise StepFailure(sid, PERMANENT, f"{self.repo.top} is on {now}, not on {then} "
                              "where this workflow started: switch back, then resume",
                              "execution_error", {"git": "branch changed"})

    def merge_owner(self) -> str:
        """Whose merge is in progress, from its message's Baton trailers (if any)."""
        with contextlib.suppress(OSError):
            text = confine.read_regular(self.repo.git_dir / "MERGE_MSG").decode("utf-8",
                                                                                "replace")
            found = dict(re.findall(r"^Baton-(Workflow|Phase): (\S+)$", text, re.M))
            if found.get("Workflow") == self.run.workflow_id:
                return f" (phase {found.get('Phase')} of this workflow)"
            if found.get("Workflow"):
                return (f" (phase {found.get('Phase')} of workflow {found['Workflow']}, "
                        "which waits for you)")
        return ""

    def conclude(self, sid: str, record: PhaseGit, message: str,
                 mark: PlanEdit | None) -> None:
        """Commit the clean merge git staged (`--no-commit`) with the plan's marker edit —
        never with conflict markers (the merge is aborted and the phase fails); nothing to
        commit when the phase was merged before (a kill after the commit)."""
        if self.repo.merging():
            marked = self.repo.conflict_markers()
            if marked:
                self.repo.run("merge", "--abort", check=False)
                raise self._marked(sid, marked, f"its branch {record.branch}")
            if mark is not None:
                self.stage_plan(mark)
            self.repo.commit(message)
            self.carried.clear()
        elif mark is not None and self.unmarked(mark):
            # merged before by someone else's commit: the user's, resolving a conflict git
            # finished after the engine died (before the run recorded it). No commit of
            # Baton's carried the phase's marker: the next one does
            self.carried.append(mark)
        record.status, record.merged, record.conflicts = (PhaseStatus.MERGED,
                                                          self.repo.head(), [])

    def unmarked(self, mark: PlanEdit) -> bool:
        """Whether the plan as the index holds it lacks this marker edit."""
        held = self.repo.index_blob(self.plan) if self.plan is not None else None
        if held is None:
            return False
        return (mark(held[1]) or held[1]) != held[1]

    def finish_merge(self, sid: str, record: PhaseGit, message: str,
                     mark: PlanEdit | None) -> bool:
        """Commit Baton's own clean merge of this phase that a killed engine left staged
        (MERGE_HEAD is the phase's commit, nothing unmerged), marker edit included. False
        when there is none."""
        if record.status != PhaseStatus.COMMITTED or not self.repo.merging():
            return False
        try:
            head = confine.read_regular(self.repo.git_dir / "MERGE_HEAD").decode(
                "ascii").split()
            if head != [record.commit] or self.repo.unmerged():
                return False
            self.conclude(sid, record, message, mark)
        except (OSError, UnicodeDecodeError):
            return False
        except GitError as exc:
            raise self._fail(sid, exc) from None
        return True

    def commit_mark(self, sid: str, mark: PlanEdit, message: str) -> str | None:
        """Commit a phase's marker edit alone (its worktree changed nothing): the phase
        still has its commit on the first-parent line. The commit, or None when git does
        not track the plan."""
        self.check_target(sid)  # a commit now must not conclude someone's merge
        try:
            if self.repo.staged() or not self.stage_plan(mark):
                return None  # never commit what the user staged meanwhile
            self.repo.commit(message)
            self.carried.clear()
            return self.repo.head()
        except GitError as exc:
            raise self._fail(sid, exc) from None

    def settle(self, sid: str, record: PhaseGit) -> bool:
        """A phase whose merge conflicted in an earlier run: merged now if the user
        committed the resolution (True), merged again if they aborted it; refused while the
        merge is still in progress."""
        try:
            if self.repo.contains(str(record.commit)):
                record.status, record.merged, record.conflicts = (PhaseStatus.MERGED,
                                                                  self.repo.head(), [])
                return True
            merging = self.repo.merging()
        except GitError as exc:
            raise self._fail(sid, exc) from None
        pid = sid.removeprefix("implement.phase-")
        if merging:
            raise StepFailure(sid, PERMANENT, conflict_message(pid, record, pending=True),
                              "execution_error", {"merge_conflict": True,
                                                  "branch": record.branch,
                                                  "conflicts": record.conflicts,
                                                  "phase": pid})
        record.status, record.conflicts = PhaseStatus.COMMITTED, []  # aborted: merge it again
        return False

    # == hygiene ================================================================================

    def discard(self, pids: list[str], branches: bool = True) -> None:
        """Remove the phases' worktrees (deleting the directories, then one `worktree
        prune`: a fraction of `worktree remove` each) and, with `branches`, their branches
        (one `branch -D`)."""
        if not pids:
            return
        wid = self.run.workflow_id
        confine.check_dir(self.root, self.root / WORKTREES)  # never delete through a link
        with self._tree_admin():  # a prune meanwhile could drop a worktree being added
            for pid in pids:
                path = tree_path(self.root, wid, pid)
                with contextlib.suppress(FileNotFoundError):
                    # only a real directory: rmtree opens its argument, and a FIFO planted
                    # at the name would block that open forever (a link or a file is left
                    # for `add` to refuse, naming it)
                    if stat.S_ISDIR(os.lstat(path).st_mode):
                        shutil.rmtree(path, ignore_errors=True)
                # a `worktree add` killed half-way leaves its admin entry locked
                # ("initializing"), which prune keeps and the next add of the path refuses
                admin = self.repo.common_dir / "worktrees"
                if any(admin.glob(f"{glob.escape(path.name)}*/locked")):
                    self.repo.run("worktree", "unlock", str(path), check=False)
                # and a branch git was creating, its ref lock: only this run (which holds
                # the workflow's lock) ever writes that branch
                ref_lock = self.repo.common_dir / "refs" / "heads" / f"{branch_name(wid, pid)}.lock"
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(ref_lock)
            self.repo.run("worktree", "prune", check=False)
            if branches:  # packed-refs is one file for every run's branches
                self.repo.run("branch", "-D", *[branch_name(wid, p) for p in pids],
                              check=False)

    def sweep(self, steps: Mapping[str, StepRecord], keep: set[str] | None = None
              ) -> list[str]:
        """Worktrees and branches of this workflow left by a killed or failed run: a
        phase waiting to be merged keeps its branch, a phase in `keep` (its agent finished
        unrecorded: its work is in the worktree) its worktree, everything else goes.
        Returns what was removed."""
        wid = self.run.workflow_id
        found: set[str] = set()
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.root / WORKTREES):
                m = TREE_NAME.match(entry.name)
                if m and m["wid"] == wid:
                    found.add(m["pid"])
        prefix = f"baton/{wid}/phase-"
        with contextlib.suppress(GitError):
            found |= {b.removeprefix(prefix) for b in self.repo.branches(f"baton/{wid}/*")
                      if b.startswith(prefix)}
        by_safe = {safe_id(sid.removeprefix("implement.phase-")): sid for sid in steps}

        def pending(pid: str) -> bool:
            step = steps.get(by_safe.get(pid, ""))
            return step is not None and step.git is not None and step.git.status in (
                PhaseStatus.COMMITTED, PhaseStatus.CONFLICT)

        kept = {safe_id(p) for p in keep or set()}
        removed = sorted(found - kept)
        self.discard([p for p in removed if pending(p)], branches=False)
        self.discard([p for p in removed if not pending(p)])
        self.sweep_shipping()
        return removed

    def sweep_shipping(self) -> None:
        """What a run killed while it bundled a base or checked a returned bundle left: the
        ref naming the base (`base_bundle`) and throw-away repositories (`land_bundle`).
        Only this workflow's, and before any phase of this run lands (its lock is ours)."""
        ref = f"refs/baton/{self.run.workflow_id}/base"
        if self.repo.ref(ref) is not None:
            self.repo.run("update-ref", "-d", ref, check=False)
        assert self.run.store is not None
        bundles = self.run.store.dir / "bundles"
        with contextlib.suppress(OSError):
            confine.check_dir(self.root, bundles)
            for entry in os.scandir(bundles):
                if entry.name.startswith(".check-") and entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)


def conflict_message(pid: str, record: PhaseGit, pending: bool = False) -> str:
    files = record.conflicts
    shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more" if len(files) > 10 else "")
    into = record.target or "HEAD"
    head = (f"the merge of phase {pid}'s branch {record.branch} into {into} is still in "
            f"progress" if pending else
            f"phase {pid}'s branch {record.branch} does not merge cleanly into {into}")
    return (f"{head}: conflicts in {shown or 'the files git lists'}. Resolve them in your "
            "working tree, commit, then resume the workflow")


def _what_is(path: Path) -> str:
    """A planted name, in words: what stops a worktree being created there."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        return f"a symbolic link to {os.readlink(path)}"
    if stat.S_ISFIFO(mode):
        return "a FIFO (not a regular file)"
    return "a directory" if stat.S_ISDIR(mode) else "a file"


def _check_exclude(exclude: Path) -> None:
    """`info/exclude`, which Baton appends to and every `git status` reads, must be a
    regular file when it exists: git blocks forever opening a FIFO planted there (an
    archive can carry one), so the run stops first, naming it."""
    try:
        mode = os.stat(exclude).st_mode  # git follows a link there; stat never blocks
    except FileNotFoundError:
        return
    if not stat.S_ISREG(mode):
        raise confine.UnsafePath(f"refusing to run git with {exclude}: it is not a regular "
                                 "file (git would block reading it; remove it)", exclude)

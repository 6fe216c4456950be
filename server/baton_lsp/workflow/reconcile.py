"""What a run that died holding a repository's integration lock left in the main tree, put
right by whoever takes the lock next — another run, the same run resumed, or a new run's
check of the tree before it starts.

The holder records its intent in the lock's file before it starts git (`RepoLock.note`), so
the next holder knows what was in flight: a merge of which commit onto which HEAD. Git runs
in a session of its own, so a git the dead engine started may still be finishing: it is
waited for first. Then stale lock files are removed, and an uncommitted merge is rolled back
— only when everything it left is provably that merge's (every staged path one the merge
brings; files git had checked out before it wrote the index only where they are exactly the
phase commit's) and never a genuine conflict, which stays the user's to resolve. The dead run
merges the phase again when it resumes: one merge commit per phase, whatever the instant.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .git import GitError, Repo

log = logging.getLogger(__name__)

GIT_WAIT = 120.0
"""Seconds to wait for a git a dead engine left running before leaving its work alone."""


def git_processes(top: Path, skip: Path | None = None) -> list[int]:
    """Pids of git processes working in the repository's main tree (their cwd at or below
    `top`, not below `skip` — the worktrees, which have indexes of their own). Without
    /proc nothing can be proved, so something is assumed to run."""
    found: list[int] = []
    here = os.getpid()
    try:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return [-1]
    for pid in pids:
        if pid == here:
            continue
        try:
            with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
                if not fh.read().strip().startswith("git"):
                    continue
            cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
        except OSError:
            continue
        if cwd.is_relative_to(top) and not (skip is not None and cwd.is_relative_to(skip)):
            found.append(pid)
    return found


class Reconcile:
    """One reconciliation of the main tree after a holder died: `note` records what was
    done (the run's record, or a line when no run exists yet), `say` tells what was left
    alone and why."""

    def __init__(self, repo: Repo, worktrees: Path, own: list[str],
                 note: Callable[[str], None], say: Callable[[str], None]) -> None:
        self.repo = repo
        self.worktrees = worktrees
        self.own = own
        self.note = note
        self.say = say

    def after(self, previous: dict[str, Any]) -> None:
        """Put right what the holder described by `previous` (the lock file's content)
        left: its git waited for, stale locks removed, an uncommitted merge rolled back."""
        intent = previous.get("intent") or {}
        who, phase = previous.get("workflow_id"), intent.get("phase")
        deadline = time.monotonic() + GIT_WAIT
        while git_processes(self.repo.top, self.worktrees):
            if time.monotonic() > deadline:
                self.say(f"a git process of workflow {who} still works in {self.repo.top}; "
                         "leaving what it does alone")
                return
            time.sleep(0.1)
        for lock in self.git_locks(intent.get("target")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)
                self.note(f"removed the stale {lock} a killed git left (workflow {who})")
        if intent.get("kind") != "merge" or self.repo.head() != intent.get("head"):
            return  # nothing in flight, or the merge committed before the holder died
        try:
            staged = set(self.repo.staged())
            base = self.repo.run("merge-base", "HEAD", intent["commit"]).stdout.strip()
            brought = set(self.repo.run("diff", "--name-only", "-z", "--no-renames", base,
                                        intent["commit"]).stdout.split("\0")) - {""}
            merging = self.repo.merging()
            unmerged = self.repo.unmerged()
        except GitError as exc:
            log.warning("cannot reconcile the interrupted merge of workflow %s: %s", who, exc)
            return
        if not staged and not merging:
            # git died before it wrote the index: the files it had already checked out are
            # still there, exactly as the phase's commit has them
            self.undo_checkout(intent["commit"], brought, who, phase)
            return
        if unmerged:  # a genuine conflict: the user's to resolve, as always
            return
        if not staged <= brought:
            self.say(f"the interrupted merge of phase {phase} of workflow {who} left changes "
                     f"Baton cannot tell from yours ({', '.join(sorted(staged - brought)[:5])})"
                     "; not touching them")
            return
        self.repo.run("reset", "--merge", check=False)  # what `git merge --abort` runs
        self.note(f"rolled back the interrupted merge of phase {phase} of workflow {who} (its "
                  "engine died in the middle); it is merged again when that workflow resumes")

    def git_locks(self, target: str | None) -> list[Path]:
        """The lock files a git killed inside a merge or commit of the main tree can leave:
        the index, HEAD and the merge's state files, the branch's ref, packed-refs and the
        automatic maintenance's."""
        names = ["index.lock", "HEAD.lock", "ORIG_HEAD.lock", "MERGE_HEAD.lock",
                 "MERGE_MSG.lock", "AUTO_MERGE.lock"]
        found = [self.repo.git_dir / n for n in names]
        common = self.repo.common_dir
        found.append(common / "packed-refs.lock")
        # an automatic maintenance a git of the killed run started (older Baton, or a hook)
        found.append(common / "objects" / "maintenance.lock")
        if target and ".." not in target:
            found.append(common / "refs" / "heads" / f"{target}.lock")
        return found

    def undo_checkout(self, commit: str, brought: set[str], who: str | None,
                      phase: str | None) -> None:
        """Put back the files a merge killed before it wrote the index had checked out:
        only a file whose content is exactly the phase commit's (so Baton's write, never an
        edit of the user's) — a new one is removed, a changed tracked one restored."""
        if not brought:
            return
        try:
            tracked_changed, untracked = self.repo.changes(self.own)
            suspects = sorted((set(tracked_changed) | set(untracked)) & brought)
            if not suspects:
                return
            theirs = self.repo.blob_ids(commit, suspects)
            here = self.repo.hash_files(suspects)
        except GitError as exc:
            log.warning("cannot check what the interrupted merge of workflow %s left: %s",
                        who, exc)
            return
        put_back = [p for p in suspects if p in theirs and here.get(p) == theirs[p]]
        if not put_back:
            return
        untracked_set = set(untracked)
        for rel in put_back:
            if rel in untracked_set:
                with contextlib.suppress(OSError):
                    os.unlink(self.repo.top / rel)
        restore = [p for p in put_back if p not in untracked_set]
        if restore:
            self.repo.run("checkout", "HEAD", "--pathspec-from-file=-", "--pathspec-file-nul",
                          input="".join(f":(top,literal){p}\0" for p in restore))
        self.note(f"put back {len(put_back)} file(s) the interrupted merge of phase {phase} "
                  f"of workflow {who} had written (its engine died in the middle); it is "
                  "merged again when that workflow resumes")

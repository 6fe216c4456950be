"""Several workflows on one repository at once: real `baton` processes, real git, the
scripted agents (each run with its own behaviour file, so each writes its own files).

What must hold whatever the runs do to each other: the user's branch never gets a commit
with conflict markers or another run's (or Baton's own) files, a merge another run left
for the user is never concluded by someone else's commit, and runs merge one at a time
(waiting, visibly, for whoever holds the repository)."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.workflow.repolock import INTEGRATION_LOCK, WORKTREE_LOCK
from tests.dead_holder import kill_holder

from .conftest import Workspace, agent_started
from .test_isolation import checkpoint, first_parent, git, leftovers, repo

MARKERS = "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> other\n"


def behaviour(ws: Workspace, name: str, table: dict) -> dict[str, str]:
    """A behaviour file of one run (the env that points its agents at it)."""
    path = ws.root / ".claude" / f"behave-{name}.json"
    path.write_text(json.dumps(table))
    return {"BATON_SCRIPT_BEHAVIOUR": str(path)}


def implement_args(plan: Path, wid: str) -> tuple[str, ...]:
    return ("run", "Implement the plan", "--scope", "implement-only", "--plan", str(plan),
            "--id", wid)


def marked_commits(ws: Workspace, ref: str = "main") -> list[str]:
    """Commits reachable from `ref` whose tree holds a conflict marker line."""
    bad = []
    for sha in git(ws, "rev-list", ref).split():
        found = subprocess.run(["git", "grep", "-l", "-E", "^(<<<<<<<|>>>>>>>) ", sha],
                               cwd=ws.root, capture_output=True, text=True, check=False)
        if found.stdout.strip():
            bad.append(sha)
    return bad


def rel(ws: Workspace, path: Path) -> str:
    return path.relative_to(ws.root).as_posix()


def files_of(ws: Workspace, commit: str) -> list[str]:
    """What a (merge) commit brought to its first parent."""
    return sorted(git(ws, "diff", "--name-only", f"{commit}^1", commit).split())


def test_a_merge_left_for_the_user_is_never_concluded_by_another_run(ws: Workspace) -> None:
    """Run B's phases conflict and its merge is left in progress while run A's phase is
    still working: A must not commit over it (it concluded B's merge, markers and all, in
    a two-parent commit on the user's branch); A stops, resumable, naming B."""
    plan_a = ws.write_plan([[]], name="002_alpha")
    plan_b = ws.write_plan([[], []], name="003_beta")
    repo(ws, [], {"src/shared.py": "value = 0\n"})
    env_a = behaviour(ws, "a", {"implement.phase-*": {"sleep": 4, "files": {
        "src/alpha.py": "alpha = 1\n"}}})
    env_b = behaviour(ws, "b", {"implement.phase-1": {"files": {"src/shared.py": "value = 1\n"}},
                                "implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}}})
    run_a = ws.popen(*implement_args(plan_a, "alpha"), env=env_a)
    run_a.wait_event(agent_started("implement.phase-1"))
    r_b = ws.baton(*implement_args(plan_b, "beta"), env=env_b)
    assert r_b.returncode == 1, r_b.stdout + r_b.stderr
    assert "does not merge cleanly" in r_b.stdout + r_b.stderr
    assert (ws.root / ".git/MERGE_HEAD").exists()  # B's conflict, left for the user
    finished = run_a.wait_event(lambda e: e.get("event") == "finished", timeout=120)
    assert run_a.wait(30) == 1
    assert finished["status"] == "failed"
    assert "a merge is in progress" in finished["message"]
    assert "phase 2 of workflow beta" in finished["message"], finished
    # nothing of A landed over B's merge: B's first phase only, its second still pending
    assert first_parent(ws) == ["Merge phase 1: Step 1 (beta)", "base"]
    assert (ws.root / ".git/MERGE_HEAD").exists()
    assert marked_commits(ws) == []
    # the user gives up B's merge; A resumes and lands alone, with only its own file
    git(ws, "merge", "--abort")
    r = ws.baton("resume", "alpha", env=env_a)
    assert r.returncode == 0, r.stdout + r.stderr
    assert first_parent(ws) == ["Merge phase 1: Step 1 (alpha)",
                                "Merge phase 1: Step 1 (beta)", "base"]
    # its own file and its own plan's marker edit, nothing of B's
    assert files_of(ws, "HEAD") == sorted(["src/alpha.py", rel(ws, plan_a)])
    assert len(git(ws, "show", "-s", "--format=%P", "HEAD").split()) == 2
    assert marked_commits(ws) == []


def test_two_runs_at_once_land_their_own_phases_and_nothing_else(ws: Workspace) -> None:
    """Two runs with parallel phases on one repository, started together: both complete,
    each phase is one first-parent merge commit carrying exactly that phase's file."""
    plan_a = ws.write_plan([[], [], [1, 2]], name="002_alpha")
    plan_b = ws.write_plan([[], [], [1, 2]], name="003_beta")
    repo(ws, [], {"src/shared.py": "one\ntwo\nthree\nfour\nfive\nsix\nseven\n"})
    runs = {}
    plans = {"alpha": plan_a, "beta": plan_b}
    for name, plan in plans.items():
        env = behaviour(ws, name, {f"implement.phase-{p}": {"sleep": 0.5, "files": {
            f"src/{name}_{p}.py": f"{name} = {p}\n"}} for p in "123"})
        runs[name] = ws.popen(*implement_args(plan, name), env=env)
    for name, run in runs.items():
        assert run.wait(180) == 0, (name, run.stderr.read())
    subjects = first_parent(ws)
    assert subjects[-1] == "base" and len(subjects) == 7
    commits = git(ws, "log", "--first-parent", "--format=%H").split()[:-1]
    for commit, subject in zip(commits, subjects, strict=False):
        name = subject.rsplit("(", 1)[1].rstrip(")")
        pid = subject.split()[2].rstrip(":")
        assert files_of(ws, commit) == sorted([f"src/{name}_{pid}.py",
                                               rel(ws, plans[name])]), subject
    assert sorted(s.split()[2] + s.rsplit("(", 1)[1] for s in subjects[:-1]) == sorted(
        f"{p}:{n})" for n in ("alpha", "beta") for p in "123")
    assert leftovers(ws) == ([], [])
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""
    assert marked_commits(ws) == []


def test_a_run_waits_for_the_repository_and_says_for_whom(ws: Workspace) -> None:
    """While another run holds the repository's integration lock, a run's merge waits
    (an event and a line naming the holder) and lands once the lock is free."""
    from baton_lsp.workflow.repolock import INTEGRATION_LOCK, RepoLock

    plan = repo(ws, [[]])
    common = Path(git(ws, "rev-parse", "--git-common-dir").strip())
    lock = RepoLock(ws.root / common, INTEGRATION_LOCK)
    assert lock.try_acquire({"workflow_id": "someone-else", "what": "merging wave 2"})
    try:
        run = ws.popen(*implement_args(plan, "waiter"))
        waiting = run.wait_event(lambda e: e.get("event") == "waiting", timeout=120)
        assert waiting["holder"] == "someone-else"
        assert waiting["holder_what"] == "merging wave 2"
        assert first_parent(ws) == ["base"]
        assert run.returncode is None  # still waiting, not failed
    finally:
        lock.release()
    assert run.wait(120) == 0
    assert first_parent(ws) == ["Merge phase 1: Step 1 (waiter)", "base"]


def test_conflict_markers_an_agent_leaves_are_never_committed(ws: Workspace) -> None:
    plan = repo(ws, [[]])
    ws.behave({"implement.phase-1": {"files": {"src/broken.py": MARKERS}}})
    r = ws.baton(*implement_args(plan, "marked"))
    assert r.returncode == 1
    assert "left conflict markers in src/broken.py" in r.stdout + r.stderr
    assert first_parent(ws) == ["base"]
    assert marked_commits(ws, "--all") == []
    steps = checkpoint(ws, "marked")["baton"]["steps"]
    assert steps["implement.phase-1"]["status"] == "failed"
    # a Markdown heading underlined with seven `=` is not a marker
    ws.behave({"implement.phase-1": {"files": {"docs/notes.md": "Notes\n=======\n\ntext\n"}}})
    r = ws.baton("resume", "marked")
    assert r.returncode == 0, r.stdout + r.stderr
    assert files_of(ws, "HEAD") == sorted(["docs/notes.md", rel(ws, plan)])


class InsideGit:
    """A FIFO a git filter or merge driver writes to (`echo in 1<>PATH`: opened read-write,
    so it never blocks, not even when no test reads any more) the moment git is in the
    middle of the operation; the test, reading it, is woken then — no polling."""

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # before any writer: no wait

    def say(self) -> str:
        """The shell words that tell the test git got there."""
        return f"echo in 1<>{self.path}"

    def wait(self, run: Any, timeout: float = 120) -> None:
        """Until git wrote (or fail when the run ended first or `timeout` passed)."""
        deadline = time.monotonic() + timeout
        while not select.select([self.fd], [], [], 1.0)[0]:
            assert time.monotonic() < deadline and run.returncode is None, run.seen[-3:]
        os.read(self.fd, 64)
        os.close(self.fd)

    def kill(self, run: Any, everything: Path | None = None) -> None:
        """SIGKILL the engine's process group (and with `everything`, a workspace, every
        process working in it, git and its driver too) once git is inside; reap the
        engine."""
        self.wait(run)
        os.killpg(run.pid, signal.SIGKILL)
        if everything is not None:
            assert kill_git_of(everything) >= 1
        run.wait(15)


def git_finished(root: Path, timeout: float = 60) -> None:
    """Wait (pidfds) until no git works in `root`'s main tree: one a killed engine left
    running in its own session finishes its operation."""
    from baton_lsp.workflow.reconcile import git_processes

    for pid in git_processes(root, root / ".claude" / "worktrees"):
        with contextlib.suppress(ProcessLookupError):
            fd = os.pidfd_open(pid)
            try:
                assert select.select([fd], [], [], timeout)[0], f"git {pid} still runs"
            finally:
                os.close(fd)


def kill_git_of(root: Path) -> int:
    """SIGKILL every process working in `root` (git and the merge driver it runs): a kill
    of everything, as a machine going down or an OOM killer would do it."""
    killed = 0
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(f"/proc/{name}/cwd"))
        except OSError:
            continue
        if cwd.is_relative_to(root):
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(name), signal.SIGKILL)
                killed += 1
    return killed


@pytest.mark.parametrize("everything", [False, True], ids=["engine-group", "everything"])
def test_a_run_killed_inside_its_merge_is_reconciled_by_the_next_holder(
        ws: Workspace, tmp_path: Path, everything: bool) -> None:
    """SIGKILL while git is inside a merge (held there by a merge driver that sleeps). Of
    the engine's process group alone: git runs in a session of its own and finishes the
    merge (no commit), which the resume waits for. Of everything: git dies half-way,
    leaving its `index.lock` and the files it had checked out. Either way the next holder
    of the repository — here the resume — finds the dead holder's recorded intent,
    reconciles the tree (stale locks removed once no git works there, exactly what that
    merge wrote put back) and the phase is merged again, once, without re-running it."""
    shared = "".join(f"line {n}\n" for n in range(1, 21))
    plan = repo(ws, [[], []], {"src/shared.py": shared,
                               ".gitattributes": "src/shared.py merge=slow\n"})
    inside = InsideGit(tmp_path / "inside-merge")
    git(ws, "config", "merge.slow.driver",
        f"{inside.say()}; sleep 3; git merge-file %A %O %B")
    ws.behave({"implement.phase-1": {"files": {
        "src/shared.py": shared.replace("line 2\n", "line 2 (phase 1)\n"),
        "src/one.py": "one = 1\n"}},
        "implement.phase-2": {"files": {
            "src/shared.py": shared.replace("line 18\n", "line 18 (phase 2)\n"),
            "src/two.py": "two = 2\n"}}})
    run = ws.popen(*implement_args(plan, "killed"))
    inside.kill(run, ws.root if everything else None)  # phase 2 merging: git is mid-merge
    assert first_parent(ws) == ["Merge phase 1: Step 1 (killed)", "base"]
    r = ws.baton("resume", "killed")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "interrupted merge of phase 2 of workflow killed" in r.stdout or (
        everything and "stale" in r.stdout), r.stdout
    assert first_parent(ws) == ["Merge phase 2: Step 2 (killed)",
                                "Merge phase 1: Step 1 (killed)", "base"]
    assert (ws.root / "src/shared.py").read_text() == shared.replace(
        "line 2\n", "line 2 (phase 1)\n").replace("line 18\n", "line 18 (phase 2)\n")
    assert ws.started("implement.phase-2") == ["implement.phase-2"]  # merged, not re-run
    # what the resume found and did stays in the record: `baton status` shows it
    found = [r["what"] for r in ws.status("killed")["reconciled"]]
    assert any("interrupted merge of phase 2 of workflow killed" in f or "stale" in f
               for f in found), found
    assert "reconciled" in ws.baton("status", "killed").stdout
    assert not (ws.root / ".git/index.lock").exists()
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""
    assert leftovers(ws) == ([], [])


def test_a_run_killed_inside_worktree_add_resumes(ws: Workspace, tmp_path: Path) -> None:
    """SIGKILL while `git worktree add` is checking out (a smudge filter holds it there):
    git leaves the worktree's admin entry locked ("initializing"), which `worktree prune`
    keeps and the next `worktree add` of that path refuses. The resume unlocks and removes
    it, and the run completes with nothing left behind."""
    plan = repo(ws, [[], []], {"data/big.txt": "payload\n",
                               ".gitattributes": "data/big.txt filter=slow\n"})
    inside = InsideGit(tmp_path / "inside-add")
    git(ws, "config", "filter.slow.smudge", f"sh -c '{inside.say()}; sleep 60; cat'")
    git(ws, "config", "filter.slow.clean", "cat")
    run = ws.popen(*implement_args(plan, "addkill"))
    inside.kill(run)
    locked = list((ws.root / ".git/worktrees").glob("*/locked"))
    assert locked, "git left no locked worktree: the kill missed `worktree add`"
    git(ws, "config", "filter.slow.smudge", "cat")
    r = ws.baton("resume", "addkill")
    assert r.returncode == 0, r.stdout + r.stderr
    assert first_parent(ws) == ["Merge phase 2: Step 2 (addkill)",
                                "Merge phase 1: Step 1 (addkill)", "base"]
    assert leftovers(ws) == ([], [])
    assert not list((ws.root / ".git/worktrees").glob("*"))
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_run_starts_while_another_marks_its_tracked_plan(ws: Workspace) -> None:
    """Run A's plan (tracked) reads `[IN PROGRESS]` in the working tree while its phase
    works: that is progress, not the user's change, so run B starts, lands and leaves A's
    markers alone; then A lands too."""
    plan_a = ws.write_plan([[]], name="002_alpha")
    plan_b = ws.write_plan([[]], name="003_beta")
    repo(ws, [])
    env_a = behaviour(ws, "a", {"implement.phase-*": {"sleep": 5, "files": {
        "src/alpha.py": "alpha = 1\n"}}})
    env_b = behaviour(ws, "b", {"implement.phase-*": {"files": {"src/beta.py": "beta = 1\n"}}})
    run_a = ws.popen(*implement_args(plan_a, "alpha"), env=env_a)
    run_a.wait_event(agent_started("implement.phase-1"))
    assert "[IN PROGRESS]" in plan_a.read_text()
    assert git(ws, "status", "--porcelain", "--untracked-files=no").strip()  # A's markers
    r_b = ws.baton(*implement_args(plan_b, "beta"), env=env_b)
    assert r_b.returncode == 0, r_b.stdout + r_b.stderr
    assert files_of(ws, "HEAD") == sorted(["src/beta.py", rel(ws, plan_b)])
    assert run_a.wait(120) == 0
    assert first_parent(ws) == ["Merge phase 1: Step 1 (alpha)",
                                "Merge phase 1: Step 1 (beta)", "base"]
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_holder_killed_while_deleting_branches_leaves_nothing_behind(ws: Workspace) -> None:
    """A run killed while it held the worktree lock — inside `git branch -D`, which leaves
    `packed-refs.lock` — would make every later `branch -D` of every run fail (silently:
    branches left behind). The next holder, once no git works in the tree, removes it."""
    plan = repo(ws, [[], []])
    common = ws.root / ".git"
    kill_holder(common, WORKTREE_LOCK, {"workflow_id": "dead-run"}, leave=("packed-refs.lock",))
    r = ws.baton(*implement_args(plan, "after"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (common / "packed-refs.lock").exists()
    assert leftovers(ws) == ([], [])
    assert any("packed-refs.lock" in f["what"] for f in ws.status("after")["reconciled"])


def test_a_conflict_git_finished_after_the_kill_keeps_its_marker_committed(
        ws: Workspace, tmp_path: Path) -> None:
    """SIGKILL of the engine's group while git is inside a merge that will conflict: git (in
    its own session) finishes, leaving the conflict, before the run recorded it — the phase
    still reads "committed". The user resolves and commits by hand; on resume the merge is
    "already up to date", and the phase's `[COMPLETE]` marker, which no merge commit of
    Baton's carried, must ride in the next commit rather than stay an uncommitted change to
    the tracked plan (found by the git crash bench)."""
    plan = repo(ws, [[], [], [1, 2]], {"src/shared.py": "value = 0\n",
                                       ".gitattributes": "src/shared.py merge=slow\n"})
    inside = InsideGit(tmp_path / "inside-merge")
    git(ws, "config", "merge.slow.driver", f"{inside.say()}; sleep 3; git merge-file %A %O %B")
    ws.behave({"implement.phase-1": {"files": {"src/shared.py": "value = 1\n"}},
               "implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}},
               "implement.phase-3": {"files": {"src/three.py": "three = 3\n"}}})
    run = ws.popen(*implement_args(plan, "late"))
    inside.kill(run)  # phase 2's merge is running its driver: git is mid-merge
    r = ws.baton("resume", "late")  # waits for git, finds the conflict: the user's to resolve
    assert r.returncode == 1, r.stdout + r.stderr
    assert (ws.root / ".git/MERGE_HEAD").exists()
    (ws.root / "src/shared.py").write_text("value = 3\n")
    git(ws, "add", "src/shared.py")
    git(ws, "commit", "-q", "--no-edit")
    r = ws.baton("resume", "late")
    assert r.returncode == 0, r.stdout + r.stderr
    text = plan.read_text()
    assert "### Phase 2: Step 2 [COMPLETE]" in text and "### Phase 3: Step 3 [COMPLETE]" in text
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(ws, "show", f"HEAD:{rel(ws, plan)}") == text
    assert ws.started("implement.phase-2") == ["implement.phase-2"]
    assert leftovers(ws) == ([], [])


def test_a_staged_merge_finished_on_resume_leaves_no_branch(ws: Workspace,
                                                            tmp_path: Path) -> None:
    """SIGKILL of the engine's group while git is inside phase 2's clean merge, the run
    having staged the phase's plan marker already (its merge commit carries it): git
    finishes the merge uncommitted, the reconciler cannot tell the staged plan from the
    user's edit and leaves it, and the resume commits Baton's own staged merge. The phase's
    branch must go with it (the git crash bench found it left)."""
    shared = "".join(f"line {n}\n" for n in range(1, 21))
    plan = repo(ws, [[], []], {"src/shared.py": shared,
                               ".gitattributes": "src/shared.py merge=slow\n"})
    inside = InsideGit(tmp_path / "inside-merge")
    git(ws, "config", "merge.slow.driver", f"{inside.say()}; sleep 3; git merge-file %A %O %B")
    ws.behave({"implement.phase-1": {"files": {
        "src/shared.py": shared.replace("line 2\n", "line 2 (phase 1)\n")}},
        "implement.phase-2": {"files": {
            "src/shared.py": shared.replace("line 18\n", "line 18 (phase 2)\n")}}})
    run = ws.popen(*implement_args(plan, "staged"))
    inside.kill(run)
    git_finished(ws.root)  # git, in its own session, finishes the merge uncommitted
    assert (ws.root / ".git/MERGE_HEAD").exists()
    # what the engine does next, had it lived: the phase's marker staged into the merge
    committed = git(ws, "show", f"HEAD:{rel(ws, plan)}")
    (ws.root / "marked.md").write_text(committed.replace("### Phase 2: Step 2 [NOT STARTED]",
                                                         "### Phase 2: Step 2 [COMPLETE]"))
    blob = git(ws, "hash-object", "-w", "marked.md").strip()
    (ws.root / "marked.md").unlink()
    git(ws, "update-index", "--cacheinfo", f"100644,{blob},{rel(ws, plan)}")
    r = ws.baton("resume", "staged")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "finished the merge a killed run left staged" in r.stdout, r.stdout
    assert first_parent(ws) == ["Merge phase 2: Step 2 (staged)",
                                "Merge phase 1: Step 1 (staged)", "base"]
    assert ws.started("implement.phase-2") == ["implement.phase-2"]
    assert leftovers(ws) == ([], [])
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_baton_s_git_starts_no_automatic_maintenance(ws: Workspace) -> None:
    """A `git maintenance run --auto` started by one of Baton's commits or merges and
    killed with its run leaves `objects/maintenance.lock`, after which every automatic
    maintenance of the repository is skipped (the git crash bench found one). Baton's git
    starts none: a commit-graph task set to run after every commit is not run by the run's
    merges, while the user's own commit still runs it."""
    plan = repo(ws, [[], []])
    git(ws, "config", "maintenance.gc.enabled", "false")
    git(ws, "config", "maintenance.commit-graph.enabled", "true")
    git(ws, "config", "maintenance.commit-graph.auto", "1")
    graphs = ws.root / ".git/objects/info/commit-graphs"
    r = ws.baton(*implement_args(plan, "quiet"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(first_parent(ws)) == 3
    assert not graphs.exists()
    (ws.root / "mine.txt").write_text("mine\n")
    git(ws, "add", "mine.txt")
    git(ws, "commit", "-qm", "mine")
    assert graphs.exists()  # the user's commit: the task does run here


def test_a_stale_maintenance_lock_of_a_killed_run_is_removed(ws: Workspace) -> None:
    """A dead holder's intent and `objects/maintenance.lock` with no git working: the next
    holder removes it with the other stale locks, and says so."""
    plan = repo(ws, [[]])
    common = ws.root / ".git"
    kill_holder(common, INTEGRATION_LOCK, {"workflow_id": "dead-run", "what": "merging wave 1"},
                {"kind": "merge", "phase": "1", "head": git(ws, "rev-parse", "HEAD").strip(),
                 "commit": git(ws, "rev-parse", "HEAD").strip(), "target": "main"},
                leave=("objects/maintenance.lock",))
    r = ws.baton(*implement_args(plan, "after"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (common / "objects/maintenance.lock").exists()
    # found by the run's check of the tree, before its record exists: said, not recorded
    assert "removed the stale" in r.stdout + r.stderr and "maintenance.lock" in r.stdout \
        + r.stderr, r.stdout + r.stderr

"""Parallel phases in their own git worktrees, merged by Baton: real git, the real engine
(`baton run|resume` as processes) and the scripted agents, which write code in their
working directory and say which directory that was in their summary."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Workspace, agent_started, checkpointed

GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(ws: Workspace, *args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=cwd or ws.root, check=True,
                          capture_output=True, text=True).stdout


def repo(ws: Workspace, plan: list[list[int]], files: dict[str, str] | None = None) -> Path:
    """The workspace as a git repository with one commit holding the plan and `files`."""
    plan_path = ws.write_plan(plan)
    for rel, text in (files or {}).items():
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text(text)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    return plan_path


def implement(ws: Workspace, plan: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return ws.baton("run", "Implement the plan", "--scope", "implement-only", "--plan",
                    str(plan), *extra)


def checkpoint(ws: Workspace, wid: str) -> dict:
    files = sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def check(ws: Workspace, code: str) -> list[dict]:
    """`baton check` of the workspace: its findings of one code."""
    r = subprocess.run([sys.executable, "-m", "baton_lsp", "check", ".", "--format", "json"],
                       capture_output=True, text=True, check=False, cwd=ws.root)
    assert r.returncode in (0, 1), r.stderr
    return [f for f in json.loads(r.stdout) if f["code"] == code]


def first_parent(ws: Workspace) -> list[str]:
    return git(ws, "log", "--first-parent", "--format=%s").splitlines()


def leftovers(ws: Workspace) -> tuple[list[str], list[str]]:
    """Baton's branches and the worktrees besides the main one."""
    branches = git(ws, "branch", "--list", "baton/*", "--format=%(refname:short)").split()
    trees = [ln[9:] for ln in git(ws, "worktree", "list", "--porcelain").splitlines()
             if ln.startswith("worktree ")][1:]
    return branches, trees


def workdir(ws: Workspace, wid: str, pid: str) -> str:
    summary = Path(checkpoint(ws, wid)["baton"]["steps"][f"implement.phase-{pid}"]["artifact"])
    return next(ln.split(": ", 1)[1] for ln in summary.read_text().splitlines()
                if ln.startswith("Working directory: "))


def test_parallel_phases_run_in_worktrees_and_land_as_one_commit_each(ws: Workspace) -> None:
    plan = repo(ws, [[], [1], [1], [2, 3]])
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout + r.stderr
    wid = ws.only_workflow()
    assert first_parent(ws) == [
        f"Merge phase 4: Step 4 ({wid})", f"Merge phase 3: Step 3 ({wid})",
        f"Merge phase 2: Step 2 ({wid})", f"Merge phase 1: Step 1 ({wid})", "base"]
    # every phase worked in its own worktree (the user's tree changes only by merges), the
    # single-phase waves too
    for pid in "1234":
        assert workdir(ws, wid, pid) == str(
            ws.root / f".claude/worktrees/baton-{wid}-phase-{pid}")
    # each phase's commit holds its own code, branched from the commit with its dependency
    steps = checkpoint(ws, wid)["baton"]["steps"]
    one = steps["implement.phase-1"]["git"]
    assert one["mode"] == "worktree" and one["status"] == "merged"
    for pid in ("2", "3"):
        record = steps[f"implement.phase-{pid}"]["git"]
        assert record["status"] == "merged" and record["target"] == "main"
        assert record["base"] == one["merged"]
        assert git(ws, "show", "--name-only", "--format=", record["commit"]).split() == [
            f"src/phase_{pid}.py"]
        assert "Baton-Phase: " + pid in git(ws, "show", "-s", "--format=%B", record["merged"])
    assert sorted(git(ws, "ls-files", "src").split()) == [
        f"src/phase_{n}.py" for n in "1234"]
    # hygiene: no branch, no worktree, nothing of Baton's committed, the tree clean
    assert leftovers(ws) == ([], [])
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""
    # of the topic directory only the plan, whose markers each phase's commit carries
    assert [p for p in git(ws, "diff", "--name-only", "HEAD~4", "HEAD").split()
            if p.startswith((".claude/data", ".claude/tmp", ".claude/specs"))] == [
        str(plan.relative_to(ws.root))]
    excluded = (ws.root / ".git/info/exclude").read_text().splitlines()
    assert "/.claude/worktrees/" in excluded and "/.claude/tmp/workflow_*.sh" in excluded


def test_a_planted_exclude_link_is_not_written_through(ws: Workspace, tmp_path: Path) -> None:
    """`.git/info/exclude` as a symlink to a file outside (an archived repository can carry
    one): the phases still run in worktrees, the outside file is untouched."""
    plan = repo(ws, [[], []])
    outside = tmp_path / "bashrc"
    outside.write_text("export PS1=x\n")
    exclude = ws.root / ".git/info/exclude"
    exclude.unlink(missing_ok=True)
    exclude.symlink_to(outside)
    r = implement(ws, plan)
    assert r.returncode == 0, r.stderr
    assert outside.read_text() == "export PS1=x\n"
    assert exclude.is_symlink()
    assert "git exclude file" in r.stderr and "refusing" in r.stderr.lower()


def test_agents_own_commits_are_kept_in_their_phase(ws: Workspace) -> None:
    plan = repo(ws, [[], []])
    ws.behave({"implement.phase-2": {"commit": "wip: agent's own commit"}})
    assert implement(ws, plan).returncode == 0
    record = checkpoint(ws, ws.only_workflow())["baton"]["steps"]["implement.phase-2"]["git"]
    # the agent committed everything itself: its commit is the phase's commit
    assert git(ws, "show", "-s", "--format=%s", record["commit"]).strip() == \
        "wip: agent's own commit"
    assert git(ws, "merge-base", "--is-ancestor", record["commit"], "HEAD") == ""


def test_a_conflict_is_a_failure_of_its_phase_and_resumes_after_a_manual_fix(
        ws: Workspace) -> None:
    plan = repo(ws, [[], [1], [1], [2, 3]], {"src/shared.py": "value = 0\n"})
    ws.behave({"implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}},
               "implement.phase-3": {"files": {"src/shared.py": "value = 3\n"}}})
    r = implement(ws, plan)
    assert r.returncode == 1
    wid = ws.only_workflow()
    branch = f"baton/{wid}/phase-3"
    assert f"phase 3's branch {branch} does not merge cleanly into main: conflicts in " \
           "src/shared.py" in r.stdout
    cp = checkpoint(ws, wid)
    assert cp["status"] == "failed" and cp["baton"]["failure"]["step"] == "implement.phase-3"
    steps = cp["baton"]["steps"]
    assert steps["implement.phase-2"]["git"]["status"] == "merged"
    three = steps["implement.phase-3"]
    assert three["status"] == "done"  # the agent's work is kept
    assert three["git"]["status"] == "conflict"
    assert three["git"]["conflicts"] == ["src/shared.py"]
    assert "implement.phase-4" not in steps
    assert leftovers(ws) == ([branch], [])  # the branch stays until the merge is done
    assert "<<<<<<<" in (ws.root / "src/shared.py").read_text()
    # the editor's (and baton check's) diagnostic on phase 3's heading
    [conflict] = check(ws, "BTN506")
    assert conflict["filename"] == str(plan.relative_to(ws.root))
    assert conflict["location"]["line"] == 1 + plan.read_text().splitlines().index(
        "### Phase 3: Step 3 [IN PROGRESS]")  # started, never landed
    assert "src/shared.py" in conflict["message"] and branch in conflict["message"]
    first = conflict["related"][0]
    assert (first["filename"], first["location"]["line"]) == ("src/shared.py", 1)  # <<<<<<<
    # resuming before the conflict is resolved changes nothing
    r = ws.baton("resume", wid)
    assert r.returncode == 1 and "still in progress" in r.stdout
    assert checkpoint(ws, wid)["baton"]["steps"]["implement.phase-3"]["git"]["status"] == \
        "conflict"
    # the user resolves and commits; the resume merges nothing again and runs phase 4
    (ws.root / "src/shared.py").write_text("value = 5\n")
    git(ws, "add", "src/shared.py")
    git(ws, "commit", "-q", "--no-edit")
    runs_before = ws.started("implement")
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.started("implement") == [*runs_before, "implement.phase-4"]
    assert (ws.root / "src/shared.py").read_text() == "value = 5\n"
    assert first_parent(ws)[:2] == [f"Merge phase 4: Step 4 ({wid})",
                                    f"Merge phase 3: Step 3 ({wid})"]
    # phase 3's marker (its merge commit is the user's) comes with phase 4's commit
    assert git(ws, "show", f"HEAD:{plan.relative_to(ws.root)}") == plan.read_text()
    assert "### Phase 3: Step 3 [COMPLETE]" in plan.read_text()
    assert leftovers(ws) == ([], [])
    assert check(ws, "BTN506") == []


def test_an_aborted_merge_is_merged_again_on_resume(ws: Workspace) -> None:
    plan = repo(ws, [[], []], {"src/shared.py": "value = 0\n"})
    ws.behave({"implement.phase-1": {"files": {"src/shared.py": "value = 1\n"}},
               "implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}}})
    assert implement(ws, plan).returncode == 1
    wid = ws.only_workflow()
    git(ws, "merge", "--abort")
    r = ws.baton("resume", wid)
    assert r.returncode == 1 and "does not merge cleanly" in r.stdout  # the same conflict
    git(ws, "checkout", "--theirs", "src/shared.py")
    git(ws, "commit", "-qam", "take phase 2")
    assert ws.baton("resume", wid).returncode == 0
    assert (ws.root / "src/shared.py").read_text() == "value = 2\n"


def test_uncommitted_changes_to_tracked_files_refuse_the_run(ws: Workspace) -> None:
    plan = repo(ws, [[], []], {"app.py": "x = 1\n"})
    (ws.root / "app.py").write_text("x = 2  # mine, not committed\n")
    r = implement(ws, plan)
    assert r.returncode == 1
    # refused at the front door (issue 30): before any workflow record exists
    assert "uncommitted changes to tracked files" in r.stderr and "app.py" in r.stderr
    assert ws.started() == [] and ws.status() == []
    assert (ws.root / "app.py").read_text() == "x = 2  # mine, not committed\n"
    assert first_parent(ws) == ["base"]
    # stashed: the run goes ahead, and the user's change comes back untouched and uncommitted
    git(ws, "stash", "-q")
    assert implement(ws, plan).returncode == 0
    git(ws, "stash", "pop", "-q")
    assert git(ws, "status", "--porcelain", "--untracked-files=no").strip() == "M app.py"
    assert all("app.py" not in git(ws, "show", "--name-only", "--format=", c)
               for c in git(ws, "rev-list", "HEAD~2..HEAD").split())


def test_untracked_files_of_the_user_are_never_committed(ws: Workspace) -> None:
    plan = repo(ws, [[], [1]])
    (ws.root / "notes.txt").write_text("my scratch notes\n")
    assert implement(ws, plan).returncode == 0
    assert "notes.txt" not in git(ws, "ls-files").split()
    assert (ws.root / "notes.txt").read_text() == "my scratch notes\n"
    wid = ws.only_workflow()
    assert first_parent(ws) == [f"Merge phase 2: Step 2 ({wid})",
                                f"Merge phase 1: Step 1 ({wid})", "base"]


def test_worktreeinclude_copies_ignored_files_the_agent_needs(ws: Workspace) -> None:
    plan = repo(ws, [[], []], {".gitignore": ".env\nlocal/\n",
                               ".worktreeinclude": "# Claude Code's file\n.env\nlocal/*.json\n"})
    (ws.root / ".env").write_text("TOKEN=secret\n")
    (ws.root / "local").mkdir()
    (ws.root / "local/db.json").write_text("{}\n")
    (ws.root / "local/cache.bin").write_text("not named\n")
    ws.behave({"implement.phase-*": {"require": [".env", "local/db.json"]}})
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout
    steps = checkpoint(ws, ws.only_workflow())["baton"]["steps"]
    for pid in ("1", "2"):
        committed = git(ws, "show", "--name-only", "--format=",
                        steps[f"implement.phase-{pid}"]["git"]["commit"]).split()
        assert committed == [f"src/phase_{pid}.py"]  # the copies are never committed
    # a run without the include file fails the hard way: the agents cannot find them (the
    # plan back as it was: the first run marked both phases complete)
    base = git(ws, "rev-list", "--max-parents=0", "HEAD").strip()
    git(ws, "checkout", base, "--", str(plan.relative_to(ws.root)))
    (ws.root / ".worktreeinclude").unlink()
    git(ws, "commit", "-qam", "no include")
    assert implement(ws, plan).returncode == 1


def test_isolation_none_runs_in_place_and_commits_nothing(ws: Workspace) -> None:
    plan = repo(ws, [[], []])
    ws.config('isolation = "none"\n')
    git(ws, "commit", "-qam", "config")
    assert implement(ws, plan).returncode == 0
    wid = ws.only_workflow()
    assert workdir(ws, wid, "1") == workdir(ws, wid, "2") == str(ws.root)
    assert first_parent(ws) == ["config", "base"]
    assert "git" not in checkpoint(ws, wid)["baton"]["steps"]["implement.phase-1"]


def test_a_workspace_below_the_repository_top(ws: Workspace, tmp_path: Path) -> None:
    top = ws.root
    inner = Workspace(top / "services" / "api")
    (inner.root / ".claude").mkdir(parents=True)
    (top / ".claude" / "baton.toml").rename(inner.root / ".claude" / "baton.toml")
    plan = inner.write_plan([[], []])
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    r = inner.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan))
    assert r.returncode == 0, r.stdout + r.stderr
    wid = inner.only_workflow()
    assert workdir(inner, wid, "2") == str(
        inner.root / f".claude/worktrees/baton-{wid}-phase-2/services/api")
    assert sorted(git(ws, "ls-files", "services/api/src").split()) == [
        "services/api/src/phase_1.py", "services/api/src/phase_2.py"]
    assert leftovers(ws) == ([], [])


def test_kill_mid_wave_then_resume_reruns_only_the_unfinished_phase(ws: Workspace) -> None:
    plan = repo(ws, [[], [1], [1], [2, 3]])
    ws.behave({"implement.phase-3": {"sleep": 60}})
    run = ws.popen("run", "Implement the plan", "--scope", "implement-only", "--plan",
                   str(plan))
    run.wait_event(agent_started("implement.phase-3"))  # past the spawn gate, sleeping
    run.wait_event(checkpointed("phase 2 complete"))
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(15)
    wid = ws.only_workflow()
    # the killed run's worktrees are live and `baton status` says so
    status = ws.status(wid)
    assert sorted(Path(t["path"]).name for t in status["worktrees"]) == [
        f"baton-{wid}-phase-2", f"baton-{wid}-phase-3"]
    assert "worktree" in ws.baton("status", wid).stdout
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.started("implement.phase-2") == ["implement.phase-2"]  # not run again
    assert ws.started("implement.phase-3") == ["implement.phase-3", "implement.phase-3"]
    assert first_parent(ws) == [
        f"Merge phase 4: Step 4 ({wid})", f"Merge phase 3: Step 3 ({wid})",
        f"Merge phase 2: Step 2 ({wid})", f"Merge phase 1: Step 1 ({wid})", "base"]
    assert leftovers(ws) == ([], [])
    assert ws.status(wid)["worktrees"] == []


@pytest.mark.parametrize("staged", [True, False])
def test_a_merge_never_takes_the_users_edits_made_during_the_wave(ws: Workspace,
                                                                  staged: bool) -> None:
    plan = repo(ws, [[], []], {"app.py": "x = 1\n"})
    ws.behave({"implement.phase-*": {"sleep": 1}})
    run = ws.popen("run", "Implement the plan", "--scope", "implement-only", "--plan",
                   str(plan))
    run.wait_event(lambda e: e.get("event") == "wave")
    (ws.root / "app.py").write_text("x = 2  # edited while the agents ran\n")
    if staged:
        git(ws, "add", "app.py")
    code = run.wait(60)
    changed = git(ws, "diff", "--name-only", "HEAD").split()
    if staged:  # git refuses to merge with a staged change: the run fails, nothing is lost
        assert code == 1
        assert git(ws, "diff", "--cached", "--name-only").split() == ["app.py"]
    else:  # an unstaged edit of another file stays unstaged and uncommitted
        assert code == 0
        assert changed == ["app.py"]
    assert git(ws, "log", "--format=%s", "--", "app.py").split("\n")[0] == "base"
    assert (ws.root / "app.py").read_text() == "x = 2  # edited while the agents ran\n"


def test_a_conflict_in_the_last_wave_leaves_the_plan_committed(ws: Workspace) -> None:
    """The last phase conflicts, the user resolves and commits, the resume takes it in:
    its `[COMPLETE]` marker has no later phase's commit to ride in, so it gets its own —
    the run does not end with the tracked plan modified."""
    plan = repo(ws, [[], []], {"src/shared.py": "value = 0\n"})
    ws.behave({"implement.phase-1": {"files": {"src/shared.py": "value = 1\n"}},
               "implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}}})
    assert implement(ws, plan).returncode == 1
    wid = ws.only_workflow()
    (ws.root / "src/shared.py").write_text("value = 3\n")
    git(ws, "add", "src/shared.py")
    git(ws, "commit", "-q", "--no-edit")
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "### Phase 2: Step 2 [COMPLETE]" in plan.read_text()
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""
    assert git(ws, "show", f"HEAD:{plan.relative_to(ws.root).as_posix()}") == plan.read_text()
    assert first_parent(ws)[0] == f"Mark phases merged by hand complete ({wid})"


def test_waves_of_one_phase_claim_no_time_saved(ws: Workspace) -> None:
    """Two waves of one phase each, in worktrees: nothing ran side by side, so the summary
    makes no claim about parallel time (it printed "saved 0.00 s, -94 %", the worktrees'
    and merges' cost counted as a negative saving)."""
    plan = repo(ws, [[], [1]])
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout + r.stderr
    summary = r.stdout[r.stdout.index("━━ Summary"):]
    assert "parallel steps took" not in summary and "saved" not in summary
    assert " -" not in summary.split("━━ Phases")[0]


def test_a_wave_slower_than_its_phases_says_so() -> None:
    from baton_lsp.workflow.report import savings_text

    assert savings_text(4000, 1000) == "saved 3.00 s, 75 %"
    slower = savings_text(1000, 1900)
    assert slower.startswith("no time saved") and "-" not in slower

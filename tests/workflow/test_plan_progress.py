"""The implement state against the plan as people read it: waves built from the phases still
to run (issue 30, defect 9) and the plan's own markers kept by the engine (defect 14). Real
`baton` processes, the scripted agents, real git repositories."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from pathlib import Path

from .conftest import Workspace, agent_started, checkpointed

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace" / ".claude" / \
    "specs" / "001_auth_login" / "plans" / "001-auth-login-plan.md"
GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(ws: Workspace, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=ws.root, check=True,
                          capture_output=True, text=True).stdout


def commit_all(ws: Workspace) -> None:
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")


def checkpoint(ws: Workspace) -> dict:
    files = sorted((ws.root / ".claude/data/checkpoints").glob("*/[0-9]*.json"))
    return json.loads(files[-1].read_text())


def example_plan(ws: Workspace) -> Path:
    plan = ws.root / ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
    plan.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLE, plan)
    return plan


def implement(ws: Workspace, plan: Path) -> subprocess.CompletedProcess[str]:
    return ws.baton("run", "Implement the plan", "--scope", "implement-only", "--plan",
                    str(plan), "--max-parallel", "3")


def test_ready_phases_of_the_example_run_as_one_wave(ws: Workspace) -> None:
    """Phases 1 and 2 are complete in the plan: 3 (needs 1, 2) and 4 (needs 1) are both
    ready and run together, 5 after them — two waves, not three."""
    plan = example_plan(ws)
    commit_all(ws)
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "wave 1/2: phases 3, 4 in parallel (own worktrees)" in r.stdout, r.stdout
    assert "wave 2/2: phase 5" in r.stdout
    ws_state = checkpoint(ws)["workflow_state"]
    assert ws_state["wave_structure"] == {"1": [3, 4], "2": [5]}
    assert ws_state["total_waves"] == 2
    assert ws_state["wave_results"]["1"]["phases"] == [3, 4]
    assert ws_state["wave_results"]["1"]["parallel"] is True
    assert sorted(ws.started("implement.phase-")) == [
        "implement.phase-3", "implement.phase-4", "implement.phase-5"]


def read_plan_at(ws: Workspace, rev: str, plan: Path) -> bytes:
    rel = plan.relative_to(ws.root).as_posix()
    return subprocess.run(["git", "show", f"{rev}:{rel}"], cwd=ws.root, check=True,
                          capture_output=True).stdout


def first_parent(ws: Workspace) -> list[str]:
    return git(ws, "log", "--first-parent", "--format=%s").splitlines()


def test_a_complete_run_marks_the_example_plan_like_the_seeds_implementer(
        ws: Workspace) -> None:
    plan = example_plan(ws)
    before = plan.read_bytes()
    commit_all(ws)
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout + r.stderr
    expected = before
    for old, new in ((b"### Phase 3: Login Endpoint [IN PROGRESS]",
                      b"### Phase 3: Login Endpoint [COMPLETE]"),
                     (b"- [ ] Rate limit by IP and account", b"- [x] Rate limit by IP and account"),
                     (b"### Phase 4: Logout Endpoint [NOT STARTED]",
                      b"### Phase 4: Logout Endpoint [COMPLETE]"),
                     (b"- [ ] POST /logout revokes", b"- [x] POST /logout revokes"),
                     (b"### Phase 5: Documentation [NOT STARTED]",
                      b"### Phase 5: Documentation [COMPLETE]"),
                     (b"- [ ] Document the login API", b"- [x] Document the login API"),
                     (b"- **Status**: [IN PROGRESS]", b"- **Status**: [COMPLETE]")):
        assert expected.count(old) == 1, old
        expected = expected.replace(old, new)
    # the success criteria are not a phase's boxes: they stay as they were
    assert b"- [ ] Users can log in and out" in expected
    assert plan.read_bytes() == expected
    assert read_plan_at(ws, "HEAD", plan) == expected  # committed, the tree clean
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


# CRLF, trailing blanks, a tab, no final newline, a phase without a marker, a fence, boxes
# outside every phase, and phases 2 and 3 (one wave, two worktrees) with no line between
PLAN = (
    "# Cache Plan  \r\n\r\n## Metadata\r\n- **Date**: 2026-11-28\r\n"
    "- **Status**: [NOT STARTED]\r\n\r\n## Implementation Phases\r\n\r\n"
    "### Phase 1: Base [NOT STARTED]\r\ndependencies: []\r\n- [ ] base task  \r\n\r\n"
    "### Phase 2: Left [NOT STARTED]\r\ndependencies: [1]\r\n- [ ] left task\r\n"
    "### Phase 3: Right\r\ndependencies: [1]\r\n- [ ] right task\t\r\n"
    "  - [ ] nested right\r\n"
    "### Phase 4: Join [NOT STARTED]  \r\ndependencies: [2, 3]\r\n```bash\r\n"
    "- [ ] not a task (in a fence)\r\n```\r\n- [ ] join task\r\n\r\n"
    "## Notes\r\n- [ ] review later")
MARKS = {
    "1": [("### Phase 1: Base [NOT STARTED]", "### Phase 1: Base [COMPLETE]"),
          ("- [ ] base task  ", "- [x] base task  ")],
    "2": [("### Phase 2: Left [NOT STARTED]", "### Phase 2: Left [COMPLETE]"),
          ("- [ ] left task", "- [x] left task")],
    "3": [("### Phase 3: Right\r\n", "### Phase 3: Right [COMPLETE]\r\n"),
          ("- [ ] right task\t", "- [x] right task\t"),
          ("  - [ ] nested right", "  - [x] nested right")],
    "4": [("### Phase 4: Join [NOT STARTED]  ", "### Phase 4: Join [COMPLETE]  "),
          ("- [ ] join task", "- [x] join task")],
}


def marked(done: list[str], status: str) -> bytes:
    text = PLAN.replace("- **Status**: [NOT STARTED]", f"- **Status**: [{status}]")
    for pid in done:
        for old, new in MARKS[pid]:
            assert text.count(old) == 1, old
            text = text.replace(old, new)
    return text.encode()


def test_each_phase_commit_carries_its_own_marker_edit_byte_for_byte(ws: Workspace) -> None:
    plan = ws.root / ".claude/specs/001_cache/plans/001_cache_plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_bytes(PLAN.encode())
    commit_all(ws)
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout + r.stderr
    wid = ws.only_workflow()
    assert plan.read_bytes() == marked(["1", "2", "3", "4"], "COMPLETE")
    # one commit per phase on the first-parent line; each holds the plan as it was when that
    # phase landed: its own marker and boxes, never a sibling's [IN PROGRESS]
    assert first_parent(ws) == [f"Merge phase 4: Join ({wid})", f"Merge phase 3: Right ({wid})",
                                f"Merge phase 2: Left ({wid})", f"Merge phase 1: Base ({wid})",
                                "base"]
    assert read_plan_at(ws, "HEAD~4", plan) == PLAN.encode()
    assert read_plan_at(ws, "HEAD~3", plan) == marked(["1"], "IN PROGRESS")
    assert read_plan_at(ws, "HEAD~2", plan) == marked(["1", "2"], "IN PROGRESS")
    assert read_plan_at(ws, "HEAD~1", plan) == marked(["1", "2", "3"], "IN PROGRESS")
    assert read_plan_at(ws, "HEAD", plan) == marked(["1", "2", "3", "4"], "COMPLETE")
    rel = plan.relative_to(ws.root).as_posix()
    for rev, pid in (("HEAD~3", "1"), ("HEAD~2", "2"), ("HEAD~1", "3"), ("HEAD", "4")):
        files = git(ws, "diff", "--name-only", f"{rev}^1", rev).split()
        assert sorted(files) == sorted([rel, f"src/phase_{pid}.py"]), (rev, files)
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_kill_mid_wave_then_resume_keeps_the_marked_phases_done(ws: Workspace) -> None:
    """Phase 1 is marked and committed, phase 2 finished and marked in progress (its merge
    waits for the wave), phase 3 killed: the marker edits change no phase's fingerprint, so
    the resume re-runs only phase 3."""
    plan = ws.write_plan([[], [1], [1], [2, 3]])
    commit_all(ws)
    ws.behave({"implement.phase-3": {"sleep": 60}})
    run = ws.popen("run", "Implement the plan", "--scope", "implement-only", "--plan",
                   str(plan))
    run.wait_event(agent_started("implement.phase-3"))
    run.wait_event(checkpointed("phase 2 complete"))
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(15)
    wid = ws.only_workflow()
    text = plan.read_text()
    assert "### Phase 1: Step 1 [COMPLETE]\n" in text and "- [x] task 1\n" in text
    assert "### Phase 2: Step 2 [IN PROGRESS]\n" in text and "- [ ] task 2\n" in text
    assert "### Phase 3: Step 3 [IN PROGRESS]\n" in text
    assert "### Phase 4: Step 4 [NOT STARTED]\n" in text
    preview = json.loads(ws.baton("resume", wid, "--dry-run", "--json", check=True).stdout)
    assert sorted(i["step"] for i in preview["skip"]) == ["implement.phase-1",
                                                          "implement.phase-2"]
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.started("implement.phase-1") == ["implement.phase-1"]
    assert ws.started("implement.phase-2") == ["implement.phase-2"]
    assert ws.started("implement.phase-3") == ["implement.phase-3"] * 2
    assert first_parent(ws) == [
        f"Merge phase 4: Step 4 ({wid})", f"Merge phase 3: Step 3 ({wid})",
        f"Merge phase 2: Step 2 ({wid})", f"Merge phase 1: Step 1 ({wid})", "base"]
    final = plan.read_text()
    assert all(f"### Phase {i}: Step {i} [COMPLETE]\n" in final for i in range(1, 5))
    assert "- [ ]" not in final and "- **Status**: [COMPLETE]" in final
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_the_users_concurrent_plan_edit_is_kept_and_never_committed(ws: Workspace) -> None:
    plan = ws.write_plan([[], []])
    commit_all(ws)
    ws.behave({"implement.phase-*": {"sleep": 1}})
    run = ws.popen("run", "Implement the plan", "--scope", "implement-only", "--plan",
                   str(plan))
    run.wait_event(agent_started("implement.phase-2"))  # both marked [IN PROGRESS] by now
    text = plan.read_text()
    assert "### Phase 1: Step 1 [IN PROGRESS]" in text
    plan.write_text(text + "## Notes\nA note the user wrote while the agents ran.\n")
    assert run.wait(60) == 0
    final = plan.read_text()
    assert final.endswith("## Notes\nA note the user wrote while the agents ran.\n")
    assert "### Phase 1: Step 1 [COMPLETE]" in final and "- [x] task 2" in final
    committed = read_plan_at(ws, "HEAD", plan).decode()
    assert "A note the user wrote" not in committed
    assert committed + "## Notes\nA note the user wrote while the agents ran.\n" == final


def test_a_merge_left_staged_by_a_kill_is_finished_with_its_marker(ws: Workspace) -> None:
    """Baton merges with `--no-commit`, marks the plan, then commits: an engine killed in
    between leaves the merge staged; the resume commits it, marker included."""
    plan = ws.write_plan([[], [1], [1], [2, 3]])
    commit_all(ws)
    ws.behave({"implement.phase-3": {"sleep": 60}})
    run = ws.popen("run", "Implement the plan", "--scope", "implement-only", "--plan",
                   str(plan))
    run.wait_event(agent_started("implement.phase-3"))
    run.wait_event(checkpointed("phase 2 complete"))
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(15)
    wid = ws.only_workflow()
    record = checkpoint(ws)["baton"]["steps"]["implement.phase-2"]["git"]
    assert record["status"] == "committed"
    git(ws, "merge", "--no-ff", "--no-commit", record["commit"])  # where the kill fell
    assert (ws.root / ".git" / "MERGE_HEAD").exists()
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "finished the merge a killed run left staged" in r.stdout
    assert ws.started("implement.phase-2") == ["implement.phase-2"]
    # phase 2 has landed: phase 3 is a wave of its own (in its own worktree, as every phase)
    assert first_parent(ws) == [f"Merge phase 4: Step 4 ({wid})",
                                f"Merge phase 3: Step 3 ({wid})",
                                f"Merge phase 2: Step 2 ({wid})",
                                f"Merge phase 1: Step 1 ({wid})", "base"]
    at_merge = read_plan_at(ws, "HEAD~2", plan).decode()
    assert "### Phase 2: Step 2 [COMPLETE]\n" in at_merge and "- [x] task 2\n" in at_merge
    assert "### Phase 3: Step 3 [NOT STARTED]\n" in at_merge
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_parallel_phase_that_changed_nothing_still_lands_its_marker(ws: Workspace) -> None:
    plan = ws.write_plan([[], []])
    (ws.root / "notes.txt").write_text("same\n")
    commit_all(ws)
    ws.behave({"implement.phase-2": {"files": {"notes.txt": "same\n"}}})
    r = implement(ws, plan)
    assert r.returncode == 0, r.stdout + r.stderr
    wid = ws.only_workflow()
    assert first_parent(ws) == ["Phase 2: Step 2", f"Merge phase 1: Step 1 ({wid})", "base"]
    rel = plan.relative_to(ws.root).as_posix()
    assert git(ws, "show", "--name-only", "--format=", "HEAD").split() == [rel]
    step = checkpoint(ws)["baton"]["steps"]["implement.phase-2"]["git"]
    assert step["status"] == "empty" and step["merged"] == git(ws, "rev-parse", "HEAD").strip()
    assert "### Phase 2: Step 2 [COMPLETE]\n" in read_plan_at(ws, "HEAD", plan).decode()
    assert git(ws, "status", "--porcelain", "--untracked-files=no") == ""


def test_progress_marked_since_the_checkpoint_is_no_plan_edit(ws: Workspace) -> None:
    """Boxes ticked and markers changed after the last checkpoint (the engine marks phases
    between checkpoints; a kill can fall in between; people tick boxes by hand) do not make
    `baton resume` ask for --force; a reworded task still does."""
    plan = ws.write_plan([[], [1]])
    ws.behave({"implement.phase-2": {"exit": 1}})
    assert implement(ws, plan).returncode == 1
    wid = ws.only_workflow()
    text = plan.read_text()
    assert "### Phase 2: Step 2 [IN PROGRESS]\n" in text
    plan.write_text(text.replace("- [ ] task 2", "- [x] task 2").replace(
        "- **Status**: [IN PROGRESS]", "- **Status**: [BLOCKED]"))
    preview = json.loads(ws.baton("resume", wid, "--dry-run", "--json", check=True).stdout)
    assert not any("modified since" in p for p in preview["problems"]), preview["problems"]
    plan.write_text(plan.read_text().replace("- [x] task 2", "- [x] task 2, reworded"))
    preview = json.loads(ws.baton("resume", wid, "--dry-run", "--json", check=True).stdout)
    assert any("modified since" in p for p in preview["problems"])
    plan.write_text(plan.read_text().replace("- [x] task 2, reworded", "- [x] task 2"))
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.started("implement.phase-1") == ["implement.phase-1"]
    assert ws.started("implement.phase-2") == ["implement.phase-2"] * 2
    assert "### Phase 2: Step 2 [COMPLETE]\n" in plan.read_text()


def test_a_done_phase_still_in_progress_in_the_plan_is_marked_on_resume(
        ws: Workspace) -> None:
    """The engine marks a phase complete after the checkpoint that records it done; a kill
    in between leaves it `[IN PROGRESS]` with open boxes: the resume marks it, running
    nothing again."""
    plan = ws.write_plan([[], [1]])
    ws.behave({"implement.phase-2": {"exit": 1}})
    assert implement(ws, plan).returncode == 1
    wid = ws.only_workflow()
    text = plan.read_text()
    plan.write_text(text.replace("### Phase 1: Step 1 [COMPLETE]",
                                 "### Phase 1: Step 1 [IN PROGRESS]").replace(
        "- [x] task 1", "- [ ] task 1"))
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.started("implement.phase-1") == ["implement.phase-1"]
    final = plan.read_text()
    assert "### Phase 1: Step 1 [COMPLETE]\n" in final and "- [x] task 1\n" in final
    assert "### Phase 2: Step 2 [COMPLETE]\n" in final and "- **Status**: [COMPLETE]" in final


def test_a_plan_that_is_a_link_is_marked_where_it_points(ws: Workspace) -> None:
    """The link stays a link; the file it names inside the workspace gets the markers."""
    plan = ws.write_plan([[], [1]])
    real = ws.root / "docs" / "plan.md"
    real.parent.mkdir()
    plan.rename(real)
    plan.symlink_to(real)
    assert implement(ws, plan).returncode == 0
    assert plan.is_symlink() and os.readlink(plan) == str(real)
    text = real.read_text()
    assert "### Phase 2: Step 2 [COMPLETE]\n" in text and "- **Status**: [COMPLETE]" in text

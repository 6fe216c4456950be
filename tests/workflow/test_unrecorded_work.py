"""An agent that finished its work after (or just before) its engine was killed, before the
engine could record it: the resume keeps that work instead of paying for the agent again.
Real `baton` processes, a real SIGKILL, the scripted agents (which outlive their engine in a
session of their own, as agent CLIs do)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from .conftest import Workspace, agent_started


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not (path.is_file() and path.stat().st_size):
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def ended(ws: Workspace, step: str) -> bool:
    return any(k == "end" and s == step for k, s, _, _ in ws.runs())


def test_a_step_whose_agent_finished_after_the_kill_is_kept(ws: Workspace) -> None:
    slow = ws.root / ".claude" / "killed-run.json"
    slow.write_text(json.dumps({"research.*": {"sleep": 2, "outlive": True}}))
    run = ws.popen("run", "Look at logging", "--scope", "research-only", "--complexity", "1",
                   "--id", "kept", env={"BATON_SCRIPT_BEHAVIOUR": str(slow)})
    run.wait_event(agent_started("research.1"))
    os.killpg(run.pid, signal.SIGKILL)  # the engine; its agent works on in its own session
    run.wait(15)
    deadline = time.monotonic() + 60
    while not ended(ws, "research.1"):  # the orphan finished its report, unrecorded
        assert time.monotonic() < deadline
        time.sleep(0.05)
    cp = sorted((ws.root / ".claude/data/checkpoints/kept").glob("[0-9]*.json"))[-1]
    assert json.loads(cp.read_text())["baton"]["steps"].get("research.1", {}).get(
        "status") != "done"
    r = ws.baton("resume", "kept")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[research.1] its agent finished before the engine stopped" in r.stdout
    assert ws.started("research.1") == ["research.1"]  # paid for once
    step = ws.status("kept")["steps"]["research.1"]
    assert step["status"] == "done"


def test_an_agent_killed_before_it_finished_is_run_again(ws: Workspace) -> None:
    """The resume stops an orphan still working (it cannot be waited for without bound):
    its report is not there, so the step runs again — nothing half-done is kept."""
    slow = ws.root / ".claude" / "killed-run.json"
    slow.write_text(json.dumps({"research.*": {"sleep": 30, "outlive": True}}))
    run = ws.popen("run", "Look at logging", "--scope", "research-only", "--complexity", "1",
                   "--id", "again", env={"BATON_SCRIPT_BEHAVIOUR": str(slow)})
    run.wait_event(agent_started("research.1"))
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(15)
    r = ws.baton("resume", "again")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "finished before the engine stopped" not in r.stdout
    assert ws.started("research.1") == ["research.1", "research.1"]


def test_a_phase_finished_in_its_worktree_is_kept_despite_a_killed_git(ws: Workspace
                                                                        ) -> None:
    """In git: the phase's agent finished its work in its worktree after the engine was
    killed — and a git of the engine died inside that worktree, leaving its index lock.
    The resume keeps the worktree and the work (committed, merged, once), not runs it again."""
    import subprocess

    plan = ws.write_plan([[]])
    ident = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *ident, *argv], cwd=ws.root, check=True, capture_output=True)
    slow = ws.root / ".claude" / "killed-run.json"
    slow.write_text(json.dumps({"implement.*": {"sleep": 2, "outlive": True}}))
    run = ws.popen("run", "Implement", "--scope", "implement-only", "--plan", str(plan),
                   "--id", "tree", env={"BATON_SCRIPT_BEHAVIOUR": str(slow)})
    run.wait_event(agent_started("implement.phase-1"))
    os.killpg(run.pid, signal.SIGKILL)
    run.wait(15)
    deadline = time.monotonic() + 60
    while not ended(ws, "implement.phase-1"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    admin = ws.root / ".git" / "worktrees" / "baton-tree-phase-1"
    assert admin.is_dir()
    (admin / "index.lock").write_text("")  # what a git killed in `add` leaves
    r = ws.baton("resume", "tree")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[implement.phase-1] its agent finished before the engine stopped" in r.stdout
    assert ws.started("implement.phase-1") == ["implement.phase-1"]
    log = subprocess.run(["git", "log", "--first-parent", "--format=%s"], cwd=ws.root,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log == ["Merge phase 1: Step 1 (tree)", "base"]
    assert (ws.root / "src" / "phase_1.py").is_file()

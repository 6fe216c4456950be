"""An agent that finished its work after (or just before) its engine was killed, before the
engine could record it: the resume keeps that work instead of paying for the agent again.
Real `baton` processes, a real SIGKILL, the scripted agents (which outlive their engine in a
session of their own, as agent CLIs do)."""

from __future__ import annotations

import json
import os
import select
import signal
import time
from pathlib import Path

from .conftest import Workspace, agent_started


def wait_for_orphans(ws: Workspace, wid: str, timeout: float = 60) -> None:
    """Wait until the agents the killed engine recorded in `run.json` have exited: each
    watched through a pidfd (readable when the process is gone), no polling."""
    owner = json.loads((ws.root / ".claude/data/checkpoints" / wid / "run.json").read_text())
    deadline = time.monotonic() + timeout
    for pid in owner.get("pgids") or []:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # gone already
        try:
            ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
            assert ready, f"agent {pid} of {wid} still running after {timeout} s"
        finally:
            os.close(fd)


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
    wait_for_orphans(ws, "kept")  # the orphan finished its report, unrecorded
    assert ended(ws, "research.1")
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
    wait_for_orphans(ws, "tree")
    assert ended(ws, "implement.phase-1")
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


def test_an_artifact_stamped_within_a_clock_tick_of_its_launch_counts_as_after_it(
        tmp_path: Path) -> None:
    """The kernel stamps files from a coarse clock, up to a tick behind `time.time()`: an
    artifact written right after its launch (a caller writing what a worker returned) read
    as older than the launch, and the finished phase was run again (1 run in 4 of
    test_shipping's kill-and-resume test). One written well before the launch still is not
    kept."""
    from baton_lsp.runs import confine
    from baton_lsp.workflow.agent_step import unrecorded_work
    from tests.workflow.ship_harness import make_repo, open_run, summary_of

    root = tmp_path / "ws"
    root.mkdir()
    plan = make_repo(root, [[]])
    run, _iso = open_run(root, "implement_only_1_0000beef", plan)
    sid = "implement.phase-1"
    at = time.time()
    run.launched[sid] = {"attempt": 1, "at": at}
    assert run.store is not None
    confine.write_new(run.root, run.store.dir / "logs" / f"{sid}.attempt-1.log",
                      b"IMPLEMENTATION_COMPLETE: 1\n")
    artifact = summary_of(run, "1")
    confine.makedirs(run.root, artifact.parent)
    artifact.write_text("# Phase 1 summary\n\nDone.\n")
    os.utime(artifact, (at - 0.004, at - 0.004))  # stamped by the coarse clock
    assert unrecorded_work(run, sid, artifact) is not None
    os.utime(artifact, (at - 5, at - 5))  # an older file: not this launch's work
    assert unrecorded_work(run, sid, artifact) is None

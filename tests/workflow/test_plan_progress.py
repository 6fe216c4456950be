"""The implement state against the plan as people read it: waves built from the phases still
to run (issue 30, defect 9) and the plan's own markers kept by the engine (defect 14). Real
`baton` processes, the scripted agents, real git repositories."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from .conftest import Workspace

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

"""The example agent shipped for people writing their own script agents is Baton's own
scripted agent run from one source (it once was a byte-for-byte copy that could drift)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import Workspace

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agents" / "scripted_agent.py"


def test_the_example_agent_file_holds_no_second_copy() -> None:
    assert len(EXAMPLE.read_text(encoding="utf-8").splitlines()) < 30
    assert "from baton_lsp.workflow.scripted import main" in EXAMPLE.read_text(encoding="utf-8")


def test_the_example_agent_runs_a_workflow_as_the_configured_script(ws: Workspace) -> None:
    agent = ws.root / ".claude" / "agents" / "scripted_agent.py"
    shutil.copyfile(EXAMPLE, agent)
    ws.config('script = ".claude/agents/scripted_agent.py"\n')
    ws.behave({"plan": {"phases": [[], [1]]}})
    r = ws.baton("run", "Add a greeting", "--scope", "full-implementation", "--complexity",
                 "1", check=True)
    assert "complete" in r.stdout
    status = ws.status(ws.only_workflow())
    assert status["status"] == "complete", json.dumps(status)[:2000]
    assert {"implement.phase-1", "implement.phase-2"} <= set(ws.started("implement"))

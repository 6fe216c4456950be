"""`baton run` / `baton resume` at the front door (issue 30, "Runs that are safe together"):
what is decided and refused before anything is written or paid for, which runner a run uses
and that a resume keeps it. Real `baton` processes with the scripted agents."""

from __future__ import annotations

import json
from typing import Any

from tests.workflow.conftest import Workspace

CLASSIFIER = '[workflow.agents]\nclassifier = "workflow-classifier"\n'


def _with_classifier(ws: Workspace) -> None:
    (ws.root / ".claude" / "agents" / "workflow-classifier.md").write_text(
        "---\nname: workflow-classifier\ndescription: classifies workflows\n---\nClassify.\n")
    ws.config(CLASSIFIER)


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


# -- defect 10: nothing left to classify -------------------------------------------------------


def test_implement_only_on_a_plan_runs_no_classifier(ws: Workspace) -> None:
    """`--scope implement-only --plan P` settles everything the classifier would answer:
    no classify step runs, and the record says the flags decided."""
    _with_classifier(ws)
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Implement the feature", "--scope", "implement-only", "--plan",
                 str(plan), check=True)
    assert ws.started("classify") == [], r.stdout
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    cls = cp["state_machine"]["classification"]
    assert cls["source"] == "flags" and cls["workflow_type"] == "implement-only"
    assert "nothing is left to classify" in cls["reasoning"]
    assert cp["baton"]["classify"]["agent"] is False
    assert "classify" not in cp["baton"]["steps"]
    assert "classified (flags): implement-only" in r.stdout
    assert ws.started("implement") == ["implement.phase-1"]


def test_research_scope_with_a_plan_still_asks_the_classifier_for_topics(ws: Workspace) -> None:
    """research-and-revise researches: its topics are still the classifier's to choose."""
    _with_classifier(ws)
    plan = ws.write_plan([[]])
    ws.baton("run", "Revise the feature plan", "--scope", "research-and-revise", "--plan",
             str(plan), check=True)
    assert ws.started("classify") == ["classify"]

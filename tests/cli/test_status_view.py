"""`baton status` renders the typed `RunView` (issue 37): its text and its `--json` row come
from the one view the editor follows, not from a dict read through `.get` chains — so a
record the dict reader tripped on (a topic with no short name, a classifier source never
recorded, an unreadable history) is shown, not a traceback or a `None`."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from baton_lsp.model.states import RunStatus, StepStatus
from baton_lsp.runs.follow import read_view
from baton_lsp.runs.status import as_json
from baton_lsp.runs.store import CheckpointStore
from tests.workflow.conftest import Workspace, make_ws


@pytest.fixture(scope="module")
def failed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, str]:
    """One real scripted run that failed in plan (research done, plan's agent exited 3)."""
    ws = make_ws(tmp_path_factory.mktemp("status"))
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-failed")
    assert r.returncode == 1, r.stdout + r.stderr
    return ws, "wf-failed"


def _rewrite(ws: Workspace, wid: str, change: dict[str, object]) -> None:
    """Save the run's newest record again through its store (checksummed, signed) with
    the state machine's classification changed: what an older Baton or an adoption left."""
    store = CheckpointStore(ws.root, wid)
    data = store.latest().data
    assert data is not None
    data["state_machine"]["classification"].update(change)
    store.save(data, "edited by the test")


def test_the_json_row_is_the_views(failed: tuple[Workspace, str]) -> None:
    ws, wid = failed
    view = read_view(ws.root, wid)
    assert view.status == RunStatus.FAILED and not view.locked and view.record is not None
    assert view.steps["plan"].status == StepStatus.FAILED
    row = ws.status(wid)
    assert row.pop("worktrees") == []
    assert row == json.loads(json.dumps(as_json(view)))
    assert row["diagnosis"]["text"] == view.diagnosis().text()  # type: ignore[union-attr]
    assert row["steps"]["plan"]["status"] == "failed" and row["running"] is False
    listed = [r for r in ws.status() if r["workflow_id"] == wid]
    assert listed == [{**row, "worktrees": []}]


def test_text_shows_the_failure_from_the_view(failed: tuple[Workspace, str]) -> None:
    ws, wid = failed
    out = ws.baton("status", wid, check=True).stdout
    assert out.startswith(f"{wid}  failed  state=plan  scope=research-and-plan")
    assert "✗ ERROR in state 'plan'" in out and "Empty user prompt" in out
    assert "  plan                     failed    attempts=1" in out


def test_a_topic_without_a_short_name_and_no_source_are_shown(tmp_path: Path) -> None:
    """Before: `'; '.join` of a None topic name was a TypeError traceback, and a missing
    classifier source printed as `(None)`."""
    ws = make_ws(tmp_path)
    ws.baton("run", "Research the greeting", "--scope", "research-only", "--complexity", "1",
             "--id", "wf-old", check=True)
    _rewrite(ws, "wf-old", {"research_topics": [{"detailed_description": "greetings"},
                                                "farewells"]})
    store = CheckpointStore(ws.root, "wf-old")
    data = store.latest().data
    assert data is not None
    data["state_machine"]["classification"].pop("source", None)
    store.save(data, "no source")
    r = ws.baton("status", "wf-old")
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "topic(s) (recorded): None; farewells" in r.stdout
    assert ws.status("wf-old")["classification"]["topics"] == [None, "farewells"]


def test_an_unreadable_run_says_why(tmp_path: Path) -> None:
    ws = make_ws(tmp_path)
    ws.baton("run", "Research the greeting", "--scope", "research-only", "--complexity", "1",
             "--id", "wf-bad", check=True)
    for path in (ws.root / ".claude" / "data" / "checkpoints" / "wf-bad").glob("0*.json"):
        os.truncate(path, 10)  # every checkpoint torn: nothing sound to read
    r = ws.baton("status", "wf-bad")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("wf-bad  unreadable  state=None")
    assert "  problem: " in r.stdout
    row = ws.status("wf-bad")
    assert row["status"] == "unreadable" and row["problem"]

"""BTN50x: the last run of a plan on the plan (and agent) files — real engine runs with the
scripted agent, checked through the workspace index like the editor and `baton check`."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only
from tests.workflow.conftest import Workspace, make_ws


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_ws(tmp_path)


def index(ws: Workspace) -> WorkspaceIndex:
    return WorkspaceIndex(ws.root, load_config(ws.root))


def plan_of(ws: Workspace, wid: str) -> Path:
    return Path(ws.status(wid)["plan"])


def test_hard_barrier_on_the_phase_heading_then_cleared_by_resume(ws: Workspace) -> None:
    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    wid = ws.only_workflow()
    plan = plan_of(ws, wid)
    idx = index(ws)
    found = only(check_file(idx, plan), "BTN501")
    assert len(found) == 1
    f = found[0]
    line = plan.read_text().splitlines()[f.range.start_line]
    assert line.startswith("### Phase 2"), line
    assert "summaries/phase_2_summary.md" in f.message and "found nothing" in f.message
    assert "Agent reported:" in f.message and wid in f.message
    related = {Path(r.path).name for r in f.related}
    assert {"errors.jsonl", "implement.phase-2.attempt-1.log"} <= related
    assert str(ws.root / ".claude" / "data" / "checkpoints" / wid) in \
        {str(Path(p)) for p in idx._deps[str(plan)]}  # re-checked when the history changes
    ws.behave({})
    ws.baton("resume", wid, check=True)
    idx.changed(plan)
    assert not [f for f in check_file(idx, plan) if f.code.startswith("BTN50")]


def test_task_error_is_a_step_failure_not_a_barrier(ws: Workspace) -> None:
    ws.behave({"implement.phase-1": {"task_error": "dependency_error - libfoo missing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    wid = ws.only_workflow()
    plan = plan_of(ws, wid)
    fs = check_file(index(ws), plan)
    assert not only(fs, "BTN501")
    (f,) = only(fs, "BTN502")
    assert "libfoo missing" in f.message and "Phase 1" in f.message


def test_research_barrier_is_reported_on_the_agent_file(ws: Workspace) -> None:
    agent = ws.root / ".claude" / "agents" / "research-specialist.md"
    agent.write_text("---\nname: research-specialist\ndescription: researches\n---\n\n"
                     "# Research Specialist\n\nWrite the report.\n")
    ws.behave({"research.*": {"write": "empty"}})  # all topics: below partial success
    assert ws.baton("run", "add a farewell", "--scope", "research-only").returncode == 1
    found = only(check_file(index(ws), agent), "BTN505")
    assert len(found) == 2  # one per research topic
    f = found[0]
    assert "empty file" in f.message
    assert agent.read_text().splitlines()[f.range.start_line].startswith("name:")


def test_stale_checkpoint_when_the_saved_plan_changed(ws: Workspace) -> None:
    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    plan = plan_of(ws, ws.only_workflow())
    idx = index(ws)
    assert not only(check_file(idx, plan), "BTN504")
    # progress alone (a box ticked, a marker changed) re-runs nothing: no finding
    text = plan.read_text()
    assert "- [ ] " in text and "[IN PROGRESS]" in text
    plan.write_text(text.replace("- [ ] ", "- [x] ", 1).replace("[IN PROGRESS]", "[BLOCKED]"))
    idx.changed(plan)
    assert not only(check_file(idx, plan), "BTN504")
    plan.write_text(plan.read_text() + "\n<!-- edited -->\n")
    idx.changed(plan)
    (f,) = only(check_file(idx, plan), "BTN504")
    assert f.range.start_line == 0 and "Plan changed since checkpoint" in f.message


def test_no_run_no_findings_and_a_complete_run_none_either(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1]])
    idx = index(ws)
    assert not [f for f in check_file(idx, plan) if f.code.startswith("BTN50")]
    ws.baton("run", "add a farewell", check=True)
    plan = plan_of(ws, ws.only_workflow())
    assert not [f for f in check_file(idx, plan) if f.code.startswith("BTN50")]


def test_logged_error_of_a_step_that_has_not_finished(ws: Workspace) -> None:
    """An engine killed while retrying a phase: the phase is neither done nor failed, and
    its errors.jsonl record is what the user needs to see (BTN503, a warning)."""
    from baton_lsp.runs.store import CheckpointStore

    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    wid = ws.only_workflow()
    plan = plan_of(ws, wid)
    store = CheckpointStore(ws.root, wid)
    data = dict(store.latest().data or {})
    data["status"] = "in_progress"
    data["baton"]["steps"]["implement.phase-2"]["status"] = "running"
    store.save(data, "killed mid-retry")
    fs = check_file(index(ws), plan)
    assert not only(fs, "BTN501") and not only(fs, "BTN502")
    (f,) = only(fs, "BTN503")
    assert plan.read_text().splitlines()[f.range.start_line].startswith("### Phase 2")
    assert "validation_error in implement.phase-2" in f.message

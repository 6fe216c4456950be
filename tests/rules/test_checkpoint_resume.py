"""BTN416: checkpoints a resume should not pick up without asking — the corpus's real 1.2
checkpoint copied into a workspace and aged, its plan edited or deleted; real engine runs
for Baton's own history (only the newest entry of an unfinished, idle run is judged)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.rules.engine import check_file
from baton_lsp.runs.store import CheckpointStore
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only
from tests.workflow.conftest import Workspace, make_ws

CORPUS_CP = ".claude/checkpoints/test_524747/test_checkpoint.json"
PREFIX = "not safe to resume automatically: "


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def healthy(corpus: Path, tmp_path: Path) -> tuple[Path, Path]:
    """The corpus checkpoint in a workspace of its own, made resumable: written an hour
    ago, its plan present with the recorded modification time."""
    root = tmp_path / "ws"
    cp = root / CORPUS_CP
    cp.parent.mkdir(parents=True)
    shutil.copy(corpus / CORPUS_CP, cp)
    plan = root / ".claude" / "specs" / "001_test" / "plans" / "001_test_plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Test Plan\n\n### Phase 1: One [COMPLETE]\n", encoding="utf-8")
    edit(cp, created_at=stamp(datetime.now(UTC) - timedelta(hours=1)),
         plan_modification_time=int(plan.stat().st_mtime),
         workflow_state={"plan_path": str(plan), "current_phase": 2})
    return cp, plan


def edit(cp: Path, **changes: Any) -> None:
    data = json.loads(cp.read_text(encoding="utf-8"))
    data.update(changes)
    cp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def btn416(root: Path, cp: Path, index: WorkspaceIndex | None = None) -> list[Any]:
    return only(check_file(index or WorkspaceIndex(root), cp), "BTN416")


def at(cp: Path, finding: Any) -> str:
    """The text a finding's range covers."""
    line = cp.read_text(encoding="utf-8").splitlines()[finding.range.start_line]
    return line[finding.range.start_char:finding.range.end_char]


def test_a_fresh_checkpoint_with_its_plan_in_place_is_quiet(healthy: tuple[Path, Path]
                                                             ) -> None:
    cp, _plan = healthy
    root = cp.parents[3]
    assert btn416(root, cp) == []


def test_an_old_checkpoint_is_reported_on_created_at(healthy: tuple[Path, Path]) -> None:
    cp, _plan = healthy
    edit(cp, created_at="2025-10-07T05:00:46Z")  # the corpus file's own date
    (f,) = btn416(cp.parents[3], cp)
    days = (datetime.now(UTC) - datetime(2025, 10, 7, 5, 0, 46, tzinfo=UTC)).days
    assert f.message == f"{PREFIX}Checkpoint {days} days old (max: 7 days)"
    assert f.severity.value == "info"
    assert at(cp, f) == '"2025-10-07T05:00:46Z"'


def test_a_plan_saved_after_the_checkpoint_is_reported_and_tracked(
        healthy: tuple[Path, Path]) -> None:
    cp, plan = healthy
    root = cp.parents[3]
    index = WorkspaceIndex(root)
    assert btn416(root, cp, index) == []
    assert str(cp) in index.dependents(plan)  # the editor re-checks it when the plan is saved
    recorded = int(plan.stat().st_mtime)
    os.utime(plan, (recorded + 60, recorded + 60))
    (f,) = btn416(root, cp, index)
    assert f.message.startswith(f"{PREFIX}Plan file modified since checkpoint")
    assert at(cp, f) == str(recorded)


def test_a_plan_that_is_gone_is_reported_on_plan_path(healthy: tuple[Path, Path]) -> None:
    cp, plan = healthy
    plan.unlink()
    (f,) = btn416(cp.parents[3], cp)
    assert f.message == (f"{PREFIX}Plan file missing: {plan} (it existed when the "
                         "checkpoint was written)")
    assert at(cp, f) == json.dumps(str(plan))


def test_a_plan_path_of_another_checkout_is_read_in_this_workspace(
        healthy: tuple[Path, Path]) -> None:
    cp, plan = healthy
    root = cp.parents[3]
    elsewhere = "/home/someone/project/" + plan.relative_to(root).as_posix()
    edit(cp, workflow_state={"plan_path": elsewhere, "current_phase": 2})
    assert btn416(root, cp) == []
    plan.unlink()
    (f,) = btn416(root, cp)
    assert "Plan file missing" in f.message and elsewhere in f.message


def test_every_failing_condition_is_reported_on_its_field(healthy: tuple[Path, Path]) -> None:
    cp, _plan = healthy
    edit(cp, tests_passing=False, last_error="build failed", status="paused")
    got = {f.message.removeprefix(PREFIX).split(":")[0].split(" (")[0]: at(cp, f)
           for f in btn416(cp.parents[3], cp)}
    assert got == {"Tests failing in last run": "false", "Last run had errors": '"build failed"',
                   "Checkpoint status": '"paused"'}


def test_a_completed_workflow_is_never_reported(healthy: tuple[Path, Path]) -> None:
    cp, plan = healthy
    plan.unlink()
    edit(cp, created_at="2025-10-07T05:00:46Z", tests_passing=False, status="completed")
    assert btn416(cp.parents[3], cp) == []


def test_only_the_newest_save_checkpoint_file_of_a_workflow_is_judged(
        healthy: tuple[Path, Path]) -> None:
    """`restore_checkpoint` takes the newest `<type>_<project>_*.json` by mtime."""
    cp, _plan = healthy
    root = cp.parents[3]
    edit(cp, created_at="2025-10-07T05:00:46Z")
    base = root / ".claude" / "data" / "checkpoints"
    base.mkdir(parents=True)
    older = base / "implement_test_project_20251007_050046.json"
    newer = base / "implement_test_project_20251008_050046.json"
    other = base / "implement_other_20251001_000000.json"
    for i, target in enumerate((older, newer, other)):
        shutil.copy(cp, target)
        os.utime(target, (1_760_000_000 + i * 100, 1_760_000_000 + i * 100))
    os.utime(other, (1_700_000_000, 1_700_000_000))
    index = WorkspaceIndex(root)
    assert btn416(root, older, index) == []
    assert len(btn416(root, newer, index)) == 1
    assert len(btn416(root, other, index)) == 1  # another workflow: its own newest
    assert str(older) in index.dependents(base / "implement_test_project_20251009_0.json")


# --- Baton's own history ----------------------------------------------------------------


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_ws(tmp_path)


def history(ws: Workspace, wid: str) -> list[Path]:
    return sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("0*.json"))


def test_baton_history_only_the_newest_entry_of_an_idle_unfinished_run(ws: Workspace) -> None:
    ws.write_plan([[], [1]])
    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    wid = ws.only_workflow()
    entries = history(ws, wid)
    index = WorkspaceIndex(ws.root, load_config(ws.root))
    assert all(btn416(ws.root, e, index) == [] for e in entries[:-1])
    found = {f.message.removeprefix(PREFIX).split(":")[0] for f in
             btn416(ws.root, entries[-1], index)}
    assert found == {"Checkpoint status", "Last run had errors"}  # failed; not old, plan same

    store = CheckpointStore(ws.root, wid)
    store.acquire()  # an engine running it: nothing to say about resuming
    try:
        assert btn416(ws.root, entries[-1], index) == []
    finally:
        store.release()

    ws.behave({})
    ws.baton("resume", wid, check=True)
    for entry in history(ws, wid):
        assert btn416(ws.root, entry, index) == [], entry  # complete now


def test_baton_history_compares_the_plan_by_content_and_ages_by_updated_at(
        ws: Workspace) -> None:
    ws.behave({"implement.phase-2": {"write": "nothing"}})
    assert ws.baton("run", "add a farewell").returncode == 1
    wid = ws.only_workflow()
    plan = Path(ws.status(wid)["plan"])
    index = WorkspaceIndex(ws.root, load_config(ws.root))
    latest = history(ws, wid)[-1]
    codes = {f.message.split(": ")[1] for f in btn416(ws.root, latest, index)}
    assert "Plan file modified since checkpoint" not in codes

    mtime = plan.stat().st_mtime
    os.utime(plan, (mtime + 120, mtime + 120))  # touched (a checkout), same bytes
    assert not [f for f in btn416(ws.root, latest, index) if "Plan file modified" in f.message]
    plan.write_text(plan.read_text() + "\n<!-- edited -->\n")
    (edited,) = [f for f in btn416(ws.root, latest, index) if "Plan file modified" in f.message]
    assert at(latest, edited) == str(json.loads(latest.read_text())["plan_modification_time"])

    # a run started long ago whose newest entry was written now is not old
    data = json.loads(latest.read_text())
    data.update(status="in_progress", last_error=None, created_at="2025-01-01T00:00:00Z")
    data["error_state"]["last_error"] = None
    data["plan_modification_time"] = int(plan.stat().st_mtime)
    data["baton"]["plan_sha256"] = hashlib.sha256(plan.read_bytes()).hexdigest()  # as saved
    newest = CheckpointStore(ws.root, wid).save(data, "test: started long ago")
    assert btn416(ws.root, newest, index) == []
    assert btn416(ws.root, latest, index) == []  # superseded
    data.update(updated_at="2025-01-02T00:00:00Z")
    newest = CheckpointStore(ws.root, wid).save(data, "test: written long ago")
    (old,) = btn416(ws.root, newest, index)
    assert "days old" in old.message and at(newest, old) == '"2025-01-02T00:00:00Z"'

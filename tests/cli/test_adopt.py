"""The bash system's own checkpoints as runs, through the real `baton` CLI: `baton status`
lists them (text and JSON) beside Baton's runs, `baton adopt` makes a Baton run of one
without touching it, and `baton resume` then finishes it with the scripted agents."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.runs.store import checkpoints_root
from baton_lsp.workflow.request import RunRequest, new_record
from baton_lsp.workspace.config import load_config
from tests.workflow.conftest import Workspace, make_ws

CORPUS_RUN = Path(".claude/checkpoints/test_524747/test_checkpoint.json")
CORPUS_ID = "bash:checkpoints/test_524747/test_checkpoint"


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_ws(tmp_path)


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def plant_corpus(ws: Workspace, corpus: Path) -> Path:
    """The corpus's schema-1.2 implement checkpoint (plan phase 2 of 5, its plan a /tmp
    file long gone, 400+ days old), copied as the bash system left it."""
    target = ws.root / CORPUS_RUN
    target.parent.mkdir(parents=True)
    shutil.copy2(corpus / CORPUS_RUN, target)
    return target


def bash_rows(ws: Workspace) -> list[dict[str, Any]]:
    return [r for r in ws.status() if r.get("origin") == "bash"]


def no_traceback(r: Any) -> None:
    assert "Traceback" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_corpus_checkpoint_is_listed_by_status(ws: Workspace, corpus: Path) -> None:
    plant_corpus(ws, corpus)
    (row,) = ws.status()
    assert row["workflow_id"] == CORPUS_ID and row["origin"] == "bash"
    assert (row["status"], row["state"], row["scope"]) == ("in_progress", "implement",
                                                           "implement-only")
    assert row["phase"] == {"current": 2, "total": 5, "completed": [1], "counts": "plan"}
    assert row["plan"] == "/tmp/tmp.dce2jXORb5/test_plan.md" and row["plan_exists"] is False
    assert row["schema_version"] == "1.2" and not row["running"]
    assert any("days old (max: 7 days)" in p for p in row["problems"])
    assert row["adopted_by"] is None

    text = ws.baton("status", check=True).stdout
    assert "no Baton workflows in this workspace" in text
    assert "from the bash system" in text
    line = next(ln for ln in text.splitlines() if ln.startswith(CORPUS_ID))
    assert "in_progress" in line and "plan phase 2/5" in line and "plan missing" in line

    detail = ws.baton("status", CORPUS_ID, check=True).stdout
    assert "not written by Baton" in detail and "plan phase 2 of 5 (done: 1)" in detail
    assert "MISSING: rebind it with `baton adopt" in detail
    by_path = ws.baton("status", str(ws.root / CORPUS_RUN), "--json", check=True)
    assert json.loads(by_path.stdout)["workflow_id"] == CORPUS_ID


def test_adopt_with_a_rebound_plan_then_resume_finishes_it(ws: Workspace,
                                                           corpus: Path) -> None:
    original = plant_corpus(ws, corpus)
    before = (original.read_bytes(), os.stat(original).st_mtime_ns,
              os.stat(original).st_mode)
    plan = ws.write_plan([[], [1], [2], [2], [3, 4]])

    refused = ws.baton("adopt", CORPUS_ID)  # the plan is gone and the file is old: both said
    assert refused.returncode == 2
    assert "days old" in refused.stderr and "does not exist; rebind it" in refused.stderr
    assert "--plan PATH" in refused.stderr and "--force" in refused.stderr
    no_traceback(refused)
    assert not checkpoints_root(ws.root).exists()

    r = ws.baton("adopt", CORPUS_ID, "--plan", str(plan), "--force", "--json", check=True)
    done = json.loads(r.stdout)
    wid = done["workflow_id"]
    assert (done["state"], done["scope"], done["done_phases"]) == ("implement",
                                                                 "implement-only", ["1"])
    assert any("plan rebound from /tmp/tmp.dce2jXORb5/test_plan.md" in n for n in done["notes"])
    assert any("days old" in p for p in done["forced"])

    record = json.loads(Path(done["record"]).read_text())
    assert Path(done["record"]).name == "000001.json"
    engine_first = new_record("x", RunRequest("d", plan_path=str(plan)), project="p",
                              settings=load_config(ws.root).workflow, command="baton run"
                              ).model_dump(mode="json", by_alias=True, exclude_unset=True)
    assert set(engine_first) <= set(record)  # the engine's own shape, plus what it adds later
    assert set(engine_first["baton"]) <= set(record["baton"])
    assert record["state_machine"]["current_state"] == "implement"
    assert record["baton"]["request"]["plan_path"] == str(plan)
    assert record["baton"]["paths"]["plan"] == str(plan)
    src = record["baton"]["adopted_from"]
    assert src["path"] == str(original) and src["id"] == CORPUS_ID
    assert src["sha256"] == hashlib.sha256(before[0]).hexdigest()
    assert record["baton"]["steps"]["implement.phase-1"]["status"] == "done"

    rows = {r["workflow_id"]: r for r in ws.status()}
    assert rows[CORPUS_ID]["adopted_by"] == wid
    assert rows[wid]["origin"] == "baton" and rows[wid]["status"] == "interrupted"
    assert rows[wid]["adopted_from"]["id"] == CORPUS_ID

    again = ws.baton("adopt", CORPUS_ID, "--plan", str(plan), "--force")
    assert again.returncode == 2 and f"already adopted as workflow {wid}" in again.stderr
    no_traceback(again)
    copy = ws.root / ".claude" / "tmp" / "implement_checkpoint.json"  # the same bytes
    copy.parent.mkdir(parents=True)
    copy.write_bytes(before[0])
    twin = ws.baton("adopt", str(copy), "--plan", str(plan), "--force")
    assert twin.returncode == 2 and f"already adopted as workflow {wid}" in twin.stderr

    resumed = ws.baton("resume", wid)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "[implement.phase-1] already done; skipped" in resumed.stdout
    assert sorted(ws.started("implement.phase-")) == [f"implement.phase-{i}"
                                                      for i in range(2, 6)]
    info = ws.status(wid)
    assert info["status"] == "complete" and info["state"] == "complete"
    assert all(info["steps"][f"implement.phase-{i}"]["status"] == "done" for i in range(1, 6))
    assert (original.read_bytes(), os.stat(original).st_mtime_ns,
            os.stat(original).st_mode) == before  # never written, moved or chmod'ed
    assert not original.with_name(original.name + ".backup").exists()


def test_a_2x_checkpoint_resumes_from_its_own_state(ws: Workspace) -> None:
    """A 2.1 checkpoint in the data directory with a state machine in research: adopted
    there (no plan needed yet), resumed through research and plan to its terminal state."""
    doc = {"schema_version": "2.1", "checkpoint_id": "coordinate_1", "workflow_type":
           "coordinate", "project_name": "demo", "workflow_description":
           "research retry patterns and plan the change", "created_at": now_iso(),
           "updated_at": now_iso(), "status": "in_progress", "current_phase": 1,
           "completed_phases": [0], "workflow_state": {},
           "state_machine": {"current_state": "research", "completed_states": ["research"],
                             "workflow_config": {"scope": "research-and-plan",
                                                 "description": "research", "command":
                                                 "coordinate"},
                             "classification": {"workflow_type": "research-and-plan",
                                                "research_complexity": 1, "research_topics": [
                                                    {"short_name": "retry patterns",
                                                     "detailed_description": "x" * 60,
                                                     "filename_slug": "retry_patterns",
                                                     "research_focus": "what exists"}],
                                                "confidence": 0.9, "reasoning": "llm"}}}
    path = checkpoints_root(ws.root) / "coordinate_demo_20261120_101010.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc, indent=2))
    (row,) = bash_rows(ws)
    assert row["workflow_id"] == "bash:coordinate_demo_20261120_101010"
    assert (row["state"], row["scope"], row["problems"]) == ("research",
                                                            "research-and-plan", [])
    r = ws.baton("adopt", row["workflow_id"], "--json", check=True)
    wid = json.loads(r.stdout)["workflow_id"]
    record = json.loads((checkpoints_root(ws.root) / wid / "000001.json").read_text())
    assert record["baton"]["paths"]["reports"][0].endswith("001_retry_patterns.md")
    assert record["state_machine"]["classification"]["source"] == "adopted"
    resumed = ws.baton("resume", wid)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ws.started() == ["research.1", "plan"]  # initialize is not run again
    info = ws.status(wid)
    assert info["status"] == "complete" and Path(info["plan"]).is_file()
    assert json.loads(path.read_text()) == doc


def test_symlinks_out_of_the_workspace_are_not_followed(ws: Workspace, corpus: Path,
                                                       tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy2(corpus / CORPUS_RUN, outside / "implement_x_20251007.json")
    base = checkpoints_root(ws.root)
    base.mkdir(parents=True)
    (base / "implement_evil_20251007.json").symlink_to(outside / "implement_x_20251007.json")
    legacy = ws.root / ".claude" / "checkpoints"
    legacy.mkdir()
    (legacy / "evil_dir").symlink_to(outside, target_is_directory=True)
    plant_corpus(ws, corpus)  # a link to it inside the workspace is fine
    (base / "implement_alias_20251007.json").symlink_to(ws.root / CORPUS_RUN)

    ids = {r["workflow_id"] for r in bash_rows(ws)}
    assert ids == {CORPUS_ID, "bash:implement_alias_20251007"}
    shown = ws.baton("status", "bash:implement_evil_20251007")
    assert shown.returncode == 2 and "symbolic link out of the workspace" in shown.stderr
    adopted = ws.baton("adopt", str(base / "implement_evil_20251007.json"), "--force")
    assert adopted.returncode == 2 and "outside the workspace" in adopted.stderr
    for r in (shown, adopted):
        no_traceback(r)
    assert not any(p.is_dir() for p in base.iterdir())  # nothing adopted


def test_corrupt_checkpoints_are_listed_as_unreadable(ws: Workspace) -> None:
    base = checkpoints_root(ws.root)
    base.mkdir(parents=True)
    (base / "implement_demo_20261120_101010.json").write_text(
        '{"schema_version": "1.2", "checkpoint_id": "cut', encoding="utf-8")
    legacy = ws.root / ".claude" / "checkpoints" / "test_1"
    legacy.mkdir(parents=True)
    (legacy / "test_checkpoint.json").write_bytes(b'{"status": "\xff\xfe"}')
    (base / "implement_bad_20261120_101010.json").write_text(json.dumps(
        {"schema_version": "9.9", "checkpoint_id": "x"}))

    rows = {r["workflow_id"]: r for r in bash_rows(ws)}
    cut = rows["bash:implement_demo_20261120_101010"]
    assert cut["status"] == "unreadable"
    assert "invalid JSON at line 1" in cut["problem"]
    assert "not UTF-8" in rows["bash:checkpoints/test_1/test_checkpoint"]["problem"]
    assert "unknown checkpoint schema_version '9.9'" in rows[
        "bash:implement_bad_20261120_101010"]["problem"]

    text = ws.baton("status")
    assert text.returncode == 0 and "unreadable" in text.stdout
    assert "invalid JSON at line 1" in text.stdout
    detail = ws.baton("status", "bash:implement_demo_20261120_101010")
    assert detail.returncode == 0 and "problem:" in detail.stdout
    adopt = ws.baton("adopt", "bash:implement_demo_20261120_101010", "--force")
    assert adopt.returncode == 2 and "invalid JSON at line 1" in adopt.stderr
    missing = ws.baton("adopt", "bash:no_such_thing")
    assert missing.returncode == 2 and "no bash checkpoint bash:no_such_thing" in missing.stderr
    for r in (text, detail, adopt, missing):
        no_traceback(r)


def test_iteration_checkpoints_and_tmp_data_are_not_runs(ws: Workspace) -> None:
    """Baton's engine writes `build_<id>_iteration_<n>.json` beside its run directories,
    and `.claude/tmp/` holds other JSON: neither is a bash run; a checkpoint there is."""
    ws.config('implement-mode = "iterations"\n')
    plan = ws.write_plan([[], [1]])
    ws.baton("run", "add a thing", "--scope", "implement-only", "--plan", str(plan),
             check=True)
    base = checkpoints_root(ws.root)
    assert list(base.glob("build_*_iteration_1.json"))
    tmp = ws.root / ".claude" / "tmp"
    (tmp / "supervisor_metadata.json").write_text('{"reports": []}')
    (tmp / "llm_request_1.json").write_text("not json at all")
    (tmp / "coordinate_checkpoint.json").write_text(json.dumps({
        "schema_version": "1.2", "checkpoint_id": "c1", "workflow_type": "coordinate",
        "project_name": "p", "workflow_description": "research x", "created_at": now_iso(),
        "status": "in_progress", "current_phase": 1}))
    rows = ws.status()
    assert [r["origin"] for r in rows] == ["baton", "bash"]
    assert rows[1]["workflow_id"] == "bash:tmp/coordinate_checkpoint"
    assert rows[1]["state"] == "research"  # phase 1 of a coordinate workflow is a state
    for own in (base / rows[0]["workflow_id"] / "000001.json",
                next(base.glob("build_*_iteration_1.json"))):
        r = ws.baton("adopt", str(own), "--force")
        assert r.returncode == 2 and "nothing to adopt" in r.stderr, r.stderr
        no_traceback(r)

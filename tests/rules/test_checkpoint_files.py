"""BTN41x: checkpoint JSON — unreadable, schema errors at the right key, migration fix,
tampered history entries. Corpus checkpoints are real files of the bash tooling."""

from __future__ import annotations

import json
from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.runs.checkpoint import load_checkpoint
from baton_lsp.runs.store import CheckpointStore
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix, only

CK = ".claude/data/checkpoints"


def check(root: Path, rel: str, text: str) -> tuple[Path, list]:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, check_file(WorkspaceIndex(root), path)


def test_invalid_json_points_at_the_break(tmp_path: Path) -> None:
    _, fs = check(tmp_path, f"{CK}/a.json", '{\n  "schema_version": "1.2",\n  "x": [1,\n')
    (f,) = only(fs, "BTN410")
    assert f.range.start_line == 3 and "invalid JSON" in f.message


def test_unknown_version_points_at_schema_version(tmp_path: Path) -> None:
    _, fs = check(tmp_path, f"{CK}/a.json", '{\n  "schema_version": "9.9"\n}\n')
    (f,) = only(fs, "BTN410")
    assert (f.range.start_line, f.range.start_char) == (1, 20) and "9.9" in f.message


def test_schema_errors_land_on_the_offending_value(corpus: Path, tmp_path: Path) -> None:
    data = json.loads((corpus / ".claude/checkpoints/test_524747/test_checkpoint.json")
                      .read_text())
    data["current_phase"] = "two"
    text = json.dumps(data, indent=2)
    _, fs = check(tmp_path, f"{CK}/a.json", text)
    (f,) = [f for f in only(fs, "BTN411") if "current_phase" in f.message]
    lines = text.splitlines()
    assert lines[f.range.start_line][f.range.start_char:f.range.end_char] == '"two"'


def test_missing_field_lands_on_the_object_that_lacks_it(tmp_path: Path) -> None:
    good = {"schema_version": "2.1", "checkpoint_id": "c", "workflow_type": "x",
            "project_name": "p", "created_at": "2026-01-01T00:00:00Z", "status": "failed",
            "state_machine": {"current_state": "implemnt"}}
    text = json.dumps(good, indent=2)
    _, fs = check(tmp_path, f"{CK}/a.json", text)
    msgs = {f.message: f for f in only(fs, "BTN411")}
    state = next(f for m, f in msgs.items() if "current_state" in m)
    assert text.splitlines()[state.range.start_line].strip().startswith('"current_state"')
    assert "'implement'" in state.message


def test_the_design_documents_v2_shape_is_read_as_the_engine_reads_it(tmp_path: Path) -> None:
    # Seed 001's example: `version`, identity under `metadata`, no workflow_type or status.
    doc = {"version": "2.0",
           "state_machine": {"current_state": "research", "completed_states": ["initialize"],
                             "workflow_config": {"scope": "research-and-plan",
                                                 "command": "coordinate"}},
           "metadata": {"checkpoint_id": "coordinate_20251107_143022",
                        "project_name": "claude-config", "created_at": "2025-11-07T14:30:22Z"}}
    _, fs = check(tmp_path, f"{CK}/coordinate.json", json.dumps(doc, indent=2))
    assert only(fs, "BTN411") == [] and only(fs, "BTN410") == []
    (f,) = only(fs, "BTN412")
    assert f.message.startswith("checkpoint schema 2.0:")


def test_outdated_schema_fix_migrates_to_2_1(corpus: Path, tmp_path: Path) -> None:
    text = (corpus / ".claude/checkpoints/test_524747/test_checkpoint.json").read_text()
    path, fs = check(tmp_path, f"{CK}/old.json", text)
    (f,) = only(fs, "BTN412")
    assert f.fix is not None and f.fix.title == "Migrate checkpoint to 2.1"
    migrated = apply_fix(text, f.fix)
    path.write_text(migrated)
    loaded = load_checkpoint(path)
    assert loaded.source_version == "2.1" and not loaded.migrated
    assert not only(check_file(WorkspaceIndex(tmp_path), path), "BTN412")


def test_engine_history_is_valid_and_tampering_is_reported(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    path = CheckpointStore(tmp_path, "wf_1").save({"status": "in_progress"}, "created")
    idx = WorkspaceIndex(tmp_path)
    assert not only(check_file(idx, path), "BTN413")
    path.write_text(path.read_text().replace("in_progress", "complete"))
    idx.changed(path)
    (f,) = only(check_file(idx, path), "BTN413")
    assert "checksum mismatch" in f.message


def test_run_json_and_agent_logs_are_not_checkpoints(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    idx = WorkspaceIndex(tmp_path)
    assert idx.kind_of(tmp_path / CK / "wf_1" / "run.json") is None
    assert idx.kind_of(tmp_path / CK / "wf_1" / "logs" / "x.json") is None
    assert idx.kind_of(tmp_path / CK / "wf_1" / "000001.json") is not None


def test_an_iteration_checkpoint_is_judged_like_the_loop_judges_it(tmp_path: Path) -> None:
    """The issue's case: iteration 7 of max 5, a missing plan, halt_reason "bored"."""
    cp = tmp_path / ".claude/data/checkpoints/build_wf_1_iteration_7.json"
    cp.parent.mkdir(parents=True)
    cp.write_text(json.dumps({"version": "2.1", "plan_path": "specs/009_x/plans/001-x.md",
                              "iteration": 7, "max_iterations": 5,
                              "halt_reason": "bored"}, indent=2))
    index = WorkspaceIndex(tmp_path)
    found = [(f.code, f.range.start_line, f.message) for f in check_file(index, cp)]
    assert found == [
        ("BTN414", 2, "iteration checkpoint: plan_path does not exist: "
                      "specs/009_x/plans/001-x.md"),
        ("BTN414", 3, "iteration checkpoint: iteration 7 exceeds max_iterations 5"),
        ("BTN415", 5, "iteration checkpoint: unknown halt_reason 'bored' (expected: "
                      "context_threshold, max_iterations, stuck, completion, user_abort, "
                      "error)"),
    ]
    plan = tmp_path / "specs/009_x/plans/001-x.md"
    assert str(cp) in index.dependents(plan)  # the editor re-checks it when the plan appears
    plan.parent.mkdir(parents=True)
    plan.write_text("# Plan\n")
    index.changed(plan, created_or_deleted=True)
    assert [f.code for f in check_file(index, cp)] == ["BTN414", "BTN415"]


def test_paths_too_long_for_the_system_are_missing_files_not_internal_errors(
        tmp_path: Path) -> None:
    """A path over PATH_MAX made `Path.exists()` raise OSError (File name too long): BTN414
    and BTN415 reported BTN000 instead of the missing plan and continuation file."""
    (tmp_path / ".claude").mkdir()
    long = "/p" * 2500
    _, findings = check(tmp_path, f"{CK}/build_w1_iteration_1.json", json.dumps({
        "version": "2.1", "plan_path": long, "iteration": 1, "max_iterations": 5,
        "continuation_context": long}))
    assert not only(findings, "BTN000"), findings
    assert "plan_path does not exist" in " ".join(f.message for f in only(findings, "BTN414"))
    assert "continuation file missing" in " ".join(f.message for f in only(findings, "BTN415"))


def test_v2_checkpoint_without_identity_fields_is_reported(tmp_path: Path) -> None:
    """Seed 003's 2.0 example carries `workflow_type` but not `project_name`, `created_at` or
    `status`; seed 001's keeps some under `metadata`. Both were read without a word."""
    seed3 = {"schema_version": "2.0", "checkpoint_id": "coordinate_auth_20251114_143000",
             "workflow_type": "coordinate",
             "state_machine": {"current_state": "research", "completed_states": ["initialize"],
                               "workflow_config": {"scope": "full-implementation",
                                                   "description": "Add user authentication",
                                                   "command": "coordinate"}},
             "phase_data": {}, "supervisor_state": {},
             "error_state": {"last_error": None, "retry_count": 0, "failed_state": None}}
    _, fs = check(tmp_path, f"{CK}/coordinate_auth.json", json.dumps(seed3, indent=2))
    (f,) = only(fs, "BTN417")
    assert f.range.start_line == 1
    assert f.message.startswith("checkpoint lacks project_name, created_at, status:")
    assert "status = 'in_progress'" in f.message
    seed1 = {"version": "2.0",
             "state_machine": {"current_state": "research",
                               "workflow_config": {"scope": "research-and-plan",
                                                   "command": "coordinate"}},
             "metadata": {"checkpoint_id": "coordinate_20251107_143022",
                          "project_name": "claude-config", "created_at": "2025-11-07T14:30:22Z"}}
    _, fs = check(tmp_path, f"{CK}/coordinate.json", json.dumps(seed1, indent=2))
    (f,) = only(fs, "BTN417")
    assert f.message.startswith("checkpoint lacks workflow_type, status:")


def test_engine_and_1x_checkpoints_have_no_identity_finding(corpus: Path, tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    path = CheckpointStore(tmp_path, "wf_1").save({"status": "in_progress"}, "created")
    assert only(check_file(WorkspaceIndex(tmp_path), path), "BTN417") == []
    text = (corpus / ".claude/checkpoints/test_524747/test_checkpoint.json").read_text()
    _, fs = check(tmp_path, f"{CK}/old.json", text)
    assert only(fs, "BTN417") == []

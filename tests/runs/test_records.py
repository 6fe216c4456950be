"""errors.jsonl records and the sourceable state file."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from baton_lsp.model.base import Kind
from baton_lsp.parse import parse_text
from baton_lsp.runs import records
from baton_lsp.runs.records import append_error, error_record, write_state_file


def test_error_records_have_the_real_shape_and_parse_back(tmp_path: Path) -> None:
    rec = error_record(workflow_id="wf", command="/baton-run", user_args="do x",
                       error_type="validation_error", message="HARD BARRIER FAILED",
                       source="plan", context={"artifact_path": "/p"}, root=tmp_path)
    append_error(tmp_path, rec)
    append_error(tmp_path, rec)
    path = tmp_path / ".claude" / "data" / "logs" / "errors.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    data = json.loads(lines[0])
    # the bash library's v2 line (formats.md §5.2): every key, in its order, nulls included
    assert list(data) == ["timestamp", "environment", "command", "workflow_id", "user_args",
                          "error_type", "error_message", "source", "stack", "context",
                          "status", "status_updated_at", "repair_plan_path"]
    assert lines[0].startswith('{"timestamp":"') and ", " not in lines[0][:40]
    assert data["timestamp"].endswith("Z") and data["status"] == "ERROR"
    assert data["status_updated_at"] is None and data["repair_plan_path"] is None
    log = parse_text(Kind.ERRORS_LOG, path.read_text(), str(path))
    assert len(log.records) == 2 and not log.bad_lines
    assert [e.line for e in log.records] == [0, 1]
    assert log.records[0].record == rec  # what the rules read is what the engine wrote


def test_errors_log_rotates(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(records, "ROTATE_BYTES", 600)
    rec = error_record(workflow_id="wf", command="c", user_args="", error_type="t",
                       message="m" * 100, source="s")
    for _ in range(12):
        append_error(tmp_path, rec)
    logs = tmp_path / ".claude" / "data" / "logs"
    assert (logs / "errors.jsonl.1").exists()
    assert not (logs / "errors.jsonl.6").exists()


def test_state_file_sources_back_verbatim_and_runs_nothing(tmp_path: Path) -> None:
    hostile = 'say "hi" $(touch pwned) `touch pwned2` \\ $HOME'
    path = write_state_file(tmp_path, "wf_1", {"WORKFLOW_DESCRIPTION": hostile,
                                               "CURRENT_STATE": "plan",
                                               "REPORT_PATHS_JSON": ["/a", "/b"]})
    lines = path.read_text().splitlines()
    assert lines[0].startswith("export CLAUDE_PROJECT_DIR=")
    assert lines[1] == 'export WORKFLOW_ID="wf_1"'
    assert lines[2].startswith("export STATE_FILE=")
    out = subprocess.run(["bash", "-c", f'source "{path}"; printf %s "$WORKFLOW_DESCRIPTION"'],
                         capture_output=True, text=True, cwd=tmp_path, timeout=30)
    assert out.stdout == hostile
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "pwned2").exists()
    state = parse_text(Kind.STATE, path.read_text(), str(path))
    assert state.values["CURRENT_STATE"] == "plan" and not state.problems


REAL_LINE = (  # .claude/tests/logs/test-errors.jsonl of the corpus, written by the bash library
    '{"timestamp":"2025-12-02T16:49:47Z","environment":"test","command":"/plan",'
    '"workflow_id":"test_123","user_args":"test","error_type":"state_error",'
    '"error_message":"Required state variables missing after load: FEATURE_DESCRIPTION",'
    '"source":"validate_state_variables","stack":["919 validate_state_variables '
    '/home/benjamin/.config/.claude/lib/core/state-persistence.sh"],"context":'
    '{"missing_variables":"FEATURE_DESCRIPTION","home":"/home/benjamin",'
    '"claude_project_dir":"/home/benjamin/.config"},"status":"ERROR",'
    '"status_updated_at":null,"repair_plan_path":null}')


def test_a_real_line_reads_and_writes_back_byte_for_byte(tmp_path: Path) -> None:
    log = parse_text(Kind.ERRORS_LOG, REAL_LINE + "\n", "errors.jsonl")
    (entry,) = log.records
    assert entry.record.shape == "v2" and entry.record.source == "validate_state_variables"
    assert entry.record.json_line() == REAL_LINE
    append_error(tmp_path, entry.record)
    assert records.errors_log_path(tmp_path).read_text() == REAL_LINE + "\n"

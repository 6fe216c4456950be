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
    assert set(data) >= {"timestamp", "environment", "command", "workflow_id", "user_args",
                         "error_type", "error_message", "source", "stack", "context", "status"}
    assert data["timestamp"].endswith("Z") and data["status"] == "ERROR"
    log = parse_text(Kind.ERRORS_LOG, path.read_text(), str(path))
    assert len(log.records) == 2 and not log.bad_lines


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

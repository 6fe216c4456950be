"""The bash system's checkpoint of a plan, over a real LSP connection: the plan's code
lenses show where that run stands, and the workflow list and status commands include it."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc

AUTH = ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
RUN_FILE = ".claude/data/checkpoints/implement_auth_20261120_101010.json"
RUN_ID = "bash:implement_auth_20261120_101010"
_NOW = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
CHECKPOINT = json.dumps({
    "schema_version": "1.2", "checkpoint_id": "implement_auth", "workflow_type": "implement",
    "project_name": "ws", "workflow_description": "implement the login plan",
    "created_at": _NOW, "updated_at": _NOW, "status": "in_progress", "current_phase": 2,
    "total_phases": 5, "completed_phases": [1], "workflow_state": {"plan_path": AUTH},
    "last_error": None, "tests_passing": True})


@pytest.mark.workspace_files({RUN_FILE: CHECKPOINT})
async def test_plan_lenses_show_the_bash_run(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / AUTH)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    by_line: dict[int, list[str]] = {}
    for lens in lenses:
        by_line.setdefault(lens.range.start.line, []).append(lens.command.title)
    title = by_line[0]
    assert any(t.startswith("bash system: in_progress in implement · plan phase 2 of 5 "
                            "(done: 1)") for t in title), title
    assert f"adopt to resume: baton adopt {RUN_ID}" in title
    assert "✓ done (bash system)" in by_line[25]  # Phase 1
    assert "⏸ in_progress here (bash system)" in by_line[34]  # Phase 2
    opened = next(lens for lens in lenses if lens.command.title.startswith("bash system"))
    assert opened.command.command == "baton.server.open"
    assert opened.command.arguments[0]["path"].endswith(RUN_FILE)


@pytest.mark.workspace_files({RUN_FILE: CHECKPOINT})
async def test_workflow_list_and_status_include_it(client: LanguageClient) -> None:
    rows = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="baton.server.workflow.list", arguments=[]))
    (row,) = [r for r in rows if r["workflow_id"] == RUN_ID]
    assert row["origin"] == "bash" and row["followed"] is False
    assert row["plan"].endswith(AUTH) and row["plan_exists"] is True
    info = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="baton.server.workflow.status", arguments=[{"id": RUN_ID}]))
    assert info["workflow_id"] == RUN_ID and info["phase"]["current"] == 2

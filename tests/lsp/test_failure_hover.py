"""The editor's hover on a failed workflow's checkpoint shows the seeds' five-part error
(issue 35, item 2), the same text `baton status` prints — over a real LSP connection, a real
engine run and a scripted agent that misses its artifact."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import CLIENTS, make_config, open_doc, setup
from tests.lsp.test_workflows import BEHAVIOUR, _workspace, command, finished, wait_changed


@pytest_lsp.fixture(config=make_config(), params=CLIENTS[:1])
async def editor(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 tmp_path: Path) -> AsyncIterator[LanguageClient]:
    root = _workspace(tmp_path, {"research.1": {"write": "nothing"}})
    assert (root / BEHAVIOUR).is_file()
    yield await setup(lsp_client, request, root)
    await lsp_client.shutdown_session()


async def test_hover_on_a_failed_checkpoint_shows_the_five_parts(editor: LanguageClient
                                                                 ) -> None:
    wid = (await command(editor, "workflow.start", {"description": "Research auth patterns",
                                                    "scope": "research-only",
                                                    "complexity": 1}))["workflow_id"]
    done = await wait_changed(editor, finished(wid))
    assert done["event"]["status"] == "failed"
    status = await command(editor, "workflow.status", {"id": wid})
    path = Path(status["checkpoint_path"])
    text = path.read_text()
    key = '"current_state":"' if '"current_state":"' in text else '"current_state": "'
    at = text.index(key) + len(key) + 1
    line = text.count("\n", 0, at)
    col = at - (text.rfind("\n", 0, at) + 1)
    uri = await open_doc(editor, path, "json")
    hover = await editor.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=col)))
    assert hover is not None
    value = hover.contents.value  # type: ignore[union-attr]
    assert f"Workflow `{wid}`: **failed**" in value
    assert "✗ ERROR in state 'research': " in value
    for part in ("Expected behavior:", "DIAGNOSTIC INFORMATION:", "Diagnostic commands:",
                 "Context:", "Recommended action:", "Retry 1/2 available for state 'research'",
                 "  - Parent directory: ", "/reports/\n"):
        assert part in value, value
    # the very text `baton status --json` carries (one formatter)
    assert status["diagnosis"]["text"] in value
    assert value.count("```") == 2


@pytest_lsp.fixture(config=make_config(), params=CLIENTS[:1])
async def reporting(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                    tmp_path: Path) -> AsyncIterator[LanguageClient]:
    root = _workspace(tmp_path, {"test.*": {"tests": "fail"}, "debug.*": {"fix": False}})
    config = root / ".claude" / "baton.toml"
    config.write_text(config.read_text() + 'debug-mode = "report"\n')
    yield await setup(lsp_client, request, root)
    await lsp_client.shutdown_session()


async def test_a_run_needing_attention_is_not_shown_as_a_plain_success(
        reporting: LanguageClient) -> None:
    wid = (await command(reporting, "workflow.start", {"description": "Add a farewell",
                                                       "complexity": 1}))["workflow_id"]
    done = await wait_changed(reporting, finished(wid))
    assert done["event"]["status"] == "complete"
    assert done["event"]["outcome"] == "needs_attention"
    assert "review" in done["event"]["message"] and "re-run: baton run" in done["event"][
        "message"]
    status = await command(reporting, "workflow.status", {"id": wid})
    assert status["outcome"]["status"] == "needs_attention"
    path = Path(status["checkpoint_path"])
    text = path.read_text()
    key = '"current_state":"' if '"current_state":"' in text else '"current_state": "'
    at = text.index(key) + len(key) + 1
    uri = await open_doc(reporting, path, "json")
    hover = await reporting.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=text.count("\n", 0, at),
                                character=at - (text.rfind("\n", 0, at) + 1))))
    assert hover is not None
    value = hover.contents.value  # type: ignore[union-attr]
    assert "⚠ needs attention" in value and status["outcome"]["rerun"] in value

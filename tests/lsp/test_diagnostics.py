"""Diagnostics over a real LSP connection (push and pull clients)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc, wait_for_diagnostics

RETRY = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


async def _diagnostics(client: LanguageClient, uri: str, predicate=None) -> list:
    if client.capabilities.text_document and client.capabilities.text_document.diagnostic:
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return report.items
    return await wait_for_diagnostics(client, uri, predicate)


async def test_open_plan_reports_findings_with_codes_and_fix_data(client: LanguageClient) -> None:
    root: Path = client.workspace_root
    uri = await open_doc(client, root / RETRY)
    diags = await _diagnostics(client, uri, lambda d: any(x.code == "BTN101" for x in d))
    by_code = {d.code: d for d in diags}
    unknown = by_code["BTN101"]
    assert unknown.source == "baton"
    assert unknown.severity == types.DiagnosticSeverity.Error
    assert unknown.range.start == types.Position(line=29, character=18)
    assert unknown.code_description.href.endswith("/BTN101")
    assert unknown.data["fix"]["title"] == "Remove dependency on phase 7"
    assert "BTN113" in by_code and "BTN116" in by_code


PLUGIN_AGENT = "plugins/review-kit/agents/reviewer.md"


@pytest.mark.workspace_files({
    "plugins/review-kit/.claude-plugin/plugin.json": '{"name": "review-kit"}',
    PLUGIN_AGENT: "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Reed\n---\n# R\n",
})
async def test_an_opened_plugin_agent_is_checked(client: LanguageClient) -> None:
    """A plugin nested in the workspace is its own root: its agents are agents."""
    uri = await open_doc(client, client.workspace_root / PLUGIN_AGENT)
    diags = await _diagnostics(client, uri, lambda d: any(x.code == "BTN206" for x in d))
    [tool] = [d for d in diags if d.code == "BTN206"]
    assert tool.range.start == types.Position(line=3, character=13)
    assert "`Reed`" in tool.message

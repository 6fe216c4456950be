"""The new Claude Code files in the editor: `.mcp.json`, `.claude/CLAUDE.md` and a plugin
manifest get their diagnostics over a real LSP connection (excerpts of real trees)."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc, wait_for_diagnostics

FILES = {
    # ProofChecker/.mcp.json (abridged)
    ".mcp.json": '{\n  "mcpServers": {\n    "lean-lsp": {\n      "command": "uvx",\n'
                 '      "args": ["lean-lsp-mcp"],\n      "env": {"LEAN_PROJECT_PATH": '
                 '"/home/benjamin/Projects/ProofChecker"}\n    }\n  }\n}\n',
    # BimodalHarness/.claude/CLAUDE.md (one line)
    ".claude/CLAUDE.md": "# Agent System\n\n- @.claude/rules/git-workflow.md - Commit "
                         "conventions\n",
    ".claude/rules/git-workflow.md": "Commit with task numbers.\n",
    ".claude-plugin/marketplace.json": '{"name": "team tools", "owner": {"name": "o"}, '
                                       '"plugins": []}\n',
}


async def _codes(client: LanguageClient, rel: str, code: str) -> list[types.Diagnostic]:
    uri = await open_doc(client, client.workspace_root / rel)
    if client.capabilities.text_document and client.capabilities.text_document.diagnostic:
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return [d for d in report.items if d.code == code]
    diags = await wait_for_diagnostics(client, uri, lambda d: any(x.code == code for x in d))
    return [d for d in diags if d.code == code]


@pytest.mark.workspace_files(FILES)
async def test_new_files_get_diagnostics(client: LanguageClient) -> None:
    [home] = await _codes(client, ".mcp.json", "BTN823")
    assert home.range.start.line == 5
    [imp] = await _codes(client, ".claude/CLAUDE.md", "BTN830")
    assert "write `@rules/git-workflow.md`" in imp.message
    [name] = await _codes(client, ".claude-plugin/marketplace.json", "BTN840")
    assert "spaces" in name.message

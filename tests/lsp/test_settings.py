"""Claude Code's settings in the editor: a `.claude/settings.json` opened as JSON gets its
findings and the event-renaming quick fix over a real LSP connection."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc, wait_for_diagnostics

SETTINGS = ".claude/settings.json"
FILES = {SETTINGS: '{\n  "hooks": {\n    "postToolUse": [{"matcher": "Write", "hooks": '
                   '[{"type": "command", "command": "npm run lint"}]}],\n'
                   '    "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}],\n'
                   '    "SessionStart": [{"matcher": "startup", "hooks": []}]\n  }\n}\n'}


async def _diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    if client.capabilities.text_document and client.capabilities.text_document.diagnostic:
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return list(report.items)
    return await wait_for_diagnostics(client, uri, lambda d: any(x.code == "BTN802" for x in d))


@pytest.mark.workspace_files(FILES)
async def test_settings_diagnostic_and_quick_fix(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / SETTINGS, language="json")
    [diag] = [d for d in await _diagnostics(client, uri) if d.code == "BTN802"]
    assert diag.range.start == types.Position(line=2, character=4)
    assert "postToolUse" in diag.message
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=diag.range,
        context=types.CodeActionContext(diagnostics=[diag])))
    fix = next(a for a in actions if a.title == "Rename the event to `PostToolUse`")
    (edit,) = fix.edit.changes[uri]
    assert edit.new_text == '"PostToolUse"'
    assert not any(a.title.startswith("Suppress") for a in actions)  # no comment in JSON


@pytest.mark.workspace_files(FILES)
async def test_hover_on_a_hook_event_says_what_its_matcher_matches(
        client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / SETTINGS, language="json")

    async def hover(line: int, character: int) -> str | None:
        found = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character)))
        return found.contents.value if found is not None else None

    stop = await hover(3, 6)
    assert stop is not None and "takes no matcher" in stop
    start = await hover(4, 8)
    assert start is not None and "the source (startup, resume" in start
    assert await hover(2, 8) is None  # not an event: BTN802 says so

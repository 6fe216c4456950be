"""Wave code lenses, inlay hints and the showGraph command."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc

AUTH = ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"


async def test_code_lenses_show_waves(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / AUTH)
    lenses = await client.text_document_code_lens_async(types.CodeLensParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    by_line = {lens.range.start.line: lens.command.title for lens in lenses}
    assert by_line[0] == "5 phases · 4 waves · critical path 4 phases"
    assert by_line[25] == "Wave 1 · sequential"
    assert by_line[41] == "Wave 3 · sequential"  # Phase 3 needs 1 and 2
    assert by_line[55] == "Wave 2 · parallel with Phase 2"  # Phase 4 only needs 1
    assert all(lens.command.command == "baton.showGraph" for lens in lenses)


async def test_inlay_hints_name_dependency_targets(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / AUTH)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=40, character=0),
                          end=types.Position(line=70, character=0))))
    labels = [(h.position.line, h.label) for h in hints]
    assert (42, "Session Storage") in labels and (42, "Password Verification") in labels
    assert all(40 <= line <= 70 for line, _ in labels)


async def test_show_graph_command_returns_mermaid(client: LanguageClient) -> None:
    uri = (client.workspace_root / AUTH).as_uri()
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="baton.showGraph", arguments=[uri]))
    assert result["mermaid"].startswith("flowchart TD")
    assert result["waves"] == [["1"], ["2", "4"], ["3"], ["5"]]

"""Quick fixes, suppression and fix-all over LSP."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc

RETRY = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


def _rng(line: int, a: int, b: int) -> types.Range:
    return types.Range(start=types.Position(line=line, character=a),
                       end=types.Position(line=line, character=b))


async def test_quick_fix_and_suppression_for_unknown_dependency(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / RETRY)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=_rng(29, 18, 19),
        context=types.CodeActionContext(diagnostics=[])))
    titles = [a.title for a in actions]
    assert "Remove dependency on phase 7" in titles
    assert "Suppress BTN101 here" in titles
    fix = next(a for a in actions if a.title == "Remove dependency on phase 7")
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    (edit,) = fix.edit.changes[uri]
    assert edit.new_text == "" and edit.range == _rng(29, 16, 19)
    sup = next(a for a in actions if a.title == "Suppress BTN101 here")
    (sedit,) = sup.edit.changes[uri]
    assert sedit.new_text == "<!-- baton: ignore BTN101 -->\n"
    assert sedit.range.start.line == 28  # above the heading + dependency block


async def test_fix_all_source_action(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / RETRY)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=_rng(0, 0, 0),
        context=types.CodeActionContext(diagnostics=[], only=["source.fixAll.baton"])))
    assert [a.kind for a in actions] == ["source.fixAll.baton"]
    new_texts = sorted(e.new_text for e in actions[0].edit.changes[uri])
    # [COMPLETD] in a plan that writes [COMPLETE] becomes [COMPLETE] (it became [COMPLETED],
    # which raised BTN114 at once: fix-all did not converge, issue 38)
    assert "[x]" in new_texts and "4" in new_texts and "[COMPLETE]" in new_texts

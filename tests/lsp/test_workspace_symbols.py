"""workspace/symbol from the index's symbol summaries: UTF-16 columns, ranking, edits."""

from __future__ import annotations

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc

ROCKET = ".claude/specs/010_rocket/plans/001-rocket-plan.md"
CACHE = ".claude/specs/011_cache/plans/001-cache-plan.md"


async def _symbols(client: LanguageClient, query: str) -> list[types.WorkspaceSymbol]:
    return list(await client.workspace_symbol_async(types.WorkspaceSymbolParams(query=query)))


@pytest.mark.workspace_files({
    ROCKET: "# 🚀 Rocket Über Plan\n\n### Phase 1: Été 🚀 launch\ndependencies: []\n- [ ] a\n"})
async def test_non_ascii_titles_have_utf16_columns(client: LanguageClient) -> None:
    uri = (client.workspace_root / ROCKET).as_uri()
    [plan] = await _symbols(client, "rocket über")
    assert plan.name == "🚀 Rocket Über Plan" and plan.kind == types.SymbolKind.File
    assert plan.location.uri == uri
    # "# " then the title: 18 code points, 19 UTF-16 units (the rocket is a surrogate pair)
    assert plan.location.range == types.Range(start=types.Position(line=0, character=2),
                                              end=types.Position(line=0, character=21))
    [phase] = await _symbols(client, "été")
    assert phase.name == "Phase 1: Été 🚀 launch" and phase.kind == types.SymbolKind.Module
    assert phase.container_name == "🚀 Rocket Über Plan"
    assert phase.location.range == types.Range(start=types.Position(line=2, character=0),
                                               end=types.Position(line=2, character=26))


@pytest.mark.workspace_files({
    ROCKET: "# Launch Checklist\n\n### Phase 1: Countdown\n",
    CACHE: "# Cache Plan\n\n### Phase 1: Load And Unpack Nightly Cache Histories\n"})
async def test_substring_matches_rank_before_fuzzy_ones(client: LanguageClient) -> None:
    names = [s.name for s in await _symbols(client, "launch")]
    assert names[0] == "Launch Checklist"
    assert "Phase 1: Load And Unpack Nightly Cache Histories" in names
    substring = ["launch" in name.lower() for name in names]
    assert substring == sorted(substring, reverse=True)  # every substring match first
    assert await _symbols(client, "zzqx") == []


async def test_open_document_edits_are_searched(client: LanguageClient) -> None:
    path = client.workspace_root / ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
    uri = await open_doc(client, path)
    assert [s.name for s in await _symbols(client, "login flow implementation")] == [
        "Login Flow Implementation Plan"]
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=2),
                              end=types.Position(line=0, character=7)),
            text="Sign-in")]))
    names = [s.name for s in await _symbols(client, "flow implementation")]
    assert names == ["Sign-in Flow Implementation Plan"]

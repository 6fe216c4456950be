"""Hover, definition, references, symbols, folding and completion over LSP."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import open_doc

AUTH = ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
CMD = ".claude/commands/research-plan.md"
AGENT = ".claude/agents/research-specialist.md"


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


def _pos(line: int, char: int) -> types.Position:
    return types.Position(line=line, character=char)


async def test_hover_dependency_rule_agent_signal(client: LanguageClient) -> None:
    root = client.workspace_root
    uri = await open_doc(client, root / AUTH)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(42, 18)))  # `2` in `dependencies: [1, 2]`
    assert "**Phase 2: Password Verification** · `COMPLETE`" in hover.contents.value
    assert "2/2 tasks done" in hover.contents.value and "needed by Phase 3" in hover.contents.value
    cmd = await open_doc(client, root / CMD)
    agent_hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(cmd), position=_pos(33, 45)))
    text = agent_hover.contents.value
    assert text.startswith("**research-specialist** — Researches one topic")
    assert "Model: sonnet" in text and "`REPORT_CREATED:`" in text
    sig = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(cmd), position=_pos(38, 15)))
    assert "Emitted by agents: research-specialist" in sig.contents.value
    assert "/research-plan" in sig.contents.value


async def test_hover_rule_code_in_suppression(client: LanguageClient) -> None:
    plan = client.workspace_root / ".claude/specs/001_auth_login/plans/extra-plan.md"
    plan.write_text("# P\n<!-- baton: ignore BTN116 -->\n### Phase 1: A\n- [X] t\n")
    uri = await open_doc(client, plan)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(1, 22)))
    assert hover.contents.value.startswith("**BTN116 uppercase-checkbox** (warning)")


async def test_definition_of_dependency_and_agent(client: LanguageClient) -> None:
    root = client.workspace_root
    uri = await open_doc(client, root / AUTH)
    locs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(42, 15)))
    assert locs[0].uri == uri and locs[0].range.start.line == 25
    cmd = await open_doc(client, root / CMD)
    locs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(cmd), position=_pos(6, 6)))  # dependent-agents item
    assert locs[0].uri == (root / AGENT).as_uri()
    report = await client.text_document_definition_async(types.DefinitionParams(
        text_document=_doc(uri), position=_pos(11, 40)))
    assert report[0].uri.endswith("reports/001-auth-patterns.md")


async def test_references_to_agent_and_phase(client: LanguageClient) -> None:
    root = client.workspace_root
    agent = await open_doc(client, root / AGENT)
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=_doc(agent), position=_pos(8, 3),
        context=types.ReferenceContext(include_declaration=False)))
    lines = sorted((r.uri.rsplit("/", 1)[1], r.range.start.line) for r in refs)
    assert lines == [("research-plan.md", 6), ("research-plan.md", 33)]
    uri = await open_doc(client, root / AUTH)
    refs = await client.text_document_references_async(types.ReferenceParams(
        text_document=_doc(uri), position=_pos(25, 5),
        context=types.ReferenceContext(include_declaration=True)))
    assert sorted(r.range.start.line for r in refs) == [25, 35, 42, 56]


async def test_document_and_workspace_symbols(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / AUTH)
    symbols = await client.text_document_document_symbol_async(
        types.DocumentSymbolParams(text_document=_doc(uri)))
    assert [s.name for s in symbols][:2] == ["Phase 1: Session Storage",
                                             "Phase 2: Password Verification"]
    assert len(symbols) == 5 and [c.detail for c in symbols[0].children] == ["done", "done"]
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="backoff"))
    assert [s.name for s in found] == ["Phase 2: Backoff Worker"]
    agents = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="research"))
    assert {"research-specialist", "/research-plan"} <= {s.name for s in agents}


async def test_folding_ranges(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / AUTH)
    ranges = await client.text_document_folding_range_async(
        types.FoldingRangeParams(text_document=_doc(uri)))
    spans = {(r.start_line, r.end_line) for r in ranges}
    assert (25, 32) in spans  # Phase 1 without the trailing blank line
    assert (49, 53) in spans  # the ```bash fence of Phase 3


async def test_completion_contexts(client: LanguageClient) -> None:
    root = client.workspace_root
    plan = root / ".claude/specs/001_auth_login/plans/draft-plan.md"
    plan.write_text("# Draft\n\n## Metadata\n- **Date**: 2026-01-01\n- **\n\n"
                    "### Phase 1: A\n### Phase 2: B [\ndependencies: [\n")
    uri = await open_doc(client, plan)

    async def labels(line: int, char: int) -> list[str]:
        result = await client.text_document_completion_async(types.CompletionParams(
            text_document=_doc(uri), position=_pos(line, char)))
        return [i.label for i in result.items]

    assert await labels(8, 15) == ["1"]  # own phase excluded
    assert "IN PROGRESS" in await labels(7, 16)
    meta = await labels(4, 4)
    assert "Feature" in meta and "Date" not in meta
    agent = root / ".claude/agents/new-agent.md"
    agent.write_text("---\nallowed-tools: \nmod\n---\n")
    auri = await open_doc(client, agent)
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=_doc(auri), position=_pos(1, 15)))
    assert "WebSearch" in [i.label for i in result.items]
    result = await client.text_document_completion_async(types.CompletionParams(
        text_document=_doc(auri), position=_pos(2, 3)))
    assert "model" in [i.label for i in result.items]


async def test_hover_of_a_terminal_marker_says_the_phase_was_given_up(
        client: LanguageClient) -> None:
    # ProofChecker/.opencode/specs/202_fix_verbose_artifact_output/plans/implementation-001.md
    plan = client.workspace_root / ".claude/specs/202_fix/plans/implementation-001.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Implementation Plan: Fix Verbose Artifact Output in Commands\n\n"
                    "## Implementation Phases\n\n"
                    "### Phase 1: Fix task-executor Return Format [NOT APPLICABLE]\n")
    uri = await open_doc(client, plan)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=_doc(uri), position=_pos(4, 50)))
    assert hover.contents.value.startswith("`[NOT APPLICABLE]` — the phase was given up")


async def test_completion_in_the_task_based_dialect(client: LanguageClient) -> None:
    # the `**Depends on**:` lines and lettered ids of the task-based trees' plans
    # (nvim/specs/792_*/plans, ProofChecker/specs/archive/956_*/plans/implementation-012.md)
    plan = client.workspace_root / ".claude/specs/956_x/plans/implementation-012.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Plan\n\n## Implementation Phases\n\n### Phase 1: Boneyard Archival\n\n"
                    "### Phase 2A: NoMaxOrder and NoMinOrder [\n\n**Depends on**: 1, \n")
    uri = await open_doc(client, plan)

    async def labels(line: int, char: int) -> list[str]:
        result = await client.text_document_completion_async(types.CompletionParams(
            text_document=_doc(uri), position=_pos(line, char)))
        return [i.label for i in result.items]

    assert "COMPLETED" in await labels(6, 42)
    assert await labels(8, 18) == ["1"]  # phase 2A's own id left out

"""OpenCode agents and commands in the editor: diagnostics, hover, completion, definition,
over a real LSP connection (the excerpts are from real `.opencode/` trees)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import TIMEOUT, open_doc, wait_for_diagnostics, wait_indexed

AGENT = ".opencode/agent/subagents/logic-research-agent.md"
ORCHESTRATOR = ".opencode/agent/orchestrator.md"
COMMAND = ".opencode/command/implement.md"
FILES = {
    # ModelChecker/.opencode/agent/subagents/logic-research-agent.md (head)
    AGENT: "---\nname: logic-research-agent\ndescription: Research formal mathematical logic "
           "tasks\nmodel: opus\ntools:\n  read: true\n  write: false\n---\n\n"
           "# Logic Research Agent\n",
    # ProofChecker/.opencode/agent/orchestrator.md and command/implement.md (heads)
    ORCHESTRATOR: "---\nname: orchestrator\ndescription: Routes commands\nmode: primary\n"
                  "---\n\n# Orchestrator\n",
    COMMAND: "---\ndescription: Execute implementation with resume support\n"
             "agent: orchestrator\n---\n\nImplement $ARGUMENTS\n\n"
             'task(subagent_type="logic-research-agent", prompt="Research")\n',
}


async def _diagnostics(client: LanguageClient, uri: str, code: str) -> list[types.Diagnostic]:
    if client.capabilities.text_document and client.capabilities.text_document.diagnostic:
        report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        return list(report.items)
    return await wait_for_diagnostics(client, uri, lambda d: any(x.code == code for x in d))


@pytest.mark.workspace_files(FILES)
async def test_an_opencode_agent_gets_opencode_diagnostics(client: LanguageClient) -> None:
    uri = await open_doc(client, client.workspace_root / AGENT)
    diags = await _diagnostics(client, uri, "BTN705")
    [model] = [d for d in diags if d.code == "BTN705"]
    assert model.range.start == types.Position(line=3, character=7)
    assert "provider/model" in model.message
    # `tools:` as a map is OpenCode's form: none of Claude Code's agent findings
    assert not [d for d in diags if str(d.code).startswith("BTN2")]


@pytest.mark.workspace_files(FILES)
async def test_opencode_hover_completion_definition(client: LanguageClient) -> None:
    root = client.workspace_root
    uri = await open_doc(client, root / COMMAND)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=2, character=10)))
    assert hover is not None and "Routes commands" in hover.contents.value
    locs = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=2, character=10)))
    assert locs and locs[0].uri == (root / ORCHESTRATOR).as_uri()
    key = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=2, character=1)))
    assert key is not None and "OpenCode command" in key.contents.value
    sub = await client.text_document_definition_async(types.DefinitionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=7, character=25)))  # a task-tool call's agent
    assert sub and sub[0].uri == (root / AGENT).as_uri()

    agent_uri = await open_doc(client, root / AGENT)
    # a new line inside the `tools:` map offers OpenCode's tool ids, not Claude Code's
    text = (root / AGENT).read_text().replace("  write: false\n", "  write: false\n  \n")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=agent_uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    done = await client.text_document_completion_async(types.CompletionParams(
        text_document=types.TextDocumentIdentifier(uri=agent_uri),
        position=types.Position(line=7, character=2)))
    labels = {i.label for i in (done.items if isinstance(done, types.CompletionList) else done)}
    assert {"webfetch", "bash", "todowrite"} <= labels and "WebFetch" not in labels


PLAN_CMD = ".opencode/commands/plan.md"
NEW_AGENT = ".opencode/agent/subagents/planner-agent.md"


@pytest.mark.workspace_files({
    PLAN_CMD: "---\ndescription: Create a phased plan\nagent: planner-agent\n---\nPlan\n"})
async def test_an_agent_created_on_disk_resolves_a_command(client: LanguageClient) -> None:
    """A new agent on disk, even in a new directory, clears the command's BTN711."""
    root = client.workspace_root
    uri = await open_doc(client, root / PLAN_CMD)
    diags = await _diagnostics(client, uri, "BTN711")
    assert any(d.code == "BTN711" for d in diags)
    await wait_indexed(client)  # no re-check of the whole tree under way to hide a missed one
    agent = root / NEW_AGENT
    agent.parent.mkdir(parents=True)
    agent.write_text("---\nname: planner-agent\ndescription: Plans\n---\n# P\n")
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=agent.as_uri(), type=types.FileChangeType.Created)]))
    await _current(client, uri, lambda d: not any(x.code == "BTN711" for x in d))


async def _current(client: LanguageClient, uri: str, predicate: Any) -> list[types.Diagnostic]:
    """Diagnostics for `uri` once `predicate` holds, as the client sees them (pull or push;
    a pull client asks again until the server's re-check answers)."""
    if not (client.capabilities.text_document and client.capabilities.text_document.diagnostic):
        return await wait_for_diagnostics(client, uri, predicate)

    async def poll() -> list[types.Diagnostic]:
        while True:
            report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=uri)))
            if predicate(report.items):
                return list(report.items)
            await asyncio.sleep(0.05)

    return await asyncio.wait_for(poll(), TIMEOUT)

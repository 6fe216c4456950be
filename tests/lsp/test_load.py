"""Bursts of edits: superseded work is dropped, not queued (the figures are in
`benchmarks/bench_lsp.py --load`; these tests pin the behaviour, not the speed)."""

from __future__ import annotations

import asyncio

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import TIMEOUT, open_doc, wait_for_diagnostics, wait_indexed

AGENT = ".claude/agents/research-specialist.md"


async def _quiet(client: LanguageClient) -> None:
    """Until the server has no check queued or running (each poll is a round trip)."""
    async def poll() -> None:
        while True:
            info = await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="baton.server.debugInfo", arguments=[]))
            if info["pending_checks"] == 0:
                return
    await asyncio.wait_for(poll(), TIMEOUT)


async def test_files_depending_on_an_edited_one_are_not_republished_unchanged(
        client: LanguageClient) -> None:
    """Every check of the agent re-checked the eight files depending on it, one after the
    other, and published each again, unchanged: 20 quick edits meant up to 160 checks and
    publications queued behind the next keystroke."""
    td = client.capabilities.text_document
    if td and td.diagnostic:
        pytest.skip("push mode: publications are what is counted")
    client.set_configuration({"debounce": 0}, section="baton")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))
    await wait_indexed(client)  # indexing publishes outside the queue
    path = client.workspace_root / AGENT
    uri = await open_doc(client, path)
    await wait_for_diagnostics(client, uri)
    await _quiet(client)
    before = len(client.published)
    text = path.read_text(encoding="utf-8")
    lines = text.count("\n")
    for version in range(2, 22):
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangePartial(
                range=types.Range(start=types.Position(line=lines, character=0),
                                  end=types.Position(line=lines, character=0)),
                text="More notes.\n")]))

    async def latest() -> None:
        while not any(p.uri == uri and p.version == 21 for p in client.published[before:]):
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    await asyncio.wait_for(latest(), TIMEOUT)
    await _quiet(client)
    others = [p.uri.rsplit("/", 1)[1] for p in client.published[before:] if p.uri != uri]
    assert others == [], others

"""The language server on a workspace holding real FIFOs and real symlinks to files outside
it: it indexes, answers, and exits on `shutdown`/`exit` (a thread stuck opening a FIFO kept
the old one alive for ever), and a link out of the workspace is one BTN400 naming the link
in its diagnostics, with nothing of the target in diagnostics, hover or symbols — even when
the editor opens the link and sends the target's text."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import LanguageClient, client_capabilities

from tests.lsp.conftest import make_config, open_doc, wait_for_diagnostics, wait_indexed

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo") or sys.platform == "win32",
                                reason="needs FIFOs and POSIX symlinks")

EXIT_TIMEOUT = 60.0
"""Generous for a loaded machine; a server held by a stuck thread never exits."""

OUTSIDE = "is a symbolic link to a file outside the workspace"
PLAN = ".claude/specs/001_feature/plans/001_plan.md"
AGENT = ".claude/agents/worker.md"
ERRORS = ".claude/data/logs/errors.jsonl"
SECRET_PLAN = "# SECRETTITLE Plan\n\n## Phase 1: SECRETPHASE one\ndependencies: [7]\n\n- [ ] x\n"
SECRET_AGENT = "---\nname: worker\ndescription: SECRETDESC\ntools: Read, SECRETTOOL\n---\n\nDo.\n"
SECRET_ERRORS = json.dumps({"timestamp": "2025-01-01T00:00:00Z", "error_type": "SECRETTYPE",
                            "error_message": "m"}) + "\n"


def hostile_workspace(tmp_path: Path) -> Path:
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / "docs" / "plans").mkdir(parents=True)
    history = root / ".claude" / "data" / "checkpoints" / "implement_1_2"
    history.mkdir(parents=True)
    for fifo in ("PLAN.md", "docs/plans/next.md", ".claude/TODO.md",
                 ".claude/data/checkpoints/implement_1_2/000099.json",
                 ".claude/data/checkpoints/implement_x_20250101_000000.json"):
        os.mkfifo(root / fifo)
    outside.mkdir()
    for rel, text in ((PLAN, SECRET_PLAN), (AGENT, SECRET_AGENT), (ERRORS, SECRET_ERRORS)):
        target = outside / rel.replace("/", "_")
        target.write_text(text)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).symlink_to(target)
    real = root / ".claude" / "specs" / "002_real" / "plans" / "002_plan.md"
    real.parent.mkdir(parents=True)
    real.write_text("# Real Plan\n\n## Phase 1: Visible phase\ndependencies: []\n\n- [ ] y\n")
    return root


@pytest_lsp.fixture(config=make_config())
async def client(lsp_client: LanguageClient, tmp_path: Path) -> AsyncIterator[LanguageClient]:
    """A session the test ends itself (the exit is what is tested); a server that does not
    exit is killed here so the test fails instead of hanging."""
    root = hostile_workspace(tmp_path)

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        return None

    @lsp_client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params: None) -> None:
        return None

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code"), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        initialization_options={"trusted": False}))
    lsp_client.workspace_root = root  # type: ignore[attr-defined]
    yield lsp_client
    server = lsp_client._server  # the subprocess: pytest-lsp would wait on it for ever
    if server is not None and server.returncode is None:
        server.kill()


def _doc(uri: str) -> types.TextDocumentIdentifier:
    return types.TextDocumentIdentifier(uri=uri)


async def test_the_server_answers_and_exits_whatever_the_fifos(client: LanguageClient) -> None:
    """Straight to `shutdown`/`exit` after a request, indexing finished or not: the old
    server answered, but its indexing thread sat in `open()` of `PLAN.md` and the
    interpreter waited for it at exit."""
    found = await asyncio.wait_for(client.workspace_symbol_async(
        types.WorkspaceSymbolParams(query="zzz-none")), EXIT_TIMEOUT)
    assert not found
    await asyncio.wait_for(client.shutdown_session(), EXIT_TIMEOUT)
    server = client._server
    assert server is not None and server.returncode == 0


async def test_fifos_and_outside_links_neither_hang_nor_leak(client: LanguageClient) -> None:
    root: Path = client.workspace_root  # type: ignore[attr-defined]
    await wait_indexed(client)
    found = await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="Visible"))
    assert [s.name for s in found or []] == ["Phase 1: Visible phase"]
    assert not await client.workspace_symbol_async(types.WorkspaceSymbolParams(query="SECRET"))

    for rel in (PLAN, AGENT, ERRORS):  # the editor opens the link: it sends the target's text
        uri = await open_doc(client, root / rel)
        diags = await wait_for_diagnostics(client, uri, lambda d: bool(d))
        assert [d.code for d in diags] == ["BTN400"], diags
        assert diags[0].message.startswith(f"{rel} {OUTSIDE}"), diags[0].message
        assert "SECRET" not in json.dumps([d.message for d in diags])
        symbols = await client.text_document_document_symbol_async(
            types.DocumentSymbolParams(text_document=_doc(uri)))
        assert "SECRET" not in repr(symbols), symbols
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=_doc(uri), position=types.Position(line=2, character=14)))
        assert hover is None or "SECRET" not in repr(hover.contents), hover
    for uri, diags in client.diagnostics.items():
        assert "SECRET" not in json.dumps([d.message for d in diags]), uri

    await asyncio.wait_for(client.shutdown_session(), EXIT_TIMEOUT)
    server = client._server
    assert server is not None and server.returncode == 0

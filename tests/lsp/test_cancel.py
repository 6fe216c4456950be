"""`$/cancelRequest` on heavy workspace requests: the client gets RequestCancelled (-32800),
the worker stops early, and the server keeps answering.

The workspaces are big enough (a few hundred generated plans) that the cancelled work
takes hundreds of milliseconds, far longer than the server needs to read the cancel sent
right behind the request. A server that does the work on the event loop answers in full
before it reads the cancel, so these tests fail without cancellable handlers.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from tests.lsp.conftest import TIMEOUT, wait_indexed

PLANS = 300


def _plans(box: str) -> dict[str, str]:
    """PLANS plans of 20 phases; `box="X"` gives ~120 findings each, `" "` none."""
    files = {}
    for i in range(PLANS):
        out = [f"# Generated Plan {i}", "", "## Metadata", "- **Date**: 2026-01-01",
               f"- **Feature**: generated {i}", ""]
        for p in range(1, 21):
            out += [f"### Phase {p}: Step {p} of plan {i} [NOT STARTED]",
                    f"dependencies: [{p - 1 if p > 1 else ''}]", "", "Tasks:"]
            out += [f"- [{box}] task {t} in phase {p}" for t in range(5)]
            out.append("")
        files[f".claude/specs/{i:03d}_gen/plans/001-gen-plan.md"] = "\n".join(out)
    return files


async def _send_and_cancel(client: LanguageClient, method: str, params: Any) -> None:
    """Send `method`, cancel it right behind, and expect the RequestCancelled error."""
    msg_id = f"cancel-me-{uuid.uuid4()}"
    # pygls 2.1 does not send $/cancelRequest when a request future is cancelled, so the
    # request goes out under a known id and the cancel is sent explicitly. pytest-lsp's
    # `send_request_async` is a coroutine that sends only once awaited; pygls's plain
    # `send_request` writes now, so the cancel follows the request on the wire.
    future = client.protocol.send_request(method, params, msg_id=msg_id)
    client.cancel_request(types.CancelParams(id=msg_id))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(asyncio.wrap_future(future), TIMEOUT)


async def _assert_stopped_early(client: LanguageClient, what: str) -> None:
    """Wait for the server's log line once its worker stopped: either during the first
    step (listing the workspace's files) or partway through the files, never after all."""
    rx = re.compile(rf"{re.escape(what)} cancelled(?: after (\d+) of (\d+) items)?$")

    async def loop() -> re.Match[str]:
        while True:
            for m in client.log_messages:
                found = rx.search(m.message)
                if found:
                    return found
            await client.wait_for_notification(types.WINDOW_LOG_MESSAGE)

    found = await asyncio.wait_for(loop(), TIMEOUT)
    if found.group(1) is not None:
        done, total = int(found.group(1)), int(found.group(2))
        assert total >= PLANS and done < total


@pytest.mark.workspace_files(_plans(" "))
async def test_workspace_symbol_can_be_cancelled(client: LanguageClient) -> None:
    await wait_indexed(client)
    # Rewritten behind the server's back (no file events): every plan must be re-parsed,
    # so the query has hundreds of milliseconds of work to do.
    for path in client.workspace_root.glob(".claude/specs/*_gen/plans/001-gen-plan.md"):
        path.write_text(path.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    await _send_and_cancel(client, types.WORKSPACE_SYMBOL,
                           types.WorkspaceSymbolParams(query="step"))
    await _assert_stopped_early(client, "workspace/symbol")
    found = await asyncio.wait_for(client.workspace_symbol_async(
        types.WorkspaceSymbolParams(query="generated plan 123")), TIMEOUT)
    assert [s.name for s in found] == ["Generated Plan 123"]
    steps = await asyncio.wait_for(client.workspace_symbol_async(
        types.WorkspaceSymbolParams(query="step")), TIMEOUT)
    assert len(steps) == 1000 and all("Step" in s.name for s in steps)  # capped


@pytest.mark.workspace_files(_plans("X"))
async def test_workspace_diagnostic_can_be_cancelled(client: LanguageClient) -> None:
    if not (client.capabilities.text_document and client.capabilities.text_document.diagnostic):
        pytest.skip("workspace/diagnostic needs a pull client")
    await wait_indexed(client)  # every result is cached: the old handler never awaited
    await _send_and_cancel(client, types.WORKSPACE_DIAGNOSTIC,
                           types.WorkspaceDiagnosticParams(previous_result_ids=[]))
    await _assert_stopped_early(client, "workspace/diagnostic")
    uri = (client.workspace_root / ".claude/specs/007_gen/plans/001-gen-plan.md").as_uri()
    report = await asyncio.wait_for(client.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))),
        TIMEOUT)
    assert any(d.code == "BTN116" for d in report.items)

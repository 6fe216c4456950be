"""Fuzzing the language server: generated documents, edits and requests over a real
connection (pytest-lsp), against one server per client for the whole run.

Bounded for the suite; `benchmarks/fuzz.py` runs the same strategies much longer. The
invariants: every request is answered in time and never with an internal error, no
diagnostic is BTN000, the server never shows or logs an error, and it is still answering
at the end.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from tests.fuzzing import KINDS, ODD_URIS, REL_PATHS, document, edit, request

REQUEST_TIMEOUT = 30.0
ACCEPTED_ERRORS = {-32602, -32800, -32801, -32803}
"""InvalidParams (executeCommand with garbage arguments), RequestCancelled,
ContentModified and RequestFailed (a refusal: a path outside the workspace) are answers;
InternalError (-32603) is a handler that raised."""
_counter = itertools.count()
CONVERTER = get_converter()


def _params(method: str, raw: dict[str, Any]) -> Any:
    """The typed lsprotocol params of `method` built from `raw` (the client serialises
    typed objects only)."""
    params_type = types.METHOD_TO_TYPES[method][2]
    return CONVERTER.structure(raw, params_type)


async def _ask(client: LanguageClient, method: str, raw: dict[str, Any]) -> None:
    try:
        await asyncio.wait_for(client.protocol.send_request_async(
            method, _params(method, raw)), REQUEST_TIMEOUT)
    except JsonRpcException as exc:
        assert exc.code in ACCEPTED_ERRORS, (method, raw, exc.code, str(exc)[:500])


def _problems(client: LanguageClient) -> list[str]:
    internal = [f"{uri}: {d.message}" for uri, diags in client.diagnostics.items()
                for d in diags if d.code == "BTN000"]
    shown = [m.message for m in client.messages if m.type == types.MessageType.Error]
    logged = [m.message for m in client.log_messages if m.type == types.MessageType.Error]
    return internal + shown + logged


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                 HealthCheck.data_too_large])
@given(data=st.data())
async def test_generated_traffic_never_breaks_the_server(client: LanguageClient,
                                                         data: st.DataObject) -> None:
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    root = client.workspace_root  # type: ignore[attr-defined]
    if data.draw(st.integers(0, 7), label="odd uri?") == 0:
        uri = data.draw(st.sampled_from(ODD_URIS), label="uri")
    else:
        rel = REL_PATHS[kind].replace("fuzz", f"fuzz{next(_counter)}")
        uri = (root / rel).as_uri()
    text = data.draw(document(kind, surrogates=True), label="text")
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="markdown", version=1,
                                             text=text)))
    version = 1
    for _ in range(data.draw(st.integers(0, 6), label="edits")):
        version += 1
        change = data.draw(edit(), label="edit")
        client.text_document_did_change(CONVERTER.structure(
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [change]},
            types.DidChangeTextDocumentParams))
        if data.draw(st.booleans(), label="ask now?"):
            await _ask(client, *data.draw(request(uri), label="request"))
    for _ in range(data.draw(st.integers(1, 5), label="requests")):
        await _ask(client, *data.draw(request(uri), label="request"))
    if data.draw(st.booleans(), label="close?"):
        client.text_document_did_close(types.DidCloseTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
    # Everything sent so far has been read once this is answered; diagnostics published by
    # then are checked (later ones by the next example and the final check).
    await _ask(client, types.WORKSPACE_SYMBOL, {"query": "Phase"})
    assert not _problems(client), _problems(client)


async def test_the_server_still_answers_after_the_fuzz(client: LanguageClient) -> None:
    """A control for the test above: its invariants hold on a fresh session too, so a
    failure there is the traffic's doing."""
    await _ask(client, types.WORKSPACE_SYMBOL, {"query": "Phase"})
    assert not _problems(client)

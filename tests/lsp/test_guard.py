"""`guard`/`guard_async` isolate a feature handler: a failure is logged and answered with the
default, a cancellation still propagates, and a handler's own answer passes through."""

from __future__ import annotations

import asyncio
import logging

import pytest
from lsprotocol import types

from baton_lsp.lsp.server import BatonServer, guard, guard_async

Params = types.HoverParams


def _params() -> Params:
    return types.HoverParams(text_document=types.TextDocumentIdentifier(uri="file:///x.md"),
                             position=types.Position(line=0, character=0))


def _fails(ls: BatonServer, params: Params) -> list[str]:
    raise ValueError("half-typed plan")


def _answers(ls: BatonServer, params: Params) -> list[str]:
    return [params.text_document.uri]


def test_a_failing_handler_answers_its_default_and_logs_its_name(
        caplog: pytest.LogCaptureFixture) -> None:
    server = BatonServer()
    with caplog.at_level(logging.ERROR, logger="baton_lsp.lsp.server"):
        assert guard(list)(_fails)(server, _params()) == []
        assert guard()(_fails)(server, _params()) is None
    assert [r.getMessage() for r in caplog.records] == ["_fails failed"] * 2
    assert guard(list)(_answers)(server, _params()) == ["file:///x.md"]
    assert guard(list)(_answers).__name__ == "_answers"  # pygls names the handler by it


async def test_an_async_handler_is_isolated_but_still_cancellable() -> None:
    server = BatonServer()

    async def fails(ls: BatonServer, params: Params) -> list[str]:
        raise ValueError("odd document")

    async def cancelled(ls: BatonServer, params: Params) -> list[str]:
        raise asyncio.CancelledError

    async def answers(ls: BatonServer, params: Params) -> list[str]:
        return [params.text_document.uri]

    assert await guard_async(list)(fails)(server, _params()) == []
    assert await guard_async()(fails)(server, _params()) is None
    assert await guard_async(list)(answers)(server, _params()) == ["file:///x.md"]
    with pytest.raises(asyncio.CancelledError):
        await guard_async(list)(cancelled)(server, _params())
    assert asyncio.iscoroutinefunction(guard_async(list)(answers))  # pygls awaits it

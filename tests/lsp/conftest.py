"""pytest-lsp fixtures: the real server in a subprocess, parametrised over real clients.

Each test gets a fresh copy of the example workspace so edits on disk never leak.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from tests.conftest import EXAMPLE

CLIENTS = ["visual-studio-code", "neovim"]
# A hang guard, not a speed check: every wait below is on an event (a notification, a log
# line, a response), so this only ends a test whose server never answers. 30 s was missed by
# a loaded 2-core CI machine indexing test_cancel's 300 generated plans.
TIMEOUT = 180.0


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    dest = tmp_path / "ws"
    shutil.copytree(EXAMPLE, dest)
    return dest


async def wait_for_diagnostics(client: LanguageClient, uri: str,
                               predicate: Any = None, timeout: float = TIMEOUT) -> list:
    """Wait until diagnostics for `uri` satisfy `predicate` (default: any publication)."""

    async def loop() -> list:
        while True:
            current = client.diagnostics.get(uri)
            if current is not None and (predicate is None or predicate(current)):
                return current
            await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)

    return await asyncio.wait_for(loop(), timeout)


async def wait_indexed(client: LanguageClient, timeout: float = TIMEOUT) -> None:
    """Wait for the server's background indexing to finish (it logs a summary line)."""

    async def loop() -> None:
        while not any("indexed" in m.message for m in client.log_messages):
            await client.wait_for_notification(types.WINDOW_LOG_MESSAGE)

    await asyncio.wait_for(loop(), timeout)


async def open_doc(client: LanguageClient, path: Path, language: str = "markdown") -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id=language, version=1,
                                             text=path.read_text(encoding="utf-8"))))
    return uri


def make_config() -> ClientServerConfig:
    return ClientServerConfig(server_command=[sys.executable, "-m", "baton_lsp", "lsp"])


@pytest_lsp.fixture(config=make_config(), params=CLIENTS)
async def client(lsp_client: LanguageClient, request: pytest.FixtureRequest,
                 workspace: Path) -> AsyncIterator[LanguageClient]:
    caps = client_capabilities(request.param)
    setup = request.node.get_closest_marker("workspace_files")
    if setup is not None:
        for rel, text in setup.args[0].items():
            target = workspace / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: types.RegistrationParams) -> None:
        lsp_client.registrations = [*getattr(lsp_client, "registrations", []),  # type: ignore[attr-defined]
                                    *params.registrations]

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=caps,
        root_uri=workspace.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=workspace.as_uri(), name="ws")],
        initialization_options={"trusted": False},
    ))
    lsp_client.workspace_root = workspace  # type: ignore[attr-defined]
    lsp_client.published = []  # type: ignore[attr-defined]

    features = lsp_client.protocol.fm.features
    default_handler = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def _published(params: types.PublishDiagnosticsParams) -> None:
        """Keep every publication (pytest-lsp keeps only the latest per URI)."""
        lsp_client.published.append(params)  # type: ignore[attr-defined]
        default_handler(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _published

    yield lsp_client
    await lsp_client.shutdown_session()


CHANGED = "baton/workflowChanged"


def plain(value: Any) -> Any:
    """pygls hands custom notification params over as named tuples: back to JSON."""
    if hasattr(value, "_asdict"):
        return {k: plain(v) for k, v in value._asdict().items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


async def setup(client: LanguageClient, request: pytest.FixtureRequest, root: Path,
                trusted: bool = True, answer: str = "Resume") -> LanguageClient:
    """Initialize a workflow session: `baton/workflowChanged` notifications are kept in
    `client.changed`, message requests are recorded in `client.asked` and answered with the
    action starting with `client.answer`, code-lens refreshes are counted."""
    client.changed = []  # type: ignore[attr-defined]
    client.asked = []  # type: ignore[attr-defined]
    client.lens_refreshes = 0  # type: ignore[attr-defined]
    client.lens_refreshed = asyncio.Event()  # type: ignore[attr-defined]
    client.answer = answer  # type: ignore[attr-defined]

    @client.feature(CHANGED)
    def _changed(params: Any) -> None:
        client.changed.append(plain(params))  # type: ignore[attr-defined]

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def _register(params: Any) -> None:
        return None

    @client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
    def _refresh(params: Any) -> None:
        client.lens_refreshes += 1  # type: ignore[attr-defined]
        client.lens_refreshed.set()  # type: ignore[attr-defined]

    @client.feature(types.WINDOW_SHOW_MESSAGE_REQUEST)
    def _ask(params: types.ShowMessageRequestParams) -> types.MessageActionItem | None:
        client.asked.append(params)  # type: ignore[attr-defined]
        for action in params.actions or []:
            if action.title.startswith(client.answer):  # type: ignore[attr-defined]
                return action
        return None

    await client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities(request.param), root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")],
        initialization_options={"trusted": trusted}))
    client.workspace_root = root  # type: ignore[attr-defined]
    return client

"""The answer to `initialize`, known without importing pygls: what pygls 2.x builds from the
features the modules of this package register (`tests/lsp/test_early.py` starts the server
with and without the early start and compares the answers for several clients; a feature
added, removed or given other options fails it until `CAPABILITIES` says the same).
"""

from __future__ import annotations

from typing import Any

from .. import __version__
from .wire import POSITION_ENCODING

SERVER_NAME = "baton-lsp"

COMMANDS = (
    "baton.showGraph",
    "baton.server.validateWorkspace",
    "baton.server.debugInfo",
    "baton.server.workflow.start",
    "baton.server.workflow.resume",
    "baton.server.workflow.resumeWithPreview",
    "baton.server.workflow.resumeFromCheckpoint",
    "baton.server.checkpoint.open",
    "baton.server.open",
    "baton.server.workflow.cancel",
    "baton.server.workflow.list",
    "baton.server.workflow.status",
    "baton.server.workflow.previewResume",
    "baton.server.checkpoint.show",
)

CAPABILITIES: dict[str, Any] = {
    "positionEncoding": POSITION_ENCODING,
    "textDocumentSync": {"openClose": True, "change": 2, "save": True},
    "completionProvider": {"triggerCharacters": ["[", ",", " ", "*", "/", "-"]},
    "hoverProvider": True,
    "definitionProvider": True,
    "referencesProvider": True,
    "documentSymbolProvider": True,
    "codeActionProvider": {
        "codeActionKinds": ["quickfix", "source.fixAll", "source.fixAll.baton"],
        "resolveProvider": False,
    },
    "codeLensProvider": {"resolveProvider": False},
    "workspaceSymbolProvider": {"resolveProvider": False},
    "foldingRangeProvider": True,
    "executeCommandProvider": {"commands": list(COMMANDS)},
    "inlayHintProvider": {"resolveProvider": False},
    "diagnosticProvider": {"interFileDependencies": True, "workspaceDiagnostics": True,
                           "identifier": "baton"},
    "workspace": {"workspaceFolders": {"supported": True, "changeNotifications": True},
                  "fileOperations": {}},
}


def _get(value: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def initialize_result(params: dict[str, Any]) -> dict[str, Any]:
    """The `InitializeResult` for a client's `initialize` params.

    What of the client pygls looks at, for these features: whether it stated `willSave` /
    `willSaveWaitUntil` (then the answer says false: Baton has no such handler). The
    position encoding is always UTF-16 (`server.BatonProtocol` tells pygls the same)."""
    capabilities = {**CAPABILITIES, "textDocumentSync": dict(CAPABILITIES["textDocumentSync"])}
    sync = _get(params, "capabilities", "textDocument", "synchronization")
    for key in ("willSave", "willSaveWaitUntil"):
        if _get(sync, key) is not None:
            capabilities["textDocumentSync"][key] = False
    return {"capabilities": capabilities,
            "serverInfo": {"name": SERVER_NAME, "version": __version__}}

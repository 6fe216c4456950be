"""One server on pygls' public API: no private pygls name is used or overridden in `lsp/`,
the `initialize` answer is what pygls builds from the registrations, and a real server
process, spoken to in bytes, answers and publishes its first diagnostics once.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pygls
import pytest
from pytest_lsp import client_capabilities

from tests.conftest import EXAMPLE
from tests.e2e.test_lifecycle import INITIALIZED, Reader, frame

TIMEOUT = 180.0  # a hang guard: every wait below is on a message
LSP = Path(__file__).resolve().parents[2] / "server" / "baton_lsp" / "lsp"
PLAN = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"
"""An example plan with seven findings, five with a fix."""

MAXIMAL = {
    "general": {"positionEncodings": ["utf-8", "utf-32", "utf-16"]},
    "textDocument": {"synchronization": {"willSave": True, "willSaveWaitUntil": False,
                                         "didSave": True},
                     "rename": {"prepareSupport": True},
                     "publishDiagnostics": {"versionSupport": True}},
    "workspace": {"fileOperations": {k: True for k in (
        "willCreate", "didCreate", "willRename", "didRename", "willDelete", "didDelete")},
        "workspaceFolders": True},
    "notebookDocument": {"synchronization": {"dynamicRegistration": True}},
}


# -- no private pygls names -----------------------------------------------------------------


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def pygls_private_names() -> set[str]:
    """Every `_`-prefixed function, class and attribute the installed pygls defines."""
    names: set[str] = set()
    for source in Path(pygls.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if _private(node.name):
                    names.add(node.name)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) \
                    and _private(node.attr):
                names.add(node.attr)
    return names


def private_uses(source: str, pygls_names: set[str], pygls_classes: set[str]) -> list[str]:
    """Where `source` reads, assigns, calls or defines a private pygls name (any attribute
    pygls defines privately), or defines any `_`-prefixed member in a class derived from a
    pygls class (a later pygls release may define the same name)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in pygls_names:
            found.append(f"line {node.lineno}: .{node.attr}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name in pygls_names:
            found.append(f"line {node.lineno}: def {node.name}")
        elif isinstance(node, ast.ClassDef) and any(
                isinstance(b, ast.Name) and b.id in pygls_classes for b in node.bases):
            for item in ast.walk(node):
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                        and _private(item.name):
                    found.append(f"line {item.lineno}: {node.name}.{item.name}")
                elif isinstance(item, ast.Attribute) and isinstance(item.ctx, ast.Store) \
                        and isinstance(item.value, ast.Name) and item.value.id == "self" \
                        and _private(item.attr):
                    found.append(f"line {item.lineno}: {node.name}.{item.attr} =")
    return found


def _pygls_classes() -> set[str]:
    import pygls.lsp.server
    import pygls.protocol
    import pygls.server

    return {name for module in (pygls.lsp.server, pygls.protocol, pygls.server)
            for name, value in vars(module).items() if isinstance(value, type)
            and value.__module__.startswith("pygls")}


def test_no_module_of_the_server_uses_a_private_pygls_name() -> None:
    names, classes = pygls_private_names(), _pygls_classes()
    assert {"_send_response", "_request_futures", "_send_data"} <= names
    assert {"LanguageServer", "LanguageServerProtocol"} <= classes
    found = {path.name: uses for path in sorted(LSP.glob("*.py"))
             if (uses := private_uses(path.read_text(encoding="utf-8"), names, classes))}
    assert not found, f"private pygls names in lsp/: {found}"


def test_the_scan_finds_overrides_and_private_calls() -> None:
    planted = (
        "from pygls.protocol import LanguageServerProtocol\n"
        "class P(LanguageServerProtocol):\n"
        "    def _send_response(self, msg_id, result=None, error=None):\n"
        "        self._send_data({})\n"
        "    def _mine(self):\n"
        "        self._cache = 1\n"
        "def debug(ls):\n"
        "    return len(ls.protocol._request_futures)\n")
    found = private_uses(planted, pygls_private_names(), _pygls_classes())
    assert sorted(found) == sorted([
        "line 3: def _send_response", "line 3: P._send_response", "line 4: ._send_data",
        "line 5: P._mine", "line 6: P._cache =", "line 8: ._request_futures"]), found


# -- a real server process ------------------------------------------------------------------


def capability_sets() -> dict[str, dict[str, Any]]:
    from pygls.protocol import default_converter

    unstructure = default_converter().unstructure
    return {"none": {}, "maximal": MAXIMAL,
            "visual-studio-code": unstructure(client_capabilities("visual-studio-code")),
            "neovim": unstructure(client_capabilities("neovim"))}


class Server:
    """`baton lsp` on pipes; server→client requests are answered with null."""

    def __init__(self, root: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "baton_lsp", "lsp"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        self.reader = Reader(fd, lambda n: os.read(fd, n))
        self.root = root

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(frame(m) for m in messages))
        self.proc.stdin.flush()

    def until(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            msg = self.reader.message(deadline)
            if "method" in msg and "id" in msg:
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": None})
            if predicate(msg):
                return msg

    def initialize(self, caps: dict[str, Any], request_id: int | str = 1) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": {
            "processId": os.getpid(), "rootUri": self.root.as_uri(), "capabilities": caps,
            "workspaceFolders": [{"uri": self.root.as_uri(), "name": "ws"}],
            "initializationOptions": {"settings": {"debounce": 0}}}})
        return self.until(lambda m: m.get("id") == request_id and "method" not in m)

    def open(self, path: Path) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": path.as_uri(), "languageId": "markdown", "version": 7,
                             "text": path.read_text(encoding="utf-8")}}}

    def indexed(self) -> dict[str, Any]:
        return self.until(lambda m: m.get("method") == "window/logMessage"
                          and "indexed" in m["params"]["message"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
            self.until(lambda m: m.get("id") == "bye")
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(TIMEOUT)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    dest = tmp_path / "ws"
    shutil.copytree(EXAMPLE, dest)
    monkeypatch.setenv("BATON_CACHE_DIR", str(tmp_path / "cache"))
    yield dest


@pytest.fixture
def server(workspace: Path) -> Iterator[Server]:
    started = Server(workspace)
    try:
        yield started
    finally:
        started.close()


@pytest.mark.parametrize("client", list(capability_sets()))
def test_the_capabilities_are_built_from_the_registrations(server: Server,
                                                           client: str) -> None:
    """pygls builds the answer from what the feature modules registered (no second list):
    every registered command and feature is advertised, the columns are UTF-16 whatever
    the client prefers, and edits are incremental."""
    from lsprotocol import types

    from baton_lsp.lsp.app import create_server

    registered = create_server().protocol.fm
    answer = server.initialize(capability_sets()[client])["result"]
    caps = answer["capabilities"]
    assert answer["serverInfo"]["name"] == "baton-lsp"
    assert caps["positionEncoding"] == "utf-16"
    assert caps["textDocumentSync"]["change"] == 2 and caps["textDocumentSync"]["openClose"]
    assert sorted(caps["executeCommandProvider"]["commands"]) == sorted(registered.commands)
    provider = {types.TEXT_DOCUMENT_HOVER: "hoverProvider",
                types.TEXT_DOCUMENT_CODE_LENS: "codeLensProvider",
                types.TEXT_DOCUMENT_INLAY_HINT: "inlayHintProvider",
                types.WORKSPACE_SYMBOL: "workspaceSymbolProvider",
                types.TEXT_DOCUMENT_DIAGNOSTIC: "diagnosticProvider"}
    for method, key in provider.items():
        assert (method in registered.features) == (key in caps), key
    assert caps["diagnosticProvider"]["identifier"] == "baton"


def test_the_first_document_gets_its_diagnostics_once(server: Server,
                                                      workspace: Path) -> None:
    plan = workspace / PLAN
    server.initialize(MAXIMAL)
    server.send(INITIALIZED, server.open(plan))
    first = server.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == plan.as_uri())["params"]
    assert first["version"] == 7 and len(first["diagnostics"]) >= 3
    assert any(d["data"].get("fix") for d in first["diagnostics"])
    server.indexed()  # indexing republishes what changed: the opened plan must not come again
    again = [m for m in server.reader.seen if m.get("method") == "textDocument/publishDiagnostics"
             and m["params"]["uri"] == plan.as_uri()]
    assert len(again) == 1


def test_a_pull_report_says_what_a_push_says(workspace: Path) -> None:
    """The pull report (typed, through lsprotocol) and the push (`wire.diagnostic_json`,
    written directly) of the same document come from one encoder: they are equal."""
    plan = workspace / PLAN
    got = []
    for caps in ({"textDocument": {"diagnostic": {"dynamicRegistration": False}}}, {}):
        server = Server(workspace)
        try:
            server.initialize(caps)
            server.send(INITIALIZED, server.open(plan))
            if caps:
                server.send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/diagnostic",
                             "params": {"textDocument": {"uri": plan.as_uri()}}})
                report = server.until(lambda m: m.get("id") == 2)["result"]
                assert report["kind"] == "full"
                got.append(report["items"])
            else:
                got.append(server.until(
                    lambda m: m.get("method") == "textDocument/publishDiagnostics"
                    and m["params"]["uri"] == plan.as_uri())["params"]["diagnostics"])
        finally:
            server.close()
    assert got[0] and got[0] == got[1]


def test_a_request_right_after_initialize_is_answered(server: Server) -> None:
    server.initialize({}, request_id="init")
    server.send(INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "workspace/symbol",
                              "params": {"query": "Phase"}})
    answer = server.until(lambda m: m.get("id") == 2)
    assert answer["result"], answer
    assert [m.get("id") for m in server.reader.seen].count("init") == 1


def test_an_initialize_that_cannot_be_read_gets_an_error(server: Server) -> None:
    server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                 "params": {"processId": "not a number", "capabilities": {}}})
    answer = server.until(lambda m: m.get("id") == 1)
    assert "error" in answer and "result" not in answer
    server.proc.kill()
    server.proc.wait(TIMEOUT)


def test_a_warm_start_publishes_each_file_once(workspace: Path) -> None:
    """The second start on an unchanged tree takes every file's findings from the result
    cache; either start publishes each file once and the same files."""
    published: list[list[str]] = []
    for _ in ("cold", "warm"):
        server = Server(workspace)
        try:
            server.initialize({})
            server.send(INITIALIZED)
            line = server.indexed()["params"]["message"]
            server.send({"jsonrpc": "2.0", "id": 2, "method": "workspace/symbol",
                         "params": {"query": "Phase"}})
            assert server.until(lambda m: m.get("id") == 2)["result"]
            uris = [m["params"]["uri"] for m in server.reader.seen
                    if m.get("method") == "textDocument/publishDiagnostics"]
            assert len(uris) == len(set(uris)), "a file was published twice"
            published.append(sorted(uris))
        finally:
            server.close()
    assert "(0 from the result cache)" not in line, line
    assert published[0] == published[1] and len(published[0]) >= 4


def test_a_typed_diagnostic_is_what_is_pushed() -> None:
    """`convert.to_diagnostic` (pull reports, code actions) structures
    `wire.diagnostic_json` (pushes): written back it is the same JSON, on every finding of
    the example workspace and the shared corpus."""
    from baton_lsp.lsp.convert import converter, to_diagnostic
    from baton_lsp.lsp.wire import diagnostic_json
    from baton_lsp.parse.text import split_lines
    from baton_lsp.rules.checker import check_paths
    from tests.conftest import CORPUS

    unstructure = converter().unstructure
    roots = [EXAMPLE] + ([CORPUS] if CORPUS.is_dir() else [])
    compared = 0
    for root in roots:
        for finding in check_paths([root]).findings:
            try:
                text = Path(finding.path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            lines = split_lines(text)
            assert unstructure(to_diagnostic(finding, lines)) == diagnostic_json(finding, lines)
            compared += 1
    assert compared > 100

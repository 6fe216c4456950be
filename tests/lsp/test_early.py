"""The early start (`baton_lsp.lsp.early`): a real server process, spoken to in bytes.

It answers `initialize` and publishes the first document's diagnostics before pygls and
lsprotocol are imported, so what it sends must be exactly what the server itself would send;
each test compares with the server started without it (`BATON_LSP_EARLY=0`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pytest_lsp import client_capabilities

from baton_lsp.lsp.early import ENV_SWITCH
from tests.conftest import EXAMPLE
from tests.e2e.test_lifecycle import INITIALIZED, Reader, frame

TIMEOUT = 30.0
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


def capability_sets() -> dict[str, dict[str, Any]]:
    from pygls.protocol import default_converter

    unstructure = default_converter().unstructure
    return {"none": {}, "maximal": MAXIMAL,
            "visual-studio-code": unstructure(client_capabilities("visual-studio-code")),
            "neovim": unstructure(client_capabilities("neovim"))}


class Server:
    """`baton lsp` on pipes; server→client requests are answered with null."""

    def __init__(self, root: Path, early: bool = True) -> None:
        env = {**os.environ, ENV_SWITCH: "1" if early else "0"}
        self.proc = subprocess.Popen([sys.executable, "-m", "baton_lsp", "lsp"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env)
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        self.reader = Reader(fd, lambda n: os.read(fd, n))
        self.root = root

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(frame(m) for m in messages))
        self.proc.stdin.flush()

    def until(self, predicate: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
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

    def close(self) -> None:
        if self.proc.poll() is None:
            self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
            self.until(lambda m: m.get("id") == "bye")
            self.send({"jsonrpc": "2.0", "method": "exit"})
            self.proc.wait(TIMEOUT)


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    dest = tmp_path / "ws"
    import shutil

    shutil.copytree(EXAMPLE, dest)
    monkeypatch.setenv("BATON_CACHE_DIR", str(tmp_path / "cache"))
    yield dest


def servers(root: Path) -> Iterator[Server]:
    for early in (True, False):
        server = Server(root, early)
        try:
            yield server
        finally:
            server.close()


@pytest.mark.parametrize("client", list(capability_sets()))
def test_the_early_answer_to_initialize_is_the_servers_own(workspace: Path,
                                                            client: str) -> None:
    caps = capability_sets()[client]
    answers = [server.initialize(caps)["result"] for server in servers(workspace)]
    assert answers[0] == answers[1], "capabilities.CAPABILITIES no longer says what pygls does"
    assert answers[0]["capabilities"]["positionEncoding"] == "utf-16"


def _first_publication(server: Server, path: Path) -> dict[str, Any]:
    return server.until(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                        and m["params"]["uri"] == path.as_uri())["params"]


def test_the_first_document_gets_the_servers_own_diagnostics_once(workspace: Path) -> None:
    plan = workspace / PLAN
    seen = []
    for server in servers(workspace):
        server.initialize(MAXIMAL)
        server.send(INITIALIZED, server.open(plan))
        seen.append(_first_publication(server, plan))
        # Indexing republishes what changed: the opened plan must not come again.
        server.until(lambda m: m.get("method") == "window/logMessage"
                     and "indexed" in m["params"]["message"])
        again = [m for m in server.reader.seen
                 if m.get("method") == "textDocument/publishDiagnostics"
                 and m["params"]["uri"] == plan.as_uri()]
        assert len(again) == 1
    early, late = seen
    assert early["version"] == 7 and len(early["diagnostics"]) >= 3
    assert any(d["data"].get("fix") for d in early["diagnostics"])
    assert early == late


def test_a_pull_client_is_answered_from_the_early_check(workspace: Path) -> None:
    plan = workspace / PLAN
    caps = {"textDocument": {"diagnostic": {"dynamicRegistration": False}}}
    reports = []
    for server in servers(workspace):
        server.initialize(caps)
        server.send(INITIALIZED, server.open(plan), {
            "jsonrpc": "2.0", "id": 2, "method": "textDocument/diagnostic",
            "params": {"textDocument": {"uri": plan.as_uri()}}})
        reports.append(server.until(lambda m: m.get("id") == 2)["result"])
        # The server is in charge afterwards: a hover is answered.
        server.send({"jsonrpc": "2.0", "id": 3, "method": "textDocument/hover", "params": {
            "textDocument": {"uri": plan.as_uri()}, "position": {"line": 0, "character": 2}}})
        assert "error" not in server.until(lambda m: m.get("id") == 3)
        assert not [m for m in server.reader.seen
                    if m.get("method") == "textDocument/publishDiagnostics"]
    assert reports[0]["kind"] == "full" and reports[0]["items"]
    assert reports[0] == reports[1]


def test_a_request_right_after_initialize_is_answered_by_the_server(workspace: Path) -> None:
    server = Server(workspace)
    try:
        server.initialize({}, request_id="init")
        server.send(INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "workspace/symbol",
                                  "params": {"query": "Phase"}})
        answer = server.until(lambda m: m.get("id") == 2)
        assert answer["result"], answer
        assert [m.get("id") for m in server.reader.seen].count("init") == 1
    finally:
        server.close()


def test_an_initialize_the_early_start_cannot_read_gets_the_servers_error(
        workspace: Path) -> None:
    server = Server(workspace)
    try:
        server.send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"processId": "not a number", "capabilities": {}}})
        answer = server.until(lambda m: m.get("id") == 1)
        assert "error" in answer and "result" not in answer
    finally:
        server.proc.kill()
        server.proc.wait(TIMEOUT)


def run_alone(session: str, report: str, root: Path, *after: dict[str, Any]
              ) -> tuple[str, str]:
    """`early.run` alone in a process on a pipe holding `initialize` (for `root`),
    `initialized` and `after`: (what it wrote, what `report` printed about its `start`)."""
    script = ("import sys\n"
              "from baton_lsp.lsp import early\n"
              f"{session}\n"
              "start = early.run(sys.stdin.buffer, sys.stdout.buffer, Session())\n"
              "start.writer.flush(10)\n"
              f"print({report}, file=sys.stderr)\n")
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": root.as_uri(), "capabilities": {}}},
        INITIALIZED, *after]
    done = subprocess.run([sys.executable, "-c", script],
                          input=b"".join(frame(m) for m in messages),
                          capture_output=True, timeout=TIMEOUT, check=True)
    return done.stdout.decode(), done.stderr.decode().strip().splitlines()[-1]


def test_the_early_start_imports_no_lsprotocol(workspace: Path) -> None:
    """Run alone on a pipe: it answers and publishes, and lsprotocol is still not loaded."""
    plan = workspace / PLAN
    out, report = run_alone(
        "Session = early.EarlySession",
        "sorted(m for m in sys.modules if m.split('.')[0] in ('lsprotocol', 'cattrs')), "
        "len(start.frames)", workspace,
        {"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": plan.as_uri(), "languageId": "markdown", "version": 1,
            "text": plan.read_text(encoding="utf-8")}}})
    assert out.count("Content-Length") == 2 and '"textDocument/publishDiagnostics"' in out
    assert report.split() == ["[]", "3"]  # all three for the server


def test_diagnostic_json_is_what_lsprotocol_writes() -> None:
    """`wire.diagnostic_json` (the early start's) against `convert.to_diagnostic` (the
    server's) on every finding of the example workspace and the shared corpus."""
    from pygls.protocol import default_converter

    from baton_lsp.lsp.convert import to_diagnostic
    from baton_lsp.lsp.wire import diagnostic_json
    from baton_lsp.parse.text import split_lines
    from baton_lsp.rules.checker import check_paths
    from tests.conftest import CORPUS

    unstructure = default_converter().unstructure
    roots = [EXAMPLE] + ([CORPUS] if CORPUS.is_dir() else [])
    compared = 0
    for root in roots:
        for finding in check_paths([root]).findings:
            try:
                text = Path(finding.path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                text = ""
            lines = split_lines(text)
            assert diagnostic_json(finding, lines) == unstructure(to_diagnostic(finding, lines))
            compared += 1
    assert compared > 100


def test_a_failure_in_the_early_start_hands_every_message_to_the_server(
        workspace: Path) -> None:
    """Reading the settings fails after `initialize` was answered: the server still gets
    every message once, in order, and knows the answer was sent."""
    out, report = run_alone(
        "class Session(early.EarlySession):\n"
        "    def initialize(self, *args):\n"
        "        raise RuntimeError('boom')",
        "[f.message.get('method') for f in start.frames], list(start.answered)", workspace,
        {"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    assert out.count('"result"') == 1  # the answer to initialize, once
    assert '"window/logMessage"' in out and "the server takes over" in out  # said at once
    assert report == "['initialize', 'initialized', 'shutdown'] [1]"


def _indexed(server: Server) -> dict[str, Any]:
    return server.until(lambda m: m.get("method") == "window/logMessage"
                        and "indexed" in m["params"]["message"])


def test_a_tree_the_result_cache_holds_is_indexed_before_the_server_loads(
        workspace: Path) -> None:
    """Second start on an unchanged tree: every file's findings come from the result
    cache, published by the early start, each once; the server then answers requests and
    does not index again. The first start (cold cache) leaves indexing to the server."""
    published: list[list[str]] = []
    for run in ("cold", "warm"):
        server = Server(workspace)
        try:
            server.initialize({})
            server.send(INITIALIZED)
            line = _indexed(server)["params"]["message"]
            assert line.startswith("baton_lsp.lsp.early: " if run == "warm"
                                   else "baton_lsp.lsp.diagnostics: "), line
            server.send({"jsonrpc": "2.0", "id": 2, "method": "workspace/symbol",
                         "params": {"query": "Phase"}})
            assert server.until(lambda m: m.get("id") == 2)["result"]
            uris = [m["params"]["uri"] for m in server.reader.seen
                    if m.get("method") == "textDocument/publishDiagnostics"]
            assert len(uris) == len(set(uris)), "a file was published twice"
            published.append(sorted(uris))
        finally:
            server.close()
        assert sum("indexed" in m["params"]["message"] for m in server.reader.seen
                   if m.get("method") == "window/logMessage") == 1
    assert published[0] == published[1] and len(published[0]) >= 4

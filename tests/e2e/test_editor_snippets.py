"""The Helix and Zed configurations of docs/editors.md: each snippet parses (TOML, JSON) and
names a command line that, started as those editors start it (found on PATH, in the
workspace, over stdio), is Baton's server: it answers `initialize`, publishes the example
plan's findings and exits cleanly on `shutdown`/`exit`. Neither editor is installable from
the package registries this project uses, so their own use of the snippet is not run."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from tests.conftest import EXAMPLE, REPO
from tests.e2e.test_lifecycle import Reader, frame

EDITORS_DOC = REPO / "docs" / "editors.md"
PLAN_REL = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"
DEADLINE_S = 60.0


def _block(language: str, marker: str) -> str:
    blocks = re.findall(rf"```{language}\n(.*?)```", EDITORS_DOC.read_text(encoding="utf-8"),
                        re.DOTALL)
    found: list[str] = [b for b in blocks if marker in b]
    assert len(found) == 1, f"{len(found)} {language} blocks in docs/editors.md hold {marker}"
    return found[0]


def _serve(argv: list[str], root: Path) -> None:
    """Run `argv` as an editor would and hold a short LSP session with it."""
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    exe = shutil.which(argv[0], path=env["PATH"])
    assert exe is not None, f"{argv[0]} is not on PATH"
    plan = root / PLAN_REL
    proc = subprocess.Popen([exe, *argv[1:]], cwd=root, env=env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    out = proc.stdout.fileno()
    try:
        reader = Reader(out, lambda n: os.read(out, n))
        deadline = time.monotonic() + DEADLINE_S

        def send(message: dict[str, object]) -> None:
            assert proc.stdin is not None
            proc.stdin.write(frame({"jsonrpc": "2.0", **message}))
            proc.stdin.flush()

        def answer(request_id: int) -> dict[str, object]:
            while True:
                msg = reader.message(deadline)
                if msg.get("id") == request_id and "method" not in msg:
                    return msg

        send({"id": 1, "method": "initialize",
              "params": {"processId": os.getpid(), "rootUri": root.as_uri(),
                         "capabilities": {}}})
        init = answer(1).get("result")
        assert isinstance(init, dict) and init.get("serverInfo", {}).get("name") == "baton-lsp"
        send({"method": "initialized", "params": {}})
        send({"method": "textDocument/didOpen",
              "params": {"textDocument": {"uri": plan.as_uri(), "languageId": "markdown",
                                          "version": 1,
                                          "text": plan.read_text(encoding="utf-8")}}})
        codes: set[str] = set()
        while "BTN101" not in codes:
            msg = reader.message(deadline)
            params = msg.get("params")
            if (msg.get("method") == "textDocument/publishDiagnostics"
                    and isinstance(params, dict) and params.get("uri") == plan.as_uri()):
                codes = {str(d.get("code")) for d in params["diagnostics"]}
        send({"id": 2, "method": "shutdown"})
        assert answer(2).get("error") is None
        send({"method": "exit"})
        assert proc.wait(timeout=DEADLINE_S) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=DEADLINE_S)


def test_helix_languages_toml_starts_the_server_in_a_workspace(tmp_path: Path) -> None:
    config = tomllib.loads(_block("toml", "[language-server.baton]"))
    server = config["language-server"]["baton"]
    languages = {entry["name"]: entry["language-servers"] for entry in config["language"]}
    assert "baton" in languages["markdown"] and "baton" in languages["json"], languages
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    # Helix matches the patterns against the file names of the root's entries.
    patterns = server["required-root-patterns"]
    assert any(fnmatch.fnmatch(p.name, pat) for p in root.iterdir() for pat in patterns)
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "README.md").write_text("# Not a workspace\n", encoding="utf-8")
    assert not any(fnmatch.fnmatch(p.name, pat)
                   for p in (tmp_path / "bare").iterdir() for pat in patterns)
    _serve([server["command"], *server["args"]], root)


def test_zed_settings_name_the_server_command(tmp_path: Path) -> None:
    settings = json.loads(_block("json", '"lsp"'))
    binary = settings["lsp"]["baton"]["binary"]
    assert settings["languages"]["Markdown"]["language_servers"][0] == "baton"
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    _serve([binary["path"], *binary["arguments"]], root)

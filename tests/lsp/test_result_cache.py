"""The language server's start-up indexing shares `baton check`'s result cache: a second
start takes unchanged files from it, and a file whose dependency changed meanwhile is
checked again (never a stale diagnostic)."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import make_test_lsp_client

from tests.conftest import EXAMPLE
from tests.lsp.conftest import TIMEOUT, wait_indexed

COMMAND = ".claude/commands/implement.md"
AGENT = ".claude/agents/implementation-executor.md"  # injected by the command: BTN313 if gone


async def index_once(root: Path) -> tuple[str, dict[str, list[types.Diagnostic]]]:
    """Start a server on `root`, wait for its indexing, shut it down: (its "indexed" log
    line, the diagnostics it published)."""
    client = make_test_lsp_client()  # it answers workspace/configuration with nothing
    await client.start_io(sys.executable, "-m", "baton_lsp", "lsp")
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(
                workspace=types.WorkspaceClientCapabilities(configuration=True)),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="ws")]))
        await wait_indexed(client)
        line = next(m.message for m in client.log_messages if "indexed" in m.message)
        return line, dict(client.diagnostics)
    finally:
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)


def from_cache(line: str) -> tuple[int, int]:
    """(files indexed, of which from the result cache) from the server's log line."""
    total = int(line.split("indexed ", 1)[1].split(" files", 1)[0])
    cached = int(line.rsplit("(", 1)[1].split(" from", 1)[0])
    return total, cached


def codes(diagnostics: dict[str, list[types.Diagnostic]], path: Path) -> set[str]:
    return {str(d.code) for d in diagnostics.get(path.as_uri(), [])}


@pytest.mark.asyncio
async def test_restart_reuses_results_and_sees_a_changed_dependency(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    line, first = await index_once(root)
    total, cached = from_cache(line)
    assert total > 5 and cached == 0
    assert "BTN313" not in codes(first, root / COMMAND)

    line, again = await index_once(root)
    assert from_cache(line) == (total, total)  # nothing changed: every file from the cache
    assert again == first

    (root / AGENT).unlink()  # the command's injected agent is gone
    line, after = await index_once(root)
    total_after, cached = from_cache(line)
    assert 0 < cached < total_after
    assert "BTN313" in codes(after, root / COMMAND)

    # The CLI reads what the server stored, and agrees with a check without the cache.
    baton = [sys.executable, "-m", "baton_lsp"]
    fresh = subprocess.run([*baton, "check", str(root), "--no-cache"], capture_output=True,
                           text=True, timeout=300, check=False)
    warm = subprocess.run([*baton, "-v", "check", str(root)], capture_output=True, text=True,
                          timeout=300, check=False)
    assert warm.stdout == fresh.stdout and "BTN313" in warm.stdout
    assert f"{total_after} of {total_after} files from the result cache" in warm.stderr

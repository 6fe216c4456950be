"""BTN002: the engine's preflight shown on the configuration file, before any workflow runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.conftest import wait_indexed
from tests.lsp.test_robustness import current

FAKE_CLAUDE = "#!/bin/sh\ntouch \"$0.ran\"\necho '2.1.331 (Claude Code)'\n"
"""Leaves `<itself>.ran` behind: proof that the server executed it."""


def _changed(client: LanguageClient, path: Path) -> None:
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=path.as_uri(), type=types.FileChangeType.Changed)]))


async def test_preflight_problems_appear_on_the_config_and_clear_when_fixed(
        client: LanguageClient, tmp_path: Path) -> None:
    root = client.workspace_root
    await wait_indexed(client)
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(FAKE_CLAUDE)
    claude.chmod(0o755)
    cfg = root / ".claude" / "baton.toml"
    cfg.write_text(
        "[workflow]\n"
        'runner = "claude"\n'
        'specs-dir = ".claude/specs"\n'
        "\n[workflow.agents.debug]\n"
        'runner = "codex"\n'
        "\n[workflow.claude]\n"
        f'executable = "{claude}"\n'
        "\n[workflow.codex]\n"
        f'executable = "{tmp_path / "bin" / "no-such-codex"}"\n', encoding="utf-8")
    _changed(client, cfg)
    uri = cfg.as_uri()
    diags = await current(client, uri, lambda d: len([x for x in d if x.code == "BTN002"]) >= 2)
    by_line = {d.range.start.line: d for d in diags if d.code == "BTN002"}
    # Claude Code refuses writes under .claude/: reported on the specs-dir setting
    assert "refuses writes under .claude/" in by_line[2].message
    assert 'specs-dir = "specs"' in by_line[2].message
    # the codex a role asks for is not installed: on its configured executable
    assert "codex CLI" in by_line[11].message and "npm install -g @openai/codex" in \
        by_line[11].message
    assert all(d.severity == types.DiagnosticSeverity.Warning for d in by_line.values())
    # the workspace is not trusted: the configured executable was looked at, never run
    assert not Path(f"{claude}.ran").exists()

    client.set_configuration({"trustWorkspace": True}, section="baton")
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings=None))

    async def ran() -> None:
        while not Path(f"{claude}.ran").exists():
            await asyncio.sleep(0.05)
    await asyncio.wait_for(ran(), 30)  # trusted: `--version` is asked once

    # the script runner launches no CLI: nothing to preflight, the warnings go
    cfg.write_text('[workflow]\nrunner = "script"\n', encoding="utf-8")
    _changed(client, cfg)
    await current(client, uri, lambda d: not [x for x in d if x.code == "BTN002"])


def test_a_problem_is_anchored_at_its_setting_in_pyproject_too() -> None:
    from baton_lsp.lsp.preflight import _anchor

    lines = ["[tool.baton]", "[tool.baton.workflow]", 'runner = "codex"', "",
             "[tool.baton.workflow.codex]", 'sandbox = "read-only"']
    assert _anchor(lines, "workflow.codex.sandbox") == 5  # the key
    assert _anchor(lines, "workflow.codex.model") == 4  # its table, the key is not there
    assert _anchor(lines, "workflow.gemini.skip-trust") == 2  # no table: the runner
    assert _anchor([], "workflow.specs-dir") == 0


def test_a_version_timeout_is_not_remembered(tmp_path: Path) -> None:
    """A CLI too slow once (a busy machine) is asked again on the next check, while a
    definite answer is kept per installed binary."""
    import pytest

    from baton_lsp.lsp.preflight import cached_version
    from baton_lsp.workflow.preflight import VersionTimeout

    busy = tmp_path / "busy"
    busy.touch()
    exe = tmp_path / "gemini"
    exe.write_text(f"#!/bin/sh\n[ -e '{busy}' ] && sleep 30\necho 0.61.0\n")
    exe.chmod(0o755)
    with pytest.raises(VersionTimeout, match="did not answer in 1 s"):
        cached_version(str(exe), {"PATH": "/usr/bin:/bin"}, 1)
    busy.unlink()
    assert cached_version(str(exe), {"PATH": "/usr/bin:/bin"}, 60) == "0.61.0"


async def test_a_claude_deny_rule_on_the_artifacts_is_a_btn002(client: LanguageClient,
                                                               tmp_path: Path) -> None:
    """The project's Claude Code settings deny the specs directory: shown on the Baton
    configuration before any workflow runs (nothing is executed for it)."""
    root = client.workspace_root
    await wait_indexed(client)
    claude = tmp_path / "bin" / "claude"
    claude.parent.mkdir()
    claude.write_text(FAKE_CLAUDE)
    claude.chmod(0o755)
    (root / ".claude" / "settings.json").write_text(
        '{"permissions": {"deny": ["Edit(./specs/**)"]}}', encoding="utf-8")
    cfg = root / ".claude" / "baton.toml"
    cfg.write_text(f'[workflow]\nrunner = "claude"\n\n[workflow.claude]\nexecutable = "{claude}"\n',
                   encoding="utf-8")
    _changed(client, cfg)
    diags = await current(client, cfg.as_uri(),
                          lambda d: any("Edit(./specs/**)" in x.message for x in d))
    (diag,) = [d for d in diags if "Edit(./specs/**)" in d.message]
    assert diag.code == "BTN002"
    assert f"Claude Code's project settings ({root / '.claude' / 'settings.json'}) deny " \
        "`Edit(./specs/**)`, which covers specs/" in diag.message
    assert not Path(f"{claude}.ran").exists()

"""The engine's preflight with real programs: a CLI that is slow to answer `--version` (issue
30, defect 7)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from baton_lsp.model.config import WorkflowSettings
from baton_lsp.workflow import preflight
from baton_lsp.workflow.failures import EngineError
from baton_lsp.workflow.request import RunRequest, validate_request
from baton_lsp.workspace.config import load_config
from tests.workflow.conftest import Workspace


def slow_cli(tmp_path: Path, seconds: float, name: str = "gemini") -> Path:
    """A real executable that answers `--version` after `seconds`, from a child that holds
    the output pipe too (as gemini's relaunched node process does)."""
    exe = tmp_path / "bin" / name
    exe.parent.mkdir(parents=True, exist_ok=True)
    exe.write_text(f"#!/bin/sh\nsleep {seconds} &\nwait\necho '0.61.0'\n", encoding="utf-8")
    exe.chmod(0o755)
    return exe


def _gemini_uses(root: Path, settings: WorkflowSettings) -> list[preflight.AgentUse]:
    return [preflight.agent_use(root, settings, "research", "gemini")[0]]


def test_a_cli_slower_than_twenty_seconds_is_waited_for(tmp_path: Path) -> None:
    """Under load `gemini --version` took 31-34 s; preflight used to give up after 20 s and
    call the CLI broken. The default now waits 90 s."""
    exe = slow_cli(tmp_path, 22)
    settings = WorkflowSettings.model_validate({"gemini": {"executable": str(exe)}})
    root = tmp_path / "ws"
    root.mkdir()
    env = {**os.environ, "GEMINI_API_KEY": "k", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    problems, versions = preflight.check(root, settings, _gemini_uses(root, settings),
                                         root / "specs", env)
    assert problems == []
    assert versions == {"gemini": "0.61.0"}


def test_a_cli_that_does_not_answer_in_time_is_called_slow_not_broken(ws: Workspace,
                                                                      tmp_path: Path) -> None:
    """`baton run` with a CLI that never answers in the configured time: the run stops in
    preflight saying how long it waited and which setting to raise, the CLI's process group
    (the child holding the pipe included) is killed, and nothing hangs."""
    exe = slow_cli(tmp_path, 600)
    ws.config(f'runner = "gemini"\nversion-timeout = 2\n\n[workflow.gemini]\n'
              f'executable = "{exe}"\n')
    start = time.monotonic()
    r = ws.baton("run", "Research rate limiting", "--scope", "research-only", "--topic", "x",
                 timeout=120)
    elapsed = time.monotonic() - start
    assert r.returncode == 1, r.stdout + r.stderr
    out = r.stdout + r.stderr
    assert "the gemini CLI" in out and "did not answer `--version` in 2 s" in out, out
    assert "version-timeout" in out and "does not run" not in out
    assert elapsed < 100  # the sleeping child did not keep preflight waiting on its pipe
    # refused before anything was written (issue 30, defect 13): no workflow record
    assert not (ws.root / ".claude/data/checkpoints").exists()


# --- Claude Code's own deny rules (defect 8) --------------------------------------------------

def _claude_setup(tmp_path: Path) -> tuple[Path, dict[str, str], Path]:
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    return root, env, tmp_path / "etc" / "claude-code" / "managed-settings.json"


def _deny(path: Path, *rules: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"deny": list(rules)}}), encoding="utf-8")


@pytest.mark.parametrize("where", ["user", "config-dir", "project", "local", "managed",
                                   "managed-drop-in"])
def test_a_deny_rule_in_any_settings_file_is_found(tmp_path: Path, where: str) -> None:
    root, env, managed = _claude_setup(tmp_path)
    settings = {"user": Path(env["HOME"]) / ".claude/settings.json",
                "config-dir": tmp_path / "cfg" / "settings.json",
                "project": root / ".claude/settings.json",
                "local": root / ".claude/settings.local.json",
                "managed": managed,
                "managed-drop-in": managed.parent / "managed-settings.d" / "10-x.json"}[where]
    if where == "config-dir":
        env["CLAUDE_CONFIG_DIR"] = str(settings.parent)
    _deny(settings, "Bash(rm *)", "Edit(./specs/**)")
    topic = root / "specs" / "001_login"
    problems = preflight.claude_denials(root, root / "specs", topic, env, managed)
    assert [p.message for p in problems] == [
        f"Claude Code's {where.split('-')[0].replace('config', 'user')} settings ({settings}) "
        "deny `Edit(./specs/**)`, which covers specs/.baton/classification_baton.json, an "
        "artifact this run writes (claude refuses to write it): remove the rule, or set "
        "[workflow] specs-dir to a directory it does not cover"]
    assert problems[0].setting == "workflow.specs-dir"


def test_each_kind_of_artifact_is_checked(tmp_path: Path) -> None:
    root, env, managed = _claude_setup(tmp_path)
    topic = root / "specs" / "007_login"
    for rule, shown in [("Edit(**/reports/**)", "specs/007_login/reports/001_login.md"),
                        ("Edit(specs/*/plans/*_plan.md)",
                         "specs/007_login/plans/007_login_plan.md"),
                        ("Read(//" + str(topic).lstrip("/") + "/summaries/**)",
                         "specs/007_login/summaries/007_workflow_summary.md"),
                        ("Edit(debug/)", "specs/007_login/debug/001_debug_report.md")]:
        _deny(root / ".claude/settings.json", rule)
        (message,) = [p.message for p in preflight.claude_denials(root, root / "specs", topic,
                                                                  env, managed)]
        assert f"deny `{rule}`, which covers {shown}," in message, message
    _deny(root / ".claude/settings.json", "Write")
    (message,) = [p.message for p in preflight.claude_denials(root, root / "specs", topic, env,
                                                              managed)]
    assert "deny `Write`: the Write tool every artifact is written with" in message


def test_rules_that_never_stop_a_write_pass(tmp_path: Path) -> None:
    root, env, managed = _claude_setup(tmp_path)
    _deny(Path(env["HOME"]) / ".claude/settings.json", "Edit", "Edit(*)", "Write(./specs/**)",
          "Edit(/specs/**)", "Edit(./src/**)", "Bash", "Read(*.env)")
    assert preflight.claude_denials(root, root / "specs", None, env, managed) == []


@pytest.mark.parametrize("text", ["{not json", '["a list"]', '{"permissions": {"deny": "Edit"}}',
                                  '{"permissions": {"deny": [1, null, {"x": 2}]}}',
                                  '{"permissions": []}', "\udcff"])
def test_malformed_settings_are_a_note_not_a_traceback(tmp_path: Path, text: str) -> None:
    root, env, managed = _claude_setup(tmp_path)
    settings = root / ".claude/settings.json"
    settings.write_bytes(text.encode("utf-8", "surrogateescape"))
    notes: list[str] = []
    assert preflight.claude_denials(root, root / "specs", None, env, managed, notes) == []
    if text in ("{not json", "\udcff", '{"permissions": {"deny": "Edit"}}'):
        assert len(notes) == 1 and str(settings) in notes[0], notes
    else:
        assert notes == []


def test_a_settings_path_that_is_a_directory_is_a_note(tmp_path: Path) -> None:
    root, env, managed = _claude_setup(tmp_path)
    (root / ".claude/settings.local.json").mkdir()
    notes: list[str] = []
    assert preflight.claude_denials(root, root / "specs", None, env, managed, notes) == []
    assert len(notes) == 1 and "settings.local.json" in notes[0]


def test_only_a_claude_run_is_checked(tmp_path: Path) -> None:
    root, env, managed = _claude_setup(tmp_path)
    _deny(root / ".claude/settings.json", "Edit(./specs/**)")
    exe = slow_cli(tmp_path, 0, "codex")
    settings = WorkflowSettings.model_validate({"codex": {"executable": str(exe)},
                                                "claude": {"executable": str(exe)}})
    env["OPENAI_API_KEY"] = env["ANTHROPIC_API_KEY"] = "k"
    for runner, found in (("codex", False), ("claude", True)):
        uses = [preflight.agent_use(root, settings, "research", runner)[0]]
        problems, _ = preflight.check(root, settings, uses, root / "specs", env,
                                      managed=managed)
        assert any("deny `Edit(./specs/**)`" in p.message for p in problems) is found


@pytest.mark.parametrize("how", ["auth_json", "xdg_data_auth_json", "global_config",
                                 "xdg_config_jsonc", "project_config", "config_env",
                                 "config_content", "provider_key", "none", "no_provider",
                                 "fifo"])
def test_opencode_credentials(tmp_path: Path, how: str) -> None:
    """Where opencode keeps a login or a configured provider (its XDG data and config
    directories, OPENCODE_CONFIG(_CONTENT), the project's opencode.json, a provider's key
    variable); a configuration without `provider`, or a FIFO in its place, is none."""
    home, root = tmp_path / "home", tmp_path / "ws"
    root.mkdir()
    env = {"HOME": str(home)}
    provider = '{"provider": {"anthropic": {"options": {"apiKey": "k"}}}}'

    def put(path: Path, text: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    if how == "auth_json":
        put(home / ".local/share/opencode/auth.json", '{"anthropic": {"type": "api"}}')
    elif how == "xdg_data_auth_json":
        env["XDG_DATA_HOME"] = str(tmp_path / "data")
        put(tmp_path / "data/opencode/auth.json", "{}")
    elif how == "global_config":
        put(home / ".config/opencode/opencode.json", provider)
    elif how == "xdg_config_jsonc":
        env["XDG_CONFIG_HOME"] = str(tmp_path / "cfg")
        put(tmp_path / "cfg/opencode/opencode.jsonc", "// mine\n" + provider)
    elif how == "project_config":
        put(root / "opencode.json", provider)
    elif how == "config_env":
        put(tmp_path / "elsewhere.json", provider)
        env["OPENCODE_CONFIG"] = str(tmp_path / "elsewhere.json")
    elif how == "config_content":
        env["OPENCODE_CONFIG_CONTENT"] = provider
    elif how == "provider_key":
        env["OPENROUTER_API_KEY"] = "k"
    elif how == "no_provider":
        put(home / ".config/opencode/opencode.json", '{"model": "anthropic/x"}')
    elif how == "fifo":
        (home / ".config/opencode").mkdir(parents=True)
        os.mkfifo(home / ".config/opencode/opencode.json")
    start = time.monotonic()
    found = preflight.has_credentials("opencode", root, env)
    assert found is (how not in ("none", "no_provider", "fifo"))
    assert time.monotonic() - start < 30  # a FIFO is refused, never waited on


def test_a_role_table_without_an_agent_is_not_looked_up_as_a_file(tmp_path: Path) -> None:
    """`[workflow.agents.research]` with only a model keeps the role's default agent file;
    request validation used to look the agent file `None` up (a TypeError traceback)."""
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    config = root / ".claude" / "baton.toml"
    config.write_text('[workflow.agents.research]\nmodel = "opus"\n', encoding="utf-8")
    settings = load_config(root).workflow
    assert settings.role("research").model == "opus"
    validate_request(root, settings, RunRequest("add a login page"))
    config.write_text('[workflow.agents.research]\nagent = "nowhere"\n', encoding="utf-8")
    with pytest.raises(EngineError, match="no such agent file"):
        validate_request(root, load_config(root).workflow, RunRequest("add a login page"))

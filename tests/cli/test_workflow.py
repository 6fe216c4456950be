"""`baton run|resume --set TABLE.KEY=VALUE`: per-run configuration overrides (the editor passes
its workflow settings this way)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.cli.workflow import parse_settings
from baton_lsp.errors import ConfigError
from baton_lsp.workspace.config import load_config

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"


def test_values_are_toml_and_bare_words_are_strings() -> None:
    got = parse_settings(["workflow.timeout=12.5", "workflow.runner=script",
                          "workflow.max-parallel=2", "workflow.command=[\"a\", \"b\"]"])
    assert got == {"workflow": {"timeout": 12.5, "runner": "script", "max-parallel": 2,
                                "command": ["a", "b"]}}


@pytest.mark.parametrize("items", [["nodot"], ["=1"], ["workflow.=1"], ["a..b=1"],
                                   ["workflow.claude=1", "workflow.claude.model=x"],
                                   ["workflow.claude.model=x", "workflow.claude=1"]])
def test_malformed_items_are_config_errors(items: list[str]) -> None:
    with pytest.raises(ConfigError, match="--set"):
        parse_settings(items)


def test_nested_tables_reach_the_runner_settings(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    got = parse_settings(["workflow.claude.fallback-model=haiku",
                          "workflow.gemini.skip-trust=true", "workflow.timeout=9"])
    assert got == {"workflow": {"claude": {"fallback-model": "haiku"},
                                "gemini": {"skip-trust": True}, "timeout": 9}}
    config = load_config(ws, got)
    assert config.workflow.claude.fallback_model == "haiku"
    assert config.workflow.gemini.skip_trust is True
    assert config.workflow.timeout == 9
    assert config.workflow.runner == "script"  # the file's value survives


def test_overrides_merge_into_the_workflow_table_one_level_deep(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    base = load_config(ws)
    got = load_config(ws, parse_settings(["workflow.max-parallel=1"]))
    assert got.workflow.max_parallel == 1
    assert got.workflow.runner == base.workflow.runner == "script"  # the file's value survives


def test_bad_value_is_a_clear_error_not_a_traceback(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "run", "x", "--workspace", str(ws),
                           "--set", "workflow.timeout=soon"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2
    assert "workflow.timeout" in proc.stderr and "Traceback" not in proc.stderr


def test_run_survives_its_event_reader_going_away(tmp_path: Path) -> None:
    """An editor that crashes closes the pipe `baton run --events` prints to: the workflow
    must finish anyway (EPIPE is not a reason to die)."""
    import json

    from tests.conftest import SCRIPTED_WORKFLOW_CONFIG

    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    (ws / ".claude" / "baton.toml").write_text(SCRIPTED_WORKFLOW_CONFIG)
    (ws / ".claude" / "baton-script.json").write_text(json.dumps({"research.1": {"sleep": 1}}))
    proc = subprocess.Popen([sys.executable, "-m", "baton_lsp", "run", "add a thing",
                             "--scope", "research-and-plan", "--complexity", "1", "--events",
                             "--workspace", str(ws)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    first = json.loads(proc.stdout.readline())
    assert first["event"]
    proc.stdout.close()  # the reader is gone while research.1 sleeps
    proc.stderr.close()
    assert proc.wait(timeout=60) == 0
    status = subprocess.run([sys.executable, "-m", "baton_lsp", "status", "--json",
                             "--workspace", str(ws)], capture_output=True, text=True,
                            timeout=60)
    (row,) = json.loads(status.stdout)
    assert row["status"] == "complete"


def test_example_workspace_runs_the_coordination_roles_offline(tmp_path: Path) -> None:
    """The README's first command: the example's classifier agent decides, the summary
    follows; with --set the supervisor/planning and iteration roles run too."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    base = [sys.executable, "-m", "baton_lsp", "run", "--workspace", str(ws)]
    r = subprocess.run([*base, "Add rate limiting to the login endpoint"], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "classified (agent): full-implementation, 3 research topic(s)" in r.stdout
    assert "━━ Next steps" in r.stdout
    r = subprocess.run([*base, "A comprehensive review of the retry logic", "--set",
                        "workflow.research-mode=planning", "--set",
                        "workflow.implement-mode=iterations"], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "INVOCATION_PLAN_READY: 4" in r.stdout and "iteration 1: phases 1, 2, 3, 4 done" \
        in r.stdout


@pytest.mark.parametrize(("item", "expected"), [
    ("workflow.research-mode=bogus", "'supervisor', 'planning' or 'agent'"),
    ("workflow.implement-mode=loop", "'waves' or 'iterations'"),
    ("workflow.max-iterations=0", "max-iterations"),
])
def test_bad_coordination_settings_are_clear_errors(tmp_path: Path, item: str,
                                                    expected: str) -> None:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    r = subprocess.run([sys.executable, "-m", "baton_lsp", "run", "x", "--workspace", str(ws),
                        "--set", item], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and expected in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("argv", [
    ["run", "--id", "../../x", "Add a thing"],
    ["resume", "../../x"],
    ["cancel", "../x"],
    ["checkpoints", "a/../../b"],
    ["adopt", "bash:whatever", "--id", "../../x"],
], ids=["run", "resume", "cancel", "checkpoints", "adopt"])
def test_an_invalid_workflow_id_is_a_usage_error(tmp_path: Path, argv: list[str]) -> None:
    """`baton run --id ../../x` said "internal error … report it"; an id that could name a
    path outside the checkpoint directory is a usage error (exit 2) naming the rule."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", *argv, "-w", str(ws)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc
    assert "invalid workflow id" in proc.stderr and "internal error" not in proc.stderr, \
        proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "x").exists() and not (ws.parent / "x").exists()

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


@pytest.mark.parametrize("item", ["nodot", "=1", "a.b.c=1", "workflow.=1"])
def test_malformed_items_are_config_errors(item: str) -> None:
    with pytest.raises(ConfigError, match="--set"):
        parse_settings([item])


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

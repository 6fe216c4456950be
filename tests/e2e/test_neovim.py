"""End-to-end: headless Neovim as a real LSP client against `python -m baton_lsp lsp`.

pytest-lsp (tests/lsp) replays recorded client capabilities; this drives an actual client,
which catches what a replay cannot: start-up over real stdio, position conversion, how
the editor turns our publications into `vim.diagnostic` items, and a clean shutdown.
Works with Debian bookworm's neovim 0.7.2 and with 0.8+ (`vim.lsp.start`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
LUA = HERE / "diagnostics.lua"
SERVER_CMD = [sys.executable, "-m", "baton_lsp", "lsp"]
WAIT_MS = 30_000
NVIM_TIMEOUT_S = 60

CYCLE_REL = ".claude/specs/001_x/plans/001-x-plan.md"
CIRCULAR = """# Circular Dependency Plan Test

## Implementation Phases

### Phase 1: Module A
**Dependencies**: [3]

### Phase 2: Module B
**Dependencies**: [1]

### Phase 3: Module C
**Dependencies**: [2]
"""

CORPUS_REL = ".claude/specs/062_subagent_phase_update_debug/plans/001-debug-strategy.md"


@pytest.fixture
def nvim() -> str:
    """The `nvim` executable; the only reason these tests skip is its absence."""
    exe = shutil.which("nvim")
    if exe is None:
        pytest.skip("nvim is not on PATH (install it with `apt-get install neovim`)")
    return exe


def run_nvim(nvim: str, root: Path, file: Path, scratch: Path) -> dict[str, Any]:
    """Open `file` in headless Neovim with the Baton server attached; return what it saw.

    All of Neovim's state, log and cache directories point into `scratch`, so the run
    never reads a user config or writes under $HOME.
    """
    out = scratch / "result.json"
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(scratch / var.lower())
    env.update(
        NVIM_LOG_FILE=str(scratch / "nvim.log"),
        BATON_E2E_FILE=str(file),
        BATON_E2E_ROOT=str(root),
        BATON_E2E_OUT=str(out),
        BATON_E2E_TIMEOUT_MS=str(WAIT_MS),
        BATON_E2E_CMD=json.dumps(SERVER_CMD),
    )
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-u", str(LUA)],
                          env=env, cwd=root, capture_output=True, text=True,
                          timeout=NVIM_TIMEOUT_S, check=False)
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-4000:]}"
                     for p in sorted(scratch.rglob("*.log")))
    context = f"nvim rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr}\n{logs}"
    assert out.is_file(), f"nvim wrote no result\n{context}"
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in result, f"{result['error']}\n{context}"
    assert proc.returncode == 0, context
    assert not result["timed_out"], f"no diagnostics for the open buffer\n{result}\n{context}"
    assert result["stopped"], f"server did not stop after shutdown/exit\n{context}"
    assert result.get("server_exit", {}).get("code") == 0, f"{result}\n{context}"
    return result


def test_cycle_reported_once_on_the_dependency_of_phase_1(
        nvim: str, tmp_path: Path) -> None:
    """The classic circular fixture: one finding for the whole cycle, anchored where the
    cycle is entered, with byte columns as Neovim stores them."""
    root = tmp_path / "ws"
    plan = root / CYCLE_REL
    plan.parent.mkdir(parents=True)
    plan.write_text(CIRCULAR, encoding="utf-8")
    scratch = tmp_path / "nvim"
    scratch.mkdir()

    result = run_nvim(nvim, root, plan, scratch)

    cycles = [d for d in result["diagnostics"] if d["code"] == "BTN103"]
    assert len(cycles) == 1, result
    [cycle] = cycles
    assert "1 → 3 → 2 → 1" in cycle["message"]
    line = CIRCULAR.split("\n").index("**Dependencies**: [3]")  # Phase 1's own line
    assert (cycle["line"], cycle["col"]) == (line, CIRCULAR.split("\n")[line].index("3"))
    assert cycle["source"] == "baton"
    assert cycle["severity"] == 1  # vim.diagnostic.severity.ERROR


def _cli_findings(root: Path) -> list[dict[str, Any]]:
    """`baton check --format json` on the same tree: the reference the editor must match."""
    proc = subprocess.run([sys.executable, "-m", "baton_lsp", "check", "--format", "json",
                           "--exit-zero", str(root)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    findings: list[dict[str, Any]] = json.loads(proc.stdout)
    return findings


def test_corpus_plan_matches_the_cli_without_phantom_phases(
        nvim: str, corpus: Path, tmp_path: Path) -> None:
    """A real plan whose heredocs contain `### Phase` headings of other plans: the editor
    must see what the CLI sees and no phantom phases (duplicates, cycles) from them."""
    root = tmp_path / "ws"
    plan = root / CORPUS_REL
    plan.parent.mkdir(parents=True)
    shutil.copyfile(corpus / CORPUS_REL, plan)
    scratch = tmp_path / "nvim"
    scratch.mkdir()

    result = run_nvim(nvim, root, plan, scratch)
    diags = result["diagnostics"]

    # Phase headings inside the plan's heredoc examples are not phases of this plan.
    assert not [d for d in diags if d["code"] in ("BTN103", "BTN110")], diags
    # Verified with `baton check`: the research report link has no target in the copy.
    [link] = [d for d in diags if d["code"] == "BTN130"]
    assert (link["line"], link["col"]) == (9, 26)
    assert "../reports/001-root-cause-analysis.md" in link["message"]
    assert link["source"] == "baton" and link["severity"] == 2  # WARN
    # Everything else the editor shows is what the CLI reports for the same file.
    text = plan.read_text(encoding="utf-8").split("\n")
    cli = sorted((f["code"], f["location"]["line"] - 1,
                  len(text[f["location"]["line"] - 1][:f["location"]["column"] - 1]
                      .encode("utf-8")))  # nvim columns are byte offsets
                 for f in _cli_findings(root))
    assert sorted((d["code"], d["line"], d["col"]) for d in diags) == cli


def test_start_a_workflow_and_read_its_final_status(nvim: str, tmp_path: Path) -> None:
    """The editor path of a workflow with a real client: `workspace/executeCommand`
    `baton.server.workflow.start` (trusted through init_options), the server's
    `baton/workflowChanged` notifications, then `baton.server.workflow.status`."""
    from tests.conftest import EXAMPLE, SCRIPTED_WORKFLOW_CONFIG

    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    (root / ".claude" / "baton.toml").write_text(SCRIPTED_WORKFLOW_CONFIG, encoding="utf-8")
    scratch = tmp_path / "nvim"
    scratch.mkdir()
    out = scratch / "result.json"
    env = dict(os.environ)
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME"):
        env[var] = str(scratch / var.lower())
    env.update(NVIM_LOG_FILE=str(scratch / "nvim.log"), BATON_E2E_ROOT=str(root),
               BATON_E2E_OUT=str(out), BATON_E2E_TIMEOUT_MS=str(WAIT_MS),
               BATON_E2E_CMD=json.dumps(SERVER_CMD))
    proc = subprocess.run([nvim, "--headless", "--clean", "-n", "-u",
                           str(HERE / "workflow.lua")], env=env, cwd=root,
                          capture_output=True, text=True, timeout=NVIM_TIMEOUT_S, check=False)
    context = f"nvim rc={proc.returncode}\nstdout={proc.stdout}\nstderr={proc.stderr}"
    assert out.is_file(), context
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    assert "error" not in result, f"{result['error']}\n{context}"
    assert not result["timed_out"], result
    wid = result["started"]["workflow_id"]
    assert result["status"]["workflow_id"] == wid
    assert result["status"]["status"] == "complete" and result["status"]["state"] == "complete"
    kinds = [c["event"]["event"] for c in result["changed"] if c["workflow_id"] == wid]
    assert "transition" in kinds and kinds[-1] in ("finished", "checkpoint"), kinds
    assert result["stopped"] and result["server_exit"]["code"] == 0, result

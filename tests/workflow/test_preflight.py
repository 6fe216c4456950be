"""The engine's preflight with real programs: a CLI that is slow to answer `--version` (issue
30, defect 7)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from baton_lsp.model.config import WorkflowSettings
from baton_lsp.workflow import preflight
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
    (wid,) = [p for p in (ws.root / ".claude/data/checkpoints").iterdir() if p.is_dir()]
    cp = json.loads(sorted(wid.glob("[0-9]*.json"))[-1].read_text())
    assert cp["baton"]["failure"]["class"] == "fatal"
    problems = cp["baton"]["failure"]["context"]["problems"]
    assert [p["setting"] for p in problems] == ["workflow.version-timeout"]

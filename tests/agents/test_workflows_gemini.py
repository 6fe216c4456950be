"""Whole workflows through the real `gemini` binary with Baton's defaults.

The example workspace, `--set workflow.runner=gemini` and a gemini model in
`[workflow.gemini]` (front-matter models are Claude models); gemini's own settings point it
at the fake API. Baton passes `--skip-trust` (it only launches agents where the user trusts
the workspace) and `--approval-mode auto_edit`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.agents import fake_gemini as fg
from tests.agents.clis import cli_path
from tests.agents.model import gemini_agent

GEMINI = cli_path("gemini")
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                        "maxAttempts": 1}}


@dataclass
class Box:
    ws: Path
    env: dict[str, str]

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "baton_lsp", "run", *args, "--set", "workflow.runner=gemini",
             "--set", "workflow.gemini.model=gemini-2.5-flash", "-w", str(self.ws)],
            capture_output=True, text=True, env=self.env, timeout=400, check=False)

    def checkpoint(self) -> dict[str, Any]:
        (wid,) = [p for p in (self.ws / ".claude/data/checkpoints").iterdir() if p.is_dir()]
        return json.loads(sorted(wid.glob("[0-9]*.json"))[-1].read_text())


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Box]:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {"PATH": f"{Path(GEMINI).parent}{os.pathsep}{os.environ['PATH']}", "HOME": str(home),
           "TMPDIR": str(tmp_path), "GEMINI_API_KEY": "fake-key", "LANG": "C.UTF-8",
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    yield Box(ws, env)


def test_research_and_plan_completes_through_real_gemini(box: Box) -> None:
    with fg.FakeGemini(gemini_agent()) as api:  # type: ignore[arg-type]
        box.env["GOOGLE_GEMINI_BASE_URL"] = api.url
        r = box.run("Research rate limiting and plan the login throttle",
                    "--scope", "research-and-plan", "--complexity", "1", "--topic", "limits")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    steps = cp["baton"]["steps"]
    for sid in ("research.1", "plan"):
        assert steps[sid]["status"] == "done" and Path(steps[sid]["artifact"]).is_file()
    chats = [req for req in api.requests if req.action == "streamGenerateContent"]
    assert chats and {req.model for req in chats} == {"gemini-2.5-flash"}
    usage = cp["baton"]["usage"]["total"]
    assert usage["input_tokens"] > 0 and usage["total_tokens"] > 0


def test_an_untrusted_folder_is_fatal_with_the_fix(box: Box) -> None:
    with fg.FakeGemini(gemini_agent()) as api:  # type: ignore[arg-type]
        box.env["GOOGLE_GEMINI_BASE_URL"] = api.url
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.gemini.skip-trust=false")
    assert r.returncode == 1
    cp = box.checkpoint()
    # preflight sees that gemini would refuse the folder, before any agent runs
    assert "gemini does not trust this folder" in cp["last_error"]
    assert "skip-trust" in cp["last_error"] and not cp["baton"]["steps"]

"""Whole workflows through the real `gemini` binary with Baton's defaults.

The example workspace, `--set workflow.runner=gemini` and a gemini model in
`[workflow.gemini]` (front-matter models are Claude models); gemini's own settings point it
at the fake API. Baton passes `--skip-trust` (it only launches agents where the user trusts
the workspace) and `--approval-mode auto_edit`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.agents import fake_gemini as fg
from tests.agents.clis import cli_path
from tests.agents.model import gemini_agent
from tests.agents.workspace import Box

GEMINI = cli_path("gemini")
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False,
                        "maxAttempts": 1}}


@pytest.fixture
def box(tmp_path: Path) -> Box:
    box = Box.create(tmp_path, "gemini", GEMINI, GEMINI_API_KEY="fake-key")
    box.settings = ("workflow.gemini.model=gemini-2.5-flash",)
    (box.home / ".gemini").mkdir()
    (box.home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS))
    return box


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

"""Whole workflows through the real `codex` binary with Baton's defaults.

The example workspace and `--set workflow.runner=codex`; codex's own configuration (its
`CODEX_HOME/config.toml`) points it at the fake Responses API, as a user's would point it at
theirs. Codex writes through its shell tool in the `workspace-write` sandbox.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents import fake_openai as fo
from tests.agents.clis import cli_path
from tests.agents.model import openai_agent
from tests.agents.workspace import EXAMPLE_PLAN, Box

CODEX = cli_path("codex")


@pytest.fixture
def box(tmp_path: Path) -> Box:
    box = Box.create(tmp_path, "codex", CODEX, FAKE_OPENAI_KEY="sk-fake")
    (box.home / ".codex").mkdir()
    box.env["CODEX_HOME"] = str(box.home / ".codex")
    return box


def serve(box: Box, responder: fo.Responder) -> fo.FakeOpenAI:
    api = fo.FakeOpenAI(responder)
    config = fo.codex_config(api.base_url, model="gpt-5.5")
    (Path(box.env["CODEX_HOME"]) / "config.toml").write_text(config)
    return api


def test_research_and_plan_completes_through_real_codex(box: Box) -> None:
    with serve(box, openai_agent()) as api:
        r = box.run("Research rate limiting and plan the login throttle",
                    "--scope", "research-and-plan", "--complexity", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    steps = cp["baton"]["steps"]
    for sid in ("research.1", "research.2", "plan"):
        assert steps[sid]["status"] == "done" and Path(steps[sid]["artifact"]).is_file()
    # Claude model names from the front matter never reach codex: its own model does.
    assert {req.model for req in api.turns} == {"gpt-5.5"}
    usage = cp["baton"]["usage"]["total"]
    assert usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert cp["baton"]["agent_clis"]["codex"].startswith("codex-cli 0.")


def test_implement_only_on_the_example_plan(box: Box) -> None:
    with serve(box, openai_agent()):
        r = box.run("Implement the payment retry plan", "--scope", "implement-only",
                    "--plan", EXAMPLE_PLAN)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    done = [s for sid, s in cp["baton"]["steps"].items() if sid.startswith("implement.")]
    assert done and all(s["status"] == "done" for s in done)


@pytest.mark.parametrize(("status", "failure"), [(401, "fatal"), (500, "transient")])
def test_api_failures_are_classified(box: Box, status: int, failure: str) -> None:
    with serve(box, fo.failing(status)):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.attempts=1", "--set", "workflow.state-retries=0")
    assert r.returncode == 1
    failed = box.failed_steps()
    assert failed and all(s["failure"] == failure for s in failed), failed

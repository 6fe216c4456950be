"""A run's identity is pinned (issue 30): started with `--runner claude` in the example
workspace, whose configuration says `runner = "script"`, a resume goes on with the real
claude binary (against the fake Anthropic API, the only double) — not with the scripted demo
agents — unless the resume's own `--runner`/`--set` say otherwise, which it prints."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic
from tests.agents.model import anthropic_agent
from tests.agents.workspace import Box

CLAUDE = cli_path("claude")


@pytest.fixture
def box(tmp_path: Path) -> Box:
    return Box.create(tmp_path, "claude", CLAUDE, ANTHROPIC_API_KEY="test-key",
                      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                      CLAUDE_CODE_MAX_RETRIES="1")


def _stopped_by_budget(box: Box, api: FakeAnthropic) -> dict[str, Any]:
    """`baton run --runner claude` (no --set runner: the file says script) stopped by a
    tiny budget after its first paid step: a failed, resumable workflow."""
    box.env["ANTHROPIC_BASE_URL"] = api.url
    r = box.baton("run", "Research rate limiting", "--scope", "research-only",
                  "--complexity", "2", "--runner", "claude",
                  "--set", "workflow.max-budget-usd=0.0001")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "failed" and "budget reached" in cp["last_error"]
    identity = cp["baton"]["identity"]
    assert identity["runner"] == "claude" and identity["runner_from"] == "--runner"
    assert identity["settings"]["max-budget-usd"] == 0.0001
    assert identity["settings"]["runner"] == "script"  # the file's value, not what runs
    assert identity["overrides"] == {"max-budget-usd": 0.0001}
    assert identity["models"]["research"]  # the research agent's front-matter model
    return cp


def _checkpoint_count(box: Box, wid: str) -> int:
    return len(list((box.ws / ".claude/data/checkpoints" / wid).glob("[0-9]*.json")))


def test_resume_keeps_the_runner_the_run_started_with(box: Box) -> None:
    with FakeAnthropic(anthropic_agent()) as api:
        cp = _stopped_by_budget(box, api)
        before = len(api.messages)
        r = box.baton("resume", cp["checkpoint_id"], "--set", "workflow.max-budget-usd=5")
        after = len(api.messages)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "runner: claude (from the checkpoint)" in r.stdout
    assert "setting workflow.max-budget-usd = 5 (overriding 0.0001 from the checkpoint)" \
        in r.stdout
    assert after > before  # the real claude did the rest, not the scripted agents
    assert not (box.ws / ".claude/tmp/scripted_runs.log").exists()
    done = box.checkpoint()
    assert done["status"] == "complete"
    research = [s for sid, s in done["baton"]["steps"].items() if sid.startswith("research.")]
    assert research and all(s["status"] == "done" and s["usage"] for s in research)
    identity = done["baton"]["identity"]
    assert identity["runner"] == "claude" and identity["settings"]["max-budget-usd"] == 5
    assert identity["overrides"] == {"max-budget-usd": 5}


def test_resume_runner_flag_overrides_the_checkpoint_and_says_so(box: Box) -> None:
    with FakeAnthropic(anthropic_agent()) as api:
        cp = _stopped_by_budget(box, api)
        wid = cp["checkpoint_id"]
        # codex is installed beside claude, but has no credentials here: preflight refuses,
        # after saying which runner it checked, and the workflow is left as it was
        n = _checkpoint_count(box, wid)
        r = box.baton("resume", wid, "--runner", "codex", "--set", "workflow.max-budget-usd=5")
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        assert "runner: codex (overriding claude from the checkpoint)" in r.stdout
        assert "the codex CLI has no credentials" in r.stderr
        assert _checkpoint_count(box, wid) == n
        before = len(api.messages)
        r = box.baton("resume", wid, "--runner", "script", "--set", "workflow.max-budget-usd=5")
        assert len(api.messages) == before
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "runner: script (overriding claude from the checkpoint)" in r.stdout
    identity = box.checkpoint()["baton"]["identity"]
    assert (identity["runner"], identity["runner_from"]) == ("script", "--runner")


def test_a_checkpoint_without_the_record_falls_back_to_the_configuration(box: Box) -> None:
    """What a Baton before pinned identities wrote: the workspace's configuration decides,
    and the resume says so."""
    with FakeAnthropic(anthropic_agent()) as api:
        cp = _stopped_by_budget(box, api)
    wid = cp["checkpoint_id"]
    del cp["baton"]["identity"]
    # saved through the store in the box's own environment: signed with its user's key
    saver = ("import json, sys; from pathlib import Path; "
             "from baton_lsp.runs.store import CheckpointStore; "
             "CheckpointStore(Path(sys.argv[1]), sys.argv[2]).save("
             "json.loads(sys.stdin.read()), 'written by an older Baton')")
    subprocess.run([sys.executable, "-c", saver, str(box.ws), wid], input=json.dumps(cp),
                   env=box.env, check=True, capture_output=True, text=True, timeout=60)
    r = box.baton("resume", wid, "--set", "workflow.max-budget-usd=5")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "runner: script (from the configuration: checkpoint" in r.stdout
    assert "predates recorded run settings" in r.stdout
    assert json.loads(json.dumps(box.checkpoint()["baton"]["identity"]))["runner"] == "script"


def test_auto_picks_the_installed_logged_in_claude_in_an_unconfigured_project(
        tmp_path: Path) -> None:
    """No configuration at all (an empty `.claude/`): `runner = "auto"` finds the real claude
    (installed, ANTHROPIC_API_KEY set) and the run is claude's — never the scripted demo
    agents — and the identity records that auto chose it."""
    box = Box.create(tmp_path, "claude", CLAUDE, ANTHROPIC_API_KEY="test-key",
                     CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                     CLAUDE_CODE_MAX_RETRIES="1")
    shutil.rmtree(box.ws)
    (box.ws / ".claude").mkdir(parents=True)
    (box.ws / "app.py").write_text("print('hi')\n")
    # only claude is offered: codex and gemini (installed beside it) have no credentials
    with FakeAnthropic(anthropic_agent()) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = box.baton("run", "Research rate limiting", "--scope", "research-only", "--topic",
                      "limits")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "runner: claude (auto: the first agent CLI installed and logged in)" in r.stdout
    assert api.messages
    assert not (box.ws / ".claude/tmp/scripted_runs.log").exists()
    cp = box.checkpoint()
    assert (cp["baton"]["identity"]["runner"], cp["baton"]["identity"]["runner_from"]) == (
        "claude", "auto")
    assert cp["baton"]["steps"]["research.1"]["usage"]

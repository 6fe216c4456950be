"""Whole workflows through the real `gemini` binary with Baton's defaults.

The example workspace, `--set workflow.runner=gemini` and a gemini model in
`[workflow.gemini]` (front-matter models are Claude models); gemini's own settings point it
at the fake API. Baton passes `--skip-trust` (it only launches agents where the user trusts
the workspace) and `--approval-mode auto_edit`. gemini retries nothing itself here
(`general.maxAttempts = 1`), so every API failure reaches Baton's classification at once;
the failures asserted are the ones Baton records (checkpoint, errors.jsonl), not its output.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from tests.agents import fake_gemini as fg
from tests.agents.clis import cli_path
from tests.agents.model import gemini_agent
from tests.agents.workspace import EXAMPLE_PLAN, Box

GEMINI = cli_path("gemini")
PLAN = EXAMPLE_PLAN
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


def agent(**changes: Any) -> fg.Script:
    """The whole-workflow Script (tests/agents/model.py), with `changes` applied."""
    script = gemini_agent()
    assert isinstance(script, fg.Script)
    return replace(script, **changes)


def serve(box: Box, script: fg.Script) -> fg.FakeGemini:
    api = fg.FakeGemini(script)
    box.env["GOOGLE_GEMINI_BASE_URL"] = api.url
    return api


def _steps(cp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return cp["baton"]["steps"]


def _errors(box: Box, wid: str) -> list[dict[str, Any]]:
    """This workflow's records in errors.jsonl (each failed attempt leaves one; the example's
    own log has malformed lines on purpose)."""
    log = box.ws / ".claude/data/logs/errors.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines() if f'"{wid}"' in line]


def test_research_and_plan_completes_through_real_gemini(box: Box) -> None:
    with serve(box, agent()) as api:
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
    with serve(box, agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.gemini.skip-trust=false")
    assert r.returncode == 1
    # preflight sees that gemini would refuse the folder, before any agent runs and before
    # anything is written (issue 30)
    assert "gemini does not trust this folder" in r.stderr
    assert "skip-trust" in r.stderr and not api.requests
    assert not (box.ws / ".claude/data/checkpoints").exists()


def test_implement_only_on_the_example_plan(box: Box) -> None:
    with serve(box, agent()):
        r = box.run("Implement the payment retry plan", "--scope", "implement-only",
                    "--plan", PLAN)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    # gemini may write under .claude/, so the summaries stay next to the plan
    summaries = Path(cp["baton"]["paths"]["summaries_dir"])
    assert summaries.parent == (box.ws / PLAN).parents[1]
    done = [s for sid, s in _steps(cp).items() if sid.startswith("implement.")]
    assert done and all(s["status"] == "done" and Path(s["artifact"]).is_file() for s in done)
    assert all(summaries in Path(s["artifact"]).parents for s in done)


def test_full_implementation_with_the_classifier(box: Box) -> None:
    with serve(box, agent()):
        r = box.run("Add rate limiting to the login endpoint", "--complexity", "1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    assert cp["state_machine"]["classification"]["source"] == "agent"
    assert cp["state_machine"]["completed_states"][-1] == "complete"
    assert _steps(cp)["classify"]["status"] == "done"


@pytest.mark.parametrize(("error", "code"), [("quota", 173), ("internal", 244),
                                             ("unavailable", 247)])
def test_api_errors_are_transient_and_baton_retries(box: Box, error: str, code: int) -> None:
    # gemini gives up after its own attempts (maxAttempts=1 here) and exits with the HTTP
    # status mod 256; Baton classifies that transient and its next attempt succeeds.
    with serve(box, agent(error=error, fail_first=1)):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", "workflow.backoff=0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    step = _steps(cp)["research.1"]
    assert step["status"] == "done" and step["attempts"] == 2
    (first,) = _errors(box, cp["checkpoint_id"])
    assert first["context"]["failure_class"] == "transient", first
    assert first["context"]["exit_code"] == code
    message = first["error_message"]  # one readable line
    assert message.startswith(f"agent exited with code {code}: [API Error: "), message
    assert "\n" not in message and "\x1b" not in message and '{"error"' not in message


def test_an_invalid_api_key_is_fatal_with_the_fix(box: Box) -> None:
    # Google answers a bad key with 400 INVALID_ARGUMENT, reason API_KEY_INVALID (exit 144)
    with serve(box, fg.Script(error="invalid_key")) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1")
    assert r.returncode == 1
    cp = box.checkpoint()
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1
    assert step["message"].startswith(
        "agent exited with code 144: [API Error: 400 INVALID_ARGUMENT: API key not valid. "
        "Please pass a valid API key. (API_KEY_INVALID)] — fix: "), step["message"]
    assert "GEMINI_API_KEY" in step["message"]
    assert cp["baton"]["failure"]["class"] == "fatal"
    assert len(api.stream_requests()) == 1  # neither gemini nor Baton retried


@pytest.mark.parametrize(("error", "code", "text"), [
    ("unauthenticated", 145, "401 UNAUTHENTICATED: Request had invalid authentication"),
    ("permission_denied", 147, "403 PERMISSION_DENIED: Method doesn't allow unregistered"),
])
def test_a_rejected_key_ends_gemini_at_once_and_is_fatal(box: Box, error: fg.ErrorKind,
                                                         code: int, text: str) -> None:
    """gemini 0.61 retries only 429 and 5xx: with its default 10 attempts a 401 or 403
    still ends it after one request (exit = status mod 256), so there is no retry to cut
    short. Baton makes both fatal with the login fix: not a permanent failure to retry."""
    settings = json.loads(json.dumps(SETTINGS))
    del settings["general"]["maxAttempts"]  # gemini's own default
    (box.home / ".gemini" / "settings.json").write_text(json.dumps(settings))
    with serve(box, fg.Script(error=error)) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1, step
    assert step["message"].startswith(
        f"agent exited with code {code}: [API Error: {text}"), step["message"]
    assert step["message"].endswith("— fix: set GEMINI_API_KEY, or run `gemini` once and "
                                    "choose an auth method"), step["message"]
    assert len(api.stream_requests()) == 1
    assert box.checkpoint()["baton"]["failure"]["class"] == "fatal"


def test_an_unknown_model_is_fatal_with_the_fix(box: Box) -> None:
    box.settings = ("workflow.gemini.model=gpt-4o",)  # another provider's model
    with serve(box, agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1
    assert step["message"].startswith("agent exited with code 1: [API Error: "
                                      "models/gpt-4o is not found"), step["message"]
    assert "fix:" in step["message"] and "[workflow.gemini] model" in step["message"]
    assert [req.model for req in api.stream_requests()] == ["gpt-4o"]


@pytest.mark.parametrize("behaviour", ["hang", "stall"])
def test_no_answer_is_stopped_by_the_watchdog(box: Box, behaviour: str) -> None:
    # gemini itself would wait 60 s per attempt (hang) or 300 s (stall)
    with serve(box, agent(behaviour=behaviour)) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", "workflow.stall-timeout=8",
                    "--set", "workflow.attempts=1", "--set", "workflow.state-retries=0")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "transient" and step["attempts"] == 1
    # 8 s: on a loaded 2-CPU machine gemini's start-up alone took over 4 s (no request yet)
    assert step["message"] == "agent stalled: no output for 8 s"
    assert len(api.stream_requests()) == 1


def test_a_refused_write_is_reported_with_the_refusal(box: Box) -> None:
    # No --approval-mode (`approval-mode = ""`): gemini's own default mode decides, and
    # headless it does not offer write_file. The call fails as tool_not_registered, gemini
    # exits 0, and the barrier failure says why.
    with serve(box, agent()):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", 'workflow.gemini.approval-mode=""')
    assert r.returncode == 1
    step = _steps(box.checkpoint())["research.1"]
    assert "HARD BARRIER FAILED" in step["message"]
    refused = f"the gemini CLI refused: write_file {step['artifact']}: "
    assert refused + 'Tool "write_file" not found' in step["message"], step["message"]
    assert 'approval-mode = "auto_edit"' in step["message"]  # and the fix


@pytest.mark.parametrize("where", ["beside", "outside"])
def test_an_agent_that_writes_elsewhere_fails_the_barrier_naming_where(box: Box,
                                                                        where: str) -> None:
    # beside: written and reported next to the artifact; outside: gemini refuses a path
    # outside the workspace (invalid_tool_params), and the refusal names it
    answer = agent().agent
    assert answer is not None
    outside = box.ws.parent / "outside"

    def move(path: str) -> str:
        if where == "beside":
            return path.replace("/reports/", "/reports/misplaced_")
        return str(outside / Path(path).name)

    def misplaced(body: dict[str, Any]) -> Any:
        ans = answer(body)
        if ans is None:
            return None
        return replace(ans, path=move(ans.path), final=ans.final.replace(ans.path,
                                                                         move(ans.path)))

    with serve(box, agent(agent=misplaced)):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", "workflow.attempts=1",
                    "--set", "workflow.state-retries=0")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "permanent" and "HARD BARRIER FAILED" in step["message"], step
    if where == "beside":
        assert "written to the wrong location" in step["message"]
        assert "/reports/misplaced_001_limits.md" in step["message"], step["message"]
    else:
        refused = f"the gemini CLI refused: write_file {outside}/001_limits.md: Path not in "
        assert refused in step["message"], step["message"]
        assert not outside.exists()


@pytest.mark.parametrize(("setting", "expected"), [
    ("workflow.gemini.approval-mode=default", "offers no write tool when it runs headless"),
    ("workflow.gemini.approval-mode=plan", "gemini's plan mode refuses every write"),
    ("workflow.gemini.model=claude-sonnet-4-5", "is a Claude model, which gemini does not"),
])
def test_settings_that_cannot_work_are_refused_before_any_request(box: Box, setting: str,
                                                                   expected: str) -> None:
    box.settings = (setting,)  # in place of the fixture's gemini model
    with serve(box, agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits")
    assert r.returncode == 1
    # refused before anything is written (issue 30): the reason on stderr, no workflow
    assert expected in r.stderr, r.stderr
    assert not (box.ws / ".claude/data/checkpoints").exists()
    assert not api.stream_requests()

"""Whole workflows through the real `codex` binary with Baton's defaults.

The example workspace and `--set workflow.runner=codex`; codex's own configuration (its
`CODEX_HOME/config.toml`) points it at the fake Responses API, as a user's would point it at
theirs. Codex writes through its shell tool in the `workspace-write` sandbox. What codex does
on its own (no retry of a 429, its "high demand" text for any 500, no bound on a request that
never gets headers, refusals left out of `--json`) is pinned in test_codex_cli.py; here it is
what Baton makes of it: the failure class, the fix named, its own retries and watchdog, and
the barrier saying what went wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

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


def serve(box: Box, responder: fo.Responder, **config: Any) -> fo.FakeOpenAI:
    """The fake API, and codex's config.toml pointing at it (`config`: codex_config's
    keywords; the model is gpt-5.5 unless given)."""
    api = fo.FakeOpenAI(responder)
    config.setdefault("model", "gpt-5.5")
    text = fo.codex_config(api.base_url, **config)
    (Path(box.env["CODEX_HOME"]) / "config.toml").write_text(text)
    return api


RESEARCH = ("Research rate limiting", "--scope", "research-only", "--topic", "limits")
ONCE = ("--set", "workflow.attempts=1", "--set", "workflow.state-retries=0")


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


@pytest.mark.parametrize(("status", "failure"), [(401, "fatal"), (500, "transient"),
                                                 (429, "transient")])
def test_api_failures_are_classified(box: Box, status: int, failure: str) -> None:
    with serve(box, fo.failing(status)) as api:
        r = box.run(*RESEARCH, *ONCE)
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == failure, step
    assert len(api.turns) == 1  # codex_config: no retries of codex's own
    message = step["message"]
    assert "\x1b" not in message
    expected = {401: "agent exited with code 1: unexpected status 401 Unauthorized: Incorrect "
                     "API key provided",
                500: "agent exited with code 1: We’re currently experiencing high demand",
                429: "agent exited with code 1: exceeded retry limit, last status: 429 Too Many "
                     "Requests"}[status]
    assert message.startswith(expected), message
    if failure == "fatal":
        assert message.endswith(" — fix: set OPENAI_API_KEY (or the env_key of your codex "
                                "model provider), or run `codex login`"), message
        assert box.checkpoint()["baton"]["failure"]["class"] == "fatal"
    else:
        assert "fix:" not in message


@pytest.mark.parametrize("status", [401, 403])
def test_a_bad_key_stops_codex_inside_its_own_retries(box: Box, status: int) -> None:
    """codex 0.169 retries a 401 and a 403 at turn level (`stream_max_retries`, 5 by
    default), each retry an `error` event "Reconnecting... i/N (unexpected status 401 …)".
    Baton stops the agent at the first one and fails the step as fatal with the status and
    the fix. retry-after (which codex honours) keeps its next try 20 s away, so a single
    request proves it never came."""
    with serve(box, fo.failing(status, retry_after=20), stream_retries=2) as api:
        r = box.run(*RESEARCH)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1, step
    reason = {401: "Incorrect API key provided: sk-fake.",
              403: "Country, region, or territory not supported"}[status]
    assert step["message"].startswith(
        f"the codex CLI got HTTP {status} ({reason}"), step["message"]
    assert step["message"].endswith(
        "no retry can fix that, so the agent was stopped — fix: check the API key or login: "
        "set OPENAI_API_KEY (or the env_key of your codex model provider), or run "
        "`codex login`"), step["message"]
    assert len(api.turns) == 1
    assert box.checkpoint()["baton"]["failure"]["class"] == "fatal"


def test_full_implementation_with_the_classifier(box: Box) -> None:
    with serve(box, openai_agent()) as api:
        r = box.run("Add rate limiting to the login endpoint", "--complexity", "1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    machine = cp["state_machine"]
    assert machine["classification"]["source"] == "agent"
    assert machine["completed_states"] == ["research", "plan", "implement", "test", "document",
                                           "complete"]
    steps = cp["baton"]["steps"]
    assert {"classify", "research.1", "plan", "test.1", "document"} <= set(steps)
    assert any(sid.startswith("implement.") for sid in steps)
    for sid, step in steps.items():
        assert step["status"] == "done" and Path(step["artifact"]).is_file(), (sid, step)
    # The classifier's answer went to the specs directory's scratch dir, written by codex.
    assert list((Path(cp["baton"]["paths"]["specs_dir"]) / ".baton").glob("classification_*"))
    assert {req.model for req in api.turns} == {"gpt-5.5"}


def test_rate_limited_then_recovering_api_is_retried_by_baton(box: Box) -> None:
    # codex never retries a 429 (test_codex_cli.py): its run ends, Baton classifies it
    # transient and its second attempt goes through.
    with serve(box, fo.failing(429, first=1, then=openai_agent())) as api:
        r = box.run(*RESEARCH, "--set", "workflow.backoff=0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    step = cp["baton"]["steps"]["research.1"]
    assert step["status"] == "done" and step["attempts"] == 2
    assert Path(step["artifact"]).is_file()
    assert len(api.turns) == 3  # the 429, then write and report
    assert "[research.1] agent exited with code 1: exceeded retry limit, last status: 429 " \
        "Too Many Requests" in r.stdout
    assert "retrying in" in r.stdout


@pytest.mark.parametrize(("where", "status"), [("codex config.toml", 404),
                                               ("[workflow.codex] model", 400)])
def test_a_model_the_api_rejects_is_fatal_with_the_fix(box: Box, where: str,
                                                       status: int) -> None:
    # Which models an OpenAI-compatible provider serves only the provider knows (custom
    # providers, local ones), so there is nothing for preflight to refuse: the first request
    # decides, and its model_not_found must stop the workflow, not be retried.
    baton = where.startswith("[workflow")
    responder = fo.only_models(["gpt-5.5"], openai_agent(), status)
    with serve(box, responder, model="gpt-5.5" if baton else "gpt-nope") as api:
        extra = ("--set", "workflow.codex.model=gpt-nope") if baton else ()
        r = box.run(*RESEARCH, *extra)  # Baton's default attempts and state retries
    assert r.returncode == 1
    cp = box.checkpoint()
    assert cp["baton"]["failure"]["class"] == "fatal"
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1
    assert step["message"] == (
        "agent exited with code 1: The model `gpt-nope` does not exist or you do not have "
        "access to it. — fix: use a model this CLI serves: fix `model:` in the agent's front "
        "matter (claude) or set [workflow.codex] / [workflow.opencode] / [workflow.gemini] "
        "model")
    assert [req.model for req in api.turns] == ["gpt-nope"]  # nobody retried it


@pytest.mark.parametrize("silence", [fo.hang, fo.stall], ids=["no-headers", "stalled-stream"])
def test_a_silent_api_is_stopped_by_the_watchdog(box: Box,
                                                 silence: Callable[[], fo.Responder]) -> None:
    # codex never bounds a request without response headers, and its own idle timeout on a
    # stalled stream is 300 s by default (idle_timeout_ms=None): Baton's watchdog ends both.
    with serve(box, silence(), idle_timeout_ms=None) as api:
        r = box.run(*RESEARCH, "--set", "workflow.stall-timeout=4", *ONCE)
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "transient"
    assert step["message"] == "agent stalled: no output for 4 s"
    assert step["duration_ms"] < 15_000  # 4 s of silence, then SIGTERM to the group
    assert len(api.turns) == 1
    assert box.checkpoint()["baton"]["failure"]["class"] == "transient"


@pytest.mark.parametrize("tool", ["apply_patch", "exec_command"])
def test_a_write_refused_by_the_read_only_sandbox_fails_the_barrier(box: Box,
                                                                    tool: str) -> None:
    # The user's own codex configuration makes it read-only, and Baton passes no --sandbox
    # (`sandbox = ""`): the refusal can only be seen after the run.
    with serve(box, openai_agent(tool)):
        config = Path(box.env["CODEX_HOME"]) / "config.toml"
        config.write_text('sandbox_mode = "read-only"\n' + config.read_text())
        r = box.run(*RESEARCH, "--set", 'workflow.codex.sandbox=""')
    assert r.returncode == 1
    step = box.steps()["research.1"]
    assert step["failure"] == "permanent" and step["attempts"] == 1
    assert not Path(step["artifact"]).exists()
    message = step["message"]
    assert message.startswith(f"HARD BARRIER FAILED: artifact not found at {step['artifact']}")
    assert step["artifact"].endswith("/reports/001_limits.md")
    if tool == "apply_patch":
        # codex logs the rejected patch on stderr only; Baton quotes it with the fix.
        assert message.endswith(
            "; the codex CLI refused: apply_patch: writing is blocked by read-only sandbox "
            "(codex runs in its read-only sandbox; fix: [workflow.codex] sandbox = "
            "\"workspace-write\", Baton's default)"), message
    else:
        # codex 0.169 leaves a shell command its sandbox refused out of --json and stderr
        # (openai/codex#47433): only the model saw "Read-only file system", so Baton has
        # no refusal of the CLI's to quote.
        assert message == f"HARD BARRIER FAILED: artifact not found at {step['artifact']}"


def test_an_agent_that_writes_elsewhere_fails_the_barrier_naming_where(box: Box) -> None:
    agent = openai_agent()

    def respond(req: fo.Recorded) -> fo.Reply:  # writes, and reports, next to the expected path
        reply = agent(req)
        if isinstance(reply, fo.FunctionCall):
            reply.arguments["cmd"] = reply.arguments["cmd"].replace("/reports/",
                                                                    "/reports/misplaced_")
        elif isinstance(reply, fo.Text):
            reply.text = reply.text.replace("/reports/", "/reports/misplaced_")
        return reply

    with serve(box, respond):
        r = box.run(*RESEARCH, "--set", "workflow.attempts=1")
    assert r.returncode == 1
    step = box.steps()["research.1"]
    expected = Path(step["artifact"])
    misplaced = expected.with_name(f"misplaced_{expected.name}")
    assert misplaced.is_file() and not expected.exists()
    assert step["failure"] == "permanent"
    assert step["message"] == (f"HARD BARRIER FAILED: artifact written to the wrong location: "
                               f"expected {expected}, the agent reported {misplaced}")


def test_a_read_only_sandbox_is_refused_before_any_request(box: Box) -> None:
    with serve(box, openai_agent()) as api:
        r = box.run(*RESEARCH, "--set", "workflow.codex.sandbox=read-only")
    assert r.returncode == 1
    # refused before anything is written (issue 30): the reason on stderr, no workflow
    assert "codex's read-only sandbox refuses every write" in r.stderr
    assert '[workflow.codex] sandbox = "workspace-write"' in r.stderr
    assert not (box.ws / ".claude/data/checkpoints").exists()
    assert not api.turns


def test_a_claude_model_for_codex_is_refused_before_any_request(box: Box) -> None:
    with serve(box, openai_agent()) as api:
        r = box.run(*RESEARCH, "--set", "workflow.codex.model=sonnet-4.5")
    assert r.returncode == 1
    assert '[workflow.codex] model = "sonnet-4.5" is a Claude model' in r.stderr
    assert not (box.ws / ".claude/data/checkpoints").exists()  # nothing written (issue 30)
    assert not api.turns

"""Budgets inside a step, through the real claude, codex, gemini and opencode binaries.

A looping agent is the fake model answering every turn with one more tool call (a new shell
command, or a new gemini `glob`), so the real CLI never ends on its own. Baton reads usage
from the CLI's stream as it arrives and stops the agent (TERM, then KILL, through its process
group code) once the workflow's total with this step so far crosses `max-budget-usd` /
`max-tokens`, or the attempt makes more than `max-turns` model requests. The step fails for
good (no retry), the workflow is `failed` and resumable, and what the killed attempt cost is
recorded on the step and in the run's totals, as it is for a timed-out attempt.

What each CLI reports as it goes (checked on the pinned releases): claude 2.1.331 prints an
`assistant` event per content block with the response's `usage` (input tokens exact, output
at the stream's first count until the `result`); codex 0.169.0's `exec --json` has token
counts only in `turn.completed` and gemini 0.61.0's `stream-json` only in the final `result`,
but their OpenTelemetry logs, exported to Baton, carry each request's tokens and model
(codex's every 200 ms, gemini's batched for up to 5 s); their tool calls (`item.started`,
`tool_use`) count as turns. Tokens are priced from `[workflow.prices]`. opencode 1.18.33
prints a `step_finish` per model request with its tokens and its own `cost` in dollars.

Each test prints the overshoot it measured (how far past the limit the agent got, in model
requests, tokens and dollars, before it was stopped).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from tests.agents import fake_anthropic as fa
from tests.agents import fake_gemini as fg
from tests.agents import fake_openai as fo
from tests.agents.clis import cli_path
from tests.agents.model import anthropic_agent, openai_agent, opencode_agent
from tests.agents.workspace import Box

RESEARCH = ("Research rate limiting", "--scope", "research-only", "--topic", "limits",
            "--complexity", "1")
ONCE = ("--set", "workflow.attempts=1", "--set", "workflow.state-retries=0")
SLOW = ("--set", "workflow.timeout=120", "--set", "workflow.stall-timeout=120")
"""Far above what any of these runs needs: only the budget may stop the looping agent."""
GEMINI_SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
                   "privacy": {"usageStatisticsEnabled": False},
                   "telemetry": {"enabled": False},
                   "general": {"enableAutoUpdate": False,
                               "enableAutoUpdateNotification": False, "maxAttempts": 1}}


PRICES = {"claude-opus-5-5": (4.0, 20.0), "claude-sonnet-5-5": (2.0, 10.0)}
"""$ per million input, output tokens: what Claude Code itself charges (test_claude_cli), and
Baton's default price table for these models."""


def crossing(model: str, budget: float, input_tokens: int = 1000) -> int:
    """The request at which a looping claude's reported usage reaches `budget`: each of
    its assistant events reports the request's input tokens and 1 output token (the
    stream's first count), priced from Baton's default table."""
    rate_in, rate_out = PRICES[model]
    return math.ceil(budget / ((input_tokens * rate_in + rate_out) / 1e6))


def claude_box(tmp: Path) -> Box:
    return Box.create(tmp, "claude", cli_path("claude"), ANTHROPIC_API_KEY="test-key",
                      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                      CLAUDE_CODE_MAX_RETRIES="1")


def codex_box(tmp: Path) -> Box:
    box = Box.create(tmp, "codex", cli_path("codex"), FAKE_OPENAI_KEY="sk-fake")
    (box.home / ".codex").mkdir()
    box.env["CODEX_HOME"] = str(box.home / ".codex")
    box.settings = ("workflow.codex.model=gpt-5.5",)
    return box


def codex_serve(box: Box, responder: fo.Responder) -> fo.FakeOpenAI:
    api = fo.FakeOpenAI(responder)
    text = fo.codex_config(api.base_url, model="gpt-5.5")
    (Path(box.env["CODEX_HOME"]) / "config.toml").write_text(text)
    return api


def gemini_box(tmp: Path) -> Box:
    box = Box.create(tmp, "gemini", cli_path("gemini"), GEMINI_API_KEY="fake-key")
    box.settings = ("workflow.gemini.model=gemini-2.5-flash",)
    (box.home / ".gemini").mkdir()
    (box.home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS))
    return box


def opencode_box(tmp: Path) -> Box:
    box = Box.create(tmp, "opencode", cli_path("opencode"), OPENCODE_DISABLE_MODELS_FETCH="1")
    (box.home / ".config" / "opencode").mkdir(parents=True)
    return box


def opencode_serve(box: Box, responder: fa.Responder) -> fa.FakeAnthropic:
    api = fa.FakeAnthropic(responder)
    (box.home / ".config" / "opencode" / "opencode.json").write_text(
        fa.opencode_config(api.url, OPENCODE_MODEL))
    return api


OPENCODE_MODEL = "claude-sonnet-4-5"
OPENCODE_REQUEST = (1000 * 3.0 + 60 * 15.0) / 1e6
"""What opencode charges for one looping request (1,000 input, 60 output tokens) at its
bundled claude-sonnet-4-5 prices, $3 / $15 per million (test_opencode_cli)."""


def stopped_step(box: Box) -> tuple[dict[str, Any], dict[str, Any]]:
    """The checkpoint of a workflow a budget stopped, and its one failed step."""
    cp = box.checkpoint()
    assert cp["status"] == "failed", cp["status"]
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1, step  # never retried
    assert step["message"].startswith("budget reached while "), step["message"]
    (attempt,) = step["attempt_usage"]
    assert attempt["ended"] == "budget" and attempt["attempt"] == 1, attempt
    return cp, step


def shows_usage(box: Box, cp: dict[str, Any], run_stdout: str) -> None:
    """`baton status` and the end-of-run report both show what the stopped step cost."""
    status = box.baton("status", cp["checkpoint_id"])
    assert status.returncode == 0, status.stderr
    assert "cost workflow" in status.stdout, status.stdout
    assert "agent cost:" in run_stdout, run_stdout[-2000:]


def test_a_looping_claude_is_stopped_at_max_budget_usd_and_resumes(tmp_path: Path) -> None:
    box = claude_box(tmp_path)
    budget = 0.05  # each looping request: 1,000 input tokens, $0.002 at sonnet prices
    responder: dict[str, fa.Responder] = {"now": fa.looping()}
    with fa.FakeAnthropic(lambda req: responder["now"](req)) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = box.run(*RESEARCH, *SLOW, "--set", f"workflow.max-budget-usd={budget}")
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        requests = len(api.messages)
        cp, step = stopped_step(box)
        assert "max-budget-usd" in step["message"] and "resume" in step["message"]
        usage = step["usage"]
        # The killed attempt's usage is recorded on the step and in the run's totals.
        assert usage["cost_usd"] >= budget and usage["input_tokens"] > 0 and usage["turns"] > 0
        assert cp["baton"]["usage"]["total"]["cost_usd"] == pytest.approx(usage["cost_usd"])
        # Bounded overshoot: stopped at the request that crossed the budget, the CLI having
        # sent at most a few more before the TERM reached it.
        model = api.messages[0].model
        assert model is not None
        at = crossing(model, budget)
        assert at <= usage["turns"] <= requests <= at + 5, (usage, requests, at)
        rate_in, rate_out = PRICES[model]
        served = requests * (1000 * rate_in + 60 * rate_out) / 1e6  # what the API served
        print(f"\nclaude max-budget-usd ${budget} ({model}): crossed at request {at}, "
              f"{requests} served ({requests - at} past); recorded ${usage['cost_usd']:.4f}, "
              f"{usage['input_tokens']:,} input tokens; served ${served:.4f}, "
              f"{requests * 1060:,} tokens (${served - budget:.4f} over)")
        shows_usage(box, cp, r.stdout)
        # Resumable: a higher budget and a model that finishes.
        responder["now"] = cast(fa.Responder, anthropic_agent())
        resumed = box.baton("resume", cp["checkpoint_id"], "--set", "workflow.runner=claude",
                            "--set", "workflow.max-budget-usd=5")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert box.checkpoint()["status"] == "complete"


@pytest.mark.parametrize("alias", ["haiku", "sonnet", "opus"])
def test_the_default_claude_prices_are_what_claude_code_charges(tmp_path: Path,
                                                                alias: str) -> None:
    """Mid-step, claude's tokens are priced by Baton's table; at the end claude's own
    `total_cost_usd` replaces that: the two must agree."""
    # a prompt of 170,000 tokens (claude charges haiku a fifth of this rate on small ones)
    usage = {"input_tokens": 50_000, "output_tokens": 10_000,
             "cache_read_input_tokens": 100_000, "cache_creation_input_tokens": 20_000}
    home = tmp_path / "home"
    home.mkdir()
    with fa.FakeAnthropic(lambda req: fa.Text("hi", dict(usage))) as api:
        env = {"PATH": os.environ["PATH"], "HOME": str(home), "ANTHROPIC_BASE_URL": api.url,
               "ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}
        proc = subprocess.run([cli_path("claude"), "-p", "--output-format", "json",
                               "--model", alias], input="x", capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    (model,) = result["modelUsage"]
    from baton_lsp.model.config import DEFAULT_PRICES  # here, so the module imports without it
    from baton_lsp.workflow.accounting import price

    ours = price({"input_tokens": 50_000, "output_tokens": 10_000,
                  "cache_read_tokens": 100_000, "cache_write_tokens": 20_000},
                 DEFAULT_PRICES[model], cached_in_input=False)
    assert ours == pytest.approx(result["total_cost_usd"], rel=1e-9), (model, result)


def test_parallel_siblings_share_the_budget(tmp_path: Path) -> None:
    # Two research agents at once, both looping: each is stopped once the workflow's total —
    # its own usage so far and its sibling's — reaches the budget.
    box = claude_box(tmp_path)
    budget = 0.05
    with fa.FakeAnthropic(fa.looping()) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = box.run("Research rate limiting", "--scope", "research-only", "--complexity", "2",
                    "--topic", "limits", "--topic", "quotas",
                    "--set", "workflow.research-parallel=2", *SLOW,
                    "--set", f"workflow.max-budget-usd={budget}")
        requests = len(api.messages)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "failed"
    research = [s for sid, s in box.steps().items() if sid.startswith("research.")]
    assert len(research) == 2, box.steps()
    for step in research:
        assert step["status"] == "failed" and step["failure"] == "fatal", step
        assert step["message"].startswith("budget reached while research."), step["message"]
    # one agent paid its way to the budget (a sibling stopped before its first request
    # finished has nothing to record)
    assert any(step.get("usage", {}).get("turns") for step in research), research
    total = cp["baton"]["usage"]["total"]
    at = crossing("claude-sonnet-5-5", budget)
    # together they made about as many requests as one agent alone may: not twice that. What
    # each was asked before its TERM landed counts, so the dollars are bounded as the turns are.
    assert at <= total["turns"] <= requests <= at + 8, (total, requests)
    per_request = (1000 * PRICES["claude-sonnet-5-5"][0] + PRICES["claude-sonnet-5-5"][1]) / 1e6
    assert budget <= total["cost_usd"] <= total["turns"] * per_request + 1e-9, total
    print(f"\nclaude, two parallel agents, max-budget-usd ${budget}: {requests} requests "
          f"served ({requests - at} past the crossing), recorded ${total['cost_usd']:.4f}")


def test_a_crossed_budget_stops_a_sibling_that_has_not_reported_yet(tmp_path: Path) -> None:
    # One research agent loops, its sibling waits on a model request that never returns (it
    # reports no usage, so nothing of its own would ever trip the budget). Once the looping one
    # crosses the workflow's budget both are stopped at once: the waiting one does not run on
    # until its timeout.
    box = claude_box(tmp_path)
    loop = fa.looping()

    def respond(req: fa.Recorded) -> fa.Reply:
        return fa.Hang() if "quotas" in json.dumps(req.body.get("messages")) else loop(req)

    with fa.FakeAnthropic(respond) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = box.run("Research rate limiting", "--scope", "research-only", "--complexity", "2",
                    "--topic", "limits", "--topic", "quotas", *ONCE,
                    "--set", "workflow.research-parallel=2", "--set", "workflow.timeout=90",
                    "--set", "workflow.stall-timeout=90", "--set", "workflow.max-budget-usd=0.02")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    research = {sid: s for sid, s in box.steps().items() if sid.startswith("research.")}
    assert len(research) == 2, research
    for sid, step in research.items():
        assert step["status"] == "failed" and step["failure"] == "fatal", (sid, step)
        assert step["message"].startswith(f"budget reached while {sid} ran"), step["message"]
    waiting = [s for s in research.values() if not s.get("usage", {}).get("cost_usd")]
    assert len(waiting) == 1, research


def test_a_looping_claude_is_stopped_at_max_tokens(tmp_path: Path) -> None:
    box = claude_box(tmp_path)
    with fa.FakeAnthropic(fa.looping()) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = box.run(*RESEARCH, *SLOW, *ONCE, "--set", "workflow.max-tokens=8000")
        requests = len(api.messages)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    _, step = stopped_step(box)
    assert "max-tokens 8,000" in step["message"]
    # 1,000 input + 1 output token reported per request: crossed at the 8th
    assert 8 <= step["usage"]["turns"] <= requests <= 8 + 5, (step["usage"], requests)
    print(f"\nclaude max-tokens 8,000: crossed at request 8, {requests} served "
          f"({requests - 8} past, {requests * 1060 - 8000:,} tokens over)")


@pytest.mark.parametrize("cli", ["claude", "codex", "gemini", "opencode"])
def test_a_looping_agent_is_stopped_at_max_turns(tmp_path: Path, cli: str) -> None:
    limit = 5
    args = (*RESEARCH, *SLOW, "--set", f"workflow.max-turns={limit}")
    if cli == "claude":
        box = claude_box(tmp_path)
        with fa.FakeAnthropic(fa.looping()) as api:
            box.env["ANTHROPIC_BASE_URL"] = api.url
            r = box.run(*args)
            requests = len(api.messages)
    elif cli == "codex":
        box = codex_box(tmp_path)
        with codex_serve(box, fo.looping()) as oapi:
            r = box.run(*args)
            requests = len(oapi.turns)
    elif cli == "opencode":
        box = opencode_box(tmp_path)
        with opencode_serve(box, fa.looping(tool="bash", titles=True)) as api:
            r = box.run(*args)
            requests = len([m for m in api.messages if m.body.get("tools")])
    else:
        box = gemini_box(tmp_path)
        with fg.FakeGemini(fg.Script(behaviour="loop")) as gapi:
            box.env["GOOGLE_GEMINI_BASE_URL"] = gapi.url
            r = box.run(*args)
            requests = len(gapi.stream_requests())
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp, step = stopped_step(box)
    assert f"more than max-turns {limit}" in step["message"], step["message"]
    turns = step["usage"]["turns"]  # stopped at the first request past the limit
    assert limit + 1 <= turns <= requests <= limit + 6, (step["usage"], requests)
    assert cp["baton"]["usage"]["total"]["turns"] == turns
    print(f"\n{cli} max-turns {limit}: stopped after {turns} counted, {requests} requests "
          f"served ({requests - limit} past the limit)")


def test_a_looping_codex_is_stopped_at_max_budget_usd(tmp_path: Path) -> None:
    # codex's per-response tokens reach Baton through its telemetry (exported about once a
    # second), priced at gpt-5.5's $1.25 / $10 per million: $0.00185 a looping request.
    box = codex_box(tmp_path)
    budget = 0.02
    at = math.ceil(budget / ((1000 * 1.25 + 60 * 10.0) / 1e6))
    with codex_serve(box, fo.looping()) as api:
        r = box.run(*RESEARCH, *SLOW, "--set", f"workflow.max-budget-usd={budget}")
        requests = len(api.turns)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp, step = stopped_step(box)
    assert "max-budget-usd" in step["message"]
    usage = step["usage"]
    assert usage["cost_usd"] >= budget and usage["input_tokens"] >= at * 1000, usage
    assert usage["output_tokens"] == usage["input_tokens"] * 60 // 1000, usage  # exact
    assert cp["baton"]["usage"]["total"]["cost_usd"] == pytest.approx(usage["cost_usd"])
    assert at <= requests <= at + 25, (requests, at)
    served = requests * (1000 * 1.25 + 60 * 10.0) / 1e6
    print(f"\ncodex max-budget-usd ${budget}: crossed at request {at}, {requests} served "
          f"({requests - at} past); recorded ${usage['cost_usd']:.4f} "
          f"{usage['input_tokens']:,} input tokens, {usage['turns']} turns; served "
          f"${served:.4f} (${served - budget:.4f} over), {requests * 1060:,} tokens")


def test_a_looping_gemini_is_stopped_at_max_budget_usd(tmp_path: Path) -> None:
    # gemini's per-request tokens (the fake's 120 in, 8 out) reach Baton through its
    # telemetry, which gemini batches for up to 5 s (or 512 records, ~100 requests here);
    # priced at gemini-2.5-flash's $0.30 / $2.50 per million.
    box = gemini_box(tmp_path)
    budget = 0.002
    per_request = (120 * 0.30 + 8 * 2.50) / 1e6
    at = math.ceil(budget / per_request)
    with fg.FakeGemini(fg.Script(behaviour="loop")) as api:
        box.env["GOOGLE_GEMINI_BASE_URL"] = api.url
        r = box.run(*RESEARCH, *SLOW, "--set", f"workflow.max-budget-usd={budget}")
        requests = len(api.stream_requests())
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp, step = stopped_step(box)
    assert "max-budget-usd" in step["message"]
    usage = step["usage"]
    assert usage["cost_usd"] >= budget and usage["input_tokens"] >= at * 120, usage
    assert cp["baton"]["usage"]["total"]["cost_usd"] == pytest.approx(usage["cost_usd"])
    assert at <= requests <= at + 150, (requests, at)
    served = requests * per_request
    print(f"\ngemini max-budget-usd ${budget}: crossed at request {at}, {requests} served "
          f"({requests - at} past); recorded ${usage['cost_usd']:.5f}, "
          f"{usage['input_tokens']:,} input tokens, {usage['turns']} turns; served "
          f"${served:.5f} (${served - budget:.5f} over), {requests * 128:,} tokens")


def test_a_looping_opencode_is_stopped_at_max_budget_usd_and_resumes(tmp_path: Path) -> None:
    # opencode prices each request itself (step_finish `cost`); Baton adds them as they come.
    box = opencode_box(tmp_path)
    budget = 0.03
    at = math.ceil(budget / OPENCODE_REQUEST)
    responder: dict[str, fa.Responder] = {"now": fa.looping(tool="bash", titles=True)}
    with opencode_serve(box, lambda req: responder["now"](req)) as api:
        r = box.run(*RESEARCH, *SLOW, "--set", f"workflow.max-budget-usd={budget}")
        assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
        requests = len([m for m in api.messages if m.body.get("tools")])
        cp, step = stopped_step(box)
        assert "max-budget-usd" in step["message"] and "resume" in step["message"]
        usage = step["usage"]
        assert usage["cost_usd"] >= budget and usage["turns"] >= at, usage
        assert usage["input_tokens"] == usage["turns"] * 1000, usage  # exact, per request
        assert cp["baton"]["usage"]["total"]["cost_usd"] == pytest.approx(usage["cost_usd"])
        assert at <= usage["turns"] <= requests <= at + 5, (usage, requests, at)
        print(f"\nopencode max-budget-usd ${budget}: crossed at request {at}, {requests} "
              f"served ({requests - at} past); recorded ${usage['cost_usd']:.4f}, "
              f"{usage['turns']} turns")
        shows_usage(box, cp, r.stdout)
        # Resumable: a higher budget and a model that finishes.
        responder["now"] = cast(fa.Responder, opencode_agent())
        resumed = box.baton("resume", cp["checkpoint_id"], "--set", "workflow.runner=opencode",
                            "--set", "workflow.max-budget-usd=5")
    assert resumed.returncode == 0, resumed.stdout[-3000:] + resumed.stderr[-3000:]
    assert box.checkpoint()["status"] == "complete"


def test_codex_tokens_are_priced_and_max_budget_usd_stops_a_codex_run(tmp_path: Path) -> None:
    box = codex_box(tmp_path)
    with codex_serve(box, cast(fo.Responder, openai_agent())) as api:
        # without its telemetry codex's tokens arrive with `turn.completed`, as a step ends
        r = box.run("Research rate limiting", "--scope", "research-only", "--complexity", "2",
                    "--set", "workflow.research-parallel=1",
                    "--set", "workflow.codex.usage-telemetry=false",
                    "--set", "workflow.max-budget-usd=0.0001")
        requests = len(api.turns)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "failed" and "budget reached" in cp["last_error"], cp["last_error"]
    assert "max-budget-usd" in cp["last_error"]
    done = [s for s in box.steps().values() if s.get("usage")]
    assert done, box.steps()
    # codex reports tokens only; Baton priced them at gpt-5.5's $1.25 / $10 per million
    first = done[0]["usage"]
    expected = (first["input_tokens"] * 1.25 + first["output_tokens"] * 10.0) / 1e6
    assert first["cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert requests == 2  # one step (two model calls), then nothing more was started


def test_a_model_baton_cannot_price_is_named(tmp_path: Path) -> None:
    box = codex_box(tmp_path)
    # codex's own config.toml chooses gpt-5.5; Baton is not told, and without codex's
    # telemetry (which names the model) it cannot know
    box.settings = ("workflow.codex.usage-telemetry=false",)
    with codex_serve(box, cast(fo.Responder, openai_agent())):
        r = box.run(*RESEARCH, "--set", "workflow.max-budget-usd=0.0001")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    note = ("the codex model is not known to Baton (set [workflow.codex] model): its tokens "
            "cost nothing against max-budget-usd, only max-tokens and max-turns can stop its "
            "steps")
    assert note in r.stdout
    step = box.steps()["research.1"]
    assert step["notes"] == [note] and "cost_usd" not in step["usage"], step
    assert step["usage"]["input_tokens"] > 0
    wid = box.checkpoint()["checkpoint_id"]
    assert json.loads(box.baton("status", wid, "--json").stdout)["steps"]["research.1"][
        "notes"] == [note]
    assert f"note: {note}" in box.baton("status", wid).stdout


def test_codex_telemetry_names_the_model_baton_was_not_told(tmp_path: Path) -> None:
    box = codex_box(tmp_path)
    box.settings = ()  # codex's own config.toml chooses gpt-5.5
    with codex_serve(box, cast(fo.Responder, openai_agent())):
        r = box.run(*RESEARCH, "--set", "workflow.max-budget-usd=5")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    usage = box.steps()["research.1"]["usage"]
    assert "notes" not in box.steps()["research.1"]
    assert usage["cost_usd"] == pytest.approx(
        (usage["input_tokens"] * 1.25 + usage["output_tokens"] * 10.0) / 1e6, abs=1e-6)


def test_a_timed_out_attempt_records_its_usage(tmp_path: Path) -> None:
    box = claude_box(tmp_path)
    with fa.FakeAnthropic(fa.looping()) as api:
        box.env["ANTHROPIC_BASE_URL"] = api.url
        r = box.run(*RESEARCH, *ONCE, "--set", "workflow.timeout=8")
        requests = len(api.messages)
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    (step,) = box.failed_steps()
    assert step["failure"] == "transient" and "timed out" in step["message"], step
    (attempt,) = step["attempt_usage"]
    assert attempt["ended"] == "timeout"
    usage = step["usage"]
    assert usage["input_tokens"] > 0 and usage["cost_usd"] > 0 and usage["turns"] > 0
    assert usage["turns"] <= requests
    total = cp["baton"]["usage"]["total"]
    assert total["cost_usd"] == pytest.approx(usage["cost_usd"]) and total["turns"] > 0

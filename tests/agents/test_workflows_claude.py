"""Whole workflows through the real `claude` binary with Baton's defaults, each test on the
newest pinned release and on 2.1.197 (what node 20 gets).

The bundled example workspace, `--set workflow.runner=claude` and nothing else: the agents'
front matter, Baton's permission set (acceptEdits, `--tools` from the front matter plus
Write, an `Edit(//<artifact dir>/**)` grant) and the artifact layout must let Claude Code
write every artifact in its normal permission mode, as root too. Only the model is a double
(tests/agents/model.py over FakeAnthropic).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.model.data import ERROR_TYPES
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import (
    FakeAnthropic,
    Recorded,
    Responder,
    Text,
    ToolUse,
    error,
    hang,
    stall,
)
from tests.agents.model import anthropic_agent
from tests.agents.workspace import EXAMPLE_PLAN, Box

CLAUDE = cli_path("claude")
NODE20 = "2.1.197"
"""The release node 20 resolves to (the newest, pinned in tests/agents/npm, needs node 22)."""
PLAN = EXAMPLE_PLAN


@pytest.fixture(params=["newest", NODE20])
def box(tmp_path: Path, request: pytest.FixtureRequest) -> Box:
    cli = CLAUDE if request.param == "newest" else cli_path("claude", request.param)
    return Box.create(tmp_path, "claude", cli, ANTHROPIC_API_KEY="test-key",
                      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
                      CLAUDE_CODE_MAX_RETRIES="1")


def serve(box: Box, responder: Responder) -> FakeAnthropic:
    api = FakeAnthropic(responder)
    box.env["ANTHROPIC_BASE_URL"] = api.url
    return api


def _steps(cp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return cp["baton"]["steps"]


def test_research_and_plan_completes_through_real_claude(box: Box) -> None:
    with serve(box, anthropic_agent()) as api:
        r = box.run("Research rate limiting and plan the login throttle",
                    "--scope", "research-and-plan", "--complexity", "2")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    steps = _steps(cp)
    # Artifacts outside .claude/ (Claude Code refuses writes there), at the paths fixed up front
    topic = Path(cp["baton"]["paths"]["topic_dir"])
    assert topic.parent == box.ws / "specs"
    for sid in ("research.1", "research.2", "plan"):
        artifact = Path(steps[sid]["artifact"])
        assert steps[sid]["status"] == "done" and artifact.is_file(), steps[sid]
        assert topic in artifact.parents
    assert "## Implementation Phases" in Path(cp["baton"]["paths"]["plan"]).read_text()
    # Front-matter models became Claude ids, tools were restricted (+ Write), cost recorded
    models = {req.model for req in api.messages}
    assert models <= {"claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "sonnet",
                      "haiku", "opus"} or all(m and m.startswith("claude-") for m in models)
    research = [req for req in api.messages if "role research" in json.dumps(req.body)]
    assert research and all("Bash" not in req.tool_names for req in research)
    assert all("Write" in req.tool_names for req in research)
    usage = cp["baton"]["usage"]["total"]
    assert usage["cost_usd"] > 0 and usage["input_tokens"] > 0 and usage["turns"] >= 2
    status = box.baton("status", cp["checkpoint_id"])
    assert "cost workflow" in status.stdout and "$" in status.stdout, status.stdout
    assert "agent cost: $" in r.stdout
    assert cp["baton"]["agent_clis"]["claude"].startswith("2.")  # preflight's version


def test_implement_only_on_the_example_plan(box: Box) -> None:
    with serve(box, anthropic_agent()) as api:
        r = box.run("Implement the payment retry plan", "--scope", "implement-only",
                    "--plan", PLAN)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    # scope and plan given: the example's classifier agent is not asked (issue 30)
    assert api.messages and not [req for req in api.messages
                                 if "role classifier" in json.dumps(req.body)]
    assert cp["state_machine"]["classification"]["source"] == "flags"
    # The plan stays in .claude/specs; its summaries go where claude may write them.
    summaries = Path(cp["baton"]["paths"]["summaries_dir"])
    assert summaries == box.ws / "specs" / "002_payment_retry" / "summaries"
    done = [s for sid, s in _steps(cp).items() if sid.startswith("implement.")]
    assert done and all(s["status"] == "done" and Path(s["artifact"]).is_file() for s in done)


def test_parallel_phases_in_git_worktrees_through_real_claude(box: Box) -> None:
    """In a git repository the parallel phases run with their cwd in their own worktree
    (under .claude/worktrees/): claude writes the code there in acceptEdits and the summary
    in the main tree's topic directory through --add-dir; each phase (the single-phase wave
    too) lands as a merge commit."""
    plan = box.ws / "specs" / "005_parallel" / "plans" / "001_parallel_plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Parallel Plan\n\n## Implementation Phases\n\n"
                    "### Phase 1: Base\ndependencies: []\n\n- [ ] base\n\n"
                    "### Phase 2: Left\ndependencies: [1]\n\n- [ ] left\n\n"
                    "### Phase 3: Right\ndependencies: [1]\n\n- [ ] right\n")
    git = ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], cwd=box.ws, check=True, capture_output=True)
    with serve(box, anthropic_agent()) as api:
        r = box.run("Implement the parallel plan", "--scope", "implement-only", "--plan",
                    str(plan))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = _steps(box.checkpoint())
    wid = box.checkpoint()["checkpoint_id"]
    for pid in ("2", "3"):
        step = steps[f"implement.phase-{pid}"]
        assert step["git"]["mode"] == "worktree" and step["git"]["status"] == "merged"
        assert Path(step["artifact"]).is_file()  # in the main tree, outside the cwd
        assert subprocess.run(["git", "show", "--name-only", "--format=", step["git"]["commit"]],
                              cwd=box.ws, capture_output=True, text=True, check=True
                              ).stdout.split() == [f"src/phase_{pid}.py"]
    sent = [req for req in api.messages if "step implement.phase-2" in json.dumps(req.body)]
    assert sent and f".claude/worktrees/baton-{wid}-phase-2" in json.dumps(sent[0].body)
    log = subprocess.run(["git", "log", "--first-parent", "--format=%s"], cwd=box.ws,
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log == [f"Merge phase 3: Right ({wid})", f"Merge phase 2: Left ({wid})",
                   f"Merge phase 1: Base ({wid})", "base"]


def test_full_implementation_with_the_classifier(box: Box) -> None:
    with serve(box, anthropic_agent()):
        r = box.run("Add rate limiting to the login endpoint", "--complexity", "1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    assert cp["state_machine"]["classification"]["source"] == "agent"
    assert cp["state_machine"]["completed_states"][-1] == "complete"
    assert (box.ws / "specs" / ".baton").is_dir()  # the classifier wrote its answer there


def test_a_refused_write_is_reported_with_the_denial(box: Box) -> None:
    # A settings file handed to claude with `--settings` (extra-args) denies writes to the
    # specs directory (deny rules beat Baton's allow grant). Preflight reads the settings
    # files Claude Code finds by itself (the next test), not argv, so the agent runs:
    # claude refuses the Write, exits 0 and lists the refusal in `permission_denials`; the
    # barrier failure says what was refused, not only "not found".
    settings = box.home / "deny-specs.json"
    settings.write_text(json.dumps({"permissions": {"deny": [f"Edit(/{box.ws}/specs/**)"]}}))
    box.settings = (f'workflow.claude.extra-args=["--settings", "{settings}"]',)
    with serve(box, anthropic_agent()):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits")
    assert r.returncode == 1
    step = _steps(box.checkpoint())["research.1"]
    assert "HARD BARRIER FAILED" in step["message"]
    assert "the claude CLI refused: Write " in step["message"], step["message"]
    assert "/specs/001_research_rate_limiting/reports/001_limits.md" in step["message"]


@pytest.mark.parametrize("config_dir", [False, True])
def test_a_users_deny_rule_on_the_artifacts_stops_the_run_in_preflight(box: Box,
                                                                      config_dir: bool) -> None:
    """`"permissions": {"deny": ["Edit(./specs/**)"]}` in the user's own Claude Code settings
    (~/.claude/settings.json, or CLAUDE_CONFIG_DIR's) would refuse every artifact after the
    model was paid: preflight names the file and the rule, and no request is made."""
    config = box.home / ("claude-config" if config_dir else ".claude")
    if config_dir:
        box.env["CLAUDE_CONFIG_DIR"] = str(config)
    config.mkdir()
    settings = config / "settings.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Edit(./specs/**)"]}}))
    with serve(box, anthropic_agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    # refused before anything is written (issue 30, defect 13): the reason on stderr
    assert f"Claude Code's user settings ({settings}) deny `Edit(./specs/**)`, which covers " \
        "specs/" in r.stderr, r.stderr
    assert "remove the rule" in r.stderr
    assert not (box.ws / ".claude/data/checkpoints").exists()
    assert api.requests == []  # not one request: nothing was spent


def test_plan_mode_is_refused_before_any_request(box: Box) -> None:
    with serve(box, anthropic_agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.claude.permission-mode=plan")
    assert r.returncode == 1
    # refused before anything is written (issue 30): the reason on stderr, no workflow
    assert "Claude Code's plan mode refuses every write" in r.stderr
    assert '[workflow.claude] permission-mode = "acceptEdits"' in r.stderr
    assert not (box.ws / ".claude/data/checkpoints").exists()
    assert not api.messages


def logged_error_types(box: Box, wid: str) -> list[str]:
    """The `error_type` of each errors.jsonl record of workflow `wid` (the example's log
    also holds deliberately broken lines of its own)."""
    found = []
    for line in (box.ws / ".claude/data/logs/errors.jsonl").read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("workflow_id") == wid:
            found.append(record.get("error_type"))
    return found


def test_preflight_refuses_artifacts_under_dot_claude_before_any_agent(box: Box) -> None:
    log = box.ws / ".claude/data/logs/errors.jsonl"
    logged = log.read_bytes() if log.exists() else None
    with serve(box, anthropic_agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.specs-dir=.claude/specs")
    assert r.returncode == 1
    # refused before anything is written (issue 30): no workflow, no error log line
    assert "refuses writes under .claude/" in r.stderr and "specs-dir" in r.stderr
    assert "nothing was started" in r.stderr
    assert not api.messages
    assert not (box.ws / ".claude/data/checkpoints").exists()
    assert (log.read_bytes() if log.exists() else None) == logged


@pytest.mark.parametrize(("status", "failure"), [(401, "fatal"), (500, "transient"),
                                                 (429, "transient")])
def test_api_failures_are_classified(box: Box, status: int, failure: str) -> None:
    def respond(req: Recorded) -> Any:
        return error(status)

    with serve(box, respond):
        r = box.run("Research rate limiting", "--scope", "research-only", "--complexity", "1",
                    "--set", "workflow.attempts=1", "--set", "workflow.state-retries=0")
    assert r.returncode == 1
    failed = box.failed_steps()
    # transient: the classifier falls back to keywords, then research fails the same way
    assert failed and all(step["failure"] == failure for step in failed), failed
    if failure == "fatal":
        (step,) = failed
        assert "fix:" in step["message"] and "ANTHROPIC_API_KEY" in step["message"]
    else:
        assert all("agent exited with code 1: API Error" in s["message"] for s in failed)


@pytest.mark.parametrize("status", [401, 403])
def test_a_bad_key_stops_claude_inside_its_own_retries(box: Box, status: int) -> None:
    """claude retries a 401 from the first request (and a 403 the answer marks retryable, as
    a gateway may) with `api_retry` events, CLAUDE_CODE_MAX_RETRIES times (10 by default:
    205 s). Baton stops the agent at the first such event and fails the step as fatal with
    the status and the fix. retry-after keeps claude's next try 20 s away, so a single
    request proves it never came."""
    box.env["CLAUDE_CODE_MAX_RETRIES"] = "3"

    def respond(req: Recorded) -> Any:
        reply = error(status, retry_after=20)
        if status == 403:
            reply.headers["x-should-retry"] = "true"
        return reply

    with serve(box, respond) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits")
    assert r.returncode == 1, r.stdout[-3000:] + r.stderr[-3000:]
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1, step
    assert step["message"].startswith(
        f"the claude CLI got HTTP {status} (authentication_failed) from the model API and was "
        "retrying it; no retry can fix that, so the agent was stopped — fix: check the API "
        "key or login: set ANTHROPIC_API_KEY"), step["message"]
    assert len(api.messages) == 1
    cp = box.checkpoint()
    assert cp["baton"]["failure"]["class"] == "fatal"
    records = [json.loads(line) for line in (box.ws / ".claude/data/logs/errors.jsonl")
               .read_text().splitlines() if f'"{cp["checkpoint_id"]}"' in line]
    assert [(r["context"]["http_status"], r["context"]["stopped"]) for r in records
            if r["source"] == "research.1"] == [(status, True)]


def test_unknown_model_is_fatal_with_the_fix(box: Box) -> None:
    agent = box.ws / ".claude/agents/research-specialist.md"
    agent.write_text(agent.read_text().replace("model: sonnet", "model: gpt-4", 1))
    with serve(box, anthropic_agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--complexity", "1")
    assert r.returncode == 1
    # refused before any token was spent and before anything is written (issue 30)
    assert "agent `research-specialist` (research): `model: gpt-4`" in r.stderr
    assert "not a Claude model" in r.stderr
    assert not api.messages
    assert not (box.ws / ".claude/data/checkpoints").exists()


def test_overloaded_then_recovering_api_is_retried_by_baton(box: Box) -> None:
    # 529 on the first three requests: claude gives up (three 529s end its run), Baton
    # classifies that transient and its next attempt succeeds.
    agent = anthropic_agent()
    calls = {"n": 0}

    def respond(req: Recorded) -> Any:
        calls["n"] += 1
        return error(529) if calls["n"] <= 3 else agent(req)

    with serve(box, respond):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.backoff=0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    steps = _steps(box.checkpoint())
    first = steps.get("classify") or steps["research.1"]
    assert first["status"] == "done" and first["attempts"] == 2


@pytest.mark.parametrize("silence", [hang, stall])
def test_a_silent_api_is_stopped_by_the_watchdog(box: Box,
                                                 silence: Callable[[], Responder]) -> None:
    # hang: no response at all; stall: a stream that stops after its first delta
    with serve(box, silence()):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.stall-timeout=4", "--set", "workflow.attempts=1",
                    "--set", "workflow.state-retries=0")
    assert r.returncode == 1
    failed = box.failed_steps()
    assert failed and failed[0]["failure"] == "transient"
    assert "stalled: no output for 4 s" in failed[0]["message"]


def test_an_agent_that_writes_elsewhere_fails_the_barrier_naming_where(box: Box) -> None:
    agent = anthropic_agent()

    def respond(req: Recorded) -> Any:  # writes, and reports, next to the expected path
        reply = agent(req)
        if isinstance(reply, ToolUse):
            reply.input["file_path"] = reply.input["file_path"].replace("/reports/",
                                                                        "/reports/misplaced_")
        elif isinstance(reply, Text):
            reply.text = reply.text.replace("/reports/", "/reports/misplaced_")
        return reply

    with serve(box, respond):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--set", "workflow.agents.classifier=workflow-classifier",
                    "--complexity", "1", "--set", "workflow.attempts=1")
    assert r.returncode == 1
    failed = box.failed_steps()
    assert any("HARD BARRIER FAILED" in s["message"] and "misplaced_" in s["message"]
               for s in failed), failed


def test_a_budget_stops_new_steps_and_resume_continues(box: Box) -> None:
    # Each fake step costs ~$0.0054 (opus prices); the classifier alone reaches $0.0001.
    with serve(box, anthropic_agent()):
        r = box.run("Research rate limiting", "--scope", "research-only", "--complexity", "2",
                    "--set", "workflow.max-budget-usd=0.0001")
        assert r.returncode == 1
        cp = box.checkpoint()
        assert cp["status"] == "failed" and "budget reached" in cp["last_error"]
        assert "max-budget-usd" in cp["last_error"]
        logged = logged_error_types(box, cp["checkpoint_id"])
        assert "execution_error" in logged and set(logged) <= set(ERROR_TYPES), logged
        assert cp["baton"]["usage"]["total"]["cost_usd"] >= 0.0001
        assert not [s for s in _steps(cp).values() if s.get("state") == "research"
                    and s.get("status") == "done"]
        resumed = box.baton("resume", cp["checkpoint_id"], "--set",
                            "workflow.max-budget-usd=5")
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert box.checkpoint()["status"] == "complete"

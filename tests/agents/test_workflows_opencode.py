"""Whole workflows through the real `opencode` binary with Baton's defaults.

The example workspace and `--set workflow.runner=opencode`, nothing else of Baton's: the
model comes from opencode's own configuration (`~/.config/opencode/opencode.json` in the
isolated HOME: its `anthropic` provider pointed at the fake Messages API with a key, model
`anthropic/claude-sonnet-4-5`), and OPENCODE_DISABLE_MODELS_FETCH keeps it on its bundled
models data, offline. opencode retries 429 and 5xx itself (the fake's retry-after of 0 makes
its five retries immediate), so an error that outlasts them reaches Baton's classification;
the failures asserted are the ones Baton records (checkpoint, errors.jsonl), not its output.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.agents import fake_anthropic as fa
from tests.agents.clis import cli_path
from tests.agents.model import engine_prompt, opencode_agent
from tests.agents.workspace import EXAMPLE_PLAN, Box

OPENCODE = cli_path("opencode")
PLAN = EXAMPLE_PLAN
MODEL = "claude-sonnet-4-5"
OPENCODE_RETRIES = 5
"""opencode 1.18's own retries of a retryable API error (RETRY_MAX_RETRIES)."""


@pytest.fixture
def box(tmp_path: Path) -> Box:
    box = Box.create(tmp_path, "opencode", OPENCODE, OPENCODE_DISABLE_MODELS_FETCH="1")
    (box.home / ".config" / "opencode").mkdir(parents=True)
    return box


def configure(box: Box, url: str, **extra: Any) -> None:
    """opencode's own configuration in the box's HOME, its anthropic provider at `url`."""
    (box.home / ".config" / "opencode" / "opencode.json").write_text(
        fa.opencode_config(url, MODEL, **extra))


def serve(box: Box, responder: Callable[..., Any], **extra: Any) -> fa.FakeAnthropic:
    api = fa.FakeAnthropic(responder)  # type: ignore[arg-type]
    configure(box, api.url, **extra)
    return api


def chats(api: fa.FakeAnthropic) -> list[fa.Recorded]:
    """The agent's own model requests (those offering tools), not its title requests."""
    return [r for r in api.messages if r.body.get("tools")]


def _steps(cp: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return cp["baton"]["steps"]


def _errors(box: Box, wid: str) -> list[dict[str, Any]]:
    log = box.ws / ".claude/data/logs/errors.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines() if f'"{wid}"' in line]


def test_research_and_plan_completes_through_real_opencode(box: Box) -> None:
    with serve(box, opencode_agent()) as api:
        r = box.run("Research rate limiting and plan the login throttle",
                    "--scope", "research-and-plan", "--complexity", "1", "--topic", "limits")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    steps = _steps(cp)
    for sid in ("research.1", "plan"):
        assert steps[sid]["status"] == "done" and Path(steps[sid]["artifact"]).is_file()
        assert steps[sid]["usage"]["cost_usd"] > 0, steps[sid]  # opencode prices its steps
    assert chats(api) and {req.model for req in chats(api)} == {MODEL}
    assert {t["name"] for t in chats(api)[0].body["tools"]} >= {"write", "edit", "read"}
    # Baton's prompt is the whole user message, verbatim (stdin, no message argument)
    (block,) = chats(api)[0].body["messages"][0]["content"]
    assert block["text"].startswith("---\n") and engine_prompt(chats(api)[0].body) == block["text"]
    usage = cp["baton"]["usage"]["total"]
    assert usage["input_tokens"] > 0 and usage["total_tokens"] > 0 and usage["turns"] >= 4
    assert not api.other_paths


def test_implement_only_on_the_example_plan(box: Box) -> None:
    with serve(box, opencode_agent()):
        r = box.run("Implement the payment retry plan", "--scope", "implement-only",
                    "--plan", PLAN)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    summaries = Path(cp["baton"]["paths"]["summaries_dir"])
    done = [s for sid, s in _steps(cp).items() if sid.startswith("implement.")]
    assert done and all(s["status"] == "done" and Path(s["artifact"]).is_file() for s in done)
    assert all(summaries in Path(s["artifact"]).parents for s in done)


def test_parallel_phases_in_git_worktrees_through_real_opencode(box: Box) -> None:
    """In a git repository the parallel phases run with their cwd in their own worktree
    (under .claude/worktrees/): opencode writes the code there and the summary in the main
    tree's topic directory, outside its cwd, which headless it may only because Baton allows
    that directory (`external_directory` in OPENCODE_PERMISSION); each phase lands as a merge
    commit."""
    plan = box.ws / "specs" / "005_parallel" / "plans" / "001_parallel_plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Parallel Plan\n\n## Implementation Phases\n\n"
                    "### Phase 1: Base\ndependencies: []\n\n- [ ] base\n\n"
                    "### Phase 2: Left\ndependencies: [1]\n\n- [ ] left\n\n"
                    "### Phase 3: Right\ndependencies: [1]\n\n- [ ] right\n")
    git = ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], cwd=box.ws, check=True, capture_output=True)
    with serve(box, opencode_agent()) as api:
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
    sent = [req for req in chats(api) if "step implement.phase-2" in json.dumps(req.body)]
    assert sent and f".claude/worktrees/baton-{wid}-phase-2" in json.dumps(sent[0].body)


def test_full_implementation_with_the_classifier(box: Box) -> None:
    with serve(box, opencode_agent()):
        r = box.run("Add rate limiting to the login endpoint", "--complexity", "1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    assert cp["status"] == "complete"
    assert cp["state_machine"]["classification"]["source"] == "agent"
    assert cp["state_machine"]["completed_states"][-1] == "complete"
    assert _steps(cp)["classify"]["status"] == "done"


@pytest.mark.parametrize("status", [429, 500])
def test_api_errors_are_retried(box: Box, status: int) -> None:
    # The first failure opencode retries itself; the six of a whole attempt (its request and
    # five retries) end it with exit 1, which Baton classifies transient: its next attempt
    # succeeds.
    failures = 1 + OPENCODE_RETRIES + 1
    counted = fa.failing(status, first=failures, then=opencode_agent(), retry_after=0)  # type: ignore[arg-type]

    def respond(req: fa.Recorded) -> fa.Reply:
        return counted(req) if req.body.get("tools") else fa.Text("Baton step")

    with serve(box, respond) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", "workflow.backoff=0")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    cp = box.checkpoint()
    step = _steps(cp)["research.1"]
    assert step["status"] == "done" and step["attempts"] == 2
    (first,) = _errors(box, cp["checkpoint_id"])
    assert first["context"]["failure_class"] == "transient", first
    assert first["context"]["exit_code"] == 1
    message = first["error_message"]
    assert message.startswith(f"agent exited with code 1: APIError HTTP {status} ("), message
    assert "\n" not in message and '{"' not in message
    assert len(chats(api)) >= failures + 2  # the failed ones, then a write and a report


def test_an_invalid_api_key_is_fatal_at_once_with_the_fix(box: Box) -> None:
    with serve(box, fa.failing(401)) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1, step
    assert step["message"].startswith(
        "agent exited with code 1: APIError HTTP 401 (authentication_error): invalid "
        "x-api-key — fix: set the API key of opencode's provider"), step["message"]
    assert box.checkpoint()["baton"]["failure"]["class"] == "fatal"
    assert len(chats(api)) == 1  # neither opencode nor Baton retried it


def test_a_refused_write_is_reported_with_the_refusal(box: Box) -> None:
    # Baton passes no `edit` permission (edit = ""), and opencode's own configuration denies
    # edits: it offers no write tool, the model's call runs as its `invalid` tool, opencode
    # exits 0, and the barrier failure says why.
    with serve(box, opencode_agent(), permission={"edit": "deny"}) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", 'workflow.opencode.edit=""')
    assert r.returncode == 1
    step = _steps(box.checkpoint())["research.1"]
    assert "HARD BARRIER FAILED" in step["message"], step["message"]
    assert "the opencode CLI refused: write: Model tried to call unavailable tool 'write'" \
        in step["message"], step["message"]
    assert 'edit = "allow"' in step["message"]  # and the fix
    assert "write" not in {t["name"] for t in chats(api)[0].body["tools"]}


@pytest.mark.parametrize("where", ["beside", "outside"])
def test_an_agent_that_writes_elsewhere_fails_the_barrier_naming_where(box: Box,
                                                                        where: str) -> None:
    # beside: written and reported next to the artifact; outside: opencode asks for the
    # external_directory permission, rejects it headless, and the refusal names the path
    outside = box.ws.parent / "outside"
    inner = opencode_agent()

    def move(text: str, path: str) -> str:
        moved = (path.replace("/reports/", "/reports/misplaced_") if where == "beside"
                 else str(outside / Path(path).name))
        return text.replace(path, moved)

    def misplaced(req: fa.Recorded) -> fa.Reply:
        reply = inner(req)  # type: ignore[operator]
        if isinstance(reply, fa.ToolUse):
            path = reply.input["filePath"]
            reply.input["filePath"] = move(path, path)
        elif isinstance(reply, fa.Text) and "/reports/" in reply.text:
            for word in reply.text.split():
                if word.endswith(".md") and "/reports/" in word:
                    reply.text = move(reply.text, word)
        return reply

    with serve(box, misplaced):
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
        refused = (f"the opencode CLI refused: write {outside}/001_limits.md: The user "
                   "rejected permission to use this specific tool call.")
        assert refused in step["message"], step["message"]
        assert f"permission external_directory ({outside}/*): auto-rejected" \
            in step["message"], step["message"]
        assert not outside.exists()


@pytest.mark.parametrize(("setting", "expected"), [
    ("workflow.opencode.edit=deny", "opencode offers no write tool where `edit` is deny"),
    ("workflow.opencode.edit=ask", "headless opencode rejects every permission it would ask"),
    ("workflow.opencode.model=claude-sonnet-4-5", "names no provider: opencode takes "
                                                   "provider/model"),
])
def test_settings_that_cannot_work_are_refused_before_any_request(box: Box, setting: str,
                                                                   expected: str) -> None:
    box.settings = (setting,)
    with serve(box, opencode_agent()) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits")
    assert r.returncode == 1
    assert expected in r.stderr, r.stderr
    assert not (box.ws / ".claude/data/checkpoints").exists()
    assert not api.messages


def test_auto_picks_the_installed_configured_opencode(box: Box) -> None:
    """No Baton configuration (an empty `.claude/`) and claude, codex and gemini installed
    beside opencode with no credentials: `runner = "auto"` tries opencode last and takes it,
    its configuration having a provider; the identity records that auto chose it."""
    shutil.rmtree(box.ws)
    (box.ws / ".claude").mkdir(parents=True)
    (box.ws / "app.py").write_text("print('hi')\n")
    with serve(box, opencode_agent()) as api:
        r = box.baton("run", "Research rate limiting", "--scope", "research-only", "--topic",
                      "limits")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "runner: opencode (auto: the first agent CLI installed and logged in)" in r.stdout
    assert chats(api)
    identity = box.checkpoint()["baton"]["identity"]
    assert (identity["runner"], identity["runner_from"]) == ("opencode", "auto")


def test_a_run_started_from_another_directory_works_in_the_workspace(box: Box) -> None:
    """`baton run -w <ws>` from a shell elsewhere: the shell's PWD reaches the agent's
    environment, and opencode takes its working directory from PWD before its real cwd, so
    Baton sets PWD to the step's directory; otherwise opencode works in the shell's directory
    and headless rejects every write in the workspace as an external directory."""
    elsewhere = box.home / "elsewhere"
    elsewhere.mkdir()
    box.env["PWD"] = str(elsewhere)
    with serve(box, opencode_agent()):
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", "workflow.attempts=1")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert _steps(box.checkpoint())["research.1"]["status"] == "done"
    assert not any(elsewhere.iterdir())


@pytest.mark.parametrize("model", ["anthropic/claude-nope-9", "nope/claude-sonnet-4-5"])
def test_an_unknown_model_is_fatal_with_the_fix(box: Box, model: str) -> None:
    # a model its provider does not know (the API's 404), or a provider opencode does not have
    box.settings = (f"workflow.opencode.model={model}",)
    with serve(box, fa.only_models([MODEL], opencode_agent())) as api:  # type: ignore[arg-type]
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "fatal" and step["attempts"] == 1, step
    assert "fix: use a model this CLI serves" in step["message"], step["message"]
    assert "[workflow.opencode] /" in step["message"]
    assert len(chats(api)) <= 1  # nobody retried it


@pytest.mark.parametrize("behaviour", ["hang", "stall"])
def test_no_answer_is_stopped_by_the_watchdog(box: Box, behaviour: str) -> None:
    # opencode prints a text part only once it is finished: a stream that stalls after its
    # first delta shows nothing, like no answer at all. 20 s: opencode's own start-up, before
    # its first request, took 4-6 s per step on this 2-CPU machine under load.
    responder = fa.hang() if behaviour == "hang" else fa.stall()
    with serve(box, lambda req: responder(req) if req.body.get("tools")
               else fa.Text("Baton step")) as api:
        r = box.run("Research rate limiting", "--scope", "research-only", "--topic", "limits",
                    "--complexity", "1", "--set", "workflow.stall-timeout=20",
                    "--set", "workflow.attempts=1", "--set", "workflow.state-retries=0")
    assert r.returncode == 1
    (step,) = box.failed_steps()
    assert step["failure"] == "transient" and step["attempts"] == 1
    assert step["message"] == "agent stalled: no output for 20 s"
    assert len(chats(api)) == 1

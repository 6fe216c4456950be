"""Runners: argv, stdin and environment per agent CLI, stream decoding, exit classification,
and real subprocesses for the hostile-input and fake-CLI end-to-end checks."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from baton_lsp.runs.confine import UnsafePath
from baton_lsp.workflow.process import ProcessOutcome, run_process
from baton_lsp.workflow.runners import (
    FATAL,
    PERMANENT,
    RUNNER_NAMES,
    SCRIPTED_MODULE,
    TRANSIENT,
    AgentEvent,
    ClaudeRunner,
    CodexRunner,
    CommandRunner,
    GeminiRunner,
    Invocation,
    OpencodeRunner,
    Runner,
    RunResult,
    ScriptRunner,
    available_runner,
    classify_common,
    classify_outcome,
    fix_for,
    refusals,
)
from baton_lsp.workflow.runners.base import AUTH_FIXES

DATA = Path(__file__).parent / "data"
PROMPT = "# Research agent\n\nInvestigate the login flow; quote `this` and $(that).\n"
HOSTILE = "$(touch pwned) `touch pwned2`; touch pwned3 && echo x > pwned4 'q' \"dq\" {role} \\"


def invocation(cwd: Path, **kw: object) -> Invocation:
    contract = {"BATON_ARTIFACT_PATH": str(cwd / ".claude/specs/001_x/reports/001_x.md"),
                "BATON_WORKFLOW_ID": "wf_1", "BATON_STEP_ID": "research.1",
                "BATON_ROLE": "research", "BATON_WORKSPACE": str(cwd)}
    args: dict[str, object] = {"step_id": "research.1", "role": "research", "prompt": PROMPT,
                               "contract": contract, "cwd": cwd}
    args.update(kw)
    return Invocation(**args)  # type: ignore[arg-type]


def decode_file(runner: Runner, name: str) -> list[AgentEvent]:
    return [runner.decode(line) for line in (DATA / name).read_text("utf-8").splitlines()]


def texts(events: list[AgentEvent]) -> list[str]:
    return [t for e in events for t in e.text]


def final(events: list[AgentEvent]) -> RunResult:
    results = [e.result for e in events if e.result is not None]
    assert len(results) == 1
    return results[0]


# --- launch -------------------------------------------------------------------------------

def test_claude_argv_carries_options_and_keeps_the_prompt_on_stdin(tmp_path: Path) -> None:
    inv = invocation(tmp_path, model="claude-opus-4-1", tools=("Read", "Edit", "Bash(git *)"))
    spec = ClaudeRunner().launch(inv)
    argv = spec.argv
    assert argv[:5] == ["claude", "-p", "--output-format", "stream-json", "--verbose"]
    assert argv[argv.index("--model") + 1] == "claude-opus-4-1"
    artifact_dir = Path(inv.contract["BATON_ARTIFACT_PATH"]).parent
    assert argv[argv.index("--allowedTools") + 1] == (
        f"Read,Edit,Bash(git *),Edit(/{artifact_dir}/**)")
    assert argv[argv.index("--tools") + 1] == "Read,Edit,Bash,Write"
    assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
    summary = argv[argv.index("--append-system-prompt") + 1]
    assert inv.contract["BATON_ARTIFACT_PATH"] in summary and "research.1" in summary
    long_inv = invocation(tmp_path, contract={**inv.contract, "BATON_DESCRIPTION": "x\ny",
                                              "BATON_TEST_OUTPUT": "z" * 5000})
    long_argv = ClaudeRunner().launch(long_inv).argv
    long_summary = long_argv[long_argv.index("--append-system-prompt") + 1]
    assert "BATON_TEST_OUTPUT (see the environment)" in long_summary
    assert "BATON_DESCRIPTION (see the environment)" in long_summary and "zzz" not in long_summary
    assert spec.stdin == PROMPT.encode()
    assert not any(PROMPT.strip() in a or "login flow" in a for a in argv)
    assert {k: spec.env[k] for k in inv.contract} == dict(inv.contract)
    assert spec.env["PATH"] == os.environ["PATH"]


def test_claude_argv_options_are_optional_and_configurable(tmp_path: Path) -> None:
    argv = ClaudeRunner(executable="/opt/claude", permission_mode="dontAsk",
                        extra_args=("--max-turns", "5")).launch(invocation(tmp_path)).argv
    assert argv[0] == "/opt/claude"
    assert "--model" not in argv and "--tools" not in argv
    assert argv[argv.index("--allowedTools") + 1].startswith("Edit(//")
    assert argv[argv.index("--permission-mode") + 1] == "dontAsk"
    assert argv[-2:] == ["--max-turns", "5"]
    argv = ClaudeRunner(permission_mode=None).launch(invocation(tmp_path)).argv
    assert "--permission-mode" not in argv


@pytest.mark.parametrize(("front_matter", "sent"), [
    ("sonnet", "sonnet"), ("opus", "opus"), ("haiku", "haiku"), ("inherit", None),
    ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929"),
    ("sonnet-4.5", "claude-sonnet-4-5"), ("haiku-4.5", "claude-haiku-4-5"),
    ("opus-4.1", "claude-opus-4-1"), ("opus-4", "claude-opus-4-0"), ("sonnet-5", "claude-sonnet-5"),
])
def test_claude_gets_claude_model_ids(tmp_path: Path, front_matter: str, sent: str | None
                                      ) -> None:
    argv = ClaudeRunner().launch(invocation(tmp_path, model=front_matter)).argv
    assert (argv[argv.index("--model") + 1] if "--model" in argv else None) == sent


def test_claude_fallback_model_and_configured_model(tmp_path: Path) -> None:
    inv = replace(invocation(tmp_path, model="opus-4.1"), fallback_model="sonnet-4.5")
    argv = ClaudeRunner().launch(inv).argv
    assert argv[argv.index("--model") + 1] == "claude-opus-4-1"
    assert argv[argv.index("--fallback-model") + 1] == "claude-sonnet-4-5"
    argv = ClaudeRunner(model="haiku", fallback_model="sonnet").launch(inv).argv
    assert argv[argv.index("--model") + 1] == "haiku"
    assert argv[argv.index("--fallback-model") + 1] == "sonnet"


@pytest.mark.parametrize("model", ["gpt-4", "gemini-2.5-pro", "sonet"])
def test_claude_refuses_a_model_that_is_not_claude(tmp_path: Path, model: str) -> None:
    with pytest.raises(ValueError, match=r"not a Claude model.*claude-sonnet-4-5"):
        ClaudeRunner().launch(invocation(tmp_path, model=model))


def test_codex_argv_reads_the_prompt_from_stdin(tmp_path: Path) -> None:
    # The front-matter model is a Claude model: codex only gets the configured one.
    spec = CodexRunner().launch(invocation(tmp_path, model="sonnet-4.5", tools=("Read",)))
    assert spec.argv == ["codex", "exec", "--json", "--skip-git-repo-check",
                         "--sandbox", "workspace-write", "-"]
    spec = CodexRunner(model="gpt-5-codex").launch(invocation(tmp_path, model="sonnet-4.5"))
    assert spec.argv == ["codex", "exec", "--json", "--skip-git-repo-check", "-m", "gpt-5-codex",
                         "--sandbox", "workspace-write", "-"]
    assert spec.stdin == PROMPT.encode()
    assert CodexRunner(sandbox=None).launch(invocation(tmp_path)).argv == [
        "codex", "exec", "--json", "--skip-git-repo-check", "-"]


def test_gemini_argv_has_a_short_instruction_and_the_prompt_on_stdin(tmp_path: Path) -> None:
    runner = GeminiRunner(model="gemini-2.5-pro")
    spec = runner.launch(invocation(tmp_path, model="sonnet-4.5"))
    assert spec.argv == ["gemini", "-o", "stream-json", "-m", "gemini-2.5-pro",
                         "--approval-mode", "auto_edit", "-p", runner.instruction]
    assert spec.stdin == PROMPT.encode()
    assert "--skip-trust" in GeminiRunner(skip_trust=True).launch(invocation(tmp_path)).argv


def test_opencode_argv_has_no_message_and_the_prompt_on_stdin(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    """opencode sends stdin alone verbatim (an argument would go first, quoted); PWD is the
    step's directory (opencode's `run` prefers it to its cwd); the `edit` permission and the
    directories beside the workspace go in OPENCODE_PERMISSION, over the user's own rules."""
    monkeypatch.setenv("PWD", "/somewhere/else")
    monkeypatch.setenv("OPENCODE_PERMISSION", '{"bash": "deny", "external_directory": "deny"}')
    topic = tmp_path.parent / "topic dir"
    runner = OpencodeRunner(model="anthropic/claude-sonnet-4-5", agent="build")
    spec = runner.launch(invocation(tmp_path, model="sonnet-4.5", extra_dirs=(topic,)))
    assert spec.argv == ["opencode", "run", "--format", "json", "--print-logs", "--log-level",
                         "ERROR", "-m", "anthropic/claude-sonnet-4-5", "--agent", "build"]
    assert spec.stdin == PROMPT.encode()
    assert spec.env["PWD"] == str(tmp_path) and spec.env["OPENCODE_DISABLE_AUTOUPDATE"] == "1"
    assert json.loads(spec.env["OPENCODE_PERMISSION"]) == {
        "bash": "deny", "edit": "allow",
        "external_directory": {"*": "deny", f"{topic}/**": "allow"}}
    monkeypatch.setenv("OPENCODE_PERMISSION", '"ask"')  # one action for every permission
    assert json.loads(OpencodeRunner().launch(invocation(tmp_path)).env[
        "OPENCODE_PERMISSION"]) == {"*": "ask", "edit": "allow"}
    monkeypatch.delenv("OPENCODE_PERMISSION")
    plain = OpencodeRunner(edit="").launch(invocation(tmp_path))
    assert "OPENCODE_PERMISSION" not in plain.env  # opencode's own configuration decides
    assert plain.argv[-1] == "ERROR"  # no message argument


def test_script_runner_defaults_to_the_builtin_agent(tmp_path: Path) -> None:
    spec = ScriptRunner().launch(invocation(tmp_path))
    assert spec.argv == [sys.executable, "-P", "-m", SCRIPTED_MODULE]
    assert spec.stdin == PROMPT.encode() and spec.env["BATON_ROLE"] == "research"
    script = tmp_path / "{role} agent.py"
    assert ScriptRunner(script).launch(invocation(tmp_path)).argv == [sys.executable,
                                                                       str(script)]


def test_command_runner_prompt_file_is_never_written_through_a_planted_link(
        tmp_path: Path) -> None:
    """`{prompt_file}` goes below the workspace through `confine`: `.claude/tmp` planted as
    a link out of it is refused, naming the link, and nothing is written there."""
    ws = tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".claude" / "tmp").symlink_to(outside)
    with pytest.raises(UnsafePath, match=r"\.claude/tmp: it is a symbolic link"):
        CommandRunner(["agent", "{prompt_file}"]).launch(invocation(ws))
    assert list(outside.iterdir()) == []


def test_command_runner_fills_placeholders_per_element(tmp_path: Path) -> None:
    runner = CommandRunner(["my-agent", "--out={artifact}", "{step}:{role}", "{workspace}",
                            "{prompt_file}", '{"json": {unknown}}'])
    inv = invocation(tmp_path, step_id="x{role}")
    spec = runner.launch(inv)
    prompt_file = Path(spec.argv[4])
    try:
        assert spec.argv[:4] == ["my-agent", f"--out={inv.contract['BATON_ARTIFACT_PATH']}",
                                 "x{role}:research", str(tmp_path)]
        assert spec.argv[5] == '{"json": {unknown}}'
        assert prompt_file.read_text("utf-8") == PROMPT
        assert spec.env["BATON_PROMPT_FILE"] == str(prompt_file)
        assert spec.stdin == PROMPT.encode()
    finally:
        spec.cleanup()
    assert not prompt_file.exists()
    assert prompt_file.parent == tmp_path / ".claude" / "tmp" / "prompts"  # in the workspace
    assert CommandRunner(["a"]).launch(inv).temp_files == ()
    with pytest.raises(ValueError, match="empty"):
        CommandRunner([])


ECHO_AGENT = """\
import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "stdin": sys.stdin.read(),
                  "env": {k: v for k, v in os.environ.items() if k.startswith("BATON_")}}))
"""


async def test_hostile_values_reach_the_command_verbatim(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    agent = tmp_path / "echo_agent.py"
    agent.write_text(ECHO_AGENT)
    contract = {"BATON_ARTIFACT_PATH": str(ws / f"report {HOSTILE}.md"),
                "BATON_DESCRIPTION": HOSTILE, "BATON_STEP_ID": "research.1",
                "BATON_WORKSPACE": str(ws)}
    inv = Invocation(step_id="research.1", role="research", prompt=f"{PROMPT}\n{HOSTILE}\n",
                     contract=contract, cwd=ws)
    template = [sys.executable, str(agent), "{artifact}", "--step", "{step}",
                "$(touch pwned5) `touch pwned6`"]
    for runner in (CommandRunner(template), ScriptRunner(agent)):
        spec = runner.launch(inv)
        lines: list[str] = []
        out = await run_process(spec.argv, cwd=ws, env=spec.env, stdin=spec.stdin,
                                on_line=lines.append, timeout=10, stall_timeout=None)
        assert out.exit_code == 0, out.stderr_tail
        seen = json.loads("\n".join(lines))
        if isinstance(runner, CommandRunner):
            assert seen["argv"] == [contract["BATON_ARTIFACT_PATH"], "--step", "research.1",
                                    template[-1]]
        assert seen["stdin"] == inv.prompt
        assert {k: seen["env"][k] for k in contract} == contract
    leftovers = [p.name for d in (ws, tmp_path, Path.cwd()) for p in d.iterdir()
                 if p.name.startswith("pwned")]
    assert leftovers == []


# --- Claude stream decoding ---------------------------------------------------------------

def test_claude_offline_stream_is_a_fatal_login_failure() -> None:
    runner = ClaudeRunner()
    events = decode_file(runner, "claude_stream_offline.jsonl")
    assert events[0].session_id == "6f1c2a4e-8d3b-4b7a-9e55-2c0d9a7f13b1"
    assert texts(events) == ["Not logged in · Please run /login"]
    assert events[1].error == "authentication_failed"
    result = final(events)
    assert result == RunResult(ok=False, subtype="success",
                               message="Not logged in · Please run /login",
                               session_id="6f1c2a4e-8d3b-4b7a-9e55-2c0d9a7f13b1", failure=FATAL,
                               usage=result.usage)
    assert result.usage is not None and result.usage["cost_usd"] == 0
    assert runner.classify_exit(1, "", result) == FATAL


def test_claude_success_stream_carries_signal_lines() -> None:
    runner = ClaudeRunner()
    events = decode_file(runner, "claude_stream_success.jsonl")
    path = "/tmp/baton-ws/.claude/specs/001_auth/reports/001_auth_patterns.md"
    # assistant text only: tool calls and tool results (which here contain a fake signal)
    # are not agent output
    assert texts(events) == [
        "PROGRESS: reading the codebase",
        "I researched the authentication patterns and wrote the report.", "",
        f"REPORT_CREATED: {path}", "PROGRESS: research complete"]
    result = final(events)
    assert result.ok and result.failure is None and result.subtype == "success"
    assert result.session_id == events[0].session_id == "1d9e8f7a-6b5c-4d3e-8f2a-1b0c9d8e7f6a"
    assert runner.classify_exit(0, "", result) is None


def test_claude_rate_limit_stream_is_transient() -> None:
    runner = ClaudeRunner()
    events = decode_file(runner, "claude_stream_rate_limit.jsonl")
    assert events[1].error == "rate_limit"
    result = final(events)
    assert not result.ok and result.failure == TRANSIENT
    assert runner.classify_exit(1, "", result) == TRANSIENT


@pytest.mark.parametrize(("line", "text"), [
    ("", [""]), ("   ", ["   "]), ("plain words", ["plain words"]), ("{not json", ["{not json"]),
    ("[1, 2]", ["[1, 2]"]), ('"a string"', ['"a string"']),
    ('{"type": "stream_event", "event": {}}', []), ('{"no": "type"}', []),
    ('{"type": "assistant", "message": {"content": "one\\ntwo"}}', ["one", "two"]),
])
def test_claude_decode_tolerates_any_line(line: str, text: list[str]) -> None:
    event = ClaudeRunner().decode(line)
    assert event.text == text and event.result is None


@pytest.mark.parametrize(("result", "failure"), [
    ({"subtype": "error_max_turns", "is_error": True}, PERMANENT),
    ({"subtype": "error_during_execution", "is_error": True}, PERMANENT),
    ({"subtype": "error_during_execution", "is_error": True,
      "errors": ["API Error: 529 overloaded_error"]}, TRANSIENT),
    ({"subtype": "success", "is_error": True, "result": "API Error: 500 Internal server error"},
     TRANSIENT),
    ({"subtype": "success", "is_error": True, "error": "overloaded", "result": "x"}, TRANSIENT),
    ({"subtype": "success", "is_error": True, "error": "billing_error", "result": "x"}, FATAL),
    ({"subtype": "success", "is_error": True, "result": "Invalid API key · Fix with /login"},
     FATAL),
    ({"subtype": "success", "is_error": False, "result": "done"}, None),
])
def test_claude_result_failures(result: dict[str, object], failure: str | None) -> None:
    decoded = ClaudeRunner().decode(json.dumps({"type": "result", **result})).result
    assert decoded is not None and decoded.failure == failure and decoded.ok == (failure is None)


# --- Codex and Gemini stream decoding -------------------------------------------------------

def test_codex_stream_decoding() -> None:
    runner = CodexRunner()
    lines = [
        '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
        '{"type":"turn.started"}',
        '{"type":"item.started","item":{"id":"item_0","type":"command_execution",'
        '"command":"bash -lc ls","status":"in_progress"}}',
        '{"type":"item.completed","item":{"id":"item_0","type":"command_execution",'
        '"command":"bash -lc ls","aggregated_output":"REPORT_CREATED: /nope","exit_code":0}}',
        '{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"hmm"}}',
        '{"type":"item.completed","item":{"id":"item_2","type":"agent_message",'
        '"text":"Done.\\nREPORT_CREATED: /ws/r.md"}}',
        '{"type":"some.future.event","x":1}',
        '{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,'
        '"output_tokens":5}}',
    ]
    events = [runner.decode(line) for line in lines]
    assert events[0].session_id == "0199a213-81c0-7800-8aa1-bbab2a035a53"
    assert texts(events) == ["Done.", "REPORT_CREATED: /ws/r.md"]
    assert final(events).ok
    failed = runner.decode('{"type":"turn.failed","error":{"message":"stream disconnected '
                           'before completion: rate limit reached"}}').result
    assert failed is not None and not failed.ok and failed.failure == TRANSIENT
    error = runner.decode('{"type":"error","message":"model not supported"}')
    assert error.error == "model not supported"
    assert error.result is not None and error.result.failure == PERMANENT
    assert runner.decode("WARNING: proceeding").text == ["WARNING: proceeding"]


REPORT = "/tmp/baton-ws/specs/001_auth/reports/001_auth_patterns.md"


@pytest.mark.parametrize(("name", "denial"), [
    # codex-cli 0.169.0 unsandboxed (--dangerously-bypass-approvals-and-sandbox) as a normal
    # user, the report directory not writable: the only refusals its --json stream carries
    ("codex_stream_refused_shell.jsonl",
     f"shell command: /bin/bash: line 1: {REPORT}: Permission denied"),
    ("codex_stream_failed_patch.jsonl", f"apply_patch add {REPORT}: failed"),
])
def test_codex_failed_writes_become_denials(name: str, denial: str) -> None:
    runner = CodexRunner()
    events = decode_file(runner, name)
    result = final(events)
    assert result.ok and result.failure is None
    assert result.denials == (denial,)
    assert texts(events)[-1] == "REPORT_FAILED"  # the model's words stay text, not denials
    assert runner.stderr_denials("") == ()
    # nothing is left over for the next stream decoded by the same task
    assert runner.decode('{"type":"turn.completed","usage":{}}').result == RunResult(
        ok=True, subtype="turn.completed", message=None, session_id=None, failure=None)


def test_codex_read_only_patch_rejection_is_read_from_stderr() -> None:
    # codex-cli 0.169.0 --sandbox read-only: the rejected apply_patch is in neither the
    # stream nor its final result; codex logs it on stderr.
    runner = CodexRunner(sandbox="read-only")
    result = final(decode_file(runner, "codex_stream_read_only_patch.jsonl"))
    assert result.ok and result.denials == ()
    stderr = (DATA / "codex_stderr_read_only_patch.txt").read_text("utf-8")
    expected = ("apply_patch: writing is blocked by read-only sandbox (codex runs in its "
                "read-only sandbox; fix: [workflow.codex] sandbox = \"workspace-write\", "
                "Baton's default)")
    assert runner.stderr_denials(stderr) == (expected,)
    assert runner.stderr_denials(f"\x1b[31m{stderr}\x1b[0m\n{stderr}") == (expected,)
    assert refusals(runner, result, stderr) == (expected,)
    outside = ("2026-11-24T19:44:10.855691Z ERROR codex_core::tools::router: error=patch "
               "rejected: writing outside of the project; rejected by user approval settings")
    assert runner.stderr_denials(outside) == ("apply_patch: writing outside of the project",)
    # a failed patch codex ran (not rejected) is logged too, but comes from the stream
    failed = "ERROR codex_core::tools::router: error=Exit code: 1\nWall time: 0 seconds\n"
    assert runner.stderr_denials(failed) == ()


@pytest.mark.parametrize(("item", "denial"), [
    ({"type": "command_execution", "command": "bash -lc 'grep -r denied logs'",
      "aggregated_output": "logs/a: permission denied for user x\n", "exit_code": 0,
      "status": "completed"}, None),  # a command that succeeded refused nothing
    ({"type": "command_execution", "command": "pytest", "aggregated_output": "1 failed\n",
      "exit_code": 1, "status": "failed"}, None),  # failed on its own, nothing refused
    ({"type": "command_execution", "command": "touch /ro/x",
      "aggregated_output": "touch: cannot touch '/ro/x': Read-only file system\n",
      "exit_code": 1, "status": "failed"},
     "shell command: touch: cannot touch '/ro/x': Read-only file system"),
    ({"type": "file_change", "changes": [{"path": "/ws/a.md", "kind": "update"}],
      "status": "completed"}, None),
    ({"type": "file_change", "changes": "?", "status": "declined"},
     "apply_patch a file change: declined"),
])
def test_codex_refusal_items(item: dict[str, object], denial: str | None) -> None:
    runner = CodexRunner()
    assert runner.decode(json.dumps({"type": "item.completed", "item": item})).text == []
    result = runner.decode('{"type":"turn.completed"}').result
    assert result is not None and result.denials == ((denial,) if denial else ())


def test_codex_failed_turn_drops_collected_refusals() -> None:
    runner = CodexRunner()
    runner.decode(json.dumps({"type": "item.completed", "item": {
        "type": "file_change", "changes": [{"path": "/ws/a.md", "kind": "add"}],
        "status": "failed"}}))
    failed = runner.decode('{"type":"turn.failed","error":{"message":"boom"}}').result
    assert failed is not None and not failed.ok and failed.denials == ()
    result = runner.decode('{"type":"turn.completed"}').result
    assert result is not None and result.denials == ()


def test_refusals_merge_the_result_and_stderr() -> None:
    result = RunResult(ok=True, subtype="success", message=None, session_id=None,
                       failure=None, denials=("Write /ws/a.md",))
    assert refusals(ClaudeRunner(), result, "patch rejected: x") == ("Write /ws/a.md",)
    assert refusals(ClaudeRunner(), None, "") == ()
    line = "ERROR codex_core::tools::router: error=patch rejected: no; rejected by user " \
           "approval settings"
    assert refusals(CodexRunner(), replace(result, denials=("apply_patch: no",)),
                    f"{line}\n{line}") == ("apply_patch: no",)


def test_gemini_deltas_are_joined_into_whole_lines() -> None:
    runner = GeminiRunner()
    lines = [
        '{"type":"init","timestamp":"2025-10-10T12:00:00.000Z","session_id":"g-1",'
        '"model":"gemini-2.5-pro"}',
        '{"type":"message","role":"user","content":"say REPORT_CREATED: /from/prompt"}',
        '{"type":"message","role":"assistant","content":"Working.\\nREPORT_CRE","delta":true}',
        '{"type":"message","role":"assistant","content":"ATED: /ws/r.md\\nPROG","delta":true}',
        '{"type":"tool_use","tool_name":"write_file","tool_id":"t1","parameters":{}}',
        '{"type":"message","role":"assistant","content":"RESS: done","delta":true}',
        '{"type":"result","status":"success","stats":{"total_tokens":10}}',
    ]
    events = [runner.decode(line) for line in lines]
    assert events[0].session_id == "g-1"
    assert texts(events) == ["Working.", "REPORT_CREATED: /ws/r.md", "PROG", "RESS: done"]
    assert final(events).ok
    bad = runner.decode('{"type":"result","status":"error","error":{"type":"FatalAuth",'
                        '"message":"Please set an Auth method"}}').result
    assert bad is not None and bad.failure == FATAL
    runner.decode('{"type":"message","role":"assistant","content":"tail","delta":true}')
    assert runner.finish() == ["tail"]


async def test_gemini_keeps_one_partial_line_per_stream() -> None:
    runner = GeminiRunner()
    a_started, b_done = asyncio.Event(), asyncio.Event()

    def delta(text: str) -> str:
        return json.dumps({"type": "message", "role": "assistant", "content": text,
                           "delta": True})

    async def stream_a() -> list[str]:
        out = runner.decode(delta("AAA")).text
        a_started.set()
        await b_done.wait()
        return out + runner.decode(delta("-end\n")).text

    async def stream_b() -> list[str]:
        await a_started.wait()
        out = runner.decode(delta("BBB\n")).text
        b_done.set()
        return out

    assert await asyncio.gather(stream_a(), stream_b()) == [["AAA-end"], ["BBB"]]


@pytest.mark.parametrize(("code", "failure"), [(41, FATAL), (42, PERMANENT), (53, PERMANENT),
                                               (0, None), (1, PERMANENT)])
def test_gemini_exit_codes(code: int, failure: str | None) -> None:
    assert GeminiRunner().classify_exit(code, "", None) == failure


def test_gemini_untrusted_folder_is_fatal() -> None:
    assert GeminiRunner().classify_exit(1, "FatalUntrustedWorkspaceError: folder is not "
                                           "trusted", None) == FATAL
    # gemini 0.61: exit 55 with the message on stderr, in colour.
    stderr = ("\x1b[31mGemini CLI is not running in a trusted directory. To proceed, either use "
              "`--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, "
              "or trust this directory in interactive mode.\x1b[0m")
    assert GeminiRunner().classify_exit(55, stderr, None) == FATAL
    assert GeminiRunner().classify_exit(1, stderr, None) == FATAL
    assert "skip-trust" in (fix_for(stderr) or "")


@pytest.mark.parametrize(("stderr", "message", "failure", "fix"), [
    # gemini's exhausted quota after its own retries: the result says little, stderr the status
    ("ApiError: {\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\"}} status: 429",
     "Quota exceeded", TRANSIENT, None),
    ("", "We're currently experiencing high demand, which may cause temporary errors.",
     TRANSIENT, None),
    ("", "unexpected status 401 Unauthorized: Incorrect API key provided", FATAL, "API_KEY"),
    ("", "API key not valid. Please pass a valid API key.", FATAL, "API_KEY"),
    ("", "models/sonnet-4.5 is not found for API version v1beta", FATAL, "model"),
    ("Error: --dangerously-skip-permissions cannot be used with root/sudo privileges for "
     "security reasons", "", FATAL, "acceptEdits"),
    ("", "AssertionError: 401 != 200", PERMANENT, None),
])
def test_failure_classes_from_real_messages(stderr: str, message: str, failure: str,
                                            fix: str | None) -> None:
    result = RunResult(ok=False, subtype="error", message=message, session_id=None,
                       failure=PERMANENT)
    assert classify_common(1, stderr, result) == failure
    assert (fix is None) == (fix_for(f"{stderr}\n{message}") is None)
    if fix:
        assert fix in (fix_for(f"{stderr}\n{message}") or "")


# --- classification -------------------------------------------------------------------------

def failed(failure: str | None, message: str = "x") -> RunResult:
    return RunResult(ok=False, subtype="error", message=message, session_id=None,
                     failure=failure)


OK = RunResult(ok=True, subtype="success", message="done", session_id="s", failure=None)


@pytest.mark.parametrize(("code", "stderr", "result", "expected"), [
    (0, "", None, None),
    (0, "warning: rate limit close", OK, None),
    (127, "", None, FATAL),
    (126, "", None, FATAL),
    (124, "", None, TRANSIENT),
    (137, "", None, TRANSIENT),
    (143, "", None, TRANSIENT),
    (1, "Error: 429 Too Many Requests", None, TRANSIENT),
    (1, '{"type":"overloaded_error"}', None, TRANSIENT),
    (1, "HTTP 503 Service Unavailable", None, TRANSIENT),
    (1, "API Error: 502 Bad Gateway", None, TRANSIENT),
    (1, "read ECONNRESET", None, TRANSIENT),
    (1, "request timed out after 600s", None, TRANSIENT),
    (75, "API error: rate limit exceeded (429), retry later", None, TRANSIENT),  # scripted
    (1, "write failed: No space left on device", None, FATAL),
    (1, "Error: ENOSPC: no space left, write", None, FATAL),
    (1, "OSError: [Errno 30] Read-only file system: '/ws/x'", None, FATAL),
    (2, "sh: 1: cannot create /ws/x: Permission denied", None, FATAL),
    (1, "Not logged in · Please run /login", None, FATAL),
    (1, "AssertionError: 401 != 200", None, PERMANENT),
    (2, "processed 500 files, line 503 bad", None, PERMANENT),
    (0, "", failed(None), PERMANENT),
    (0, "", failed(None, "overloaded"), TRANSIENT),
    (1, "", failed(FATAL), FATAL),
    (1, "", failed(TRANSIENT), TRANSIENT),
    (127, "", failed(TRANSIENT), FATAL),
])
def test_common_exit_classification(code: int, stderr: str, result: RunResult | None,
                                    expected: str | None) -> None:
    assert classify_common(code, stderr, result) == expected
    for runner in (ClaudeRunner(), CodexRunner(), ScriptRunner(), CommandRunner(["x"])):
        assert runner.classify_exit(code, stderr, result) == expected


def outcome(**kw: object) -> ProcessOutcome:
    base: dict[str, object] = {"exit_code": None, "timed_out": False, "stalled": False,
                               "cancelled": False, "duration": 1.0, "stderr_tail": "",
                               "signal": None}
    base.update(kw)
    return ProcessOutcome(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(("out", "expected"), [
    (outcome(timed_out=True, signal=signal.SIGTERM), TRANSIENT),
    (outcome(stalled=True, signal=signal.SIGKILL), TRANSIENT),
    (outcome(cancelled=True, signal=signal.SIGTERM), FATAL),
    (outcome(signal=signal.SIGKILL), TRANSIENT),  # e.g. the OOM killer
    (outcome(signal=signal.SIGSEGV), PERMANENT),
    (outcome(exit_code=0), None),
    (outcome(exit_code=41), FATAL),
])
def test_outcome_classification(out: ProcessOutcome, expected: str | None) -> None:
    assert classify_outcome(GeminiRunner(), out, None) == expected


# --- selection ------------------------------------------------------------------------------

def test_available_runner_defaults_to_the_offline_script_agent() -> None:
    for name in (None, "auto", "script", " Script "):
        runner = available_runner(name, which=lambda _: "/usr/bin/claude")
        assert isinstance(runner, ScriptRunner) and isinstance(runner, Runner)
        assert runner.argv == [sys.executable, "-P", "-m", SCRIPTED_MODULE]


def test_available_runner_by_name(caplog: pytest.LogCaptureFixture) -> None:
    found = {"claude": ClaudeRunner, "codex": CodexRunner, "gemini": GeminiRunner}
    for name, cls in found.items():
        runner = available_runner(name, which=lambda exe: f"/usr/bin/{exe}")
        assert type(runner) is cls and runner.name == name and isinstance(runner, Runner)
    assert available_runner("claude", which=lambda _: "/x",
                            executable="/opt/claude").launch(invocation(Path("/w"))).argv[0] \
        == "/opt/claude"
    with caplog.at_level(logging.WARNING):
        assert isinstance(available_runner("codex", which=lambda _: None), CodexRunner)
    assert "not on PATH" in caplog.text
    command = available_runner("command", command=["agent", "{artifact}"])
    assert isinstance(command, CommandRunner) and command.argv_template == ["agent",
                                                                             "{artifact}"]


def test_available_runner_rejects_unknown_names() -> None:
    with pytest.raises(ValueError) as info:
        available_runner("copilot")
    assert all(name in str(info.value) for name in RUNNER_NAMES)
    with pytest.raises(ValueError, match="argv template"):
        available_runner("command")


# --- end to end through run_process ---------------------------------------------------------

FAKE_CLAUDE = """#!{python}
import os, sys
args = sys.argv[1:]
prompt = sys.stdin.read()
if args[:4] != ["-p", "--output-format", "stream-json", "--verbose"]:
    sys.stderr.write("error: bad arguments %r\\n" % (args,))
    sys.exit(64)
if any(prompt.strip() in a for a in args):
    sys.stderr.write("error: prompt passed in argv\\n")
    sys.exit(65)
with open(os.environ["FAKE_CLAUDE_STDIN"], "w", encoding="utf-8") as f:
    f.write(prompt)
with open(os.environ["FAKE_CLAUDE_STREAM"], encoding="utf-8") as f:
    for line in f:
        sys.stdout.write(line)
        sys.stdout.flush()
sys.exit(int(os.environ["FAKE_CLAUDE_EXIT"]))
"""


@pytest.mark.parametrize(("stream", "code", "expected"), [
    ("claude_stream_success.jsonl", 0, None),
    ("claude_stream_offline.jsonl", 1, FATAL),
    ("claude_stream_rate_limit.jsonl", 1, TRANSIENT),
])
async def test_fake_claude_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      stream: str, code: int, expected: str | None) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(FAKE_CLAUDE.replace("{python}", sys.executable))
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_CLAUDE_STREAM", str(DATA / stream))
    monkeypatch.setenv("FAKE_CLAUDE_STDIN", str(tmp_path / "stdin.txt"))
    monkeypatch.setenv("FAKE_CLAUDE_EXIT", str(code))

    runner = available_runner("claude")
    inv = invocation(tmp_path, model="claude-sonnet-4-5", tools=("Read", "Write"))
    spec = runner.launch(inv)
    events: list[AgentEvent] = []
    out = await run_process(spec.argv, cwd=tmp_path, env=spec.env, stdin=spec.stdin,
                            on_line=lambda line: events.append(runner.decode(line)),
                            timeout=20, stall_timeout=10)
    assert out.exit_code == code, out.stderr_tail
    assert (tmp_path / "stdin.txt").read_text("utf-8") == PROMPT
    result = final(events)
    assert classify_outcome(runner, out, result) == expected
    if expected is None:
        assert any(t.startswith("REPORT_CREATED: /") for t in texts(events))


async def test_real_claude_offline_stream_shape(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.agents.clis import cli_path

    claude = cli_path("claude")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))  # no stored login: the run fails before any API call
    for var in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
                "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"):
        monkeypatch.delenv(var, raising=False)
    runner = ClaudeRunner(executable=claude, extra_args=("--max-turns", "1"))
    spec = runner.launch(invocation(tmp_path))
    events: list[AgentEvent] = []
    out = await run_process(spec.argv, cwd=tmp_path, env=spec.env, stdin=spec.stdin,
                            on_line=lambda line: events.append(runner.decode(line)),
                            timeout=60, stall_timeout=None)
    assert not out.killed_by_us, out
    assert events and events[0].session_id, out.stderr_tail
    assert texts(events), "expected the assistant's error text"
    result = final(events)
    assert result.session_id == events[0].session_id
    assert classify_outcome(runner, out, result) in (None, FATAL, TRANSIENT)


# --- Gemini refusals and API error messages (recorded from gemini 0.61.0) ------------------

_G_STATS = {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0, "cached": 0,
            "input": 0, "duration_ms": 0, "tool_calls": 0}
_G_NOT_FOUND = ('Tool "write_file" not found. Did you mean one of: "read_file", '
                '"update_topic", "grep_search"?')
_G_OUTSIDE = ('Path not in workspace: Attempted path "/tmp/t/else/r.md" resolves outside the '
              'allowed workspace directories: /tmp/t/ws or the project temp directory: '
              '/tmp/t/home/.gemini/tmp/ws')


def _gemini_call(tool_id: str, path: str, error_type: str | None, message: str) -> list[str]:
    """A recorded write_file `tool_use` and its `tool_result` (`error_type` None: success)."""
    use = {"type": "tool_use", "timestamp": "2026-11-24T19:46:18.318Z",
           "tool_name": "write_file", "tool_id": tool_id,
           "parameters": {"file_path": path, "content": "# Report\n"}}
    result: dict[str, object] = {"type": "tool_result", "timestamp": "2026-11-24T19:46:18.492Z",
                                 "tool_id": tool_id, "status": "success"}
    if error_type is not None:
        result.update(status="error", output=message,
                      error={"type": error_type, "message": message})
    return [json.dumps(use), json.dumps(result)]


def _gemini_result(error: str | None) -> str:
    obj: dict[str, object] = {"type": "result", "timestamp": "2026-11-24T19:48:39.259Z",
                              "status": "success" if error is None else "error",
                              "stats": _G_STATS}
    if error is not None:
        obj["error"] = {"type": "unknown", "message": error}
    return json.dumps(obj)


def test_gemini_refused_tool_calls_become_denials() -> None:
    # --approval-mode default: write_file is not offered; a path outside the workspace is
    # refused in every mode; a failed read is not a refusal; the result still says success.
    runner = GeminiRunner()
    lines = [
        '{"type":"init","timestamp":"2026-11-24T19:46:18.188Z","session_id":"s-1",'
        '"model":"gemini-2.5-flash"}',
        *_gemini_call("write_file__1", "/ws/specs/r.md", "tool_not_registered", _G_NOT_FOUND),
        *_gemini_call("write_file__2", "/tmp/t/else/r.md", "invalid_tool_params", _G_OUTSIDE),
        *_gemini_call("write_file__3", "/ws/specs/ok.md", None, ""),
        json.dumps({"type": "tool_use", "tool_name": "read_file", "tool_id": "read_file__4",
                    "parameters": {"absolute_path": "/ws/missing.md"}}),
        json.dumps({"type": "tool_result", "tool_id": "read_file__4", "status": "error",
                    "error": {"type": "file_not_found", "message": "File not found."}}),
        '{"type":"message","role":"assistant","content":"Could not write.\\n","delta":true}',
        _gemini_result(None),
    ]
    result = final([runner.decode(line) for line in lines])
    assert result.ok and result.failure is None
    assert result.denials == (
        f"write_file /ws/specs/r.md: {_G_NOT_FOUND} (gemini offers no file-writing tool in "
        'this approval mode; fix: [workflow.gemini] approval-mode = "auto_edit", Baton\'s '
        "default)",
        f"write_file /tmp/t/else/r.md: {_G_OUTSIDE}",
    )
    # the next run of the same stream starts clean
    assert final([runner.decode(_gemini_result(None))]).denials == ()


async def test_gemini_denials_are_kept_per_stream() -> None:
    runner = GeminiRunner()
    a_called = asyncio.Event()

    async def stream_a() -> tuple[str, ...]:
        for line in _gemini_call("w_a", "/ws/a.md", "tool_not_registered", _G_NOT_FOUND):
            runner.decode(line)
        a_called.set()
        await asyncio.sleep(0)
        result = runner.decode(_gemini_result(None)).result
        assert result is not None
        return result.denials

    async def stream_b() -> tuple[str, ...]:
        await a_called.wait()
        for line in _gemini_call("w_b", "/ws/b.md", None, ""):
            runner.decode(line)
        result = runner.decode(_gemini_result(None)).result
        assert result is not None
        return result.denials

    denials_a, denials_b = await asyncio.gather(stream_a(), stream_b())
    assert [d.split(":")[0] for d in denials_a] == ["write_file /ws/a.md"]
    assert denials_b == ()


_G_KEY_BODY = {"error": {
    "code": 400, "message": "API key not valid. Please pass a valid API key.",
    "status": "INVALID_ARGUMENT",
    "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
                 "domain": "googleapis.com",
                 "metadata": {"service": "generativelanguage.googleapis.com"}},
                {"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US",
                 "message": "API key not valid. Please pass a valid API key."}]}}
_G_500_BODY = {"error": {"code": 500, "status": "INTERNAL", "message":
                         "An internal error has occurred. Please retry or report in "
                         "https://developers.generativeai.google/guide/troubleshooting"}}


@pytest.mark.parametrize(("error", "message", "failure"), [
    (f"[API Error: {json.dumps(_G_KEY_BODY, separators=(',', ':'))}]",
     "[API Error: 400 INVALID_ARGUMENT: API key not valid. Please pass a valid API key. "
     "(API_KEY_INVALID)]", FATAL),
    (f"[API Error: {json.dumps(_G_500_BODY, separators=(',', ':'))}]",
     "[API Error: 500 INTERNAL: An internal error has occurred. Please retry or report in "
     "https://developers.generativeai.google/guide/troubleshooting]", TRANSIENT),
    # quota: transient by the docs URL only; the exit classification (stderr) decides
    ("[API Error: You exceeded your current quota, please check your plan and billing "
     "details. For more information on this error, head to: https://ai.google.dev/gemini-api/"
     "docs/rate-limits.\nSuggested retry after 1s.]\nPlease wait and try again later.",
     "[API Error: You exceeded your current quota, please check your plan and billing "
     "details. For more information on this error, head to: https://ai.google.dev/gemini-api/"
     "docs/rate-limits. Suggested retry after 1s.] Please wait and try again later.",
     TRANSIENT),
    ("[API Error: models/sonnet-4.5 is not found for API version v1beta, or is not supported "
     "for generateContent.]",
     "[API Error: models/sonnet-4.5 is not found for API version v1beta, or is not supported "
     "for generateContent.]", FATAL),
    ("\x1b[31m[API Error: {not json}]\x1b[0m", "[API Error: {not json}]", PERMANENT),
])
def test_gemini_api_errors_become_one_readable_line(error: str, message: str,
                                                    failure: str) -> None:
    result = GeminiRunner().decode(_gemini_result(error)).result
    assert result is not None and not result.ok
    assert result.message == message  # no `unknown` type, colour, line breaks or JSON body
    assert result.failure == failure
    typed = GeminiRunner().decode(json.dumps({
        "type": "result", "status": "error",
        "error": {"type": "FatalTurnLimitedError", "message": "Reached max session turns"}}))
    assert typed.result is not None
    assert typed.result.message == "FatalTurnLimitedError: Reached max session turns"


_G_QUOTA_STDERR = """\
Attempt 1 failed: You exceeded your current quota, please check your plan and billing \
details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/\
rate-limits.
Suggested retry after 1s.. Max attempts reached
Error when talking to Gemini API Full report available at: /tmp/t/gemini-client-error-Turn.\
run-sendMessageStream-2026-11-24T19-49-23-682Z.json RetryableQuotaError: You exceeded your \
current quota, please check your plan and billing details.
    at classifyGoogleError (file:///gemini-cli/bundle/chunk-JDPZ4CE3.js:307385:12)
    at async main (file:///gemini-cli/bundle/gemini-3HFX2LNT.js:17627:5) {
  cause: {
    code: 429,
    message: 'You exceeded your current quota, please check your plan and billing details.',
    details: [ [Object], [Object] ]
  },
  retryDelayMs: 1000,
  status: 429
}
"""


@pytest.mark.parametrize(("code", "failure"), [(173, TRANSIENT), (244, TRANSIENT),
                                               (247, TRANSIENT), (144, PERMANENT)])
def test_gemini_http_exit_codes_are_a_fallback(code: int, failure: str) -> None:
    # gemini exits with the HTTP status mod 256 after its own retries (429 → 173, …)
    plain = GeminiRunner().decode(_gemini_result("[API Error: Quota exceeded]")).result
    assert GeminiRunner().classify_exit(code, "", plain) == failure
    # text that names a cause still decides first
    key = GeminiRunner().decode(_gemini_result("[API Error: API key not valid.]")).result
    assert GeminiRunner().classify_exit(code, "", key) == FATAL


def test_gemini_quota_exit_is_transient_from_stderr() -> None:
    result = GeminiRunner().decode(_gemini_result(
        "[API Error: You exceeded your current quota, please check your plan and billing "
        "details.]")).result
    assert result is not None and result.failure == PERMANENT  # the message alone: unknown
    assert classify_common(1, _G_QUOTA_STDERR, result) == TRANSIENT  # `status: 429`
    assert GeminiRunner().classify_exit(173, _G_QUOTA_STDERR, result) == TRANSIENT


def test_claude_refusal_by_a_deny_rule_is_a_denial() -> None:
    # claude 2.1.197 with a project deny rule: the refusal is only a `tool_use_error` tool
    # result (no `permission_denials`); the denial names the tool, the path and the reason.
    events = decode_file(ClaudeRunner(), "claude_2.1.197_deny_rule.jsonl")
    (result,) = [e.result for e in events if e.result is not None]
    assert result.ok
    assert result.denials == ("Write /ws/specs/x.md: File is in a directory that is denied by "
                              "your permission settings.",)


def test_claude_tool_failure_that_is_no_refusal_is_not_a_denial() -> None:
    runner = ClaudeRunner()
    runner.decode(json.dumps({"type": "assistant", "message": {"content": [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/ws/a"}}]}}))
    runner.decode(json.dumps({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "t1", "is_error": True,
         "content": "<tool_use_error>File does not exist.</tool_use_error>"}]}}))
    event = runner.decode(json.dumps({"type": "result", "subtype": "success", "result": "ok",
                                      "is_error": False}))
    assert event.result is not None and event.result.denials == ()


# --- failures the CLI retries in vain (issue 30, defect 6) -------------------------------------

def _api_retry(status: int | None, error: str) -> str:
    """claude 2.1.331's `api_retry` line, as it printed it against FakeAnthropic."""
    return json.dumps({"type": "system", "subtype": "api_retry", "attempt": 1, "max_retries": 10,
                       "retry_delay_ms": 589, "error_status": status, "error": error,
                       "session_id": "5f30d43c", "uuid": "e7475c0c"})


@pytest.mark.parametrize(("status", "error", "hopeless"), [
    (401, "authentication_failed", True),
    (403, "authentication_failed", True),  # retried when the answer says x-should-retry
    (400, "invalid_request", True),
    (404, "model_not_found", True),
    (429, "rate_limit", False),
    (500, "server_error", False),
    (529, "overloaded", False),
    (408, "server_error", False),
    (None, "unknown", False),  # a connection error: no HTTP status
    (None, "authentication_failed", True),
    (None, "model_not_found", True),
])
def test_claude_retry_of_a_hopeless_status_stops_the_step(status: int | None, error: str,
                                                          hopeless: bool) -> None:
    event = ClaudeRunner().decode(_api_retry(status, error))
    assert event.text and event.text[0].startswith("claude: API retry 1/10")
    if not hopeless:
        assert event.hopeless is None
        return
    assert event.hopeless is not None
    message = event.hopeless.message
    if status is not None:
        assert f"HTTP {status} ({error})" in message, message
    if status in (401, 403) or error == "authentication_failed":
        assert "fix: check the API key or login: set ANTHROPIC_API_KEY" in message, message
    if error == "model_not_found":
        assert "fix: use a model this CLI serves" in message, message
    if status == 400:
        assert "fix: the model API refuses the request itself" in message, message


_CODEX_401 = ("unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake. You can "
              "find your API key at https://platform.openai.com/account/api-keys., url: "
              "http://127.0.0.1:40465/v1/responses, request id: req_fake")
_CODEX_403 = ("unexpected status 403 Forbidden: Country, region, or territory not supported, "
              "url: http://127.0.0.1:46421/v1/responses, request id: req_fake")


@pytest.mark.parametrize(("message", "status"), [
    (f"Reconnecting... 1/5 ({_CODEX_401})", 401),
    (f"Reconnecting... 2/5 ({_CODEX_403})", 403),
    ("Reconnecting... 1/5 (We’re currently experiencing high demand, which may cause "
     "temporary errors.)", None),
    ("Reconnecting... 1/1 (stream disconnected before completion: idle timeout waiting for "
     "SSE)", None),
    (_CODEX_401, None),  # the final error: codex is exiting anyway
])
def test_codex_reconnect_of_a_hopeless_status_stops_the_step(message: str,
                                                             status: int | None) -> None:
    event = CodexRunner().decode(json.dumps({"type": "error", "message": message}))
    if status is None:
        assert event.hopeless is None
        return
    assert event.hopeless is not None and event.hopeless.status == status
    text = event.hopeless.message
    assert text.startswith(f"the codex CLI got HTTP {status} (")
    assert "url:" not in text and "fix: check the API key or login: set OPENAI_API_KEY" in text


@pytest.mark.parametrize(("stderr", "message"), [
    # gemini 0.61.0 on a 403 (exit 147): fatal like the 401, not a permanent failure
    ('_ApiError: {"error":{"code":403,"message":"Method doesn\'t allow unregistered callers",'
     '"status":"PERMISSION_DENIED"}}\n  status: 403\n}',
     "[API Error: 403 PERMISSION_DENIED: Method doesn't allow unregistered callers]"),
    ("", "unexpected status 403 Forbidden: Country, region, or territory not supported"),
])
def test_a_forbidden_answer_is_fatal_with_the_login_fix(stderr: str, message: str) -> None:
    result = RunResult(ok=False, subtype="error", message=message, session_id=None,
                       failure=PERMANENT)
    assert classify_common(1, stderr, result) == FATAL
    assert GeminiRunner().classify_exit(147, stderr, result) == FATAL
    assert fix_for(f"{stderr}\n{message}", "gemini") == AUTH_FIXES["gemini"]


async def test_a_stop_event_stops_the_whole_group_at_once(tmp_path: Path) -> None:
    """`run_process(stop=…)`: the caller's own reason to stop (set from `on_line`) ends the
    agent and its children with TERM, then KILL, like a timeout."""
    script = ("import signal, subprocess, sys\n"
              "child = subprocess.Popen(['sleep', '300'])\n"
              "print(child.pid, flush=True)\n"
              "print('RETRYING 401', flush=True)\n"
              "signal.pause()\n")
    stop = asyncio.Event()
    lines: list[str] = []

    def on_line(line: str) -> None:
        lines.append(line)
        if "401" in line:
            stop.set()

    out = await run_process([sys.executable, "-c", script], cwd=tmp_path, env=dict(os.environ),
                            stdin=None, on_line=on_line, timeout=120, stall_timeout=None,
                            grace=0.5, stop=stop)
    assert out.stopped and out.killed_by_us and out.exit_code is None
    assert not (out.timed_out or out.stalled or out.cancelled)
    assert out.duration < 60
    child = int(lines[0])
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(
        f"/proc/{child}/stat").read_text().split(")")[-1].split()[0]
    assert classify_outcome(ClaudeRunner(), out, None) == FATAL


def test_opencode_database_locked_is_transient() -> None:
    """Two parallel phases' `opencode run` share the user's one opencode database: the one
    that loses the lock exits 1 with "database is locked" (seen in CI on the parallel
    worktree workflow). That is a collision a retry resolves, not a permanent failure."""
    runner = OpencodeRunner()
    stderr = "Error: SQLiteError: database is locked\n"
    assert runner.classify_exit(1, stderr, None) == TRANSIENT
    assert runner.classify_exit(1, "Error: something else broke\n", None) == PERMANENT

"""The real ``opencode`` CLI (1.18.33) in headless ``run --format json`` mode, against a fake API.

Why: Baton drives agent CLIs headlessly, so it must know exactly how this one is pointed at an
endpoint, what it may write, and what every failure looks like on stdout, stderr and in the
exit code. Each fact below was observed with these tests (opencode 1.18.33, the linux-x64
binary, as root, offline, ``fake_anthropic.FakeAnthropic`` on 127.0.0.1).

Pointing it at the fake, headless and offline (see ``_run``): an isolated ``HOME`` (opencode
keeps its configuration in ``$XDG_CONFIG_HOME/opencode``, its sessions and logins in
``$XDG_DATA_HOME/opencode``, both under HOME by default) holding
``~/.config/opencode/opencode.json`` (``fake_anthropic.opencode_config``): the bundled
``anthropic`` provider with ``options.baseURL`` = ``<fake>/v1`` and ``options.apiKey``, and
``model: "anthropic/claude-sonnet-4-5"``. ``OPENCODE_DISABLE_MODELS_FETCH=1`` keeps it on the
models data bundled in the binary (names, limits, prices) instead of fetching models.dev;
nothing but ``POST /v1/messages`` reaches the fake, and no provider package is downloaded.

a. Permissions. ``edit`` (write, edit, patch) is allowed by default: ``write`` writes in the
   workspace and under ``.claude/``. ``edit: deny`` removes the write tools from the request;
   a call to ``write`` runs as the ``invalid`` tool ("Model tried to call unavailable tool
   'write'"), and the run still exits 0. A path outside the working directory needs the
   ``external_directory`` permission, which is "ask": headless ``run`` prints ``! permission
   requested: external_directory (<dir>/*); auto-rejecting`` on stderr, the tool part fails
   with "The user rejected permission to use this specific tool call.", the session ends
   there (no further request) and it exits 0. ``OPENCODE_PERMISSION`` (JSON, merged over every
   configuration file) with ``{"external_directory": {"<dir>/**": "allow"}}`` lets it write.
b. Input. The message arguments, a newline and stdin (read when it is not a TTY) are one user
   message; an argument with a space goes in double quotes, and stdin alone is sent verbatim.
   ``-m provider/model`` names the model verbatim; a request without tools goes to the
   provider's small model first (the session title, claude-haiku-4-5 for anthropic).
c. Errors. A model or provider it does not know: exit 1 before any request, its ``error`` event
   only ``UnknownError`` "Unexpected server error. Check server logs for details." with a
   ``ref``; ``--print-logs --log-level ERROR`` puts the log line with that ref and the cause
   (``ProviderModelNotFoundError: Model not found: …``) on stderr.
   No retry of a 401 or a 404: exit 1 after one request, stdout one ``error`` event
   {name: "APIError", data: {message, statusCode, isRetryable: false, responseBody, …}}. 429
   and 5xx are retried by opencode itself, 5 times (2 s doubling without a retry-after, the
   header's delay with one; 0 here), then the same ``error`` event (isRetryable true) and exit
   1. A single 500 is retried and the run succeeds.
d. Hang (no response headers): nothing on stdout; the caller's timeout is what ends it.
   Success: per model request ``step_start``, ``text`` (a finished text part), ``tool_use``
   (the tool part with its state) and ``step_finish`` with ``reason`` ("tool-calls", "stop"),
   ``tokens`` {total, input, output, reasoning, cache: {read, write}} and ``cost`` in dollars,
   priced from the bundled data ($3 / $15 per million for claude-sonnet-4-5). There is no final
   result event; every event has ``sessionID``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.workflow.runners import AgentEvent, OpencodeRunner
from tests.agents import fake_anthropic as fa
from tests.agents.clis import cli_path

OPENCODE = cli_path("opencode")
MODEL = "claude-sonnet-4-5"
REFUSED = "The user rejected permission to use this specific tool call."


@dataclass
class Run:
    rc: int | None  # None: still running at the timeout, killed
    stdout: str
    stderr: str
    seconds: float

    @property
    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith("{")]

    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def tool(self) -> dict[str, Any]:
        (tool,) = [e["part"] for e in self.events if e["type"] == "tool_use"]
        return tool

    def decoded(self) -> list[AgentEvent]:
        """The stream as Baton's runner reads it."""
        runner = OpencodeRunner()
        return [runner.decode(line) for line in self.stdout.splitlines()]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "home" / ".config" / "opencode").mkdir(parents=True)
    (tmp_path / "ws").mkdir()
    return tmp_path / "home"


def _run(home: Path, api: fa.FakeAnthropic, *args: str, stdin: str = "",
         env: dict[str, str] | None = None, timeout: float = 60,
         message: tuple[str, ...] = ("Write the report.",), **config: Any) -> Run:
    """`opencode run --format json` in the workspace beside `home`; on timeout its whole
    process group is killed."""
    (home / ".config" / "opencode" / "opencode.json").write_text(
        fa.opencode_config(api.url, MODEL, **config))
    full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                "TMPDIR": str(home.parent), "OPENCODE_DISABLE_MODELS_FETCH": "1",
                **(env or {})}
    start = time.monotonic()
    proc = subprocess.Popen([OPENCODE, "run", "--format", "json", *args, *message],
                            cwd=home.parent / "ws", env=full_env, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    return Run(rc, out, err, time.monotonic() - start)


def writer(target: Path, content: str = "# Report\n") -> fa.Responder:
    """Turn 1: opencode's `write` of `target`; then the tool's outcome as the final text."""

    def respond(req: fa.Recorded) -> fa.Reply:
        if not req.body.get("tools"):
            return fa.Text("A title")
        results = req.last_tool_results()
        if not results:
            return fa.ToolUse("write", {"filePath": str(target), "content": content},
                              text="Writing.")
        return fa.Text(f"Result: {fa.text_of(results[-1])}\nREPORT_CREATED: {target}")

    return respond


def chats(api: fa.FakeAnthropic) -> list[fa.Recorded]:
    return [r for r in api.messages if r.body.get("tools")]


@pytest.fixture
def api() -> Iterator[fa.FakeAnthropic]:
    with fa.FakeAnthropic(fa.reply_text("ok")) as f:
        yield f


# --- a. permissions ---------------------------------------------------------------------------


@pytest.mark.parametrize("rel", ["specs/001_x/reports/r.md", ".claude/agents/x.md"])
def test_write_allowed_by_default(home: Path, api: fa.FakeAnthropic, rel: str) -> None:
    target = home.parent / "ws" / rel
    api.responder = writer(target)
    run = _run(home, api)
    assert run.rc == 0, run.stderr
    assert target.read_text() == "# Report\n"
    tool = run.tool()
    assert tool["tool"] == "write" and tool["state"]["status"] == "completed"
    assert tool["state"]["output"] == "Wrote file successfully."
    assert {"write", "edit", "read", "bash"} <= set(chats(api)[0].tool_names)
    assert not api.other_paths


def test_edit_deny_hides_the_write_tools(home: Path, api: fa.FakeAnthropic) -> None:
    target = home.parent / "ws" / "r.md"
    api.responder = writer(target)
    run = _run(home, api, permission={"edit": "deny"})
    assert run.rc == 0  # the refusal is not a failure of the run
    assert not target.exists()
    offered = set(chats(api)[0].tool_names)
    assert not offered & {"write", "edit", "patch"} and "read" in offered
    tool = run.tool()
    assert tool["tool"] == "invalid" and tool["state"]["input"]["tool"] == "write"
    assert "Model tried to call unavailable tool 'write'" in tool["state"]["output"]
    (result,) = [e.result for e in run.decoded() if e.result is not None][-1:]
    assert result.denials[0].startswith("write: Model tried to call unavailable tool 'write'")


def test_a_path_outside_is_asked_for_and_auto_rejected(home: Path, api: fa.FakeAnthropic) -> None:
    outside = home.parent / "outside" / "r.md"
    api.responder = writer(outside)
    run = _run(home, api)
    assert run.rc == 0
    assert not outside.exists()
    tool = run.tool()
    assert tool["state"]["status"] == "error" and tool["state"]["error"] == REFUSED
    assert (f"permission requested: external_directory ({outside.parent}/*); auto-rejecting"
            in run.stderr)
    assert len(chats(api)) == 1  # the rejection ends the session
    runner = OpencodeRunner()
    results = [e.result for e in (runner.decode(x) for x in run.stdout.splitlines()) if e.result]
    assert results[-1].denials == (f"write {outside}: {REFUSED}",)
    assert runner.stderr_denials(run.stderr)[0].startswith(
        f"permission external_directory ({outside.parent}/*): auto-rejected")


def test_opencode_permission_env_allows_a_directory_outside(home: Path,
                                                             api: fa.FakeAnthropic) -> None:
    outside = home.parent / "outside" / "r.md"
    api.responder = writer(outside)
    allow = {"external_directory": {f"{outside.parent}/**": "allow"}}
    run = _run(home, api, env={"OPENCODE_PERMISSION": json.dumps(allow)})
    assert run.rc == 0, run.stderr
    assert outside.read_text() == "# Report\n"
    assert "permission requested" not in run.stderr


# --- b. input ---------------------------------------------------------------------------------


def test_stdin_follows_the_message_and_the_model_is_verbatim(home: Path,
                                                              api: fa.FakeAnthropic) -> None:
    run = _run(home, api, "-m", f"anthropic/{MODEL}", stdin="The prompt from stdin.")
    assert run.rc == 0, run.stderr
    title, chat = api.messages
    assert not title.body.get("tools") and title.model is not None
    assert title.model.startswith("claude-haiku-4-5")
    assert chat.model == MODEL
    (block,) = chat.body["messages"][-1]["content"]
    assert block["text"] == '"Write the report."\nThe prompt from stdin.'
    assert chat.headers["x-api-key"] == "sk-fake"


def test_stdin_alone_is_the_message_verbatim(home: Path, api: fa.FakeAnthropic) -> None:
    prompt = 'Line one, "quoted".\n\n## Line three\n'
    run = _run(home, api, stdin=prompt, message=())
    assert run.rc == 0, run.stderr
    (block,) = chats(api)[0].body["messages"][-1]["content"]
    assert block["text"] == prompt


# --- c. API errors ----------------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 404])
def test_no_retry_of_a_rejected_key_or_an_unknown_model(home: Path, status: int) -> None:
    with fa.FakeAnthropic(fa.failing(status)) as api:
        run = _run(home, api)
        assert len(chats(api)) == 1
    assert run.rc == 1
    assert run.types() == ["error"]
    error = run.events[0]["error"]
    assert error["name"] == "APIError"
    assert error["data"]["statusCode"] == status and error["data"]["isRetryable"] is False
    (event,) = run.decoded()
    assert event.result is not None and event.result.failure == "fatal"
    kind = fa.ERRORS[status][0]
    assert event.result.message == f"APIError HTTP {status} ({kind}): {fa.ERRORS[status][1]}"


@pytest.mark.parametrize("model", ["anthropic/claude-nope-9", "nope/claude-sonnet-4-5"])
def test_an_unknown_model_is_named_only_in_the_log(home: Path, api: fa.FakeAnthropic,
                                                   model: str) -> None:
    run = _run(home, api, "--print-logs", "--log-level", "ERROR", "-m", model)
    assert run.rc == 1 and not api.messages  # refused before any request
    assert run.types() == ["error"]
    error = run.events[0]["error"]
    assert error["name"] == "UnknownError"
    assert error["data"]["message"] == "Unexpected server error. Check server logs for details."
    ref = error["data"]["ref"]
    assert f'ref={ref} error="ProviderModelNotFoundError: Model not found: {model}.' \
        in run.stderr
    (event,) = run.decoded()
    assert event.result is not None
    failure = OpencodeRunner().classify_exit(1, run.stderr, event.result)
    assert failure == "fatal"
    assert event.result.message.startswith(f"ProviderModelNotFoundError: Model not found: "
                                           f"{model}. Did you mean: ")


@pytest.mark.parametrize("status", [429, 500])
def test_retryable_errors_are_retried_five_times(home: Path, status: int) -> None:
    with fa.FakeAnthropic(fa.failing(status, retry_after=0)) as api:
        run = _run(home, api)
        assert len(chats(api)) == 6  # the request and opencode's five retries
    assert run.rc == 1
    assert run.types() == ["error"]
    assert run.events[0]["error"]["data"]["isRetryable"] is True
    (event,) = run.decoded()
    assert event.result is not None and event.result.failure == "transient"


def test_a_transient_500_is_retried_and_succeeds(home: Path) -> None:
    target = home.parent / "ws" / "r.md"

    def respond(req: fa.Recorded) -> fa.Reply:
        return failing(req) if req.body.get("tools") else fa.Text("A title")

    failing = fa.failing(500, first=1, then=writer(target))
    with fa.FakeAnthropic(respond) as api:
        run = _run(home, api)
        assert len(chats(api)) == 3  # the 500, the retried write, the report
    assert run.rc == 0, run.stderr
    assert target.is_file()
    assert run.seconds > 1.5  # its first backoff without retry-after is 2 s (+ up to 25 %)


# --- d. hang, success -------------------------------------------------------------------------


def test_no_answer_keeps_the_cli_waiting(home: Path) -> None:
    with fa.FakeAnthropic(fa.hang()) as api:
        run = _run(home, api, timeout=12)
    assert run.rc is None  # still waiting: the caller's timeout is what ends it
    assert "step_finish" not in run.types()


def test_success_transcript(home: Path, api: fa.FakeAnthropic) -> None:
    target = home.parent / "ws" / "r.md"
    api.responder = writer(target)
    run = _run(home, api)
    assert run.rc == 0
    assert run.types() == ["step_start", "text", "tool_use", "step_finish",
                           "step_start", "text", "step_finish"]
    session = run.events[0]["sessionID"]
    assert session.startswith("ses_") and {e["sessionID"] for e in run.events} == {session}
    finishes = [e["part"] for e in run.events if e["type"] == "step_finish"]
    assert [f["reason"] for f in finishes] == ["tool-calls", "stop"]
    assert finishes[0]["tokens"] == {"total": 1060, "input": 1000, "output": 60,
                                     "reasoning": 0, "cache": {"write": 0, "read": 0}}
    assert finishes[0]["cost"] == pytest.approx((1000 * 3.0 + 60 * 15.0) / 1e6)
    assert finishes[1]["cost"] == pytest.approx((1200 * 3.0 + 40 * 15.0) / 1e6)
    # As Baton reads it: the text lines, the session, the usage of each request as it ends.
    events = run.decoded()
    assert [line for e in events for line in e.text] == [
        "Writing.", "Result: Wrote file successfully.", f"REPORT_CREATED: {target}"]
    usage = [e.usage for e in events if e.usage]
    assert usage[0] == {"turns": 1, "input_tokens": 1000, "output_tokens": 60,
                        "total_tokens": 1060, "cache_read_tokens": 0, "cache_write_tokens": 0,
                        "cost_usd": pytest.approx(0.0039)}
    final = [e.result for e in events if e.result is not None][-1]
    assert final.ok and final.subtype == "stop" and final.session_id == session
    assert final.denials == ()

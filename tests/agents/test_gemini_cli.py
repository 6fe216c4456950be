"""The real ``gemini`` CLI (0.61.0) in headless ``-p … -o stream-json`` mode, against a fake API.

Why: Baton drives agent CLIs headlessly, so it must know exactly how this one is pointed at an
endpoint, what stops it before any request, what it may write, and what every failure looks
like on stdout, stderr and in the exit code. Each fact below was observed with these tests
(gemini-cli 0.61.0, node 20, as root, offline, ``fake_gemini.FakeGemini`` on 127.0.0.1).

Pointing it at the fake, headless and quiet (see ``_run``):
  env ``GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:<port>``, ``GEMINI_API_KEY=<any>``, an isolated
  ``HOME`` (``GEMINI_CLI_HOME`` works too) holding ``~/.gemini/settings.json`` with
  ``security.auth.selectedType="gemini-api-key"``, ``privacy.usageStatisticsEnabled=false``,
  ``telemetry.enabled=false``, ``general.enableAutoUpdate(Notification)=false``. ``TMPDIR``
  catches the ``gemini-client-error-*.json`` reports it writes on API errors.
  Without ``selectedType`` the base-URL env selects auth type "gateway", which headless mode
  rejects: exit 41, stderr ``Invalid auth method selected.``

a. Trust. Untrusted workspace: exit 55 before any request, stdout empty, stderr (in ANSI red,
   even without a TTY) ``Gemini CLI is not running in a trusted directory. To proceed, either
   use `--skip-trust`, set the `GEMINI_CLI_TRUST_WORKSPACE=true` environment variable, or trust
   this directory in interactive mode. For more details, see https://geminicli.com/docs/cli/
   trusted-folders/#headless-and-automated-environments``. Each of these fixes it: the
   ``--skip-trust`` flag, env ``GEMINI_CLI_TRUST_WORKSPACE=true``, ``~/.gemini/trustedFolders.json``
   ``{"<ws>": "TRUST_FOLDER"}``, settings ``security.folderTrust.enabled=false``.
b. Approval. ``default``: write_file is not even declared to the model; a call to it gives
   ``tool_result`` status "error", error.type "tool_not_registered", stderr ``Error executing
   tool write_file: Tool "write_file" not found…``, and still exit 0 / result "success".
   ``auto_edit`` and ``yolo`` both write ``specs/001_x/reports/r.md`` and ``.claude/agents/x.md``
   as root (yolo also prints ``YOLO mode is enabled…`` on stderr). A path outside the workspace
   is refused even in yolo: error.type "invalid_tool_params", ``Path not in workspace: …``,
   exit 0.
c. Models. ``-m`` goes verbatim into the URL (``models/gemini-2.5-flash:streamGenerateContent``,
   ``models/sonnet-4.5:…``); no side calls then. Aliases resolve (``-m flash`` →
   ``gemini-3.8-flash``). No ``-m`` means "auto": a router ``generateContent`` on
   ``gemini-3.5-flash-lite`` first, then the chat on the routed model. Unknown model (API 404):
   no retry, exit 1, result error ``[API Error: models/sonnet-4.5 is not found for API version
   v1beta, …]``.
d. Errors. Retries: settings ``general.maxAttempts`` (default 10, no env override); backoff
   5 s ±30 %, doubling, capped at 30 s (+20 % jitter for 429); a RetryInfo shorter than the
   backoff does not shorten it. With defaults an always-429 run took 238 s (10 requests) and
   an always-500 run 207 s; tests use maxAttempts=2 (one retry, ~9 s). stream-json is
   ``init``, user ``message``, then one ``result`` with status "error", error.type "unknown"
   and zero stats; no separate error event. Exit code = HTTP status mod 256: 429 per-minute
   → 173 after maxAttempts tries; 429 per-day → 173, no retry; 500 → 244 and 503 → 247 after
   maxAttempts tries; 400 bad key → 144, 401 → 145 and 403 → 147, no retry; 404 → 1, no
   retry. stderr: ``Attempt N failed…`` lines, then ``Error when talking to Gemini API Full
   report available at: $TMPDIR/gemini-client-error-….json`` and a stack. Messages:
   ``ERROR_CASES``. A transient 500 is retried and the run succeeds.
e. Hang (no response headers): nothing after the user message; each attempt ends at undici's
   60 s headersTimeout, then it retries: with maxAttempts=2, exit 1 after ~126 s, result error
   ``[API Error: exception TypeError: fetch failed sending request]``. Stall (first chunk, then
   silence): the first delta message is emitted, then nothing for >150 s (bodyTimeout 300 s).
   Callers need their own timeout and must kill the process group: the CLI relaunches itself
   as a child node process.
   Success: ``init``, user ``message``, ``tool_use``, ``tool_result`` (status "success"), the
   reply as ``message`` deltas, ``result`` with stats {total_tokens, input_tokens,
   output_tokens, cached, input, duration_ms, tool_calls, models: {<modelVersion>: {…}}}, the
   token counts being the sums of the turns' usageMetadata (see ``test_success_transcript``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.agents.clis import cli_path
from tests.agents.fake_gemini import FAILED, SIGNAL, USAGE, ErrorKind, FakeGemini, Script

GEMINI = cli_path("gemini")

MODEL = "gemini-2.5-flash"
UNTRUSTED = (
    "Gemini CLI is not running in a trusted directory. To proceed, either use `--skip-trust`"
)
SETTINGS: dict[str, Any] = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
}


@dataclass
class Sandbox:
    """An isolated HOME and workspace, so no user config or trust decision leaks in."""

    root: Path
    settings: dict[str, Any] = field(default_factory=lambda: json.loads(json.dumps(SETTINGS)))

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def ws(self) -> Path:
        return self.root / "ws"


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

    def result(self) -> dict[str, Any]:
        results = [e for e in self.events if e["type"] == "result"]
        assert len(results) == 1, self.stdout + self.stderr
        return results[0]

    def text(self) -> str:
        return "".join(
            e["content"] for e in self.events if e["type"] == "message" and e["role"] == "assistant"
        )


@pytest.fixture
def box(tmp_path: Path) -> Sandbox:
    sb = Sandbox(tmp_path)
    (sb.home / ".gemini").mkdir(parents=True)
    sb.ws.mkdir()
    return sb


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with FakeGemini(Script(behaviour="text")) as f:
        yield f


def _run(
    box: Sandbox,
    fake: FakeGemini,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 25,
    trust: bool = True,
) -> Run:
    """Run ``gemini -p`` headless in ``box.ws``; on timeout kill its whole process group."""
    (box.home / ".gemini" / "settings.json").write_text(json.dumps(box.settings))
    full_env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(box.home),
        "TMPDIR": str(box.root),
        "GEMINI_API_KEY": "fake-key",
        "GOOGLE_GEMINI_BASE_URL": fake.url,
        **(env or {}),
    }
    cmd = [
        GEMINI,
        *(["--skip-trust"] if trust else []),
        *args,
        "-p",
        "Write the report.",
        "-o",
        "stream-json",
    ]
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=box.ws,
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        rc = None
    return Run(rc, out, err, time.monotonic() - start)


# --- a. trust ---------------------------------------------------------------------------------


def test_untrusted_workspace_exits_55_before_any_request(box: Sandbox, fake: FakeGemini) -> None:
    run = _run(box, fake, "-m", MODEL, trust=False)
    assert run.rc == 55
    assert run.stdout == ""
    assert UNTRUSTED in run.stderr
    assert "GEMINI_CLI_TRUST_WORKSPACE=true" in run.stderr
    assert run.stderr.startswith("\x1b[31m")  # red, although stderr is a pipe
    assert fake.requests == []


@pytest.mark.parametrize("how", ["flag", "env", "trusted_folders_file", "folder_trust_off"])
def test_trust_can_be_granted_headless(box: Sandbox, fake: FakeGemini, how: str) -> None:
    env = {"GEMINI_CLI_TRUST_WORKSPACE": "true"} if how == "env" else None
    if how == "trusted_folders_file":
        trusted = box.home / ".gemini" / "trustedFolders.json"
        trusted.write_text(json.dumps({str(box.ws): "TRUST_FOLDER"}))
    if how == "folder_trust_off":
        box.settings["security"]["folderTrust"] = {"enabled": False}
    run = _run(box, fake, "-m", MODEL, env=env, trust=how == "flag")
    assert run.rc == 0, run.stderr
    assert run.result()["status"] == "success"
    assert run.text() == fake.script.text


# --- b. approval modes and writes -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto_edit", "yolo"])
@pytest.mark.parametrize("rel", ["specs/001_x/reports/r.md", ".claude/agents/x.md"])
def test_write_file_allowed(box: Sandbox, fake: FakeGemini, mode: str, rel: str) -> None:
    target = box.ws / rel
    fake.script.behaviour, fake.script.target = "success", str(target)
    run = _run(box, fake, "-m", MODEL, "--approval-mode", mode)
    assert run.rc == 0, run.stderr
    assert target.read_text() == fake.script.content
    assert run.types() == [
        "init",
        "message",
        "tool_use",
        "tool_result",
        "message",
        "message",
        "result",
    ]
    tool_result = run.events[3]
    assert tool_result["status"] == "success"
    assert f"{SIGNAL}: {target}" in run.text()
    declared = {
        d["name"]
        for t in fake.stream_requests()[0].body["tools"]
        for d in t["functionDeclarations"]
    }
    assert {"write_file", "replace"} <= declared
    assert ("run_shell_command" in declared) == (mode == "yolo")
    assert ("YOLO mode is enabled" in run.stderr) == (mode == "yolo")


def test_default_mode_hides_write_file(box: Sandbox, fake: FakeGemini) -> None:
    target = box.ws / "specs/001_x/reports/r.md"
    fake.script.behaviour, fake.script.target = "success", str(target)
    run = _run(box, fake, "-m", MODEL)  # --approval-mode default
    assert run.rc == 0  # the refusal is not a failure of the run
    assert run.result()["status"] == "success"
    assert not target.exists()
    declared = {
        d["name"]
        for t in fake.stream_requests()[0].body["tools"]
        for d in t["functionDeclarations"]
    }
    assert "write_file" not in declared and "read_file" in declared
    tool_result = next(e for e in run.events if e["type"] == "tool_result")
    assert tool_result["status"] == "error"
    assert tool_result["error"]["type"] == "tool_not_registered"
    assert tool_result["error"]["message"].startswith('Tool "write_file" not found.')
    assert 'Error executing tool write_file: Tool "write_file" not found.' in run.stderr
    assert f"{FAILED}: " in run.text()
    # the error went back to the model as a functionResponse
    last = fake.stream_requests()[-1].body["contents"][-1]["parts"][0]["functionResponse"]
    assert last["name"] == "write_file" and "not found" in last["response"]["error"]


def test_write_outside_workspace_refused_even_in_yolo(box: Sandbox, fake: FakeGemini) -> None:
    outside = box.root / "elsewhere" / "r.md"
    fake.script.behaviour, fake.script.elsewhere = "write_elsewhere", str(outside)
    run = _run(box, fake, "-m", MODEL, "--approval-mode", "yolo")
    assert run.rc == 0
    assert not outside.exists()
    tool_result = next(e for e in run.events if e["type"] == "tool_result")
    assert tool_result["error"]["type"] == "invalid_tool_params"
    assert tool_result["output"].startswith(f'Path not in workspace: Attempted path "{outside}"')


# --- c. model ids -----------------------------------------------------------------------------


def test_explicit_model_reaches_the_url_verbatim(box: Sandbox, fake: FakeGemini) -> None:
    run = _run(box, fake, "-m", MODEL)
    assert run.events[0] == {**run.events[0], "type": "init", "model": MODEL}
    assert [r.path for r in fake.requests] == [
        f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"
    ]
    req = fake.requests[0]
    assert req.headers["x-goog-api-key"] == "fake-key"
    assert req.headers["user-agent"].startswith("GeminiCLI")
    assert run.result()["stats"]["models"] == {MODEL: _stats(1)}


def test_auto_model_routes_via_side_call(box: Sandbox, fake: FakeGemini) -> None:
    run = _run(box, fake)  # no -m: "auto"
    assert run.rc == 0
    assert run.events[0]["model"] == "auto"
    side, main = fake.requests
    assert side.action == "generateContent" and "flash-lite" in side.model
    assert "responseJsonSchema" in side.body["generationConfig"]
    assert main.action == "streamGenerateContent" and main.model.startswith("gemini-")
    assert set(run.result()["stats"]["models"]) == {side.model, main.model}


def test_claude_model_name_is_sent_as_is_and_404s(box: Sandbox, fake: FakeGemini) -> None:
    run = _run(box, fake, "-m", "sonnet-4.5")
    assert [r.model for r in fake.requests] == ["sonnet-4.5"]  # no alias mapping, no retry
    assert run.rc == 1
    assert run.types() == ["init", "message", "result"]
    res = run.result()
    assert res["status"] == "error" and res["error"]["type"] == "unknown"
    assert res["error"]["message"].startswith(
        "[API Error: models/sonnet-4.5 is not found for API version v1beta"
    )
    assert "ModelNotFoundError: models/sonnet-4.5 is not found" in run.stderr


# --- d. API errors ----------------------------------------------------------------------------

# kind, exit code, stream requests with maxAttempts=2, start of result.error.message
ERROR_CASES = [
    (
        "quota",
        173,
        2,
        "[API Error: You exceeded your current quota, please check your plan and billing details.",
    ),
    ("quota_daily", 173, 1, "[API Error: You have exhausted your daily quota on this model.]"),
    (
        "internal",
        244,
        2,
        '[API Error: {"error":{"code":500,"message":"An internal error has occurred.',
    ),
    ("unavailable", 247, 2, "[API Error: The model is overloaded. Please try again later.]"),
    (
        "invalid_key",
        144,
        1,
        '[API Error: {"error":{"code":400,"message":"API key not valid. '
        'Please pass a valid API key.","status":"INVALID_ARGUMENT"',
    ),
]


@pytest.mark.parametrize(
    ("kind", "rc", "attempts", "message"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES]
)
def test_api_error(
    box: Sandbox, fake: FakeGemini, kind: str, rc: int, attempts: int, message: str
) -> None:
    box.settings["general"]["maxAttempts"] = 2
    fake.script.error = kind  # type: ignore[assignment]
    run = _run(box, fake, "-m", MODEL)
    assert run.rc == rc, run.stderr
    assert len(fake.stream_requests()) == attempts
    assert run.types() == ["init", "message", "result"]
    res = run.result()
    assert res["status"] == "error" and res["error"]["type"] == "unknown"
    assert res["error"]["message"].startswith(message)
    assert res["stats"]["total_tokens"] == 0
    assert "Error when talking to Gemini API Full report available at: " + str(box.root) in (
        run.stderr
    )
    if attempts > 1:
        assert "Attempt 1 failed" in run.stderr
        assert "Attempt 2 failed" in run.stderr and "Max attempts reached" in run.stderr
    if kind.startswith("quota"):
        assert res["error"]["message"].endswith(
            "Please wait and try again later. To increase your limits, request a quota increase "
            "through AI Studio, or switch to another /auth method"
        )


@pytest.mark.parametrize(("error", "code"), [("unauthenticated", 145),
                                             ("permission_denied", 147)])
def test_a_rejected_key_is_not_retried(box: Sandbox, error: ErrorKind, code: int) -> None:
    """With its default 10 attempts, a 401 or 403 still ends the run after one request."""
    with FakeGemini(Script(behaviour="text", error=error)) as fake:
        run = _run(box, fake, "-m", MODEL)
        assert len(fake.stream_requests()) == 1
    assert run.rc == code
    assert run.result()["status"] == "error"
    assert f'"code":{code + 256}' in run.result()["error"]["message"]


def test_transient_500_is_retried_and_succeeds(box: Sandbox, fake: FakeGemini) -> None:
    fake.script.error, fake.script.fail_first = "internal", 1
    run = _run(box, fake, "-m", MODEL)
    assert run.rc == 0
    assert len(fake.stream_requests()) == 2
    assert run.result()["status"] == "success"
    assert "Attempt 1 failed with status 500. Retrying with backoff..." in run.stderr
    assert run.seconds > 3  # the first backoff is 5 s ±30 %


# --- e. hang, stall, success ------------------------------------------------------------------


@pytest.mark.parametrize("behaviour", ["hang", "stall"])
def test_no_answer_keeps_the_cli_waiting(box: Sandbox, fake: FakeGemini, behaviour: str) -> None:
    fake.script.behaviour = behaviour  # type: ignore[assignment]
    run = _run(box, fake, "-m", MODEL, timeout=15)
    assert run.rc is None  # still waiting: the caller's timeout is what ends it
    assert len(fake.stream_requests()) == 1
    assert "result" not in run.types()
    expected = ["init", "message"] + (["message"] if behaviour == "stall" else [])
    assert run.types() == expected
    if behaviour == "stall":
        assert run.events[-1]["content"] == "Working on it"


def test_success_transcript(box: Sandbox, fake: FakeGemini) -> None:
    target = box.ws / "specs/001_x/reports/r.md"
    fake.script.behaviour, fake.script.target = "success", str(target)
    run = _run(box, fake, "-m", MODEL, "--approval-mode", "yolo")
    assert run.rc == 0
    ev = run.events
    assert set(ev[0]) == {"type", "timestamp", "session_id", "model"}
    assert ev[1] == {**ev[1], "type": "message", "role": "user", "content": "Write the report."}
    assert ev[2]["tool_name"] == "write_file"
    assert ev[2]["parameters"] == {"file_path": str(target), "content": fake.script.content}
    assert ev[3] == {
        "type": "tool_result",
        "timestamp": ev[3]["timestamp"],
        "tool_id": ev[2]["tool_id"],
        "status": "success",
    }
    assert all(e["delta"] is True for e in ev[4:6])
    res = run.result()
    assert res["status"] == "success"
    stats = res["stats"]
    assert {k: v for k, v in stats.items() if k not in ("duration_ms", "models")} == {
        **_stats(2),
        "tool_calls": 1,
    }
    assert stats["models"] == {MODEL: _stats(2)}
    assert isinstance(stats["duration_ms"], int)
    # turn 2 carried the tool's success back to the model
    fr = fake.stream_requests()[1].body["contents"][-1]["parts"][0]["functionResponse"]
    assert fr["name"] == "write_file" and "error" not in fr["response"]


def _stats(turns: int) -> dict[str, int]:
    """The CLI's per-model stats after ``turns`` fake turns (each reports ``USAGE``)."""
    inp, out = USAGE["promptTokenCount"] * turns, USAGE["candidatesTokenCount"] * turns
    return {
        "total_tokens": inp + out,
        "input_tokens": inp,
        "output_tokens": out,
        "cached": 0,
        "input": inp,
    }

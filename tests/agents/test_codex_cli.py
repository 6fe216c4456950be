"""The REAL `codex exec --json` (codex-cli 0.169.0) against the fake Responses API in fake_openai.

Each test runs the binary with an isolated HOME and CODEX_HOME (config.toml from
`fake_openai.codex_config`) in a tmp workspace, so nothing leaves 127.0.0.1. What was observed
(and is asserted below, so a codex upgrade that changes it fails here):

Pointing codex at the fake: a custom provider in $CODEX_HOME/config.toml, `model_provider =
"fake"` + `[model_providers.fake]` with `base_url = "http://127.0.0.1:PORT/v1"`, `wire_api =
"responses"`, `env_key = "FAKE_OPENAI_KEY"` (sent as `Authorization: Bearer ...`) and
`supports_websockets = false` (else it tries a Responses WebSocket first). OPENAI_BASE_URL is
ignored by 0.169 (the built-in provider still dials api.openai.com over WebSocket, then waits for
the network forever). `request_max_retries`, `stream_max_retries` and `stream_idle_timeout_ms`
in the provider table keep failures fast. Calls go to `POST /v1/responses` only (no /models).
Without a git repo, `--skip-git-repo-check` is required (else exit 1, no request).

Writes: default sandbox is read-only (an exec_command gets "Read-only file system", and no
command_execution item appears in the JSONL). `-s workspace-write` works here as root: the
workspace, `.claude/` in it and /tmp are writable; `.git/` and `.codex/` in it, and anything
outside, are read-only (`-c sandbox_workspace_write.exclude_slash_tmp=true` and
`exclude_tmpdir_env_var=true` take /tmp away); `--dangerously-bypass-approvals-and-sandbox`
writes anywhere. Approvals never prompt in exec: a denied apply_patch comes back to the model as
"patch rejected: ...; rejected by user approval settings". `exec_command` (shell) is offered to
every model; `apply_patch` (freeform) only to models with bundled metadata such as gpt-5.5; an
unknown id adds an `error` item "Model metadata for `X` not found ...". No model configured at
all sends "gpt-6.1-sol".

Errors (all exit 1, `error` event then `turn.failed` with the same message): 429 → "exceeded
retry limit, last status: 429 Too Many Requests, request id: ..." and never retried; any 500 →
"We’re currently experiencing high demand, ..." (codex's own text, U+2019, whatever the body
says); 401 → "unexpected status 401 Unauthorized: <message>, url: ..., request id: ...";
unknown model (404 or 400 with code "model_not_found") → the body's message, not retried;
other 400 → the raw JSON body. 5xx is retried `request_max_retries`
times at HTTP level (silently) and the whole call `stream_max_retries` times at turn level (an
`error` event "Reconnecting... i/N (<message>)" each); 401 only at turn level. Defaults (4, 5)
make an always-500 run take 30 requests and ~25 s. A stalled stream fails after
`stream_idle_timeout_ms` with "stream disconnected before completion: idle timeout waiting for
SSE"; a request that never gets response headers is NOT bounded by it: codex waits forever.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.agents import fake_openai as fo
from tests.agents.clis import cli_path

CODEX = cli_path("codex")
KNOWN_MODEL = "gpt-5.5"  # has bundled metadata: no warning item, apply_patch offered
KEY = "sk-fake-test"
HIGH_DEMAND_SHOWN = "We’re currently experiencing high demand, which may cause temporary errors."
NO_TMP = ("-c", "sandbox_workspace_write.exclude_slash_tmp=true",
          "-c", "sandbox_workspace_write.exclude_tmpdir_env_var=true")



@dataclass
class Run:
    rc: int
    events: list[dict[str, Any]]
    stderr: str
    elapsed: float

    @property
    def types(self) -> list[str]:
        return [e["type"] for e in self.events]

    def items(self, kind: str) -> list[dict[str, Any]]:
        return [e["item"] for e in self.events
                if e["type"] == "item.completed" and e["item"]["type"] == kind]

    @property
    def errors(self) -> list[str]:
        return [e["message"] for e in self.events if e["type"] == "error"]

    @property
    def failure(self) -> str | None:
        failed = [e for e in self.events if e["type"] == "turn.failed"]
        return failed[-1]["error"]["message"] if failed else None

    @property
    def final_text(self) -> str:
        messages = self.items("agent_message")
        return messages[-1]["text"] if messages else ""


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    home = tmp_path / "home"
    (home / ".codex").mkdir(parents=True)
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"), "FAKE_OPENAI_KEY": KEY}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


def git_init(path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(path)], check=True)


def configure(env: dict[str, str], api: fo.FakeOpenAI, **kwargs: Any) -> None:
    kwargs.setdefault("model", KNOWN_MODEL)
    config = fo.codex_config(api.base_url, **kwargs)
    (Path(env["CODEX_HOME"]) / "config.toml").write_text(config)


def codex_cmd(*flags: str, prompt: str = "Write the report.") -> list[str]:
    return [CODEX, "exec", "--json", *flags, prompt]


def run(env: dict[str, str], ws: Path, *flags: str, timeout: float = 20) -> Run:
    start = time.monotonic()
    proc = subprocess.run(codex_cmd(*flags), cwd=ws, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return Run(proc.returncode, events, proc.stderr, time.monotonic() - start)


def report(ws: Path, rel: str) -> tuple[Path, fo.Responder]:
    target = ws / rel
    return target, fo.write_then_report(str(target), "# Report\nok\n", f"REPORT_CREATED: {target}")


# --- success -----------------------------------------------------------------------------------


def test_success_transcript(env: dict[str, str], ws: Path) -> None:
    target, responder = report(ws, "specs/001_x/reports/r.md")
    with fo.FakeOpenAI(responder) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check", "-s", "workspace-write")
    assert result.rc == 0, result.stderr
    assert target.read_text() == "# Report\nok\n"
    assert result.types == ["thread.started", "turn.started", "item.started", "item.completed",
                            "item.completed", "turn.completed"]
    started, command = result.events[2]["item"], result.items("command_execution")[0]
    assert started["status"] == "in_progress" and started["exit_code"] is None
    assert command["command"].startswith("/bin/bash -lc ")
    assert (command["exit_code"], command["status"]) == (0, "completed")
    assert result.final_text == f"Done.\nREPORT_CREATED: {target}"
    # Summed over both model calls (1000+1200 in, 60+40 out); there is no total_tokens.
    assert result.events[-1]["usage"] == {
        "input_tokens": 2200, "cached_input_tokens": 0, "cache_write_input_tokens": 0,
        "output_tokens": 100, "reasoning_output_tokens": 0}
    first, second = api.turns
    assert [r.path for r in api.requests] == ["/v1/responses", "/v1/responses"]
    assert first.model == KNOWN_MODEL and first.body["stream"] is True
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert {"exec_command", "apply_patch"} <= set(first.tool_names)
    assert "Process exited with code 0" in second.tool_outputs()[0]["output"]


def test_usage_fields_map_cached_and_reasoning(env: dict[str, str], ws: Path) -> None:
    usage = {"input_tokens": 500, "cached_tokens": 300, "output_tokens": 20,
             "reasoning_tokens": 7}
    with fo.FakeOpenAI(lambda req: fo.Text("hello", usage)) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check")
    assert result.rc == 0
    assert result.events[-1] == {"type": "turn.completed", "usage": {
        "input_tokens": 500, "cached_input_tokens": 300, "cache_write_input_tokens": 0,
        "output_tokens": 20, "reasoning_output_tokens": 7}}


def test_apply_patch_in_git_repo_into_claude_dir(env: dict[str, str], ws: Path) -> None:
    git_init(ws)  # a git workspace needs no --skip-git-repo-check
    target = ws / ".claude" / "notes" / "r.md"
    responder = fo.write_then_report(str(target), "x\n", "REPORT_CREATED", tool="apply_patch")
    with fo.FakeOpenAI(responder) as api:
        configure(env, api)
        result = run(env, ws, "-s", "workspace-write")
        outputs = api.turns[1].tool_outputs()
    assert result.rc == 0 and target.read_text() == "x\n"
    change = result.items("file_change")[0]
    assert change["changes"] == [{"path": str(target), "kind": "add"}]
    assert change["status"] == "completed"
    assert outputs[0]["type"] == "custom_tool_call_output"
    assert "Success. Updated the following files:" in outputs[0]["output"]


# --- sandbox / write permissions ---------------------------------------------------------------


@pytest.mark.parametrize(("rel", "git", "writable"), [
    ("specs/001_x/reports/r.md", False, True),
    (".claude/reports/r.md", False, True),
    (".codex/r.md", False, False),
    (".git/r.md", True, False),
])
def test_workspace_write_sandbox(env: dict[str, str], ws: Path, rel: str, git: bool,
                                 writable: bool) -> None:
    if git:
        git_init(ws)
    target, responder = report(ws, rel)
    with fo.FakeOpenAI(responder) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check", "-s", "workspace-write")
    assert result.rc == 0
    assert target.exists() is writable
    if writable:
        assert "REPORT_CREATED" in result.final_text
    else:
        assert "Read-only file system" in result.final_text
        assert result.final_text.endswith("REPORT_FAILED")


def test_default_sandbox_is_read_only(env: dict[str, str], ws: Path) -> None:
    target, responder = report(ws, "specs/001_x/reports/r.md")
    with fo.FakeOpenAI(responder) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check")
    assert result.rc == 0 and not target.exists()
    assert "mkdir: cannot create directory" in result.final_text
    assert "Read-only file system" in result.final_text
    assert result.items("command_execution") == []  # the denied command is not reported


def test_apply_patch_denied_in_read_only(env: dict[str, str], ws: Path) -> None:
    target = ws / "r.md"
    responder = fo.write_then_report(str(target), "x\n", "REPORT_CREATED", tool="apply_patch")
    with fo.FakeOpenAI(responder) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check")
    assert not target.exists()
    assert result.final_text == ("The write failed: patch rejected: writing is blocked by "
                                 "read-only sandbox; rejected by user approval settings\n"
                                 "REPORT_FAILED")


@pytest.mark.parametrize(("flags", "writable"), [
    (("-s", "workspace-write"), True),  # /tmp (where pytest's tmp_path lives) is a writable root
    (("-s", "workspace-write", *NO_TMP), False),
    (("--dangerously-bypass-approvals-and-sandbox", *NO_TMP), True),
])
def test_write_outside_workspace(env: dict[str, str], ws: Path, flags: tuple[str, ...],
                                 writable: bool) -> None:
    target = ws.parent / "elsewhere" / "r.md"
    responder = fo.write_then_report(str(target), "x", f"REPORT_CREATED: {target}")
    with fo.FakeOpenAI(responder) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check", *flags)
    assert result.rc == 0
    assert target.exists() is writable
    assert ("REPORT_CREATED" in result.final_text) is writable


def test_non_git_workspace_needs_skip_flag(env: dict[str, str], ws: Path) -> None:
    with fo.FakeOpenAI(fo.reply_text("hi")) as api:
        configure(env, api)
        result = run(env, ws)
    assert result.rc == 1 and result.events == []
    assert "Not inside a trusted directory and --skip-git-repo-check was not specified." \
        in result.stderr
    assert api.requests == []


# --- model ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [404, 400])
def test_model_flag_reaches_api_and_unknown_model_fails(env: dict[str, str], ws: Path,
                                                        status: int) -> None:
    """code "model_not_found" makes codex show just the message (a plain 400 shows the body)."""
    with fo.FakeOpenAI(fo.only_models([KNOWN_MODEL], fo.reply_text("hi"), status)) as api:
        configure(env, api, stream_retries=2)
        ok = run(env, ws, "--skip-git-repo-check", "-m", KNOWN_MODEL)
        bad = run(env, ws, "--skip-git-repo-check", "-m", "gpt-nope")
        models = [r.model for r in api.turns]
    assert ok.rc == 0 and ok.final_text == "hi"
    assert models == [KNOWN_MODEL, "gpt-nope"]  # 404 is not retried, even with retries left
    message = "The model `gpt-nope` does not exist or you do not have access to it."
    assert bad.rc == 1
    assert bad.types == ["thread.started", "item.completed", "turn.started", "error",
                         "turn.failed"]
    assert bad.items("error")[0]["message"].startswith("Model metadata for `gpt-nope` not found.")
    assert bad.errors == [message] and bad.failure == message


def test_no_model_configured_sends_codex_default(env: dict[str, str], ws: Path) -> None:
    with fo.FakeOpenAI(fo.reply_text("hi")) as api:
        configure(env, api)
        config = Path(env["CODEX_HOME"]) / "config.toml"
        config.write_text(config.read_text().replace(f'model = "{KNOWN_MODEL}"\n', ""))
        result = run(env, ws, "--skip-git-repo-check")
    assert result.rc == 0 and [r.model for r in api.turns] == ["gpt-6.1-sol"]


def test_missing_api_key_env(env: dict[str, str], ws: Path) -> None:
    del env["FAKE_OPENAI_KEY"]
    with fo.FakeOpenAI(fo.reply_text("hi")) as api:
        configure(env, api)
        result = run(env, ws, "--skip-git-repo-check")
    assert result.rc == 1 and api.requests == []
    assert result.failure == "Missing environment variable: `FAKE_OPENAI_KEY`."


# --- errors and retries --------------------------------------------------------------------------


def _error_run(env: dict[str, str], ws: Path, responder: fo.Responder, **config: Any
               ) -> tuple[Run, fo.FakeOpenAI]:
    with fo.FakeOpenAI(responder) as api:
        configure(env, api, **config)
        result = run(env, ws, "--skip-git-repo-check", "-s", "workspace-write")
    return result, api


@pytest.mark.parametrize(("status", "expected"), [
    (429, "exceeded retry limit, last status: 429 Too Many Requests, request id: req_fake"),
    (500, HIGH_DEMAND_SHOWN),
    (401, "unexpected status 401 Unauthorized: Incorrect API key provided: sk-fake. You can find "
          "your API key at https://platform.openai.com/account/api-keys., url: URL/responses, "
          "request id: req_fake"),
    (400, '{"error": {"message": "Invalid request", "type": "invalid_request_error", '
          '"param": null, "code": null}}'),
])
def test_http_error_without_retries(env: dict[str, str], ws: Path, status: int,
                                    expected: str) -> None:
    result, api = _error_run(env, ws, fo.failing(status))
    expected = expected.replace("URL", api.base_url)
    assert result.rc == 1
    assert result.types == ["thread.started", "turn.started", "error", "turn.failed"]
    assert result.errors == [expected] and result.failure == expected
    assert len(api.turns) == 1


def test_500_message_is_codex_own_text(env: dict[str, str], ws: Path) -> None:
    result, _ = _error_run(env, ws, fo.failing(500, message="something else entirely"))
    assert result.failure == HIGH_DEMAND_SHOWN


@pytest.mark.parametrize(("status", "request_retries", "stream_retries", "calls"), [
    (500, 1, 1, 4),  # (1 + request retries) x (1 + stream retries)
    (500, 2, 0, 3),
    (401, 2, 0, 1),  # 4xx: no HTTP-level retry ...
    (401, 0, 2, 3),  # ... but the turn-level one applies
    (403, 0, 2, 3),  # a 403 likewise
    (429, 2, 2, 1),  # 429: never retried
])
def test_retry_counts(env: dict[str, str], ws: Path, status: int, request_retries: int,
                      stream_retries: int, calls: int) -> None:
    result, api = _error_run(env, ws, fo.failing(status), request_retries=request_retries,
                             stream_retries=stream_retries)
    assert result.rc == 1 and len(api.turns) == calls
    reconnects = [m for m in result.errors if m.startswith("Reconnecting... ")]
    if status != 429:
        assert reconnects == [f"Reconnecting... {i}/{stream_retries} ({result.failure})"
                              for i in range(1, stream_retries + 1)]
    else:
        assert reconnects == []


def test_transient_500_recovers_silently(env: dict[str, str], ws: Path) -> None:
    target, responder = report(ws, "r.md")
    result, api = _error_run(env, ws, fo.failing(500, first=1, then=responder),
                             request_retries=1)
    assert result.rc == 0 and target.exists() and len(api.turns) == 3
    assert result.errors == [] and "turn.completed" in result.types


def test_stalled_stream_hits_idle_timeout(env: dict[str, str], ws: Path) -> None:
    result, api = _error_run(env, ws, fo.stall(), idle_timeout_ms=1000, stream_retries=1)
    message = "stream disconnected before completion: idle timeout waiting for SSE"
    assert result.rc == 1 and len(api.turns) == 2
    assert result.errors == [f"Reconnecting... 1/1 ({message})", message]
    assert result.failure == message
    assert result.elapsed < 10


def test_hang_before_headers_is_not_bounded(env: dict[str, str], ws: Path) -> None:
    with fo.FakeOpenAI(fo.hang()) as api:
        configure(env, api, idle_timeout_ms=500)
        proc = subprocess.Popen(codex_cmd("--skip-git-repo-check"), cwd=ws, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, text=True, start_new_session=True)
        try:
            with pytest.raises(subprocess.TimeoutExpired):
                proc.wait(timeout=4)  # 8x the idle timeout
            assert len(api.turns) == 1
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            stdout, _ = proc.communicate()
    types = [json.loads(line)["type"] for line in stdout.splitlines() if line.startswith("{")]
    assert types == ["thread.started", "turn.started"]

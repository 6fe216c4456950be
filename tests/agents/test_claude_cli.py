"""The real `claude -p` CLI (2.1.331) against `FakeAnthropic`: what it sends and what it reports.

These tests pin down, with the real binary and no network, the behaviour a workflow runner
relies on. Observed with Claude Code 2.1.331 (running as root):

Environment. The run gets a fresh environment (nothing inherited but PATH/LANG) with an empty
HOME in tmp (the CLI writes `~/.claude.json` and `~/.claude/{projects,sessions,backups,plugins}`
there), ANTHROPIC_BASE_URL=http://127.0.0.1:PORT, ANTHROPIC_API_KEY=test-key,
CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 and DISABLE_AUTOUPDATER=1. Even without the last
two the fake only ever saw `POST /v1/messages?beta=true`; no count_tokens, no title or haiku
side calls in `-p` mode. Time limits: CLAUDE_CODE_MAX_RETRIES (default 10, delays ~0.5 s,
1 s, 2 s, 4 s ... doubling with jitter; retry-after is honoured), API_TIMEOUT_MS (per request,
also sent as X-Stainless-Timeout), CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS (clamped to >= 10 s).

Permissions (a). `--permission-mode acceptEdits` lets Write create `specs/**` files anywhere
under the cwd (tool_result_meta reason_type "mode"), and outside the cwd only with
`--add-dir DIR`. Under `.claude/` it is refused even with `--allowedTools "Edit(.claude/**)"`:
"Claude requested permissions to edit <path> which is a sensitive file.". `dontAsk` refuses
everything not allowed by a rule: "Permission to use Write has been denied because Claude Code
is running in don't ask mode. ..."; path rules must be spelled `Edit(...)` (they cover Write):
`Edit(specs/**)`, `Edit(./specs/**)`, `Edit(/specs/**)` (project-relative) and
`Edit(//abs/path/**)` (absolute) all work, while `Write(specs/**)`, `Write(//abs/**)` and a bare
`Edit` do not; a bare `Write` allows every Write but still not `.claude/`. `default` mode
refuses with "... but you haven't granted it yet.". Every refusal is an `is_error` tool_result,
the model gets another turn, and the run still ends `subtype: success`, `is_error: false`,
exit 0, with the refused call listed in `permission_denials`:
`[{"tool_name": "Write", "tool_use_id": "toolu_...", "tool_input": {"file_path": ..., ...}}]`.

Tools (b). `--tools Read,Write` offers the API exactly Read, DeferredToolPlaceholder and Write
(the init event lists ["Read", "Write"]); `--tools ""` offers none.

Models (c). Aliases resolve before the request: sonnet -> claude-sonnet-5-5, haiku ->
claude-haiku-5-5, opus and the default -> claude-opus-5-5; full ids such as claude-sonnet-4-5
and unknown names such as sonnet-4.5 go out verbatim (the latter also prints
`[claude-code:unrecognized_model] {"model":"sonnet-4.5",...}` on stderr). `--fallback-model
sonnet` switches after the third 529 in a row (trigger "overloaded"), at once on a 500
("server_error") and on a real unknown-model 404 whose message is "model: <id>"
("model_not_found"), never on a 429; a `system`/`model_fallback` event says so. (A 404 with
another message is first re-sent without streaming, and falls back only if retries remain.)

Errors (d). A failed request is retried with a `system`/`api_retry` event per retry
({"attempt", "max_retries", "retry_delay_ms", "error_status", "error"}); 429, 500, 529 and even
401 are retried, a 404 is not (it is re-sent once as a non-streaming request), nor a 403 unless
the answer carries `x-should-retry: true`. The api_retry
`error` is rate_limit / server_error / overloaded / authentication_failed. Three 529s in a row
end the run whatever CLAUDE_CODE_MAX_RETRIES says ("API Error: Repeated 529 Overloaded
errors."). When retries run out the CLI emits a synthetic assistant message (model
"<synthetic>") whose top-level `error` is rate_limit / server_error (500 and 529 alike) /
authentication_failed / model_not_found, then a
`result` with `subtype: "success"` (sic), `is_error: true`, `terminal_reason: "api_error"`,
`api_error_status`, `api_error_type`, `total_cost_usd: 0`, and the process exits 1.
A request that never answers fails after API_TIMEOUT_MS ("Request timed out. ..."). A stream
that stalls after its first delta is abandoned after the byte idle timeout, then re-sent as a
non-streaming request which is bound by API_TIMEOUT_MS.

Cost (e). The success `result` carries `total_cost_usd`, `usage` (summed input/output tokens),
`modelUsage` {model id: {inputTokens, outputTokens, costUSD, ...}}, `num_turns`,
`duration_ms`, `duration_api_ms`, `stop_reason`, `terminal_reason: "completed"`, `result`.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from baton_lsp.model.claude_permissions import Roots, SettingsScope, covers, parse_deny
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import (
    FakeAnthropic,
    Responder,
    Text,
    error,
    failing,
    hang,
    only_models,
    reply_text,
    stall,
    write_then_report,
)

CLAUDE = cli_path("claude")

REPORT = "specs/001_x/reports/r.md"
# Per-token list prices the CLI applies (derived from its own totals): $/token in, out.
PRICES = {"claude-opus-5-5": (4e-6, 20e-6), "claude-sonnet-5-5": (2e-6, 10e-6)}
FAST = {"CLAUDE_CODE_MAX_RETRIES": "1"}


@dataclass
class Run:
    """One finished CLI run: exit code, parsed stream-json events, stderr, wall time."""

    code: int
    events: list[dict[str, Any]]
    stderr: str
    seconds: float

    @property
    def result(self) -> dict[str, Any]:
        results = [e for e in self.events if e.get("type") == "result"]
        assert len(results) == 1, self.events
        return results[0]

    @property
    def init(self) -> dict[str, Any]:
        return self.system("init")[0]

    def system(self, subtype: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "system" and e["subtype"] == subtype]

    @property
    def assistant(self) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("type") == "assistant"]

    @property
    def tool_results(self) -> list[dict[str, Any]]:
        return [
            b
            for e in self.events
            if e.get("type") == "user"
            for b in e["message"]["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]


@dataclass
class Box:
    """An isolated HOME and workspace (the CLI's cwd) under tmp."""

    root: Path
    home: Path
    ws: Path

    def run(
        self,
        api: FakeAnthropic,
        *args: str,
        env: dict[str, str] | None = None,
        prompt: str = "Write the report.",
        timeout: float = 30,
        cwd: Path | None = None,
    ) -> Run:
        base = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": str(self.home),
            "TMPDIR": str(self.root),
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "test-key",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
        cmd = [CLAUDE, "-p", "--output-format", "stream-json", "--verbose", *args]
        start = time.monotonic()
        proc = subprocess.run(
            cmd,
            input=prompt,
            capture_output=True,
            text=True,
            cwd=cwd or self.ws,
            env={**base, **(env or {})},
            timeout=timeout,
            check=False,
        )
        events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
        assert not api.errors, api.errors
        return Run(proc.returncode, events, proc.stderr, time.monotonic() - start)


@pytest.fixture
def box(tmp_path: Path) -> Box:
    home, ws = tmp_path / "home", tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    return Box(tmp_path, home, ws)


@pytest.fixture
def serve() -> Iterator[Callable[[Responder], FakeAnthropic]]:
    """Start fakes on demand; all of them stop when the test ends."""
    started: list[FakeAnthropic] = []

    def start(responder: Responder) -> FakeAnthropic:
        started.append(FakeAnthropic(responder).__enter__())
        return started[-1]

    yield start
    for api in started:
        api.__exit__(None, None, None)


# --- (e) success, and what the result event carries ------------------------------------------


def test_success_writes_report_and_reports_cost(
    box: Box, serve: Callable[..., FakeAnthropic]
) -> None:
    target = box.ws / REPORT
    api = serve(write_then_report(str(target), "# Report\n", f"REPORT_CREATED: {target}"))
    run = box.run(api, "--permission-mode", "acceptEdits")

    assert run.code == 0, run.stderr
    assert target.read_text() == "# Report\n"
    res = run.result
    assert res["subtype"] == "success" and res["is_error"] is False
    assert res["terminal_reason"] == "completed" and res["stop_reason"] == "end_turn"
    assert res["result"].splitlines()[-1] == f"REPORT_CREATED: {target}"
    assert res["num_turns"] == 2
    assert res["permission_denials"] == []
    assert res["api_error_status"] is None
    # usage is the sum of both turns (1000+1200 in, 60+40 out), priced at the opus list price
    assert res["usage"]["input_tokens"] == 2200 and res["usage"]["output_tokens"] == 100
    cin, cout = PRICES["claude-opus-5-5"]
    assert res["total_cost_usd"] == pytest.approx(2200 * cin + 100 * cout)
    model_usage = res["modelUsage"]["claude-opus-5-5"]
    assert model_usage["inputTokens"] == 2200 and model_usage["outputTokens"] == 100
    assert model_usage["costUSD"] == pytest.approx(res["total_cost_usd"])
    assert isinstance(res["duration_ms"], int) and isinstance(res["duration_api_ms"], int)
    # the second API call carries the CLI's tool_result for our tool_use
    calls = api.messages
    assert len(calls) == 2 and all(c.stream for c in calls)
    [result_block] = calls[1].last_tool_results()
    assert "File created successfully" in str(result_block["content"])
    assert calls[0].headers["x-api-key"] == "test-key"
    assert calls[0].headers["User-Agent"].startswith("claude-cli/")
    assert api.other_paths == []


def test_write_elsewhere_is_not_the_expected_report(
    box: Box, serve: Callable[..., FakeAnthropic]
) -> None:
    """The signal line is just text: a runner must check the file, not trust the claim."""
    expected, elsewhere = box.ws / REPORT, box.ws / "notes" / "r.md"
    api = serve(write_then_report(str(elsewhere), "x\n", f"REPORT_CREATED: {expected}"))
    run = box.run(api, "--permission-mode", "acceptEdits")
    assert run.code == 0 and run.result["is_error"] is False
    assert f"REPORT_CREATED: {expected}" in run.result["result"]
    assert elsewhere.exists() and not expected.exists()


# --- (a) permissions as root, without bypassPermissions --------------------------------------

SENSITIVE = "which is a sensitive file."
NOT_GRANTED = "but you haven't granted it yet."
DONT_ASK = "Permission to use Write has been denied because Claude Code is running in don't ask"


@pytest.mark.parametrize(
    ("mode", "flags", "rel", "refusal"),
    [
        ("acceptEdits", [], REPORT, None),
        ("acceptEdits", [], ".claude/reports/r.md", SENSITIVE),
        ("acceptEdits", ["--allowedTools", "Edit(.claude/**)"], ".claude/reports/r.md", SENSITIVE),
        ("acceptEdits", [], "{out}/r.md", NOT_GRANTED),
        ("acceptEdits", ["--add-dir", "{out}"], "{out}/r.md", None),
        ("default", [], REPORT, NOT_GRANTED),
        ("dontAsk", [], REPORT, DONT_ASK),
        ("dontAsk", ["--allowedTools", "Edit(specs/**)"], REPORT, None),
        ("dontAsk", ["--allowedTools", "Edit(./specs/**)"], REPORT, None),
        ("dontAsk", ["--allowedTools", "Edit(/specs/**)"], REPORT, None),
        ("dontAsk", ["--allowedTools", "Edit(/{ws}/specs/**)"], REPORT, None),
        ("dontAsk", ["--allowedTools", "Edit(/{out}/**)"], "{out}/r.md", None),
        ("dontAsk", ["--allowedTools", "Write(specs/**)"], REPORT, DONT_ASK),
        ("dontAsk", ["--allowedTools", "Write(/{ws}/specs/**)"], REPORT, DONT_ASK),
        ("dontAsk", ["--allowedTools", "Edit"], REPORT, DONT_ASK),
        ("dontAsk", ["--allowedTools", "Write"], REPORT, None),
        ("dontAsk", ["--allowedTools", "Write"], ".claude/reports/r.md", DONT_ASK),
    ],
)
def test_write_permissions(
    box: Box,
    serve: Callable[..., FakeAnthropic],
    mode: str,
    flags: list[str],
    rel: str,
    refusal: str | None,
) -> None:
    """{ws}/{out}: the workspace and a directory beside it (so `/{ws}` gives `//abs/...`)."""
    out = box.root / "outside"
    out.mkdir()

    def place(s: str) -> str:
        return s.format(ws=box.ws, out=out)

    target = box.ws / place(rel)  # an absolute {out}/... replaces the workspace part
    api = serve(write_then_report(str(target), "# Report\n", "REPORT_CREATED"))
    run = box.run(api, "--permission-mode", mode, *map(place, flags))

    assert run.code == 0 and run.result["subtype"] == "success"
    assert run.result["is_error"] is False  # a refused tool never fails the run itself
    [block] = run.tool_results
    if refusal is None:
        assert target.read_text() == "# Report\n"
        assert run.result["permission_denials"] == []
        return
    assert not target.exists()
    assert block["is_error"] is True and refusal in block["content"]
    [denial] = run.result["permission_denials"]
    assert denial == {
        "tool_name": "Write",
        "tool_use_id": denial["tool_use_id"],
        "tool_input": {"file_path": str(target), "content": "# Report\n"},
    }
    assert denial["tool_use_id"].startswith("toolu_fake_")
    assert "REPORT_FAILED" in run.result["result"]


@pytest.mark.parametrize(
    ("scope", "rule"),
    [
        ("user", "Edit(./specs/**)"),
        ("user", "Edit(/specs/**)"),  # user settings: `/` is ~/.claude
        ("project", "Edit(/specs/**)"),  # project settings: `/` is the project
        ("user", "Edit(~/proj/specs/**)"),
        ("user", "Edit(//ABS/specs/**)"),
        ("user", "Edit(reports/**)"),  # `dir/**` denies every such directory
        ("project", "Edit(specs/*.md)"),
        ("local", "Edit(specs)"),
        ("user", "Read(./specs/**)"),
        ("user", "Write(./specs/**)"),  # not consulted
        ("user", "Write"),  # the tool taken away
        ("user", "Edit"),  # the Edit tool only: Write still writes
    ],
)
def test_deny_rules_refuse_writes_as_preflight_reads_them(
    box: Box, serve: Callable[..., FakeAnthropic], scope: str, rule: str
) -> None:
    """What Baton's preflight (baton_lsp.model.claude_permissions) predicts for a deny rule
    is what the real binary does with it: the artifact refused exactly when it says so."""
    proj = box.home / "proj"
    proj.mkdir()
    target = proj / "specs/001_x/reports/r.md"
    rule = rule.replace("ABS", str(proj).lstrip("/"))
    settings = {
        "user": box.home / ".claude/settings.json",
        "project": proj / ".claude/settings.json",
        "local": proj / ".claude/settings.local.json",
    }[scope]
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"permissions": {"deny": [rule]}}))
    api = serve(write_then_report(str(target), "# R\n", f"REPORT_CREATED: {target}"))
    run = box.run(
        api, "--permission-mode", "acceptEdits", "--allowedTools", f"Edit(/{target.parent}/**)",
        cwd=proj,
    )
    assert run.code == 0, run.stderr[-2000:]
    parsed = parse_deny(rule)
    roots = Roots(cwd=PurePosixPath(proj), home=PurePosixPath(box.home),
                  config_dir=PurePosixPath(box.home / ".claude"))
    predicted = parsed is not None and covers(
        parsed, SettingsScope(scope), roots, PurePosixPath(target))
    assert (not target.exists()) is predicted, run.tool_results


@pytest.mark.parametrize("rule", ["Write", "Wirte", "Write:**"])
def test_a_misspelt_allow_rule_allows_nothing_as_btn809_says(
    box: Box, serve: Callable[..., FakeAnthropic], rule: str
) -> None:
    """Claude Code's validator keeps any tool name, and a rule naming no tool never matches:
    in dontAsk mode the project's `allow: ["Wirte"]` or `["Write:**"]` leaves Write refused,
    while `["Write"]` lets it write. BTN814 reports exactly the rules the binary ignores."""
    from baton_lsp.rules.engine import check_file
    from baton_lsp.workspace.index import WorkspaceIndex

    settings = box.ws / ".claude/settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": [rule]}}))
    target = box.ws / REPORT
    api = serve(write_then_report(str(target), "# R\n", "REPORT_CREATED"))
    # observed: in this untrusted tmp project the file alone allowed nothing; --settings loads it
    run = box.run(api, "--permission-mode", "dontAsk", "--settings", str(settings))
    assert run.code == 0, run.stderr[-2000:]
    reported = [f for f in check_file(WorkspaceIndex(box.ws), settings) if f.code == "BTN814"]
    assert target.exists() is (rule == "Write"), run.tool_results
    assert bool(reported) is (rule != "Write")
    if reported:
        assert DONT_ASK in json.dumps(run.tool_results)


# --- a phase in its own git worktree (Baton's isolation) -------------------------------------


@pytest.mark.parametrize(("rel", "flags", "refusal"), [
    ("{wt}/src/phase.py", [], None),
    ("{wt}/.claude/notes.md", [], SENSITIVE),
    ("{ws}/specs/001_x/summaries/phase_1_summary.md", [], NOT_GRANTED),
    ("{ws}/specs/001_x/summaries/phase_1_summary.md", ["--add-dir", "{ws}/specs/001_x"], None),
])
def test_a_worktree_under_dot_claude_is_the_agents_own_project(
    box: Box, serve: Callable[..., FakeAnthropic], rel: str, flags: list[str],
    refusal: str | None,
) -> None:
    """Baton runs a parallel phase with its cwd in `.claude/worktrees/<name>` (Claude Code's
    own place for worktrees): the agent edits the worktree's files freely in acceptEdits
    (the protected `.claude/` is the worktree's own, not the path's ancestor), and writes
    its summary in the main tree's topic directory only with `--add-dir`."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q", str(box.ws)], check=True)
    (box.ws / "README.md").write_text("x\n")
    subprocess.run([*git, "-C", str(box.ws), "add", "-A"], check=True)
    subprocess.run([*git, "-C", str(box.ws), "commit", "-qm", "base"], check=True)
    wt = box.ws / ".claude" / "worktrees" / "baton-w-phase-1"
    subprocess.run(["git", "-C", str(box.ws), "worktree", "add", "-q", "-b",
                    "baton/w/phase-1", str(wt)], check=True)

    def place(s: str) -> str:
        return s.format(ws=box.ws, wt=wt)

    target = Path(place(rel))
    (box.ws / "specs" / "001_x" / "summaries").mkdir(parents=True)  # made by initialize
    api = serve(write_then_report(str(target), "x = 1\n", "SUMMARY_CREATED"))
    run = box.run(api, "--permission-mode", "acceptEdits", *map(place, flags), cwd=wt)
    assert run.code == 0 and run.result["is_error"] is False
    if refusal is None:
        assert target.read_text() == "x = 1\n"
        assert run.result["permission_denials"] == []
    else:
        assert not target.exists()
        assert refusal in json.dumps(run.tool_results)


# --- (b) tools, (c) models --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "offered", "listed"),
    [
        (
            ["--tools", "Read,Write"],
            ["Read", "DeferredToolPlaceholder", "Write"],
            ["Read", "Write"],
        ),
        (["--tools", ""], [], []),
    ],
)
def test_tools_flag_limits_offered_tools(
    box: Box,
    serve: Callable[..., FakeAnthropic],
    flags: list[str],
    offered: list[str],
    listed: list[str],
) -> None:
    api = serve(reply_text("hi"))
    run = box.run(api, "--permission-mode", "acceptEdits", *flags)
    assert run.code == 0
    assert [c.tool_names for c in api.messages] == [offered]
    assert run.init["tools"] == listed


def test_default_tools_include_bash(box: Box, serve: Callable[..., FakeAnthropic]) -> None:
    api = serve(reply_text("hi"))
    box.run(api, "--permission-mode", "acceptEdits")
    assert {"Bash", "Edit", "Read", "Write"} <= set(api.messages[0].tool_names)


@pytest.mark.parametrize(
    ("model", "sent"),
    [
        (None, "claude-opus-5-5"),
        ("opus", "claude-opus-5-5"),
        ("sonnet", "claude-sonnet-5-5"),
        ("haiku", "claude-haiku-5-5"),
        ("claude-sonnet-4-5", "claude-sonnet-4-5"),
        ("sonnet-4.5", "sonnet-4.5"),
    ],
)
def test_model_id_sent(
    box: Box, serve: Callable[..., FakeAnthropic], model: str | None, sent: str
) -> None:
    api = serve(reply_text("hi"))
    run = box.run(api, "--permission-mode", "acceptEdits", *(["--model", model] if model else []))
    assert run.code == 0
    assert [c.model for c in api.messages] == [sent]
    assert run.init["model"] == sent
    assert list(run.result["modelUsage"]) == [sent]
    assert ("unrecognized_model" in run.stderr) == (model == "sonnet-4.5")


@pytest.mark.parametrize(
    ("status", "trigger", "opus_calls"),
    [(529, "overloaded", 3), (500, "server_error", 1), (404, "model_not_found", 1)],
)
def test_fallback_model(
    box: Box, serve: Callable[..., FakeAnthropic], status: int, trigger: str, opus_calls: int
) -> None:
    # a real unknown-model 404 says "model: <id>"; only_models answers just that way
    sonnet = reply_text("from fallback")
    api = serve(
        only_models(["claude-sonnet-5-5"], sonnet)
        if status == 404
        else lambda req: error(status) if req.model == "claude-opus-5-5" else sonnet(req)
    )
    run = box.run(
        api,
        "--permission-mode",
        "acceptEdits",
        "--model",
        "opus",
        "--fallback-model",
        "sonnet",
    )
    assert run.code == 0 and run.result["result"] == "from fallback"
    assert [c.model for c in api.messages] == ["claude-opus-5-5"] * opus_calls + [
        "claude-sonnet-5-5"
    ]
    [switch] = run.system("model_fallback")
    assert (switch["trigger"], switch["original_model"], switch["fallback_model"]) == (
        trigger,
        "claude-opus-5-5",
        "claude-sonnet-5-5",
    )
    assert list(run.result["modelUsage"]) == ["claude-sonnet-5-5"]


def test_no_fallback_on_rate_limit(box: Box, serve: Callable[..., FakeAnthropic]) -> None:
    api = serve(lambda req: error(429) if req.model == "claude-opus-5-5" else Text("no"))
    run = box.run(
        api,
        "--permission-mode",
        "acceptEdits",
        "--model",
        "opus",
        "--fallback-model",
        "sonnet",
        env=FAST,
    )
    assert run.code == 1 and run.system("model_fallback") == []
    assert {c.model for c in api.messages} == {"claude-opus-5-5"}


# --- (d) errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind", "api_type", "text", "retried"),
    [
        (429, "rate_limit", "rate_limit_error", "API Error: Request rejected (429)", True),
        (500, "server_error", "api_error", "API Error: 500 Internal server error.", True),
        (529, "server_error", "overloaded_error", "API Error: 529 Overloaded.", True),
        (
            401,
            "authentication_failed",
            "authentication_error",
            "Invalid API key · Fix external API key",
            True,
        ),
        (
            404,
            "model_not_found",
            "not_found_error",
            "There's an issue with the selected model (claude-opus-5-5).",
            False,
        ),
    ],
)
def test_api_error_exhausts_retries(
    box: Box,
    serve: Callable[..., FakeAnthropic],
    status: int,
    kind: str,
    api_type: str,
    text: str,
    retried: bool,
) -> None:
    responder = (
        only_models(["claude-sonnet-5-5"], reply_text("no")) if status == 404 else failing(status)
    )
    api = serve(responder)
    run = box.run(api, "--permission-mode", "acceptEdits", env=FAST)

    assert run.code == 1
    retries = run.system("api_retry")
    if retried:  # CLAUDE_CODE_MAX_RETRIES=1: one retry, so two identical streaming calls
        assert [
            (r["attempt"], r["max_retries"], r["error_status"], r["error"]) for r in retries
        ] == [(1, 1, status, "overloaded" if status == 529 else kind)]
        assert 0 < retries[0]["retry_delay_ms"] < 2000
        assert [c.stream for c in api.messages] == [True, True]
    else:  # no api_retry; the CLI re-sends once without streaming
        assert retries == []
        assert [c.stream for c in api.messages] == [True, False]
    [message] = run.assistant
    assert message["error"] == kind
    assert message["message"]["model"] == "<synthetic>"
    assert message["message"]["content"][0]["text"].startswith(text)
    res = run.result
    assert (res["subtype"], res["is_error"], res["terminal_reason"]) == (
        "success",
        True,
        "api_error",
    )
    assert (res["api_error_status"], res["api_error_type"]) == (status, api_type)
    assert res["total_cost_usd"] == 0 and res["modelUsage"] == {}
    assert res["result"] == message["message"]["content"][0]["text"]


@pytest.mark.parametrize(("headers", "retried"), [({}, False), ({"x-should-retry": "true"}, True)])
def test_a_403_is_retried_only_when_the_answer_says_so(
    box: Box, serve: Callable[..., FakeAnthropic], headers: dict[str, str], retried: bool
) -> None:
    """A plain 403 ends the run after one request; one marked `x-should-retry: true` (as a
    gateway may send) is retried like a 401, as `authentication_failed` with its status."""

    def respond(req: Any) -> Any:
        reply = error(403)
        reply.headers.update(headers)
        return reply

    api = serve(respond)
    run = box.run(api, "--permission-mode", "acceptEdits", env=FAST)
    assert run.code == 1
    retries = [(r["error_status"], r["error"]) for r in run.system("api_retry")]
    assert retries == ([(403, "authentication_failed")] if retried else [])
    assert len(api.messages) == (2 if retried else 1)
    assert run.result["api_error_status"] == 403


def test_overloaded_gives_up_after_three_529s(
    box: Box, serve: Callable[..., FakeAnthropic]
) -> None:
    """However high CLAUDE_CODE_MAX_RETRIES is, three 529s in a row end the run."""
    api = serve(failing(529))
    run = box.run(api, "--permission-mode", "acceptEdits")
    assert run.code == 1 and len(api.messages) == 3
    assert [(r["attempt"], r["max_retries"], r["error"]) for r in run.system("api_retry")] == [
        (1, 10, "overloaded"),
        (2, 10, "overloaded"),
    ]
    [message] = run.assistant
    assert message["error"] == "server_error"
    assert message["message"]["content"][0]["text"].startswith(
        "API Error: Repeated 529 Overloaded errors."
    )
    assert (run.result["api_error_status"], run.result["api_error_type"]) == (
        529,
        "overloaded_error",
    )


@pytest.mark.parametrize(("status", "kind"), [(529, "overloaded"), (500, "server_error")])
def test_transient_errors_recover_with_default_retries(
    box: Box, serve: Callable[..., FakeAnthropic], status: int, kind: str
) -> None:
    api = serve(failing(status, first=2, then=reply_text("recovered")))
    run = box.run(api, "--permission-mode", "acceptEdits")
    assert run.code == 0 and run.result["result"] == "recovered"
    retries = run.system("api_retry")
    assert [(r["attempt"], r["max_retries"], r["error"]) for r in retries] == [
        (1, 10, kind),
        (2, 10, kind),
    ]
    assert len(api.messages) == 3
    assert run.result["is_error"] is False and run.result["total_cost_usd"] > 0


def test_retry_after_header_is_honoured(box: Box, serve: Callable[..., FakeAnthropic]) -> None:
    api = serve(failing(429, first=1, retry_after=2, then=reply_text("ok")))
    run = box.run(api, "--permission-mode", "acceptEdits")
    [retry] = run.system("api_retry")
    assert retry["error"] == "rate_limit" and 2000 <= retry["retry_delay_ms"] < 4000
    assert run.code == 0 and run.seconds >= 2


def test_hang_times_out_after_api_timeout(box: Box, serve: Callable[..., FakeAnthropic]) -> None:
    api = serve(hang())
    run = box.run(
        api,
        "--permission-mode",
        "acceptEdits",
        env={"CLAUDE_CODE_MAX_RETRIES": "0", "API_TIMEOUT_MS": "2000"},
    )
    assert run.code == 1
    assert api.messages[0].headers["X-Stainless-Timeout"] == "2"
    [message] = run.assistant
    assert message["error"] == "server_error"
    assert run.result["result"].startswith("Request timed out.")
    assert run.result["api_error_status"] is None and run.result["is_error"] is True
    assert run.seconds < 10


def test_stalled_stream_falls_back_to_non_streaming(
    box: Box, serve: Callable[..., FakeAnthropic]
) -> None:
    """Byte idle timeout (10 s, its floor), then one non-streaming call bound by API_TIMEOUT_MS."""
    api = serve(stall())
    run = box.run(
        api,
        "--permission-mode",
        "acceptEdits",
        env={
            "CLAUDE_CODE_MAX_RETRIES": "0",
            "API_TIMEOUT_MS": "3000",
            "CLAUDE_BYTE_STREAM_IDLE_TIMEOUT_MS": "10000",
        },
    )
    assert run.code == 1
    assert [c.stream for c in api.messages] == [True, False]
    assert run.system("api_retry") == []
    assert run.result["result"].startswith("Request timed out.")
    assert run.result["terminal_reason"] == "api_error"
    assert 10 <= run.seconds < 20

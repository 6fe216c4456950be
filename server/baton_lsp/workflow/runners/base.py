"""What every runner shares: the step and launch records, failure classes, the
classification of exits and messages, and small stream-decoding helpers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...model.states import FailureClass
from ...runs import confine
from ..process import ProcessOutcome

logger = logging.getLogger(__name__)

TRANSIENT, PERMANENT = FailureClass.TRANSIENT, FailureClass.PERMANENT
FATAL = "fatal"


@dataclass(frozen=True)
class Invocation:
    """One agent step as the engine describes it, independent of the CLI that runs it."""

    step_id: str
    role: str
    prompt: str
    contract: Mapping[str, str]
    cwd: Path
    model: str | None = None
    """The agent's front-matter `model` (a Claude model name) or the role's override."""
    tools: tuple[str, ...] = ()
    agent_name: str | None = None
    fallback_model: str | None = None
    extra_dirs: tuple[Path, ...] = ()
    """Directories outside `cwd` the agent reads and writes (a phase in its own worktree:
    the main tree's topic directory, where the plan is and its summary goes)."""
    usage_endpoint: str | None = None
    """Where a runner whose `usage_telemetry` is on exports its usage as it runs (an OTLP
    logs URL on 127.0.0.1 that Baton serves for this attempt)."""


@dataclass(frozen=True)
class LaunchSpec:
    """What to hand to `run_process`. `temp_files` (inside the workspace `root`) are removed
    by `cleanup()` after the run, through `confine` as they were written."""

    argv: list[str]
    stdin: bytes | None
    env: dict[str, str]
    temp_files: tuple[Path, ...] = ()
    root: Path | None = None

    def cleanup(self) -> None:
        for path in self.temp_files:
            try:
                if self.root is None:
                    raise confine.UnsafePath(f"refusing to remove {path}: no workspace given")
                confine.unlink(self.root, path)
            except FileNotFoundError:
                pass
            except OSError as exc:
                logger.warning("cannot remove %s: %s", path, exc)


@dataclass
class RunResult:
    """The agent's own account of how the run ended (a stream's final `result` event)."""

    ok: bool
    subtype: str | None
    message: str | None
    session_id: str | None
    failure: str | None  # None | "transient" | "permanent" | "fatal"
    denials: tuple[str, ...] = ()
    """Tool calls the CLI refused (claude's `permission_denials`), one readable line each."""
    usage: dict[str, Any] | None = None
    """Cost and token usage as the CLI reported it (see `usage_of`)."""


@dataclass(frozen=True)
class HopelessRetry:
    """An API failure the CLI is retrying although no retry can fix it (a bad key answered
    401 from the first request): the engine stops the agent at once and fails the step as
    fatal instead of waiting out the CLI's own retries (claude's take minutes)."""

    cli: str
    status: int | None
    error: str | None
    """The CLI's name for the failure (`authentication_failed`), or its message."""

    @property
    def fix(self) -> str:
        status = self.status if self.status is not None else _STATUS_OF_ERROR.get(
            self.error or "", 401)  # without a status: an account or credential problem
        if status in (401, 403):
            return f"check the API key or login: {AUTH_FIXES[self.cli]}"
        if status == 404:
            return MODEL_FIX
        return ("the model API refuses the request itself: check the CLI's API endpoint "
                "(a proxy or gateway in its settings or environment) and its version")

    @property
    def message(self) -> str:
        what = f"HTTP {self.status}" if self.status is not None else "an error"
        why = f" ({self.error})" if self.error else ""
        return (f"the {self.cli} CLI got {what}{why} from the model API and was retrying it; "
                f"no retry can fix that, so the agent was stopped — fix: {self.fix}")


_STATUS_OF_ERROR = {"model_not_found": 404, "invalid_request": 400}
"""The status an error name stands for when a retry event carries none."""
_RETRYABLE_4XX = frozenset({408, 409, 429})
"""Client errors a retry can fix: request timeout, conflict, rate limit."""


def fatal_status(status: object) -> bool:
    """Whether an HTTP status is one no retry can fix: a 4xx (bad or missing key 401,
    forbidden 403, bad request 400, unknown model 404, …) other than 408, 409 and 429.
    429, 5xx and 529 (overloaded) are transient."""
    return (isinstance(status, int) and not isinstance(status, bool)
            and 400 <= status < 500 and status not in _RETRYABLE_4XX)


@dataclass
class AgentEvent:
    """What one stdout line carried: human-readable text lines (for signals and the user),
    a final result, the session id to resume with, an error the stream reported, or a
    failure the CLI is retrying in vain (`hopeless`: stop the agent now)."""

    text: list[str] = field(default_factory=list)
    result: RunResult | None = None
    session_id: str | None = None
    error: str | None = None
    hopeless: HopelessRetry | None = None
    """A status the CLI retries although no retry can fix it (a bad key): stop the agent."""
    usage: dict[str, Any] | None = None
    """Usage this line adds to the attempt as it runs (the `usage_of` shape; `turns` counts
    model requests), so a budget can stop the agent before its final event."""
    model: str | None = None
    """The model the line's usage is for, when the stream names it (for the price)."""


@runtime_checkable
class Runner(Protocol):
    name: str

    def launch(self, inv: Invocation) -> LaunchSpec: ...

    def decode(self, line: str) -> AgentEvent: ...

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None: ...


# --- classification shared by every runner -------------------------------------------------

_FATAL_IO = re.compile(
    r"ENOSPC|no space left on device|read-only file system|EROFS|EACCES|permission denied",
    re.IGNORECASE)
_FATAL_AUTH = re.compile(
    r"authentication_failed|authentication_error|not logged in|please run /login|"
    r"invalid[ _-]?(?:x-)?api[ _-]?key|incorrect api key|api key not valid|API_KEY_INVALID|"
    r"(?:status|http|code)\W{0,3}40[13]\b|\b401 unauthorized|\(40[13]\)|unauthorized|"
    r"\b403 forbidden|permission_error|PERMISSION_DENIED|UNAUTHENTICATED|"
    r"billing_error|credit balance is too low|set an auth method",
    re.IGNORECASE)
_FATAL_MODEL = re.compile(
    r"model_not_found|not_found_error|model\W{1,3}\S+\W{1,3}(?:does not exist|not found)|"
    r"is not found for API version|unknown model|invalid model|model is not supported|"
    r"not a Claude model|ProviderModelNotFoundError|\bmodel not found\b", re.IGNORECASE)
_FATAL_TRUST = re.compile(r"not running in a trusted directory|UntrustedWorkspace|"
                          r"untrusted (?:folder|workspace|directory)|folder is not trusted",
                          re.IGNORECASE)
_FATAL_ROOT = re.compile(r"cannot be used with root/sudo privileges", re.IGNORECASE)
_TRANSIENT = re.compile(
    r"rate[ _-]?limit|overloaded|too many requests|high demand|RESOURCE_EXHAUSTED|"
    r"\b(?:http|status|error|code)\b\W{0,3}(?:429|5\d\d)\b|\((?:429|5\d\d)\)|"
    r"\b(?:429|5\d\d) (?:too many|internal server|bad gateway|service unavailable|"
    r"gateway timeout)|internal server error|bad gateway|service unavailable|"
    r"ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|socket hang up|connection reset|"
    r"timed out|timeout_error|stream disconnected|failed to connect|"
    # A CLI's own SQLite store held by another of its processes (opencode keeps its sessions
    # in one database per user: two parallel phases' `opencode run` can collide on it).
    r"database is locked|SQLITE_BUSY",
    re.IGNORECASE)
MODEL_FIX = ("use a model this CLI serves: fix `model:` in the agent's front matter (claude) "
             "or set [workflow.codex] / [workflow.opencode] / [workflow.gemini] model")
FIXES = (
    (_FATAL_ROOT, "Claude Code refuses bypassPermissions as root: keep [workflow.claude] "
     "permission-mode = \"acceptEdits\" (Baton's default), or run as a normal user"),
    (_FATAL_TRUST, "let the CLI trust the workspace: [workflow.gemini] skip-trust = true "
     "(Baton's default), or trust the folder in gemini"),
    (_FATAL_AUTH, "log the CLI in, or set its API key in the environment (ANTHROPIC_API_KEY, "
     "OPENAI_API_KEY or GEMINI_API_KEY)"),
    (_FATAL_MODEL, MODEL_FIX),
)
"""Fatal causes, most specific first, with the fix each names."""
_TRANSIENT_CODES = frozenset({124, 137, 143})  # timeout(1), SIGKILL, SIGTERM
_FATAL_CODES = frozenset({126, 127})  # found but not executable, not found


AUTH_FIXES = {"claude": "set ANTHROPIC_API_KEY, or run `claude` once and log in",
              "codex": "set OPENAI_API_KEY (or the env_key of your codex model provider), or "
                       "run `codex login`",
              "gemini": "set GEMINI_API_KEY, or run `gemini` once and choose an auth method",
              "opencode": "set the API key of opencode's provider (its environment variable, "
                          "or `apiKey` in the provider's options in opencode.json), or run "
                          "`opencode auth login`"}
"""How each CLI gets credentials (preflight names these too)."""


def fix_for(text: str, cli: str | None = None) -> str | None:
    """The fix for a fatal cause named in `text` (auth, unknown model, trust, root); the
    login fix is `cli`'s own when the CLI is known."""
    for pattern, fix in FIXES:
        if pattern.search(text):
            return AUTH_FIXES.get(cli or "", fix) if pattern is _FATAL_AUTH else fix
    return None


def classify_text(text: str) -> str | None:
    """Failure class named by an error message, or None when it names none."""
    if fix_for(text) is not None:
        return FATAL
    if _TRANSIENT.search(text):
        return TRANSIENT
    return None


def classify_common(exit_code: int, stderr_tail: str, result: RunResult | None) -> str | None:
    """The part of exit classification every runner shares (see the module docstring).

    Order: success; program could not run (fatal); the agent's own structured result; killed
    by timeout/TERM/KILL (transient); the stderr tail and failed result message (disk, file
    system and auth problems fatal, network and capacity problems transient); else permanent.
    """
    if exit_code == 0 and (result is None or result.ok):
        return None
    if exit_code in _FATAL_CODES:
        return FATAL
    failed = result is not None and not result.ok
    if failed and result is not None and result.failure in (TRANSIENT, FATAL):
        return result.failure
    if exit_code in _TRANSIENT_CODES:
        return TRANSIENT
    if _FATAL_IO.search(stderr_tail):
        return FATAL
    # A structured result that only says "permanent" may have lost the status on the way
    # (gemini's exhausted quota: `status: 429` is on stderr only), so the text decides first.
    message = (result.message or "") if failed and result is not None else ""
    return classify_text(f"{stderr_tail}\n{message}") or PERMANENT


def refusals(runner: Runner, result: RunResult | None, stderr_tail: str) -> tuple[str, ...]:
    """What the CLI refused in a run, one readable line each: its final result's `denials`,
    then those a runner reads in the stderr tail with its optional `stderr_denials` (codex
    logs some refusals only there), in order and without repeats."""
    own = result.denials if result is not None else ()
    read = getattr(runner, "stderr_denials", None)
    logged = tuple(read(stderr_tail)) if callable(read) else ()
    return tuple(dict.fromkeys((*own, *logged)))


def classify_outcome(runner: Runner, outcome: ProcessOutcome,
                     result: RunResult | None) -> str | None:
    """Failure class of a finished run, None for success: our own timeout or stall is
    transient, a signal death counts as exit 128+N, the rest is the runner's call.

    A cancelled run, or one stopped on the caller's `stop` (a budget crossed, a hopeless
    retry), is reported "fatal" so nothing retries it; callers normally check
    `outcome.cancelled` / `outcome.stopped` first.
    """
    if outcome.cancelled or outcome.stopped:
        return FATAL
    if outcome.timed_out or outcome.stalled:
        return TRANSIENT
    if outcome.exit_code is not None:
        code = outcome.exit_code
    elif outcome.signal is not None:
        code = 128 + outcome.signal
    else:
        return TRANSIENT
    return runner.classify_exit(code, outcome.stderr_tail, result)


# --- helpers ------------------------------------------------------------------------------

def runner_env(inv: Invocation, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(inv.contract)
    if extra:
        env.update(extra)
    return env


def json_object(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def plain_event(line: str) -> AgentEvent:
    return AgentEvent(text=[line])


def str_or_none(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def error_text(value: object) -> str | None:
    """An error as a string, whether the stream gave a string or {"type"/"message": ...}."""
    if isinstance(value, dict):
        parts = [v for k in ("type", "code", "message") if isinstance(v := value.get(k), str)]
        return " ".join(parts) or None
    return str_or_none(value)


def contract_summary(inv: Invocation, limit: int = 200) -> str:
    """A short system-prompt addendum naming the step and its BATON_* contract. It is an argv
    element (readable in `ps`), so long or multi-line values — descriptions, test output —
    are only named; they are in the prompt and the environment."""
    lines = [f"You are running Baton workflow step {inv.step_id} (role: {inv.role}).",
             "Your input contract (also in your environment):"]
    for key in sorted(inv.contract):
        value = inv.contract[key]
        short = len(value) <= limit and "\n" not in value
        lines.append(f"{key}={value}" if short else f"{key} (see the environment)")
    artifact = inv.contract.get("BATON_ARTIFACT_PATH")
    if artifact:
        lines.append(f"Write your artifact to exactly {artifact} and report it on its own line.")
    return "\n".join(lines)


def number_or_none(value: object) -> float | int | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def usage_of(obj: Mapping[str, Any], cost_key: str | None = None,
             usage_key: str = "usage") -> dict[str, Any] | None:
    """The cost and token counts of a final event, in one shape for every CLI:
    cost_usd, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, turns,
    api_ms (whatever the CLI reports; absent keys stay absent)."""
    out: dict[str, Any] = {}
    usage = obj.get(usage_key)
    if isinstance(usage, dict):
        for ours, theirs in (("input_tokens", ("input_tokens", "promptTokenCount",
                                                "input")),
                             ("output_tokens", ("output_tokens", "candidatesTokenCount",
                                                "output")),
                             ("cache_read_tokens", ("cache_read_input_tokens",
                                                    "cached_input_tokens", "cached")),
                             ("cache_write_tokens", ("cache_creation_input_tokens",)),
                             ("total_tokens", ("total_tokens", "totalTokenCount"))):
            value = next((v for k in theirs
                          if (v := number_or_none(usage.get(k))) is not None), None)
            if value is not None:
                out[ours] = value
    if cost_key and (cost := number_or_none(obj.get(cost_key))) is not None:
        out["cost_usd"] = cost
    if (turns := number_or_none(obj.get("num_turns"))) is not None:
        out["turns"] = turns
    if (api_ms := number_or_none(obj.get("duration_api_ms"))) is not None:
        out["api_ms"] = api_ms
    return out or None


def content_lines(content: object) -> list[str]:
    if isinstance(content, str):
        return content.splitlines()
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                out += str(block.get("text", "")).splitlines()
    return out


class NoTask:
    """Weak-referenceable stand-in key for decoding outside any asyncio task."""


NO_TASK = NoTask()


def stream_key() -> object:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop
        task = None
    return task if task is not None else NO_TASK


def telemetry_usage(record: Mapping[str, str], names: tuple[tuple[str, str], ...]
                    ) -> tuple[dict[str, Any], str | None] | None:
    """The usage one telemetry record reports, in the `usage_of` shape: `names` maps ours to
    the CLI's attribute names (whole positive numbers only); None without input or output
    tokens. With the record's model, for the price."""
    usage: dict[str, Any] = {}
    for ours, theirs in names:
        value = record.get(theirs)
        if value is not None and value.isdigit() and int(value):
            usage[ours] = int(value)
    if "input_tokens" not in usage and "output_tokens" not in usage:
        return None
    return usage, str_or_none(record.get("model"))

"""How an agent step is launched and how its output is read: one runner per agent CLI.

A runner turns an `Invocation` into an argv, stdin and environment (`launch`), turns each
stdout line into text lines plus an optional final result (`decode`), and says what kind of
failure an exit was (`classify_exit`): "transient" (retry later), "permanent" (this attempt
is wrong; a retry with the same input fails the same way) or "fatal" (stop the workflow:
the environment is broken — not logged in, disk full, program missing).

Prompts always go on stdin, never in argv: no argument length limit and nothing readable in
`ps`. Values are only ever single argv elements; no runner builds a shell command line.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shutil
import sys
import tempfile
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..model.claude_models import claude_model_arg
from ..model.config import WorkflowSettings
from .process import ProcessOutcome, strip_ansi

logger = logging.getLogger(__name__)

TRANSIENT = "transient"
PERMANENT = "permanent"
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


@dataclass(frozen=True)
class LaunchSpec:
    """What to hand to `run_process`. `temp_files` are removed by `cleanup()` after the run."""

    argv: list[str]
    stdin: bytes | None
    env: dict[str, str]
    temp_files: tuple[Path, ...] = ()

    def cleanup(self) -> None:
        for path in self.temp_files:
            try:
                path.unlink(missing_ok=True)
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


@dataclass
class AgentEvent:
    """What one stdout line carried: human-readable text lines (for signals and the user),
    a final result, the session id to resume with, or an error the stream reported."""

    text: list[str] = field(default_factory=list)
    result: RunResult | None = None
    session_id: str | None = None
    error: str | None = None


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
    r"(?:status|http|code)\W{0,3}401\b|\b401 unauthorized|\(401\)|unauthorized|"
    r"billing_error|credit balance is too low|set an auth method",
    re.IGNORECASE)
_FATAL_MODEL = re.compile(
    r"model_not_found|not_found_error|model\W{1,3}\S+\W{1,3}(?:does not exist|not found)|"
    r"is not found for API version|unknown model|invalid model|model is not supported|"
    r"not a Claude model", re.IGNORECASE)
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
    r"timed out|timeout_error|stream disconnected|failed to connect",
    re.IGNORECASE)
FIXES = (
    (_FATAL_ROOT, "Claude Code refuses bypassPermissions as root: keep [workflow.claude] "
     "permission-mode = \"acceptEdits\" (Baton's default), or run as a normal user"),
    (_FATAL_TRUST, "let the CLI trust the workspace: [workflow.gemini] skip-trust = true "
     "(Baton's default), or trust the folder in gemini"),
    (_FATAL_AUTH, "log the CLI in, or set its API key in the environment (ANTHROPIC_API_KEY, "
     "OPENAI_API_KEY or GEMINI_API_KEY)"),
    (_FATAL_MODEL, "use a model this CLI serves: fix `model:` in the agent's front matter "
     "(claude) or set [workflow.codex] / [workflow.gemini] model"),
)
"""Fatal causes, most specific first, with the fix each names."""
_TRANSIENT_CODES = frozenset({124, 137, 143})  # timeout(1), SIGKILL, SIGTERM
_FATAL_CODES = frozenset({126, 127})  # found but not executable, not found


def fix_for(text: str) -> str | None:
    """The fix for a fatal cause named in `text` (auth, unknown model, trust, root)."""
    for pattern, fix in FIXES:
        if pattern.search(text):
            return fix
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


def classify_outcome(runner: Runner, outcome: ProcessOutcome,
                     result: RunResult | None) -> str | None:
    """Failure class of a finished run, None for success: our own timeout or stall is
    transient, a signal death counts as exit 128+N, the rest is the runner's call.

    A cancelled run is reported "fatal" so nothing retries it; callers normally check
    `outcome.cancelled` first and stop the workflow as cancelled.
    """
    if outcome.cancelled:
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

def _env(inv: Invocation, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update(inv.contract)
    if extra:
        env.update(extra)
    return env


def _json_object(line: str) -> dict[str, Any] | None:
    text = line.strip()
    if not text.startswith("{"):
        return None
    try:
        obj = json.loads(text)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _plain(line: str) -> AgentEvent:
    return AgentEvent(text=[line])


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _error_text(value: object) -> str | None:
    """An error as a string, whether the stream gave a string or {"type"/"message": ...}."""
    if isinstance(value, dict):
        parts = [v for k in ("type", "code", "message") if isinstance(v := value.get(k), str)]
        return " ".join(parts) or None
    return _str(value)


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


# --- Claude Code --------------------------------------------------------------------------

_CLAUDE_ERRORS = {
    "rate_limit": TRANSIENT, "overloaded": TRANSIENT, "server_error": TRANSIENT,
    "api_timeout": TRANSIENT, "timeout": TRANSIENT,
    "authentication_failed": FATAL, "billing_error": FATAL, "model_not_found": FATAL,
    "invalid_request": PERMANENT, "max_output_tokens": PERMANENT,
}
_CLAUDE_SUBTYPES = {
    "error_max_turns": PERMANENT, "error_during_execution": PERMANENT,
    "error_max_budget_usd": PERMANENT, "error_max_structured_output_retries": PERMANENT,
}


def _claude_failure(obj: Mapping[str, Any], message: str | None,
                    assistant_error: str | None = None) -> str:
    error = _error_text(obj.get("error")) or assistant_error
    if error:
        for key, cls in _CLAUDE_ERRORS.items():
            if key in error:
                return cls
    by_text = classify_text(f"{error or ''}\n{message or ''}")
    if by_text:
        return by_text
    return _CLAUDE_SUBTYPES.get(str(obj.get("subtype")), PERMANENT)


def _denial_line(denial: object) -> str:
    """`Write /abs/path` from one of claude's `permission_denials` entries."""
    if not isinstance(denial, dict):
        return str(denial)
    tool = str(denial.get("tool_name") or denial.get("tool") or "tool")
    args = denial.get("tool_input")
    target = None
    if isinstance(args, dict):
        target = next((str(args[k]) for k in ("file_path", "path", "notebook_path", "command")
                       if isinstance(args.get(k), str)), None)
    return f"{tool} {target}" if target else tool


def _number(value: object) -> float | int | None:
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
            value = next((v for k in theirs if (v := _number(usage.get(k))) is not None), None)
            if value is not None:
                out[ours] = value
    if cost_key and (cost := _number(obj.get(cost_key))) is not None:
        out["cost_usd"] = cost
    if (turns := _number(obj.get("num_turns"))) is not None:
        out["turns"] = turns
    if (api_ms := _number(obj.get("duration_api_ms"))) is not None:
        out["api_ms"] = api_ms
    return out or None


@dataclass
class ClaudeRunner:
    """`claude -p --output-format stream-json --verbose` (stream-json needs --verbose).

    The front-matter model is a Claude model name: aliases and full ids pass as they are,
    the short `sonnet-4.5` form becomes `claude-sonnet-4-5`; anything else fails the launch
    with the fix named. Claude puts API error codes on the *assistant* event, so the last
    one seen is kept per stream (per asyncio task, like gemini's text) to classify the
    final `result`.
    """

    executable: str = "claude"
    permission_mode: str | None = "acceptEdits"
    model: str | None = None
    fallback_model: str | None = None
    extra_args: Sequence[str] = ()
    name: str = "claude"
    _errors: weakref.WeakKeyDictionary[object, str] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        model = claude_model_arg(self.model or inv.model)
        fallback = claude_model_arg(self.fallback_model or inv.fallback_model)
        if model:
            argv += ["--model", model]
        if fallback and fallback != model:
            argv += ["--fallback-model", fallback]
        if inv.tools:
            # Front-matter tools restrict what the model is offered; Write is added because
            # the step's artifact must be written whatever the agent file lists.
            argv += ["--tools", ",".join(_builtin_tools([*inv.tools, "Write"]))]
        allowed = [*inv.tools]
        artifact = inv.contract.get("BATON_ARTIFACT_PATH")
        if artifact:
            # Edit(...) path rules cover Write; `//` makes the path absolute. acceptEdits
            # already allows writes under the workspace: this grant is what dontAsk needs.
            allowed.append(f"Edit(/{Path(artifact).parent}/**)")
        if allowed:
            argv += ["--allowedTools", ",".join(allowed)]
        if self.permission_mode:
            argv += ["--permission-mode", self.permission_mode]
        argv += ["--append-system-prompt", contract_summary(inv), *self.extra_args]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), _env(inv))

    def decode(self, line: str) -> AgentEvent:
        obj = _json_object(line)
        if obj is None:
            return _plain(line)
        kind = obj.get("type")
        if kind == "system":
            if obj.get("subtype") == "api_retry":
                return AgentEvent(text=[_retry_line(obj)])
            return AgentEvent(session_id=_str(obj.get("session_id")))
        if kind == "assistant":
            message = obj.get("message")
            content = message.get("content") if isinstance(message, dict) else obj.get("content")
            error = _error_text(obj.get("error"))
            if error:
                self._errors[_stream_key()] = error
            return AgentEvent(text=_content_lines(content), error=error)
        if kind == "result":
            is_error = bool(obj.get("is_error"))
            subtype = _str(obj.get("subtype"))
            message = _str(obj.get("result"))
            if message is None and isinstance(obj.get("errors"), list):
                message = "; ".join(str(e) for e in obj["errors"]) or None
            message = strip_ansi(message) if message else None
            ok = subtype == "success" and not is_error
            error = self._errors.pop(_stream_key(), None)
            denials = obj.get("permission_denials")
            return AgentEvent(result=RunResult(
                ok=ok, subtype=subtype, message=message, session_id=_str(obj.get("session_id")),
                failure=None if ok else _claude_failure(obj, message, error),
                denials=tuple(_denial_line(d) for d in denials)
                if isinstance(denials, list) else (),
                usage=usage_of(obj, "total_cost_usd")))
        return AgentEvent()  # user (tool results), stream events, hooks: nothing to show

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


_BUILTIN = re.compile(r"^([A-Z][A-Za-z]*)(?:\(.*\))?$", re.DOTALL)


def _builtin_tools(tools: Sequence[str]) -> list[str]:
    """Built-in tool names for `--tools` (`Bash(git:*)` → `Bash`; MCP tools are not built in
    and are governed by the MCP configuration), in order, without repeats."""
    out: list[str] = []
    for tool in tools:
        m = _BUILTIN.match(tool.strip())
        if m and m.group(1) not in out:
            out.append(m.group(1))
    return out


def _retry_line(obj: Mapping[str, Any]) -> str:
    """claude's `api_retry` event as a log line (what failed, which attempt, how long)."""
    parts = [f"claude: API retry {obj.get('attempt', '?')}"]
    if obj.get("max_retries") is not None:
        parts[0] += f"/{obj['max_retries']}"
    status = obj.get("error_status") or obj.get("status")
    error = _error_text(obj.get("error"))
    if status or error:
        parts.append(" ".join(str(p) for p in (status, error) if p))
    delay = _number(obj.get("retry_delay_ms"))
    if delay is not None:
        parts.append(f"retrying in {delay / 1000:.1f} s")
    return strip_ansi(": ".join(parts))


def _content_lines(content: object) -> list[str]:
    if isinstance(content, str):
        return content.splitlines()
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and block.get("type") == "text":
                out += str(block.get("text", "")).splitlines()
    return out


# --- Codex --------------------------------------------------------------------------------

@dataclass
class CodexRunner:
    """`codex exec --json ... -`: `-` makes codex read the prompt from stdin. Codex has no
    allowed-tools flag; the sandbox mode is what limits it."""

    executable: str = "codex"
    sandbox: str | None = "workspace-write"
    model: str | None = None
    """`-m`; front-matter models are Claude models and never reach codex."""
    extra_args: Sequence[str] = ()
    name: str = "codex"

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "exec", "--json", "--skip-git-repo-check"]
        if self.model:
            argv += ["-m", self.model]
        if self.sandbox:
            argv += ["--sandbox", self.sandbox]
        argv += [*self.extra_args, "-"]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), _env(inv))

    def decode(self, line: str) -> AgentEvent:
        obj = _json_object(line)
        if obj is None:
            return _plain(line)
        kind = obj.get("type")
        if kind in ("thread.started", "thread.resumed"):
            return AgentEvent(session_id=_str(obj.get("thread_id")))
        if kind == "item.completed" and isinstance(item := obj.get("item"), dict):
            itype = item.get("type") or item.get("item_type")
            if itype in ("agent_message", "assistant_message"):
                return AgentEvent(text=str(item.get("text", "")).splitlines())
            if itype == "error":
                return AgentEvent(error=_str(item.get("message")))
            return AgentEvent()
        if kind == "turn.completed":
            return AgentEvent(result=RunResult(ok=True, subtype=kind, message=None,
                                               session_id=None, failure=None,
                                               usage=usage_of(obj)))
        if kind in ("turn.failed", "error"):
            message = _error_text(obj.get("error")) or _str(obj.get("message"))
            message = strip_ansi(message) if message else None
            return AgentEvent(error=message, result=RunResult(
                ok=False, subtype=kind, message=message, session_id=None,
                failure=classify_text(message or "") or PERMANENT))
        return AgentEvent()

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


# --- Gemini -------------------------------------------------------------------------------

_GEMINI_EXITS = {41: FATAL, 42: PERMANENT, 53: PERMANENT, 55: FATAL}
"""auth missing, bad input, turn limit, untrusted folder (gemini's exit codes)."""


@dataclass
class GeminiRunner:
    """`gemini -o stream-json --approval-mode auto_edit -p <instruction>`, the prompt on
    stdin (gemini appends the -p text to its stdin input).

    Gemini streams assistant text in `delta` chunks that split lines anywhere, so decoding
    keeps the unfinished line until its newline or the next non-text event. That state is
    kept per calling asyncio task — `run_process` reads each agent's stdout in its own task —
    so one instance can decode several agents running at once.
    `skip_trust` adds `--skip-trust`, which headless gemini needs in a folder the user has not
    trusted; it is off unless configured because it bypasses that check.
    """

    executable: str = "gemini"
    approval_mode: str | None = "auto_edit"
    instruction: str = ("Follow the instructions given above on standard input. "
                        "Work in the current directory.")
    skip_trust: bool = False
    model: str | None = None
    """`-m`; front-matter models are Claude models and never reach gemini."""
    extra_args: Sequence[str] = ()
    name: str = "gemini"
    _pending: weakref.WeakKeyDictionary[object, str] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "-o", "stream-json"]
        if self.model:
            argv += ["-m", self.model]
        if self.approval_mode:
            argv += ["--approval-mode", self.approval_mode]
        if self.skip_trust:
            argv.append("--skip-trust")
        argv += [*self.extra_args, "-p", self.instruction]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), _env(inv))

    def _take(self, chunk: str = "", final: bool = True) -> list[str]:
        key = _stream_key()
        text = self._pending.pop(key, "") + chunk
        if final:
            return text.splitlines()
        head, sep, rest = text.rpartition("\n")
        if rest:
            self._pending[key] = rest
        return head.splitlines() if sep else []

    def finish(self) -> list[str]:
        """Text still buffered when the stream ended without a final event."""
        return self._take()

    def decode(self, line: str) -> AgentEvent:
        obj = _json_object(line)
        if obj is None:
            return AgentEvent(text=self._take() + _plain(line).text)
        kind = obj.get("type")
        if kind == "message":
            if obj.get("role") != "assistant":  # the echoed prompt is not agent output
                return AgentEvent()
            content = obj.get("content")
            chunk = content if isinstance(content, str) else "\n".join(_content_lines(content))
            return AgentEvent(text=self._take(chunk, final=not obj.get("delta")))
        text = self._take()
        if kind == "init":
            return AgentEvent(text=text,
                              session_id=_str(obj.get("session_id") or obj.get("sessionId")))
        if kind == "error":
            return AgentEvent(text=text, error=_error_text(obj.get("message") or obj.get("error")))
        if kind == "result":
            status = _str(obj.get("status"))
            message = _error_text(obj.get("error"))
            message = strip_ansi(message) if message else None
            ok = status == "success" and message is None
            return AgentEvent(text=text, result=RunResult(
                ok=ok, subtype=status, message=message,
                session_id=_str(obj.get("session_id")),
                failure=None if ok else classify_text(message or "") or PERMANENT,
                usage=usage_of(obj, usage_key="stats")))
        return AgentEvent(text=text)  # tool_use, tool_result, unknown

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        if exit_code in _GEMINI_EXITS:
            return _GEMINI_EXITS[exit_code]
        return classify_common(exit_code, stderr_tail, result)


class _NoTask:
    """Weak-referenceable stand-in key for decoding outside any asyncio task."""


_NO_TASK = _NoTask()


def _stream_key() -> object:
    try:
        task = asyncio.current_task()
    except RuntimeError:  # no running event loop
        task = None
    return task if task is not None else _NO_TASK


# --- user-defined command and script agents -----------------------------------------------

_PLACEHOLDER = re.compile(r"\{(prompt_file|artifact|step|role|workspace)\}")


@dataclass
class CommandRunner:
    """A user-defined argv. `{prompt_file}`, `{artifact}`, `{step}`, `{role}` and
    `{workspace}` are replaced inside each element in one pass (a value containing a
    placeholder or shell syntax stays literal); other braces are left alone. The prompt is
    also on stdin, and every output line is text."""

    argv_template: list[str]
    name: str = "command"

    def __post_init__(self) -> None:
        if not self.argv_template:
            raise ValueError("command runner: the argv template is empty")

    def launch(self, inv: Invocation) -> LaunchSpec:
        temp: list[Path] = []
        values = {"artifact": inv.contract.get("BATON_ARTIFACT_PATH", ""),
                  "step": inv.step_id, "role": inv.role,
                  "workspace": inv.contract.get("BATON_WORKSPACE", str(inv.cwd))}
        extra: dict[str, str] = {}
        if any("{prompt_file}" in part for part in self.argv_template):
            safe_step = re.sub(r"[^A-Za-z0-9._-]", "_", inv.step_id)
            fd, name = tempfile.mkstemp(prefix=f"baton-prompt-{safe_step}-", suffix=".md")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(inv.prompt)
            temp.append(Path(name))
            values["prompt_file"] = extra["BATON_PROMPT_FILE"] = name

        def fill(match: re.Match[str]) -> str:
            return values[match.group(1)]

        argv = [_PLACEHOLDER.sub(fill, part) for part in self.argv_template]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), _env(inv, extra), tuple(temp))

    def decode(self, line: str) -> AgentEvent:
        return _plain(line)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


SCRIPTED_MODULE = "baton_lsp.workflow.scripted"


class ScriptRunner:
    """A Python agent script run with this interpreter; by default the built-in deterministic
    agent. Prompt on stdin, contract in the environment, plain text out. `-P` keeps the
    workspace (the cwd) off `sys.path`, so a workspace file named like a standard module
    cannot shadow the built-in agent's imports."""

    name = "script"

    def __init__(self, script: Path | None = None) -> None:
        self.script = script
        self.argv = ([sys.executable, str(script)] if script is not None
                     else [sys.executable, "-P", "-m", SCRIPTED_MODULE])

    def __repr__(self) -> str:
        return f"ScriptRunner({self.script!r})"

    def launch(self, inv: Invocation) -> LaunchSpec:
        return LaunchSpec(list(self.argv), inv.prompt.encode("utf-8"), _env(inv))

    def decode(self, line: str) -> AgentEvent:
        return _plain(line)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


# --- selection ----------------------------------------------------------------------------

def cli_runner(key: str, settings: WorkflowSettings | None = None) -> Runner:
    """The claude, codex or gemini runner with its `[workflow.<key>]` settings."""
    ws = settings or WorkflowSettings()
    if key == "claude":
        c = ws.claude
        return ClaudeRunner(executable=c.executable, permission_mode=c.permission_mode,
                            model=c.model, fallback_model=c.fallback_model,
                            extra_args=tuple(c.extra_args))
    if key == "codex":
        x = ws.codex
        return CodexRunner(executable=x.executable, sandbox=x.sandbox, model=x.model,
                           extra_args=tuple(x.extra_args))
    if key == "gemini":
        g = ws.gemini
        return GeminiRunner(executable=g.executable, approval_mode=g.approval_mode,
                            skip_trust=g.skip_trust, model=g.model,
                            extra_args=tuple(g.extra_args))
    raise ValueError(f"{key!r} is not an agent CLI runner")


CLI_RUNNERS = ("claude", "codex", "gemini")
RUNNER_NAMES = ("auto", "claude", "codex", "command", "gemini", "script")


def available_runner(name: str | None, *, which: Callable[[str], str | None] = shutil.which,
                     command: Sequence[str] | None = None, executable: str | None = None,
                     script: Path | None = None,
                     settings: WorkflowSettings | None = None) -> Runner:
    """The runner configured by name; a new instance on every call (runners may keep
    per-run decoding state).

    None or "auto" gives the `script` runner: the default is the deterministic offline agent,
    not whatever agent CLI happens to be on PATH, because a run must not start spending money
    or fail on a missing login just because a CLI is installed; real CLIs are opt-in through
    the configuration. An explicit CLI that `which` cannot find is only logged: the step
    then fails with AgentLaunchError, which the engine records as a fatal step failure.
    Unknown names raise ValueError naming the valid ones.
    """
    key = (name or "auto").strip().lower()
    if key in ("auto", "script"):
        return ScriptRunner(script)
    if key == "command":
        if not command:
            raise ValueError("runner 'command' needs an argv template (a list of strings)")
        return CommandRunner(list(command))
    if key in CLI_RUNNERS:
        runner = cli_runner(key, settings)
        if executable:
            runner.executable = executable  # type: ignore[attr-defined]
        exe = runner.executable  # type: ignore[attr-defined]
        if which(exe) is None:
            logger.warning("runner %r: %r is not on PATH; its steps will fail to start",
                           key, exe)
        return runner
    raise ValueError(f"unknown runner {name!r}; valid runners: {', '.join(RUNNER_NAMES)}")

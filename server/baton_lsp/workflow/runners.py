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

from .process import ProcessOutcome

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
    tools: tuple[str, ...] = ()
    agent_name: str | None = None


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
    r"invalid[ _-]?(?:x-)?api[ _-]?key|billing_error|credit balance is too low|"
    r"set an auth method",
    re.IGNORECASE)
_TRANSIENT = re.compile(
    r"rate[ _-]?limit|overloaded|too many requests|"
    r"\b(?:http|status|error|code)\b\W{0,3}(?:429|5\d\d)\b|\((?:429|5\d\d)\)|"
    r"\b(?:429|5\d\d) (?:too many|internal server|bad gateway|service unavailable|"
    r"gateway timeout)|internal server error|bad gateway|service unavailable|"
    r"ECONNRESET|ECONNREFUSED|ETIMEDOUT|EAI_AGAIN|socket hang up|connection reset|"
    r"timed out|timeout_error|stream disconnected|failed to connect",
    re.IGNORECASE)
_TRANSIENT_CODES = frozenset({124, 137, 143})  # timeout(1), SIGKILL, SIGTERM
_FATAL_CODES = frozenset({126, 127})  # found but not executable, not found


def classify_text(text: str) -> str | None:
    """Failure class named by an error message, or None when it names none."""
    if _FATAL_AUTH.search(text):
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
    if result is not None and not result.ok and result.failure is not None:
        return result.failure
    if exit_code in _TRANSIENT_CODES:
        return TRANSIENT
    if _FATAL_IO.search(stderr_tail):
        return FATAL
    message = (result.message or "") if result is not None and not result.ok else ""
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
    "authentication_failed": FATAL, "billing_error": FATAL,
    "invalid_request": PERMANENT, "max_output_tokens": PERMANENT,
}
_CLAUDE_SUBTYPES = {
    "error_max_turns": PERMANENT, "error_during_execution": PERMANENT,
    "error_max_budget_usd": PERMANENT, "error_max_structured_output_retries": PERMANENT,
}


def _claude_failure(obj: Mapping[str, Any], message: str | None) -> str:
    error = _error_text(obj.get("error"))
    if error:
        for key, cls in _CLAUDE_ERRORS.items():
            if key in error:
                return cls
    by_text = classify_text(f"{error or ''}\n{message or ''}")
    if by_text:
        return by_text
    return _CLAUDE_SUBTYPES.get(str(obj.get("subtype")), PERMANENT)


@dataclass
class ClaudeRunner:
    """`claude -p --output-format stream-json --verbose` (stream-json needs --verbose)."""

    executable: str = "claude"
    permission_mode: str | None = "acceptEdits"
    extra_args: Sequence[str] = ()
    name: str = "claude"

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if inv.model:
            argv += ["--model", inv.model]
        if inv.tools:
            argv += ["--allowedTools", ",".join(inv.tools)]
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
            return AgentEvent(session_id=_str(obj.get("session_id")))
        if kind == "assistant":
            message = obj.get("message")
            content = message.get("content") if isinstance(message, dict) else obj.get("content")
            return AgentEvent(text=_content_lines(content),
                              error=_error_text(obj.get("error")))
        if kind == "result":
            is_error = bool(obj.get("is_error"))
            subtype = _str(obj.get("subtype"))
            message = _str(obj.get("result"))
            if message is None and isinstance(obj.get("errors"), list):
                message = "; ".join(str(e) for e in obj["errors"]) or None
            ok = subtype == "success" and not is_error
            return AgentEvent(result=RunResult(
                ok=ok, subtype=subtype, message=message, session_id=_str(obj.get("session_id")),
                failure=None if ok else _claude_failure(obj, message)))
        return AgentEvent()  # user (tool results), stream events, hooks: nothing to show

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


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
    extra_args: Sequence[str] = ()
    name: str = "codex"

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "exec", "--json", "--skip-git-repo-check"]
        if inv.model:
            argv += ["-m", inv.model]
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
                                               session_id=None, failure=None))
        if kind in ("turn.failed", "error"):
            message = _error_text(obj.get("error")) or _str(obj.get("message"))
            return AgentEvent(error=message, result=RunResult(
                ok=False, subtype=kind, message=message, session_id=None,
                failure=classify_text(message or "") or PERMANENT))
        return AgentEvent()

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


# --- Gemini -------------------------------------------------------------------------------

_GEMINI_EXITS = {41: FATAL, 42: PERMANENT, 53: PERMANENT}  # auth missing, bad input, turns
_UNTRUSTED = re.compile(r"untrusted|trusted folder", re.IGNORECASE)


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
    extra_args: Sequence[str] = ()
    name: str = "gemini"
    _pending: weakref.WeakKeyDictionary[object, str] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "-o", "stream-json"]
        if inv.model:
            argv += ["-m", inv.model]
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
            ok = status == "success" and message is None
            return AgentEvent(text=text, result=RunResult(
                ok=ok, subtype=status, message=message,
                session_id=_str(obj.get("session_id")),
                failure=None if ok else classify_text(message or "") or PERMANENT))
        return AgentEvent(text=text)  # tool_use, tool_result, unknown

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        if exit_code in _GEMINI_EXITS:
            return _GEMINI_EXITS[exit_code]
        if exit_code != 0 and _UNTRUSTED.search(stderr_tail):
            return FATAL
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

_CLI_RUNNERS: dict[str, Callable[[str], Runner]] = {
    "claude": lambda exe: ClaudeRunner(executable=exe),
    "codex": lambda exe: CodexRunner(executable=exe),
    "gemini": lambda exe: GeminiRunner(executable=exe),
}
RUNNER_NAMES = ("auto", "claude", "codex", "command", "gemini", "script")


def available_runner(name: str | None, *, which: Callable[[str], str | None] = shutil.which,
                     command: Sequence[str] | None = None, executable: str | None = None,
                     script: Path | None = None) -> Runner:
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
    if key in _CLI_RUNNERS:
        exe = executable or key
        if which(exe) is None:
            logger.warning("runner %r: %r is not on PATH; its steps will fail to start",
                           key, exe)
        return _CLI_RUNNERS[key](exe)
    raise ValueError(f"unknown runner {name!r}; valid runners: {', '.join(RUNNER_NAMES)}")

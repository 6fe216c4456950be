"""Claude Code: `claude -p --output-format stream-json --verbose`."""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...model.claude_models import claude_model_arg
from ...model.config import WorkflowSettings
from ...terminal import terminal_safe
from .base import (
    FATAL,
    PERMANENT,
    TRANSIENT,
    AgentEvent,
    HopelessRetry,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    classify_text,
    content_lines,
    contract_summary,
    error_text,
    fatal_status,
    json_object,
    number_or_none,
    plain_event,
    runner_env,
    str_or_none,
    stream_key,
    usage_of,
)

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
    error = error_text(obj.get("error")) or assistant_error
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


@dataclass
class ClaudeRunner:
    """`claude -p --output-format stream-json --verbose` (stream-json needs --verbose).

    The front-matter model is a Claude model name: aliases and full ids pass as they are,
    the short `sonnet-4.5` form becomes `claude-sonnet-4-5`; anything else fails the launch
    with the fix named. Claude puts API error codes on the *assistant* event, so the last
    one seen is kept per stream (per asyncio task, like gemini's text) to classify the
    final `result`.
    """

    @classmethod
    def configured(cls, settings: WorkflowSettings, root: Path) -> ClaudeRunner:
        """The runner `[workflow.claude]` describes."""
        c = settings.claude
        return cls(executable=c.executable, permission_mode=c.permission_mode, model=c.model,
                   fallback_model=c.fallback_model, extra_args=tuple(c.extra_args))

    executable: str = "claude"
    permission_mode: str | None = "acceptEdits"
    model: str | None = None
    fallback_model: str | None = None
    extra_args: Sequence[str] = ()
    name: str = "claude"
    _errors: weakref.WeakKeyDictionary[object, str] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    _calls: weakref.WeakKeyDictionary[object, dict[str, str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    _refused: weakref.WeakKeyDictionary[object, dict[str, str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    _seen: weakref.WeakKeyDictionary[object, dict[str, dict[str, Any]]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    cached_in_input: bool = False
    """claude's `input_tokens` leave out cache reads (they are `cache_read_input_tokens`)."""

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
        for directory in inv.extra_dirs:  # acceptEdits writes outside the cwd only here
            argv += ["--add-dir", str(directory)]
        if self.permission_mode:
            argv += ["--permission-mode", self.permission_mode]
        argv += ["--append-system-prompt", contract_summary(inv), *self.extra_args]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), runner_env(inv))

    def decode(self, line: str) -> AgentEvent:
        obj = json_object(line)
        if obj is None:
            return plain_event(line)
        kind = obj.get("type")
        if kind == "system":
            if obj.get("subtype") == "api_retry":
                return AgentEvent(text=[_retry_line(obj)], hopeless=_hopeless(obj))
            return AgentEvent(session_id=str_or_none(obj.get("session_id")))
        if kind == "assistant":
            message = obj.get("message")
            content = message.get("content") if isinstance(message, dict) else obj.get("content")
            error = error_text(obj.get("error"))
            if error:
                self._errors[stream_key()] = error
            calls = self._calls.setdefault(stream_key(), {})
            for block in content if isinstance(content, list) else ():
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    calls[str(block.get("id"))] = _denial_line(
                        {"tool_name": block.get("name"), "tool_input": block.get("input")})
            usage, model = self._turn_usage(message)
            return AgentEvent(text=content_lines(content), error=error, usage=usage,
                              model=model)
        if kind == "user":
            self._note_refusals(obj)
            return AgentEvent()
        if kind == "result":
            is_error = bool(obj.get("is_error"))
            subtype = str_or_none(obj.get("subtype"))
            message = str_or_none(obj.get("result"))
            if message is None and isinstance(obj.get("errors"), list):
                message = "; ".join(str(e) for e in obj["errors"]) or None
            message = terminal_safe(message, multiline=True, strip_sequences=True) \
                if message else None
            ok = subtype == "success" and not is_error
            error = self._errors.pop(stream_key(), None)
            self._calls.pop(stream_key(), None)
            self._seen.pop(stream_key(), None)
            refused = self._refused.pop(stream_key(), {})
            denials = obj.get("permission_denials")
            for d in denials if isinstance(denials, list) else ():
                key = str(d.get("tool_use_id")) if isinstance(d, dict) else str(d)
                refused.setdefault(key, _denial_line(d))  # the line with the reason wins
            return AgentEvent(result=RunResult(
                ok=ok, subtype=subtype, message=message,
                session_id=str_or_none(obj.get("session_id")),
                failure=None if ok else _claude_failure(obj, message, error),
                denials=tuple(dict.fromkeys(refused.values())),
                usage=usage_of(obj, "total_cost_usd")))
        return AgentEvent()  # stream events, hooks: nothing to show

    def _turn_usage(self, message: object) -> tuple[dict[str, Any] | None, str | None]:
        """What one assistant event adds to the attempt's usage. claude prints one event per
        content block of a model response, each with the response's `usage` as it stood
        (the output count is the stream's first, 1, until the response ends), so a response
        is counted once by its id, as one turn, and only growth is added after that."""
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            return None, None  # the CLI's own error message: no request behind it
        mid, now = str_or_none(message.get("id")), usage_of(message)
        if mid is None or now is None:
            return None, None
        seen = self._seen.setdefault(stream_key(), {})
        before = seen.get(mid)
        seen[mid] = now
        delta = {k: v - (before or {}).get(k, 0) for k, v in now.items()
                 if v > (before or {}).get(k, 0)}
        if before is None:
            delta["turns"] = 1
        return delta or None, str_or_none(message.get("model"))

    def _note_refusals(self, obj: Mapping[str, Any]) -> None:
        """Tool results that are permission refusals: claude lists a refusal by a deny rule
        or a protected path only here (as a `tool_use_error`, with `tool_result_meta`
        saying `reject` in newer versions), not in the result's `permission_denials`."""
        message = obj.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        meta = obj.get("tool_result_meta")
        rejected = {str(m.get("id")) for m in meta if isinstance(m, dict) and isinstance(
            m.get("permission_decision"), dict) and m["permission_decision"].get("decision")
            in ("reject", "deny")} if isinstance(meta, list) else set()
        calls = self._calls.get(stream_key(), {})
        for block in content if isinstance(content, list) else ():
            if not (isinstance(block, dict) and block.get("type") == "tool_result"
                    and block.get("is_error")):
                continue
            tid = str(block.get("tool_use_id"))
            text = terminal_safe(" ".join(content_lines(block.get("content"))),
                                 multiline=True, strip_sequences=True)
            text = _TOOL_ERROR.sub("", text).strip()
            if tid in rejected or _REFUSAL.search(text):
                line = calls.get(tid, "tool")
                self._refused.setdefault(stream_key(), {})[tid] = (
                    f"{line}: {text[:300]}" if text else line)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)


_TOOL_ERROR = re.compile(r"</?tool_use_error>")
_REFUSAL = re.compile(r"denied by your permission|permission to (?:use|write|edit) .* (?:has "
                      r"been|was) denied|requested permissions? to|sensitive file",
                      re.IGNORECASE)
"""Tool-result texts that are refusals by claude's permission system, not tool failures."""
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


_HOPELESS_ERRORS = frozenset({
    "authentication_failed", "oauth_org_not_allowed", "account_on_hold",
    "verification_required", "billing_error", "invalid_request", "model_not_found",
    "cloud_credential_error"})
"""The `error` names of claude's stream (SDKAssistantMessageError in 2.1.331) no retry can
fix; the others are rate_limit, overloaded, server_error, unknown, max_output_tokens."""


def _hopeless(obj: Mapping[str, Any]) -> HopelessRetry | None:
    """An `api_retry` of a failure no retry fixes: its `error_status` decides (a 401 bad key,
    a 403, a 400; 429, 5xx and 529 are worth the wait), the `error` name when there was no
    HTTP status. claude 2.1.331 retries a 401 (and a 403 the server marks retryable) up to
    CLAUDE_CODE_MAX_RETRIES times, 10 by default: minutes of doubling delays."""
    status = obj.get("error_status")
    error = error_text(obj.get("error"))
    if isinstance(status, int) and not isinstance(status, bool):
        return HopelessRetry("claude", status, error) if fatal_status(status) else None
    if status is None and error in _HOPELESS_ERRORS:
        return HopelessRetry("claude", None, error)
    return None


def _retry_line(obj: Mapping[str, Any]) -> str:
    """claude's `api_retry` event as a log line (what failed, which attempt, how long)."""
    parts = [f"claude: API retry {obj.get('attempt', '?')}"]
    if obj.get("max_retries") is not None:
        parts[0] += f"/{obj['max_retries']}"
    status = obj.get("error_status") or obj.get("status")
    error = error_text(obj.get("error"))
    if status or error:
        parts.append(" ".join(str(p) for p in (status, error) if p))
    delay = number_or_none(obj.get("retry_delay_ms"))
    if delay is not None:
        parts.append(f"retrying in {delay / 1000:.1f} s")
    return terminal_safe(": ".join(parts), multiline=True, strip_sequences=True)



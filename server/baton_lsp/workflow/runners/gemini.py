"""Gemini CLI: `gemini -o stream-json`."""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...model.config import WorkflowSettings
from ...terminal import terminal_safe
from .base import (
    FATAL,
    PERMANENT,
    TRANSIENT,
    AgentEvent,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    classify_text,
    content_lines,
    error_text,
    json_object,
    plain_event,
    runner_env,
    str_or_none,
    stream_key,
    telemetry_usage,
    usage_of,
)

_GEMINI_EXITS = {41: FATAL, 42: PERMANENT, 53: PERMANENT, 55: FATAL}
"""auth missing, bad input, turn limit, untrusted folder (gemini's exit codes)."""

_HTTP_EXITS = {173: TRANSIENT, 244: TRANSIENT, 246: TRANSIENT, 247: TRANSIENT,
               248: TRANSIENT}
"""gemini exits with the HTTP status mod 256 when the API keeps failing after its own
retries: 429, 500, 502, 503, 504. Only a fallback: stderr and the result's message name
the status too, and decide first."""

_REFUSALS = frozenset({"tool_not_registered", "policy_violation", "permission_denied",
                       "path_not_in_workspace", "invalid_tool_params",
                       "sandbox_expansion_required"})
"""`tool_result` error types that mean gemini refused the call (not that the tool failed):
not offered in this approval mode, denied by policy, a path outside the workspace."""
_WRITE_TOOLS = frozenset({"write_file", "replace"})
_API_ERROR = "API Error: "


def _tool_target(params: object) -> str | None:
    if not isinstance(params, Mapping):
        return None
    return next((str(params[k]) for k in ("file_path", "absolute_path", "path", "dir_path",
                                          "command") if isinstance(params.get(k), str)), None)


def _one_line(text: str, limit: int = 300) -> str:
    text = terminal_safe(text, multiline=True, strip_sequences=True)
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _refusal_line(call: str, error: Mapping[str, Any]) -> str:
    """`write_file /abs/path: <gemini's reason>` for one refused tool call."""
    kind = str_or_none(error.get("type"))
    reason = _one_line(str_or_none(error.get("message")) or kind or "refused")
    line = f"{call}: {reason}"
    if kind == "tool_not_registered" and call.split(" ", 1)[0] in _WRITE_TOOLS:
        line += (" (gemini offers no file-writing tool in this approval mode; fix: "
                 "[workflow.gemini] approval-mode = \"auto_edit\", Baton's default)")
    return line


def _api_error(body: str) -> str | None:
    """`400 INVALID_ARGUMENT: API key not valid… (API_KEY_INVALID)` from the JSON error body
    gemini quotes verbatim in some `[API Error: …]` messages (None: not such a body)."""
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    err = obj.get("error") if isinstance(obj, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("message"), str):
        return None
    head = " ".join(str(err[k]) for k in ("code", "status") if err.get(k) not in (None, ""))
    out = f"{head}: {err['message']}" if head else err["message"]
    reasons = [d["reason"] for d in err.get("details") or []
               if isinstance(d, dict) and isinstance(d.get("reason"), str)]
    return out + (f" ({', '.join(reasons)})" if reasons else "")


def _result_message(error: object) -> str | None:
    """A failed `result`'s error as one readable line: without the uninformative `unknown`
    type gemini gives every API error, colour or line breaks, with an embedded JSON error
    body reduced to its code, status, message and reason."""
    if isinstance(error, Mapping):
        kind, text = str_or_none(error.get("type")), str_or_none(error.get("message"))
        if text is None:
            message = error_text(error)
        else:
            message = f"{kind}: {text}" if kind and kind != "unknown" else text
    else:
        message = error_text(error)
    if message is None:
        return None
    message = _one_line(message, limit=2000)
    start = message.find(_API_ERROR + "{")
    if start >= 0:
        begin = start + len(_API_ERROR)
        try:
            _, end = json.JSONDecoder().raw_decode(message, begin)
        except ValueError:
            return message
        brief = _api_error(message[begin:end])
        if brief is not None:
            message = message[:begin] + brief + message[end:]
    return message


def _main_model(stats: object) -> str | None:
    """The model that used the most tokens in a `result`'s stats (its `models` map is keyed
    by model id), to price the run's tokens with."""
    models = stats.get("models") if isinstance(stats, Mapping) else None
    if not isinstance(models, Mapping) or not models:
        return None

    def weight(name: str) -> float:
        row = models[name]
        total = row.get("total_tokens") if isinstance(row, Mapping) else None
        return float(total) if isinstance(total, (int, float)) else 0.0

    return str(max(models, key=weight))


@dataclass
class GeminiRunner:
    """`gemini -o stream-json --approval-mode auto_edit -p <instruction>`, the prompt on
    stdin (gemini appends the -p text to its stdin input).

    Gemini streams assistant text in `delta` chunks that split lines anywhere, so decoding
    keeps the unfinished line until its newline or the next non-text event. That state is
    kept per calling asyncio task — `run_process` reads each agent's stdout in its own task —
    so one instance can decode several agents running at once. So are the calls announced
    by `tool_use` until their `tool_result`: a refused call (write_file not offered in the
    approval mode, a path outside the workspace, a policy denial) becomes one line of the
    final result's `denials`, which the engine quotes when the artifact is missing.
    `skip_trust` adds `--skip-trust`, which headless gemini needs in a folder the user has not
    trusted; it is off unless configured because it bypasses that check.
    """

    @classmethod
    def configured(cls, settings: WorkflowSettings, root: Path) -> GeminiRunner:
        """The runner `[workflow.gemini]` describes."""
        g = settings.gemini
        return cls(executable=g.executable, approval_mode=g.approval_mode,
                   skip_trust=g.skip_trust, model=g.model, extra_args=tuple(g.extra_args),
                   usage_telemetry=g.usage_telemetry)

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
    _calls: weakref.WeakKeyDictionary[object, dict[str, str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    _refused: weakref.WeakKeyDictionary[object, list[str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    cached_in_input: bool = True
    """gemini's `input_tokens` (promptTokenCount) include its `cached` tokens."""
    usage_telemetry: bool = False
    """Export gemini's OpenTelemetry logs to `Invocation.usage_endpoint` (see `otlp`)."""

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "-o", "stream-json"]
        if self.model:
            argv += ["-m", self.model]
        if self.approval_mode:
            argv += ["--approval-mode", self.approval_mode]
        if self.skip_trust:
            argv.append("--skip-trust")
        for directory in inv.extra_dirs:  # its file tools refuse paths outside the workspace
            argv += ["--include-directories", str(directory)]
        argv += [*self.extra_args, "-p", self.instruction]
        extra_env: dict[str, str] = {}
        if self.usage_telemetry and inv.usage_endpoint:
            # gemini 0.61 takes its telemetry settings from these variables (over its
            # settings.json); its OTLP/HTTP exporter posts JSON to <endpoint>/v1/logs
            extra_env.update(GEMINI_TELEMETRY_ENABLED="true", GEMINI_TELEMETRY_TARGET="local",
                             GEMINI_TELEMETRY_OTLP_PROTOCOL="http",
                             GEMINI_TELEMETRY_OTLP_ENDPOINT=inv.usage_endpoint.removesuffix(
                                 "/v1/logs"),
                             GEMINI_TELEMETRY_LOG_PROMPTS="false")
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), runner_env(inv, extra_env))

    def _take(self, chunk: str = "", final: bool = True) -> list[str]:
        key = stream_key()
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
        obj = json_object(line)
        if obj is None:
            return AgentEvent(text=self._take() + plain_event(line).text)
        kind = obj.get("type")
        if kind == "message":
            if obj.get("role") != "assistant":  # the echoed prompt is not agent output
                return AgentEvent()
            content = obj.get("content")
            chunk = content if isinstance(content, str) else "\n".join(content_lines(content))
            return AgentEvent(text=self._take(chunk, final=not obj.get("delta")))
        text = self._take()
        if kind == "init":
            return AgentEvent(text=text,
                              session_id=str_or_none(obj.get("session_id") or obj.get("sessionId")))
        if kind == "error":
            return AgentEvent(text=text, error=error_text(obj.get("message") or obj.get("error")))
        if kind == "tool_use":
            # gemini 0.61's stream-json carries tokens only in the final `result` stats, so a
            # looping gemini's spending shows, as it happens, only as its tool calls: each
            # one is answered by a further model request.
            self._tool_use(obj)
            return AgentEvent(text=text, usage={"turns": 1})
        if kind == "tool_result":
            self._tool_result(obj)
        elif kind == "result":
            status = str_or_none(obj.get("status"))
            message = _result_message(obj.get("error"))
            ok = status == "success" and message is None
            key = stream_key()
            self._calls.pop(key, None)
            return AgentEvent(text=text, model=_main_model(obj.get("stats")), result=RunResult(
                ok=ok, subtype=status, message=message,
                session_id=str_or_none(obj.get("session_id")),
                failure=None if ok else classify_text(message or "") or PERMANENT,
                denials=tuple(self._refused.pop(key, ())),
                usage=usage_of(obj, usage_key="stats")))
        return AgentEvent(text=text)  # tool_result, unknown

    def usage_record(self, record: Mapping[str, str]
                     ) -> tuple[dict[str, Any], str | None] | None:
        """One model request's tokens and model from gemini's telemetry (its
        `gemini_cli.api_response` record; side calls such as the model router count too:
        they are billed)."""
        if record.get("event.name") != "gemini_cli.api_response":
            return None
        return telemetry_usage(record, (("input_tokens", "input_token_count"),
                                       ("output_tokens", "output_token_count"),
                                       ("cache_read_tokens", "cached_content_token_count"),
                                       ("total_tokens", "total_token_count")))

    def _tool_use(self, obj: Mapping[str, Any]) -> None:
        tool_id, name = str_or_none(obj.get("tool_id")), str_or_none(obj.get("tool_name"))
        if tool_id and name:
            target = _tool_target(obj.get("parameters"))
            call = f"{name} {_one_line(target, 200)}" if target else name
            self._calls.setdefault(stream_key(), {})[tool_id] = call

    def _tool_result(self, obj: Mapping[str, Any]) -> None:
        key = stream_key()
        call = self._calls.get(key, {}).pop(str(obj.get("tool_id")), None)
        error = obj.get("error")
        if obj.get("status") != "error" or not isinstance(error, Mapping):
            return
        if str(error.get("type")) in _REFUSALS:
            self._refused.setdefault(key, []).append(
                _refusal_line(call or str(obj.get("tool_id") or "tool"), error))

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        if exit_code in _GEMINI_EXITS:
            return _GEMINI_EXITS[exit_code]
        failure = classify_common(exit_code, stderr_tail, result)
        if failure == PERMANENT and exit_code in _HTTP_EXITS:
            return _HTTP_EXITS[exit_code]
        return failure



"""Gemini CLI: `gemini -o stream-json`."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..process import strip_ansi
from .base import (
    FATAL,
    PERMANENT,
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
    usage_of,
)

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
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), runner_env(inv))

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
        if kind == "result":
            status = str_or_none(obj.get("status"))
            message = error_text(obj.get("error"))
            message = strip_ansi(message) if message else None
            ok = status == "success" and message is None
            return AgentEvent(text=text, result=RunResult(
                ok=ok, subtype=status, message=message,
                session_id=str_or_none(obj.get("session_id")),
                failure=None if ok else classify_text(message or "") or PERMANENT,
                usage=usage_of(obj, usage_key="stats")))
        return AgentEvent(text=text)  # tool_use, tool_result, unknown

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        if exit_code in _GEMINI_EXITS:
            return _GEMINI_EXITS[exit_code]
        return classify_common(exit_code, stderr_tail, result)



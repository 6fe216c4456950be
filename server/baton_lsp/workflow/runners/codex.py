"""OpenAI Codex: `codex exec --json -`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..process import strip_ansi
from .base import (
    PERMANENT,
    AgentEvent,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    classify_text,
    error_text,
    json_object,
    plain_event,
    runner_env,
    str_or_none,
    usage_of,
)


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
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), runner_env(inv))

    def decode(self, line: str) -> AgentEvent:
        obj = json_object(line)
        if obj is None:
            return plain_event(line)
        kind = obj.get("type")
        if kind in ("thread.started", "thread.resumed"):
            return AgentEvent(session_id=str_or_none(obj.get("thread_id")))
        if kind == "item.completed" and isinstance(item := obj.get("item"), dict):
            itype = item.get("type") or item.get("item_type")
            if itype in ("agent_message", "assistant_message"):
                return AgentEvent(text=str(item.get("text", "")).splitlines())
            if itype == "error":
                return AgentEvent(error=str_or_none(item.get("message")))
            return AgentEvent()
        if kind == "turn.completed":
            return AgentEvent(result=RunResult(ok=True, subtype=kind, message=None,
                                               session_id=None, failure=None,
                                               usage=usage_of(obj)))
        if kind in ("turn.failed", "error"):
            message = error_text(obj.get("error")) or str_or_none(obj.get("message"))
            message = strip_ansi(message) if message else None
            return AgentEvent(error=message, result=RunResult(
                ok=False, subtype=kind, message=message, session_id=None,
                failure=classify_text(message or "") or PERMANENT))
        return AgentEvent()

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)



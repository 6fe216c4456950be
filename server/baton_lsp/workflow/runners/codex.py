"""OpenAI Codex: `codex exec --json -`."""

from __future__ import annotations

import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...model.config import WorkflowSettings
from ...terminal import terminal_safe
from .base import (
    PERMANENT,
    AgentEvent,
    HopelessRetry,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    classify_text,
    error_text,
    fatal_status,
    json_object,
    plain_event,
    runner_env,
    str_or_none,
    stream_key,
    telemetry_usage,
    usage_of,
)

_REFUSED_OUTPUT = re.compile(r"permission denied|read-only file system|operation not permitted",
                             re.IGNORECASE)
"""What a shell prints when the OS (not the command's own logic) refused an operation."""
_PATCH_REJECTED = re.compile(r"codex_core::tools::router: error=patch rejected: (?P<why>.+)$",
                             re.MULTILINE)
"""codex's log line (stderr, default level) for an apply_patch its sandbox or approval policy
refused; the refusal never appears in the --json stream."""
TELEMETRY_DELAY_MS = 200
"""How often codex exports its telemetry to Baton (OpenTelemetry's batch delay, 1 s by
default)."""
_NOT_TOOLS = frozenset({"agent_message", "assistant_message", "reasoning", "error",
                        "todo_list"})
"""Item types of `codex exec --json` that are not tool calls (no further model request)."""
_BY_POLICY = "; rejected by user approval settings"
_READ_ONLY_FIX = (" (codex runs in its read-only sandbox; fix: [workflow.codex] sandbox = "
                  "\"workspace-write\", Baton's default)")


_RECONNECTING = re.compile(r"^Reconnecting\.\.\. \d+/\d+ \((?P<why>.*)\)$", re.DOTALL)
"""codex's `error` event for each turn-level retry (`stream_max_retries`, 5 by default)."""
_STATUS = re.compile(r"\bunexpected status (?P<status>\d{3})\b(?: [^:]*)?(?::\s*(?P<msg>.*))?",
                     re.DOTALL)


def _hopeless(message: str | None) -> HopelessRetry | None:
    """A `Reconnecting... i/N (unexpected status 401 Unauthorized: …)` event: codex 0.169
    retries a 401 and a 403 at turn level although no retry fixes them (a 400 or 404 it
    does not retry)."""
    m = _RECONNECTING.match(message or "")
    found = _STATUS.search(m["why"]) if m else None
    if found is None or not fatal_status(int(found["status"])):
        return None
    why = (found["msg"] or "").split(", url: ", 1)[0].strip()
    return HopelessRetry("codex", int(found["status"]), _one_line(why, 200) or None)


def _one_line(text: str, limit: int = 300) -> str:
    text = terminal_safe(text, multiline=True, strip_sequences=True)
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _refusal(item: Mapping[str, Any]) -> str | None:
    """One readable line for a completed item that says codex could not write: a shell
    command that failed on a refused operation, or a file change that failed."""
    itype = item.get("type")
    if itype == "command_execution":
        code = item.get("exit_code")
        if item.get("status") not in ("failed", "declined") and code in (None, 0):
            return None
        output = str(item.get("aggregated_output") or "")
        refused = [ln for ln in output.splitlines() if _REFUSED_OUTPUT.search(ln)]
        return f"shell command: {_one_line(refused[-1])}" if refused else None
    if itype == "file_change" and item.get("status") in ("failed", "declined"):
        changes = item.get("changes")
        paths = [f"{c.get('kind') or 'change'} {c.get('path')}" for c in changes
                 if isinstance(c, Mapping) and isinstance(c.get("path"), str)] \
            if isinstance(changes, list) else []
        target = ", ".join(paths) if paths else "a file change"
        return _one_line(f"apply_patch {target}: {item['status']}")
    return None


@dataclass
class CodexRunner:
    """`codex exec --json ... -`: `-` makes codex read the prompt from stdin. Codex has no
    allowed-tools flag; the sandbox mode is what limits it.

    Writes codex could not make become lines of the final result's `denials`, which the
    engine quotes when the artifact is missing: a `command_execution` that failed on a
    refused operation ("Permission denied", "Read-only file system") and a failed
    `file_change`, kept per stream (per asyncio task) until `turn.completed`. Codex 0.169
    leaves the commands its own sandbox refused out of the stream altogether (they reach
    only the model), and logs a sandbox-rejected apply_patch on stderr only: `stderr_denials`
    reads those from the stderr tail.
    """

    @classmethod
    def configured(cls, settings: WorkflowSettings, root: Path) -> CodexRunner:
        """The runner `[workflow.codex]` describes."""
        x = settings.codex
        return cls(executable=x.executable, sandbox=x.sandbox, model=x.model,
                   extra_args=tuple(x.extra_args), usage_telemetry=x.usage_telemetry)

    executable: str = "codex"
    sandbox: str | None = "workspace-write"
    model: str | None = None
    """`-m`; front-matter models are Claude models and never reach codex."""
    extra_args: Sequence[str] = ()
    name: str = "codex"
    _refused: weakref.WeakKeyDictionary[object, list[str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    _items: weakref.WeakKeyDictionary[object, set[str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)
    cached_in_input: bool = True
    """codex's `input_tokens` include its `cached_input_tokens`, as the OpenAI API counts."""
    usage_telemetry: bool = False
    """Export codex's OpenTelemetry logs to `Invocation.usage_endpoint` (see `otlp`)."""

    def launch(self, inv: Invocation) -> LaunchSpec:
        argv = [self.executable, "exec", "--json", "--skip-git-repo-check"]
        if self.model:
            argv += ["-m", self.model]
        if self.sandbox:
            argv += ["--sandbox", self.sandbox]
        for directory in inv.extra_dirs:  # writable beside the workspace-write cwd
            argv += ["--add-dir", str(directory)]
        extra_env: dict[str, str] = {}
        if self.usage_telemetry and inv.usage_endpoint:
            # A TOML value for -c: the endpoint is Baton's own 127.0.0.1 URL, no quoting issue.
            argv += ["-c", f'otel.exporter={{otlp-http={{endpoint="{inv.usage_endpoint}",'
                     f'protocol="json"}}}}', "-c", "otel.log_user_prompt=false"]
            # the log batch goes out every 200 ms instead of every second: a looping codex
            # is seen five times sooner
            extra_env["OTEL_BLRP_SCHEDULE_DELAY"] = str(TELEMETRY_DELAY_MS)
        argv += [*self.extra_args, "-"]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), runner_env(inv, extra_env))

    def decode(self, line: str) -> AgentEvent:
        obj = json_object(line)
        if obj is None:
            return plain_event(line)
        kind = obj.get("type")
        if kind in ("thread.started", "thread.resumed"):
            return AgentEvent(session_id=str_or_none(obj.get("thread_id")))
        if kind == "item.started" and isinstance(item := obj.get("item"), dict):
            return AgentEvent(usage=self._tool_turn(item))
        if kind == "item.completed" and isinstance(item := obj.get("item"), dict):
            itype = item.get("type") or item.get("item_type")
            if itype in ("agent_message", "assistant_message"):
                return AgentEvent(text=str(item.get("text", "")).splitlines())
            if itype == "error":
                return AgentEvent(error=str_or_none(item.get("message")))
            refusal = _refusal(item)
            if refusal is not None:
                self._refused.setdefault(stream_key(), []).append(refusal)
            # a tool call that completes without an `item.started` counts here
            return AgentEvent(usage=self._tool_turn(item))
        if kind == "turn.completed":
            self._items.pop(stream_key(), None)
            refused = tuple(self._refused.pop(stream_key(), ()))
            return AgentEvent(result=RunResult(ok=True, subtype=kind, message=None,
                                               session_id=None, failure=None, denials=refused,
                                               usage=usage_of(obj)))
        if kind in ("turn.failed", "error"):
            if kind == "turn.failed":
                self._refused.pop(stream_key(), None)
            message = error_text(obj.get("error")) or str_or_none(obj.get("message"))
            message = terminal_safe(message, multiline=True, strip_sequences=True) \
                if message else None
            return AgentEvent(error=message, hopeless=_hopeless(message), result=RunResult(
                ok=False, subtype=kind, message=message, session_id=None,
                failure=classify_text(message or "") or PERMANENT))
        return AgentEvent()

    def usage_record(self, record: Mapping[str, str]
                     ) -> tuple[dict[str, Any], str | None] | None:
        """One model response's tokens and model from codex's telemetry: the
        `codex.sse_event` record of kind `response.completed` that has token counts (codex
        logs each response twice, once without them)."""
        if (record.get("event.name") != "codex.sse_event"
                or record.get("event.kind") != "response.completed"):
            return None
        return telemetry_usage(record, (("input_tokens", "input_token_count"),
                                       ("output_tokens", "output_token_count"),
                                       ("cache_read_tokens", "cached_token_count"),
                                       ("cache_write_tokens", "cache_write_token_count")))

    def _tool_turn(self, item: Mapping[str, Any]) -> dict[str, Any] | None:
        """`{"turns": 1}` the first time a tool call item shows up. codex 0.169's `--json`
        carries token counts only in the final `turn.completed` (no per-request usage, no
        token_count event), so what a looping codex spends is seen, as it happens, only as
        its tool calls: each one is answered by a further model request."""
        itype = item.get("type") or item.get("item_type")
        iid = str_or_none(item.get("id"))
        if itype in _NOT_TOOLS or iid is None:
            return None
        seen = self._items.setdefault(stream_key(), set())
        if iid in seen:
            return None
        seen.add(iid)
        return {"turns": 1}

    def stderr_denials(self, stderr_tail: str) -> tuple[str, ...]:
        """The apply_patch calls codex logged as rejected (`ERROR codex_core::tools::router:
        error=patch rejected: writing is blocked by read-only sandbox; rejected by user
        approval settings`), one line each, with the fix when its read-only sandbox was
        the cause."""
        out: list[str] = []
        text = terminal_safe(stderr_tail, multiline=True, strip_sequences=True)
        for m in _PATCH_REJECTED.finditer(text):
            why = m["why"].strip().removesuffix(_BY_POLICY)
            line = f"apply_patch: {_one_line(why)}"
            if "read-only sandbox" in why:
                line += _READ_ONLY_FIX
            if line not in out:
                out.append(line)
        return tuple(out)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)

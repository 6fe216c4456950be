"""Return signals in an agent's output (`REPORT_CREATED: /abs/path`, `TASK_ERROR: type -
msg`, `ERROR_CONTEXT: {json}`, `PROGRESS: …`), read line by line as the agent streams.

`ERROR_CONTEXT` may span lines (agents print pretty JSON): lines are gathered until the
braces balance, bounded so a runaway agent cannot grow it forever. The same holds for any
signal whose value opens a JSON object or array (`CLASSIFICATION_COMPLETE: {json}`) and for
the coordinators' brief-summary fields (`work_remaining: …`, `invocations: [ … ]`): lowercase
`key: value` lines with a known key, the metadata a coordinator passes up instead of its
whole summary."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from ..parse.signals import SIGNAL_LINE_RE

PATH_SIGNALS = ("REPORT_CREATED", "PLAN_CREATED", "PLAN_REVISED", "SUMMARY_CREATED",
                "DEBUG_REPORT_CREATED", "IMPLEMENTATION_COMPLETE", "DOCUMENTATION_COMPLETE")
DOCUMENTATION_UPDATED = "DOCUMENTATION_UPDATED"
"""Seed 000's documentation agent's return: `DOCUMENTATION_UPDATED: [list of updated files]`."""
LIST_SIGNALS = frozenset({DOCUMENTATION_UPDATED})
"""Signals whose value is a list of files: printed with nothing after the colon, the bullet
lines that follow (`- README.md`) are the list."""
_ITEM = re.compile(r"^\s*[-*]\s+(\S.*?)\s*$")
_MAX_CONTEXT_LINES = 200
_FIELD = re.compile(r"^\s*(?:[-*]\s*)?([a-z][a-z0-9_]*):\s?(.*)$")
BRIEF_KEYS = frozenset((
    "coordinator_type", "summary_path", "summary_brief", "phases_completed", "phase_count",
    "git_commits", "plan_file", "work_remaining", "context_exhausted", "requires_continuation",
    "context_usage_percent", "invocations", "topics_planned", "invocation_plan_path",
    "reports", "total_findings", "total_recommendations"))


@dataclass
class Signal:
    name: str
    value: str


@dataclass
class TaskError:
    error_type: str
    message: str
    context: dict[str, Any] = field(default_factory=dict)
    reported: bool = True
    """False while only an `ERROR_CONTEXT:` stands for it: the `TASK_ERROR:` that follows
    (the seeds' order) names it instead of starting another error."""


@dataclass
class SignalReader:
    """Feed lines; collects signals in order."""

    signals: list[Signal] = field(default_factory=list)
    errors: list[TaskError] = field(default_factory=list)
    progress: list[str] = field(default_factory=list)
    fields: dict[str, str] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    _context: list[str] | None = None
    _depth: int = 0
    _open: tuple[Signal | None, str, list[str], int] | None = None
    _items: tuple[Signal, list[str]] | None = None

    def feed(self, line: str) -> Signal | None:
        if self._items is not None:
            if self._item(line):
                return None
            self._items = None
        if self._context is not None:
            self._context.append(line)
            self.lines.append(line)
            self._depth += _balance(line)
            if self._depth <= 0 or len(self._context) >= _MAX_CONTEXT_LINES:
                self._close_context()
            return None
        if self._open is not None:
            if not SIGNAL_LINE_RE.match(line):
                self._continue(line)
                return None
            self._finish_open()  # a new signal: the value was not JSON after all
        m = SIGNAL_LINE_RE.match(line)
        if not m:
            f = _FIELD.match(line)
            if f and f.group(1) in BRIEF_KEYS:
                self.lines.append(line)
                key, value = f.group(1), f.group(2).strip()
                self.fields[key] = value
                if _balance(value) > 0:
                    self._open = (None, key, [value], _balance(value))
            return None
        name, value = m.group(1), m.group(2).strip()
        sig = Signal(name, value)
        self.signals.append(sig)
        self.lines.append(line)
        if name in LIST_SIGNALS and not value:
            self._items = (sig, [])
            return sig
        if name not in ("ERROR_CONTEXT", "PROGRESS", "TASK_ERROR") and \
                value.startswith(("{", "[")) and _balance(value) > 0:
            self._open = (sig, name, [value], _balance(value))
            return sig
        if name == "TASK_ERROR":
            etype, _, msg = value.partition(" - ")
            etype, msg = etype.strip() or "agent_error", msg.strip() or value
            pending = self.errors[-1] if self.errors else None
            if pending is not None and not pending.reported:  # its context came first
                pending.error_type, pending.message, pending.reported = etype, msg, True
            else:
                self.errors.append(TaskError(etype, msg))
        elif name == "ERROR_CONTEXT":
            self._context = [value]
            self._depth = _balance(value)
            if self._depth <= 0:
                self._close_context()
        elif name == "PROGRESS":
            self.progress.append(value)
        return sig

    def _item(self, line: str) -> bool:
        """Whether `line` continues a list signal's bullet list (blank lines only before
        its first item); the value becomes the items as a JSON array."""
        assert self._items is not None
        sig, items = self._items
        m = _ITEM.match(line)
        if m is None:
            return not items and not line.strip()
        items.append(m.group(1).strip("`"))
        sig.value = json.dumps(items, ensure_ascii=False)
        self.lines.append(line)
        return True

    def _continue(self, line: str) -> None:
        """One more line of a multi-line JSON signal value or field."""
        assert self._open is not None
        sig, key, parts, depth = self._open
        parts.append(line)
        self.lines.append(line)
        depth += _balance(line)
        self._open = (sig, key, parts, depth)
        if depth <= 0 or len(parts) >= _MAX_CONTEXT_LINES:
            self._finish_open()

    def _finish_open(self) -> None:
        assert self._open is not None
        sig, key, parts, _ = self._open
        self._open = None
        if sig is not None:
            sig.value = "\n".join(parts)
        else:
            self.fields[key] = "\n".join(parts)

    def finish(self) -> None:
        """The output ended: a context or JSON value still open is taken as it stands."""
        if self._context is not None:
            self._close_context()
        if self._open is not None:
            self._finish_open()

    def passed_text(self) -> str:
        """What the agent passed up: its signal and brief-summary lines, nothing else."""
        return "\n".join(self.lines)

    def _close_context(self) -> None:
        text = "\n".join(self._context or [])
        self._context, self._depth = None, 0
        try:
            data = json.loads(text)
        except ValueError:
            try:  # seed 002's own trap handler leaves a comma before the closing brace
                data = json.loads(_TRAILING_COMMA.sub(r"\1", text))
            except ValueError:
                data = {"raw": text[:2000]}
        if not isinstance(data, dict):
            data = {"value": data}
        last = self.errors[-1] if self.errors else None
        if last is not None and last.reported and not last.context:
            last.context.update(data)  # TASK_ERROR first, then its context
        else:  # the seeds' order: the context first, its TASK_ERROR next (if ever)
            self.errors.append(TaskError("agent_error", "agent reported an error context", data,
                                         reported=False))

    def last_error(self) -> TaskError | None:
        """The error the step fails with: the last `TASK_ERROR:` (with its context, in either
        order), else a context no `TASK_ERROR:` named."""
        named = [e for e in self.errors if e.reported]
        return named[-1] if named else (self.errors[-1] if self.errors else None)

    def first(self, *names: str) -> Signal | None:
        for sig in self.signals:
            if sig.name in names:
                return sig
        return None

    def reported_paths(self) -> list[str]:
        """Paths the agent claims to have written (values of the path-carrying signals)."""
        out = []
        for sig in self.signals:
            if (sig.name in PATH_SIGNALS or sig.name.endswith("_CREATED")) and \
                    sig.value.startswith(("/", "~", ".")):
                out.append(sig.value.split()[0])
        return out


def error_context_in(text: str) -> dict[str, Any]:
    """The `ERROR_CONTEXT:` in `text` (an agent's stderr: seed 002's trap handler prints the
    context there and its `TASK_ERROR:` on stdout), or {}."""
    if "ERROR_CONTEXT:" not in text:
        return {}
    reader = SignalReader()
    for line in text.splitlines():
        reader.feed(line)
    reader.finish()
    found = [e.context for e in reader.errors if e.context]
    return found[-1] if found else {}


def listed_paths(value: str) -> list[str]:
    """The files a list-valued signal names: seed 000's `DOCUMENTATION_UPDATED: [list of
    updated files]` as a JSON array, a bracketed list (`[README.md, docs/api.md]`, one line
    or several) or plain (`README.md, docs/api.md`, or one path). Quotes and backticks around
    an item are dropped; a path with spaces needs the JSON form."""
    text = value.strip()
    if text.startswith("["):
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        if isinstance(data, list):
            return [str(x).strip() for x in data if str(x).strip()]
        text = text[1:-1] if text.endswith("]") else text[1:]
    items = (item.strip().strip("\"'`") for item in _LIST_SEP.split(text))
    return [item for item in items if item]


_LIST_SEP = re.compile(r"[,\s]+")
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")


def _balance(text: str) -> int:
    return text.count("{") + text.count("[") - text.count("}") - text.count("]")

"""Workflow data files: state files, the errors log and report/summary metadata."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from .base import Model, Range
from .common import Link


class StateEntry(Model):
    key: str
    value: str
    exported: bool
    range: Range
    value_range: Range


class StateProblem(Model):
    message: str
    range: Range


class StateFile(Model):
    """`export KEY="value"` lines; a key may repeat and the last assignment wins."""

    path: str
    entries: list[StateEntry] = []
    problems: list[StateProblem] = []
    line_count: int = 0

    @property
    def values(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for entry in self.entries:
            out[entry.key] = entry.value
        return out


ERROR_TYPES = (
    "state_error", "validation_error", "agent_error", "parse_error", "file_error",
    "timeout_error", "execution_error", "dependency_error", "transient", "permanent", "fatal",
)
"""The `error_type` values of `errors.jsonl` (formats.md §5.2: the error-handling library's
constants, `dependency_error` from its docs, the classifier's three; `llm_*` too). The
engine writes only these, so the bash system's error tooling reads Baton's records."""


class ErrorRecord(Model):
    """One line of `errors.jsonl` (formats.md §5.2): the one definition the engine writes,
    the BTN4xx rules check and the language server follows. Older records lack `status`
    and the two fields after it."""

    model_config: ClassVar[dict[str, Any]] = {"frozen": True}

    timestamp: str | None = None
    environment: str | None = None
    command: str | None = None
    workflow_id: str | None = None
    user_args: Any = None
    error_type: str | None = None
    error_message: str | None = None
    source: str | None = None
    stack: list[Any] = []
    context: dict[str, Any] = {}
    status: str | None = None
    status_updated_at: str | None = None
    repair_plan_path: str | None = None

    @classmethod
    def model_validate(cls, obj: Any) -> ErrorRecord:
        return super().model_validate(cls._lenient(obj))

    @classmethod
    def _lenient(cls, data: Any) -> Any:
        """Hand-edited and foreign lines vary: unknown keys are dropped, a scalar `stack`
        becomes a list, a scalar `context` `{"value": ...}`, and non-string values of the
        string fields their JSON text (`str()` for a Python object such as a path), so any
        JSON object reads as a record."""
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key not in cls.model_fields:
                continue
            if key == "stack" and not isinstance(value, list):
                value = [value]
            elif key == "context" and not isinstance(value, dict):
                value = {"value": value}
            elif key not in ("stack", "context", "user_args") and value is not None \
                    and not isinstance(value, str):
                value = json.dumps(value, default=str) \
                    if isinstance(value, (dict, list, int, float)) else str(value)
            out[key] = value
        return out

    @property
    def shape(self) -> str:
        """`v2` when the record carries the later status fields, `v1` otherwise."""
        return "v2" if self.status is not None else "v1"

    def json_line(self) -> str:
        """The record as the bash library writes it: one compact JSON object, every field
        in order (unset ones as `null`), no trailing newline."""
        return json.dumps(self.model_dump(), ensure_ascii=False, separators=(",", ":"),
                          default=str)


class LoggedError(Model):
    """An `ErrorRecord` where it sits in the log: its 0-based line and that line's span."""

    model_config: ClassVar[dict[str, Any]] = {"frozen": True}

    line: int
    range: Range
    record: ErrorRecord


class BadLine(Model):
    line: int
    message: str
    range: Range


class ErrorsLog(Model):
    path: str
    records: list[LoggedError] = []
    bad_lines: list[BadLine] = []
    line_count: int = 0


class ReportMeta(Model):
    """The `## Metadata` list of a research report or implementation summary."""

    path: str
    title: str | None = None
    title_range: Range | None = None
    metadata: dict[str, str] = {}
    links: list[Link] = []
    line_count: int = 0


class Unreadable(Model):
    """A file that could not be read as text; the reason is shown to the user as is."""

    path: str
    reason: str


class CheckpointDoc(Model):
    """A checkpoint JSON file of any schema version (or an iteration / supervisor
    checkpoint): the decoded object, or where the JSON broke."""

    path: str
    data: dict[str, Any] | None = None
    error: str | None = None
    error_range: Range | None = None
    line_count: int = 0

"""Workflow data files: state files, the errors log and report/summary metadata."""

from __future__ import annotations

from typing import Any

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


class ErrorRecord(Model):
    """One line of `errors.jsonl`; older records lack `status` and friends."""

    line: int
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
    range: Range

    @property
    def shape(self) -> str:
        """`v2` when the record carries the later status fields, `v1` otherwise."""
        return "v2" if self.status is not None else "v1"


class BadLine(Model):
    line: int
    message: str
    range: Range


class ErrorsLog(Model):
    path: str
    records: list[ErrorRecord] = []
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

"""`specs/state.json`: the task registry of the newer task-based trees.

The registry is the machine-readable source of truth those trees' commands read with `jq`
(`active_projects[]` with `project_number`, `status`, `priority`, lifecycle timestamps and
`artifacts`). The model keeps every value with the range of its text, because a
registry finding is only useful when it points at the entry and field that are wrong.
"""

from __future__ import annotations

from typing import Any

from .base import Model, Range


class RegistryArtifact(Model):
    """One `artifacts[]` item: a report, plan or summary the task produced."""

    path: str
    type: str | None = None
    range: Range
    """The range of the `path` value."""


class RegistryEntry(Model):
    """One `active_projects[]` object."""

    index: int
    range: Range
    """The range of the opening brace (an entry can span hundreds of lines)."""
    fields: dict[str, Any] = {}
    value_ranges: dict[str, Range] = {}
    """Top-level field name → the range of its value."""
    artifacts: list[RegistryArtifact] = []

    @property
    def number(self) -> int | None:
        value = self.fields.get("project_number")
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def text(self, name: str) -> str | None:
        """The field's value when it is a non-empty string."""
        value = self.fields.get(name)
        return value if isinstance(value, str) and value.strip() else None

    @property
    def label(self) -> str:
        """How messages name the entry: `task 58`, or its position when unnumbered."""
        return f"task {self.number}" if self.number is not None else f"entry {self.index + 1}"


class TaskRegistry(Model):
    """A parsed registry; `error` is set (and nothing else) when it cannot be read."""

    path: str
    line_count: int = 0
    error: str | None = None
    error_range: Range | None = None
    entries: list[RegistryEntry] = []
    top: dict[str, Any] = {}
    """Top-level scalar fields (`last_updated`, `next_project_number`, ...)."""
    top_ranges: dict[str, Range] = {}

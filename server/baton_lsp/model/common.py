"""Pieces shared by several document kinds: front matter, links, suppressions."""

from __future__ import annotations

from typing import Any

from .base import Model, Range


class ListItem(Model):
    value: Any
    range: Range


class FrontmatterEntry(Model):
    """One top-level `key: value` of YAML front matter with the positions of both halves."""

    key: str
    value: Any = None
    key_range: Range
    value_range: Range
    range: Range
    """From the key to the end of the value (multi-line for block lists)."""
    items: list[ListItem] = []
    """Positions of the elements when the value is a list (or a comma list in one string)."""


class Frontmatter(Model):
    entries: list[FrontmatterEntry] = []
    range: Range
    """From the opening `---` to the closing one."""
    error: str | None = None
    error_range: Range | None = None
    duplicates: list[FrontmatterEntry] = []
    lenient_reason: str | None = None
    """Set when strict YAML failed but the block reads as flat `key: value` lines, the way
    Claude Code itself reads it (e.g. `argument-hint: [--flag] TEXT`)."""

    def get(self, key: str) -> FrontmatterEntry | None:
        for entry in self.entries:
            if entry.key == key:
                return entry
        return None

    def keys(self) -> list[str]:
        return [e.key for e in self.entries]


class Link(Model):
    """A markdown link `[text](target)` found outside code."""

    text: str
    target: str
    range: Range
    target_range: Range


class Suppression(Model):
    """An inline `<!-- baton: ignore CODE -->` comment and the lines it covers."""

    codes: list[str]
    """Empty means every rule."""
    range: Range
    scope_start: int
    scope_end: int
    file_level: bool = False

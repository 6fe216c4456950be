"""Core ↔ lsprotocol conversions: ranges (code points ↔ UTF-16), typed diagnostics, edits.

A typed `Diagnostic` is `wire.diagnostic_json`'s output structured (one encoder of
findings), with the converter the server itself uses (`converter`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from cattrs import Converter
from lsprotocol import types
from pygls.protocol import default_converter

from .wire import cp_col, diagnostic_json, utf16_col
from .wire import fix_to_data as fix_to_data
from .wire import path_to_uri as path_to_uri
from .wire import uri_to_path as uri_to_path

if TYPE_CHECKING:  # the core is imported on first use, after `initialize` was answered
    from ..model.base import Finding, Range, TextEdit


@functools.cache
def converter() -> Converter:
    """The one lsprotocol converter of the process (the server's too: `server`)."""
    made: Converter = default_converter()  # type: ignore[no-untyped-call]
    return made


def to_lsp_range(r: Range, lines: Sequence[str]) -> types.Range:
    def pos(line: int, char: int) -> types.Position:
        text = lines[line] if 0 <= line < len(lines) else ""
        return types.Position(line=max(line, 0), character=utf16_col(text, max(char, 0)))

    return types.Range(start=pos(r.start_line, r.start_char), end=pos(r.end_line, r.end_char))


def to_lsp_line_range(r: Range, line: str | None) -> types.Range:
    """`r` on a single line whose text is `line`; None means ASCII (columns unchanged)."""
    def col(char: int) -> int:
        return max(char, 0) if line is None else utf16_col(line, max(char, 0))

    return types.Range(start=types.Position(line=max(r.start_line, 0), character=col(r.start_char)),
                       end=types.Position(line=max(r.end_line, 0), character=col(r.end_char)))


def from_lsp_position(pos: types.Position, lines: Sequence[str]) -> tuple[int, int]:
    text = lines[pos.line] if 0 <= pos.line < len(lines) else ""
    return pos.line, cp_col(text, pos.character)


def from_lsp_range(r: types.Range, lines: Sequence[str]) -> Range:
    from ..model.base import Range  # the core loads on first use

    a = from_lsp_position(r.start, lines)
    b = from_lsp_position(r.end, lines)
    return Range.span(a[0], a[1], b[0], b[1])


def to_diagnostic(f: Finding, lines: Sequence[str],
                  lines_of: Callable[[str], Sequence[str]] | None = None) -> types.Diagnostic:
    """`f` as a typed `Diagnostic`: what `diagnostic_json` pushes, structured.
    `lines_of(path)` gives other files' lines for related information ranges."""
    return converter().structure(diagnostic_json(f, lines, lines_of), types.Diagnostic)


def edits_to_workspace_edit(edits: Sequence[TextEdit], lines_of: Any) -> types.WorkspaceEdit:
    changes: dict[str, list[types.TextEdit]] = {}
    for e in edits:
        changes.setdefault(path_to_uri(e.path), []).append(
            types.TextEdit(range=to_lsp_range(e.range, lines_of(e.path)), new_text=e.new_text))
    return types.WorkspaceEdit(changes=changes)

"""Core ↔ LSP conversions: ranges (code points ↔ UTF-16), findings ↔ diagnostics, edits."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .wire import SEVERITY, TAGS, diagnostic_data, path_to_uri, utf16_col
from .wire import SOURCE as SOURCE
from .wire import fix_to_data as fix_to_data
from .wire import uri_to_path as uri_to_path

if TYPE_CHECKING:  # the core is imported on first use, after `initialize` was answered
    from ..model.base import Finding, Range, TextEdit

_SEVERITY = {k: types.DiagnosticSeverity(v) for k, v in SEVERITY.items()}
_TAGS = {k: types.DiagnosticTag(v) for k, v in TAGS.items()}


def _cp_col(line: str, col16: int) -> int:
    if line.isascii():
        return min(col16, len(line))
    units = 0
    for i, ch in enumerate(line):
        if units >= col16:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _offset(source: str, line: int, char16: int) -> int:
    """Index into `source` of an LSP position: lines end at \n, \r\n or \r only, the
    column counts UTF-16 units; both are clamped to the text (LSP: a column past the end
    of its line means the end of the line)."""
    start = 0
    if line > 0:
        if "\r" not in source:
            parts = source.split("\n", line)  # the first `line` lines, cut in C
            if len(parts) <= line:
                return len(source)
            start = len(source) - len(parts[-1])
        else:
            for seen, m in enumerate(_LINE_BREAK.finditer(source), 1):
                if seen == line:
                    start = m.end()
                    break
            else:
                return len(source)
    m = _LINE_BREAK.search(source, start)
    end = m.start() if m else len(source)
    return start + _cp_col(source[start:end], char16)


def apply_change(source: str, change: types.TextDocumentContentChangeEvent) -> str:
    """`source` after one `contentChanges` item (a range replacement or the whole text)."""
    rng = getattr(change, "range", None)
    if rng is None:
        return change.text
    a = _offset(source, rng.start.line, rng.start.character)
    b = _offset(source, rng.end.line, rng.end.character)
    if b < a:
        a, b = b, a
    return source[:a] + change.text + source[b:]


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
    return pos.line, _cp_col(text, pos.character)


def from_lsp_range(r: types.Range, lines: Sequence[str]) -> Range:
    from ..model.base import Range

    a = from_lsp_position(r.start, lines)
    b = from_lsp_position(r.end, lines)
    return Range.span(a[0], a[1], b[0], b[1])


def to_diagnostic(f: Finding, lines: Sequence[str],
                  lines_of: Any = None) -> types.Diagnostic:
    """`lines_of(path)` gives other files' lines for related information ranges."""
    related = []
    for rel in f.related:
        rel_lines = lines if rel.path == f.path or lines_of is None else lines_of(rel.path)
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=path_to_uri(rel.path),
                                    range=to_lsp_range(rel.range, rel_lines)),
            message=rel.message))
    return types.Diagnostic(
        range=to_lsp_range(f.range, lines),
        message=f.message,
        severity=_SEVERITY[f.severity],
        code=f.code,
        code_description=types.CodeDescription(href=f.url),
        source=SOURCE,
        related_information=related or None,
        tags=[_TAGS[t] for t in f.tags if t in _TAGS] or None,
        data=diagnostic_data(f),
    )


def edits_to_workspace_edit(edits: Sequence[TextEdit], lines_of: Any) -> types.WorkspaceEdit:
    changes: dict[str, list[types.TextEdit]] = {}
    for e in edits:
        changes.setdefault(path_to_uri(e.path), []).append(
            types.TextEdit(range=to_lsp_range(e.range, lines_of(e.path)), new_text=e.new_text))
    return types.WorkspaceEdit(changes=changes)

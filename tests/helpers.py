"""Small helpers for tests: applying fix edits to text, picking findings by code."""

from __future__ import annotations

from baton_lsp.model.base import Finding, TextEdit


def apply_edits(text: str, edits: list[TextEdit]) -> str:
    """Apply edits (0-based line/char ranges) from last to first."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)

    def offset(line: int, char: int) -> int:
        if line >= len(lines):
            return len(text)
        return offsets[line] + char

    out = text
    for e in sorted(edits, key=lambda e: (e.range.start_line, e.range.start_char), reverse=True):
        a = offset(e.range.start_line, e.range.start_char)
        b = offset(e.range.end_line, e.range.end_char)
        out = out[:a] + e.new_text + out[b:]
    return out


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def only(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]


def apply_fix(text: str, fix: object) -> str:
    """Apply every edit of a `Fix`."""
    return apply_edits(text, fix.edits)  # type: ignore[attr-defined]

"""lsp/convert.py: editor changes applied the way LSP defines positions; the fix data carried
on a diagnostic is the fix's own JSON form."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from baton_lsp.lsp.convert import fix_to_data
from baton_lsp.lsp.wire import apply_change
from baton_lsp.model.base import Fix, Range, TextEdit

TEXT = st.lists(st.sampled_from(["a", "b", " ", "\n", "\r", "\r\n", "\u2028", "\x85", "\x0c",
                                 "é", "\U0001f680", "\t"]), max_size=40).map("".join)


def reference_offset(source: str, line: int, char16: int) -> int:
    """Walk the text a character at a time: lines end at \\n, \\r\\n or \\r; a column
    counts UTF-16 units; past the end of a line is its end, past the last line the end."""
    at_line, units, i = 0, 0, 0
    while i < len(source):
        ch = source[i]
        if at_line == line and (units >= char16 or ch in "\r\n"):
            return i
        if ch in "\r\n":
            at_line += 1
            units = 0
            i += 2 if source[i:i + 2] == "\r\n" else 1
            continue
        if at_line == line:
            units += 2 if ord(ch) > 0xFFFF else 1
        i += 1
    return len(source)


@settings(max_examples=500, deadline=None)
@given(TEXT, st.integers(0, 8), st.integers(0, 12), st.integers(0, 8), st.integers(0, 12),
       st.text(max_size=5))
def test_a_range_change_replaces_exactly_the_range(source: str, l1: int, c1: int, l2: int,
                                                  c2: int, new: str) -> None:
    if (l2, c2) < (l1, c1):
        l1, c1, l2, c2 = l2, c2, l1, c1
    change = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=l1, character=c1),
                          end=types.Position(line=l2, character=c2)), text=new)
    a, b = reference_offset(source, l1, c1), reference_offset(source, l2, c2)
    a, b = min(a, b), max(a, b)
    assert apply_change(source, change) == source[:a] + new + source[b:]


def test_the_whole_text_replaces_the_document() -> None:
    change = types.TextDocumentContentChangeWholeDocument(text="new")
    assert apply_change("old\u2028text", change) == "new"


def test_unicode_line_separators_are_not_line_ends() -> None:
    change = types.TextDocumentContentChangePartial(
        range=types.Range(start=types.Position(line=1, character=0),
                          end=types.Position(line=1, character=1)), text="X")
    assert apply_change("a\u2028b\x0cc\nd\n", change) == "a\u2028b\x0cc\nX\n"



def test_fix_data_equals_the_models_json_dump() -> None:
    fix = Fix(title="Remove dependency on phase 7", safe=False, edits=[
        TextEdit(path="/ws/.claude/specs/1/plans/p.md", range=Range.span(3, 14, 3, 18),
                 new_text=""),
        TextEdit(path="/ws/b.md", range=Range.of_line(0, 0, 5), new_text="ünïcode\n")])
    assert fix_to_data(fix) == fix.model_dump(mode="json")
    empty = Fix(title="Nothing", edits=[])
    assert fix_to_data(empty) == empty.model_dump(mode="json")

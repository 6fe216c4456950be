"""lsp/convert.py: the fix data carried on a diagnostic is the fix's own JSON form."""

from __future__ import annotations

from baton_lsp.lsp.convert import fix_to_data
from baton_lsp.model.base import Fix, Range, TextEdit


def test_fix_data_equals_the_models_json_dump() -> None:
    fix = Fix(title="Remove dependency on phase 7", safe=False, edits=[
        TextEdit(path="/ws/.claude/specs/1/plans/p.md", range=Range.span(3, 14, 3, 18),
                 new_text=""),
        TextEdit(path="/ws/b.md", range=Range.of_line(0, 0, 5), new_text="ünïcode\n")])
    assert fix_to_data(fix) == fix.model_dump(mode="json")
    empty = Fix(title="Nothing", edits=[])
    assert fix_to_data(empty) == empty.model_dump(mode="json")

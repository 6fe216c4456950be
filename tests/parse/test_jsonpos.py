"""JSON positions for schema errors: keys, values, arrays, escapes, broken and hostile input."""

from __future__ import annotations

from baton_lsp.parse.jsonpos import Positions, locate


def test_paths_map_to_key_and_value_offsets() -> None:
    text = '{\n  "a": {"b": [1, "x\\"y", null]},\n  "c\\u00e9": true\n}'
    pos = Positions(text)
    r = pos.value_range(("a", "b", 1))
    assert r is not None and text.splitlines()[1][r.start_char:r.end_char] == '"x\\"y"'
    k = pos.key_range(("cé",))
    assert k is not None and (k.start_line, k.start_char) == (2, 2)
    assert pos.value_range(()) is not None
    assert pos.path_at(text.index("null")) == (("a", "b", 2), False)
    assert pos.path_at(text.index('"a"') + 1) == (("a",), True)


def test_broken_json_gives_what_was_found() -> None:
    spans = locate('{"a": 1, "b": [2, ')
    assert ("a",) in spans and ("b", 0) in spans and ("b",) not in spans


def test_deep_nesting_is_capped_not_a_crash() -> None:
    text = "[" * 100_000 + "]" * 100_000
    assert locate(text) == {}

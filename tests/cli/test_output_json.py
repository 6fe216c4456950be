"""`cli.output.indented_json` writes what `json.dumps(indent=2, ensure_ascii=False)` writes,
character for character: `baton check --format json` output must not change with it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.cli.output import finding_json, indented_json, render_json
from baton_lsp.rules.checker import check_paths

_scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True)
            | st.text() | st.sampled_from(["", "\x00\x1f\"\\/\u2028é😀\ud800", "a\nb"]))
_values = st.recursive(
    _scalars,
    lambda inner: (st.lists(inner, max_size=4) | st.tuples(inner, inner)
                   | st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=30)


@settings(max_examples=600, deadline=None)
@given(_values)
def test_indented_json_is_json_dumps(value: object) -> None:
    assert indented_json(value) == json.dumps(value, indent=2, ensure_ascii=False)


def test_what_it_does_not_write_is_refused_not_guessed() -> None:
    with pytest.raises(TypeError):
        indented_json({1: "a"})
    with pytest.raises(TypeError):
        indented_json({"a": {1, 2}})


def test_a_real_report_is_written_as_json_dumps_wrote_it() -> None:
    """The example workspace's findings (related locations, fixes and all)."""
    example = Path(__file__).resolve().parents[2] / "examples"
    result = check_paths([example], {"shellcheck": "off"})
    assert result.findings
    expected = json.dumps([finding_json(f) for f in result.findings], indent=2,
                          ensure_ascii=False) + "\n"
    assert render_json(result.findings) == expected

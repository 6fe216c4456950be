"""OpenCode's `{file:path}` tokens are found as its regex finds them, in linear time."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from baton_lsp.parse.opencode import file_refs

ORACLE = re.compile(r"\{file:[^}\n]+\}")
"""The per-line regex Baton used (OpenCode's `\\{file:[^}]+\\}` within one line): right, but
it scans to the end of the line from every `{file:` when no `}` follows."""

pieces = st.sampled_from(["{file:", "}", "a", "/", "{", " ", "//", "file:", ".md"])


@given(st.lists(pieces, max_size=30).map("".join))
def test_the_tokens_are_the_regexs(line: str) -> None:
    assert list(file_refs(line)) == [(m.start(), m.end()) for m in ORACLE.finditer(line)]


def test_a_long_line_of_openers_is_read_once() -> None:
    """150,000 characters of `{file:` with no `}`: each is looked at once, not once per
    opener (the regex took seconds here)."""
    line = "{file:" * 25_000
    assert list(file_refs(line)) == []
    assert list(file_refs(line + "}")) == [(0, len(line) + 1)]

"""`Range.span` / `Range.of_line` build what pydantic's `model_construct` builds."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from baton_lsp.model.base import Range

ints = st.integers(min_value=-3, max_value=10**6)


@given(ints, ints, ints, ints)
def test_span_is_model_construct(a: int, b: int, c: int, d: int) -> None:
    fast = Range.span(a, b, c, d)
    slow = Range.model_construct(start_line=a, start_char=b, end_line=c, end_char=d)
    assert fast == slow and hash(fast) == hash(slow) and repr(fast) == repr(slow)
    assert fast.model_dump() == slow.model_dump()
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.model_copy(update={"end_char": d + 1}) == \
        slow.model_copy(update={"end_char": d + 1})
    assert Range.model_validate(fast.model_dump()) == fast
    assert pickle.loads(pickle.dumps(fast)) == slow  # parallel checks send them to workers
    line = Range.of_line(a, b, d)
    built = Range.model_construct(start_line=a, start_char=b, end_line=a, end_char=d)
    assert line == built and repr(line) == repr(built) and hash(line) == hash(built)
    assert line.model_fields_set == built.model_fields_set

"""The light `Model` base of the parse records keeps the part of pydantic's API the code
base uses: these hold for pydantic's `BaseModel` too (they passed on it before the change)."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from baton_lsp.model.agent import AgentFile
from baton_lsp.model.base import Finding, Fix, Range, Related, Severity, TextEdit
from baton_lsp.model.common import Frontmatter, FrontmatterEntry
from baton_lsp.model.data import ErrorRecord, LoggedError


def _finding() -> Finding:
    r = Range.span(1, 2, 3, 4)
    return Finding(code="BTN101", rule="r", severity=Severity.WARNING, message="m", path="p",
                   range=r, related=[Related(path="q", range=r, message="there")],
                   fix=Fix(title="t", edits=[TextEdit(path="p", range=r, new_text="x")]),
                   tags=["a"])


def test_mutable_defaults_are_copied_per_instance() -> None:
    a = Frontmatter(range=Range.of_line(0))
    b = Frontmatter(range=Range.of_line(0))
    a.entries.append(FrontmatterEntry(key="k", key_range=Range.of_line(1),
                                      value_range=Range.of_line(1), range=Range.of_line(1)))
    assert b.entries == [] and Frontmatter.model_construct(range=Range.of_line(0)).entries == []


def test_a_finding_round_trips_through_json() -> None:
    found = _finding()
    text = json.dumps(found.model_dump(mode="json"))
    again = Finding.model_validate(json.loads(text))
    assert again == found and again.severity is Severity.WARNING
    assert isinstance(again.related[0].range, Range) and again.fix is not None
    assert again.fix.edits[0].range == found.range
    assert found.model_dump()["severity"] is Severity.WARNING  # python mode keeps the enum
    assert Finding.model_validate({**json.loads(text), "unknown": 1}) == found


def test_bad_json_is_refused_with_a_value_error() -> None:
    raw = _finding().model_dump(mode="json")
    for bad in ({**raw, "severity": "loud"}, {**raw, "range": [1, 2]},
                {k: v for k, v in raw.items() if k != "path"}, "text"):
        with pytest.raises(ValueError):
            Finding.model_validate(bad)


def test_frozen_ranges_hash_and_refuse_changes() -> None:
    r = Range.span(1, 2, 3, 4)
    assert {r: 1}[Range.model_construct(start_line=1, start_char=2, end_line=3, end_char=4)]
    with pytest.raises((TypeError, ValueError)):
        r.start_line = 5  # type: ignore[misc]
    assert r.model_copy(update={"end_char": 9}).end_char == 9 and r.end_char == 4


def test_records_are_equal_by_type_and_fields_and_unhashable_unless_frozen() -> None:
    assert _finding() == _finding() and _finding() != _finding().model_copy(
        update={"code": "BTN102"})
    with pytest.raises(TypeError):
        hash(_finding())
    assert copy.deepcopy(_finding()) == _finding()
    assert pickle.loads(pickle.dumps(_finding())) == _finding()


def test_error_records_read_any_json_object_leniently() -> None:
    rec = ErrorRecord.model_validate({"error_message": 3, "stack": "one", "context": [1],
                                      "extra": True, "timestamp": None})
    assert rec.error_message == "3" and rec.stack == ["one"] and rec.context == {"value": [1]}
    logged = LoggedError(line=0, range=Range.of_line(0), record=rec)
    assert hash(logged.range) == hash(Range.of_line(0))
    assert json.loads(rec.json_line())["error_message"] == "3"


def test_fields_and_forward_references() -> None:
    assert AgentFile.model_fields["path"].is_required()
    assert not AgentFile.model_fields["task_blocks"].is_required()
    doc = AgentFile.model_validate({"path": "a.md", "name": "a", "task_blocks": [
        {"range": Range.of_line(2).model_dump(), "open_range": Range.of_line(2).model_dump(),
         "closed": True}]})
    assert doc.path == "a.md" and doc.task_blocks[0].range == Range.of_line(2)


def test_every_field_in_order_builds_the_same_record_as_any_other_order() -> None:
    """`Model.__init__` takes the caller's dict as the state when every field is given in
    field order (the parsers' records); that state must equal the general path's in fields,
    order (repr, hash), fields set and independence, and wrong names are still refused."""
    r = Range.of_line(2, 1, 4)
    names = list(Range.model_fields)
    values = {"start_line": 2, "start_char": 1, "end_line": 2, "end_char": 4}
    in_order = Range(**{n: values[n] for n in names})
    reversed_order = Range(**{n: values[n] for n in reversed(names)})
    for made in (in_order, reversed_order):
        assert made == r and hash(made) == hash(r) and repr(made) == repr(r)
        assert list(made.__dict__) == names and made.model_fields_set == set(names)
    given = {n: values[n] for n in names}
    built = Range(**given)
    given["start_line"] = 99
    assert built.start_line == 2  # the record's state is not the caller's dict
    with pytest.raises(TypeError, match="no field 'start'"):
        Range(start_line=2, start=1, end_line=2, end_char=4)
    with pytest.raises(TypeError, match="'end_char' is required"):
        Range(start_line=2, start_char=1, end_line=2)


def test_setting_a_field_marks_it_set_once() -> None:
    """`__setattr__` marks a field set as the `frozenset | {name}` it always made; a field
    already set (every field of a record the parsers build whole) keeps the same set rather
    than a copy of it."""
    sparse = Frontmatter.model_construct(range=Range.of_line(0))
    assert sparse.model_fields_set == {"range"}
    sparse.error = "e"
    assert sparse.model_fields_set == {"range", "error"}
    before = sparse.model_fields_set
    sparse.error = "f"
    sparse.range = Range.of_line(1)
    assert sparse.model_fields_set is before and sparse.error == "f"
    whole = Frontmatter(**{name: getattr(sparse, name) for name in Frontmatter.model_fields})
    every = whole.model_fields_set
    whole.error = "e"
    assert whole.model_fields_set is every and every == set(Frontmatter.model_fields)

"""The pydantic-free checkpoint check (`model.checkpoint_shape.conforms`) against the models.

`conforms` may say "valid" only where pydantic accepts the document and keeps every value as
it is; the checker then reads the document itself (`runs.checkpoint.parse_for_check`) instead
of the models. Generated documents (real checkpoints with one field replaced by any JSON value)
hold it to that, and the table it reads must be the one the models define.

Run this file (`python tests/model/test_checkpoint_shape.py`) to regenerate `SHAPES` after a
model changes.
"""

from __future__ import annotations

import copy
import json
import pprint
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.model import checkpoint_shape
from baton_lsp.model.checkpoint import VERSION_MODELS, Checkpoint, light_shapes
from baton_lsp.model.checkpoint_shape import SHAPES, conforms
from baton_lsp.runs.checkpoint import (
    VERSION_MODEL_NAMES,
    CheckedCheckpoint,
    CheckpointError,
    LoadedCheckpoint,
    parse_checkpoint,
    parse_for_check,
    safe_resume_problems,
)

V12 = {"schema_version": "1.2", "checkpoint_id": "test_checkpoint_001",
       "workflow_type": "implement", "project_name": "test_project",
       "workflow_description": "Test workflow", "created_at": "2025-10-07T05:00:46Z",
       "updated_at": "2025-10-07T05:00:46Z", "status": "in_progress", "current_phase": 2,
       "total_phases": 5, "completed_phases": [1],
       "workflow_state": {"plan_path": "/tmp/x/test_plan.md", "current_phase": 2},
       "last_error": None, "tests_passing": True, "plan_modification_time": 1760418046,
       "replanning_count": 0, "last_replan_reason": None, "replan_phase_counts": {},
       "replan_history": [], "debug_report_path": None, "user_last_choice": None,
       "debug_iteration_count": 0}
"""The corpus's checkpoints (`.claude/checkpoints/test_*/test_checkpoint.json`)."""

V21 = {"schema_version": "2.1", "checkpoint_id": "c", "workflow_type": "implement",
       "project_name": "p", "created_at": "2025-11-12T09:14:03Z", "status": "in_progress",
       "state_machine": {
           "current_state": "implement", "completed_states": ["research", "plan"],
           "workflow_config": {"scope": "full-implementation", "command": "implement"},
           "classification": {"workflow_type": "full-implementation", "confidence": 0.5,
                               "research_complexity": 3, "research_topics": ["a"]}},
       "error_state": {"last_error": "boom", "retry_count": 1, "failed_state": "test"},
       "workflow_state": {"plan_path": "plans/p.md", "wave_results": {
           "1": {"phases": [1, "2"], "duration_ms": 3.5, "parallel": True}}}}

BASES = [("1.2", V12), ("2.1", V21)]


def test_the_table_is_the_models() -> None:
    assert light_shapes() == SHAPES, "models changed: run this file to regenerate SHAPES"
    assert {v: m.__name__ for v, m in VERSION_MODELS.items()} == VERSION_MODEL_NAMES


def test_real_checkpoints_conform_and_read_as_pydantic_reads_them() -> None:
    for version, doc in BASES:
        assert conforms(VERSION_MODEL_NAMES[version], doc)
        raw = json.dumps(doc)
        light, full = parse_for_check(raw, "x.json"), parse_checkpoint(raw, "x.json")
        assert isinstance(light, CheckedCheckpoint) and isinstance(full, LoadedCheckpoint)
        _same_reading(light, full)


def _same_reading(light: CheckedCheckpoint, full: LoadedCheckpoint) -> None:
    assert (light.kind, light.source_version, light.effective_version, light.data,
            light.steps, light.notes) == (full.kind, full.source_version,
                                          full.effective_version, full.data, full.steps,
                                          full.notes)
    facts, model = light.checkpoint, full.checkpoint
    assert isinstance(model, Checkpoint)
    for name in ("status", "created_at", "updated_at", "last_error", "tests_passing",
                 "plan_modification_time"):
        got, want = getattr(facts, name), getattr(model, name)
        assert got == want and type(got) is type(want), name
    assert facts.error_state.last_error == model.error_state.last_error
    ws = facts.workflow_state
    assert (ws.plan_path if ws else None) == (
        model.workflow_state.plan_path if model.workflow_state else None)
    assert safe_resume_problems(facts) == safe_resume_problems(model)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-2**70, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5)
    | st.sampled_from(["2.1", "1.2", "plan", "implement", "full-implementation", "stuck",
                       "\ud800", "3", "true"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["plan_path", "last_error", "phases", "scope", "x", "\ud800", "1"]),
        inner, max_size=3),
    max_leaves=6)


def _paths(doc: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key of every object in `doc` (lists' first items included)."""
    out: list[tuple[str, ...]] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out.append((*prefix, key))
            out.extend(_paths(value, (*prefix, key)))
    elif isinstance(doc, list) and doc:
        out.extend(_paths(doc[0], (*prefix, "0")))
    return out


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(BASES), st.data(), JSON_VALUES, st.booleans())
def test_conforms_only_where_pydantic_keeps_the_document(base: tuple[str, dict[str, object]],
                                                         data: st.DataObject, value: object,
                                                         delete: bool) -> None:
    version, doc = base[0], copy.deepcopy(base[1])
    extra = [("new_key",)] + [("state_machine", "y")] * ("state_machine" in doc)
    path = data.draw(st.sampled_from([*_paths(doc), *extra]))
    where: object = doc
    for key in path[:-1]:
        where = where[int(key)] if isinstance(where, list) else where[key]  # type: ignore
    assert isinstance(where, dict)
    if delete:
        where.pop(path[-1], None)
    else:
        where[path[-1]] = value
    name = VERSION_MODEL_NAMES[version]
    if conforms(name, doc):
        VERSION_MODELS[version].model_validate(doc)  # raises if conforms was wrong
    raw = json.dumps(doc)
    try:
        full = parse_checkpoint(raw, "x.json")
    except CheckpointError as exc:
        try:
            parse_for_check(raw, "x.json")
        except CheckpointError as again:
            assert str(again) == str(exc)
        else:
            raise AssertionError(f"the light reading accepted what pydantic refuses: {exc}")
        return
    light = parse_for_check(raw, "x.json")
    if isinstance(light, CheckedCheckpoint):
        _same_reading(light, full)
    else:
        assert light.data == full.data and type(light.checkpoint) is type(full.checkpoint)


def test_values_pydantic_would_coerce_go_to_pydantic() -> None:
    """Accepted by pydantic but changed by it, or refused by it: never vouched for."""
    for key, value in (("tests_passing", "false"), ("current_phase", True),
                       ("current_phase", 2.0), ("plan_modification_time", 2**64),
                       ("created_at", None), ("x\ud800", 1)):
        doc = {**V12, key: value}
        assert not conforms("CheckpointV12", doc), (key, value)
        try:
            read = parse_for_check(json.dumps(doc), "x.json")
        except CheckpointError:
            continue
        assert isinstance(read, LoadedCheckpoint), (key, value)


def _regenerate() -> None:
    path = Path(checkpoint_shape.__file__)
    text = path.read_text()
    start = text.index("SHAPES: dict[str, Fields] = ")
    end = text.index("\n\n\ndef conforms")
    body = pprint.pformat(light_shapes(), width=95, sort_dicts=False)
    body = "\n".join("    " + line for line in body.splitlines())
    path.write_text(text[:start] + "SHAPES: dict[str, Fields] = (\n" + body + ")" + text[end:])


if __name__ == "__main__":
    _regenerate()
    sys.exit(0)

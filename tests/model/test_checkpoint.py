"""Checkpoint models: enums, the version chain, open models and the registered schemas."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest
from pydantic import ValidationError

from baton_lsp.cli.schema import SCHEMAS, generate
from baton_lsp.model.checkpoint import (
    VERSION_MODELS,
    Checkpoint,
    CheckpointV10,
    CheckpointV20,
    Classification,
    HaltReason,
    IterationCheckpoint,
    StateMachine,
    SupervisorCheckpoint,
)
from baton_lsp.model.states import (
    MIGRATION_TRANSITIONS,
    PHASE_STATES,
    STORED_TRANSITIONS,
    Scope,
    State,
)

BASE = {"checkpoint_id": "c1", "workflow_type": "implement", "project_name": "p",
        "created_at": "2025-11-07T14:30:22Z", "status": "in_progress"}
SM_20 = {"current_state": "plan", "completed_states": ["initialize", "research"],
         "workflow_config": {"scope": "research-and-plan", "description": "d", "command": "c"}}


def test_state_and_scope_vocabularies() -> None:
    assert [s.value for s in PHASE_STATES] == ["initialize", "research", "plan", "implement",
                                               "test", "debug", "document", "complete"]
    assert {s.value for s in State} == {*(s.value for s in PHASE_STATES), "abandoned"}
    assert {s.value for s in Scope} == {
        "research-only", "research-and-plan", "research-and-revise", "full-implementation",
        "debug-only", "implement-only", "test-and-debug"}
    assert State.COMPLETE.terminal and State.ABANDONED.terminal and not State.PLAN.terminal
    assert {s.value: s.terminal_state.value for s in Scope} == {
        "research-only": "research", "research-and-plan": "plan",
        "research-and-revise": "plan", "full-implementation": "complete",
        "debug-only": "debug", "implement-only": "implement", "test-and-debug": "complete"}
    assert {r.value for r in HaltReason} == {"context_threshold", "max_iterations", "stuck",
                                             "completion", "user_abort", "error"}


def test_version_models_form_a_chain() -> None:
    models = list(VERSION_MODELS.values())
    assert list(VERSION_MODELS) == ["1.0", "1.1", "1.2", "1.3", "2.0", "2.1"]
    for older, newer in itertools.pairwise(models):
        assert issubclass(newer, older)
        assert set(older.model_fields) <= set(newer.model_fields)
    assert VERSION_MODELS["2.1"] is Checkpoint


@pytest.mark.parametrize("field", sorted(BASE))
def test_validate_checkpoint_required_fields(field: str) -> None:
    doc = {k: v for k, v in BASE.items() if k != field}
    with pytest.raises(ValidationError):
        CheckpointV10.model_validate(doc)
    with pytest.raises(ValidationError):  # `jq -e` fails on null too
        CheckpointV10.model_validate({**BASE, field: None})


def test_unknown_keys_survive_a_round_trip() -> None:
    doc: dict[str, Any] = {
        **BASE, "schema_version": "2.1", "custom": {"a": [1, 2]},
        "workflow_state": {"plan_path": "p.md", "anything": True},
        "state_machine": {**SM_20, "extra_sm": 1,
                          "classification": {"workflow_type": "research-and-plan",
                                             "research_topics": [{"short_name": "A",
                                                                  "other": 2}, "B"]}},
    }
    cp = Checkpoint.model_validate(doc)
    assert cp.model_dump(mode="json", exclude_unset=True) == doc
    assert cp.state_machine.classification.research_complexity == 2  # default


def test_2_1_requires_classification_and_its_version() -> None:
    doc = {**BASE, "schema_version": "2.1", "state_machine": SM_20}
    with pytest.raises(ValidationError, match="classification"):
        Checkpoint.model_validate(doc)
    CheckpointV20.model_validate({**doc, "schema_version": "2.0"})
    sm = {**SM_20, "classification": {"workflow_type": "research-only"}}
    with pytest.raises(ValidationError, match="schema_version"):
        Checkpoint.model_validate({**BASE, "schema_version": "2.0", "state_machine": sm})


@pytest.mark.parametrize(("field", "value"), [
    ("research_complexity", 5), ("research_complexity", 0), ("confidence", 1.5),
    ("workflow_type", "everything"),
])
def test_classification_bounds(field: str, value: Any) -> None:
    with pytest.raises(ValidationError):
        Classification.model_validate({"workflow_type": "research-only", field: value})


def test_transition_tables_parse() -> None:
    sm = StateMachine.model_validate({**SM_20, "transition_table": MIGRATION_TRANSITIONS,
                                      "classification": {"workflow_type": "research-only"}})
    table = sm.transitions()
    assert table[State.INITIALIZE] == {State.RESEARCH}
    assert table[State.COMPLETE] == frozenset()
    stored = StateMachine.model_validate({**SM_20,
                                          "classification": {"workflow_type": "debug-only"}})
    assert stored.transition_table == {}
    assert stored.transitions()[State.PLAN] == {State.IMPLEMENT, State.COMPLETE, State.DEBUG}
    assert set(STORED_TRANSITIONS) == {s.value for s in PHASE_STATES}
    odd = StateMachine.model_validate({
        **SM_20, "transition_table": {"plan": "implement, bogus", "bogus": "plan"},
        "classification": {"workflow_type": "debug-only"}})
    assert odd.transitions() == {State.PLAN: frozenset({State.IMPLEMENT})}


@pytest.mark.parametrize("work", ["phase 3 left", ["p3", "p4"], None])
def test_iteration_work_remaining_types(work: Any) -> None:
    it = IterationCheckpoint.model_validate({"version": "2.1", "plan_path": "p", "iteration": 1,
                                             "work_remaining": work})
    assert it.max_iterations == 5 and it.work_remaining == work


@pytest.mark.parametrize("work", [5, True, {"phase": 3}])
def test_iteration_work_remaining_wrong_types(work: Any) -> None:
    with pytest.raises(ValidationError):
        IterationCheckpoint.model_validate({"version": "2.1", "plan_path": "p", "iteration": 1,
                                            "work_remaining": work})


def test_iteration_halt_reason_is_open() -> None:
    base = {"version": "2.1", "plan_path": "p", "iteration": 1}
    assert IterationCheckpoint.model_validate(
        {**base, "halt_reason": "stuck"}).known_halt_reason is HaltReason.STUCK
    assert IterationCheckpoint.model_validate(
        {**base, "halt_reason": "bored"}).known_halt_reason is None


def test_supervisor_minimal_and_required() -> None:
    sup = SupervisorCheckpoint.model_validate({"supervisor_id": "s1"})
    assert sup.workers == [] and sup.aggregated_metadata is None
    with pytest.raises(ValidationError):
        SupervisorCheckpoint.model_validate({"workers": []})


@pytest.mark.parametrize(("name", "title"), [
    ("checkpoint.schema.json", "Checkpoint"),
    ("iteration-checkpoint.schema.json", "IterationCheckpoint"),
    ("supervisor-checkpoint.schema.json", "SupervisorCheckpoint"),
])
def test_schemas_registered(name: str, title: str) -> None:
    assert name in SCHEMAS
    schema = generate(name)
    assert schema["title"] == title and schema["additionalProperties"] is True
    json.dumps(schema)


def test_checkpoint_schema_pins_the_version_and_enums() -> None:
    schema = generate("checkpoint.schema.json")
    assert schema["properties"]["schema_version"]["const"] == "2.1"
    assert set(schema["required"]) >= {*BASE, "schema_version", "state_machine"}
    assert "classification" in schema["$defs"]["StateMachine"]["required"]
    assert "abandoned" in schema["$defs"]["State"]["enum"]

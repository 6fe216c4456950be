"""State machine guards, scopes and history."""

from __future__ import annotations

import itertools

import pytest

from baton_lsp.model.states import Scope, State
from baton_lsp.workflow.state_machine import (
    HAPPY_PATHS,
    TABLE,
    InvalidTransition,
    WorkflowStateMachine,
)


def test_table_matches_the_stored_bash_table() -> None:
    assert TABLE[State.INITIALIZE] == {State.RESEARCH, State.IMPLEMENT}
    assert TABLE[State.TEST] == {State.DEBUG, State.DOCUMENT, State.COMPLETE}
    assert TABLE[State.COMPLETE] == frozenset()


@pytest.mark.parametrize("scope", list(Scope))
def test_every_happy_path_is_allowed_and_ends_at_the_terminal_state(scope: Scope) -> None:
    sm = WorkflowStateMachine(scope)
    steps = 0
    while not sm.finished:
        nxt = sm.next_on_happy_path()
        assert nxt is not None, f"{scope}: stuck in {sm.current}"
        assert sm.transition(nxt, "step succeeded")
        steps += 1
    assert sm.current == scope.terminal_state or sm.current == State.COMPLETE
    assert steps == len(HAPPY_PATHS[scope])
    assert [t.target for t in sm.history] == list(HAPPY_PATHS[scope])


def test_same_state_is_a_noop_and_history_keeps_reasons() -> None:
    sm = WorkflowStateMachine(Scope.FULL_IMPLEMENTATION)
    assert sm.transition(State.INITIALIZE) is False and sm.history == []
    sm.transition(State.RESEARCH, "classified")
    assert sm.history[0].reason == "classified" and sm.history[0].at.endswith("Z")
    assert sm.completed == [State.RESEARCH]


def test_invalid_transition_names_the_valid_set() -> None:
    sm = WorkflowStateMachine(Scope.FULL_IMPLEMENTATION)
    with pytest.raises(InvalidTransition) as info:
        sm.transition(State.TEST, "skip ahead")
    msg = str(info.value)
    assert "initialize -> test (reason: skip ahead)" in msg
    assert "valid from initialize: implement, research" in msg
    assert sm.current == State.INITIALIZE


def test_nothing_leaves_complete_or_abandoned() -> None:
    for end in (State.COMPLETE, State.ABANDONED):
        sm = WorkflowStateMachine(Scope.FULL_IMPLEMENTATION, current=end)
        for target in State:
            if target == end:
                continue
            with pytest.raises(InvalidTransition, match="is terminal"):
                sm.transition(target)


def test_abandon_from_any_live_state_and_debug_loop() -> None:
    for state in (s for s in State if not s.terminal):
        sm = WorkflowStateMachine(Scope.FULL_IMPLEMENTATION, current=state)
        assert sm.transition(State.ABANDONED, "user cancelled")
    sm = WorkflowStateMachine(Scope.FULL_IMPLEMENTATION, current=State.TEST)
    sm.transition(State.DEBUG, "tests failed")
    assert sm.next_on_happy_path() == State.TEST
    sm.transition(State.TEST, "fix applied")
    assert sm.completed == [State.DEBUG, State.TEST]


def test_every_pair_of_states_is_either_allowed_or_refused_cleanly() -> None:
    for a, b in itertools.product(State, State):
        sm = WorkflowStateMachine(Scope.FULL_IMPLEMENTATION, current=a)
        try:
            sm.transition(b)
        except InvalidTransition as exc:
            assert exc.current == a and exc.target == b and sm.current == a
        else:
            assert sm.current == b

"""The workflow state machine: states, the transition table, scopes and their guards.

Mirrors `workflow-state-machine.sh` v2.0.0 (formats.md §6): a transition to the same state
is a no-op, nothing leaves `complete` or `abandoned`, and any other move must be in the
table — otherwise `InvalidTransition` names the valid set, as `sm_transition` logs it.
Every accepted move is kept in `history` with its reason so checkpoints can show why the
workflow is where it is.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ..model.states import STORED_TRANSITIONS, Scope, State

TABLE: dict[State, frozenset[State]] = {
    State(k): frozenset(State(n) for n in v.split(",") if n)
    for k, v in STORED_TRANSITIONS.items()
}

HAPPY_PATHS: dict[Scope, tuple[State, ...]] = {
    Scope.RESEARCH_ONLY: (State.RESEARCH,),
    Scope.RESEARCH_AND_PLAN: (State.RESEARCH, State.PLAN),
    Scope.RESEARCH_AND_REVISE: (State.RESEARCH, State.PLAN),
    Scope.FULL_IMPLEMENTATION: (State.RESEARCH, State.PLAN, State.IMPLEMENT, State.TEST,
                                State.DOCUMENT, State.COMPLETE),
    Scope.DEBUG_ONLY: (State.RESEARCH, State.PLAN, State.DEBUG),
    Scope.IMPLEMENT_ONLY: (State.IMPLEMENT,),
    Scope.TEST_AND_DEBUG: (State.IMPLEMENT, State.TEST, State.COMPLETE),
}
"""States a scope moves through when nothing fails (from `initialize`); test failures
divert `test` to `debug`, which returns to `test`."""


class InvalidTransition(Exception):
    """A move the table does not allow; the message names the valid targets."""

    def __init__(self, current: State, target: State, valid: Iterable[State], reason: str,
                 why: str = "") -> None:
        self.current, self.target, self.reason = current, target, reason
        self.valid = frozenset(valid)
        names = ", ".join(sorted(s.value for s in self.valid)) or "none"
        detail = why or f"valid from {current.value}: {names}"
        super().__init__(f"Invalid state transition attempted: {current.value} -> "
                         f"{target.value} (reason: {reason or 'none given'}); {detail}")


@dataclass(frozen=True)
class Transition:
    source: State
    target: State
    reason: str
    at: str


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass
class WorkflowStateMachine:
    scope: Scope
    current: State = State.INITIALIZE
    completed: list[State] = field(default_factory=list)
    history: list[Transition] = field(default_factory=list)
    table: Mapping[State, frozenset[State]] = field(default_factory=lambda: dict(TABLE))

    @property
    def terminal(self) -> State:
        """Where this scope stops (`sm_init`'s TERMINAL_STATE)."""
        return self.scope.terminal_state

    @property
    def finished(self) -> bool:
        return self.current in (self.terminal, State.COMPLETE, State.ABANDONED)

    def valid_targets(self) -> frozenset[State]:
        if self.current.terminal:
            return frozenset()
        return self.table.get(self.current, frozenset()) | {State.ABANDONED}

    def can(self, target: State) -> bool:
        return target == self.current or target in self.valid_targets()

    def transition(self, target: State, reason: str = "") -> bool:
        """Move to `target`; False for a same-state no-op, `InvalidTransition` if refused."""
        if target == self.current:
            return False
        if self.current.terminal:
            raise InvalidTransition(self.current, target, (), reason,
                                    f"{self.current.value} is terminal: nothing leaves it")
        if target not in self.valid_targets():
            raise InvalidTransition(self.current, target, self.valid_targets() - {
                State.ABANDONED}, reason)
        self.history.append(Transition(self.current, target, reason, _now()))
        self.current = target
        if target not in self.completed and target is not State.ABANDONED:
            self.completed.append(target)
        return True

    def next_on_happy_path(self) -> State | None:
        """The next state this scope moves to when the current one succeeded."""
        path = (State.INITIALIZE, *HAPPY_PATHS[self.scope])
        if self.current == State.DEBUG and self.scope in (Scope.FULL_IMPLEMENTATION,
                                                          Scope.TEST_AND_DEBUG):
            return State.TEST  # after a fix, test again
        if self.current not in path:
            return None
        i = path.index(self.current)
        return path[i + 1] if i + 1 < len(path) else None


STATE_DOCS: dict[State, str] = {
    State.INITIALIZE: "pre-calculates every artifact path (topic directory, reports, plan, "
                      "summaries) and classifies the workflow; nothing runs yet",
    State.RESEARCH: "research specialists write one report per topic, in parallel; at least "
                    "half of them must pass the hard barrier",
    State.PLAN: "the plan architect turns the reports into a plan with phases and "
                "`dependencies:`; it must parse and have no dependency cycle",
    State.IMPLEMENT: "plan phases run in dependency waves, independent phases in parallel; "
                     "each phase must write its summary",
    State.TEST: "the configured test command runs; failure goes to debug, success to "
                "document",
    State.DEBUG: "the debug analyst writes a debug report; then the tests run again "
                 "(debug-mode `loop`, bounded by max-debug-iterations) or the workflow ends "
                 "complete, needing attention (debug-mode `report`, the seeds' ending)",
    State.DOCUMENT: "the doc writer writes the workflow summary",
    State.COMPLETE: "terminal: the workflow finished; nothing leaves this state",
    State.ABANDONED: "terminal: the workflow was given up; nothing leaves this state",
}
"""One line per state, for hovers and `baton status`."""


def state_markdown(state: State) -> str:
    nxt = sorted(s.value for s in TABLE.get(state, ()))
    out = f"**{state.value}** — {STATE_DOCS[state]}"
    if nxt:
        out += "\n\nNext: " + ", ".join(f"`{n}`" for n in nxt)
    scopes = [s.value for s, path in HAPPY_PATHS.items() if state in path]
    if scopes and not state.terminal:
        out += "\n\nVisited by scopes: " + ", ".join(scopes)
    return out

"""The workflow's vocabulary: states, scopes, transition tables and failure classes.

Plain enums with no pydantic, so the CLI's argument parser and the language server's
request schemas use the one definition without loading the checkpoint models.
"""

from __future__ import annotations

from enum import StrEnum


class State(StrEnum):
    """States of `workflow-state-machine.sh`; phase numbers 0-7 in this order, then abandoned."""

    INITIALIZE = "initialize"
    RESEARCH = "research"
    PLAN = "plan"
    IMPLEMENT = "implement"
    TEST = "test"
    DEBUG = "debug"
    DOCUMENT = "document"
    COMPLETE = "complete"
    ABANDONED = "abandoned"

    @property
    def terminal(self) -> bool:
        """`sm_transition` refuses to leave these two."""
        return self in (State.COMPLETE, State.ABANDONED)


STATE_NAMES = frozenset(s.value for s in State)

# Phase number → state, as `map_phase_to_state` does for 1.3 → 2.0 (other numbers: initialize).
PHASE_STATES: tuple[State, ...] = (
    State.INITIALIZE, State.RESEARCH, State.PLAN, State.IMPLEMENT, State.TEST, State.DEBUG,
    State.DOCUMENT, State.COMPLETE,
)


class Scope(StrEnum):
    """Workflow scopes of `sm_init`; each ends in its own terminal state."""

    RESEARCH_ONLY = "research-only"
    RESEARCH_AND_PLAN = "research-and-plan"
    RESEARCH_AND_REVISE = "research-and-revise"
    FULL_IMPLEMENTATION = "full-implementation"
    DEBUG_ONLY = "debug-only"
    IMPLEMENT_ONLY = "implement-only"
    TEST_AND_DEBUG = "test-and-debug"

    @property
    def terminal_state(self) -> State:
        """The state at which `sm_init` stops this scope (unknown scopes stop at complete)."""
        return _TERMINAL[self]


_TERMINAL = {
    Scope.RESEARCH_ONLY: State.RESEARCH,
    Scope.RESEARCH_AND_PLAN: State.PLAN,
    Scope.RESEARCH_AND_REVISE: State.PLAN,
    Scope.FULL_IMPLEMENTATION: State.COMPLETE,
    Scope.DEBUG_ONLY: State.DEBUG,
    Scope.IMPLEMENT_ONLY: State.IMPLEMENT,
    Scope.TEST_AND_DEBUG: State.COMPLETE,
}

# The table the state machine stores today (`workflow-state-machine.sh` v2.0.0).
STORED_TRANSITIONS: dict[str, str] = {
    "initialize": "research,implement",
    "research": "plan,complete",
    "plan": "implement,complete,debug",
    "implement": "test,complete",
    "test": "debug,document,complete",
    "debug": "test,document,complete",
    "document": "complete",
    "complete": "",
}

# The older, narrower table baked into the 1.3 → 2.0 migration; saved checkpoints carry either.
MIGRATION_TRANSITIONS: dict[str, str] = {
    "initialize": "research",
    "research": "plan,complete",
    "plan": "implement,complete",
    "implement": "test",
    "test": "debug,document",
    "debug": "test,complete",
    "document": "complete",
    "complete": "",
}


class FailureClass(StrEnum):
    """How a failed agent step is retried: later, with another attempt, or not at all."""

    TRANSIENT = "transient"
    """Rate limits, overload, timeouts: retry after a back-off."""
    PERMANENT = "permanent"
    """This attempt failed (bad output, missing artifact): retry as a new attempt."""
    FATAL = "fatal"
    """Retrying cannot help (authentication, a missing binary): stop the workflow."""


class StepStatus(StrEnum):
    """Where one step of a run stands (`baton.steps.<id>.status`). A StrEnum, so a record
    written with these is byte-identical to one written with the plain strings."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"
    """A test step with no test command configured: nothing ran, nothing failed."""


class PhaseStatus(StrEnum):
    """Where an implement phase's work is in git (`baton.steps.<id>.git.status`): a
    StrEnum, so the record reads and writes the plain words it always did."""

    RUNNING = "running"
    """The agent is working in its worktree (or in place)."""
    COMMITTED = "committed"
    """The phase's own commit is made; its merge into the user's branch is still to do."""
    MERGED = "merged"
    EMPTY = "empty"
    """The agent changed nothing: there is no commit to merge (only the plan's marker)."""
    CONFLICT = "conflict"
    """The merge left conflicted files (`git.conflicts`) for the user to resolve."""


class PhaseMode(StrEnum):
    """How a phase ran in git (`baton.steps.<id>.git.mode`)."""

    WORKTREE = "worktree"
    IN_PLACE = "in-place"


class RunStatus(StrEnum):
    """A workflow's status: the four a Baton checkpoint records (`status`), and the two
    only a reader derives — never written, so an older Baton still reads every record."""

    IN_PROGRESS = "in_progress"
    COMPLETE = "complete"
    FAILED = "failed"
    CANCELLED = "cancelled"
    INTERRUPTED = "interrupted"
    """Shown for `in_progress` when no engine holds the run's lock: it died unrecorded."""
    UNREADABLE = "unreadable"
    """Shown when no checkpoint of the run can be read as a record."""

    @property
    def resumable(self) -> bool:
        """`baton resume` takes a run that stopped before its end."""
        return self in (RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED)

    @property
    def finished(self) -> bool:
        """Nothing more will happen to it without a resume (the seeds' word too)."""
        return self in (RunStatus.COMPLETE, RunStatus.FAILED, RunStatus.CANCELLED,
                        RunStatus.INTERRUPTED)

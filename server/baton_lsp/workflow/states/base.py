"""What a workflow state is to the engine: its handler, which state follows it and why.
A new state is one module under `states/` with a HANDLER, registered in `states/__init__`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from ...model.states import State
from ..run import Run


@dataclass(frozen=True)
class StateHandler:
    """`next_state` None: the scope's happy path; `reason` None: "<state> finished"."""

    state: State
    run: Callable[[Run], Awaitable[None]]
    next_state: Callable[[Run], State | None] | None = None
    reason: Callable[[Run], str] | None = None

    def after(self, run: Run) -> State | None:
        """The state that follows this one in this run (None: the scope is finished)."""
        sm = run.machine
        if self.state == sm.terminal and self.state != State.COMPLETE:
            return State.COMPLETE
        if self.next_state is not None:
            return self.next_state(run)
        return sm.next_on_happy_path()

    def why(self, run: Run) -> str:
        return self.reason(run) if self.reason is not None else f"{self.state.value} finished"

"""The workflow's states, one module each, registered here for the engine's state loop."""

from __future__ import annotations

from ...model.states import State
from . import debug, document, implement, initialize, plan, research, test
from .base import StateHandler

HANDLERS: dict[State, StateHandler] = {h.state: h for h in (
    initialize.HANDLER, research.HANDLER, plan.HANDLER, implement.HANDLER, test.HANDLER,
    debug.HANDLER, document.HANDLER)}

__all__ = ["HANDLERS", "StateHandler"]

"""How a workflow step or run ends badly: the exceptions the engine, the state handlers and
the agent step raise, and which of several failures decides a wave's outcome."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from ..model.states import FailureClass
from ..runs import confine

TRANSIENT, PERMANENT, FATAL = FailureClass.TRANSIENT, FailureClass.PERMANENT, FailureClass.FATAL


class EngineError(Exception):
    """Bad input or an impossible request, reported before anything runs."""


class StartRefused(EngineError):
    """The run cannot start for a reason of the environment, not of the command line (an
    agent CLI preflight refuses, uncommitted changes in the tree it would commit to): said
    before anything is written, and exit code 1 rather than a usage error's 2."""

    exit_code = 1


class Cancelled(Exception):
    """The workflow was cancelled (signal or `baton cancel`)."""


class LoopDone(Exception):
    """The implement iteration loop halted with `completion`."""


class StoreFailure(Exception):
    """Baton could not write its own record — a checkpoint, the state file, `errors.jsonl`,
    the owner record — because the disk refused (full, read-only, quota, size limit) or the
    path leads out of the workspace. No step's fault and nothing to retry: the run ends."""

    def __init__(self, what: str, cause: OSError) -> None:
        self.what = what
        self.cause = cause
        super().__init__(f"cannot write {what}: {confine.describe(cause)}")

    @property
    def message(self) -> str:
        return str(self)


@dataclass
class StepFailure(Exception):
    """One step (or state) failed; `failure` is its FailureClass, which decides retries."""

    step_id: str
    failure: str
    message: str
    error_type: str
    context: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.step_id}: {self.message}"


def worst(failures: list[StepFailure]) -> StepFailure:
    """The failure that decides for a group: fatal before permanent before transient."""
    rank: dict[str, int] = {FATAL: 0, PERMANENT: 1, TRANSIENT: 2}
    return min(failures, key=lambda f: rank.get(f.failure, 1))


def reraise_cancel(results: list[Any]) -> None:
    """A gathered sibling was cancelled: the whole wave is."""
    for r in results:
        if isinstance(r, (Cancelled, asyncio.CancelledError)):
            raise Cancelled()

"""The debug state: a debug agent reads the failing test output and writes a debug report
(and its fix); then the workflow tests again."""

from __future__ import annotations

import json
from pathlib import Path

from ...model.states import Scope, State
from ...runs.digest import sha256_file
from ..agent_step import StepSpec, agent_step
from ..run import Run
from .base import StateHandler


async def debug(run: Run) -> None:
    it = int(run.data.get("debug_iteration_count") or 0) + 1
    debug_dir = Path(run.paths["debug_dir"])
    report = debug_dir / f"{it:03d}_debug_report.md"
    test_log = debug_dir / f"test_output_{it}.log"
    extra = {"BATON_PLAN_PATH": run.paths["plan"],
             "BATON_TEST_OUTPUT": str(test_log) if test_log.is_file() else "",
             "BATON_REPORT_PATHS": json.dumps(run.good_reports())}
    inputs = {str(test_log): sha256_file(test_log, run.root)} if test_log.is_file() else {}
    await agent_step(run, StepSpec(f"debug.{it}", State.DEBUG, "debug", report, extra, inputs))
    run.data["debug_iteration_count"] = it
    run.data["debug_report_path"] = str(report)


def after_debug(run: Run) -> State | None:
    """Full implementation and test-and-debug test again; other scopes follow their path."""
    if run.machine.scope in (Scope.FULL_IMPLEMENTATION, Scope.TEST_AND_DEBUG):
        return State.TEST
    return run.machine.next_on_happy_path()


HANDLER = StateHandler(State.DEBUG, debug, next_state=after_debug,
                       reason=lambda run: "fix applied, testing again")

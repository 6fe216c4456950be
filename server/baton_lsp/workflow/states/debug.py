"""The debug state: a debug agent reads the failing test output and writes a debug report
(and its fix). With `debug-mode = "loop"` the workflow then tests again; with `"report"`
(the seeds' ending) it ends `complete` with the outcome `needs_attention`: the report is
for a person to act on, and the run says how to run it again."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from ...model.states import Scope, State
from ...runs.digest import sha256_file
from ...runs.record import NEEDS_ATTENTION, OutcomeRecord
from ..agent_step import StepSpec, agent_step
from ..layout import TEST_LOG
from ..run import Run, fixed
from .base import StateHandler

DEBUGGING_SCOPES = (Scope.FULL_IMPLEMENTATION, Scope.TEST_AND_DEBUG)
"""Scopes whose failing tests go to debug (the others fail in test)."""


def reports_and_ends(run: Run) -> bool:
    """Failing tests end the workflow `needs_attention` instead of looping (seeds' ending)."""
    return run.settings.debug_mode == "report" and run.machine.scope in DEBUGGING_SCOPES


def rerun_command(run: Run) -> str:
    """The seeds' "Then re-run: /coordinate \"$WORKFLOW_DESCRIPTION\"", as a baton command:
    the same description and scope (and the plan it was given)."""
    argv = ["baton", "run", run.description, "--scope",
            run.machine.scope.value]
    if run.request.plan_path:
        plan = Path(run.request.plan_path)
        argv += ["--plan", str(plan.relative_to(run.root) if plan.is_relative_to(run.root)
                               else plan)]
    return shlex.join(argv)


def end_needing_attention(run: Run, reason: str, report: Path | None,
                          test_output: str | None) -> None:
    """Record the `needs_attention` outcome the workflow will end `complete` with."""
    run.outcome = OutcomeRecord(status=NEEDS_ATTENTION, reason=reason,
                                debug_report=str(report) if report else None,
                                test_output=test_output, rerun=rerun_command(run))


async def debug(run: Run) -> None:
    it = run.debug_iteration_count + 1
    debug_dir = Path(fixed(run.paths.debug_dir, "debug"))
    report = debug_dir / f"{it:03d}_debug_report.md"
    test_log = debug_dir / TEST_LOG.format(it)
    extra = {"BATON_PLAN_PATH": fixed(run.paths.plan, "plan"),
             "BATON_TEST_OUTPUT": str(test_log) if test_log.is_file() else "",
             "BATON_REPORT_PATHS": json.dumps(run.good_reports())}
    inputs = {str(test_log): sha256_file(test_log, run.root)} if test_log.is_file() else {}
    await agent_step(run, StepSpec(f"debug.{it}", State.DEBUG, "debug", report, extra, inputs))
    run.debug_iteration_count = it
    run.debug_report_path = str(report)
    if reports_and_ends(run) and run.tests_passing is False:
        end_needing_attention(run, "tests failed; the debug report says why",
                              report, str(test_log) if test_log.is_file() else None)


def after_debug(run: Run) -> State | None:
    """Full implementation and test-and-debug test again (`loop`) or end (`report`); other
    scopes follow their path."""
    if run.machine.scope in DEBUGGING_SCOPES:
        return State.COMPLETE if reports_and_ends(run) else State.TEST
    return run.machine.next_on_happy_path()


def debug_reason(run: Run) -> str:
    if reports_and_ends(run):
        return "debug report written; tests still failing (needs attention)"
    return "fix applied, testing again"


HANDLER = StateHandler(State.DEBUG, debug, next_state=after_debug, reason=debug_reason)

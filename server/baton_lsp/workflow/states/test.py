"""The test state: run the configured test command (no agent) with the run's contract in
its environment; its output is the debug agent's input. The result is checkpointed as
soon as the command exits; a resume does not run tests that passed again."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from ...model.states import Scope, State, StepStatus
from ...paths import python_command
from ...runs import confine
from ...runs.record import TESTING_SUPERVISOR, StepRecord
from ...runs.records import utc_now
from .. import accounting, supervisor, tiers
from ..failures import PERMANENT, Cancelled, StepFailure
from ..layout import TEST_LOG
from ..process import run_process
from ..run import Run, fixed
from .base import StateHandler
from .debug import DEBUGGING_SCOPES, end_needing_attention, reports_and_ends

"""The status of a test step that ran nothing (neither passed nor failed)."""
NO_TEST_COMMAND = "no test command configured ([workflow] test-command)"
SEEDS_TEST_SCRIPT = Path(".claude/tests/run_all_tests.sh")
"""The seeds' test suite: their test phase falls back to `bash
"${CLAUDE_PROJECT_DIR}/.claude/tests/run_all_tests.sh"` when nothing else runs the tests."""


def seeds_test_script(root: Path, sid: str) -> list[str] | None:
    """`bash <workspace>/.claude/tests/run_all_tests.sh` when the workspace has that script
    as a regular file inside it, None when it has none. A script that is a link out of the
    workspace, a FIFO or a directory is refused (StepFailure naming it), never run: the
    repository chose what runs, Baton only chose to run it."""
    try:
        with confine.open_read(root, SEEDS_TEST_SCRIPT):
            pass
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StepFailure(sid, PERMANENT, f"not running the seeds' test script: "
                          f"{confine.describe(exc)}", "file_error") from None
    return ["bash", str(root / SEEDS_TEST_SCRIPT)]


async def test(run: Run) -> None:
    it = run.debug_iteration_count
    sid = f"test.{it + 1}"
    argv = python_command(run.settings.test_command)
    steps = run.steps
    fallback = False
    if not argv:
        argv = seeds_test_script(run.root, sid) or []
        fallback = bool(argv)
    if not argv:  # skipped, and never reported as passed: nothing was tested
        run.tests_passing = None
        steps[sid] = StepRecord(state="test", role="test", status=StepStatus.SKIPPED,
                                attempts=0, message=NO_TEST_COMMAND)
        run.say(f"test: skipped — {NO_TEST_COMMAND}; nothing was tested")
        return
    done = steps.get(sid)
    if done is not None and done.done and done.passed is True:
        run.tests_passing = True  # passed before the engine stopped: not again
        run.say(f"[{sid}] tests already passed; skipped")
        return
    log_path = Path(fixed(run.paths.debug_dir, "debug")) / TEST_LOG.format(it + 1)
    inventory = tiers.test_inventory(run.root)  # the generation stage: what is there to run
    decision = tiers.testing_decision(inventory)
    if decision["hierarchical"]:
        run.say(f"test: {inventory['total_tests']} test(s) of {len(inventory['test_types'])} "
                f"type(s) ({', '.join(inventory['test_types'])}): through the testing "
                "supervisor")
        run.emit("supervisor", tier="testing", mode="supervisor", workers=3, status="running")
    lines: list[str] = []
    env = dict(os.environ)
    env.update(run.contract(sid, "test", log_path, {}))
    if fallback:
        run.say(f"test: running bash {SEEDS_TEST_SCRIPT} (no test-command configured: the "
                f"seeds' fallback)")
    else:
        run.say(f"test: running {' '.join(argv)}")
    start = time.monotonic()
    try:
        out = await run_process(argv, cwd=run.root, env=env, stdin=None,
                                on_line=lines.append, timeout=run.settings.test_timeout,
                                stall_timeout=None, cancel=run.cancel_event,
                                grace=run.settings.kill_grace, on_start=run.started)
    except Exception as exc:  # missing test executable and friends
        raise StepFailure(sid, PERMANENT, f"cannot run the test command: {exc}",
                          "execution_error") from None
    if out.cancelled:
        raise Cancelled()
    confine.write_new(run.root, log_path, ("\n".join(lines) + (
        "\n" + out.stderr_tail if out.stderr_tail else "") + "\n").encode("utf-8"))
    passed = out.exit_code == 0 and not out.timed_out
    run.tests_passing = passed
    run.outcome = None  # tested again: whatever the last ending said is old
    steps[sid] = StepRecord(state="test", role="test", status=StepStatus.DONE, attempts=1,
                            artifact=str(log_path), exit_code=out.exit_code,
                            duration_ms=int((time.monotonic() - start) * 1000), passed=passed,
                            command=argv)
    run.say(f"test: {'passed' if passed else 'FAILED'} (exit {out.exit_code}"
            f"{', timed out' if out.timed_out else ''}); output in {log_path}")
    if decision["hierarchical"]:
        testing_checkpoint(run, sid, inventory, decision, log_path,
                           "\n".join([*lines, out.stderr_tail]))
    if not passed:
        run.log_error(sid, "execution_error", f"tests failed (exit {out.exit_code})",
                      {"artifact_path": str(log_path), "exit_code": out.exit_code})
    run.save(f"step {sid} done")  # a failing run is tested again on resume, a passing one not
    debugging = run.machine.scope in DEBUGGING_SCOPES
    if not passed and reports_and_ends(run):
        if run.settings.max_debug_iterations == 0:  # no debug agent: the output is the report
            end_needing_attention(run, "tests failed (max-debug-iterations = 0: no debug "
                                  "report)", None, str(log_path))
        return
    if not passed and (it >= run.settings.max_debug_iterations or not debugging):
        raise StepFailure(sid, PERMANENT, f"tests still failing after {it} debug "
                          f"iteration(s); see {log_path}", "execution_error",
                          {"artifact_path": str(log_path)})


def testing_checkpoint(run: Run, sid: str, inventory: dict[str, Any],
                       decision: dict[str, Any], log_path: Path, output: str) -> None:
    """The testing supervisor's section: generation → execution → validation, the test
    metrics read from the output passed up in place of the log (accounted as the step's
    context), and the test files the implementation supervisor's testing track changed."""
    step = run.steps[sid]
    metrics = tiers.test_metrics(output)
    # what goes up: the counts, and coverage and failures only when the output had them
    step.metadata = {k: v for k, v in metrics.items() if v is not None and v != []}
    context = step.context = accounting.step_context("", step.metadata, log_path)
    run.context = accounting.aggregate(run.steps)
    impl = run.supervisor_state.implementation_supervisor
    track = impl.tracks.get("testing") if impl is not None else None
    section = tiers.testing_section(
        supervisor_id=f"testing_supervisor_{run.workflow_id}", at=utc_now(),
        decision=decision, inventory=inventory, step_id=sid, exit_code=step.exit_code,
        passed=bool(step.passed), duration_ms=int(step.duration_ms or 0),
        output_path=str(log_path), metrics=metrics,
        context_tokens=context["passed_tokens"],
        from_implementation=list(track.files_modified) if track is not None else [])
    run.supervisor_state.testing_supervisor = section
    supervisor.record_section(run.root, TESTING_SUPERVISOR, section)
    agg = section.aggregated_metadata
    run.say(f"testing supervisor: {agg.total_tests} test(s), {agg.passed} passed, "
            f"{agg.failed} failed" + (f", coverage {agg.coverage_pct}%"
                                      if agg.coverage_pct is not None else ""))
    run.emit("supervisor", tier="testing", mode="supervisor", workers=3, status="done",
             completed=3, context_tokens=agg.context_tokens)


def tests_skipped(run: Run) -> bool:
    """The test state ran no tests this time round (no test command configured)."""
    it = run.debug_iteration_count
    step = run.steps.get(f"test.{it + 1}")
    return step is not None and step.status == StepStatus.SKIPPED


def after_test(run: Run) -> State | None:
    """Failing tests go to debug; passing ones to document (full implementation) or done."""
    if run.tests_passing is False:
        if reports_and_ends(run) and run.settings.max_debug_iterations == 0:
            return State.COMPLETE
        return State.DEBUG
    return State.DOCUMENT if run.machine.scope == Scope.FULL_IMPLEMENTATION else State.COMPLETE


def test_reason(run: Run) -> str:
    if tests_skipped(run):
        return "tests skipped: no test command configured"
    if run.tests_passing is False and run.outcome is not None:
        return "tests failed; no debug agent (max-debug-iterations = 0): needs attention"
    return "tests passed" if run.tests_passing is not False else "tests failed"


HANDLER = StateHandler(State.TEST, test, next_state=after_test, reason=test_reason)

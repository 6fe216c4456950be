"""The implement iteration loop (`implement-mode = "iterations"`): the implementation
coordinator runs once per iteration, implementing the waves it can, and its brief summary
alone decides whether to continue or halt. Every iteration is checkpointed, in the run
record and as the real layout's flat 2.1 iteration checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...model.checkpoint import IterationCheckpoint
from ...model.states import State, StepStatus
from ...runs import confine
from ...runs.record import IterationRecord
from ...runs.records import utc_now
from .. import iteration
from ..agent_step import StepSpec, agent_step
from ..failures import PERMANENT, Cancelled, LoopDone, StepFailure
from ..run import Run, fixed


async def implement_iterations(run: Run, plan_path: Path, todo: list[str]) -> None:
    """The implement iteration loop: the implementation coordinator runs once per
    iteration (implementing the waves it can), and its brief summary alone decides
    whether to continue or halt. Every iteration's fields are checkpointed, so a resume
    continues at the next iteration, not the first."""
    summaries = Path(fixed(run.paths.summaries_dir, "summaries"))
    it = run.iteration
    if it is None:
        it = run.iteration = IterationRecord(
            iteration=0, continuation_context=None,
            work_remaining=iteration.normalize_work(todo), last_work_remaining=None,
            unchanged=0, halt_reason=None, context_tokens=0, history=[])
    it.max_iterations = max_iterations = run.settings.max_iterations
    if it.iteration == 0 and not it.work_remaining:
        it.halt_reason = "completion"
        run.say("implement: every phase of the plan is already complete")
        return
    if it.halt_reason not in (None, "completion"):
        run.say(f"implement: resuming after a halt ({it.halt_reason}) at iteration "
                f"{it.iteration + 1}")
        if it.halt_reason == "stuck":
            it.unchanged = 0  # the user looked at it: one more chance
        it.halt_reason = None
    while True:
        n = it.iteration + 1
        if n > max_iterations:
            halt(run, it, "max_iterations", f"{it.iteration} of {max_iterations} "
                 f"iterations used; still to do: {it.work_remaining}")
        sid = f"implement.iteration-{n}"
        artifact = summaries / f"iteration_{n}_summary.md"
        extra = {"BATON_PLAN_PATH": str(plan_path), "BATON_ITERATION": str(n),
                 "BATON_MAX_ITERATIONS": str(max_iterations),
                 "BATON_CONTINUATION_CONTEXT": it.continuation_context or "",
                 "BATON_WORK_REMAINING": _work(it.work_remaining),
                 "BATON_SUMMARIES_DIR": str(summaries)}
        run.emit("iteration", iteration=n, max_iterations=max_iterations,
                 status="running", work_remaining=it.work_remaining)
        run.say(f"implement: iteration {n}/{max_iterations}"
                + (f", remaining {it.work_remaining}" if it.work_remaining else ""))
        try:
            await agent_step(run, StepSpec(sid, State.IMPLEMENT, "implement-coordinator",
                                           artifact, extra,
                                           timeout=run.settings.implement_timeout))
        except Cancelled:
            it.halt_reason = "user_abort"
            write_iteration_checkpoint(run, it, plan_path)
            raise
        except StepFailure as exc:
            it.halt_reason = "error"
            write_iteration_checkpoint(run, it, plan_path)
            raise StepFailure("implement", exc.failure, f"iteration {n}: {exc.message}",
                              exc.error_type, {**exc.context, "halt_reason": "error",
                                               "iteration": n}) from None
        step = run.steps[sid]
        try:
            summary_text = confine.read_bytes(run.root, artifact).decode("utf-8", "replace")
        except OSError:
            summary_text = ""
        brief = iteration.parse_brief(step.brief or {}, summary_text)
        if brief.missing:  # the step must run again on resume: mark it failed
            failure = StepFailure(sid, PERMANENT, "the implementation coordinator's brief "
                                  "summary lacks " + ", ".join(brief.missing) + " (in its "
                                  "output and in the header of " + str(artifact) + ")",
                                  "parse_error", {"artifact_path": str(artifact)})
            step.status = StepStatus.FAILED
            it.halt_reason = "error"
            run.record_failure(step, failure)
            raise failure
        it.context_tokens += int((step.context or {}).get("passed_tokens", 0))
        decision = iteration.decide(
            brief, previous_work=_work(it.work_remaining),
            unchanged=it.unchanged, iteration=n,
            max_iterations=max_iterations, context_tokens=it.context_tokens,
            context_budget=run.settings.context_budget)
        if decision.invariant_violated:
            msg = (f"implement-coordinator returned requires_continuation=false with "
                   f"work_remaining {brief.work_remaining!r}; continuing anyway "
                   "(contract invariant)")
            run.say(f"[{sid}] WARNING: {msg}")
            run.log_error(sid, "validation_error", msg, {
                "work_remaining": brief.work_remaining, "requires_continuation": False,
                "iteration": n, "override": "requires_continuation=true"})
        it.iteration, it.last_work_remaining = n, it.work_remaining
        it.work_remaining, it.continuation_context = brief.work_remaining, str(artifact)
        it.unchanged, it.context_exhausted = decision.unchanged, brief.context_exhausted
        it.context_usage_percent = brief.context_usage_percent
        it.history.append({"iteration": n, "work_remaining": brief.work_remaining,
                              "phases_completed": brief.phases_completed,
                              "requires_continuation": brief.requires_continuation,
                              "invariant_override": decision.invariant_violated,
                              "duration_ms": step.duration_ms})
        if decision.halt_reason is not None:
            halt(run, it, decision.halt_reason, decision.reason, plan_path)
        write_iteration_checkpoint(run, it, plan_path)
        run.emit("iteration", iteration=n, max_iterations=max_iterations,
                 status="done", work_remaining=brief.work_remaining,
                 requires_continuation=brief.requires_continuation)
        run.save(f"iteration {n} complete")


def halt(run: Run, it: IterationRecord, reason: str, message: str,
         plan_path: Path | None = None) -> None:
    """End the loop: completion returns normally, any other reason fails the state
    (resumable: `baton resume` continues at the next iteration)."""
    it.halt_reason = reason
    if plan_path is not None:
        write_iteration_checkpoint(run, it, plan_path)
    run.emit("iteration", iteration=it.iteration, max_iterations=it.max_iterations,
             status="halted", halt_reason=reason, work_remaining=it.work_remaining)
    run.say(f"implement: halted ({reason}) — {message}")
    run.save(f"iteration loop halted: {reason}")
    if reason == "completion":
        raise LoopDone()
    raise StepFailure("implement", PERMANENT, f"implementation halted ({reason}): {message}",
                      "execution_error", {"halt_reason": reason,
                                          "iteration": it.iteration,
                                          "work_remaining": it.work_remaining})


def _work(value: str | list[Any] | None) -> str:
    """The work remaining as the coordinator's environment and the loop compare it."""
    return value if isinstance(value, str) else iteration.normalize_work(value)


def write_iteration_checkpoint(run: Run, it: IterationRecord, plan_path: Path) -> None:
    """The flat 2.1 iteration checkpoint of the real layout,
    `.claude/data/checkpoints/build_<workflow_id>_iteration_<n>.json`."""
    assert run.store is not None
    wid = run.workflow_id
    doc = {"version": "2.1", "plan_path": str(plan_path),
           "topic_path": run.paths.topic_dir,
           "iteration": it.iteration, "max_iterations": it.max_iterations,
           "continuation_context": it.continuation_context,
           "work_remaining": it.work_remaining or None,
           "last_work_remaining": it.last_work_remaining or None,
           "context_estimate": it.context_tokens,
           "halt_reason": it.halt_reason, "workflow_id": wid,
           "timestamp": utc_now()}
    IterationCheckpoint.model_validate(doc)
    target = run.store.dir.parent / f"build_{wid}_iteration_{it.iteration}.json"
    confine.write_atomic(run.root, target, (json.dumps(doc, indent=2) + "\n").encode())

"""BTN50x: what the last workflow run of a plan says about it.

These rules read the workflow's checkpoints and `errors.jsonl` (through the workspace's
`RunIndex`) rather than the document alone, so a failed run is shown where the user can act
on it: the phase whose agent missed its artifact, the agent file behind a failed research or
plan step, the title of a plan edited since its checkpoint. They depend on the workflow's
checkpoint directory and the errors log, so editors re-check the plan when those change,
and a resumed run that succeeds clears them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..model.agent import AgentFile
from ..model.base import Finding, Kind, Range, Related, Severity
from ..model.plan import Plan
from ..model.states import PhaseStatus, RunStatus, StepStatus
from ..runs.barriers import BARRIER_FOUND
from ..runs.confine import read_head
from ..runs.digest import plan_edited
from ..runs.places import checkpoints_root, errors_log_path, run_sources
from .base import RuleContext, rule

PLAN = (Kind.PLAN,)

CONFLICT_PREFIX = "conflict in "
"""How BTN506 names each conflicting file among its related locations (the editor's
"open merge conflict" actions look for it)."""



def _runs(ctx: RuleContext, *, any_workflow: bool = False) -> Any:
    """The workspace's RunIndex, or None when it has no checkpoint store (then no workflow
    can be reported, and the run store is not even loaded). Findings depend on the errors
    log, and on the whole checkpoints directory only when any workflow may matter (agent
    files); a plan depends on its own workflow's directory, so one run's checkpoints
    re-check only its plan."""
    if ctx.index is None:
        return None
    base, errors_log, sources = _places(ctx.index.root)
    if any_workflow:
        ctx.depends_on.add(base)
    ctx.depends_on.add(errors_log)
    # Which workflow runs this plan, and how it stands, is read from every checkpoint: the
    # result cache fingerprints the stores whole (the editor follows runs on its own).
    ctx.trees.update(sources)
    if not os.path.isdir(base):
        return None
    return ctx.index.runs


@functools.lru_cache(maxsize=64)
def _places(root: Path) -> tuple[str, str, tuple[str, ...]]:
    """The run store's paths of a workspace, as strings (asked for by every plan and agent)."""
    return (str(checkpoints_root(root)), str(errors_log_path(root)),
            tuple(str(p) for p in run_sources(root)))


def _plan_run(plan: Plan, ctx: RuleContext) -> Any:
    runs = _runs(ctx)
    if runs is None:
        return None
    view = runs.for_plan(ctx.path)
    if view is not None:
        ctx.depends_on.add(str(runs.base / view.workflow_id))
        if view.running:
            ctx.uncacheable()  # a live engine's lock, not a file, says it is still going
    return view


def _rel(ctx: RuleContext, path: str | None) -> str:
    if not path:
        return "?"
    if ctx.root is not None:
        try:
            return str(Path(path).relative_to(ctx.root))
        except ValueError:
            pass
    return path


def _where(plan: Plan, ctx: RuleContext, step: Any) -> Range:
    """The phase heading of an implement step; the title (or line 1) for any other step."""
    if step is not None and step.phase is not None:
        for phase in plan.phases:
            if phase.id == step.phase:
                return phase.heading_range
    return plan.title_range or ctx.line_range(0)


def _related(ctx: RuleContext, view: Any, step: Any) -> list[Related]:
    """The error-log line, the agent's output and the checkpoint, for "go to"."""
    out: list[Related] = []
    entries = view.errors_of(step.id) if step is not None else []
    if entries:
        last = entries[-1]
        out.append(Related(path=str(errors_log_path(view.root)),
                           range=Range.of_line(last.line, 0, 0),
                           message=f"errors.jsonl: {last.record.error_type or 'error'} at "
                                   f"{last.record.timestamp or 'an unknown time'}"))
    log = view.log_path(step) if step is not None else None
    if log is not None:
        out.append(Related(path=str(log), range=Range.of_line(0, 0, 0),
                           message=f"output of the agent (attempt {step.attempts})"))
    if view.checkpoint_path:
        out.append(Related(path=view.checkpoint_path, range=Range.of_line(0, 0, 0),
                           message=f"checkpoint {view.sequence} of {view.workflow_id}"))
    return out


def barrier_message(ctx: RuleContext, view: Any, step: Any) -> str:
    """Expected path, what was found, and the agent's own report."""
    kind = view.barrier_kind(step) or "missing"
    found = BARRIER_FOUND.get(kind, kind).format(reported=_rel(ctx, view.reported_path(step)))
    what = f"Phase {step.phase}" if step.phase is not None else f"step {step.id}"
    report = view.agent_report(step)
    return (f"Hard barrier failed ({what}, workflow {view.workflow_id}): expected "
            f"{_rel(ctx, step.artifact)}; found {found}."
            + (f" Agent reported: {report}" if report else "")
            + " Fix the agent, then resume the workflow.")


def _failed_steps(view: Any) -> list[Any]:
    if view is None or not view.resumable:
        return []
    return [s for s in view.steps.values() if s.status == StepStatus.FAILED]


def agent_barrier_failures(view: Any) -> list[Any]:
    """The steps BTN505 reports on agent files: research, plan, debug or document steps
    (no plan phase) of a run waiting to be resumed that missed their artifact. Followers
    compare them between two views to know when agent files need re-checking."""
    return [s for s in _failed_steps(view) if s.phase is None and s.barrier]


@rule("BTN501", "hard-barrier-failed", Severity.ERROR, PLAN, cross_file=True)
def hard_barrier_failed(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """The last run of this plan stopped because an agent did not write its artifact.

    Every agent step has a pre-calculated artifact path (the hard barrier): the engine
    refuses to go on when the file is missing, empty, written somewhere else or outside the
    workspace. The finding sits on the phase whose agent failed (or the plan title for a
    research, plan or document step) and says what was expected, what was found and what
    the agent itself reported. Fix the agent (its instructions, or the script behaviour for
    the `script` runner) and use the `Resume workflow` code action; the finding clears when
    the resumed run gets past the step.
    """
    view = _plan_run(plan, ctx)
    for step in _failed_steps(view):
        if step.barrier:
            yield ctx.finding(_where(plan, ctx, step), barrier_message(ctx, view, step),
                              related=_related(ctx, view, step),
                              tags=[view.workflow_id, f"step:{step.id}"])


@rule("BTN502", "workflow-step-failed", Severity.ERROR, PLAN, cross_file=True)
def workflow_step_failed(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A step of the last run of this plan failed for a reason other than the hard barrier.

    A `TASK_ERROR` signal, a non-zero exit, a timeout or stall that outlasted the retries,
    or an artifact that failed verification (a plan without phases, say). The message is the
    engine's, with the error type from `errors.jsonl`; related locations open the error log
    entry and the agent's output. Resuming re-runs the step.
    """
    view = _plan_run(plan, ctx)
    for step in _failed_steps(view):
        if step.barrier:
            continue
        entries = view.errors_of(step.id)
        kind = (entries[-1].record.error_type if entries else None) or step.failure or "error"
        what = f"Phase {step.phase}" if step.phase is not None else f"step {step.id}"
        yield ctx.finding(
            _where(plan, ctx, step),
            f"{what} failed in workflow {view.workflow_id} ({kind}, after {step.attempts} "
            f"attempt{'s' if step.attempts != 1 else ''}): {step.message or 'no message'}",
            related=_related(ctx, view, step), tags=[view.workflow_id, f"step:{step.id}"])


@rule("BTN503", "workflow-error-logged", Severity.WARNING, PLAN, cross_file=True)
def workflow_error_logged(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """`errors.jsonl` holds errors of the current run of this plan that no step failure
    explains yet: a phase being retried after a transient failure (rate limit, timeout), or
    a state-level error such as a refused transition.

    They are shown on the phase (or the plan title) while they matter and disappear once
    the step succeeds or the workflow completes.
    """
    view = _plan_run(plan, ctx)
    if view is None or view.status == RunStatus.COMPLETE:
        return
    failed = {s.id for s in _failed_steps(view)}
    latest: dict[str, Any] = {}
    for entry in view.errors:
        rec = entry.record
        step = view.steps.get(rec.source or "")
        if step is not None:
            if step.status == StepStatus.DONE or step.id in failed:
                continue
        elif rec.context.get("failed_steps") or not view.resumable:
            continue  # a wave summary of step failures already shown, or an old state error
        latest[rec.source or ""] = rec
    for source, rec in latest.items():
        step = view.steps.get(source)
        yield ctx.finding(
            _where(plan, ctx, step),
            f"{rec.error_type or 'error'} in {source or 'an unnamed source'} (workflow "
            f"{view.workflow_id}, {rec.timestamp or 'no timestamp'}): "
            f"{rec.error_message or 'no message'}",
            related=_related(ctx, view, step) if step is not None else [],
            tags=[view.workflow_id])


@rule("BTN504", "stale-checkpoint", Severity.WARNING, PLAN, cross_file=True)
def stale_checkpoint(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """The plan was saved with changes after the checkpoint of its unfinished workflow.

    Resume compares content hashes: edited phases and everything that depends on them run
    again, and `baton resume` asks for `--force`. Preview exactly what would re-run with the
    `Resume workflow` code action (or `baton resume ID --dry-run`) before resuming.
    """
    view = _plan_run(plan, ctx)
    if view is None or view.status == RunStatus.COMPLETE or view.running or not view.plan_sha256:
        return
    # saved bytes, as resume hashes them; progress marked since (the engine's markers,
    # boxes ticked by hand) re-runs nothing
    if os.path.isfile(ctx.path) and plan_edited(Path(ctx.path), view.plan_sha256,
                                                view.plan_progress_free):
        yield ctx.finding(
            plan.title_range or ctx.line_range(0),
            f"Plan changed since checkpoint {view.sequence} of workflow {view.workflow_id} "
            f"({view.status} in {view.state}): resuming re-runs the changed phases and "
            "their dependents — preview with the `Resume workflow` action",
            related=_related(ctx, view, None), tags=[view.workflow_id])


_MARKER_SCAN_BYTES = 8 << 20


def _first_marker(top: Path, path: Path) -> int:
    """The 0-based line of the first conflict marker of a file (0 when there is none), in
    its first 8 MiB: read below the repository's top without following a link out of it
    and never waiting on a FIFO (the names come from a checkpoint, which anyone can plant)."""
    try:
        head, _ = read_head(top, path, _MARKER_SCAN_BYTES)
    except OSError:
        return 0
    for n, line in enumerate(head.split(b"\n")):
        if line.startswith(b"<<<<<<< ") or n > 100_000:
            return n if line.startswith(b"<<<<<<< ") else 0
    return 0


@rule("BTN506", "phase-merge-conflict", Severity.ERROR, PLAN, cross_file=True)
def phase_merge_conflict(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """This phase's work did not merge into your branch: a merge conflict.

    In a git repository the phases of a parallel wave run in their own worktrees and
    branches (`baton/<workflow>/phase-<N>`), and Baton merges them into your branch in
    dependency order when the wave ends. Two phases that changed the same lines conflict:
    the merge is left in progress in your working tree, the workflow stops, and this
    finding names the branch and the conflicting files (related locations open each file at
    its first conflict marker; a code action opens them). Resolve the conflicts, commit the
    merge, then use the `Resume workflow` action: the phases already done are not run
    again, the next wave starts. (Aborting the merge instead makes the resume merge the
    branch again.)
    """
    view = _plan_run(plan, ctx)
    if view is None or not view.resumable:
        return
    for step in view.steps.values():
        git = step.git
        if git is None or git.status != PhaseStatus.CONFLICT or step.phase is None:
            continue
        top = Path(git.top or view.root)
        files = git.conflicts
        ctx.depends_on.update(str(top / f) for f in files)  # where their markers are
        related = [Related(path=str(top / f),
                           range=Range.of_line(_first_marker(top, top / f), 0, 0),
                           message=f"{CONFLICT_PREFIX}{f}") for f in files]
        shown = ", ".join(files[:10]) + (f" and {len(files) - 10} more"
                                         if len(files) > 10 else "")
        yield ctx.finding(
            _where(plan, ctx, step),
            f"Phase {step.phase}'s work (branch {git.branch}, workflow {view.workflow_id}) "
            f"does not merge cleanly into {git.target or 'HEAD'}: conflicts in "
            f"{shown or 'the files git lists'}. Resolve them in your working tree, commit, "
            "then resume the workflow.",
            related=[*related, *_related(ctx, view, step)],
            tags=[view.workflow_id, f"step:{step.id}", "merge-conflict"])


@rule("BTN505", "agent-hard-barrier-failed", Severity.ERROR, (Kind.AGENT,), cross_file=True)
def agent_hard_barrier_failed(agent: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """This agent missed its artifact in a workflow that is still waiting to be resumed.

    Research, plan, debug and document steps run before (or outside) any plan phase, so
    their hard-barrier failures are reported on the behavioural file the engine gave the
    agent — the `[workflow.agents]` entry of its role. The finding clears when the workflow
    is resumed past the step or completes.
    """
    runs = _runs(ctx, any_workflow=True)
    if runs is None:
        return
    for view in runs.views():
        if view.running:
            ctx.uncacheable()
        for step in agent_barrier_failures(view):
            role = ctx.config.workflow.role(step.role)
            if role.agent != agent.name:
                continue
            ctx.depends_on.add(str(runs.base / view.workflow_id))
            where = agent.title_range or ctx.line_range(0)
            if agent.frontmatter is not None:
                for entry in agent.frontmatter.entries:
                    if entry.key == "name":
                        where = entry.value_range
            yield ctx.finding(where, barrier_message(ctx, view, step),
                              related=_related(ctx, view, step),
                              tags=[view.workflow_id, f"step:{step.id}"])

"""Resuming a run: the record read back into a state machine, the problems that need
--force, the rewind to the earliest state with an invalidated step, and the preview of
all that as a pure function (the language server and `baton resume --dry-run` use it; it
takes no lock and writes nothing)."""

from __future__ import annotations

import contextlib
import copy
import datetime as dt
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..model.checkpoint import HaltReason
from ..model.config import WorkflowSettings
from ..model.states import RunStatus, State
from ..runs.digest import plan_edited
from ..runs.record import (
    PathsRecord,
    RecordError,
    RunRecord,
    StepRecord,
    paths_outside,
    read_record,
)
from ..runs.records import state_file_path, utc_now
from ..runs.store import CheckpointStore, Entry
from . import classify
from .failures import EngineError
from .layout import TopicDir
from .plans import PlanFiles
from .process import kill_group, owned_agent_groups
from .run import STATE_INDEX, Run
from .state_machine import Transition, WorkflowStateMachine

MAX_AGE = dt.timedelta(days=7, hours=1)  # the seeds: a checkpoint older than 7 days is stale
HALT_REASONS = frozenset(r.value for r in HaltReason)


def baton_record(data: Mapping[str, object], source: str) -> RunRecord:
    """The run record of a checkpoint `baton run` wrote; EngineError for one it did not
    write or one that does not read as a run record."""
    baton = data.get("baton")
    if not isinstance(baton, Mapping) or "request" not in baton:
        raise EngineError("this checkpoint was not written by `baton run` and cannot be "
                          "resumed by it (a bash-system checkpoint: `baton adopt` it first)")
    try:  # the run record's models validate what the engine is about to trust
        return read_record(data, source)
    except RecordError as exc:
        raise EngineError(f"checkpoint is not usable: {exc}") from None


def restore_machine(record: RunRecord) -> WorkflowStateMachine:
    """The state machine a run record describes."""
    smd = record.state_machine
    sm = WorkflowStateMachine(smd.workflow_config.scope, smd.current_state,
                              list(smd.completed_states))
    sm.history = [Transition(State(h.source), State(h.target), h.reason, h.at)
                  for h in record.baton.history]
    return sm


def check_trust(root: Path, workflow_id: str, entry: Entry, trust: bool,
                say: Callable[[str], None]) -> None:
    """Refuse (EngineError) a checkpoint this user's Baton did not sign unless the user
    says they trust it, and — trusted or not — one naming a path outside the workspace: a
    checkpoint is data a repository can ship, and its paths decide where a resume writes
    and which plan the agents work on."""
    assert entry.data is not None, "the store returns only sound entries"
    if not entry.trusted:
        name = f"checkpoint {entry.sequence} of {workflow_id}"
        if not trust:
            raise EngineError(
                f"not resuming: {name} is not trusted: {entry.distrust}. Its paths and steps "
                f"decide what a resume writes and runs; if you know where it came from, "
                f"resume with `baton resume {workflow_id} --trust-checkpoint`")
        say(f"resuming {name} although {entry.distrust} (--trust-checkpoint)")
    try:
        record = read_record(entry.data, str(entry.path))
    except RecordError as exc:
        raise EngineError(f"checkpoint is not usable: {exc}") from None
    outside = paths_outside(root, record)
    if outside:
        shown = "; ".join(outside[:5]) + (f" and {len(outside) - 5} more"
                                          if len(outside) > 5 else "")
        raise EngineError(f"not resuming: checkpoint {entry.sequence} of {workflow_id} names "
                          f"paths outside the workspace — {shown}. Baton writes only inside "
                          "the workspace; --trust-checkpoint does not change this (a "
                          "workspace moved since the run needs a new run)")


def topic_of(paths: PathsRecord) -> TopicDir | None:
    if not paths.topic_dir:
        return None
    tdir = Path(paths.topic_dir)
    return TopicDir(paths.topic_number or 0, tdir.name, tdir)


def resume_problems(record: RunRecord, now: dt.datetime | None = None) -> list[str]:
    """Why resuming needs --force: finished, too old, plan edited since the checkpoint or
    gone, an iteration loop the record says is past its limit or halted for no known
    reason (what `iteration_problems` says of the bash side's iteration checkpoints)."""
    out = []
    if record.status == RunStatus.COMPLETE and record.baton.outcome is not None:
        ending = record.baton.outcome
        out.append(f"the workflow is already complete but needs attention ({ending.reason}): "
                   f"review {ending.debug_report or ending.test_output}, fix the issues, "
                   f"then re-run: {ending.rerun}")
    elif record.status == RunStatus.COMPLETE:
        out.append("the workflow is already complete")
    with contextlib.suppress(ValueError):
        age = (now or dt.datetime.now(dt.UTC)) - dt.datetime.fromisoformat(
            record.created_at.replace("Z", "+00:00"))
        if age > MAX_AGE:
            out.append(f"the checkpoint is {age.days} days old (max 7)")
    plan = record.workflow_state.plan_path if record.workflow_state else None
    if plan and Path(plan).is_file() and \
            plan_edited(Path(plan), record.baton.plan_sha256, record.baton.plan_progress_free):
        out.append(f"the plan {plan} was modified since the checkpoint (changed phases and "
                   "what depends on them will run again)")
    given = record.baton.paths.plan if record.baton.request.plan_path else None
    if given and not Path(given).is_file():  # --plan: no step of the run writes it again
        out.append(f"the plan {given} given to the run no longer exists")
    it = record.baton.iteration
    if it is not None:
        if it.max_iterations is not None and it.iteration > it.max_iterations:
            out.append(f"the record is at iteration {it.iteration}, past max_iterations "
                       f"{it.max_iterations}")
        if it.halt_reason is not None and it.halt_reason not in HALT_REASONS:
            out.append(f"the iteration loop halted for an unknown reason {it.halt_reason!r} "
                       f"(expected: {', '.join(sorted(HALT_REASONS))})")
    return out


def rewind(sm: WorkflowStateMachine, steps: Mapping[str, StepRecord], plans: PlanFiles,
           say: Callable[[str], None] | None = None) -> None:
    """Go back to the earliest state that has a finished step whose artifact was deleted
    (or whose inputs changed); later valid steps are skipped when their state runs."""
    earliest: State | None = None
    for sid, step in steps.items():
        if not step.done:
            continue
        reason = plans.invalid_reason(step)
        if reason is None:
            continue
        if say is not None:
            say(f"{sid}: {reason}; it will run again")
        st = State(step.state)
        if earliest is None or STATE_INDEX[st] < STATE_INDEX[earliest]:
            earliest = st
    current = sm.current
    if current in (State.COMPLETE, State.ABANDONED) or (
            earliest is not None and STATE_INDEX[earliest] < STATE_INDEX.get(current, 99)):
        target = earliest or current
        if target != current:
            sm.history.append(Transition(current, target, "resume: rewound to redo "
                                         "invalidated steps", utc_now()))
            sm.current = target
            sm.completed = [s for s in sm.completed
                            if STATE_INDEX.get(s, 0) < STATE_INDEX[target]]


def preview(workflow_id: str, entry: Entry, settings: WorkflowSettings, running: bool,
            root: Path | None = None, overrides: dict[str, Any] | None = None
            ) -> dict[str, Any]:
    """What `resume` would do from this checkpoint: the state it restarts in, the steps it
    skips, the steps it runs again and why, and the problems that need --force."""
    assert entry.data is not None, "the store returns only readable entries"
    record = baton_record(copy.deepcopy(entry.data), str(entry.path))
    sm = restore_machine(record)
    failed_state = sm.current
    plans = PlanFiles(root)
    skip, rerun = [], []
    for sid, step in record.baton.steps.items():
        reason = plans.invalid_reason(step) if step.done else (
            step.message or f"status {step.status}")
        if reason is None:
            skip.append({"step": sid, "state": step.state})
        else:
            rerun.append({"step": sid, "state": step.state, "reason": reason})
    rewind(sm, record.baton.steps, plans)
    out = {"workflow_id": workflow_id, "checkpoint": entry.sequence,
           "status": record.status, "failed_state": failed_state.value,
           "resume_state": sm.current.value, "skip": skip, "rerun": rerun,
           "problems": resume_problems(record), "running": running,
           "last_error": record.last_error,
           "signature": entry.trust, "untrusted": entry.distrust,
           "outside": paths_outside(root, record) if root is not None else []}
    cls = record.state_machine.classification  # what a resume keeps from the tiers
    out["classification"] = {"workflow_type": cls.workflow_type.value,
                             "research_complexity": cls.research_complexity,
                             "source": cls.source}
    pinned = record.baton.identity  # what the resume runs with (None: the configuration)
    out["runner"] = pinned.runner if pinned is not None else None
    max_iterations = settings.max_iterations
    asked = (overrides or {}).get("max-iterations")
    if isinstance(asked, int):  # this command's --set goes over the pinned value
        max_iterations = asked
    elif pinned is not None and isinstance(pinned.settings.get("max-iterations"), int):
        max_iterations = pinned.settings["max-iterations"]
    it = record.baton.iteration
    if it is not None and it.halt_reason != "completion":
        out["iteration"] = {"next": it.iteration + 1,
                            "max_iterations": max_iterations,
                            "work_remaining": it.work_remaining,
                            "halt_reason": it.halt_reason}
    return out


def preview_resume(root: Path, settings: WorkflowSettings, workflow_id: str,
                   at: int | None = None, overrides: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """`preview` of a workflow's latest (or `at`) checkpoint, with this command's `--set`
    workflow `overrides` over the run's pinned settings."""
    store = CheckpointStore(root, workflow_id)
    return preview(workflow_id, store.latest(at), settings, store.locked(), root, overrides)


def check_classification(run: Run) -> None:
    """The state file is the bash side's copy of the classification; when it disagrees
    with the checkpoint (edited, or left by another run) say so, log it, and trust the
    checkpoint — it is checksummed, the state file is not. The next save rewrites it."""
    cls = run.state_machine.classification
    values = classify.read_state_file(run.root, state_file_path(run.root, run.workflow_id))
    diffs = classify.mismatches(cls, values) if values else []
    if not diffs:
        return
    text = "; ".join(f"{k}: state file {a!r}, checkpoint {b!r}" for k, a, b in diffs)
    run.say(f"classification mismatch between the state file and the checkpoint ({text}); "
            "using the checkpoint")
    run.emit("classification_mismatch", differences=[
        {"key": k, "state_file": a, "checkpoint": b} for k, a, b in diffs])
    run.log_error("validate_classification_consistency", "state_error",
                  f"classification mismatch: {text}; the checkpoint wins",
                  {"differences": {k: {"state_file": a, "checkpoint": b}
                                   for k, a, b in diffs}})


def launched_before(run: Run) -> dict[str, dict[str, Any]]:
    """The agent steps the previous engine launched and had not recorded ({step: {attempt,
    at}}, from its `run.json`): `agent_step` keeps the work of one that finished."""
    assert run.store is not None
    found = (run.store.owner() or {}).get("launched")
    if not isinstance(found, dict):
        return {}
    return {str(k): v for k, v in found.items()
            if isinstance(v, dict) and isinstance(v.get("attempt"), int)
            and isinstance(v.get("at"), (int, float))}


def kill_orphans(run: Run) -> None:
    """Agents of a killed engine survive in their own process groups: stop them, but only
    processes /proc proves belong to this workflow (start time as recorded, the workflow's
    id and workspace in their environment); any other recorded pid is named, not
    signalled."""
    assert run.store is not None
    owned, refused = owned_agent_groups(run.store.owner(), run.workflow_id, run.root)
    for line in refused:
        run.say(line)
    for pgid in owned:
        run.say(f"stopping agent process group {pgid} left by the previous engine")
        kill_group(pgid, run.settings.kill_grace)

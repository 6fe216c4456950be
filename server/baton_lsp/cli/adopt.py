"""`baton adopt`: a Baton run record made from the bash system's checkpoint, original kept.

The bash orchestration system checkpoints a workflow as one JSON file; the engine resumes
only its own records (`.claude/data/checkpoints/<id>/NNNNNN.json`, with the `baton` section
`Engine._new_checkpoint` writes). Adoption writes the first record of a new run in exactly
that shape — the checkpoint's state mapped onto the engine's state machine (an implement or
build checkpoint counts *plan* phases: it is implementing, and its finished phases become
finished steps), the artifact paths pre-calculated as the initialize state does — so the
unchanged engine resumes it. The bash file is only read: the record names it with its
SHA-256 (`baton.adopted_from`), which is also how a second adoption is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PathError
from ..model.base import Kind
from ..model.checkpoint import Checkpoint, Classification, ErrorState
from ..model.config import DEFAULT_ROLE_AGENTS, BatonConfig
from ..model.plan import Plan
from ..model.states import PHASE_STATES, RunStatus, Scope, State, StepStatus
from ..parse import parse_bytes
from ..runs import confine
from ..runs.checkpoint import MIGRATED_REASONING, CheckpointError, LoadedCheckpoint
from ..runs.checkpoint import parse_checkpoint as validate_record
from ..runs.digest import sha256_file
from ..runs.foreign import (
    ForeignRun,
    adopted_by,
    adoptions,
    bash_state,
    read_run,
    resolve,
)
from ..runs.record import (
    AdoptedFrom,
    ClassifyRecord,
    HistoryRecord,
    PathsRecord,
    StepRecord,
)
from ..runs.store import CheckpointStore, WorkflowBusy, valid_id
from ..workflow.classify import (
    NEEDS_PLAN,
    classification_record,
    keyword_complexity,
    topic_slugs,
    topic_spec,
)
from ..workflow.layout import (
    allocate_topic,
    contained,
    file_lock,
    run_paths,
    specs_dir,
    topic_of_plan,
)
from ..workflow.request import (
    MAX_DESCRIPTION,
    RunRequest,
    derive_topics,
    new_record,
    new_workflow_id,
)
from ..workflow.state_machine import HAPPY_PATHS

COMMAND = "baton adopt"
PLAN_STATES = frozenset({State.IMPLEMENT, State.TEST, State.DEBUG, State.DOCUMENT})
"""States that work on an existing plan: adopting a checkpoint in one needs its plan."""
MAX_TOPICS = 4


class AdoptError(Exception):
    """Why a checkpoint is not adopted; the message says what to do instead."""


@dataclass
class AdoptRequest:
    token: str
    """A `bash:` id from `baton status`, or the checkpoint file's path."""
    plan: str | None = None
    """Rebind the plan (the checkpoint's is missing, moved, or outside the workspace)."""
    scope: Scope | None = None
    force: bool = False
    workflow_id: str | None = None


@dataclass
class Adopted:
    workflow_id: str
    record: Path
    source: ForeignRun
    state: State
    scope: Scope
    plan: str | None
    done_phases: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    forced: list[str] = field(default_factory=list)


def adopt(root: Path, config: BatonConfig, req: AdoptRequest, cwd: Path | None = None
          ) -> Adopted:
    """Write the new run's first record; raises `AdoptError` (nothing written) otherwise."""
    try:
        path = resolve(root, req.token, cwd)
        run, loaded, raw = read_run(root, path)
    except CheckpointError as exc:
        raise AdoptError(str(exc)) from None
    with file_lock(root, root / ".claude" / "data" / "locks" / "adopt.lock"):
        prior = adopted_by(run, adoptions(root))
        if prior is not None:
            raise AdoptError(f"{run.id} ({path}) was already adopted as workflow {prior}; "
                             f"resume that one with `baton resume {prior}`")
        return _write(root, config, req, run, loaded, raw)


def _write(root: Path, config: BatonConfig, req: AdoptRequest, run: ForeignRun,
           loaded: LoadedCheckpoint, raw: bytes) -> Adopted:
    cp = loaded.checkpoint
    assert isinstance(cp, Checkpoint)
    where = bash_state(loaded)
    scope = req.scope or where.scope
    state = where.state
    notes: list[str] = []
    if state == State.ABANDONED:
        raise AdoptError(f"{run.id}: the bash workflow was abandoned; there is nothing to "
                         "resume")
    reachable = {State.INITIALIZE, State.COMPLETE, *HAPPY_PATHS[scope]}
    if scope in (Scope.FULL_IMPLEMENTATION, Scope.TEST_AND_DEBUG):
        reachable.add(State.DEBUG)
    if state not in reachable:
        raise AdoptError(f"{run.id} is in state {state.value}, which scope {scope.value} "
                         "never reaches; pass --scope (one whose states include it)")
    refusals = []  # every reason at once, so they are fixed in one go
    plan, plan_doc = None, None
    try:
        plan, plan_doc = _plan(root, req, run, scope, state, notes)
    except AdoptError as exc:
        refusals.append(str(exc))
    if run.problems and not req.force:
        refusals.append("not safe to resume: " + "; ".join(run.problems) + " (as "
                        "check_safe_resume_conditions judges it; --force adopts anyway)")
    if refusals:
        raise AdoptError(f"not adopting {run.id}: " + "; and ".join(refusals))
    done = _done_phases(run, plan_doc, notes) if where.plan_phases else []
    wid = req.workflow_id or new_workflow_id(scope)
    if not valid_id(wid):
        raise AdoptError(f"invalid workflow id {wid!r}: use letters, digits, `_`, `-`, `.`")
    store = CheckpointStore(root, wid)
    if store.dir.exists() and any(store.dir.glob("*.json")):
        raise AdoptError(f"workflow {wid} already exists; choose another --id")
    data = _record(root, config, wid, run, loaded, raw, scope, state, plan, done, notes,
                   forced=run.problems if req.force else ())
    try:
        validate_record(json.dumps(data), f"the record adopting {run.id}")
    except CheckpointError as exc:  # pragma: no cover - a bug here, said plainly
        raise AdoptError(f"cannot adopt {run.id}: the new record would not load: {exc}") \
            from None
    try:
        store.acquire()
    except WorkflowBusy as exc:
        raise AdoptError(str(exc)) from None
    try:
        record = store.save(data, f"adopted from {run.id}")
    finally:
        store.release()
    return Adopted(wid, record, run, state, scope, plan, done, notes,
                   list(run.problems) if req.force else [])


def _plan(root: Path, req: AdoptRequest, run: ForeignRun, scope: Scope, state: State,
          notes: list[str]) -> tuple[str | None, Plan | None]:
    """The plan the adopted run works on: `--plan`, else the checkpoint's; refused when the
    state needs one that is missing or outside the workspace."""
    needs = scope in NEEDS_PLAN or state in PLAN_STATES
    if req.plan is not None:
        try:
            plan = contained(root, Path(os.path.abspath(req.plan)), "--plan")
        except PathError as exc:
            raise AdoptError(str(exc)) from None
        if not plan.is_file():
            raise AdoptError(f"--plan {req.plan}: no such file")
        if run.plan and os.path.realpath(run.plan) != os.path.realpath(plan):
            notes.append(f"plan rebound from {run.plan} to {plan}")
    elif run.plan and os.path.isfile(run.plan):
        try:
            plan = contained(root, run.plan, "plan")
        except PathError:
            raise AdoptError(f"the plan {run.plan} that {run.id} names is outside the "
                             f"workspace {root}; copy it in and pass `--plan PATH`") from None
    elif needs:
        if run.plan:
            raise AdoptError(f"the plan {run.plan} that {run.id} names does not exist; "
                             f"rebind it: `baton adopt {run.id} --plan PATH` (a plan inside "
                             "the workspace)")
        raise AdoptError(f"{run.id} names no plan and its {state.value} state works on one; "
                         f"pass `--plan PATH`")
    else:
        if run.plan:
            notes.append(f"the plan {run.plan} it names does not exist; the plan state "
                         "writes a new one")
        return None, None
    doc = _parse_plan(root, plan)
    if isinstance(doc, str):
        if needs:
            raise AdoptError(doc + (" (pass another with --plan)" if req.plan is None else ""))
        notes.append(doc)
        return str(plan), None
    return str(plan), doc


def _parse_plan(root: Path, path: Path) -> Plan | str:
    try:  # a FIFO is refused, a link out of the workspace named and never read
        raw = confine.read_bytes(root, path)
    except OSError as exc:
        return f"cannot read the plan {path}: {confine.describe(exc)}"
    doc = parse_bytes(Kind.PLAN, raw, str(path))
    if not isinstance(doc, Plan):
        return f"the plan {path} cannot be read: {getattr(doc, 'reason', 'not a plan')}"
    if not doc.phases:
        return f"the plan {path} has no phases (expected `### Phase N: Title` headings)"
    return doc


def _done_phases(run: ForeignRun, plan: Plan | None, notes: list[str]) -> list[str]:
    """The checkpoint's completed plan phases that the plan has (the others are said)."""
    if plan is None:
        return []
    ids = [p.id for p in plan.phases]
    done = [str(n) for n in run.completed_phases if str(n) in ids]
    unknown = [str(n) for n in run.completed_phases if str(n) not in ids]
    if unknown:
        notes.append(f"completed phase{'s' if len(unknown) > 1 else ''} "
                     f"{', '.join(unknown)} of the checkpoint not in the plan: ignored")
    if run.total_phases and run.total_phases != len(set(ids)):
        notes.append(f"the checkpoint counted {run.total_phases} phases; the plan has "
                     f"{len(set(ids))}")
    return list(dict.fromkeys(done))


def _classification(run: ForeignRun, loaded: LoadedCheckpoint, scope: Scope,
                    description: str, now: str) -> dict[str, Any]:
    """The checkpoint's classification kept where it has one (topics, confidence), else the
    engine's keyword derivation, as `classification_record` writes it."""
    sm = loaded.data.get("state_machine") or {}
    old = found if isinstance(found := sm.get("classification"), dict) else {}
    topics = []
    for t in old.get("research_topics") or []:
        if isinstance(t, dict) and isinstance(t.get("short_name"), str) and t["short_name"]:
            topics.append(t if t.get("detailed_description") and t.get("filename_slug")
                          else topic_spec(t["short_name"], description))
        elif isinstance(t, str) and t.strip():
            topics.append(topic_spec(t, description))
    reasoning = old.get("reasoning") if isinstance(old.get("reasoning"), str) else None
    migrated = reasoning == MIGRATED_REASONING
    if not topics:
        complexity = old.get("research_complexity")
        if migrated or not isinstance(complexity, int) or not 1 <= complexity <= 4:
            complexity = keyword_complexity(description)
        topics = [topic_spec(t, description) for t in derive_topics(description, complexity)]
    confidence = old.get("confidence")
    return classification_record(
        scope=scope, topics=topics[:MAX_TOPICS],
        confidence=float(confidence) if isinstance(confidence, int | float) and
        not isinstance(confidence, bool) and 0 <= confidence <= 1 else 0.0,
        reasoning=f"adopted from the bash system's checkpoint {run.id}"
        + (f": {reasoning}" if reasoning and not migrated else ""),
        source="adopted", at=now)


def _paths(root: Path, config: BatonConfig, description: str, plan: str | None,
           classification: dict[str, Any]) -> dict[str, Any]:
    """What the initialize state pre-calculates (`Engine._initialize`): a run adopted past
    initialize never runs it, and its later states read these paths."""
    settings = config.workflow
    runners = {settings.role(r).runner or settings.runner for r in DEFAULT_ROLE_AGENTS}
    try:
        base = specs_dir(root, settings.specs_dir, claude="claude" in runners)
        topic = topic_of_plan(root, Path(plan), base) if plan else \
            allocate_topic(root, description, base)
        paths = run_paths(root, topic, topic_slugs(classification), plan)
    except (PathError, OSError) as exc:  # the disk may refuse a directory
        raise AdoptError(f"cannot pre-calculate the run's paths: {exc}") from None
    return {"specs_dir": str(base), **paths}


_STATUS = {"in_progress": RunStatus.IN_PROGRESS, "failed": RunStatus.FAILED,
           "cancelled": RunStatus.CANCELLED, "complete": RunStatus.COMPLETE,
           "completed": RunStatus.COMPLETE}
"""The bash system's statuses as a Baton record's (`completed` is the bash side's word)."""


def _record(root: Path, config: BatonConfig, wid: str, run: ForeignRun,
            loaded: LoadedCheckpoint, raw: bytes, scope: Scope, state: State,
            plan: str | None, done: list[str], notes: list[str],
            forced: tuple[str, ...]) -> dict[str, Any]:
    """The new run's first checkpoint: the engine's own first record (`new_record`, as if
    the user had given scope, topics and plan), moved to where the bash run stands, as
    the dict the store saves."""
    cp = loaded.checkpoint
    assert isinstance(cp, Checkpoint)
    where = bash_state(loaded)
    description = (cp.workflow_description or "").replace("\x00", "").strip()[
        :MAX_DESCRIPTION] or f"{cp.workflow_type} workflow {cp.checkpoint_id}"
    record = new_record(wid, RunRequest(description, scope=scope, plan_path=plan),
                        project=root.name, settings=config.workflow, command=COMMAND)
    now = record.created_at
    classification = _classification(run, loaded, scope, description, now)
    baton = record.baton
    baton.request.complexity = classification["research_complexity"]
    baton.request.topics = [t["short_name"] for t in classification["research_topics"]]
    baton.classify = ClassifyRecord(agent=False, done=True, explicit={
        "scope": True, "complexity": True, "topics": True})
    completed: list[State] = [s for s in where.completed_states if s != State.INITIALIZE]
    if state != State.INITIALIZE and state not in completed:
        completed.append(state)
    last_error = cp.last_error if cp.last_error not in (None, False) else (
        cp.error_state.last_error if cp.error_state.last_error not in (None, False) else None)
    status = _STATUS.get(cp.status, RunStatus.IN_PROGRESS)
    sm = record.state_machine
    sm.current_state, sm.completed_states = state, completed
    sm.classification = Classification.model_validate(classification)
    record.status, record.last_error = status, last_error
    record.current_phase = PHASE_STATES.index(state) if state in PHASE_STATES else 0
    record.completed_phases = sorted({PHASE_STATES.index(s) for s in completed
                                      if s in PHASE_STATES})
    record.debug_iteration_count = int(getattr(cp, "debug_iteration_count", 0) or 0)
    record.error_state = ErrorState(
        last_error=last_error, retry_count=0,
        failed_state=state if status == RunStatus.FAILED else None)
    what = run.phase_text() or f"state {where.state.value}"
    if state != State.INITIALIZE:
        baton.history = [HistoryRecord(
            source=State.INITIALIZE.value, target=state.value, at=now,
            reason=f"adopted from the bash system's checkpoint {run.id} ({what})")]
        paths = _paths(root, config, description, plan, classification)
        baton.paths = PathsRecord.model_validate(paths)
        ws = record.workflow_state
        assert ws is not None, "new_record writes a workflow_state"
        ws.plan_path = paths["plan"]
        ws.topic_directory, ws.topic_number = paths["topic_dir"], paths["topic_number"]
        record.topic_directory = paths["topic_dir"]
        record.topic_number = paths["topic_number"]
    baton.steps = {f"implement.phase-{pid}": StepRecord.model_validate({
        "state": State.IMPLEMENT.value, "role": "implement", "status": StepStatus.DONE,
        "attempts": 0, "artifact": None, "inputs": {}, "adopted": True,
        "message": f"completed by the bash system (adopted from {run.id})"}) for pid in done}
    if plan and os.path.isfile(plan):  # what the engine records at every save
        record.plan_modification_time = int(os.stat(plan).st_mtime)
        baton.plan_sha256 = sha256_file(Path(plan), root)
    baton.adopted_from = AdoptedFrom.model_validate({
        "path": str(run.path), "id": run.id, "sha256": hashlib.sha256(raw).hexdigest(),
        "size": len(raw), "schema_version": loaded.source_version,
        "checkpoint_id": cp.checkpoint_id, "workflow_type": cp.workflow_type,
        "status": cp.status, "created_at": cp.created_at, "updated_at": cp.updated_at,
        "state": where.state.value,
        "phases": {"current": where.current_phase, "total": where.total_phases,
                   "completed": list(where.completed_phases),
                   "counts": "plan" if where.plan_phases else "state"},
        "plan_path": cp.workflow_state.plan_path if cp.workflow_state else None,
        "forced": list(forced), "notes": list(notes), "adopted_at": now})
    return record.model_dump(mode="json", by_alias=True, exclude_unset=True)

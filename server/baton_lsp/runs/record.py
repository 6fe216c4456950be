"""The run record: a checkpoint written by `baton run`, typed.

A Baton checkpoint is a schema-2.1 checkpoint (the bash side reads it as one) plus Baton's
own `baton` section: the request, every step with its attempts, artifact and hashes, the
transition history, the pre-calculated paths, timing, usage, the coordination tiers'
records and the failure. This module is the one reader of that section: the follower, the
status command, the end-of-run report and the resume preview all go through `RunRecord`.
Every model keeps unknown keys (a newer Baton's record still reads) and every field has a
default, so a record with a missing part reads as "not there yet", not as an error.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..model.checkpoint import Checkpoint
from ..model.states import PhaseMode, PhaseStatus, RunStatus, StepStatus
from . import confine
from .checkpoint import format_validation_error


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


class PhaseGit(_Open):
    """Where a phase's work is in git (a workspace in a git repository, `isolation =
    "worktree"`)."""

    mode: PhaseMode = PhaseMode.WORKTREE
    branch: str | None = None
    worktree: str | None = None
    base: str | None = None
    """The commit the phase started from (its worktree's, or HEAD for an in-place phase)."""
    commit: str | None = None
    """The phase's own commit; None when the agent changed nothing."""
    merged: str | None = None
    """The commit on the user's branch that holds the phase (its merge commit)."""
    status: PhaseStatus = PhaseStatus.RUNNING
    conflicts: list[str] = []
    """Files the merge left conflicted (repository-relative)."""
    target: str | None = None
    """The branch the phase is merged into (None: a detached HEAD)."""
    top: str | None = None
    """The repository's top level (the paths above are relative to it)."""
    shipped: dict[str, str] | None = None
    """The bundle a worker on another machine returned for the phase ({bundle, key}):
    where it is kept, so a resume lands the same work again."""


class StepRecord(_Open):
    """One step: an agent step (research.N, plan, implement.phase-N, …) or the test run."""

    state: str = ""
    role: str = ""
    status: StepStatus = StepStatus.PENDING
    attempts: int = 0
    artifact: str | None = None
    inputs: dict[str, str | None] = {}
    sha256: str | None = None
    size: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_ms: int | None = None
    failure: str | None = None  # transient | permanent | fatal
    message: str | None = None
    signals: list[str] = []
    usage: dict[str, Any] | None = None
    context: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    brief: dict[str, Any] | None = None
    via: str | None = None
    """Written on behalf of another step (a research worker of the supervisor agent)."""
    barrier: dict[str, Any] | None = None
    """A failed hard barrier's kind (`error`) and the path the agent reported, if any."""
    git: PhaseGit | None = None
    updated_files: list[str] | None = None
    """The files a document agent listed in `DOCUMENTATION_UPDATED:` (its artifacts)."""
    worker: str | None = None
    """The Dask worker that ran its last attempt (`executor = "dask"`); None: this machine."""
    workers: dict[str, str] | None = None
    """{attempt: the Dask worker's address} of every attempt a worker ran."""
    process_ms: float | None = None
    """The last attempt's agent process wall time (the step's `duration_ms` adds Baton's
    launch and wait around it)."""
    notes: list[str] | None = None
    """What the run said once about the step (a model without a price for the budget)."""
    attempt_usage: list[dict[str, object]] | None = None
    """Per attempt what it cost ({attempt, ended, and the usage keys}): failed attempts
    are paid for too, and `usage` is their sum."""
    kept: str | None = None
    """Why the step is done without its agent being run again (the work an agent left
    before the engine that launched it stopped)."""
    topic: str | None = None
    """The research topic of a report a supervisor agent wrote (`via`)."""
    invocations: list[dict[str, str]] | None = None
    """The research coordinator's checked invocation plan ({topic, report_path})."""
    classification: dict[str, object] | None = None
    """The classifier agent's answer (`classify`), kept so a resume need not ask again."""
    exit_code: int | None = None
    """The test command's exit code (a `test.N` step)."""
    passed: bool | None = None
    """The test command passed: exit code 0, not timed out (a `test.N` step)."""
    command: list[str] | None = None
    """The test command run (a `test.N` step)."""

    @property
    def done(self) -> bool:
        return self.status == StepStatus.DONE


def unset(model: BaseModel, *names: str) -> None:
    """Take fields off a record as `dict.pop` took keys off the old dicts: each goes back
    to its default and out of `model_fields_set`, so an `exclude_unset` dump leaves it out
    (an unknown key a foreign record brought is dropped). A name the model does not know
    and does not hold is ignored, as `pop(key, None)` was."""
    fields = type(model).model_fields
    extra = model.__pydantic_extra__
    for name in names:
        if name in fields:
            setattr(model, name, fields[name].get_default(call_default_factory=True))
            model.__pydantic_fields_set__.discard(name)
        elif extra is not None:
            extra.pop(name, None)


class RequestRecord(_Open):
    description: str = ""
    scope: str | None = None
    complexity: int | None = None
    topics: list[str] = []
    plan_path: str | None = None


class PathsRecord(_Open):
    """Every path pre-calculated in initialize, before any agent runs. The fields are in
    the order the engine fixes them (the specs directory first), which is the order the
    engine's typed copy writes them in."""

    specs_dir: str | None = None
    topic_dir: str | None = None
    topic_number: int | None = None
    reports: list[str] = []
    plan: str | None = None
    reports_dir: str | None = None
    plans_dir: str | None = None
    summaries_dir: str | None = None
    debug_dir: str | None = None


class HistoryRecord(_Open):
    source: str = Field("", alias="from")
    target: str = Field("", alias="to")
    reason: str = ""
    at: str = ""


class FailureRecord(_Open):
    step: str | None = None
    failure_class: str | None = Field(None, alias="class")
    message: str | None = None
    type: str | None = None
    context: dict[str, Any] = {}


class IterationRecord(_Open):
    """Where the implement iteration loop stands. The fields are in the order the loop
    first writes them, which is the order the engine's typed copy writes them in."""

    iteration: int = 0
    continuation_context: str | None = None
    work_remaining: str | list[Any] | None = None
    last_work_remaining: str | list[Any] | None = None
    unchanged: int = 0
    halt_reason: str | None = None
    context_tokens: int = 0
    history: list[dict[str, Any]] = []
    max_iterations: int | None = None
    context_exhausted: bool | None = None
    """The coordinator's last brief said its context is exhausted."""
    context_usage_percent: int | None = None


class ResearchRecord(_Open):
    reports_ok: int | None = None
    reports_total: int | None = None
    mode: str | None = None
    partial: bool = False
    failed_topics: list[str] = []
    wall_ms: int | None = None


class AdoptedFrom(_Open):
    path: str | None = None
    sha256: str | None = None


class IdentityRecord(_Open):
    """Who runs the workflow, fixed when it starts: the runner, the models and every
    effective workflow setting (the configuration with `--set` applied). A resume uses
    them — not whatever the workspace's configuration says by then — unless its own
    `--runner`/`--set` override them, which it says and records here."""

    runner: str | None = None
    runner_from: str | None = None
    """Where the runner came from: --runner, --set, configuration, auto (and, after a
    resume overrode it, that resume's flag)."""
    models: dict[str, str] = {}
    """Role → the model its agent asks for, as the run started (informational)."""
    settings: dict[str, Any] = {}
    """`[workflow]` as the run used it, kebab-case keys like the configuration files."""
    overrides: dict[str, Any] = {}
    """The `--set workflow.*` values given to the run and to each resume."""


NEEDS_ATTENTION = "needs_attention"
"""The outcome of a workflow that ended `complete` with its tests still failing (`debug-mode
= "report"`, the seeds' ending): finished, nothing to resume, not a success."""


class OutcomeRecord(_Open):
    """How a `complete` workflow ended when that is not plain success (`baton.outcome`)."""

    status: str = NEEDS_ATTENTION
    reason: str = ""
    debug_report: str | None = None
    """The debug report to review (None: `max-debug-iterations = 0`, no debug agent ran)."""
    test_output: str | None = None
    rerun: str = ""
    """The command that runs the workflow again once the issues are fixed."""


class ClassifyRecord(_Open):
    """Whether the request is classified by an agent and where that stands
    (`baton.classify`). The fields are in the order the engine first writes them."""

    agent: bool = False
    """A classifier agent is configured and the flags did not settle the request."""
    done: bool = True
    explicit: dict[str, bool] = {}
    """Which of scope, complexity and topics the user gave as flags (the agent keeps them)."""
    announced: bool = False
    """The classification was said and saved once (a resume does not say it again)."""


class UsageTotals(_Open):
    """`baton.usage`: what the agent CLIs reported the steps cost, per state and for the
    workflow, each a usage record of `workflow.accounting.USAGE_KEYS` (dollars, tokens,
    turns: numbers, only those reported)."""

    states: dict[str, dict[str, int | float]] = {}
    total: dict[str, int | float] = {}


class ContextRow(_Open):
    """What the steps of a state (or of the workflow) passed up into the orchestrator's
    context against the artifacts they wrote, in characters and estimated tokens."""

    steps: int = 0
    passed_chars: int = 0
    passed_tokens: int = 0
    artifact_chars: int = 0
    artifact_tokens: int = 0
    reduction_pct: float | None = None
    """The share of the artifacts the orchestrator did not read (None: no artifact)."""


class ContextTotals(_Open):
    """`baton.context`: the context account per state and for the workflow."""

    states: dict[str, ContextRow] = {}
    total: ContextRow = Field(default_factory=ContextRow)


class BatonSection(_Open):
    version: str | None = None
    request: RequestRecord = Field(default_factory=RequestRecord)
    classify: ClassifyRecord = Field(default_factory=ClassifyRecord)
    steps: dict[str, StepRecord] = {}
    history: list[HistoryRecord] = []
    paths: PathsRecord = Field(default_factory=PathsRecord)
    timing: dict[str, int] = {}
    usage: UsageTotals | None = None
    context: ContextTotals | None = None
    failure: FailureRecord | None = None
    iteration: IterationRecord | None = None
    research: ResearchRecord | None = None
    plan_sha256: str | None = None
    plan_progress_free: str | None = None
    """SHA-256 of the plan without its progress (status markers, task boxes, metadata
    Status): a plan that differs from `plan_sha256` only in those was not edited."""
    resumed_from: int | None = None
    adopted_from: AdoptedFrom | None = None
    agent_clis: dict[str, Any] | None = None
    reconciled: list[dict[str, Any]] = []
    """What this run found another (or an earlier) run left in the repository when it died
    and what it did about it ({at, what}), for `baton status` and the editor."""
    outcome: OutcomeRecord | None = None
    state_failures: dict[str, int] = {}
    """Times the workflow failed in each state, over its runs and resumes (the seeds'
    per-state retry counter behind "Retry k/2 available")."""
    """Set when the workflow ended `complete` but needs attention (tests still failing)."""
    identity: IdentityRecord | None = None
    """None in checkpoints of a Baton before run identities were pinned."""
    event: str | None = None
    """The label of the save that wrote this checkpoint ("step plan done", …)."""

    def usage_total(self) -> dict[str, int | float] | None:
        """The workflow's reported cost and tokens, None when no agent reported any."""
        total = self.usage.total if self.usage is not None else None
        return dict(total) if total else None


class RunRecord(Checkpoint):
    """A checkpoint as `baton run` writes it: schema 2.1 plus the `baton` section. The
    engine holds one (`workflow.run.Run.record`) and dumps it at each save."""

    status: RunStatus
    """One of the four a checkpoint records (never `interrupted` or `unreadable`)."""
    # The tiers typed here, the one definition the engine and the readers share; the
    # light check's `Checkpoint` keeps the seeds' free-form object (mypy: a narrower
    # field than the base's dict, deliberately).
    supervisor_state: SupervisorState = Field(  # type: ignore[assignment]
        default_factory=lambda: SupervisorState())
    """`supervisor_state` by tier; an old flat research section reads nested."""
    baton: BatonSection = Field(default_factory=BatonSection)

    @field_validator("supervisor_state", mode="before")
    @classmethod
    def _nested(cls, value: object) -> object:
        """Baton before the seeds' nesting wrote the research supervisor's section flat
        (its `supervisor_id` at the top): read as the research tier, seed 001's fields
        filled in."""
        if isinstance(value, Mapping) and isinstance(value.get("supervisor_id"), str):
            return {RESEARCH_SUPERVISOR: seed_fields(value)}
        return value

    @property
    def scope(self) -> str:
        return self.state_machine.workflow_config.scope.value

    @property
    def state(self) -> str:
        return self.state_machine.current_state.value

    @property
    def plan(self) -> str | None:
        return self.baton.paths.plan or (self.workflow_state.plan_path
                                          if self.workflow_state else None)

    def waves(self) -> list[list[str]]:
        """The plan's waves as recorded (`workflow_state.wave_structure`), phase ids as text."""
        raw = self.workflow_state.wave_structure if self.workflow_state is not None else None
        items = sorted((raw or {}).items(),
                       key=lambda kv: int(kv[0]) if str(kv[0]).isdigit() else 0)
        return [[str(p) for p in phases] for _, phases in items]


def named_paths(record: RunRecord) -> Iterator[tuple[str, str]]:
    """Every path a record names that a resume would write to, read, or hand to an agent:
    (field, path)."""
    baton = record.baton
    paths = baton.paths
    for name in ("topic_dir", "plan", "reports_dir", "plans_dir", "summaries_dir",
                 "debug_dir", "specs_dir"):
        value = getattr(paths, name)
        if value:
            yield f"baton.paths.{name}", value
    for i, report in enumerate(paths.reports):
        yield f"baton.paths.reports[{i}]", report
    if baton.request.plan_path:
        yield "baton.request.plan_path", baton.request.plan_path
    ws = record.workflow_state
    for name, value in (("workflow_state.plan_path", ws.plan_path if ws else None),
                        ("workflow_state.topic_directory", ws.topic_directory if ws else None),
                        ("topic_directory", record.topic_directory),
                        ("debug_report_path", record.debug_report_path)):
        if value:
            yield name, value
    for sid, step in baton.steps.items():
        if step.artifact:
            yield f"baton.steps.{sid}.artifact", step.artifact
        for i, name in enumerate(step.updated_files or []):
            yield f"baton.steps.{sid}.updated_files[{i}]", name
        for i, name in enumerate(step.inputs):
            yield f"baton.steps.{sid}.inputs[{i}]", name
        if step.git is not None and step.git.worktree:
            yield f"baton.steps.{sid}.git.worktree", step.git.worktree
    if baton.iteration is not None and baton.iteration.continuation_context:
        yield "baton.iteration.continuation_context", baton.iteration.continuation_context


def paths_outside(root: Path, record: RunRecord) -> list[str]:
    """The record's paths that are not places inside the workspace `root` (not below it,
    or resolving out of it through a link), each as `field: why`. A resume refuses a
    record with any: checked on every load, signed or not, since a workspace moved since
    the run is as wrong a place to write as an attacker's."""
    out = []
    for name, value in named_paths(record):
        why = confine.outside(root, value)
        if why is not None:
            out.append(f"{name}: {why}")
    return out


RESEARCH_SUPERVISOR = "research_supervisor"
"""`supervisor_state`'s key for the research tier, as seed 001's schema v2.0 names it."""
IMPLEMENTATION_SUPERVISOR = "implementation_supervisor"
TESTING_SUPERVISOR = "testing_supervisor"
SUPERVISOR_TIERS = (RESEARCH_SUPERVISOR, IMPLEMENTATION_SUPERVISOR, TESTING_SUPERVISOR)


class SupervisorWorker(_Open):
    """One worker of a supervisor tier, seed 001's fields (`worker_id`, `topic`, `status`,
    `output_path`, `duration_ms`, `metadata`) with Baton's context account and error."""

    worker_id: str | None = None
    topic: str | None = None
    status: str | None = None
    output_path: str | None = None
    duration_ms: int | float | None = None
    metadata: dict[str, object] | None = None
    context_tokens: int | None = None
    error: str | None = None


class SupervisorAggregate(_Open):
    """What a tier passes up instead of its workers' artifacts (`aggregated_metadata`)."""

    summary: str | None = None
    key_findings: list[str] = []
    total_duration_ms: int | float | None = None
    context_tokens: int | None = None


class SupervisorTier(_Open):
    """A tier's section of `supervisor_state`: the fields seed 001's schema v2.0 gives every
    supervisor checkpoint. Baton writes them in `mode` "supervisor" (or "agent", the
    research supervisor agent)."""

    supervisor_id: str | None = None
    supervisor_name: str | None = None
    mode: str | None = None
    timestamp: str | None = None
    trigger: dict[str, object] | None = None
    """Why the tier is hierarchical: the seeds' measures and thresholds."""
    worker_count: int | None = None
    worker_status: list[str] = []


class ResearchAggregate(SupervisorAggregate):
    topics_researched: int | None = None
    reports_count: int | None = None
    """The real SUPERVISOR_CHECKPOINT.json's name for `topics_researched`."""
    reports_created: list[str] = []
    reports_failed: list[str] = []


class ResearchSupervisor(SupervisorTier):
    """`supervisor_state.research_supervisor`: a worker per research topic."""

    workers: list[SupervisorWorker] = []
    topics_researched: int | None = None
    """SUPERVISOR_COMPLETE's place for the count (`.research_supervisor.topics_researched`)."""
    aggregated_metadata: ResearchAggregate = Field(default_factory=ResearchAggregate)


class ImplementationWorker(SupervisorWorker):
    """A plan phase as the implementation supervisor tracks it."""

    phase: str | None = None
    title: str | None = None
    tracks: list[str] = []
    files_planned: list[str] = []
    files_modified: list[str] | None = None
    """From git when the phase committed (None: not known)."""


class Track(_Open):
    """One domain track (frontend, backend, testing) of the implementation supervisor."""

    phases: list[str] = []
    files_modified: list[str] = []
    duration_ms: int | float | None = None
    status: str | None = None


class ImplementationAggregate(SupervisorAggregate):
    tracks_completed: list[str] = []
    phases_completed: list[str] = []
    summaries_created: list[str | None] = []
    files_modified: list[str] = []
    sequential_duration_ms: int | float | None = None
    time_savings_pct: float | None = None


class ImplementationSupervisor(SupervisorTier):
    """`supervisor_state.implementation_supervisor`: a worker per phase, work by domain."""

    tracks: dict[str, Track] = {}
    workers: list[ImplementationWorker] = []
    aggregated_metadata: ImplementationAggregate = Field(
        default_factory=ImplementationAggregate)


class TestingStage(_Open):
    """A stage of the testing supervisor: generation, execution or validation."""

    stage: str | None = None
    status: str | None = None


class TestingAggregate(SupervisorAggregate):
    total_tests: int | None = None
    tests_found: int | None = None
    passed: int | None = None
    failed: int | None = None
    skipped: int | None = None
    coverage_pct: float | None = None
    test_types: list[str] = []
    failures: list[str] = []
    tests_passing: bool | None = None


class TestingSupervisor(SupervisorTier):
    """`supervisor_state.testing_supervisor`: the three sequential stages."""

    stages: list[TestingStage] = []
    aggregated_metadata: TestingAggregate = Field(default_factory=TestingAggregate)


class SupervisorState(_Open):
    """`supervisor_state` by tier (seed 001's nesting); a tier not there is None, and a key
    this Baton does not know is kept."""

    research_supervisor: ResearchSupervisor | None = None
    implementation_supervisor: ImplementationSupervisor | None = None
    testing_supervisor: TestingSupervisor | None = None


def seed_fields(section: Mapping[str, object]) -> dict[str, object]:
    """A research section with seed 001's `worker_status` and `topics_researched` filled in
    from Baton's own fields where an older Baton wrote only those (`workers`,
    `reports_count`). A part of the wrong kind (a hostile or corrupt checkpoint) is left as
    it is, for validation to refuse naming the field."""
    out = dict(section)
    found = out.get("aggregated_metadata")
    if found is not None and not isinstance(found, Mapping):
        return out
    agg = dict(found or {})
    workers = out.get("workers") or []
    if isinstance(workers, list):
        out.setdefault("worker_status", [str(w.get("status")) for w in workers
                                         if isinstance(w, Mapping)])
    created = agg.get("reports_created") or []
    count = agg.get("topics_researched", agg.get(
        "reports_count", len(created) if isinstance(created, list) else None))
    agg.setdefault("topics_researched", count)
    out.setdefault("topics_researched", count)
    out["aggregated_metadata"] = agg
    return out


def nest_supervisor_state(data: dict[str, Any]) -> bool:
    """Move an old record's flat research section under `research_supervisor` (in place),
    so a resumed run writes the seeds' shape; True when something moved."""
    state = data.get("supervisor_state")
    if not isinstance(state, dict) or not isinstance(state.get("supervisor_id"), str):
        return False
    data["supervisor_state"] = {RESEARCH_SUPERVISOR: seed_fields(state)}
    return True


class RecordError(Exception):
    """A checkpoint that is not a readable run record; the message names the field."""


def read_record(data: Mapping[str, object], source: str = "<checkpoint>") -> RunRecord:
    """The typed record of a checkpoint's data (already checksum-verified by the store),
    its supervisor tiers included."""
    try:
        return RunRecord.model_validate(data)
    except ValidationError as exc:
        raise RecordError(f"{source}: {format_validation_error(exc, data)}") from None

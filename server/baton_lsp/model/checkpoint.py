"""Checkpoint documents: every schema version of `checkpoint-utils.sh` plus the side flavours.

The main chain is 1.0 → 1.1 → 1.2 → 1.3 → 2.0 → 2.1; each version model extends the previous
one, so the canonical in-memory form (`Checkpoint`, schema 2.1) still carries the 1.x fields
that `save_checkpoint` keeps writing for compatibility. The build-iteration checkpoint (flat,
`version: "2.1"`) and the research supervisor checkpoint are separate documents.

Every model allows unknown keys (`extra="allow"`): real files carry whatever the caller's state
JSON held, and a migration must never drop it. Timestamps stay strings so a file round-trips
byte-for-byte in meaning; the workflow layer parses them where it needs a time.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .states import (
    STATE_NAMES,
    STORED_TRANSITIONS,
    Scope,
    State,
)


class HaltReason(StrEnum):
    """Why a build iteration stopped; other values only earn a warning."""

    CONTEXT_THRESHOLD = "context_threshold"
    MAX_ITERATIONS = "max_iterations"
    STUCK = "stuck"
    COMPLETION = "completion"
    USER_ABORT = "user_abort"
    ERROR = "error"


class _Open(BaseModel):
    """Keeps unknown keys so that load → migrate → write loses nothing. Pydantic, not the
    light `base.Model`: checkpoints are untrusted JSON to validate (this module is imported
    only when a checkpoint is read or written)."""

    model_config = ConfigDict(extra="allow", defer_build=True)


# --- pieces of the 1.x layout ---------------------------------------------------------------


class WaveResult(_Open):
    phases: list[int | str] = []
    status: str | None = None
    duration_ms: int | float | None = None
    parallel: bool | None = None


class WorkflowState(_Open):
    """The caller's free-form state JSON; only the documented keys are typed."""

    plan_path: str | None = None
    current_phase: int | None = None
    topic_directory: str | None = None
    topic_number: int | str | None = None
    template_source: str | None = None
    template_variables: dict[str, Any] | None = None
    current_wave: int | None = None
    total_waves: int | None = None
    wave_structure: dict[str, list[int | str]] | None = None
    parallel_execution_enabled: bool | None = None
    max_wave_parallelism: int | None = None
    wave_results: dict[str, WaveResult] | None = None


class ReplanEntry(_Open):
    phase: int | None = None
    timestamp: str | None = None
    reason: str | None = None


class ContextPreservation(_Open):
    pruning_log: list[Any] = []
    artifact_metadata_cache: dict[str, Any] = {}
    subagent_output_references: list[Any] = []


class SpecMaintenance(_Open):
    parent_plan_path: str | None = None
    grandparent_plan_path: str | None = None
    spec_updater_invocations: list[Any] = []
    checkbox_propagation_log: list[Any] = []


# --- the version chain ----------------------------------------------------------------------


class CheckpointV10(_Open):
    """Schema 1.0 (`schema_version` may be absent). The five fields `validate_checkpoint`
    demands are required and non-null; everything else may be missing."""

    schema_version: str | None = None
    checkpoint_id: str
    workflow_type: str
    project_name: str
    workflow_description: str | None = None
    created_at: str
    updated_at: str | None = None
    status: str
    current_phase: int | None = None
    total_phases: int | None = None
    completed_phases: list[int] = []
    workflow_state: WorkflowState | None = None
    last_error: Any = None


class CheckpointV11(CheckpointV10):
    """1.1: replanning counters."""

    replanning_count: int = 0
    last_replan_reason: str | None = None
    replan_phase_counts: dict[str, int] = {}
    replan_history: list[ReplanEntry] = []


class CheckpointV12(CheckpointV11):
    """1.2: debug loop fields, plus the two the corpus files carry for smart auto-resume."""

    debug_report_path: str | None = None
    user_last_choice: str | None = None
    debug_iteration_count: int = 0
    tests_passing: bool | None = None
    plan_modification_time: int | float | None = Field(
        None, description="Epoch seconds of the plan file when the checkpoint was saved.")


class CheckpointV13(CheckpointV12):
    """1.3: topic, context preservation, template and spec maintenance fields."""

    topic_directory: str | None = None
    topic_number: int | str | None = None
    context_preservation: ContextPreservation | None = None
    template_source: str | None = None
    template_variables: dict[str, Any] | None = None
    spec_maintenance: SpecMaintenance | None = None


class WorkflowConfig(_Open):
    scope: Scope
    description: str = ""
    command: str | None = None


class ResearchTopic(_Open):
    """One topic of the LLM classifier (older files store bare topic names instead)."""

    short_name: str | None = None
    detailed_description: str | None = None
    filename_slug: str | None = None
    research_focus: str | None = None


class Classification(_Open):
    """2.1: what the workflow classifier decided, so a resume does not re-classify."""

    workflow_type: Scope
    research_complexity: int = Field(2, ge=1, le=4)
    research_topics: list[ResearchTopic | str] = []
    confidence: float = Field(0.0, ge=0.0, le=1.0)
    reasoning: str | None = None
    classified_at: str | None = None
    source: str | None = None
    """Baton's: where the classification came from (flags, keyword, agent, adopted, …)."""


class StateMachineV20(_Open):
    current_state: State
    completed_states: list[State] = []
    transition_table: dict[str, str] = Field(
        default_factory=dict,
        description="State → comma list of allowed next states (either known table).")
    workflow_config: WorkflowConfig

    def transitions(self) -> dict[State, frozenset[State]]:
        """The table parsed; an empty table means the stored default. Unknown names are
        skipped here (the file keeps them)."""
        table = self.transition_table or STORED_TRANSITIONS
        out: dict[State, frozenset[State]] = {}
        for key, value in table.items():
            if key in STATE_NAMES:
                names = (n.strip() for n in value.split(","))
                out[State(key)] = frozenset(State(n) for n in names if n in STATE_NAMES)
        return out


class StateMachine(StateMachineV20):
    """2.1 state machine section: 2.0 plus the classification block."""

    classification: Classification


class ErrorState(_Open):
    last_error: Any = None
    retry_count: int = 0
    failed_state: State | None = None


class CheckpointMetadata(_Open):
    checkpoint_id: str | None = None
    project_name: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class CheckpointV20(CheckpointV13):
    """2.0: the state machine becomes first-class; 1.x fields stay for compatibility."""

    state_machine: StateMachineV20
    phase_data: dict[str, Any] = {}
    supervisor_state: dict[str, Any] = {}
    error_state: ErrorState = Field(default_factory=ErrorState)
    metadata: CheckpointMetadata = Field(default_factory=CheckpointMetadata)


class Checkpoint(CheckpointV20):
    """Schema 2.1, the canonical in-memory checkpoint every older version migrates to."""

    schema_version: Literal["2.1"]
    state_machine: StateMachine


CheckpointV21 = Checkpoint

VERSION_MODELS: dict[str, type[CheckpointV10]] = {
    "1.0": CheckpointV10,
    "1.1": CheckpointV11,
    "1.2": CheckpointV12,
    "1.3": CheckpointV13,
    "2.0": CheckpointV20,
    "2.1": Checkpoint,
}


# --- side flavours --------------------------------------------------------------------------


class IterationCheckpoint(_Open):
    """Build-iteration checkpoint (`build_<workflow_id>_iteration_<n>.json`), a flat 2.1 object."""

    version: Literal["2.1"]
    plan_path: str
    topic_path: str | None = None
    iteration: int = Field(ge=0)
    max_iterations: int = Field(5, ge=1)
    continuation_context: str | None = Field(
        None, description="Path of the file holding the context for the next iteration.")
    work_remaining: str | list[Any] | None = None
    last_work_remaining: str | list[Any] | None = None
    context_estimate: int | float | None = None
    halt_reason: str | None = Field(
        None, description="context_threshold, max_iterations, stuck, completion, user_abort or "
        "error; other values are accepted with a warning.")
    workflow_id: str | None = None
    timestamp: str | None = None

    @property
    def known_halt_reason(self) -> HaltReason | None:
        try:
            return HaltReason(self.halt_reason) if self.halt_reason is not None else None
        except ValueError:
            return None


class WorkerMetadata(_Open):
    title: str | None = None
    date: str | None = None
    agent: str | None = None
    topic: str | None = None
    report_type: str | None = None
    summary: str | None = None
    key_findings: list[str] = []


class SupervisorWorker(_Open):
    worker_id: str
    topic: str | None = None
    status: str | None = None
    output_path: str | None = None
    duration_ms: int | float | None = None
    metadata: WorkerMetadata | None = None


class AggregatedMetadata(_Open):
    reports_count: int | None = None
    reports_created: list[str] = []
    summary: str | None = None
    key_findings: list[str] = []
    total_duration_ms: int | float | None = None
    context_tokens: int | None = None


class SupervisorCheckpoint(_Open):
    """A research sub-supervisor's checkpoint: its workers and their aggregated metadata.
    `output_path` may point into another topic than the file's own (seen in the corpus)."""

    supervisor_id: str
    supervisor_name: str | None = None
    timestamp: str | None = None
    worker_count: int | None = None
    workers: list[SupervisorWorker] = []
    aggregated_metadata: AggregatedMetadata | None = None


# --- the same models for a check without pydantic -------------------------------------------

LIGHT_ROOTS: tuple[type[_Open], ...] = (*VERSION_MODELS.values(), IterationCheckpoint,
                                        SupervisorCheckpoint)
"""The documents `model.checkpoint_shape.conforms` is asked about (and every model they hold)."""


def light_shapes() -> dict[str, dict[str, tuple[bool, tuple[object, ...]]]]:
    """`model.checkpoint_shape.SHAPES` as these models define it; raises ValueError for what
    that light check cannot mirror (a validator, an alias, a constraint other than ge/le, a
    type it does not know), so a model changed that way fails its test rather than being
    judged differently."""
    # only the table derivation needs them (a tool, not the check path)
    import types
    import typing

    from annotated_types import Ge, Le

    out: dict[str, dict[str, tuple[bool, tuple[object, ...]]]] = {}
    todo: list[type[BaseModel]] = list(LIGHT_ROOTS)

    def shape(ann: object, metadata: list[object]) -> tuple[object, ...]:
        bounds = [m for m in metadata if not isinstance(m, Ge | Le)]
        if bounds:
            raise ValueError(f"constraint {bounds} has no light form")
        ge = next((m.ge for m in metadata if isinstance(m, Ge)), None)
        le = next((m.le for m in metadata if isinstance(m, Le)), None)
        origin, args = typing.get_origin(ann), typing.get_args(ann)
        if metadata and ann not in (int, float):
            raise ValueError(f"bounds on {ann}")
        if ann is Any:
            return ("any",)
        if ann is type(None):
            return ("none",)
        if ann in (str, bool):
            return (ann.__name__,)
        if ann in (int, float):
            return (ann.__name__, ge, le)
        if origin is Literal and all(isinstance(a, str) for a in args):
            return ("choice", args)
        if isinstance(ann, type) and issubclass(ann, StrEnum):
            return ("choice", tuple(m.value for m in ann))
        if origin is list:
            return ("list", shape(args[0], []))
        if origin is dict and args[0] is str:
            return ("dict", shape(args[1], []))
        if origin in (types.UnionType, typing.Union):
            return ("union", tuple(shape(a, []) for a in args))
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            todo.append(ann)
            return ("model", ann.__name__)
        raise ValueError(f"type {ann!r} has no light form")

    while todo:
        model = todo.pop(0)
        if model.__name__ in out:
            continue
        decorators = model.__pydantic_decorators__
        if model.model_config.get("extra") != "allow" or any(
                getattr(decorators, kind) for kind in ("validators", "field_validators",
                                                       "root_validators", "model_validators")):
            raise ValueError(f"{model.__name__}: validators or closed models have no light form")
        fields: dict[str, tuple[bool, tuple[object, ...]]] = {}
        for name, info in model.model_fields.items():
            if info.alias not in (None, name) or info.validation_alias not in (None, name):
                raise ValueError(f"{model.__name__}.{name}: aliases have no light form")
            fields[name] = (info.is_required(), shape(info.annotation, list(info.metadata)))
        out[model.__name__] = fields
    return out

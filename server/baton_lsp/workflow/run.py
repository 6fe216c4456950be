"""One workflow run as the state handlers and the agent step see it: the checkpoint record,
the state machine, the store it is saved through and the services every step needs (save,
error log, events, the step-validity check, back-off). The engine drives it; the handlers
in `states/` and `agent_step` act on it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar, cast, overload

from pydantic import BaseModel

from ..model.checkpoint import CheckpointMetadata, ErrorState, StateMachine, WorkflowState
from ..model.config import DEFAULT_ROLE_AGENTS, BatonConfig, WorkflowSettings
from ..model.events import EVENTS, Event
from ..model.states import PHASE_STATES, RunStatus, State
from ..runs.barriers import BARRIER_FOUND
from ..runs.diagnosis import diagnose, failure_record
from ..runs.digest import sha256_file
from ..runs.places import errors_log_path, tmp_json_path
from ..runs.record import (
    ClassifyRecord,
    ContextTotals,
    FailureRecord,
    HistoryRecord,
    IdentityRecord,
    IterationRecord,
    OutcomeRecord,
    PathsRecord,
    RequestRecord,
    ResearchRecord,
    RunRecord,
    StepRecord,
    SupervisorState,
    UsageTotals,
    read_record,
    unset,
)
from ..runs.records import (
    append_error,
    error_record,
    state_file_path,
    utc_now,
    write_state_file,
)
from ..runs.store import CheckpointStore
from .executors import Executor, make_executor
from .failures import Cancelled, StepFailure, StoreFailure
from .layout import TopicDir, contained, specs_dir
from .plans import PlanFiles
from .process import GROUP_START_TICKS, START_TICKS, start_ticks
from .runners import CLI_RUNNERS, Runner, own_runner, registered_runner
from .state_machine import WorkflowStateMachine
from .supervisor import SUPERVISOR_METADATA

log = logging.getLogger(__name__)

STATE_INDEX = {s: i for i, s in enumerate(PHASE_STATES)}
HIERARCHICAL_TOPICS = 4  # the seeds: four or more research agents go through a supervisor
STATE_FAMILIES = ("REPORT_PATH_", "COMPLETED_STATE_", "SUCCESSFUL_REPORT_PATH_")
"""Numbered state-file keys Baton writes (`REPORT_PATH_0` …): every number is Baton's."""


def fixed(path: str | None, what: str) -> str:
    """A path initialize pre-calculated (`Run.paths`); a handler that runs before it is an
    engine bug, said as such rather than as a missing key."""
    if not path:
        raise RuntimeError(f"the run has no {what} path: initialize has not fixed it")
    return path


S = TypeVar("S", bound=BaseModel)


class Section(Generic[S]):
    """An optional typed section of the record's `baton` object, viewed on the `Run` under
    the attribute's name (the section's key). Clearing one takes it off the record (the
    seeds leave it absent), where a plain `None` would be dumped as null."""

    def __init__(self, model: type[S]) -> None:
        self.model = model
        self.key = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.key = name

    @overload
    def __get__(self, run: None, owner: type) -> Section[S]: ...

    @overload
    def __get__(self, run: Run, owner: type) -> S | None: ...

    def __get__(self, run: Run | None, owner: type) -> Section[S] | S | None:
        if run is None:
            return self
        return cast("S | None", getattr(run.record.baton, self.key))

    def __set__(self, run: Run, value: S | None) -> None:
        if value is None:
            unset(run.record.baton, self.key)
        else:
            setattr(run.record.baton, self.key, value)


class Run:
    """The mutable state of one workflow run in this process."""

    def __init__(self, root: Path, config: BatonConfig | None = None, *,
                 runner: str | None = None, say: Callable[[str], None] | None = None,
                 command: str = "baton run",
                 events: Callable[[Event], None] | None = None,
                 overrides: dict[str, Any] | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.config = config or BatonConfig()
        self.settings: WorkflowSettings = self.config.workflow
        self.runner_name = runner
        self.runner_from = "--runner" if runner else "configuration"
        self.overrides: dict[str, Any] = dict((overrides or {}).get("workflow") or {})
        """The `--set workflow.*` values of this command (a resume applies them over the
        settings pinned in the checkpoint)."""
        self.say = say or (lambda line: None)
        self.events = events
        self.command = command
        self.quiet = False  # the CLI's --quiet: no end-of-run summary either
        self.cancel_event = asyncio.Event()
        self._record: RunRecord | None = None
        self.sm: WorkflowStateMachine | None = None
        self.store: CheckpointStore | None = None
        self.topic: TopicDir | None = None
        self.pgids: dict[int, int | None] = {}
        self.launched: dict[str, dict[str, Any]] = {}
        """Agent steps launched and not yet recorded ({step: {attempt, at}}), kept in
        `run.json` with the process groups: a resume after this engine dies knows which
        agents may have finished their work unrecorded (`agent_step` keeps that work)."""
        """Agent process groups started by this run, with their leaders' start times (what
        `baton cancel` and a resume check before they signal one)."""
        self._start_ticks = start_ticks(os.getpid())
        self.last_checkpoint: Path | None = None
        self.plans = PlanFiles(root)
        self._runners: dict[str, Runner] = {}
        self.live_usage: dict[str, dict[str, Any]] = {}
        """Usage of the agent attempts running now, by step id, as their streams report it
        (a budget counts it with the recorded usage, parallel siblings included)."""
        self.live_halts: dict[str, Callable[[str], None]] = {}
        """How to stop each agent attempt running now, by step id, with the reason: a budget
        one sibling's usage crosses stops them all at once."""
        self._state_values: dict[str, Any] | None = None
        self._executor: Executor | None = None

    # == what the handlers read =================================================================

    @property
    def machine(self) -> WorkflowStateMachine:
        assert self.sm is not None, "the run has no state machine before start/resume"
        return self.sm

    @property
    def workflow_id(self) -> str:
        assert self.store is not None, "the run has no store before start/resume"
        return self.store.workflow_id

    @property
    def record(self) -> RunRecord:
        """The run's record, the one copy the handlers read and change (by attribute: a
        field assigned is saved, one never set stays absent; `unset` takes one off)."""
        assert self._record is not None, "the run has no record before start/resume"
        return self._record

    @property
    def holds_record(self) -> bool:
        """Whether the run has taken a record yet (start and resume do, first thing)."""
        return self._record is not None

    def hold(self, record: RunRecord) -> None:
        """Take `record` (a new one, or a checkpoint being resumed) as the run's record.
        The parts every save writes (as the engine always has) count as set from here,
        present in the record or not."""
        record.model_fields_set.add("error_state")
        record.baton.model_fields_set.update(("request", "paths", "steps"))
        if record.workflow_state is None:  # a view to write through; saved once written
            record.workflow_state = WorkflowState()
            record.model_fields_set.discard("workflow_state")
        self._record = record

    def dump(self) -> dict[str, Any]:
        """The record as a save writes it: a field never set absent, keys this Baton does
        not know kept. A seeds' section the record lacked is written once something in it
        was (`workflow_state`, `metadata`, `supervisor_state`)."""
        record = self.record
        for key in ("workflow_state", "metadata", "supervisor_state"):
            part = getattr(record, key)
            if isinstance(part, BaseModel) and (part.model_fields_set or part.model_extra):
                record.model_fields_set.add(key)
        return record.model_dump(mode="json", by_alias=True, exclude_unset=True)

    # The record's sections, viewed under the names the handlers use.

    @property
    def state_machine(self) -> StateMachine:
        """The record's `state_machine` section (scope, states, classification), typed;
        `sync` copies the live machine into it before each save."""
        return self.record.state_machine

    @property
    def paths(self) -> PathsRecord:
        """Every path pre-calculated for the run (`baton.paths`)."""
        return self.record.baton.paths

    @paths.setter
    def paths(self, value: PathsRecord) -> None:
        self.record.baton.paths = value

    @property
    def error_state(self) -> ErrorState:
        """The seeds' `error_state` (last error, retries of the state, the failed state)."""
        return self.record.error_state

    @error_state.setter
    def error_state(self, value: ErrorState) -> None:
        self.record.error_state = value

    @property
    def request(self) -> RequestRecord:
        """What the run was asked (`baton.request`); initialize may narrow its scope and
        topics to the classifier's answer."""
        return self.record.baton.request

    @property
    def workflow_state(self) -> WorkflowState:
        """The seeds' `workflow_state` (plan path, topic, waves and their results): a field
        changed in place is saved only once it was assigned."""
        found = self.record.workflow_state
        assert found is not None, "hold gives every record a workflow_state"
        return found

    @property
    def metadata(self) -> CheckpointMetadata:
        """The seeds' `metadata` section (ids, created and updated times)."""
        return self.record.metadata

    @property
    def supervisor_state(self) -> SupervisorState:
        """The coordination tiers' sections (`supervisor_state`, seed 001's nesting)."""
        return self.record.supervisor_state

    @property
    def steps(self) -> dict[str, StepRecord]:
        """Every step of the run (`baton.steps`), changed in place (an attribute set is
        saved; `unset` takes a field off)."""
        return self.record.baton.steps

    outcome: Section[OutcomeRecord] = Section(OutcomeRecord)
    """How a `complete` run ended when that is not plain success (`baton.outcome`)."""
    failure: Section[FailureRecord] = Section(FailureRecord)
    """The failure that stopped the run (`baton.failure`)."""
    iteration: Section[IterationRecord] = Section(IterationRecord)
    """Where the implement iteration loop stands (`baton.iteration`); None until the loop
    first runs."""
    identity: Section[IdentityRecord] = Section(IdentityRecord)
    """Who runs the workflow (`baton.identity`): pinned when it starts, re-pinned with a
    resume's own `--runner`/`--set`; None in a record from before identities."""
    research: Section[ResearchRecord] = Section(ResearchRecord)
    """How the research state went (`baton.research`): reports made, mode, wall time."""
    classify: Section[ClassifyRecord] = Section(ClassifyRecord)
    """Whether a classifier agent classifies the request and where that stands
    (`baton.classify`); None in a record from before it."""
    usage: Section[UsageTotals] = Section(UsageTotals)
    """What the agent CLIs reported the steps cost (`baton.usage`); None until one did."""
    context: Section[ContextTotals] = Section(ContextTotals)
    """The context account of the finished steps (`baton.context`); None until one."""

    # The record's top-level run fields, viewed typed (the seeds' free-form values read
    # as the type the engine writes).

    @property
    def status(self) -> RunStatus:
        """The run's status as the next checkpoint records it (`status`)."""
        return RunStatus(self.record.status)

    @status.setter
    def status(self, value: RunStatus) -> None:
        self.record.status = value

    @property
    def last_error(self) -> str | None:
        """What stopped the run last (`last_error`); None once it ended well or resumed."""
        found = self.record.last_error
        return None if found is None else str(found)

    @last_error.setter
    def last_error(self, value: str | None) -> None:
        self.record.last_error = value

    @property
    def tests_passing(self) -> bool | None:
        """The last test run's verdict (`tests_passing`); None: nothing was tested."""
        return self.record.tests_passing

    @tests_passing.setter
    def tests_passing(self, value: bool | None) -> None:
        self.record.tests_passing = value

    @property
    def debug_iteration_count(self) -> int:
        """Debug agents run so far (`debug_iteration_count`, the seeds' counter)."""
        return self.record.debug_iteration_count

    @debug_iteration_count.setter
    def debug_iteration_count(self, value: int) -> None:
        self.record.debug_iteration_count = value

    @property
    def debug_report_path(self) -> str | None:
        """The newest debug report (`debug_report_path`)."""
        return self.record.debug_report_path

    @debug_report_path.setter
    def debug_report_path(self, value: str | None) -> None:
        self.record.debug_report_path = value

    @property
    def description(self) -> str:
        """What the run was asked to do (`workflow_description`, the seeds' field)."""
        return self.record.workflow_description or ""

    @property
    def workflow_type(self) -> str:
        """The scope as schema 1.0 records it (`workflow_type`)."""
        return self.record.workflow_type

    @workflow_type.setter
    def workflow_type(self, value: str) -> None:
        self.record.workflow_type = value

    @property
    def topic_directory(self) -> str | None:
        """The topic directory as schema 1.3 records it (`topic_directory`)."""
        return self.record.topic_directory

    @topic_directory.setter
    def topic_directory(self, value: str) -> None:
        self.record.topic_directory = value

    @property
    def topic_number(self) -> int | str | None:
        """The topic's number as schema 1.3 records it (`topic_number`)."""
        return self.record.topic_number

    @topic_number.setter
    def topic_number(self, value: int | str) -> None:
        self.record.topic_number = value

    @property
    def updated_at(self) -> str | None:
        """When the record was last saved (`updated_at`, schema 1.x's copy of
        `metadata.updated_at`)."""
        return self.record.updated_at

    @updated_at.setter
    def updated_at(self, value: str) -> None:
        self.record.updated_at = value

    @property
    def current_phase(self) -> int:
        """The current state as schema 1.x's phase number (`current_phase`)."""
        return self.record.current_phase or 0

    @current_phase.setter
    def current_phase(self, value: int) -> None:
        self.record.current_phase = value

    @property
    def completed_phases(self) -> list[int]:
        """The completed states as schema 1.x's phase numbers (`completed_phases`)."""
        return list(self.record.completed_phases)

    @completed_phases.setter
    def completed_phases(self, value: list[int]) -> None:
        self.record.completed_phases = value

    @property
    def plan_modification_time(self) -> int | None:
        """The plan's mtime in epoch seconds at the last save (`plan_modification_time`,
        schema 1.2's smart auto-resume check)."""
        found = self.record.plan_modification_time
        return None if found is None else int(found)

    @plan_modification_time.setter
    def plan_modification_time(self, value: int) -> None:
        self.record.plan_modification_time = value

    @property
    def phase_data(self) -> dict[str, dict[str, object]]:
        """Per state what its steps made and passed up (`phase_data`, the seeds' field),
        a copy: a state's entry is saved by assigning the whole."""
        return {str(k): dict(v) for k, v in self.record.phase_data.items()
                if isinstance(v, dict)}

    @phase_data.setter
    def phase_data(self, value: dict[str, dict[str, object]]) -> None:
        self.record.phase_data = dict(value)

    # Baton's bookkeeping beside the steps: each read is a copy and each change an
    # assignment, so no value is changed in place without being marked set.

    @property
    def timing(self) -> dict[str, int]:
        """Wall milliseconds per state, summed over runs and resumes (`baton.timing`)."""
        return dict(self.record.baton.timing)

    @timing.setter
    def timing(self, value: dict[str, int]) -> None:
        self.record.baton.timing = value

    @property
    def state_failures(self) -> dict[str, int]:
        """Times the workflow failed in each state (`baton.state_failures`, the seeds'
        "Retry k/2 available")."""
        return dict(self.record.baton.state_failures)

    @state_failures.setter
    def state_failures(self, value: dict[str, int]) -> None:
        self.record.baton.state_failures = value

    @property
    def reconciled(self) -> list[dict[str, object]]:
        """What a run found another run left in the repository and what it did about it
        ({at, what}, `baton.reconciled`)."""
        return [dict(e) for e in self.record.baton.reconciled]

    @reconciled.setter
    def reconciled(self, value: list[dict[str, object]]) -> None:
        self.record.baton.reconciled = [dict(e) for e in value]

    @property
    def agent_clis(self) -> dict[str, str]:
        """The agent CLIs' versions preflight found ({name: version}, `baton.agent_clis`)."""
        return {str(k): str(v) for k, v in (self.record.baton.agent_clis or {}).items()}

    @agent_clis.setter
    def agent_clis(self, value: dict[str, str]) -> None:
        self.record.baton.agent_clis = dict(value)

    @property
    def plan_sha256(self) -> str | None:
        """The plan's hash at the last save (`baton.plan_sha256`): a resume tells an
        edited plan by it."""
        return self.record.baton.plan_sha256

    @plan_sha256.setter
    def plan_sha256(self, value: str | None) -> None:
        self.record.baton.plan_sha256 = value

    @property
    def plan_progress_free(self) -> str | None:
        """The plan's hash without its progress markers (`baton.plan_progress_free`)."""
        return self.record.baton.plan_progress_free

    @plan_progress_free.setter
    def plan_progress_free(self, value: str | None) -> None:
        self.record.baton.plan_progress_free = value

    @property
    def resumed_from(self) -> int | None:
        """The checkpoint sequence number the last resume started from."""
        return self.record.baton.resumed_from

    @resumed_from.setter
    def resumed_from(self, value: int) -> None:
        self.record.baton.resumed_from = value

    def remote(self, state: State) -> bool:
        """Whether `state`'s agent steps run on another machine (`[workflow] executor =
        "dask"` and the state in `[workflow.dask] remote-states`). An implement phase that
        runs remotely gets no local worktree: it is shipped and brought back as git bundles
        (`shipping`, `states.implement.ship`)."""
        return self.executor().remote(state.value)

    def skippable(self, sid: str) -> bool:
        """Done and still valid: a resumed run does not launch it again."""
        step = self.steps.get(sid)
        return step is not None and step.done and self.plans.invalid_reason(step) is None

    def good_reports(self) -> list[str]:
        return [s.artifact for sid, s in sorted(self.steps.items())
                if sid.startswith("research.") and s.done and s.artifact
                and (s.role if "role" in s.model_fields_set else "research") == "research"
                and Path(s.artifact).is_file()]

    def specs_dir(self) -> Path:
        """The specs directory of this run (`specs-dir`; `auto` follows the tree and whether
        a claude agent has to write there), fixed once per workflow in its checkpoint."""
        if not self.paths.specs_dir:
            self.paths.specs_dir = str(self.planned_specs_dir())
        return contained(self.root, self.paths.specs_dir, "specs directory")

    def planned_specs_dir(self) -> Path:
        """The specs directory the configuration gives, before the run has a record (the
        front door's checks need it; `specs_dir` then fixes it in the checkpoint)."""
        roles = [self.settings.role(r).runner for r in DEFAULT_ROLE_AGENTS]
        names = {own_runner(r) or self.runner_name or self.settings.runner for r in roles}
        return specs_dir(self.root, self.settings.specs_dir, claude="claude" in names)

    def contract(self, sid: str, role: str, artifact: Path, extra: dict[str, str]
                 ) -> dict[str, str]:
        """The environment every step gets: who it is, where it writes, the workspace — and
        the seeds' `WORKFLOW_ID` and `STATE_FILE`, which their `append_workflow_state` and
        `load_workflow_state` read."""
        wid = self.workflow_id
        state_file = str(state_file_path(self.root, wid))
        env = {"BATON_WORKFLOW_ID": wid, "BATON_STEP_ID": sid, "BATON_ROLE": role,
               "WORKFLOW_ID": wid, "STATE_FILE": state_file,
               "BATON_ARTIFACT_PATH": str(artifact), "BATON_WORKSPACE": str(self.root),
               "CLAUDE_PROJECT_DIR": str(self.root),
               "BATON_TOPIC_DIR": self.paths.topic_dir or "",
               "BATON_DESCRIPTION": self.description,
               "BATON_STATE_FILE": state_file}
        meta = self.supervisor_metadata_path()
        if meta is not None:
            env["SUPERVISOR_METADATA_PATH"] = str(meta)
        env.update(extra)
        return env

    def supervisor_metadata_path(self) -> Path | None:
        """Where a supervisor of this run left its aggregate (seed 001's
        SUPERVISOR_METADATA_PATH), once one has."""
        if self.supervisor_state.research_supervisor is None:
            return None
        return tmp_json_path(self.root, SUPERVISOR_METADATA)

    def runner(self, name: str | None) -> Runner:
        """The configured runner of that name (one instance per run)."""
        key = own_runner(name) or self.runner_name or self.settings.runner
        if key not in self._runners:
            self._runners[key] = registered_runner(key, self.settings, self.root)
        return self._runners[key]

    def executor(self) -> Executor:
        """Where this run's agent attempts run (`[workflow] executor`), made on first use:
        a Dask cluster is reached (or started) only once a step needs it."""
        if self._executor is None:
            logs = self.store.dir / "logs" if self.store is not None else None
            self._executor = make_executor(self.settings, self.root, self.say, logs)
        return self._executor

    async def close_executor(self) -> None:
        """Disconnect from (or stop) the run's cluster, if it has one."""
        executor, self._executor = self._executor, None
        if executor is not None:
            await executor.close()

    def check_runners(self) -> None:
        """Configure now the runners the run's roles use (the run's own and any role's) that
        are not agent CLIs, so one that cannot be configured — `command` without
        `[workflow] command` — is said before the run writes anything, not as a workflow
        failed in initialize (an agent CLI's only requirement, being found, is preflight's).
        Raises ValueError naming the setting."""
        names = {self.runner_name or self.settings.runner}
        for role in DEFAULT_ROLE_AGENTS:
            own = own_runner(self.settings.role(role).runner)
            if own:
                names.add(own)
        self._runners.clear()  # a resume may have changed the settings they were made from
        for name in sorted(names):
            if name.strip().lower() not in CLI_RUNNERS:
                self.runner(name)

    # == events and output ======================================================================

    def emit(self, event: str, **fields: Any) -> None:
        """A structured progress event (`baton run --events` prints them as JSON lines, so
        the language server follows a run live without polling). Each is built through the
        one union of `model.events`, which lists the kinds and their fields: an event the
        union does not describe fails here, where it is emitted."""
        if self.events is not None:
            wid = fields.pop("workflow_id", None) or (
                self.store.workflow_id if self.store else None)  # given: before the store
            self.events(EVENTS.validate_python(
                {"event": event, "workflow_id": wid, "at": utc_now(), **fields}))

    # == durability =============================================================================

    def sync(self) -> None:
        """Copy the state machine and derived fields into the record before a save."""
        sm, record = self.machine, self.state_machine
        record.current_state = sm.current
        record.completed_states = list(sm.completed)
        self.current_phase = STATE_INDEX.get(sm.current, 0)
        self.completed_phases = sorted({STATE_INDEX[s] for s in sm.completed
                                        if s in STATE_INDEX})
        self.record.baton.history = [HistoryRecord(
            source=t.source.value, target=t.target.value, reason=t.reason, at=t.at)
            for t in sm.history]
        now = utc_now()
        self.updated_at = self.metadata.updated_at = now
        plan = self.workflow_state.plan_path
        if plan and Path(plan).is_file():
            self.plan_modification_time = int(Path(plan).stat().st_mtime)
            self.plan_sha256 = sha256_file(Path(plan), self.root)
            self.plan_progress_free = self.plans.progress_free(Path(plan))

    def save(self, event: str) -> Path:
        """A durable checkpoint now (fsynced, checksummed, appended to the history)."""
        assert self.store is not None
        self.sync()
        data = self.dump()
        # assignment is not validated (the type checker covers the engine's writes): the
        # dump is read back, so nothing is written that a reader would refuse (a
        # RecordError here is an engine bug)
        read_record(data, f"the record saved as {event!r}")
        try:
            path = self.store.save(data, event)
        except OSError as exc:
            raise StoreFailure(f"checkpoint {self.store.next_path()}", exc) from None
        self.last_checkpoint = path
        self.write_state_file()
        self.emit("checkpoint", label=event, path=str(path), status=self.status,
                  state=self.machine.current.value)
        return path

    def write_state_file(self) -> None:
        """The bash side's copy of the run (`.claude/tmp/workflow_<id>.sh`)."""
        sm, paths = self.machine, self.paths
        classification = self.state_machine.classification
        reports = paths.reports
        values: dict[str, Any] = {
            "WORKFLOW_SCOPE": sm.scope.value, "TERMINAL_STATE": sm.terminal.value,
            "CURRENT_STATE": sm.current.value, "WORKFLOW_STATUS": self.status,
            "WORKFLOW_DESCRIPTION": self.record.workflow_description,
            "TOPIC_PATH": paths.topic_dir, "PLAN_PATH": paths.plan,
            "REPORTS_DIR": paths.reports_dir, "PLANS_DIR": paths.plans_dir,
            "SUMMARIES_DIR": paths.summaries_dir, "DEBUG_DIR": paths.debug_dir,
            "CHECKPOINT_DIR": str(self.store.dir) if self.store else None,
            "RESEARCH_COMPLEXITY": classification.research_complexity,
            "REPORT_PATHS_COUNT": len(reports),
        }
        for i, r in enumerate(reports):
            values[f"REPORT_PATH_{i}"] = r
        values["REPORT_PATHS_JSON"] = list(reports)
        values["RESEARCH_TOPICS_JSON"] = [
            t if isinstance(t, str) else t.model_dump(mode="json", exclude_unset=True)
            for t in classification.research_topics]
        values["USE_HIERARCHICAL_RESEARCH"] = len(reports) >= HIERARCHICAL_TOPICS
        if State.RESEARCH in sm.completed:  # seed 000's research outcome, once there is one
            done = {s.artifact for sid, s in self.steps.items()
                    if sid.startswith("research.") and s.done}
            ok = [r for r in reports if r in done]  # in the topics' order
            values["RESEARCH_COMPLETE"] = True
            values["REPORTS_CREATED"] = len(ok)
            values["SUCCESSFUL_REPORT_PATHS_COUNT"] = len(ok)  # the seeds' array, exported
            for i, r in enumerate(ok):
                values[f"SUCCESSFUL_REPORT_PATH_{i}"] = r
            values["SUCCESSFUL_REPORT_PATHS_JSON"] = ok
        it = self.iteration
        if it is not None:
            values["ITERATION"] = it.iteration
            values["MAX_ITERATIONS"] = it.max_iterations
            values["CONTINUATION_CONTEXT"] = it.continuation_context
            values["WORK_REMAINING"] = it.work_remaining
            values["HALT_REASON"] = it.halt_reason
        # The seeds' keys below are Baton's only once it knows them: until then a value an
        # agent or bash block appended the seeds' way is the one there is, and is kept.
        seed_keys = {"SUPERVISOR_METADATA_PATH": self.supervisor_metadata_path(),
                     "TESTS_PASSING": self.tests_passing,
                     "DEBUG_REPORT": self.debug_report_path}
        values.update((k, v) for k, v in seed_keys.items() if v is not None)
        tests = [st.exit_code for sid, st in self.steps.items()
                 if sid.startswith("test.") and "exit_code" in st.model_fields_set]
        if tests:  # seed 000's test state: append_workflow_state "TEST_EXIT_CODE" …
            values["TEST_EXIT_CODE"] = tests[-1]
        values["COMPLETED_STATES_COUNT"] = len(sm.completed)
        for i, s in enumerate(sm.completed):
            values[f"COMPLETED_STATE_{i}"] = s.value
        wid = self.workflow_id
        if values == self._state_values and state_file_path(self.root, wid).is_file():
            return  # most checkpoints (a phase done) change nothing the state file says
        try:
            write_state_file(self.root, wid, values, STATE_FAMILIES)
            self._state_values = values
        except OSError as exc:  # bash blocks would read a stale state: not ignorable
            raise StoreFailure(f"the state file {state_file_path(self.root, wid)}",
                               exc) from None

    def write_owner(self, durable: bool = False) -> None:
        """Who runs this workflow and its agents' process groups (for cancel and resume).
        Raises `StoreFailure`; the callers that only tidy up suppress it."""
        if self.store:
            try:
                self.store.write_owner({
                    "pid": os.getpid(), "started_at": utc_now(),
                    START_TICKS: self._start_ticks, "pgids": sorted(self.pgids),
                    GROUP_START_TICKS: {str(p): t for p, t in sorted(self.pgids.items())},
                    "launched": self.launched,
                    "workflow_id": self.store.workflow_id}, durable)
            except OSError as exc:
                raise StoreFailure(f"the owner record {self.store.dir / 'run.json'}",
                                   exc) from None

    def started(self, pid: int, step: str | None = None, attempt: int = 0) -> None:
        """A process group was started for this run and is held before it can do anything
        (`process.run_process`): record it durably now, so a resume after this engine dies
        finds it and stops it before launching the step again, and knows `step`'s agent was
        let go (its work may be done though unrecorded). If this cannot be written the agent
        is never let go."""
        self.pgids[pid] = start_ticks(pid)
        if step is not None:
            self.launched[step] = {"attempt": attempt, "at": time.time()}
        self.write_owner(durable=True)

    def started_remote(self, step: str, attempt: int) -> None:
        """An attempt of `step` was sent to a worker of the run's cluster: recorded as
        launched (no process group here: the worker records and sweeps its own)."""
        self.launched[step] = {"attempt": attempt, "at": time.time(), "remote": True}
        self.write_owner(durable=True)

    def log_error(self, source: str, error_type: str, message: str,
                  context: dict[str, Any]) -> None:
        """One line in `.claude/data/logs/errors.jsonl`, the seeds' error log."""
        try:
            append_error(self.root, error_record(
                workflow_id=self.workflow_id, command="/baton-run",
                user_args=self.description, error_type=error_type,
                message=message, source=source, context=context, root=self.root))
        except OSError as exc:
            raise StoreFailure(f"the errors log {errors_log_path(self.root)}", exc) from None

    def record_failure(self, step: StepRecord, failure: StepFailure) -> None:
        """A step's failure: on the step, in the error log and in a checkpoint."""
        step.failure, step.message = failure.failure, failure.message
        if failure.context.get("error") in BARRIER_FOUND:  # for the five-part diagnosis
            step.barrier = {k: failure.context[k] for k in ("error", "reported_path")
                            if k in failure.context}
        else:
            unset(step, "barrier")
        self.log_error(failure.step_id, failure.error_type, failure.message,
                       {**failure.context, "failure_class": failure.failure,
                        "attempt": step.attempts, **self.diagnosis(failure)})
        self.save(f"step {failure.step_id} failed ({failure.failure})")

    def diagnosis(self, failure: StepFailure, pending: bool = True) -> dict[str, Any]:
        """`{"diagnosis": …}`, the seeds' five-part error for the error log's context (the
        formatter `baton status` and the editor use too); `{}` if the record cannot be
        read as one — the failure itself must be recorded whatever happens here."""
        try:
            found = diagnose(self.root, self.record, failure_record(
                failure.step_id, failure.failure, failure.message, failure.error_type,
                failure.context), state=self.machine.current.value, pending=pending)
        except (OSError, ValueError) as exc:
            log.warning("no five-part diagnosis for %s: %s", failure.step_id, exc)
            return {}
        return {"diagnosis": found.as_dict()} if found is not None else {}

    # == waiting ================================================================================

    def delay(self, attempt: int) -> float:
        """Exponential back-off with jitter, capped."""
        base = self.settings.backoff * (2.0 ** (attempt - 1))
        return min(self.settings.backoff_max, base) * random.uniform(0.5, 1.0)

    async def sleep(self, seconds: float) -> None:
        """Sleep, but wake for a cancel."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.cancel_event.wait(), seconds)
        if self.cancel_event.is_set():
            raise Cancelled()


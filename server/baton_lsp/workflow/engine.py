"""The workflow engine: runs the seeds' orchestration for real.

One engine process owns one workflow (a file lock says so). It pre-calculates every path,
walks the state machine through one handler per state (`states/`), launches agents through
a runner (`agent_step`), enforces the hard barrier on every artifact, and writes a durable
checkpoint before and after every transition and after every step. A step is the unit of
resume: it records its artifact's SHA-256 and the hashes of its inputs, so a resumed
workflow skips exactly the steps whose outputs and inputs are unchanged (`resume`).
"""

from __future__ import annotations

import contextlib
import copy
import errno
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import PathError
from ..model.checkpoint import ErrorState
from ..model.config import WorkflowSettings
from ..model.states import RunStatus, Scope, State, StepStatus
from ..runs import confine
from ..runs.record import (
    NEEDS_ATTENTION,
    FailureRecord,
    IdentityRecord,
    nest_supervisor_state,
)
from ..runs.store import CheckpointStore, WorkflowBusy
from ..workspace.config import merge
from . import accounting, preflight, resume, supervisor
from .executors import REMOTE_CAPABLE, REMOTE_ROLES, check_executor
from .failures import (
    FATAL,
    PERMANENT,
    TRANSIENT,
    Cancelled,
    EngineError,
    StartRefused,
    StepFailure,
    StoreFailure,
)
from .git import repo_of
from .isolation import dirty_tree_problem
from .layout import make_topic, planned_topic
from .request import (
    RunRequest,
    new_record,
    new_workflow_id,
    settled_by_flags,
    validate_request,
    validate_runners,
)
from .run import Run
from .runners import AUTO_RUNNER
from .state_machine import HAPPY_PATHS, InvalidTransition, WorkflowStateMachine
from .states import HANDLERS

EXIT_NEEDS_ATTENTION = 4
"""`baton run`/`resume`'s exit code for a workflow that ended `complete` with tests still
failing: a script must not take it for success, nor for a failure to resume."""


@dataclass
class Outcome:
    workflow_id: str
    status: RunStatus
    """complete, failed or cancelled."""
    state: State
    message: str
    checkpoint: Path | None = None
    attention: bool = False
    """Complete, but with the outcome `needs_attention` (tests still failing)."""

    @property
    def exit_code(self) -> int:
        """0 complete, 1 failed, 4 complete but needing attention, 130 cancelled."""
        if self.status == RunStatus.COMPLETE and self.attention:
            return EXIT_NEEDS_ATTENTION
        return {RunStatus.COMPLETE: 0, RunStatus.CANCELLED: 130}.get(self.status, 1)


class Engine(Run):
    """Runs or resumes one workflow in this process."""

    async def start(self, req: RunRequest) -> Outcome:
        """Run a new workflow. Everything that can refuse it — the request, the runner,
        uncommitted changes in the tree it would commit to, the agent CLIs' preflight — is
        decided before its record, lock, log line or directory exists: a refused run
        leaves the workspace as it was (EngineError: usage, exit 2; StartRefused: exit 1)."""
        validate_runners(self.settings, self.runner_name)
        validate_request(self.root, self.settings, req)
        self._check_executor()
        self._choose_runner()
        self._check_runners()
        if self.runner_from != AUTO_RUNNER:
            source = {"configuration": "the configuration"}.get(self.runner_from,
                                                                 self.runner_from)
            self.say(f"runner: {self.runner_name} (from {source})")
        wid = req.workflow_id or new_workflow_id(req.effective_scope)
        store = CheckpointStore(self.root, wid)
        if store.dir.exists() and any(store.dir.glob("[0-9]*.json")):
            raise EngineError(f"workflow {wid} already exists; use `baton resume {wid}`")
        scope = req.effective_scope
        try:
            specs = self.planned_specs_dir()
        except PathError as exc:
            raise EngineError(str(exc)) from None
        if State.IMPLEMENT in HAPPY_PATHS[scope]:
            dirty = dirty_tree_problem(  # waits its turn: its `waiting` names the run
                self.root, self.settings, specs, self.say,
                lambda event, **fields: self.emit(event, workflow_id=wid, **fields))
            if dirty is not None:
                raise StartRefused(f"not starting: {dirty}, then run it again")
        classifier = "classifier" in self.settings.agents and not settled_by_flags(req)
        versions = self._preflight(scope, classifier, specs, planned_topic(
            self.root, specs, req.description, req.plan_path))
        self.store = store
        try:
            self.store.acquire()
        except OSError as exc:
            return self._unwritable(wid, StoreFailure(f"the lock of workflow {wid}", exc))
        try:
            self.hold(new_record(wid, req, project=self.root.name, settings=self.settings,
                                 command=self.command))
            self.paths.specs_dir = str(specs)
            self.identity = self._identity(scope)
            if versions:
                self.agent_clis = versions
            self.sm = WorkflowStateMachine(scope)
            try:
                self.save("created")
            except StoreFailure as exc:
                return self._fail(self._store_failure(exc))
            return await self._drive()
        finally:
            self.store.release()

    async def resume(self, workflow_id: str, *, at: int | None = None,
                     force: bool = False, trust: bool = False) -> Outcome:
        """Resume from the newest sound checkpoint (or number `at`). A checkpoint this
        user's Baton did not sign is resumed only with `trust`; one naming a path outside
        the workspace never is."""
        self.store = CheckpointStore(self.root, workflow_id)
        try:
            self.store.acquire()
        except OSError as exc:
            return self._unwritable(workflow_id,
                                    StoreFailure(f"the lock of workflow {workflow_id}", exc))
        try:
            entry = self.store.latest(at)
            resume.check_trust(self.root, workflow_id, entry, trust, self.say)
            data = copy.deepcopy(entry.data or {})
            nested = nest_supervisor_state(data)
            self.hold(resume.baton_record(data, str(entry.path)))
            if nested:
                self.say("supervisor_state: the research supervisor's section moved under "
                         "research_supervisor (the seeds' shape)")
            phases = self.phase_data
            for name, ms in self.timing.items():
                if name not in phases:  # a record from before phase_data was filled
                    phases[name] = accounting.phase_data(self.steps, name, ms)
            self.phase_data = phases
            self.sm = resume.restore_machine(self.record)
            self.topic = resume.topic_of(self.paths)
            problems = resume.resume_problems(self.record)
            if problems and not force:
                raise EngineError("not resuming: " + "; ".join(problems) +
                                  " (use --force to resume anyway)")
            for p in problems:
                self.say(f"resuming despite: {p}")
            self._restore_identity(entry.sequence)
            self._check_runners()
            self._check_executor()
            classifier = self.classify is not None and not self.classify.done
            try:
                versions = self._preflight(
                    self.machine.scope, classifier, self.specs_dir(),
                    self.topic.path if self.topic is not None else planned_topic(
                        self.root, self.specs_dir(), self.description,
                        self.request.plan_path))
            except PathError as exc:
                raise EngineError(str(exc)) from None
            if versions:
                self.agent_clis = versions
            if self.last_error:
                self.say(f"last run ended with: {self.last_error} (status "
                         f"{self.status}, in {self.machine.current.value})")
            try:
                if self.topic is not None:
                    make_topic(self.root, self.topic.path)
                supervisor.republish(self.root, self.supervisor_state)
                resume.check_classification(self)
                self.launched = resume.launched_before(self)
                resume.kill_orphans(self)
                resume.rewind(self.machine, self.steps, self.plans, self.say)
                self.status = RunStatus.IN_PROGRESS
                self.resumed_from = entry.sequence
                self.save(f"resume from checkpoint {entry.sequence}")
            except StoreFailure as exc:
                return self._fail(self._store_failure(exc))
            except OSError as exc:
                return self._fail(self._file_failure(exc))
            self.say(f"resuming {workflow_id} at {self.machine.current.value} "
                     f"(checkpoint {entry.sequence})")
            return await self._drive()
        finally:
            self.store.release()

    def preview_resume(self, workflow_id: str, at: int | None = None) -> dict[str, Any]:
        """What `resume` would do, without doing it (no lock taken, nothing written)."""
        return resume.preview_resume(self.root, self.settings, workflow_id, at,
                                     self.overrides)

    def cancel(self) -> None:
        self.cancel_event.set()

    # == the state loop =========================================================================

    async def _drive(self) -> Outcome:
        try:
            self.write_owner()
            while True:
                if self.cancel_event.is_set():
                    raise Cancelled()
                state = self.machine.current
                if state in (State.COMPLETE, State.ABANDONED):
                    return self._finish(RunStatus.COMPLETE, "workflow complete")
                await self._run_state(state)
                handler = HANDLERS[state]
                nxt = handler.after(self)
                if nxt is None:
                    return self._finish(RunStatus.COMPLETE, f"scope {self.machine.scope.value} "
                                        f"finished at {state.value}")
                self._transition(nxt, handler.why(self))
        except Cancelled:
            sm = self.machine
            self.status = RunStatus.CANCELLED
            self.last_error = "cancelled by the user"
            try:
                self.save(f"cancelled in {sm.current.value}")
            except StoreFailure as exc:  # still resumable from the checkpoint before
                self.say(f"cancelled, but {exc.message}")
            self.emit("finished", status=RunStatus.CANCELLED, state=sm.current.value,
                      message="cancelled", checkpoint=str(self.last_checkpoint))
            self.say(f"cancelled in {sm.current.value}; resume with "
                     f"`baton resume {self.workflow_id}`")
            return Outcome(self.workflow_id, RunStatus.CANCELLED, sm.current, "cancelled",
                           self.last_checkpoint)
        except StepFailure as exc:
            return self._fail(exc)
        except StoreFailure as exc:  # Baton's own record could not be written
            return self._fail(self._store_failure(exc))
        except (EngineError, PathError) as exc:  # bad configuration met mid-run
            return self._fail(StepFailure(self.machine.current.value, PERMANENT, str(exc),
                                          "validation_error"))
        except OSError as exc:  # the disk refused another write (a log, the topic tree)
            return self._fail(self._file_failure(exc))
        except InvalidTransition as exc:
            return self._fail(StepFailure(self.machine.current.value, PERMANENT, str(exc),
                                          "state_error", {
                                              "current_state": exc.current.value,
                                              "target_state": exc.target.value,
                                              "valid_transitions": ",".join(
                                                  sorted(s.value for s in exc.valid)),
                                              "transition_reason": exc.reason}))
        finally:
            await self.close_executor()
            self.pgids.clear()
            with contextlib.suppress(StoreFailure):
                self.write_owner()

    def _choose_runner(self) -> None:
        """Fix the run's runner: `--runner`, else the configuration's; `auto` (the default
        when nothing is configured) is the first agent CLI installed and logged in. The
        scripted demo agents run only where they are asked for (`runner = "script"`): on
        a real repository they would "implement" the plan with placeholder code."""
        if not self.runner_name:
            self.runner_from = "--set" if "runner" in self.overrides else "configuration"
        name = (self.runner_name or self.settings.runner).strip().lower()
        if name != AUTO_RUNNER:
            self.runner_name = name
            return
        cli, passed = preflight.auto_runner(self.root, self.settings)
        if cli is None:
            raise EngineError(
                "no agent CLI to run this workflow with (runner \"auto\"): "
                + "; ".join(passed) + ". Install and log in to one of them, or choose the "
                "runner: --runner claude|codex|gemini|opencode|command, or [workflow] runner in "
                ".claude/baton.toml (`script` runs Baton's offline demo agents, which write "
                "placeholder code)")
        self.runner_name = cli
        self.runner_from = AUTO_RUNNER
        self.say(f"runner: {cli} (auto: the first agent CLI installed and logged in)")

    def _remote_roles(self) -> set[str]:
        """Roles whose agents run on the workers of a Dask cluster: their CLIs and
        credentials are the workers' (`baton worker` checks them there), not this
        machine's. An implement phase runs there only shipped from a repository with
        worktree isolation, in waves."""
        dask = self.settings.dask
        if self.settings.executor != "dask":
            return set()
        roles = set(preflight.roles_ahead(self.settings, [
            State(s) for s in dask.remote_states if s in REMOTE_CAPABLE])) & REMOTE_ROLES
        repo = repo_of(self.root)
        if self.settings.isolation != "worktree" or repo is None or repo.head() is None:
            roles.discard("implement")
        return roles

    def _check_executor(self) -> None:
        """`[workflow] executor` can work (Dask installed, a scheduler address Baton uses)."""
        try:
            check_executor(self.settings)
        except ValueError as exc:
            raise EngineError(str(exc)) from None

    def _check_runners(self) -> None:
        try:
            self.check_runners()
        except ValueError as exc:
            raise EngineError(str(exc)) from None

    def _identity(self, scope: Scope) -> IdentityRecord:
        """The run's identity record (`baton.identity`, `IdentityRecord`). A role's model
        is the one its runner passes: `[workflow.claude] model` over the agent's for claude,
        only `[workflow.codex|gemini|opencode] model` for those (front-matter models are
        Claude's)."""
        models: dict[str, str] = {}
        agent = self.classify is not None and self.classify.agent
        first = (State.INITIALIZE,) if agent else ()
        for role in preflight.roles_ahead(self.settings, (*first, *HAPPY_PATHS[scope],
                                                          State.DEBUG)):
            use = preflight.agent_use(self.root, self.settings, role, self.runner_name)[0]
            model = use.model
            if use.runner in preflight.CLI_PACKAGES:
                configured = getattr(self.settings, use.runner).model
                model = configured or (use.model if use.runner == "claude" else None)
            if model:
                models[role] = model
        return IdentityRecord(runner=self.runner_name, runner_from=self.runner_from,
                              models=models,
                              settings=self.settings.model_dump(mode="json", by_alias=True),
                              overrides=self.overrides)

    def _restore_identity(self, sequence: int) -> None:
        """Run the resumed workflow as it started: its recorded runner and settings, with
        this command's `--runner`/`--set` over them (said, and recorded). A checkpoint from
        before identities were pinned runs with the configuration, with a note."""
        pinned = self.identity
        if pinned is None or not pinned.settings:
            validate_runners(self.settings, self.runner_name)
            self._choose_runner()
            self.say(f"runner: {self.runner_name} (from the configuration: checkpoint "
                     f"{sequence} predates recorded run settings)")
            self.identity = self._identity(self.machine.scope)
            return
        base = pinned.settings
        try:
            self.settings = WorkflowSettings.model_validate(merge(base, self.overrides))
        except ValidationError as exc:
            raise EngineError(f"the run settings recorded in checkpoint {sequence} with "
                              f"--set applied are not valid: {exc.errors()[0]['msg']} at "
                              f"{'.'.join(map(str, exc.errors()[0]['loc']))}") from None
        self.config.workflow = self.settings
        for key, value in _flat(self.overrides).items():
            old = _flat(base).get(key)
            if key != "runner" and old != value:
                self.say(f"setting workflow.{key} = {json.dumps(value)} (overriding "
                         f"{json.dumps(old)} from the checkpoint)")
        recorded = str(pinned.runner or AUTO_RUNNER)
        asked = self.runner_name or self.overrides.get("runner")
        if asked and str(asked).strip().lower() != recorded:
            name = str(asked).strip().lower()
            self.runner_from = "--runner" if self.runner_name else "--set"
            self.say(f"runner: {name} (overriding {recorded} from the checkpoint)")
        else:
            name = recorded
            self.runner_from = str(pinned.runner_from or "configuration")
            self.say(f"runner: {name} (from the checkpoint)")
        self.runner_name = name
        validate_runners(self.settings, self.runner_name)
        if name == AUTO_RUNNER:  # recorded by no Baton, but a hand-edited record may say so
            self._choose_runner()
        identity = self._identity(self.machine.scope)
        identity.overrides = merge(pinned.overrides, self.overrides)
        self.identity = identity

    def _preflight(self, scope: Scope, classifier: bool, specs: Path,
                   topic: Path | None = None) -> dict[str, str]:
        """Stop before any agent runs — and before anything is written — when a CLI, its
        login, a model, the artifact location or the user's Claude Code deny rules (checked
        against `topic`, the topic directory the run will write) would make the first agent
        step fail (see workflow/preflight.py). Returns the CLI versions found, for the
        record."""
        states = (*((State.INITIALIZE,) if classifier else ()), *HAPPY_PATHS[scope],
                  State.DEBUG)
        remote = self._remote_roles()
        uses = [preflight.agent_use(self.root, self.settings, role, self.runner_name)[0]
                for role in preflight.roles_ahead(self.settings, states) if role not in remote]
        if not any(u.runner in preflight.CLI_PACKAGES for u in uses):
            return {}
        notes: list[str] = []
        problems, versions = preflight.check(self.root, self.settings, uses, specs,
                                             topic=topic, notes=notes)
        for note in notes:
            self.say(f"preflight: {note}")
        if problems:
            raise StartRefused("preflight: " + "; ".join(p.message for p in problems) +
                               " (nothing was started)")
        return versions

    async def _run_state(self, state: State) -> None:
        """Run one state's handler, re-running it (completed steps are skipped) while its
        failures are transient and the state's retry budget lasts."""
        handler = HANDLERS[state]
        retries = 0
        start = time.monotonic()
        while True:
            try:
                try:
                    await handler.run(self)
                finally:  # wall time per state, summed over runs and resumes
                    timing = self.timing
                    timing[state.value] = timing.get(state.value, 0) + int(
                        (time.monotonic() - start) * 1000)
                    self.timing = timing
                    start = time.monotonic()
                    self.phase_data = {**self.phase_data, state.value: accounting.phase_data(
                        self.steps, state.value, timing[state.value])}
                self.error_state.retry_count = 0
                return
            except StepFailure as exc:
                if exc.failure != TRANSIENT or retries >= self.settings.state_retries:
                    raise
                retries += 1
                self.error_state.retry_count = retries
                self.say(f"{state.value}: transient failure ({exc.message}); retrying the "
                         f"state ({retries}/{self.settings.state_retries})")
                self.save(f"retry {state.value} ({retries})")
                await self.sleep(self.delay(retries))

    def _transition(self, target: State, reason: str) -> None:
        source = self.machine.current
        self.save(f"before {source.value} -> {target.value}")
        self.machine.transition(target, reason)
        self.say(f"── {source.value} → {target.value} ({reason})")
        self.emit("transition", source=source.value, target=target.value, reason=reason,
                  checkpoint=str(self.last_checkpoint))
        self.save(f"after {source.value} -> {target.value}")

    def _finish(self, status: RunStatus, message: str) -> Outcome:
        sm = self.machine
        if sm.current not in (State.COMPLETE, State.ABANDONED) and sm.can(State.COMPLETE):
            self._transition(State.COMPLETE, message)
        self.status = status
        self.last_error = None
        self.error_state = ErrorState(last_error=None, retry_count=0, failed_state=None)
        ending = self.outcome
        attention = ending is not None and ending.status == NEEDS_ATTENTION
        if ending is not None and attention:
            review = ending.debug_report or ending.test_output or "the test output"
            message = (f"needs attention — {ending.reason}; review {review} and fix "
                       f"the issues, then re-run: {ending.rerun}")
        path = self.save(f"{status}: {message}")
        self.say(f"workflow {self.workflow_id} {status}: {message}")
        self.emit("finished", status=status, state=self.machine.current.value,
                  message=message, checkpoint=str(path),
                  **({"outcome": NEEDS_ATTENTION} if attention else {}))
        return Outcome(self.workflow_id, status, self.machine.current, message, path,
                       attention)

    def _fail(self, exc: StepFailure) -> Outcome:
        """Record the failure (error log, a `failed` checkpoint) as far as the disk lets us:
        when it cannot be written either, the newest checkpoint — `in_progress`, shown as
        interrupted — is where the resume continues from."""
        state = self.machine.current.value
        self.status = RunStatus.FAILED
        self.last_error = exc.message
        self.error_state.last_error = exc.message
        self.error_state.failed_state = self.machine.current
        self.failure = FailureRecord(step=exc.step_id, failure_class=exc.failure,
                                     message=exc.message, type=exc.error_type,
                                     context=exc.context)
        counts = self.state_failures  # "Retry k/2 available"
        counts[state] = counts.get(state, 0) + 1
        self.state_failures = counts
        unrecorded: StoreFailure | None = None
        failed = self.steps.get(exc.step_id)
        if failed is None or failed.status != StepStatus.FAILED:
            with contextlib.suppress(StoreFailure):  # step failures were logged already
                self.log_error("sm_transition" if exc.error_type == "state_error" else
                               exc.step_id, exc.error_type, exc.message,
                               {**exc.context, "failure_class": exc.failure, "state": state,
                                **self.diagnosis(exc, pending=False)})
        before = self.last_checkpoint
        try:
            self.save(f"failed in {state}: {exc.step_id}")
        except StoreFailure as again:
            unrecorded = again
        path = self.last_checkpoint
        self.emit("finished", status=RunStatus.FAILED, state=state, message=exc.message,
                  step=exc.step_id, failure=exc.failure, checkpoint=str(path))
        lines = [f"workflow {self.workflow_id} FAILED in {state}: {exc.message}"]
        if unrecorded is not None and path == before:
            seq = f"checkpoint {path.name}" if path else "no checkpoint"
            lines.append(f"  the failure could not be recorded either ({unrecorded.message}); "
                         f"the workflow stays at {seq} (shown as interrupted)")
        elif unrecorded is not None:
            lines.append(f"  recorded as failed, but {unrecorded.message}")
        if exc.error_type == "file_error" and exc.context.get("disk_fault"):
            lines.append("  free space (or make the file system writable) first, then")
        lines.append(f"  resume with `baton resume {self.workflow_id}`")
        self.say("\n".join(lines))
        return Outcome(self.workflow_id, RunStatus.FAILED, self.machine.current, exc.message, path)

    def _store_failure(self, exc: StoreFailure) -> StepFailure:
        """The failure a run ends with when its own record cannot be written."""
        return StepFailure(self.machine.current.value, FATAL, exc.message, "file_error",
                           self._fault_context(exc.cause))

    def _file_failure(self, exc: OSError) -> StepFailure:
        """The failure a run ends with when another write (a log, the topic tree) fails."""
        where = "" if isinstance(exc, confine.UnsafePath) or not exc.filename else \
            f"{os.fsdecode(exc.filename)}: "
        return StepFailure(self.machine.current.value, FATAL,
                           f"cannot write {where}{confine.describe(exc)}", "file_error",
                           self._fault_context(exc))

    @staticmethod
    def _fault_context(exc: OSError) -> dict[str, Any]:
        return {"errno": errno.errorcode.get(exc.errno or 0, str(exc.errno)),
                "disk_fault": confine.is_disk_fault(exc),
                "unsafe_path": isinstance(exc, confine.UnsafePath)}

    def _unwritable(self, wid: str, exc: StoreFailure) -> Outcome:
        """Nothing of the workflow could be written (not even its lock): say so and stop."""
        hint = (" free space (or make the file system writable) and run it again" if
                confine.is_disk_fault(exc.cause) else "")
        self.say(f"workflow {wid} FAILED: {exc.message}" + (f";{hint}" if hint else ""))
        return Outcome(wid, RunStatus.FAILED, State.INITIALIZE, exc.message, None)


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"claude": {"model": "x"}}` → `{"claude.model": "x"}` (for saying what --set changed)."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


__all__ = ["Cancelled", "Engine", "EngineError", "Outcome", "RunRequest", "StepFailure",
           "WorkflowBusy"]

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
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import PathError
from ..model.states import State
from ..runs import confine
from ..runs.store import CheckpointStore, WorkflowBusy
from . import preflight, resume
from .failures import (
    FATAL,
    PERMANENT,
    TRANSIENT,
    Cancelled,
    EngineError,
    StepFailure,
    StoreFailure,
)
from .layout import make_topic, planned_topic
from .request import RunRequest, new_record, new_workflow_id, validate_request
from .run import Run
from .state_machine import HAPPY_PATHS, InvalidTransition, WorkflowStateMachine
from .states import HANDLERS


@dataclass
class Outcome:
    workflow_id: str
    status: str  # complete | failed | cancelled
    state: State
    message: str
    checkpoint: Path | None = None

    @property
    def exit_code(self) -> int:
        return {"complete": 0, "cancelled": 130}.get(self.status, 1)


class Engine(Run):
    """Runs or resumes one workflow in this process."""

    async def start(self, req: RunRequest) -> Outcome:
        validate_request(self.root, self.settings, req)
        wid = req.workflow_id or new_workflow_id(req.effective_scope)
        self.store = CheckpointStore(self.root, wid)
        if self.store.dir.exists() and any(self.store.dir.glob("[0-9]*.json")):
            raise EngineError(f"workflow {wid} already exists; use `baton resume {wid}`")
        try:
            self.store.acquire()
        except OSError as exc:
            return self._unwritable(wid, StoreFailure(f"the lock of workflow {wid}", exc))
        try:
            self.data = new_record(wid, req, project=self.root.name, settings=self.settings,
                                   command=self.command)
            self.sm = WorkflowStateMachine(req.effective_scope)
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
            self.data = copy.deepcopy(entry.data) or {}
            self.sm = resume.restore_machine(self.data, str(self.store.dir))
            self.topic = resume.topic_of(self.data)
            problems = resume.resume_problems(self.data)
            if problems and not force:
                raise EngineError("not resuming: " + "; ".join(problems) +
                                  " (use --force to resume anyway)")
            for p in problems:
                self.say(f"resuming despite: {p}")
            if self.data.get("last_error"):
                self.say(f"last run ended with: {self.data['last_error']} (status "
                         f"{self.data.get('status')}, in {self.machine.current.value})")
            try:
                if self.topic is not None:
                    make_topic(self.root, self.topic.path)
                resume.check_classification(self)
                resume.kill_orphans(self)
                resume.rewind(self.machine, self.steps, self.plans, self.say)
                self.data["status"] = "in_progress"
                self.baton["resumed_from"] = entry.sequence
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
        return resume.preview_resume(self.root, self.settings, workflow_id, at)

    def cancel(self) -> None:
        self.cancel_event.set()

    # == the state loop =========================================================================

    async def _drive(self) -> Outcome:
        try:
            self.write_owner()
            self._preflight()
            while True:
                if self.cancel_event.is_set():
                    raise Cancelled()
                state = self.machine.current
                if state in (State.COMPLETE, State.ABANDONED):
                    return self._finish("complete", "workflow complete")
                await self._run_state(state)
                handler = HANDLERS[state]
                nxt = handler.after(self)
                if nxt is None:
                    return self._finish("complete", f"scope {self.machine.scope.value} "
                                        f"finished at {state.value}")
                self._transition(nxt, handler.why(self))
        except Cancelled:
            sm = self.machine
            self.data["status"] = "cancelled"
            self.data["last_error"] = "cancelled by the user"
            try:
                self.save(f"cancelled in {sm.current.value}")
            except StoreFailure as exc:  # still resumable from the checkpoint before
                self.say(f"cancelled, but {exc.message}")
            self.emit("finished", status="cancelled", state=sm.current.value,
                      message="cancelled", checkpoint=str(self.last_checkpoint))
            self.say(f"cancelled in {sm.current.value}; resume with "
                     f"`baton resume {self.workflow_id}`")
            return Outcome(self.workflow_id, "cancelled", sm.current, "cancelled",
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
            self.pgids.clear()
            with contextlib.suppress(StoreFailure):
                self.write_owner()

    def _preflight(self) -> None:
        """Stop before any agent runs when a CLI, its login, a model or the artifact
        location would make the first agent step fail (see workflow/preflight.py)."""
        roles = preflight.roles_ahead(self.settings, (State.INITIALIZE,
                                                      *HAPPY_PATHS[self.machine.scope],
                                                      State.DEBUG))
        uses = [preflight.agent_use(self.root, self.settings, role, self.runner_name)[0]
                for role in roles]
        if not any(u.runner in ("claude", "codex", "gemini") for u in uses):
            return
        specs = self.specs_dir()
        req = self.baton.get("request") or {}
        topic = self.topic.path if self.topic is not None else planned_topic(
            self.root, specs, str(req.get("description") or ""), req.get("plan_path"))
        notes: list[str] = []
        problems, versions = preflight.check(self.root, self.settings, uses, specs,
                                             topic=topic, notes=notes)
        for note in notes:
            self.say(f"preflight: {note}")
        self.baton["agent_clis"] = versions
        if problems:
            text = "; ".join(p.message for p in problems)
            raise StepFailure("preflight", FATAL, f"preflight: {text}", "dependency_error",
                              {"reason": "preflight",
                               "problems": [p.__dict__ for p in problems]})

    async def _run_state(self, state: State) -> None:
        """Run one state's handler, re-running it (completed steps are skipped) while its
        failures are transient and the state's retry budget lasts."""
        handler = HANDLERS[state]
        retries = 0
        timing = self.baton.setdefault("timing", {})
        start = time.monotonic()
        while True:
            try:
                try:
                    await handler.run(self)
                finally:  # wall time per state, summed over runs and resumes
                    timing[state.value] = timing.get(state.value, 0) + int(
                        (time.monotonic() - start) * 1000)
                    start = time.monotonic()
                self.data["error_state"]["retry_count"] = 0
                return
            except StepFailure as exc:
                if exc.failure != TRANSIENT or retries >= self.settings.state_retries:
                    raise
                retries += 1
                self.data["error_state"]["retry_count"] = retries
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

    def _finish(self, status: str, message: str) -> Outcome:
        sm = self.machine
        if sm.current not in (State.COMPLETE, State.ABANDONED) and sm.can(State.COMPLETE):
            self._transition(State.COMPLETE, message)
        self.data["status"] = status
        self.data["last_error"] = None
        self.data["error_state"] = {"last_error": None, "retry_count": 0, "failed_state": None}
        path = self.save(f"{status}: {message}")
        self.say(f"workflow {self.workflow_id} {status}: {message}")
        self.emit("finished", status=status, state=self.machine.current.value,
                  message=message, checkpoint=str(path))
        return Outcome(self.workflow_id, status, self.machine.current, message, path)

    def _fail(self, exc: StepFailure) -> Outcome:
        """Record the failure (error log, a `failed` checkpoint) as far as the disk lets us:
        when it cannot be written either, the newest checkpoint — `in_progress`, shown as
        interrupted — is where the resume continues from."""
        state = self.machine.current.value
        self.data["status"] = "failed"
        self.data["last_error"] = exc.message
        self.data["error_state"].update(last_error=exc.message, failed_state=state)
        self.baton["failure"] = {"step": exc.step_id, "class": exc.failure,
                                 "message": exc.message, "type": exc.error_type,
                                 "context": exc.context}
        unrecorded: StoreFailure | None = None
        if self.steps.get(exc.step_id, {}).get("status") != "failed":
            with contextlib.suppress(StoreFailure):  # step failures were logged already
                self.log_error("sm_transition" if exc.error_type == "state_error" else
                               exc.step_id, exc.error_type, exc.message,
                               {**exc.context, "failure_class": exc.failure, "state": state})
        before = self.last_checkpoint
        try:
            self.save(f"failed in {state}: {exc.step_id}")
        except StoreFailure as again:
            unrecorded = again
        path = self.last_checkpoint
        self.emit("finished", status="failed", state=state, message=exc.message,
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
        return Outcome(self.workflow_id, "failed", self.machine.current, exc.message, path)

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
        return Outcome(wid, "failed", State.INITIALIZE, exc.message, None)


__all__ = ["Cancelled", "Engine", "EngineError", "Outcome", "RunRequest", "StepFailure",
           "WorkflowBusy"]

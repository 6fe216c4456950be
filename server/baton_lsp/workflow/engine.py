"""The workflow engine: runs the seeds' orchestration for real.

One engine process owns one workflow (a file lock says so). It pre-calculates every path,
walks the state machine through one handler per state, launches agents through a runner,
parses their signals, enforces the hard barrier on every artifact, and writes a durable
checkpoint before and after every transition and after every step. A step is the unit of
resume: it records its artifact's SHA-256 and the hashes of its inputs (the reports a plan
was made from, the phase section and the dependency summaries an implement step used), so a
resumed workflow skips exactly the steps whose outputs and inputs are unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import hashlib
import json
import logging
import math
import os
import random
import re
import shutil
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import PathError
from ..model.base import Kind
from ..model.config import DEFAULT_ROLE_AGENTS, BatonConfig, WorkflowSettings
from ..model.plan import DONE, status_word
from ..model.states import STORED_TRANSITIONS, FailureClass, Scope, State
from ..runs.checkpoint import CheckpointError, parse_checkpoint
from ..runs.records import append_error, error_record, state_file_path, utc_now, write_state_file
from ..runs.store import CheckpointStore, WorkflowBusy
from . import accounting, classify, iteration, supervisor
from .barrier import check_artifact
from .layout import AGENT_SCRATCH, TopicDir, allocate_topic, contained, specs_dir, topic_of_plan
from .preflight import agent_file, agent_use
from .process import strip_ansi
from .signals import SignalReader
from .state_machine import HAPPY_PATHS, InvalidTransition, Transition, WorkflowStateMachine

log = logging.getLogger(__name__)

STATE_INDEX = {s: i for i, s in enumerate(
    (State.INITIALIZE, State.RESEARCH, State.PLAN, State.IMPLEMENT, State.TEST, State.DEBUG,
     State.DOCUMENT, State.COMPLETE))}
TRANSIENT, PERMANENT, FATAL = FailureClass.TRANSIENT, FailureClass.PERMANENT, FailureClass.FATAL
NEEDS_PLAN = classify.NEEDS_PLAN
HIERARCHICAL_TOPICS = 4  # the seeds: four or more research agents go through a supervisor
MAX_DESCRIPTION = 10_000
ASPECTS = ("existing implementation and patterns in the codebase", "best practices and "
           "prior art", "risks, edge cases and failure modes", "testing and verification "
           "strategy")


ROLE_CONTRACT = {
    "classifier": [
        "- Classify the task: write the JSON to the artifact path and print it on one line as "
        "CLASSIFICATION_COMPLETE: {\"workflow_type\": <scope>, \"research_complexity\": 1-4, "
        "\"research_topics\": [{\"short_name\", \"detailed_description\" (50-500 chars), "
        "\"filename_slug\" (^[a-z0-9_]{1,50}$), \"research_focus\"}, ...] (as many as the "
        "complexity), \"confidence\": 0-1, \"reasoning\": \"...\"}",
        "- Scope, complexity or topics given below are the user's and must be kept"],
    "research-coordinator": [
        "- Planning only: do not research. Write the invocation plan (one line per topic) to "
        "the artifact path, then print INVOCATION_PLAN_READY: <count> and on the next line "
        "invocations: [{\"topic\": ..., \"report_path\": ...}, ...] using exactly the "
        "report paths below"],
    "implement-coordinator": [
        "- Implement the plan's remaining phases wave by wave as far as your context allows; "
        "write phase summaries to the summaries directory and an iteration summary to the "
        "artifact path",
        "- Then print IMPLEMENTATION_COMPLETE: SUCCESS followed by the brief summary lines "
        "summary_path:, phases_completed: [..], work_remaining: (space-separated Phase_N, or 0), "
        "context_exhausted: true|false, requires_continuation: true|false, "
        "context_usage_percent: N"],
}


class EngineError(Exception):
    """Bad input or an impossible request, reported before anything runs."""


class Cancelled(Exception):
    """The workflow was cancelled (signal or `baton cancel`)."""


class _LoopDone(Exception):
    """The implement iteration loop halted with `completion`."""


@dataclass
class StepFailure(Exception):
    step_id: str
    failure: str
    message: str
    error_type: str
    context: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return f"{self.step_id}: {self.message}"


@dataclass
class RunRequest:
    """What the user asked for; None means "not said" (classification decides)."""

    description: str
    scope: Scope | None = None
    complexity: int | None = None
    topics: list[str] = field(default_factory=list)
    plan_path: str | None = None
    workflow_id: str | None = None


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


def sha256_file(path: Path) -> str | None:
    try:
        h = hashlib.sha256()
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()


def owned_agent_groups(pgids: list[int], workflow_id: str) -> list[int]:
    """The process groups among `pgids` whose leader still carries this workflow's id in its
    environment: a recorded pgid may have been reused by an unrelated process since."""
    marker = f"BATON_WORKFLOW_ID={workflow_id}".encode()
    out = []
    for pgid in pgids:
        try:
            env = Path(f"/proc/{pgid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in env:
            out.append(pgid)
    return out


def derive_topics(description: str, complexity: int) -> list[str]:
    """Research topics from the description when the user named none: its clauses, then
    the standard aspects, `complexity` in all. Deterministic so a resume derives the same."""
    core = re.sub(r"\s+", " ", description).strip()
    parts = [p.strip(" .") for p in re.split(r"[;,]|\band then\b|\band\b|\bthen\b", core)]
    verbs = re.compile(r"^(research|investigate|analy[sz]e|study|plan|implement|build|"
                       r"create|fix|debug|design|add|write)\s+(the\s+)?", re.I)
    clauses: list[str] = []
    for p in parts:
        p = verbs.sub("", p).strip()
        if len(p) >= 3 and p.lower() not in (c.lower() for c in clauses):
            clauses.append(p)
    subject = clauses[0] if clauses else core[:60] or "the request"
    topics = clauses[:complexity]
    for aspect in ASPECTS:
        if len(topics) >= complexity:
            break
        topics.append(f"{subject}: {aspect}")
    return topics[:complexity]


def new_workflow_id(scope: Scope) -> str:
    return f"{scope.value.replace('-', '_')}_{int(time.time())}_{os.getpid() % 100000}" \
           f"{random.randrange(16 ** 3):03x}"


class Engine:
    """Runs or resumes one workflow in this process."""

    def __init__(self, root: Path, config: BatonConfig | None = None, *,
                 runner: str | None = None, say: Callable[[str], None] | None = None,
                 command: str = "baton run",
                 events: Callable[[dict[str, Any]], None] | None = None) -> None:
        self.root = Path(os.path.realpath(root))
        self.config = config or BatonConfig()
        self.settings: WorkflowSettings = self.config.workflow
        self.runner_name = runner
        self.say = say or (lambda line: None)
        self.events = events
        self.command = command
        self.quiet = False  # the CLI's --quiet: no end-of-run summary either
        self.cancel_event = asyncio.Event()
        self.data: dict[str, Any] = {}
        self.sm: WorkflowStateMachine | None = None
        self.store: CheckpointStore | None = None
        self.topic: TopicDir | None = None
        self.pgids: set[int] = set()
        self._runners: dict[str, Any] = {}
        self.last_checkpoint: Path | None = None
        self._phase_hash_cache: dict[str, Any] = {}
        self._state_values: dict[str, Any] | None = None
        self._plan_cache: tuple[str, bytes, Any] | None = None

    # == public =================================================================================

    async def start(self, req: RunRequest) -> Outcome:
        self._validate_request(req)
        wid = req.workflow_id or new_workflow_id(req.scope or classify.keyword_scope(
            req.description, bool(req.plan_path)))
        self.store = CheckpointStore(self.root, wid)
        if self.store.dir.exists() and any(self.store.dir.glob("*.json")):
            raise EngineError(f"workflow {wid} already exists; use `baton resume {wid}`")
        self.store.acquire()
        try:
            self._new_checkpoint(wid, req)
            return await self._drive()
        finally:
            self.store.release()

    async def resume(self, workflow_id: str, *, at: int | None = None,
                     force: bool = False) -> Outcome:
        self.store = CheckpointStore(self.root, workflow_id)
        self.store.acquire()
        try:
            entry = self.store.latest(at)
            self.data = json.loads(json.dumps(entry.data))
            self._restore()
            problems = self.resume_problems()
            if problems and not force:
                raise EngineError("not resuming: " + "; ".join(problems) +
                                  " (use --force to resume anyway)")
            for p in problems:
                self.say(f"resuming despite: {p}")
            if self.data.get("last_error"):
                self.say(f"last run ended with: {self.data['last_error']} (status "
                         f"{self.data.get('status')}, in {self.sm.current.value})")  # type: ignore[union-attr]
            self._check_classification()
            self._kill_orphans()
            self._rewind_for_invalidated()
            self.data["status"] = "in_progress"
            self.data["baton"]["resumed_from"] = entry.sequence
            self._save(f"resume from checkpoint {entry.sequence}")
            self.say(f"resuming {workflow_id} at {self.sm.current.value} "  # type: ignore[union-attr]
                     f"(checkpoint {entry.sequence})")
            return await self._drive()
        finally:
            self.store.release()

    def cancel(self) -> None:
        self.cancel_event.set()

    def emit(self, event: str, **fields: Any) -> None:
        """A structured progress event (`baton run --events` prints them as JSON lines, so
        the language server follows a run live without polling). Kinds: transition, wave,
        step, signal, checkpoint, finished (plus `log` lines from the CLI) and, for the
        coordination tiers, classification, classification_mismatch, supervisor (status
        running | done) and iteration (status running | done | halted, with halt_reason)."""
        if self.events is not None:
            wid = self.store.workflow_id if self.store else None
            self.events({"event": event, "workflow_id": wid, "at": utc_now(), **fields})

    def preview_resume(self, workflow_id: str, at: int | None = None) -> dict[str, Any]:
        """What `resume` would do, without doing it (no lock taken, nothing written): the
        state it restarts in, the steps it skips, the steps it runs again and why, and the
        problems that need --force."""
        self.store = CheckpointStore(self.root, workflow_id)
        entry = self.store.latest(at)
        self.data = json.loads(json.dumps(entry.data))
        self._restore()
        assert self.sm is not None
        failed_state = self.sm.current
        skip, rerun = [], []
        for sid, step in self.data["baton"]["steps"].items():
            if step.get("status") == "done":
                reason = self._invalid_reason(step)
                if reason is None:
                    skip.append({"step": sid, "state": step["state"]})
                else:
                    rerun.append({"step": sid, "state": step["state"], "reason": reason})
            else:
                rerun.append({"step": sid, "state": step["state"],
                              "reason": step.get("message") or f"status {step.get('status')}"})
        self._rewind_for_invalidated(quiet=True)
        return {"workflow_id": workflow_id, "checkpoint": entry.sequence,
                "status": self.data.get("status"), "failed_state": failed_state.value,
                "resume_state": self.sm.current.value, "skip": skip, "rerun": rerun,
                "problems": self.resume_problems(), "running": self.store.locked(),
                "last_error": self.data.get("last_error"), **self._preview_extras()}

    def _preview_extras(self) -> dict[str, Any]:
        """What a resume keeps from the coordination tiers: the saved classification and
        where the implement iteration loop picks up."""
        out: dict[str, Any] = {}
        cls = self.data["state_machine"].get("classification") or {}
        if cls:
            out["classification"] = {"workflow_type": cls.get("workflow_type"),
                                     "research_complexity": cls.get("research_complexity"),
                                     "source": cls.get("source")}
        it = self.data["baton"].get("iteration")
        if it and it.get("halt_reason") != "completion":
            out["iteration"] = {"next": int(it.get("iteration", 0)) + 1,
                                "max_iterations": self.settings.max_iterations,
                                "work_remaining": it.get("work_remaining"),
                                "halt_reason": it.get("halt_reason")}
        return out

    # == setup ==================================================================================

    def _validate_request(self, req: RunRequest) -> None:
        # argv bytes that are not UTF-8 arrive as lone surrogates: make them U+FFFD so the
        # description can be written to JSON, the state file and the agents' environment
        req.description = req.description.encode("utf-8", "surrogateescape").decode(
            "utf-8", "replace")
        req.topics = [t.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
                      for t in req.topics]
        if not req.description.strip():
            raise EngineError("the workflow description is empty")
        if len(req.description) > MAX_DESCRIPTION:
            raise EngineError(f"the description is {len(req.description)} characters; the "
                              f"limit is {MAX_DESCRIPTION}")
        if "\x00" in req.description:
            raise EngineError("the description contains a NUL byte")
        if req.complexity is not None and not 1 <= req.complexity <= 4:
            raise EngineError(f"--complexity must be 1-4, got {req.complexity}")
        if len(req.topics) > 4:
            raise EngineError(f"at most 4 research topics, got {len(req.topics)}")
        if req.topics and req.complexity is not None and req.complexity != len(req.topics):
            raise EngineError(f"--complexity {req.complexity} but {len(req.topics)} --topic "
                              "given: the topic count is the complexity (drop one of them)")
        scope = req.scope or classify.keyword_scope(req.description, bool(req.plan_path))
        if scope in NEEDS_PLAN and not req.plan_path:
            raise EngineError(f"scope {scope.value} works on an existing plan: pass --plan")
        if req.plan_path:
            plan = contained(self.root, req.plan_path, "plan")
            if not plan.is_file():
                raise EngineError(f"plan {plan} does not exist")
        self._check_agents()

    def _check_agents(self) -> None:
        """An explicitly configured behavioural file that does not exist is bad input."""
        for role, value in self.settings.agents.items():
            name = value if isinstance(value, str) else value.agent
            if agent_file(self.root, name) is None:
                raise EngineError(f"[workflow.agents] {role} = {name!r}: no such agent file "
                                  f"(looked for .claude/agents/{name}.md)")

    def _roles_ahead(self) -> list[str]:
        """The roles this workflow's scope will launch agents for (from here on)."""
        assert self.sm is not None
        s = self.settings
        by_state = {
            State.INITIALIZE: ["classifier"] if "classifier" in s.agents else [],
            State.RESEARCH: ["research", *{"agent": ["research-supervisor"],
                                           "planning": ["research-coordinator"]}.get(
                                               s.research_mode, [])],
            State.PLAN: ["plan"],
            State.IMPLEMENT: ["implement-coordinator" if s.implement_mode == "iterations"
                              else "implement"],
            State.DEBUG: ["debug"], State.DOCUMENT: ["document"]}
        states = (State.INITIALIZE, *HAPPY_PATHS[self.sm.scope], State.DEBUG)
        return [r for st in states for r in by_state.get(st, [])]

    def _preflight(self) -> None:
        """Stop before any agent runs when a CLI, its login, a model or the artifact
        location would make the first agent step fail (see workflow/preflight.py)."""
        from .preflight import check

        uses = [agent_use(self.root, self.settings, role, self.runner_name)[0]
                for role in self._roles_ahead()]
        if not any(u.runner in ("claude", "codex", "gemini") for u in uses):
            return
        problems, versions = check(self.root, self.settings, uses, self._specs_dir())
        self.data["baton"]["agent_clis"] = versions
        if problems:
            text = "; ".join(p.message for p in problems)
            raise StepFailure("preflight", FATAL, f"preflight: {text}", "preflight_error",
                              {"problems": [p.__dict__ for p in problems]})

    def _new_checkpoint(self, wid: str, req: RunRequest) -> None:
        now = utc_now()
        scope = req.scope or classify.keyword_scope(req.description, bool(req.plan_path))
        complexity = req.complexity or classify.keyword_complexity(req.description)
        self.sm = WorkflowStateMachine(scope)
        topics = req.topics or derive_topics(req.description, complexity)
        explicit = {"scope": req.scope is not None, "complexity": req.complexity is not None,
                    "topics": bool(req.topics)}
        agent = "classifier" in self.settings.agents and not (
            explicit["scope"] and explicit["topics"])
        rest = [k for k, v in explicit.items() if not v]
        reasoning = "; ".join([f"{k} given to baton run" for k, v in explicit.items() if v] + (
            [f"{', '.join(rest)} from the description's keywords"] if rest else []))
        full = explicit["scope"] and explicit["topics"]
        classification = classify.classification_record(
            scope=scope, topics=[classify.topic_spec(t, req.description) for t in topics],
            confidence=1.0 if full else 0.6, reasoning=reasoning,
            source="user" if explicit["scope"] and explicit["topics"] else "keyword", at=now)
        self.data = {
            "schema_version": "2.1", "checkpoint_id": wid, "workflow_type": scope.value,
            "project_name": self.root.name, "workflow_description": req.description,
            "created_at": now, "updated_at": now, "status": "in_progress",
            "current_phase": 0, "total_phases": 8, "completed_phases": [],
            "workflow_state": {"plan_path": None, "parallel_execution_enabled": True,
                               "max_wave_parallelism": self.settings.max_parallel},
            "last_error": None, "tests_passing": None, "debug_iteration_count": 0,
            "debug_report_path": None,
            "state_machine": {
                "current_state": "initialize", "completed_states": [],
                "transition_table": dict(STORED_TRANSITIONS),
                "workflow_config": {"scope": scope.value, "description": req.description,
                                    "command": self.command},
                "classification": classification},
            "phase_data": {}, "supervisor_state": {},
            "error_state": {"last_error": None, "retry_count": 0, "failed_state": None},
            "metadata": {"checkpoint_id": wid, "project_name": self.root.name,
                         "created_at": now, "updated_at": now},
            "baton": {"version": __version__, "request": {
                "description": req.description, "scope": scope.value,
                "complexity": len(topics), "topics": topics, "plan_path": req.plan_path},
                "classify": {"agent": agent, "done": not agent, "explicit": explicit},
                "steps": {}, "history": [], "paths": {}, "timing": {}},
        }
        self._save("created")

    def _restore(self) -> None:
        try:  # the schema-2.1 models validate what the engine is about to trust
            parse_checkpoint(json.dumps(self.data), str(self.store.dir))  # type: ignore[union-attr]
        except CheckpointError as exc:
            raise EngineError(f"checkpoint is not usable: {exc}") from None
        if "baton" not in self.data or "request" not in self.data.get("baton", {}):
            raise EngineError("this checkpoint was not written by `baton run` and cannot be "
                              "resumed by it")
        smd = self.data["state_machine"]
        self.sm = WorkflowStateMachine(Scope(smd["workflow_config"]["scope"]),
                                       State(smd["current_state"]),
                                       [State(s) for s in smd.get("completed_states", [])])
        self.sm.history = [Transition(State(h["from"]), State(h["to"]), h.get("reason", ""),
                                      h.get("at", "")) for h in self.data["baton"]["history"]]
        paths = self.data["baton"].get("paths") or {}
        if paths.get("topic_dir"):
            tdir = Path(paths["topic_dir"])
            self.topic = TopicDir(int(paths.get("topic_number") or 0), tdir.name, tdir)
            for sub in ("reports", "plans", "summaries", "debug"):
                (tdir / sub).mkdir(parents=True, exist_ok=True)

    def _check_classification(self) -> None:
        """The state file is the bash side's copy of the classification; when it disagrees
        with the checkpoint (edited, or left by another run) say so, log it, and trust the
        checkpoint — it is checksummed, the state file is not. The next save rewrites it."""
        assert self.store is not None
        cls = self.data["state_machine"].get("classification") or {}
        values = classify.read_state_file(state_file_path(self.root, self.store.workflow_id))
        if not values:
            return
        diffs = classify.mismatches(cls, values)
        if not diffs:
            return
        text = "; ".join(f"{k}: state file {a!r}, checkpoint {b!r}" for k, a, b in diffs)
        self.say(f"classification mismatch between the state file and the checkpoint ({text});"
                 " using the checkpoint")
        self.emit("classification_mismatch", differences=[
            {"key": k, "state_file": a, "checkpoint": b} for k, a, b in diffs])
        self._log_error("validate_classification_consistency", "state_error",
                        f"classification mismatch: {text}; the checkpoint wins",
                        {"differences": {k: {"state_file": a, "checkpoint": b}
                                         for k, a, b in diffs}})

    def resume_problems(self) -> list[str]:
        """Why resuming needs --force: finished, too old, plan edited since the checkpoint."""
        out = []
        status = self.data.get("status")
        if status == "complete":
            out.append("the workflow is already complete")
        created = self.data.get("created_at") or ""
        with contextlib.suppress(ValueError):
            age = dt.datetime.now(dt.UTC) - dt.datetime.fromisoformat(created.replace("Z",
                                                                                      "+00:00"))
            if age > dt.timedelta(days=7, hours=1):
                out.append(f"the checkpoint is {age.days} days old (max 7)")
        plan = (self.data.get("workflow_state") or {}).get("plan_path")
        recorded = self.data["baton"].get("plan_sha256")
        if plan and recorded is not None and Path(plan).is_file() and \
                sha256_file(Path(plan)) != recorded:
            out.append(f"the plan {plan} was modified since the checkpoint (changed phases "
                       "and what depends on them will run again)")
        return out

    def _rewind_for_invalidated(self, quiet: bool = False) -> None:
        """Go back to the earliest state that has a finished step whose artifact was deleted
        (or whose inputs changed); later valid steps are skipped when their state runs."""
        assert self.sm is not None
        earliest: State | None = None
        for sid, step in self.data["baton"]["steps"].items():
            if step.get("status") != "done" or self._step_valid(step):
                continue
            st = State(step["state"])
            if not quiet:
                self.say(f"{sid}: {self._invalid_reason(step)}; it will run again")
            if earliest is None or STATE_INDEX[st] < STATE_INDEX[earliest]:
                earliest = st
        current = self.sm.current
        if current in (State.COMPLETE, State.ABANDONED) or (
                earliest is not None and STATE_INDEX[earliest] < STATE_INDEX.get(current, 99)):
            target = earliest or current
            if target != current:
                self.sm.history.append(Transition(current, target, "resume: rewound to redo "
                                                  "invalidated steps", utc_now()))
                self.sm.current = target
                self.sm.completed = [s for s in self.sm.completed
                                     if STATE_INDEX.get(s, 0) < STATE_INDEX[target]]

    def _kill_orphans(self) -> None:
        """Agents of a killed engine survive in their own process groups: stop them, but
        only processes whose environment proves they belong to this workflow."""
        from .process import kill_group

        assert self.store is not None
        for pgid in owned_agent_groups(self.store.owner().get("pgids", []),
                                       self.store.workflow_id):
            self.say(f"stopping agent process group {pgid} left by the previous engine")
            kill_group(pgid, self.settings.kill_grace)

    # == checkpointing ==========================================================================

    def _sync(self) -> None:
        assert self.sm is not None
        d = self.data
        sm = d["state_machine"]
        sm["current_state"] = self.sm.current.value
        sm["completed_states"] = [s.value for s in self.sm.completed]
        d["current_phase"] = STATE_INDEX.get(self.sm.current, 0)
        d["completed_phases"] = sorted({STATE_INDEX[s] for s in self.sm.completed
                                        if s in STATE_INDEX})
        d["baton"]["history"] = [{"from": t.source.value, "to": t.target.value,
                                  "reason": t.reason, "at": t.at} for t in self.sm.history]
        now = utc_now()
        d["updated_at"] = now
        d["metadata"]["updated_at"] = now
        plan = (d.get("workflow_state") or {}).get("plan_path")
        if plan and Path(plan).is_file():
            d["plan_modification_time"] = int(Path(plan).stat().st_mtime)
            d["baton"]["plan_sha256"] = sha256_file(Path(plan))

    def _save(self, event: str) -> Path:
        assert self.store is not None
        self._sync()
        try:
            path = self.store.save(self.data, event)
        except OSError as exc:
            raise StepFailure("checkpoint", FATAL, f"cannot write checkpoint: "
                              f"{exc.strerror or exc}", "file_error") from None
        self.last_checkpoint = path
        self._write_state_file()
        self.emit("checkpoint", label=event, path=str(path), status=self.data.get("status"),
                  state=self.data["state_machine"]["current_state"])
        return path

    def _write_state_file(self) -> None:
        assert self.sm is not None
        d = self.data
        paths = d["baton"].get("paths") or {}
        reports = paths.get("reports") or []
        values: dict[str, Any] = {
            "WORKFLOW_SCOPE": self.sm.scope.value, "TERMINAL_STATE": self.sm.terminal.value,
            "CURRENT_STATE": self.sm.current.value, "WORKFLOW_STATUS": d.get("status"),
            "WORKFLOW_DESCRIPTION": d.get("workflow_description"),
            "TOPIC_PATH": paths.get("topic_dir"), "PLAN_PATH": paths.get("plan"),
            "REPORTS_DIR": paths.get("reports_dir"), "PLANS_DIR": paths.get("plans_dir"),
            "SUMMARIES_DIR": paths.get("summaries_dir"), "DEBUG_DIR": paths.get("debug_dir"),
            "CHECKPOINT_DIR": str(self.store.dir) if self.store else None,
            "RESEARCH_COMPLEXITY": d["state_machine"]["classification"]["research_complexity"],
            "REPORT_PATHS_COUNT": len(reports),
        }
        for i, r in enumerate(reports):
            values[f"REPORT_PATH_{i}"] = r
        values["REPORT_PATHS_JSON"] = reports
        classification = d["state_machine"].get("classification") or {}
        values["RESEARCH_TOPICS_JSON"] = classification.get("research_topics") or []
        values["USE_HIERARCHICAL_RESEARCH"] = len(reports) >= HIERARCHICAL_TOPICS
        it = d["baton"].get("iteration")
        if it:
            values["ITERATION"] = it.get("iteration")
            values["MAX_ITERATIONS"] = it.get("max_iterations")
            values["CONTINUATION_CONTEXT"] = it.get("continuation_context")
            values["WORK_REMAINING"] = it.get("work_remaining")
            values["HALT_REASON"] = it.get("halt_reason")
        values["COMPLETED_STATES_COUNT"] = len(self.sm.completed)
        for i, s in enumerate(self.sm.completed):
            values[f"COMPLETED_STATE_{i}"] = s.value
        wid = self.store.workflow_id  # type: ignore[union-attr]
        if values == self._state_values and state_file_path(self.root, wid).is_file():
            return  # most checkpoints (a phase done) change nothing the state file says
        try:
            write_state_file(self.root, wid, values)
            self._state_values = values
        except OSError as exc:
            log.warning("cannot write the state file: %s", exc)

    def _owner(self) -> None:
        if self.store:
            with contextlib.suppress(OSError):
                self.store.write_owner({"pid": os.getpid(), "started_at": utc_now(),
                                        "pgids": sorted(self.pgids),
                                        "workflow_id": self.store.workflow_id})

    # == the state loop =========================================================================

    async def _drive(self) -> Outcome:
        assert self.sm is not None and self.store is not None
        self._owner()
        try:
            self._preflight()
            while True:
                if self.cancel_event.is_set():
                    raise Cancelled()
                state = self.sm.current
                if state in (State.COMPLETE, State.ABANDONED):
                    return self._finish("complete", "workflow complete")
                await self._run_state(state)
                nxt = self._next_state(state)
                if nxt is None:
                    return self._finish("complete", f"scope {self.sm.scope.value} finished "
                                        f"at {state.value}")
                self._transition(nxt, self._reason(state, nxt))
        except Cancelled:
            self.data["status"] = "cancelled"
            self.data["last_error"] = "cancelled by the user"
            self._save(f"cancelled in {self.sm.current.value}")
            self.emit("finished", status="cancelled", state=self.sm.current.value,
                      message="cancelled", checkpoint=str(self.last_checkpoint))
            self.say(f"cancelled in {self.sm.current.value}; resume with "
                     f"`baton resume {self.store.workflow_id}`")
            return Outcome(self.store.workflow_id, "cancelled", self.sm.current, "cancelled",
                           self.last_checkpoint)
        except StepFailure as exc:
            return self._fail(exc)
        except (EngineError, PathError) as exc:  # bad configuration met mid-run
            return self._fail(StepFailure(self.sm.current.value, PERMANENT, str(exc),
                                          "validation_error"))
        except OSError as exc:  # the disk refused a write outside the checkpoint path
            return self._fail(StepFailure(self.sm.current.value, FATAL,
                                          f"file error: {exc.strerror or exc} "
                                          f"({exc.filename or 'unknown file'})", "file_error"))
        except InvalidTransition as exc:
            return self._fail(StepFailure(self.sm.current.value, PERMANENT, str(exc),
                                          "state_error", {
                                              "current_state": exc.current.value,
                                              "target_state": exc.target.value,
                                              "valid_transitions": ",".join(
                                                  sorted(s.value for s in exc.valid)),
                                              "transition_reason": exc.reason}))
        finally:
            self.pgids.clear()
            self._owner()

    def _reason(self, state: State, nxt: State) -> str:
        if state == State.TEST:
            return "tests passed" if self.data.get("tests_passing") is not False else \
                "tests failed"
        if state == State.DEBUG:
            return "fix applied, testing again"
        return f"{state.value} finished"

    def _next_state(self, state: State) -> State | None:
        assert self.sm is not None
        if state == State.INITIALIZE:
            return HAPPY_PATHS[self.sm.scope][0]
        if state == self.sm.terminal and state != State.COMPLETE and not (
                state == State.TEST and self.data.get("tests_passing") is False):
            return State.COMPLETE
        if state == State.TEST:
            if self.data.get("tests_passing") is False:
                return State.DEBUG
            return State.DOCUMENT if self.sm.scope == Scope.FULL_IMPLEMENTATION else \
                State.COMPLETE
        if state == State.DEBUG and self.sm.scope in (Scope.FULL_IMPLEMENTATION,
                                                      Scope.TEST_AND_DEBUG):
            return State.TEST
        return self.sm.next_on_happy_path()

    def _transition(self, target: State, reason: str) -> None:
        assert self.sm is not None
        source = self.sm.current
        self._save(f"before {source.value} -> {target.value}")
        self.sm.transition(target, reason)
        self.say(f"── {source.value} → {target.value} ({reason})")
        self.emit("transition", source=source.value, target=target.value, reason=reason,
                  checkpoint=str(self.last_checkpoint))
        self._save(f"after {source.value} -> {target.value}")

    def _finish(self, status: str, message: str) -> Outcome:
        assert self.sm is not None and self.store is not None
        if self.sm.current not in (State.COMPLETE, State.ABANDONED) and \
                self.sm.can(State.COMPLETE):
            self._transition(State.COMPLETE, message)
        self.data["status"] = status
        self.data["last_error"] = None
        self.data["error_state"] = {"last_error": None, "retry_count": 0, "failed_state": None}
        path = self._save(f"{status}: {message}")
        self.say(f"workflow {self.store.workflow_id} {status}: {message}")
        self.emit("finished", status=status, state=self.sm.current.value, message=message,
                  checkpoint=str(path))
        return Outcome(self.store.workflow_id, status, self.sm.current, message, path)

    def _fail(self, exc: StepFailure) -> Outcome:
        assert self.sm is not None and self.store is not None
        self.data["status"] = "failed"
        self.data["last_error"] = exc.message
        es = self.data["error_state"]
        es.update(last_error=exc.message, failed_state=self.sm.current.value)
        self.data["baton"]["failure"] = {"step": exc.step_id, "class": exc.failure,
                                         "message": exc.message, "type": exc.error_type,
                                         "context": exc.context}
        own = self.data["baton"]["steps"].get(exc.step_id, {})
        if own.get("status") != "failed":  # step failures were logged when they happened
            with contextlib.suppress(StepFailure):
                self._log_error("sm_transition" if exc.error_type == "state_error" else
                                exc.step_id, exc.error_type, exc.message,
                                {**exc.context, "failure_class": exc.failure,
                                 "state": self.sm.current.value})
        path = self._save(f"failed in {self.sm.current.value}: {exc.step_id}")
        self.emit("finished", status="failed", state=self.sm.current.value,
                  message=exc.message, step=exc.step_id, failure=exc.failure,
                  checkpoint=str(path))
        self.say(f"workflow {self.store.workflow_id} FAILED in {self.sm.current.value}: "
                 f"{exc.message}\n  resume with `baton resume {self.store.workflow_id}`")
        return Outcome(self.store.workflow_id, "failed", self.sm.current, exc.message, path)

    async def _run_state(self, state: State) -> None:
        """Run one state's handler, re-running it (completed steps are skipped) while its
        failures are transient and the state's retry budget lasts."""
        handler: Callable[[], Awaitable[None]] = {
            State.INITIALIZE: self._initialize, State.RESEARCH: self._research,
            State.PLAN: self._plan, State.IMPLEMENT: self._implement, State.TEST: self._test,
            State.DEBUG: self._debug, State.DOCUMENT: self._document,
        }[state]
        retries = 0
        timing = self.data["baton"].setdefault("timing", {})
        start = time.monotonic()
        while True:
            try:
                try:
                    await handler()
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
                self._save(f"retry {state.value} ({retries})")
                await self._sleep(self._delay(retries))

    # == state handlers =========================================================================

    async def _initialize(self) -> None:
        """Classify (when a classifier agent is configured), save the classification, then
        pre-calculate every path before any other agent runs."""
        req = self.data["baton"]["request"]
        paths = self.data["baton"]["paths"]
        cls_state = self.data["baton"].setdefault("classify", {"agent": False, "done": True})
        if not cls_state.get("done"):
            try:
                await self._classify_agent()
            except StepFailure as exc:
                if exc.failure == FATAL:
                    raise  # the environment is broken: every later agent would fail too
                # The keyword classification made at start stays; say why it is used.
                record = self.data["state_machine"]["classification"]
                record["source"] = "keyword, after the classifier agent failed"
                record["reasoning"] = f"classifier agent failed: {exc.message[:300]}"
                self.say(f"classifier agent failed ({exc.message[:200]}); using the keyword "
                         "classification")
                self.emit("classifier_fallback", message=exc.message)
            cls_state["done"] = True
        classification = self.data["state_machine"]["classification"]
        if not cls_state.get("announced"):
            cls_state["announced"] = True
            self.say(f"classified ({classification.get('source')}): "
                     f"{classification['workflow_type']}, "
                     f"{classification['research_complexity']} research topic(s): "
                     + "; ".join(classify.topic_names(classification)))
            self._save("classified")
            self.emit("classification", source=classification.get("source"),
                      scope=classification["workflow_type"],
                      complexity=classification["research_complexity"],
                      topics=classify.topic_names(classification),
                      confidence=classification.get("confidence"))
        if self.topic is None:
            base = self._specs_dir()
            if req.get("plan_path"):
                self.topic = topic_of_plan(self.root, Path(req["plan_path"]), base)
            else:
                self.topic = allocate_topic(self.root, req["description"], base)
        t = self.topic
        reports = [str(t.reports / f"{i:03d}_{slug}.md")
                   for i, slug in enumerate(classify.topic_slugs(classification), 1)]
        plan = str(contained(self.root, req["plan_path"], "plan")) if req.get("plan_path") \
            else str(t.plans / f"{t.number:03d}_{t.slug}_plan.md")
        paths.update(topic_dir=str(t.path), topic_number=t.number, reports=reports, plan=plan,
                     reports_dir=str(t.reports), plans_dir=str(t.plans),
                     summaries_dir=str(t.summaries), debug_dir=str(t.debug))
        for p in [*reports, plan]:
            contained(self.root, p, "artifact path")
        ws = self.data["workflow_state"]
        ws.update(topic_directory=str(t.path), topic_number=t.number, plan_path=plan)
        self.data.update(topic_directory=str(t.path), topic_number=t.number)
        self.say(f"workflow {self.store.workflow_id}: topic {t.path.relative_to(self.root)}")  # type: ignore[union-attr]
        self._save("paths pre-calculated")

    async def _classify_agent(self) -> None:
        """The classifier agent's `CLASSIFICATION_COMPLETE: {json}`, validated (a broken
        answer is a permanent failure naming the rule), merged under what the user said."""
        assert self.sm is not None and self.store is not None
        baton = self.data["baton"]
        req, explicit = baton["request"], baton["classify"].get("explicit", {})
        artifact = (self._specs_dir() / AGENT_SCRATCH /
                    f"classification_{self.store.workflow_id}.json")
        parsed: list[classify.ClassifierOutput] = []

        def verify(path: Path, reader: SignalReader) -> str | None:
            sig = reader.first("CLASSIFICATION_COMPLETE")
            try:
                out = classify.parse_classifier_output(sig.value if sig else None)
            except classify.ClassificationError as exc:
                return f"classifier: {exc}"
            if explicit.get("complexity") and out.research_complexity != req["complexity"]:
                return (f"classifier: returned {out.research_complexity} topic(s) but "
                        f"--complexity asked for {req['complexity']}")
            scope = Scope(req["scope"]) if explicit.get("scope") else out.workflow_type
            if (scope in NEEDS_PLAN) != bool(req.get("plan_path")):
                return (f"classifier: scope {scope.value} " + (
                    "works on an existing plan, and no --plan was given" if scope in NEEDS_PLAN
                    else "does not use the --plan that was given") + "; pass --scope")
            parsed.append(out)
            return None

        extra = {"BATON_SCOPE": req["scope"] if explicit.get("scope") else "",
                 "BATON_RESEARCH_COMPLEXITY": str(req["complexity"])
                 if explicit.get("complexity") else "",
                 "BATON_TOPICS_JSON": json.dumps(req["topics"]) if explicit.get("topics") else "",
                 "BATON_PLAN_PATH": req.get("plan_path") or ""}
        artifact.parent.mkdir(parents=True, exist_ok=True)
        await self._agent_step("classify", State.INITIALIZE, "classifier", artifact, extra, {},
                               verify=verify)
        step = baton["steps"]["classify"]
        if parsed:
            step["classification"] = parsed[0].model_dump(mode="json")
        out = classify.ClassifierOutput.model_validate(step["classification"])
        scope = Scope(req["scope"]) if explicit.get("scope") else out.workflow_type
        topics = [t.model_dump() for t in out.research_topics]
        if explicit.get("topics"):
            topics = [classify.topic_spec(t, req["description"]) for t in req["topics"]]
        record = classify.classification_record(
            scope=scope, topics=topics, confidence=out.confidence,
            reasoning=out.reasoning or "classifier agent", source="agent", at=utc_now())
        self.data["state_machine"]["classification"] = record
        req.update(scope=scope.value, topics=classify.topic_names(record),
                   complexity=len(topics))
        self.data["workflow_type"] = scope.value
        self.data["state_machine"]["workflow_config"]["scope"] = scope.value
        if scope != self.sm.scope:
            history = self.sm.history
            self.sm = WorkflowStateMachine(scope)
            self.sm.history = history

    async def _research(self) -> None:
        """Below four topics the specialists run directly (flat); at four or more through the
        supervisor tier: `supervisor` mode runs the workers on the supervisor's behalf,
        `planning` mode first asks a coordinator agent for the invocation plan. Either way
        each report's metadata — not the report — is what goes up, and ≥ 50 % of the
        reports is a (recorded) partial success."""
        assert self.store is not None
        paths = self.data["baton"]["paths"]
        topics = list(self.data["baton"]["request"]["topics"])
        reports = list(paths["reports"])
        mode = "flat" if len(topics) < HIERARCHICAL_TOPICS else self.settings.research_mode
        if mode == "planning":
            order = await self._invocation_plan(topics, reports)
        else:
            order = list(zip(topics, reports, strict=True))
        index = {r: i for i, r in enumerate(reports, 1)}
        sem = asyncio.Semaphore(self.settings.research_parallel)
        if mode != "flat":
            self.say(f"research: {len(topics)} topics through the {mode} supervisor")
            self.emit("supervisor", mode=mode, workers=len(topics), status="running")

        async def one(topic: str, report: str) -> None:
            async with sem:
                await self._agent_step(f"research.{index[report]}", State.RESEARCH, "research",
                                       Path(report), {"BATON_TOPIC": topic}, {},
                                       metadata=supervisor.extract_metadata)

        start = time.monotonic()
        if mode == "agent":
            results: list[Any] = await self._supervisor_agent(order, index)
        else:
            results = await asyncio.gather(*(one(t, r) for t, r in order),
                                           return_exceptions=True)
        wall_ms = int((time.monotonic() - start) * 1000)
        self._reraise_cancel(results)
        failures = [r for r in results if isinstance(r, StepFailure)]
        others = [r for r in results if isinstance(r, BaseException) and
                  not isinstance(r, StepFailure)]
        if others:
            raise others[0]
        ok = len(results) - len(failures)
        needed = math.ceil(len(results) / 2)
        info = {"reports_ok": ok, "reports_total": len(results), "mode": mode,
                "partial": bool(failures) and ok >= needed,
                "failed_topics": [f.step_id for f in failures], "wall_ms": wall_ms}
        self.data["baton"]["research"] = info
        if mode != "flat":
            self._supervisor_checkpoint(mode, order, index, failures)
        if failures and ok >= needed:
            self.say(f"research: partial success, {ok}/{len(results)} reports (≥ 50 %); "
                     f"continuing without {', '.join(f.step_id for f in failures)}")
        elif failures:
            worst = _worst(failures)
            raise StepFailure("research", worst.failure,
                              f"only {ok}/{len(results)} research reports were created (50 % "
                              f"needed): " + "; ".join(f.message for f in failures),
                              worst.error_type, {"failed_steps": [f.step_id for f in failures]})

    async def _supervisor_agent(self, order: list[tuple[str, str]], index: dict[str, int]
                                ) -> list[StepFailure | None]:
        """`agent` mode: one research-supervisor agent runs the workers itself (a real agent
        with its Task tool; the scripted one spawns scripted workers in parallel). The engine
        trusts none of it: every report goes through the hard barrier, and the metadata is
        extracted here, from the files. Each report gets its own `research.N` record, so a
        resume asks the supervisor only for the reports still missing."""
        steps = self.data["baton"]["steps"]
        pending = [(t, r) for t, r in order if not self._skippable(f"research.{index[r]}")]
        results: list[StepFailure | None] = [None] * (len(order) - len(pending))
        if not pending:
            return results
        sid = "research.supervisor"
        steps.pop(sid, None)  # asked again: for the reports still missing
        summary = Path(self.data["baton"]["paths"]["reports_dir"]) / ".supervisor_summary.md"
        extra = {"BATON_TOPICS_JSON": json.dumps([t for t, _ in pending]),
                 "BATON_REPORT_PATHS": json.dumps([r for _, r in pending]),
                 "BATON_WORKER_IDS": json.dumps([f"research.{index[r]}" for _, r in pending])}
        failure: StepFailure | None = None
        reader: SignalReader | None = None
        try:
            reader = await self._agent_step(sid, State.RESEARCH, "research-supervisor",
                                            summary, extra, {})
        except StepFailure as exc:
            failure = exc  # reports it did write still count
        reported = reader.reported_paths() if reader is not None else []
        for topic, report in pending:
            wid = f"research.{index[report]}"
            path = Path(report)
            barrier = check_artifact(self.root, path, reported, "report")
            if barrier is None:
                meta = supervisor.extract_metadata(path)
                steps[wid] = {"state": "research", "role": "research", "status": "done",
                              "attempts": 1, "artifact": report, "inputs": {},
                              "via": sid, "topic": topic, "finished_at": utc_now(),
                              "sha256": sha256_file(path), "size": path.stat().st_size,
                              "metadata": meta,
                              "context": accounting.step_context("", meta, path)}
                results.append(None)
                continue
            message = (f"{failure.message}; " if failure else "") + barrier.message
            steps[wid] = {"state": "research", "role": "research", "status": "failed",
                          "attempts": 1, "artifact": report, "inputs": {}, "via": sid,
                          "topic": topic, "failure": PERMANENT, "message": message}
            results.append(StepFailure(wid, failure.failure if failure else PERMANENT,
                                       message, "validation_error", barrier.context()))
        self.data["baton"]["context"] = accounting.aggregate(steps)
        return results

    def _supervisor_checkpoint(self, mode: str, order: list[tuple[str, str]],
                               index: dict[str, int], failures: list[StepFailure]) -> None:
        """The supervisor section of the checkpoint (and the real layout's
        `reports/SUPERVISOR_CHECKPOINT.json`): per worker its status, duration and metadata,
        and the aggregate passed up."""
        assert self.store is not None
        steps = self.data["baton"]["steps"]
        failed = {f.step_id: f.message for f in failures}
        workers = []
        for topic, report in order:
            sid = f"research.{index[report]}"
            step = steps.get(sid, {})
            ok = step.get("status") == "done"
            w: dict[str, Any] = {"worker_id": sid, "topic": topic,
                                 "status": "completed" if ok else "failed",
                                 "output_path": report,
                                 "duration_ms": step.get("duration_ms")}
            if ok:
                w["metadata"] = {**(step.get("metadata") or {}), "topic": topic}
                w["context_tokens"] = (step.get("context") or {}).get("passed_tokens", 0)
            else:
                w["error"] = failed.get(sid) or step.get("message") or "failed"
            workers.append(w)
        own = steps.get("research.supervisor") if mode == "agent" else None
        section = supervisor.supervisor_section(
            supervisor_id=f"research_supervisor_{self.store.workflow_id}", mode=mode,
            at=utc_now(), workers=workers,
            total_ms=own.get("duration_ms") if own else None)
        self.data["supervisor_state"] = section
        target = Path(self.data["baton"]["paths"]["reports_dir"]) / "SUPERVISOR_CHECKPOINT.json"
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(section, indent=2, ensure_ascii=False) + "\n",
                       encoding="utf-8")
        os.replace(tmp, target)
        agg = section["aggregated_metadata"]
        self.say(f"research supervisor: {agg['reports_count']}/{section['worker_count']} "
                 f"workers completed; {agg['context_tokens']} tokens of metadata passed up")
        self.emit("supervisor", mode=mode, workers=section["worker_count"], status="done",
                  completed=agg["reports_count"], context_tokens=agg["context_tokens"],
                  path=str(target))
        self._save("research supervisor aggregated")

    async def _invocation_plan(self, topics: list[str], reports: list[str]
                               ) -> list[tuple[str, str]]:
        """Planning-only mode: the coordinator agent returns `INVOCATION_PLAN_READY: N` and
        the invocations; the engine checks them against its own paths and runs them."""
        plan_file = Path(self.data["baton"]["paths"]["reports_dir"]) / ".invocation-plan.txt"
        checked: list[list[tuple[str, str]]] = []

        def verify(path: Path, reader: SignalReader) -> str | None:
            sig = reader.first("INVOCATION_PLAN_READY")
            order, problem = supervisor.check_invocation_plan(
                sig.value if sig else None, reader.fields.get("invocations"), topics, reports)
            if problem:
                return f"research coordinator: {problem}"
            checked.append(order or [])
            return None

        await self._agent_step("research.coordinator", State.RESEARCH, "research-coordinator",
                               plan_file, {"BATON_TOPICS_JSON": json.dumps(topics),
                                           "BATON_REPORT_PATHS": json.dumps(reports)}, {},
                               verify=verify)
        step = self.data["baton"]["steps"]["research.coordinator"]
        if checked:
            step["invocations"] = [{"topic": t, "report_path": r} for t, r in checked[0]]
        return [(i["topic"], i["report_path"]) for i in step.get("invocations", [])] or \
            list(zip(topics, reports, strict=True))

    def _good_reports(self) -> list[str]:
        steps = self.data["baton"]["steps"]
        return [s["artifact"] for sid, s in sorted(steps.items())
                if sid.startswith("research.") and s.get("role", "research") == "research"
                and s.get("status") == "done" and Path(s["artifact"]).is_file()]

    async def _plan(self) -> None:
        paths = self.data["baton"]["paths"]
        plan = Path(paths["plan"])
        reports = self._good_reports()
        inputs = {r: sha256_file(Path(r)) for r in reports}
        revise = self.sm.scope == Scope.RESEARCH_AND_REVISE  # type: ignore[union-attr]
        steps = self.data["baton"]["steps"]
        metadata = [{"path": s["artifact"], **(s.get("metadata") or {})}
                    for s in steps.values() if s.get("artifact") in reports]
        extra = {"BATON_REPORT_PATHS": json.dumps(reports), "BATON_PLAN_PATH": str(plan),
                 "BATON_RESEARCH_METADATA": json.dumps(metadata, ensure_ascii=False)}
        before = sha256_file(plan) if revise else None
        if revise and not self._skippable("plan"):
            backup = plan.parent / "backups" / f"{plan.stem}.{time.strftime('%Y%m%d_%H%M%S')}.md"
            backup.parent.mkdir(exist_ok=True)
            shutil.copy2(plan, backup)

        def verify(path: Path, reader: SignalReader) -> str | None:
            if revise and sha256_file(path) == before:
                return f"the plan {path} was not changed by the revise agent"
            return self._plan_problem(path)

        await self._agent_step("plan", State.PLAN, "revise" if revise else "plan", plan,
                               extra, inputs, verify=verify)

    def _plan_problem(self, path: Path) -> str | None:
        plan = self._load_plan(path)
        if isinstance(plan, str):
            return plan
        from ..model.graph import build_graph

        if not plan.phases:
            return f"the plan {path} has no phases (expected `### Phase N: Title` headings)"
        graph = build_graph(plan)
        if graph.cycles:
            cyc = " → ".join(graph.cycles[0])
            return f"the plan {path} has a dependency cycle {cyc}; no wave order exists"
        return None

    def _load_plan(self, path: Path) -> Any:
        from ..model.plan import Plan
        from ..parse import parse_bytes

        try:
            raw = path.read_bytes()
        except OSError as exc:
            return f"cannot read the plan {path}: {exc.strerror or exc}"
        cached = self._plan_cache
        if cached is not None and cached[0] == str(path) and cached[1] == raw:
            doc = cached[2]  # the same bytes: validation, hashes and waves share one parse
        else:
            doc = parse_bytes(Kind.PLAN, raw, str(path))
            self._plan_cache = (str(path), raw, doc)
        if not isinstance(doc, Plan):
            reason = getattr(doc, "reason", "not a plan")
            return f"the plan {path} cannot be read: {reason}"
        return doc

    async def _implement(self) -> None:
        from ..model.graph import build_graph

        paths = self.data["baton"]["paths"]
        plan_path = Path(paths["plan"])
        plan = self._load_plan(plan_path)
        if isinstance(plan, str):
            raise StepFailure("implement", PERMANENT, plan, "file_error")
        problem = self._plan_problem(plan_path)
        if problem:
            raise StepFailure("implement", PERMANENT, problem, "validation_error")
        graph = build_graph(plan)
        sections = self._phase_hashes(plan_path)
        done_in_plan = {p.id for p in plan.phases if status_word(p) in DONE}
        ws = self.data["workflow_state"]
        ws.update(wave_structure={str(i): [_num(p) for p in w]
                                  for i, w in enumerate(graph.waves, 1)},
                  total_waves=len(graph.waves))
        if self.settings.implement_mode == "iterations":
            todo = [p.id for p in plan.phases if p.id not in done_in_plan]
            with contextlib.suppress(_LoopDone):
                await self._implement_iterations(plan_path, todo)
            return
        ws.setdefault("wave_results", {})
        summaries = Path(paths["summaries_dir"])
        sem = asyncio.Semaphore(self.settings.max_parallel)

        def summary_of(pid: str) -> Path:
            return summaries / f"phase_{pid.replace('.', '_')}_summary.md"

        async def phase(pid: str) -> None:
            inputs: dict[str, str | None] = {f"{plan_path}#phase-{pid}": sections.get(pid)}
            for dep in graph.deps.get(pid, []):
                if dep not in done_in_plan:
                    inputs[str(summary_of(dep))] = sha256_file(summary_of(dep))
            async with sem:
                await self._agent_step(
                    f"implement.phase-{pid}", State.IMPLEMENT, "implement", summary_of(pid),
                    {"BATON_PHASE": pid, "BATON_PHASE_TITLE": graph.titles.get(pid, ""),
                     "BATON_PLAN_PATH": str(plan_path)}, inputs,
                    timeout=self.settings.implement_timeout,
                    saved_as=f"phase {pid} complete")

        for w, wave in enumerate(graph.waves, 1):
            todo = [p for p in wave if p not in done_in_plan]
            ws["current_wave"] = w
            if not todo:
                continue
            self.emit("wave", wave=w, total=len(graph.waves), phases=todo)
            self.say(f"wave {w}/{len(graph.waves)}: phase{'s' if len(todo) > 1 else ''} "
                     f"{', '.join(todo)}" + (" in parallel" if len(todo) > 1 else ""))
            start = time.monotonic()
            results = await asyncio.gather(*(phase(p) for p in todo), return_exceptions=True)
            self._reraise_cancel(results)
            failures = [r for r in results if isinstance(r, BaseException)]
            ws["wave_results"][str(w)] = {
                "phases": [_num(p) for p in todo], "status": "failed" if failures else
                "complete", "duration_ms": int((time.monotonic() - start) * 1000),
                "parallel": len(todo) > 1}
            if failures:
                bad = [f for f in failures if isinstance(f, StepFailure)]
                if len(bad) < len(failures):
                    raise next(f for f in failures if not isinstance(f, StepFailure))
                worst = _worst(bad)
                raise StepFailure(
                    "implement", worst.failure, f"wave {w}: " + "; ".join(
                        f.message for f in bad) + " (finished phases of this wave are kept)",
                    worst.error_type, {"failed_steps": [f.step_id for f in bad], "wave": w})
        ws["current_wave"] = len(graph.waves)

    async def _implement_iterations(self, plan_path: Path, todo: list[str]) -> None:
        """The implement iteration loop: the implementation coordinator runs once per
        iteration (implementing the waves it can), and its brief summary alone decides
        whether to continue or halt. Every iteration's fields are checkpointed, so a resume
        continues at the next iteration, not the first."""
        assert self.store is not None
        summaries = Path(self.data["baton"]["paths"]["summaries_dir"])
        it = self.data["baton"].setdefault("iteration", {
            "iteration": 0, "continuation_context": None,
            "work_remaining": iteration.normalize_work(todo), "last_work_remaining": None,
            "unchanged": 0, "halt_reason": None, "context_tokens": 0, "history": []})
        it["max_iterations"] = self.settings.max_iterations
        if it["iteration"] == 0 and not it.get("work_remaining"):
            it["halt_reason"] = "completion"
            self.say("implement: every phase of the plan is already complete")
            return
        if it.get("halt_reason") not in (None, "completion"):
            self.say(f"implement: resuming after a halt ({it['halt_reason']}) at iteration "
                     f"{it['iteration'] + 1}")
            if it["halt_reason"] == "stuck":
                it["unchanged"] = 0  # the user looked at it: one more chance
            it["halt_reason"] = None
        while True:
            n = it["iteration"] + 1
            if n > it["max_iterations"]:
                self._halt(it, "max_iterations", f"{it['iteration']} of {it['max_iterations']} "
                           f"iterations used; still to do: {it['work_remaining']}")
            sid = f"implement.iteration-{n}"
            artifact = summaries / f"iteration_{n}_summary.md"
            extra = {"BATON_PLAN_PATH": str(plan_path), "BATON_ITERATION": str(n),
                     "BATON_MAX_ITERATIONS": str(it["max_iterations"]),
                     "BATON_CONTINUATION_CONTEXT": it.get("continuation_context") or "",
                     "BATON_WORK_REMAINING": it.get("work_remaining") or "",
                     "BATON_SUMMARIES_DIR": str(summaries)}
            self.emit("iteration", iteration=n, max_iterations=it["max_iterations"],
                      status="running", work_remaining=it.get("work_remaining"))
            self.say(f"implement: iteration {n}/{it['max_iterations']}"
                     + (f", remaining {it['work_remaining']}" if it.get("work_remaining") else ""))
            try:
                await self._agent_step(sid, State.IMPLEMENT, "implement-coordinator", artifact,
                                       extra, {}, timeout=self.settings.implement_timeout)
            except Cancelled:
                it["halt_reason"] = "user_abort"
                self._write_iteration_checkpoint(it, plan_path)
                raise
            except StepFailure as exc:
                it["halt_reason"] = "error"
                self._write_iteration_checkpoint(it, plan_path)
                raise StepFailure("implement", exc.failure, f"iteration {n}: {exc.message}",
                                  exc.error_type, {**exc.context, "halt_reason": "error",
                                                   "iteration": n}) from None
            step = self.data["baton"]["steps"][sid]
            try:
                summary_text = artifact.read_text(encoding="utf-8", errors="replace")
            except OSError:
                summary_text = ""
            brief = iteration.parse_brief(step.get("brief") or {}, summary_text)
            if brief.missing:  # the step must run again on resume: mark it failed
                failure = StepFailure(sid, PERMANENT, "the implementation coordinator's brief "
                                      "summary lacks " + ", ".join(brief.missing) + " (in its "
                                      "output and in the header of " + str(artifact) + ")",
                                      "parse_error", {"artifact_path": str(artifact)})
                step["status"] = "failed"
                it["halt_reason"] = "error"
                self._record_failure(step, failure)
                raise failure
            it["context_tokens"] = int(it.get("context_tokens", 0)) + int(
                (step.get("context") or {}).get("passed_tokens", 0))
            decision = iteration.decide(
                brief, previous_work=it.get("work_remaining") or "",
                unchanged=int(it.get("unchanged", 0)), iteration=n,
                max_iterations=it["max_iterations"], context_tokens=it["context_tokens"],
                context_budget=self.settings.context_budget)
            if decision.invariant_violated:
                msg = (f"implement-coordinator returned requires_continuation=false with "
                       f"work_remaining {brief.work_remaining!r}; continuing anyway "
                       "(contract invariant)")
                self.say(f"[{sid}] WARNING: {msg}")
                self._log_error(sid, "validation_error", msg, {
                    "work_remaining": brief.work_remaining, "requires_continuation": False,
                    "iteration": n, "override": "requires_continuation=true"})
            it.update(iteration=n, last_work_remaining=it.get("work_remaining"),
                      work_remaining=brief.work_remaining, continuation_context=str(artifact),
                      unchanged=decision.unchanged, context_exhausted=brief.context_exhausted,
                      context_usage_percent=brief.context_usage_percent)
            it["history"].append({"iteration": n, "work_remaining": brief.work_remaining,
                                  "phases_completed": brief.phases_completed,
                                  "requires_continuation": brief.requires_continuation,
                                  "invariant_override": decision.invariant_violated,
                                  "duration_ms": step.get("duration_ms")})
            if decision.halt_reason is not None:
                self._halt(it, decision.halt_reason, decision.reason, plan_path)
            self._write_iteration_checkpoint(it, plan_path)
            self.emit("iteration", iteration=n, max_iterations=it["max_iterations"],
                      status="done", work_remaining=brief.work_remaining,
                      requires_continuation=brief.requires_continuation)
            self._save(f"iteration {n} complete")

    def _halt(self, it: dict[str, Any], reason: str, message: str,
              plan_path: Path | None = None) -> None:
        """End the loop: completion returns normally, any other reason fails the state
        (resumable: `baton resume` continues at the next iteration)."""
        it["halt_reason"] = reason
        if plan_path is not None:
            self._write_iteration_checkpoint(it, plan_path)
        self.emit("iteration", iteration=it["iteration"], max_iterations=it["max_iterations"],
                  status="halted", halt_reason=reason, work_remaining=it.get("work_remaining"))
        self.say(f"implement: halted ({reason}) — {message}")
        self._save(f"iteration loop halted: {reason}")
        if reason == "completion":
            raise _LoopDone()
        raise StepFailure("implement", PERMANENT, f"implementation halted ({reason}): {message}",
                          "execution_error", {"halt_reason": reason,
                                              "iteration": it["iteration"],
                                              "work_remaining": it.get("work_remaining")})

    def _write_iteration_checkpoint(self, it: dict[str, Any], plan_path: Path) -> None:
        """The flat 2.1 iteration checkpoint of the real layout,
        `.claude/data/checkpoints/build_<workflow_id>_iteration_<n>.json`."""
        from ..model.checkpoint import IterationCheckpoint

        assert self.store is not None
        wid = self.store.workflow_id
        doc = {"version": "2.1", "plan_path": str(plan_path),
               "topic_path": self.data["baton"]["paths"].get("topic_dir"),
               "iteration": it["iteration"], "max_iterations": it["max_iterations"],
               "continuation_context": it.get("continuation_context"),
               "work_remaining": it.get("work_remaining") or None,
               "last_work_remaining": it.get("last_work_remaining") or None,
               "context_estimate": it.get("context_tokens"),
               "halt_reason": it.get("halt_reason"), "workflow_id": wid,
               "timestamp": utc_now()}
        IterationCheckpoint.model_validate(doc)
        target = self.store.dir.parent / f"build_{wid}_iteration_{it['iteration']}.json"
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, target)

    async def _test(self) -> None:
        from .process import run_process

        it = int(self.data.get("debug_iteration_count") or 0)
        sid = f"test.{it + 1}"
        argv = [sys.executable if a == "{python}" else a for a in self.settings.test_command]
        steps = self.data["baton"]["steps"]
        if not argv:
            self.data["tests_passing"] = None
            steps[sid] = {"state": "test", "role": "test", "status": "done", "attempts": 0,
                          "message": "no test command configured ([workflow] test-command)"}
            self.say("test: no test command configured; nothing to run")
            return
        log_path = Path(self.data["baton"]["paths"]["debug_dir"]) / f"test_output_{it + 1}.log"
        lines: list[str] = []
        env = dict(os.environ)
        env.update(self._contract(sid, "test", log_path, {}))
        self.say(f"test: running {' '.join(argv)}")
        start = time.monotonic()
        try:
            out = await run_process(argv, cwd=self.root, env=env, stdin=None,
                                    on_line=lines.append, timeout=self.settings.test_timeout,
                                    stall_timeout=None, cancel=self.cancel_event,
                                    grace=self.settings.kill_grace, on_start=self._started)
        except Exception as exc:  # missing test executable and friends
            raise StepFailure(sid, PERMANENT, f"cannot run the test command: {exc}",
                              "execution_error") from None
        if out.cancelled:
            raise Cancelled()
        log_path.write_text("\n".join(lines) + ("\n" + out.stderr_tail if out.stderr_tail
                                                else "") + "\n", encoding="utf-8")
        passed = out.exit_code == 0 and not out.timed_out
        self.data["tests_passing"] = passed
        steps[sid] = {"state": "test", "role": "test", "status": "done", "attempts": 1,
                      "artifact": str(log_path), "exit_code": out.exit_code,
                      "duration_ms": int((time.monotonic() - start) * 1000), "passed": passed}
        self.say(f"test: {'passed' if passed else 'FAILED'} (exit {out.exit_code}"
                 f"{', timed out' if out.timed_out else ''}); output in {log_path}")
        if not passed:
            self._log_error(sid, "execution_error", f"tests failed (exit {out.exit_code})",
                            {"artifact_path": str(log_path), "exit_code": out.exit_code})
            if it >= self.settings.max_debug_iterations or self.sm.scope not in (  # type: ignore[union-attr]
                    Scope.FULL_IMPLEMENTATION, Scope.TEST_AND_DEBUG):
                raise StepFailure(sid, PERMANENT, f"tests still failing after {it} debug "
                                  f"iteration(s); see {log_path}", "execution_error",
                                  {"artifact_path": str(log_path)})

    async def _debug(self) -> None:
        it = int(self.data.get("debug_iteration_count") or 0) + 1
        debug_dir = Path(self.data["baton"]["paths"]["debug_dir"])
        report = debug_dir / f"{it:03d}_debug_report.md"
        test_log = debug_dir / f"test_output_{it}.log"
        extra = {"BATON_PLAN_PATH": self.data["baton"]["paths"]["plan"],
                 "BATON_TEST_OUTPUT": str(test_log) if test_log.is_file() else "",
                 "BATON_REPORT_PATHS": json.dumps(self._good_reports())}
        inputs = {str(test_log): sha256_file(test_log)} if test_log.is_file() else {}
        await self._agent_step(f"debug.{it}", State.DEBUG, "debug", report, extra, inputs)
        self.data["debug_iteration_count"] = it
        self.data["debug_report_path"] = str(report)

    async def _document(self) -> None:
        paths = self.data["baton"]["paths"]
        t = self.topic
        target = Path(paths["summaries_dir"]) / f"{(t.number if t else 0):03d}_workflow_summary.md"
        summaries = sorted(str(p) for p in Path(paths["summaries_dir"]).glob("phase_*_summary.md"))
        inputs = {s: sha256_file(Path(s)) for s in summaries}
        inputs[paths["plan"]] = sha256_file(Path(paths["plan"]))
        await self._agent_step("document", State.DOCUMENT, "document", target,
                               {"BATON_PLAN_PATH": paths["plan"],
                                "BATON_REPORT_PATHS": json.dumps(self._good_reports()),
                                "BATON_SUMMARY_PATHS": json.dumps(summaries)}, inputs)

    # == one agent step =========================================================================

    def _skippable(self, sid: str) -> bool:
        step = self.data["baton"]["steps"].get(sid)
        return bool(step) and step.get("status") == "done" and self._step_valid(step)

    def _step_valid(self, step: dict[str, Any]) -> bool:
        return self._invalid_reason(step) is None

    def _invalid_reason(self, step: dict[str, Any]) -> str | None:
        if step.get("role") == "classifier":
            return None  # its result lives in the checkpoint; the tmp file may be cleaned
        art = step.get("artifact")
        if art and step.get("role") != "test" and not Path(art).is_file():
            return f"its artifact {art} was deleted"
        for key, digest in (step.get("inputs") or {}).items():
            path, _, phase = key.partition("#phase-")
            if phase:
                current = self._phase_hashes(Path(path)).get(phase)
            else:
                current = sha256_file(Path(path))
            if current != digest:
                return f"its input {key} changed" if current else f"its input {key} is gone"
        return None

    def _phase_hashes(self, plan_path: Path) -> dict[str, str]:
        """SHA-256 of each phase's section text (heading to last line), the input an implement
        step depends on. Parsed once per plan version, not once per phase: resuming a
        200-phase plan asks for every phase's hash."""
        try:
            st = plan_path.stat()
        except OSError:
            return {}
        key = (str(plan_path), st.st_mtime_ns, st.st_size)
        if self._phase_hash_cache.get("key") != key:
            plan = self._load_plan(plan_path)
            hashes: dict[str, str] = {}
            if not isinstance(plan, str):
                lines = plan_path.read_text(encoding="utf-8", errors="replace").splitlines()
                for p in plan.phases:
                    hashes.setdefault(p.id, sha256_text(
                        "\n".join(lines[p.range.start_line:p.range.end_line + 1])))
            self._phase_hash_cache = {"key": key, "hashes": hashes}
        return self._phase_hash_cache["hashes"]

    def _contract(self, sid: str, role: str, artifact: Path, extra: dict[str, str]) -> dict[
            str, str]:
        assert self.store is not None
        paths = self.data["baton"]["paths"]
        env = {"BATON_WORKFLOW_ID": self.store.workflow_id, "BATON_STEP_ID": sid,
               "BATON_ROLE": role, "BATON_ARTIFACT_PATH": str(artifact),
               "BATON_WORKSPACE": str(self.root), "CLAUDE_PROJECT_DIR": str(self.root),
               "BATON_TOPIC_DIR": paths.get("topic_dir", ""),
               "BATON_DESCRIPTION": self.data.get("workflow_description", ""),
               "BATON_STATE_FILE": str(self.root / ".claude" / "tmp" /
                                       f"workflow_{self.store.workflow_id}.sh")}
        env.update(extra)
        return env

    def _prompt(self, role: str, sid: str, artifact: Path, contract: dict[str, str]) -> tuple[
            str, str | None, str | None, tuple[str, ...], str | None]:
        """Behavioural file + the input contract; also the model, fallback model and tools
        it asks for, and the role's runner."""
        rs = self.settings.role(role)
        use, tools = agent_use(self.root, self.settings, role, self.runner_name)
        model, fallback = use.model, use.fallback_model
        body = use.agent_file.read_text(encoding="utf-8", errors="replace") \
            if use.agent_file is not None else ""
        signal_name = {"research": "REPORT_CREATED", "plan": "PLAN_CREATED",
                       "revise": "PLAN_REVISED", "implement": "SUMMARY_CREATED",
                       "debug": "DEBUG_REPORT_CREATED", "document": "SUMMARY_CREATED",
                       "implement-coordinator": "SUMMARY_CREATED"}.get(role, "ARTIFACT_CREATED")
        lines = ["", "---", "", "## Input contract (from Baton)", "",
                 f"- Workflow: {contract['BATON_WORKFLOW_ID']} · step {sid} · role {role}",
                 f"- Workspace: {self.root}",
                 f"- Write your artifact to exactly this absolute path: {artifact}",
                 f"- When it is written, print on its own line: {signal_name}: {artifact}"]
        lines += ROLE_CONTRACT.get(role, [])
        if role == "implement":
            lines.append(f"- Implement phase {contract.get('BATON_PHASE')} of "
                         f"{contract.get('BATON_PLAN_PATH')} only; print PHASE_COMPLETE: "
                         f"{contract.get('BATON_PHASE')}")
        for key in ("BATON_TOPIC", "BATON_PLAN_PATH", "BATON_REPORT_PATHS", "BATON_TEST_OUTPUT",
                    "BATON_SCOPE", "BATON_RESEARCH_COMPLEXITY", "BATON_TOPICS_JSON",
                    "BATON_RESEARCH_METADATA", "BATON_ITERATION", "BATON_MAX_ITERATIONS",
                    "BATON_CONTINUATION_CONTEXT", "BATON_WORK_REMAINING",
                    "BATON_SUMMARIES_DIR"):
            if contract.get(key):
                lines.append(f"- {key.removeprefix('BATON_').replace('_', ' ').title()}: "
                             f"{contract[key]}")
        lines += ["- On failure print: TASK_ERROR: <error_type> - <message>",
                  "", "## Task", "", contract["BATON_DESCRIPTION"]]
        return body + "\n".join(lines) + "\n", model, fallback, tools, rs.runner

    def _specs_dir(self) -> Path:
        """The specs directory of this run (`specs-dir`; `auto` follows the tree and whether a
        claude agent has to write there), fixed once per workflow in its checkpoint."""
        paths = self.data["baton"]["paths"]
        if not paths.get("specs_dir"):
            roles = [self.settings.role(r).runner for r in DEFAULT_ROLE_AGENTS]
            names = {(r or self.runner_name or self.settings.runner) for r in roles}
            paths["specs_dir"] = str(specs_dir(self.root, self.settings.specs_dir,
                                               claude="claude" in names))
        return contained(self.root, paths["specs_dir"], "specs directory")

    def _runner(self, name: str | None) -> Any:
        from . import runners

        key = name or self.runner_name or self.settings.runner
        if key not in self._runners:
            if key == "command":
                if not self.settings.command:
                    raise EngineError("runner `command` needs [workflow] command = [argv...]")
                self._runners[key] = runners.CommandRunner(list(self.settings.command))
            elif key == "script":
                script = self.settings.script
                path = contained(self.root, script, "agent script") if script else None
                self._runners[key] = runners.ScriptRunner(path)
            else:
                try:
                    self._runners[key] = runners.available_runner(key, settings=self.settings)
                except ValueError as exc:
                    raise EngineError(str(exc)) from None
        return self._runners[key]

    def _started(self, pid: int) -> None:
        self.pgids.add(pid)
        self._owner()

    async def _agent_step(self, sid: str, state: State, role: str, artifact: Path,
                          extra: dict[str, str], inputs: dict[str, str | None], *,
                          timeout: float | None = None,
                          verify: Callable[[Path, SignalReader], str | None] | None = None,
                          metadata: Callable[[Path], dict[str, Any]] | None = None,
                          saved_as: str | None = None) -> SignalReader | None:
        """Run one agent step (skipped when done and still valid: returns None then) with
        retries; on success record its artifact hash, its signals and its context account:
        what it passed up (signal lines + extracted metadata) versus the whole artifact.
        The step is checkpointed as soon as it is done, as `saved_as` (default `step <sid>
        done`)."""
        from .process import AgentLaunchError, run_process
        from .runners import Invocation

        steps = self.data["baton"]["steps"]
        if self._skippable(sid):
            self.say(f"[{sid}] already done; skipped")
            return None
        artifact = contained(self.root, artifact, "artifact path")
        step = steps[sid] = {"state": state.value, "role": role, "status": "running",
                             "attempts": 0, "artifact": str(artifact), "inputs": inputs,
                             "started_at": utc_now()}
        log_dir = self.store.dir / "logs"  # type: ignore[union-attr]
        log_dir.mkdir(exist_ok=True)
        attempts = self.settings.attempts
        last: StepFailure | None = None
        for attempt in range(1, attempts + 1):
            if self.cancel_event.is_set():
                raise Cancelled()
            over = self._over_budget()
            if over is not None:
                last = StepFailure(sid, FATAL, over, "budget_exceeded")
                self._record_failure(step, last)
                step["status"] = "failed"
                raise last
            step["attempts"] = attempt
            contract = self._contract(sid, role, artifact, {**extra,
                                                            "BATON_ATTEMPT": str(attempt)})
            prompt, model, fallback, tools, runner_name = self._prompt(role, sid, artifact,
                                                                       contract)
            runner = self._runner(runner_name)
            inv = Invocation(step_id=sid, role=role, prompt=prompt, contract=contract,
                             cwd=self.root, model=model, fallback_model=fallback, tools=tools,
                             agent_name=self.settings.role(role).agent)
            try:
                spec = runner.launch(inv)
            except (ValueError, OSError, KeyError) as exc:
                last = StepFailure(sid, FATAL, f"cannot launch the {runner.name} agent: {exc}",
                                   "agent_error")
                self._record_failure(step, last)
                step["status"] = "failed"
                raise last from None
            reader = SignalReader()
            result: list[Any] = []
            log_file = open(log_dir / f"{sid}.attempt-{attempt}.log", "w",  # noqa: SIM115
                            encoding="utf-8")

            def on_line(line: str, reader: SignalReader = reader, log_file: Any = log_file,
                        result: list[Any] = result, runner: Any = runner) -> None:
                event = runner.decode(line)
                for text in event.text:
                    log_file.write(text + "\n")
                    sig = reader.feed(text)
                    if sig is not None:
                        self.say(f"[{sid}] {sig.name}: {sig.value}")
                        self.emit("signal", step=sid, name=sig.name, value=sig.value)
                if event.result is not None:
                    result.append(event.result)

            self.emit("step", step=sid, state=state.value, status="running", attempt=attempt,
                      runner=runner.name, artifact=str(artifact))
            self.say(f"[{sid}] {runner.name} agent {inv.agent_name} (attempt {attempt}/"
                     f"{attempts})")
            start = time.monotonic()
            try:
                out = await run_process(
                    spec.argv, cwd=self.root, env=spec.env, stdin=spec.stdin, on_line=on_line,
                    timeout=timeout or self.settings.timeout,
                    stall_timeout=self.settings.stall_timeout, cancel=self.cancel_event,
                    grace=self.settings.kill_grace, on_start=self._started)
            except AgentLaunchError as exc:
                log_file.close()
                last = StepFailure(sid, FATAL, str(exc), "agent_error")
                self._record_failure(step, last)
                raise last from None
            finally:
                if not log_file.closed:
                    log_file.close()
                spec.cleanup()
            step["duration_ms"] = int((time.monotonic() - start) * 1000)
            step["process_ms"] = round(out.duration * 1000, 2)
            if out.cancelled:
                step["status"] = "cancelled"
                raise Cancelled()
            final = result[-1] if result else None
            if final is not None and final.usage:
                step["usage"] = accounting.add_usage(step.get("usage"), final.usage)
                self.data["baton"]["usage"] = accounting.usage_totals(steps)
            last = self._judge(sid, runner, out, final, reader, artifact, verify)
            if last is None:
                meta = metadata(artifact) if metadata is not None else None
                step.update(status="done", finished_at=utc_now(),
                            sha256=sha256_file(artifact), size=artifact.stat().st_size,
                            signals=[f"{s.name}: {s.value}" for s in reader.signals][-20:],
                            context=accounting.step_context(reader.passed_text(), meta,
                                                            artifact))
                if meta is not None:
                    step["metadata"] = meta
                if reader.fields:
                    step["brief"] = dict(reader.fields)
                step.pop("failure", None)
                step.pop("message", None)
                self.data["baton"]["context"] = accounting.aggregate(steps)
                # durable now, not when the state ends: a parallel sibling may still be
                # running when the engine dies, and this paid-for step must not run again
                self._save(saved_as or f"step {sid} done")
                self.emit("step", step=sid, state=state.value, status="done", attempt=attempt,
                          artifact=str(artifact), checkpoint=str(self.last_checkpoint))
                return reader
            self._record_failure(step, last)
            if last.failure != TRANSIENT or attempt == attempts:
                break
            delay = self._delay(attempt)
            self.say(f"[{sid}] {last.message}; retrying in {delay:.1f} s")
            await self._sleep(delay)
        assert last is not None
        step["status"] = "failed"
        self.emit("step", step=sid, state=state.value, status="failed",
                  attempt=step["attempts"], failure=last.failure, message=last.message,
                  artifact=str(artifact), context=last.context)
        raise last

    def _over_budget(self) -> str | None:
        """Why no further agent step may start (the configured budget is spent), or None."""
        total = self.data["baton"].get("usage", {}).get("total", {})
        cap, cost = self.settings.max_budget_usd, total.get("cost_usd", 0)
        if cap is not None and cost >= cap:
            return (f"budget reached: the agents reported ${cost:.4f} of max-budget-usd "
                    f"${cap:.2f}; raise it (--set workflow.max-budget-usd=N) and resume")
        cap_t, used = self.settings.max_tokens, accounting.tokens_of(total)
        if cap_t is not None and used >= cap_t:
            return (f"budget reached: the agents reported {used:,} of max-tokens {cap_t:,}; "
                    f"raise it (--set workflow.max-tokens=N) and resume")
        return None

    def _judge(self, sid: str, runner: Any, out: Any, result: Any, reader: SignalReader,
               artifact: Path, verify: Callable[[Path, SignalReader], str | None] | None
               ) -> StepFailure | None:
        if out.timed_out:
            return StepFailure(sid, TRANSIENT, f"agent timed out after {out.duration:.0f} s",
                               "timeout_error", {"timeout": True})
        if out.stalled:
            return StepFailure(sid, TRANSIENT, f"agent stalled: no output for "
                               f"{self.settings.stall_timeout:.0f} s", "timeout_error",
                               {"stalled": True})
        task_error = reader.errors[-1] if reader.errors else None
        if out.exit_code != 0 or (result is not None and not result.ok):
            from .runners import classify_outcome

            if self.cancel_event.is_set():
                raise Cancelled()  # `baton cancel` signalled the group from outside
            from .runners import fix_for

            cls = classify_outcome(runner, out, result) or PERMANENT
            msg = strip_ansi((task_error.message if task_error else None) or (
                result.message if result is not None and result.message else None) or
                _last_line(out.stderr_tail) or "no error output")
            ctx = {"exit_code": out.exit_code, **(task_error.context if task_error else {})}
            fix = fix_for(f"{out.stderr_tail}\n{msg}", runner.name) if cls == FATAL else None
            if fix:
                msg, ctx["fix"] = f"{msg} — fix: {fix}", fix
            return StepFailure(sid, cls, f"agent exited with code {out.exit_code}: {msg}",
                               task_error.error_type if task_error else "agent_error", ctx)
        barrier = check_artifact(self.root, artifact, reader.reported_paths())
        if barrier is not None:
            ctx = barrier.context()
            message = barrier.message
            if task_error:
                ctx["task_error"] = f"{task_error.error_type} - {task_error.message}"
            from .runners import refusals

            denials = refusals(runner, result, out.stderr_tail)
            if denials:
                ctx["permission_denials"] = list(denials)
                message += f"; the {runner.name} CLI refused: {'; '.join(denials[:5])}"
            return StepFailure(sid, PERMANENT, message, "validation_error", ctx)
        if task_error:
            return StepFailure(sid, PERMANENT, f"agent reported TASK_ERROR: "
                               f"{task_error.error_type} - {task_error.message}",
                               task_error.error_type, task_error.context)
        if verify is not None:
            problem = verify(artifact, reader)
            if problem:
                return StepFailure(sid, PERMANENT, problem, "validation_error",
                                   {"artifact_path": str(artifact)})
        return None

    def _record_failure(self, step: dict[str, Any], failure: StepFailure) -> None:
        step.update(failure=failure.failure, message=failure.message)
        self._log_error(failure.step_id, failure.error_type, failure.message,
                        {**failure.context, "failure_class": failure.failure,
                         "attempt": step.get("attempts")})
        self._save(f"step {failure.step_id} failed ({failure.failure})")

    def _log_error(self, source: str, error_type: str, message: str,
                   context: dict[str, Any]) -> None:
        assert self.store is not None
        try:
            append_error(self.root, error_record(
                workflow_id=self.store.workflow_id, command="/baton-run",
                user_args=self.data.get("workflow_description", ""), error_type=error_type,
                message=message, source=source, context=context, root=self.root))
        except OSError as exc:
            raise StepFailure(source, FATAL, f"cannot append to errors.jsonl: "
                              f"{exc.strerror or exc}", "file_error") from None

    def _delay(self, attempt: int) -> float:
        base = self.settings.backoff * (2 ** (attempt - 1))
        return min(self.settings.backoff_max, base) * random.uniform(0.5, 1.0)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.cancel_event.wait(), seconds)
        if self.cancel_event.is_set():
            raise Cancelled()

    @staticmethod
    def _reraise_cancel(results: list[Any]) -> None:
        for r in results:
            if isinstance(r, (Cancelled, asyncio.CancelledError)):
                raise Cancelled()


def _worst(failures: list[StepFailure]) -> StepFailure:
    rank = {FATAL: 0, PERMANENT: 1, TRANSIENT: 2}
    return min(failures, key=lambda f: rank.get(f.failure, 1))


def _num(pid: str) -> int | str:
    return int(pid) if pid.isdigit() else pid


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def install_signal_handlers(engine: Engine) -> None:
    """SIGINT/SIGTERM cancel the workflow: agents are stopped by process group and a
    resumable checkpoint is written."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, engine.cancel)


__all__ = ["Cancelled", "Engine", "EngineError", "Outcome", "RunRequest", "StepFailure",
           "WorkflowBusy", "derive_topics"]


def cancel_workflow(root: Path, workflow_id: str, grace: float = 10.0) -> tuple[str, int]:
    """Stop a workflow run by another process: SIGTERM to its engine (which stops its agents
    by process group and writes a resumable checkpoint), SIGKILL after `grace`; agents left
    behind by a dead engine are stopped directly. Returns (message, exit code)."""
    from .process import kill_group

    store = CheckpointStore(root, workflow_id)
    if not store.dir.is_dir():
        return f"baton: error: no workflow {workflow_id!r} in {root}", 2
    owner = store.owner()
    pid = owner.get("pid")
    if not store.locked():
        stopped = sum(kill_group(pgid, min(grace, 5.0))
                      for pgid in owned_agent_groups(owner.get("pgids", []), workflow_id))
        return (f"workflow {workflow_id} is not running"
                + (f"; stopped {stopped} leftover agent group(s)" if stopped else ""), 0)
    if not isinstance(pid, int):
        return f"baton: error: workflow {workflow_id} is locked but names no engine pid", 2
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and store.locked():
        time.sleep(0.05)
    if store.locked():
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        for pgid in store.owner().get("pgids", []):
            kill_group(pgid, 0.5)
        return (f"workflow {workflow_id}: engine {pid} did not stop within {grace:.0f} s and "
                "was killed; resume with `baton resume " + workflow_id + "`", 0)
    return f"workflow {workflow_id} cancelled; resume with `baton resume {workflow_id}`", 0

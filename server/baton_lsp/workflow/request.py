"""What the user asked for, checked before anything runs, and the first record of a run:
identity, scope, topics, the classification made from the request and Baton's section."""

from __future__ import annotations

import os
import random
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..model.checkpoint import (
    CheckpointMetadata,
    Classification,
    ErrorState,
    StateMachine,
    WorkflowConfig,
    WorkflowState,
)
from ..model.config import WorkflowSettings
from ..model.states import STORED_TRANSITIONS, RunStatus, Scope, State
from ..runs.record import BatonSection, ClassifyRecord, PathsRecord, RequestRecord, RunRecord
from ..runs.records import utc_now
from . import classify
from .failures import EngineError
from .isolation import workflow_id_problem
from .layout import contained
from .preflight import agent_file
from .runners import RUNNER_NAMES
from .state_machine import HAPPY_PATHS

MAX_DESCRIPTION = 10_000
ASPECTS = ("existing implementation and patterns in the codebase", "best practices and "
           "prior art", "risks, edge cases and failure modes", "testing and verification "
           "strategy")


@dataclass
class RunRequest:
    """What the user asked for; None means "not said" (classification decides)."""

    description: str
    scope: Scope | None = None
    complexity: int | None = None
    topics: list[str] = field(default_factory=list)
    plan_path: str | None = None
    workflow_id: str | None = None

    @property
    def effective_scope(self) -> Scope:
        """The scope given, else the one the description's keywords suggest."""
        return self.scope or classify.keyword_scope(self.description, bool(self.plan_path))


def validate_runners(settings: WorkflowSettings, runner: str | None) -> None:
    """Every runner name the run could use is one Baton has: a usage error now, not a
    workflow failed in initialize."""
    named = [("--runner", runner), ("[workflow] runner", settings.runner)]
    for role, value in settings.agents.items():
        if not isinstance(value, str):
            named.append((f"[workflow.agents] {role} runner", value.runner))
    for where, name in named:
        if name is not None and name.strip().lower() not in RUNNER_NAMES:
            raise EngineError(f"{where}: unknown runner {name!r}; valid runners: "
                              f"{', '.join(RUNNER_NAMES)}")


def validate_request(root: Path, settings: WorkflowSettings, req: RunRequest) -> None:
    """Bad input is an EngineError naming the fix, before a checkpoint exists."""
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
    if req.workflow_id is not None and (why := workflow_id_problem(req.workflow_id)):
        raise EngineError(f"invalid workflow id {req.workflow_id!r}: {why}")
    if req.complexity is not None and not 1 <= req.complexity <= 4:
        raise EngineError(f"--complexity must be 1-4, got {req.complexity}")
    if len(req.topics) > 4:
        raise EngineError(f"at most 4 research topics, got {len(req.topics)}")
    if req.topics and req.complexity is not None and req.complexity != len(req.topics):
        raise EngineError(f"--complexity {req.complexity} but {len(req.topics)} --topic "
                          "given: the topic count is the complexity (drop one of them)")
    scope = req.effective_scope
    if scope in classify.NEEDS_PLAN and not req.plan_path:
        raise EngineError(f"scope {scope.value} works on an existing plan: pass --plan")
    if req.plan_path:
        plan = contained(root, req.plan_path, "plan")
        if not plan.is_file():
            raise EngineError(f"plan {plan} does not exist")
    for role, value in settings.agents.items():  # a configured file that is missing
        name = value if isinstance(value, str) else value.agent
        if name is None:  # a table with no `agent` keeps the role's default file
            continue
        if agent_file(root, name) is None:
            raise EngineError(f"[workflow.agents] {role} = {name!r}: no such agent file "
                              f"(looked for .claude/agents/{name}.md)")


def settled_by_flags(req: RunRequest) -> bool:
    """Whether the flags leave nothing for a classifier agent to decide: a scope with its
    topics, or a scope that runs no research (implement-only, test-and-debug) on a --plan —
    asking an agent then only spends model requests on an answer that is thrown away."""
    if req.scope is None:
        return False
    return bool(req.topics) or (State.RESEARCH not in HAPPY_PATHS[req.scope]
                                and bool(req.plan_path))


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


def new_record(wid: str, req: RunRequest, *, project: str, settings: WorkflowSettings,
               command: str) -> RunRecord:
    """The run's first checkpoint: schema 2.1 as the bash side writes it, plus `baton`
    (every field given is set: the first save writes it, null or empty as it is)."""
    now = utc_now()
    scope = req.effective_scope
    complexity = req.complexity or classify.keyword_complexity(req.description)
    topics = req.topics or derive_topics(req.description, complexity)
    explicit = {"scope": req.scope is not None, "complexity": req.complexity is not None,
                "topics": bool(req.topics)}
    full = settled_by_flags(req)
    agent = "classifier" in settings.agents and not full
    rest = [k for k, v in explicit.items() if not v]
    reasoning = "; ".join([f"{k} given to baton run" for k, v in explicit.items() if v] + (
        [f"{', '.join(rest)} from the description's keywords"] if rest else []))
    if full and not explicit["topics"]:
        reasoning = (f"scope {scope.value} and --plan given to baton run: it runs no research, "
                     "so nothing is left to classify")
    classification = classify.classification_record(
        scope=scope, topics=[classify.topic_spec(t, req.description) for t in topics],
        confidence=1.0 if full else 0.6, reasoning=reasoning,
        source="flags" if full else "keyword", at=now)
    return RunRecord(
        schema_version="2.1", checkpoint_id=wid, workflow_type=scope.value,
        project_name=project, workflow_description=req.description,
        created_at=now, updated_at=now, status=RunStatus.IN_PROGRESS,
        current_phase=0, total_phases=8, completed_phases=[],
        workflow_state=WorkflowState(plan_path=None, parallel_execution_enabled=True,
                                     max_wave_parallelism=settings.max_parallel),
        last_error=None, tests_passing=None, debug_iteration_count=0,
        debug_report_path=None,
        state_machine=StateMachine(
            current_state=State.INITIALIZE, completed_states=[],
            transition_table=dict(STORED_TRANSITIONS),
            workflow_config=WorkflowConfig(scope=scope, description=req.description,
                                           command=command),
            classification=Classification.model_validate(classification)),
        phase_data={}, supervisor_state={},
        error_state=ErrorState(last_error=None, retry_count=0, failed_state=None),
        metadata=CheckpointMetadata(checkpoint_id=wid, project_name=project,
                                    created_at=now, updated_at=now),
        baton=BatonSection(
            version=__version__, request=RequestRecord(
                description=req.description, scope=scope.value,
                complexity=len(topics), topics=topics, plan_path=req.plan_path),
            classify=ClassifyRecord(agent=agent, done=not agent, explicit=explicit),
            steps={}, history=[], paths=PathsRecord(), timing={}))

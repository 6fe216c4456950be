"""The plan state: one plan agent writes the plan from the research reports (or, in
research-and-revise, a revise agent edits the existing plan after a backup); the plan must
parse, have phases and no dependency cycle."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

from ...model.states import Scope, State
from ...runs import confine
from ...runs.digest import sha256_file
from ..agent_step import StepSpec, agent_step
from ..run import Run, fixed
from ..signals import SignalReader
from .base import StateHandler


async def plan(run: Run) -> None:
    plan = Path(fixed(run.paths.plan, "plan"))
    reports = run.good_reports()
    inputs = {r: sha256_file(Path(r), run.root) for r in reports}
    revise = run.machine.scope == Scope.RESEARCH_AND_REVISE
    steps = run.steps
    metadata = [{"path": s.artifact, **(s.metadata or {})}
                for s in steps.values() if s.artifact in reports]
    extra = {"BATON_REPORT_PATHS": json.dumps(reports), "BATON_PLAN_PATH": str(plan),
             "BATON_RESEARCH_METADATA": json.dumps(metadata, ensure_ascii=False)}
    before = sha256_file(plan, run.root) if revise else None
    if revise and not run.skippable("plan"):
        backup = plan.parent / "backups" / f"{plan.stem}.{time.strftime('%Y%m%d_%H%M%S')}.md"
        with contextlib.suppress(FileNotFoundError):  # a second revise within the second
            confine.unlink(run.root, backup)
        confine.copy_file(run.root, plan, backup)

    def verify(path: Path, reader: SignalReader) -> str | None:
        if revise and sha256_file(path, run.root) == before:
            return f"the plan {path} was not changed by the revise agent"
        return run.plans.problem(path)

    await agent_step(run, StepSpec("plan", State.PLAN, "revise" if revise else "plan", plan,
                                   extra, inputs, verify=verify))


HANDLER = StateHandler(State.PLAN, plan)

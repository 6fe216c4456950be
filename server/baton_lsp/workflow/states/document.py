"""The document state: a document agent writes the workflow summary from the plan, the
reports and the phase summaries — or, as seed 000's documentation agent does, updates the
project's documentation and returns `DOCUMENTATION_UPDATED: [files]`, in which case those
files are the hard barrier and the step's artifacts."""

from __future__ import annotations

import json
from pathlib import Path

from ...model.states import State
from ...runs.digest import sha256_file
from ..agent_step import StepSpec, agent_step
from ..run import Run, fixed
from ..signals import DOCUMENTATION_UPDATED
from .base import StateHandler


async def document(run: Run) -> None:
    sdir = Path(fixed(run.paths.summaries_dir, "summaries"))
    plan = fixed(run.paths.plan, "plan")
    t = run.topic
    target = sdir / f"{(t.number if t else 0):03d}_workflow_summary.md"
    summaries = sorted(str(p) for p in sdir.glob("phase_*_summary.md"))
    inputs = {s: sha256_file(Path(s), run.root) for s in summaries}
    inputs[plan] = sha256_file(Path(plan), run.root)
    await agent_step(run, StepSpec("document", State.DOCUMENT, "document", target,
                                   {"BATON_PLAN_PATH": plan,
                                    "BATON_REPORT_PATHS": json.dumps(run.good_reports()),
                                    "BATON_SUMMARY_PATHS": json.dumps(summaries)}, inputs,
                                   listed_by=DOCUMENTATION_UPDATED))


HANDLER = StateHandler(State.DOCUMENT, document)

"""The research state. Below four topics the specialists run directly (flat); at four or
more through the supervisor tier: `supervisor` mode runs the workers on the supervisor's
behalf, `agent` mode asks one research-supervisor agent to run them, `planning` mode first
asks a coordinator agent for the invocation plan. Each worker's report is its own step,
recorded the moment it passes the hard barrier."""

from __future__ import annotations

import asyncio
import json
import math
import time
from pathlib import Path
from typing import Any

from ...model.states import State, StepStatus
from ...runs.digest import sha256_file
from ...runs.record import RESEARCH_SUPERVISOR, ResearchRecord, StepRecord
from ...runs.records import utc_now
from .. import accounting, supervisor
from ..agent_step import StepSpec, agent_step
from ..barrier import check_artifact
from ..failures import PERMANENT, StepFailure, reraise_cancel, worst
from ..run import HIERARCHICAL_TOPICS, Run, fixed
from ..signals import SignalReader
from .base import StateHandler


async def research(run: Run) -> None:
    """Below four topics the specialists run directly (flat); at four or more through the
    supervisor tier: `supervisor` mode runs the workers on the supervisor's behalf,
    `planning` mode first asks a coordinator agent for the invocation plan. Either way
    each report's metadata — not the report — is what goes up, and ≥ 50 % of the
    reports is a (recorded) partial success."""
    topics = list(run.request.topics)
    reports = list(run.paths.reports)
    mode = "flat" if len(topics) < HIERARCHICAL_TOPICS else run.settings.research_mode
    if mode == "planning":
        order = await invocation_plan(run, topics, reports)
    else:
        order = list(zip(topics, reports, strict=True))
    index = {r: i for i, r in enumerate(reports, 1)}
    sem = asyncio.Semaphore(run.settings.research_parallel)
    if mode != "flat":
        run.say(f"research: {len(topics)} topics through the {mode} supervisor")
        run.emit("supervisor", mode=mode, workers=len(topics), status="running")

    async def one(topic: str, report: str) -> None:
        async with sem:
            await agent_step(run, StepSpec(f"research.{index[report]}", State.RESEARCH,
                                           "research", Path(report), {"BATON_TOPIC": topic},
                                           metadata=supervisor.extract_metadata))

    start = time.monotonic()
    if mode == "agent":
        results: list[Any] = await supervisor_agent(run, order, index)
    else:
        results = await asyncio.gather(*(one(t, r) for t, r in order),
                                       return_exceptions=True)
    wall_ms = int((time.monotonic() - start) * 1000)
    reraise_cancel(results)
    failures = [r for r in results if isinstance(r, StepFailure)]
    others = [r for r in results if isinstance(r, BaseException) and
              not isinstance(r, StepFailure)]
    if others:
        raise others[0]
    ok = len(results) - len(failures)
    needed = math.ceil(len(results) / 2)
    run.research = ResearchRecord(reports_ok=ok, reports_total=len(results), mode=mode,
                                  partial=bool(failures) and ok >= needed,
                                  failed_topics=[f.step_id for f in failures],
                                  wall_ms=wall_ms)
    if mode != "flat":
        supervisor_checkpoint(run, mode, order, index, failures)
    if failures and ok >= needed:
        run.say(f"research: partial success, {ok}/{len(results)} reports (≥ 50 %); "
                f"continuing without {', '.join(f.step_id for f in failures)}")
    elif failures:
        decisive = worst(failures)
        raise StepFailure("research", decisive.failure,
                          f"only {ok}/{len(results)} research reports were created (50 % "
                          f"needed): " + "; ".join(f.message for f in failures),
                          decisive.error_type, {"failed_steps": [f.step_id for f in failures]})


async def supervisor_agent(run: Run, order: list[tuple[str, str]], index: dict[str, int]
                            ) -> list[StepFailure | None]:
    """`agent` mode: one research-supervisor agent runs the workers itself (a real agent
    with its Task tool; the scripted one spawns scripted workers in parallel). The engine
    trusts none of it: every report goes through the hard barrier, and the metadata is
    extracted here, from the files. Each report gets its own `research.N` record, so a
    resume asks the supervisor only for the reports still missing."""
    steps = run.steps
    pending = [(t, r) for t, r in order if not run.skippable(f"research.{index[r]}")]
    results: list[StepFailure | None] = [None] * (len(order) - len(pending))
    if not pending:
        return results
    sid = "research.supervisor"
    steps.pop(sid, None)  # asked again: for the reports still missing
    summary = Path(fixed(run.paths.reports_dir, "reports")) / ".supervisor_summary.md"
    extra = {"BATON_TOPICS_JSON": json.dumps([t for t, _ in pending]),
             "BATON_REPORT_PATHS": json.dumps([r for _, r in pending]),
             "BATON_WORKER_IDS": json.dumps([f"research.{index[r]}" for _, r in pending])}
    failure: StepFailure | None = None
    reader: SignalReader | None = None
    try:
        reader = await agent_step(run, StepSpec(sid, State.RESEARCH, "research-supervisor",
                                                summary, extra,
                                                returned_by="SUPERVISOR_COMPLETE"))
    except StepFailure as exc:
        failure = exc  # reports it did write still count
    reported = reader.reported_paths() if reader is not None else []
    for topic, report in pending:
        wid = f"research.{index[report]}"
        path = Path(report)
        barrier = check_artifact(run.root, path, reported, "report")
        if barrier is None:
            meta = supervisor.extract_metadata(path)
            steps[wid] = StepRecord(
                state="research", role="research", status=StepStatus.DONE, attempts=1,
                artifact=report, inputs={}, via=sid, topic=topic, finished_at=utc_now(),
                sha256=sha256_file(path, run.root), size=path.stat().st_size, metadata=meta,
                context=accounting.step_context("", meta, path))
            results.append(None)
            continue
        message = (f"{failure.message}; " if failure else "") + barrier.message
        steps[wid] = StepRecord(state="research", role="research", status=StepStatus.FAILED,
                                attempts=1, artifact=report, inputs={}, via=sid, topic=topic,
                                failure=PERMANENT, message=message)
        results.append(StepFailure(wid, failure.failure if failure else PERMANENT,
                                   message, "validation_error", barrier.context()))
    run.context = accounting.aggregate(steps)
    return results


def supervisor_checkpoint(run: Run, mode: str, order: list[tuple[str, str]],
                          index: dict[str, int], failures: list[StepFailure]) -> None:
    """The supervisor section of the checkpoint (`supervisor_state.research_supervisor`,
    also the seeds' `.claude/tmp/research_supervisor.json` and the real layout's
    `reports/SUPERVISOR_CHECKPOINT.json`): per worker its status, duration and metadata,
    and the aggregate passed up."""
    steps = run.steps
    failed = {f.step_id: f.message for f in failures}
    workers = []
    for topic, report in order:
        sid = f"research.{index[report]}"
        step = steps.get(sid) or StepRecord()
        ok = step.done
        w: dict[str, Any] = {"worker_id": sid, "topic": topic,
                             "status": "completed" if ok else "failed",
                             "output_path": report,
                             "duration_ms": step.duration_ms}
        if ok:
            w["metadata"] = {**(step.metadata or {}), "topic": topic}
            w["context_tokens"] = (step.context or {}).get("passed_tokens", 0)
        else:
            w["error"] = failed.get(sid) or step.message or "failed"
        workers.append(w)
    own = steps.get("research.supervisor") if mode == "agent" else None
    section = supervisor.supervisor_section(
        supervisor_id=f"research_supervisor_{run.workflow_id}", mode=mode,
        at=utc_now(), workers=workers,
        total_ms=own.duration_ms if own else None)
    run.supervisor_state.research_supervisor = section
    supervisor.record_section(run.root, RESEARCH_SUPERVISOR, section)
    # the seeds' supervisor-to-orchestrator hand-off: SUPERVISOR_COMPLETE's payload,
    # named by SUPERVISOR_METADATA_PATH in the state file and every later agent's env
    supervisor.publish_research(run.root, section)
    agg = section.aggregated_metadata
    target = Path(fixed(run.paths.reports_dir, "reports")) / "SUPERVISOR_CHECKPOINT.json"
    supervisor.write_json(run.root, target, supervisor.section_json(section))
    run.say(f"research supervisor: {agg.reports_count}/{section.worker_count} "
            f"workers completed; {agg.context_tokens} tokens of metadata passed up")
    run.emit("supervisor", mode=mode, workers=section.worker_count, status="done",
             completed=agg.reports_count, context_tokens=agg.context_tokens,
             path=str(target))
    run.save("research supervisor aggregated")


async def invocation_plan(run: Run, topics: list[str], reports: list[str]
                           ) -> list[tuple[str, str]]:
    """Planning-only mode: the coordinator agent returns `INVOCATION_PLAN_READY: N` and
    the invocations; the engine checks them against its own paths and runs them."""
    plan_file = Path(fixed(run.paths.reports_dir, "reports")) / ".invocation-plan.txt"
    checked: list[list[tuple[str, str]]] = []

    def verify(path: Path, reader: SignalReader) -> str | None:
        sig = reader.first("INVOCATION_PLAN_READY")
        order, problem = supervisor.check_invocation_plan(
            sig.value if sig else None, reader.fields.get("invocations"), topics, reports)
        if problem:
            return f"research coordinator: {problem}"
        checked.append(order or [])
        return None

    await agent_step(run, StepSpec("research.coordinator", State.RESEARCH,
                                   "research-coordinator", plan_file,
                                   {"BATON_TOPICS_JSON": json.dumps(topics),
                                    "BATON_REPORT_PATHS": json.dumps(reports)},
                                   verify=verify))
    step = run.steps["research.coordinator"]
    if checked:
        step.invocations = [{"topic": t, "report_path": r} for t, r in checked[0]]
    return [(i["topic"], i["report_path"]) for i in step.invocations or []] or \
        list(zip(topics, reports, strict=True))


HANDLER = StateHandler(State.RESEARCH, research)

"""The implement state: the plan's phases wave by wave, the phases of a wave in parallel
(bounded by max-parallel), each phase one agent step whose inputs are its own section of
the plan and its dependencies' summaries; or, in `iterations` mode, the coordinator loop
of `iterations.py`. A failed wave keeps its finished phases."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

from ...model.graph import build_graph
from ...model.plan import DONE, status_word
from ...model.states import State
from ...runs.digest import sha256_file
from ..agent_step import StepSpec, agent_step
from ..failures import PERMANENT, LoopDone, StepFailure, reraise_cancel, worst
from ..run import Run
from .base import StateHandler
from .iterations import implement_iterations


def phase_number(pid: str) -> int | str:
    """Phase ids as the bash side writes them in wave_structure: numbers where they are."""
    return int(pid) if pid.isdigit() else pid


async def implement(run: Run) -> None:
    paths = run.paths
    plan_path = Path(paths["plan"])
    plan = run.plans.load(plan_path)
    if isinstance(plan, str):
        raise StepFailure("implement", PERMANENT, plan, "file_error")
    problem = run.plans.problem(plan_path)
    if problem:
        raise StepFailure("implement", PERMANENT, problem, "validation_error")
    graph = build_graph(plan)
    sections = run.plans.phase_hashes(plan_path)
    done_in_plan = {p.id for p in plan.phases if status_word(p) in DONE}
    ws = run.data["workflow_state"]
    ws.update(wave_structure={str(i): [phase_number(p) for p in w]
                              for i, w in enumerate(graph.waves, 1)},
              total_waves=len(graph.waves))
    if run.settings.implement_mode == "iterations":
        todo = [p.id for p in plan.phases if p.id not in done_in_plan
                and not run.skippable(f"implement.phase-{p.id}")]  # adopted: done elsewhere
        with contextlib.suppress(LoopDone):
            await implement_iterations(run, plan_path, todo)
        return
    ws.setdefault("wave_results", {})
    summaries = Path(paths["summaries_dir"])
    sem = asyncio.Semaphore(run.settings.max_parallel)

    def summary_of(pid: str) -> Path:
        return summaries / f"phase_{pid.replace('.', '_')}_summary.md"

    async def phase(pid: str) -> None:
        inputs: dict[str, str | None] = {f"{plan_path}#phase-{pid}": sections.get(pid)}
        for dep in graph.deps.get(pid, []):
            if dep not in done_in_plan:
                inputs[str(summary_of(dep))] = sha256_file(summary_of(dep))
        async with sem:
            await agent_step(run, StepSpec(
                f"implement.phase-{pid}", State.IMPLEMENT, "implement", summary_of(pid),
                {"BATON_PHASE": pid, "BATON_PHASE_TITLE": graph.titles.get(pid, ""),
                 "BATON_PLAN_PATH": str(plan_path)}, inputs,
                timeout=run.settings.implement_timeout, saved_as=f"phase {pid} complete"))

    for w, wave in enumerate(graph.waves, 1):
        todo = [p for p in wave if p not in done_in_plan]
        ws["current_wave"] = w
        if not todo:
            continue
        run.emit("wave", wave=w, total=len(graph.waves), phases=todo)
        run.say(f"wave {w}/{len(graph.waves)}: phase{'s' if len(todo) > 1 else ''} "
                f"{', '.join(todo)}" + (" in parallel" if len(todo) > 1 else ""))
        start = time.monotonic()
        results = await asyncio.gather(*(phase(p) for p in todo), return_exceptions=True)
        reraise_cancel(results)
        failures = [r for r in results if isinstance(r, BaseException)]
        ws["wave_results"][str(w)] = {
            "phases": [phase_number(p) for p in todo], "status": "failed" if failures else
            "complete", "duration_ms": int((time.monotonic() - start) * 1000),
            "parallel": len(todo) > 1}
        if failures:
            bad = [f for f in failures if isinstance(f, StepFailure)]
            if len(bad) < len(failures):
                raise next(f for f in failures if not isinstance(f, StepFailure))
            decisive = worst(bad)
            raise StepFailure(
                "implement", decisive.failure, f"wave {w}: " + "; ".join(
                    f.message for f in bad) + " (finished phases of this wave are kept)",
                decisive.error_type, {"failed_steps": [f.step_id for f in bad], "wave": w})
    ws["current_wave"] = len(graph.waves)


HANDLER = StateHandler(State.IMPLEMENT, implement)

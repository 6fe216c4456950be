"""The implement state: the plan's phases wave by wave, the phases of a wave in parallel
(bounded by max-parallel), each phase one agent step whose inputs are its own section of
the plan and its dependencies' summaries; or, in `iterations` mode, the coordinator loop
of `iterations.py`. A failed wave keeps its finished phases."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from ...model.graph import build_graph
from ...model.plan import DONE, status_word
from ...model.states import State
from ...runs.digest import sha256_file
from ..agent_step import StepSpec, agent_step, unrecorded_work
from ..failures import PERMANENT, Cancelled, LoopDone, StepFailure, reraise_cancel, worst
from ..isolation import Isolation, PhaseTree
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
    iso = Isolation.of(run)
    if iso is not None:
        prepare(run, iso)
    topic = Path(paths["topic_dir"])  # an isolated agent reads the plan, writes its summary
    extra_dirs = (topic,) if plan_path.is_relative_to(topic) else (topic, plan_path.parent)

    def summary_of(pid: str) -> Path:
        return summaries / f"phase_{pid.replace('.', '_')}_summary.md"

    async def phase(pid: str, base: str | None) -> None:
        sid = f"implement.phase-{pid}"
        tree: PhaseTree | None = None
        if iso is not None and base is not None and not run.skippable(sid):
            if unrecorded_work(run, sid, summary_of(pid)) is not None:
                tree = iso.reuse_tree(pid)  # its agent finished there: kept, not redone
            if tree is None:  # each in its own thread: its agent starts when it is ready
                tree = await asyncio.to_thread(iso.open_tree, sid, pid, base)
        inputs: dict[str, str | None] = {f"{plan_path}#phase-{pid}": sections.get(pid)}
        for dep in graph.deps.get(pid, []):
            if dep not in done_in_plan:
                inputs[str(summary_of(dep))] = sha256_file(summary_of(dep))
        extra = {"BATON_PHASE": pid, "BATON_PHASE_TITLE": graph.titles.get(pid, ""),
                 "BATON_PLAN_PATH": str(plan_path)}
        title = graph.titles.get(pid, "")
        fields: Callable[[], dict[str, Any]] | None = None
        if iso is not None and tree is not None:
            extra.update(BATON_WORKTREE=str(tree.cwd), BATON_BRANCH=tree.branch,
                         CLAUDE_PROJECT_DIR=str(tree.cwd))
            message = commit_message(run, pid, title, "in its own worktree")
            fields = lambda: {"git": iso.commit_tree(sid, tree, message)}  # noqa: E731
        async with sem:
            await agent_step(run, StepSpec(
                sid, State.IMPLEMENT, "implement", summary_of(pid), extra, inputs,
                timeout=run.settings.implement_timeout, saved_as=f"phase {pid} complete",
                fields=fields, cwd=tree.cwd if tree else None,
                extra_dirs=extra_dirs if tree else ()))

    # merged worktrees of one wave are removed in a thread while the next wave runs
    cleanup: asyncio.Future[None] | None = None
    try:
        for w, wave in enumerate(graph.waves, 1):
            todo = [p for p in wave if p not in done_in_plan]
            ws["current_wave"] = w
            if not todo:
                continue
            # HEAD holds every earlier wave, so every dependency of these phases; every
            # phase works in its own worktree, so the user's tree changes only by merges
            base = iso.repo.head() if iso is not None else None
            run.emit("wave", wave=w, total=len(graph.waves), phases=todo,
                     isolated=base is not None)
            run.say(f"wave {w}/{len(graph.waves)}: phase{'s' if len(todo) > 1 else ''} "
                    f"{', '.join(todo)}" + (" in parallel" if len(todo) > 1 else "")
                    + (" (own worktrees)" if base is not None else ""))
            start = time.monotonic()
            results = await asyncio.gather(*(phase(p, base) for p in todo),
                                           return_exceptions=True)
            reraise_cancel(results)
            failures = [r for r in results if isinstance(r, BaseException)]
            if iso is not None:
                if cleanup is not None:
                    await cleanup
                async with integrating(run, iso, f"merging wave {w}"):
                    conflict, finished = merge_wave(run, iso, todo, graph.titles)
                cleanup = asyncio.ensure_future(asyncio.to_thread(iso.discard, finished))
                if conflict is not None:
                    failures.append(conflict)
            ws["wave_results"][str(w)] = {
                "phases": [phase_number(p) for p in todo], "status": "failed" if failures
                else "complete", "duration_ms": int((time.monotonic() - start) * 1000),
                "parallel": len(todo) > 1}
            if failures:
                raise wave_failure(w, failures)
    finally:
        if cleanup is not None:
            await cleanup
    ws["current_wave"] = len(graph.waves)


def wave_failure(w: int, failures: list[BaseException]) -> BaseException:
    """What a wave with failed phases raises: a conflict alone is its phase's own failure
    (BTN506 on its heading); otherwise the wave's, decided by the worst failure."""
    bad = [f for f in failures if isinstance(f, StepFailure)]
    if len(bad) < len(failures):
        return next(f for f in failures if not isinstance(f, StepFailure))
    if len(bad) == 1 and bad[0].context.get("merge_conflict"):
        return bad[0]
    decisive = worst(bad)
    return StepFailure(
        "implement", decisive.failure, f"wave {w}: " + "; ".join(
            f.message for f in bad) + " (finished phases of this wave are kept)",
        decisive.error_type, {"failed_steps": [f.step_id for f in bad], "wave": w})


def commit_message(run: Run, pid: str, title: str, how: str) -> str:
    """A phase's commit: its title, then the workflow and phase as trailers."""
    head = f"Phase {pid}: {title}" if title else f"Phase {pid}"
    return (f"{head}\n\nImplemented {how} by Baton workflow {run.workflow_id}.\n\n"
            f"Baton-Workflow: {run.workflow_id}\nBaton-Phase: {pid}\n")


def integrating(run: Run, iso: Isolation, what: str) -> AbstractAsyncContextManager[None]:
    """Hold the repository's integration lock (every run of the repository merges into
    the user's branch one at a time), saying once whom this run waits for."""

    def cancelled() -> None:
        if run.cancel_event.is_set():
            raise Cancelled()

    return iso.integrating(what, cancelled)


def prepare(run: Run, iso: Isolation) -> None:
    """Before the first wave (and on resume): remove what a killed or failed run left,
    take in merges the user finished by hand, and refuse a dirty working tree."""
    iso.exclude_worktrees()
    keep = {sid.removeprefix("implement.phase-") for sid in run.launched
            if sid.startswith("implement.phase-") and not run.skippable(sid)}
    removed = iso.sweep(run.steps, keep)
    if removed:
        run.say("implement: removed the worktrees an earlier run left (phase "
                f"{', '.join(removed)})")
    for sid, step in run.steps.items():
        record = step.get("git")
        if record and record.get("status") == "conflict":
            iso.settle(sid, record)
            if record["status"] == "merged":
                run.say(f"[{sid}] merged by hand into {record.get('target') or 'HEAD'}")
                iso.discard([sid.removeprefix("implement.phase-")])
    iso.require_clean("implement")


def merge_wave(run: Run, iso: Isolation, todo: list[str], titles: dict[str, str]
               ) -> tuple[StepFailure | None, list[str]]:
    """Merge the wave's committed phases in dependency order, each saved as it lands; the
    first conflict stops the merging (git holds one merge in progress) and is returned with
    the phases whose worktree and branch can go (merged or empty). A conflicted phase keeps
    its branch; a failed phase keeps its worktree for inspection until the resume replaces
    it."""
    finished: list[str] = []
    failure: StepFailure | None = None
    for pid in todo:
        sid = f"implement.phase-{pid}"
        step = run.steps.get(sid) or {}
        record = step.get("git")
        if step.get("status") != "done" or not record or record.get("mode") != "worktree":
            continue
        if record.get("status") == "committed":
            title = titles.get(pid, "")
            message = (f"Merge phase {pid}: {title} ({run.workflow_id})\n\n"
                       f"Baton-Workflow: {run.workflow_id}\nBaton-Phase: {pid}\n")
            try:
                iso.merge(sid, record, message)
            except StepFailure as exc:
                iso.discard([pid], branches=False)  # the merge in progress needs its branch
                run.save(f"phase {pid} merge failed")
                iso.integration.note(None)  # recorded: nothing for a next holder to undo
                run.emit("merge", phase=pid, status=record.get("status"),
                         branch=record.get("branch"), conflicts=record.get("conflicts"))
                run.say(f"[{sid}] {exc.message}")
                failure = exc
                break
            run.save(f"phase {pid} merged")
            iso.integration.note(None)
            run.emit("merge", phase=pid, status="merged", commit=record.get("merged"),
                     branch=record.get("branch"))
            run.say(f"[{sid}] merged {record['branch']} into "
                    f"{record.get('target') or 'HEAD'} ({str(record['merged'])[:10]})")
        if record.get("status") in ("merged", "empty"):
            finished.append(pid)
    return failure, finished


HANDLER = StateHandler(State.IMPLEMENT, implement)

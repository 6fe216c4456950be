"""The implement state: the plan's phases wave by wave, the phases of a wave in parallel
(bounded by max-parallel), each phase one agent step whose inputs are its own section of
the plan and its dependencies' summaries; or, in `iterations` mode, the coordinator loop
of `iterations.py`. A failed wave keeps its finished phases."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

from ...model.checkpoint import WaveResult
from ...model.graph import waves_after
from ...model.plan import FINISHED, STARTED
from ...model.states import PhaseMode, PhaseStatus, State
from ...parse.plan_marks import mark_phase
from ...runs import confine
from ...runs.digest import sha256_file
from ...runs.record import IMPLEMENTATION_SUPERVISOR, StepRecord
from ...runs.records import shell_quote, state_file_path, utc_now
from .. import supervisor, tiers
from ..agent_step import StepSpec, agent_step, unrecorded_work
from ..failures import PERMANENT, TRANSIENT, Cancelled, LoopDone, StepFailure, reraise_cancel, worst
from ..isolation import Isolation, PhaseTree, PlanEdit, branch_name
from ..plans import edit_plan
from ..repolock import LockTimeout
from ..run import Run, fixed
from ..shipping import Shipment, bundle_key
from .base import StateHandler
from .iterations import implement_iterations

log = logging.getLogger(__name__)


def phase_number(pid: str) -> int | str:
    """Phase ids as the bash side writes them in wave_structure: numbers where they are."""
    return int(pid) if pid.isdigit() else pid


async def implement(run: Run) -> None:
    paths = run.paths
    plan_path = Path(fixed(paths.plan, "plan"))
    plan = run.plans.load(plan_path)
    if isinstance(plan, str):
        raise StepFailure("implement", PERMANENT, plan, "file_error")
    problem = run.plans.problem(plan_path)
    if problem:
        raise StepFailure("implement", PERMANENT, problem, "validation_error")
    reading = run.plans.schedule(plan_path)
    if isinstance(reading, str):
        raise StepFailure("implement", PERMANENT, reading, "file_error")
    graph, done_in_plan = reading
    sections = run.plans.phase_hashes(plan_path)
    iso = Isolation.of(run) if run.settings.implement_mode != "iterations" else None
    if iso is not None:
        prepare(run, iso, plan_path, graph.titles)
    ws = run.workflow_state
    if ws.wave_results is None:
        ws.wave_results = {}
    wave_results = ws.wave_results
    # the waves actually run: those a resumed run already finished, then the waves of the
    # phases still to run (a phase whose dependencies are all done is ready now)
    done = landed(run, iso, done_in_plan, graph.order)
    for pid in graph.order:
        prior = run.steps.get(f"implement.phase-{pid}")
        if pid in done and prior is not None and prior.done:
            run.say(f"[implement.phase-{pid}] already done; skipped")
            if pid not in done_in_plan and run.settings.implement_mode != "iterations":
                # done, then killed before its marker edit
                mark_plan(run, plan_path, pid, FINISHED)
    ran: list[list[int | str]] = []
    for _, result in sorted(wave_results.items(), key=_wave_key):
        if result.status != "complete" or any(str(p) not in done for p in result.phases):
            break  # a phase of it runs again (its section was edited): not a wave that ran
        ran.append(result.phases)
    waves = waves_after(graph, done)
    first = len(ran) + 1
    total = len(ran) + len(waves)
    ws.wave_structure = {str(i): list(w) for i, w in enumerate(
        [*ran, *([phase_number(p) for p in w] for w in waves)], 1)}
    ws.total_waves = total
    if run.settings.implement_mode == "iterations":
        todo = [p.id for p in plan.phases if p.id not in done_in_plan
                and not run.skippable(f"implement.phase-{p.id}")]  # adopted: done elsewhere
        with contextlib.suppress(LoopDone):
            await implement_iterations(run, plan_path, todo)
        return
    # the phases this workflow runs or ran (not those the plan had done before it)
    mine = [pid for pid in graph.order
            if pid not in done_in_plan or f"implement.phase-{pid}" in run.steps]
    decision = tiers.implementation_decision(plan, run.plans.phase_texts(plan_path), mine)
    supervised = bool(decision["hierarchical"])
    diffs: dict[str, list[str]] = {}  # a phase commit's files, asked of git once
    if supervised:
        run.say(f"implement: {decision['domain_count']} domain(s) "
                f"({', '.join(decision['tracks']) or 'none'}), complexity "
                f"{decision['complexity']} ({decision['complexity_source']}): through the "
                "implementation supervisor")
        run.emit("supervisor", tier="implementation", mode="supervisor", workers=len(mine),
                 status="running")
    summaries = Path(fixed(paths.summaries_dir, "summaries"))
    sem = asyncio.Semaphore(run.settings.max_parallel)
    # an isolated agent reads the plan, writes its summary
    topic = Path(fixed(paths.topic_dir, "topic"))
    extra_dirs = (topic,) if plan_path.is_relative_to(topic) else (topic, plan_path.parent)

    def summary_of(pid: str) -> Path:
        return summaries / f"phase_{pid.replace('.', '_')}_summary.md"

    async def phase(pid: str, base: str | None) -> None:
        sid = f"implement.phase-{pid}"
        tree: PhaseTree | None = None
        # a phase another machine runs gets no worktree here: it is shipped as bundles
        remote = iso is not None and base is not None and run.remote(State.IMPLEMENT)
        if iso is not None and base is not None and not run.skippable(sid) and not remote:
            if unrecorded_work(run, sid, summary_of(pid)) is not None:
                tree = iso.reuse_tree(pid)  # its agent finished there: kept, not redone
            if tree is None:  # each in its own thread: its agent starts when it is ready
                tree = await asyncio.to_thread(iso.open_tree, sid, pid, base)
        inputs: dict[str, str | None] = {f"{plan_path}#phase-{pid}": sections.get(pid)}
        for dep in graph.deps.get(pid, []):
            if dep not in done_in_plan or summary_of(dep).is_file():  # done by this run
                inputs[str(summary_of(dep))] = sha256_file(summary_of(dep), run.root)
        extra = {"BATON_PHASE": pid, "BATON_PHASE_TITLE": graph.titles.get(pid, ""),
                 "BATON_PLAN_PATH": str(plan_path)}
        title = graph.titles.get(pid, "")
        fields: Callable[[StepRecord], None] | None = None
        shipment: Shipment | None = None
        if remote and iso is not None and base is not None:
            shipment = ship(run, iso, pid, title, base, inputs, run.settings.dask.remote)
            extra.update(BATON_BRANCH=shipment.branch)
            fields = landing(iso, pid, shipment)
        elif iso is not None and tree is not None:
            extra.update(BATON_WORKTREE=str(tree.cwd), BATON_BRANCH=tree.branch,
                         CLAUDE_PROJECT_DIR=str(tree.cwd))
            await asyncio.to_thread(state_in_tree, run, tree)
            message = commit_message(run, pid, title, "in its own worktree")
            # marked complete when it lands: the merge commit carries the marker edit
            fields = committing(iso, sid, tree, message)
        async with sem:
            reader = await agent_step(run, StepSpec(
                sid, State.IMPLEMENT, "implement", summary_of(pid), extra, inputs,
                timeout=run.settings.implement_timeout, saved_as=f"phase {pid} complete",
                fields=fields, cwd=tree.cwd if tree else None,
                extra_dirs=extra_dirs if tree else (),
                metadata=phase_metadata if supervised else None, shipment=shipment))
        if reader is not None and tree is None and shipment is None:
            # after the checkpoint that records the phase done: a kill in between leaves a
            # done phase reading [IN PROGRESS], which the resume marks (never the reverse)
            mark_plan(run, plan_path, pid, FINISHED)

    # merged worktrees of one wave are removed in a thread while the next wave runs
    cleanup: asyncio.Future[None] | None = None
    try:
        for w, todo in enumerate(waves, first):
            ws.current_wave = w
            # HEAD holds every earlier wave, so every dependency of these phases; every
            # phase works in its own worktree, so the user's tree changes only by merges
            base = iso.repo.head() if iso is not None else None
            run.emit("wave", wave=w, total=total, phases=todo, isolated=base is not None)
            run.say(f"wave {w}/{total}: phase{'s' if len(todo) > 1 else ''} "
                    f"{', '.join(todo)}" + (" in parallel" if len(todo) > 1 else "")
                    + (" (own worktrees)" if base is not None else ""))
            for pid in todo:  # progress, not an edit: a resume after a kill needs no --force
                if not run.skippable(f"implement.phase-{pid}"):
                    mark_plan(run, plan_path, pid, STARTED)
            start = time.monotonic()
            results = await asyncio.gather(*(phase(p, base) for p in todo),
                                           return_exceptions=True)
            reraise_cancel(results)
            failures = [r for r in results if isinstance(r, BaseException)]
            if iso is not None:
                if cleanup is not None:
                    await cleanup
                async with integrating(run, iso, f"merging wave {w}"):
                    conflict, landed_now = merge_wave(run, iso, todo, graph.titles, plan_path)
                cleanup = asyncio.ensure_future(asyncio.to_thread(iso.discard, landed_now))
                if conflict is not None:
                    failures.append(conflict)
            wave_results[str(w)] = WaveResult(
                phases=[phase_number(p) for p in todo], status="failed" if failures
                else "complete", duration_ms=int((time.monotonic() - start) * 1000),
                parallel=len(todo) > 1)
            if supervised:
                implementation_checkpoint(run, iso, decision, mine, graph.titles, diffs)
            if failures:
                raise wave_failure(w, failures)
    finally:
        if cleanup is not None:
            await cleanup
    if iso is not None and iso.carried:
        # a phase merged by hand with no phase after it to carry its marker edit: its own
        # commit, so the run leaves the plan committed as it reads
        async with integrating(run, iso, "committing the plan's markers"):
            if iso.commit_mark("implement", lambda data: data, (
                    f"Mark phases merged by hand complete ({run.workflow_id})\n\n"
                    f"Baton-Workflow: {run.workflow_id}\n")):
                run.save("plan markers committed")
    ws.current_wave = total
    if supervised and not waves:  # nothing left to run: the record still says what ran
        implementation_checkpoint(run, iso, decision, mine, graph.titles, diffs)


def ship(run: Run, iso: Isolation, pid: str, title: str, base: str,
         inputs: dict[str, str | None], remote: str | None = None) -> Shipment:
    """A phase that runs on another machine (`Run.remote`), as the executor ships it: the
    base bundle (made once per base), the branch, the commit message and staging a local
    worktree would have, and the key its returned bundle is kept under (its inputs and
    base: a resume that finds that bundle imports it instead of running the agent again).
    The worker leaves out Baton's own places and the plan: a local worktree's plan is the
    base's, never edited there (agents mark the main tree's), while a worker's copy is the
    caller's, with its `[IN PROGRESS]` markers; each merge commit carries its own edit.
    With `remote` (a remote's name) the worker fetches the history from there and the
    bundle holds only the commits it lacks (`Isolation.base_source`)."""
    sid = f"implement.phase-{pid}"
    key = bundle_key(inputs, base)
    return Shipment(sid=sid, base=base, branch=branch_name(run.workflow_id, pid),
                    message=commit_message(run, pid, title, "in its own worktree"), key=key,
                    prefix=str(iso.prefix), exclude=tuple(iso.unlike_user),
                    bundle=lambda: iso.base_source(base, remote).bundle,
                    source=lambda: iso.base_source(base, remote),
                    keep=lambda data: iso.keep_bundle(sid, data, key),
                    discard=lambda: iso.discard_bundle(sid, key))


def committing(iso: Isolation, sid: str, tree: PhaseTree, message: str
               ) -> Callable[[StepRecord], None]:
    """The local phase's `fields`: what its agent left in its worktree committed, the git
    record stored in the checkpoint that records it done."""

    def commit(step: StepRecord) -> None:
        step.git = iso.commit_tree(sid, tree, message)

    return commit


def landing(iso: Isolation, pid: str, shipment: Shipment) -> Callable[[StepRecord], None]:
    """The shipped phase's `fields`: its returned bundle landed as its branch, the git record
    stored in the checkpoint that records it done (as `commit_tree` for a local worktree).
    With nothing returned in this process — a resume keeping the work of an agent that
    finished before the engine died — the bundle kept under the phase's key is landed. What
    the worker could not commit (conflict markers) fails the step as a local phase's."""

    def land(step: StepRecord) -> None:
        if shipment.failed is not None:
            raise iso.shipped_failure(shipment.sid, shipment.failed)
        step.git = iso.land_bundle(shipment.sid, pid, shipment.returned, shipment.key,
                                   base=shipment.base)

    return land


def state_in_tree(run: Run, tree: PhaseTree) -> None:
    """A copy of the run's state file where the seeds' `load_workflow_state "$WORKFLOW_ID"`
    looks from a phase's worktree (`${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_<id>.sh`, the
    worktree being the agent's project directory), taken as the agent starts. Its first line
    names the worktree as `CLAUDE_PROJECT_DIR`, so sourcing it keeps the agent in its tree;
    what the agent appends goes to `STATE_FILE`, the run's own file. `.claude/tmp` is Baton's
    and never part of a phase's commit."""
    source = state_file_path(run.root, run.workflow_id)
    target = tree.cwd / source.relative_to(run.root)
    try:
        text = confine.read_bytes(run.root, source)
        first, sep, rest = text.partition(b"\n")
        if first.startswith(b"export CLAUDE_PROJECT_DIR="):
            text = f"export CLAUDE_PROJECT_DIR={shell_quote(str(tree.cwd))}".encode() + sep + rest
        confine.write_atomic(run.root, target, text, durable=False)
    except FileNotFoundError:
        pass
    except OSError as exc:  # a link or FIFO the checkout planted there: not written through
        log.warning("no copy of the state file in %s: %s", tree.cwd, confine.describe(exc))


def implementation_checkpoint(run: Run, iso: Isolation | None, decision: dict[str, Any],
                              order: list[str], titles: dict[str, str],
                              diffs: dict[str, list[str]]) -> None:
    """The implementation supervisor's section after each wave: tracks by domain, each
    phase's summary as metadata, the files each phase changed (its commit, when it ran in
    its own worktree) and the time the waves saved."""
    modified: dict[str, list[str]] = {}
    for pid in order:
        phase = run.steps.get(f"implement.phase-{pid}")
        record = phase.git if phase is not None else None
        base = (record.base or "") if record is not None else ""
        commit = (record.commit or "") if record is not None else ""
        if iso is None or not base or not commit:
            continue
        if commit not in diffs:
            out = iso.repo.run("diff", "--name-only", "-z", base, commit, check=False)
            if out.returncode != 0:
                continue
            diffs[commit] = sorted(p for p in out.stdout.split("\0") if p)
        modified[pid] = diffs[commit]
    results = run.workflow_state.wave_results or {}
    section = tiers.implementation_section(
        supervisor_id=f"implementation_supervisor_{run.workflow_id}", at=utc_now(),
        decision=decision, steps=run.steps, titles=titles, order=order,
        wall_ms=sum(int(r.duration_ms or 0) for r in results.values()),
        modified=modified)
    run.supervisor_state.implementation_supervisor = section
    supervisor.record_section(run.root, IMPLEMENTATION_SUPERVISOR, section)
    agg = section.aggregated_metadata
    run.say(f"implementation supervisor: {len(agg.phases_completed)}/"
            f"{section.worker_count} phases, tracks "
            + ", ".join(f"{d} {t.status}" for d, t in section.tracks.items())
            + f"; {agg.context_tokens} tokens of metadata passed up")
    run.emit("supervisor", tier="implementation", mode="supervisor",
             workers=section.worker_count, status="done",
             completed=len(agg.phases_completed), context_tokens=agg.context_tokens)
    run.save("implementation supervisor aggregated")


def phase_metadata(summary: Path) -> dict[str, Any]:
    """What the implementation supervisor passes up for a phase: its summary's metadata
    (`supervisor.extract_metadata`, as for a research report), the empty parts left out."""
    return {k: v for k, v in supervisor.extract_metadata(summary).items() if v not in ("", [])}


def _wave_key(item: tuple[str, Any]) -> tuple[int, str]:
    return (int(item[0]) if item[0].isdigit() else 0, item[0])


def landed(run: Run, iso: Isolation | None, done_in_plan: set[str], order: list[str]
           ) -> set[str]:
    """Phases nothing waits for. A phase this workflow finished is done while its step is
    valid — marked `[COMPLETE]` by the engine or not, an edit of its section runs it again —
    except when its branch still waits to be merged (it must go through its wave to land);
    any other phase is done when the plan marks it complete (or skipped)."""
    done: set[str] = set()
    for pid in order:
        sid = f"implement.phase-{pid}"
        step = run.steps.get(sid)
        if step is None:
            if pid in done_in_plan:
                done.add(pid)
            continue
        status = step.git.status if iso is not None and step.git is not None else None
        if status in (PhaseStatus.COMMITTED, PhaseStatus.CONFLICT):
            continue
        if step.done:
            if run.skippable(sid):
                done.add(pid)
        elif pid in done_in_plan:
            done.add(pid)
    return done


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


def finished(pid: str) -> PlanEdit:
    """The plan edit of a phase whose hard barrier passed: `[COMPLETE]`, its boxes ticked."""
    return lambda data: mark_phase(data, pid, FINISHED, tick=True)


def mark_plan(run: Run, plan_path: Path, pid: str, word: str) -> None:
    """Mark the phase in the plan file as the seeds' implementer does (`[IN PROGRESS]` when
    it starts; `[COMPLETE]` and ticked boxes when it is done); a plan that cannot be marked
    is said and left alone — the run goes on."""
    edit = finished(pid) if word == FINISHED else (
        lambda data: mark_phase(data, pid, STARTED))
    note = edit_plan(run.root, plan_path, edit)
    if note is not None:
        run.say(f"[implement.phase-{pid}] plan not marked [{word}]: {note}")


def merge_message(run: Run, pid: str, title: str) -> str:
    return (f"Merge phase {pid}: {title} ({run.workflow_id})\n\n"
            f"Baton-Workflow: {run.workflow_id}\nBaton-Phase: {pid}\n")


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


def prepare(run: Run, iso: Isolation, plan_path: Path, titles: dict[str, str]) -> None:
    """Before the first wave (and on resume): remove what a killed or failed run left,
    finish a clean merge of Baton's that a kill interrupted before its commit, take in
    merges the user finished by hand, and refuse a dirty working tree — the last three
    under the integration lock, as every change of the user's branch."""
    iso.exclude_worktrees()
    keep = {sid.removeprefix("implement.phase-") for sid in run.launched
            if sid.startswith("implement.phase-") and not run.skippable(sid)}
    removed = iso.sweep(run.steps, keep)
    if removed:
        run.say("implement: removed the worktrees an earlier run left (phase "
                f"{', '.join(removed)})")
    try:
        with iso.integrating_now("implement", "preparing the tree"):
            _settle(run, iso, plan_path, titles)
    except LockTimeout as exc:
        raise StepFailure("implement", TRANSIENT, f"the repository stayed busy: {exc}",
                          "timeout") from None


def _settle(run: Run, iso: Isolation, plan_path: Path, titles: dict[str, str]) -> None:
    for sid, step in run.steps.items():
        record = step.git
        pid = sid.removeprefix("implement.phase-")
        if record is not None and iso.finish_merge(sid, record, merge_message(
                run, pid, titles.get(pid, "")), finished(pid)):
            mark_plan(run, plan_path, pid, FINISHED)
            run.save(f"phase {pid} merged")
            run.say(f"[{sid}] finished the merge a killed run left staged")
            iso.discard([pid])  # merged: its worktree and branch go, as after any merge
        if record is not None and record.status == PhaseStatus.CONFLICT \
                and iso.settle(sid, record):
            run.say(f"[{sid}] merged by hand into {record.target or 'HEAD'}")
            mark_plan(run, plan_path, pid, FINISHED)
            iso.carried.append(finished(pid))  # into the next phase's commit
            iso.discard([pid])
    iso.check_clean("implement")


def merge_wave(run: Run, iso: Isolation, todo: list[str], titles: dict[str, str],
               plan_path: Path) -> tuple[StepFailure | None, list[str]]:
    """Merge the wave's committed phases in dependency order, each saved as it lands with
    its plan marker edit in its merge commit; the first conflict stops the merging (git holds
    one merge in progress) and is returned with the phases whose worktree and branch can go
    (merged or empty). A conflicted phase keeps its branch; a failed phase keeps its worktree
    for inspection until the resume replaces it."""
    done: list[str] = []
    failure: StepFailure | None = None
    for pid in todo:
        sid = f"implement.phase-{pid}"
        step = run.steps.get(sid)
        record = step.git if step is not None else None
        if step is None or not step.done or record is None \
                or record.mode != PhaseMode.WORKTREE:
            continue
        if record.status == PhaseStatus.COMMITTED:
            try:
                iso.merge(sid, record, merge_message(run, pid, titles.get(pid, "")),
                          finished(pid))
            except StepFailure as exc:
                iso.discard([pid], branches=False)  # the merge in progress needs its branch
                run.save(f"phase {pid} merge failed")
                iso.integration.note(None)  # recorded: nothing for a next holder to undo
                run.emit("merge", phase=pid, status=record.status,
                         branch=record.branch, conflicts=record.conflicts)
                run.say(f"[{sid}] {exc.message}")
                failure = exc
                break
            mark_plan(run, plan_path, pid, FINISHED)
            run.save(f"phase {pid} merged")
            iso.integration.note(None)  # recorded: nothing for a next holder to undo
            run.emit("merge", phase=pid, status=PhaseStatus.MERGED, commit=record.merged,
                     branch=record.branch)
            run.say(f"[{sid}] merged {record.branch} into "
                    f"{record.target or 'HEAD'} ({str(record.merged)[:10]})")
        elif record.status == PhaseStatus.EMPTY:
            # nothing to merge: the phase's commit is its marker edit alone
            record.merged = iso.commit_mark(sid, finished(pid), commit_message(
                run, pid, titles.get(pid, ""), "in its own worktree, changing nothing"))
            mark_plan(run, plan_path, pid, FINISHED)
            run.save(f"phase {pid} marked complete")
        if record.status in (PhaseStatus.MERGED, PhaseStatus.EMPTY):
            done.append(pid)
    return failure, done


HANDLER = StateHandler(State.IMPLEMENT, implement)

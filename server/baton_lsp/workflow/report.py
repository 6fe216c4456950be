"""The end-of-run console summary in the seeds' four sections: Summary, Phases, Artifacts,
Next steps — with wall time per state, the time parallel work saved against running the
same steps one after another, and the measured context reduction.

Built from the checkpoint alone, so it reads the same after `run` and after `resume`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..model.checkpoint import WaveResult
from ..model.states import RunStatus, StepStatus
from ..runs.diagnosis import diagnose
from ..runs.record import RunRecord, UsageTotals
from ..terminal import terminal_safe
from .accounting import format_usage, reduction_text

STATE_ORDER = ("initialize", "research", "plan", "implement", "test", "debug", "document")


def _s(ms: float) -> str:
    return f"{ms / 1000:.2f} s"


def parallel_savings(record: RunRecord) -> dict[str, dict[str, int]]:
    """Per state, the sum of its parallel steps' durations (sequential) against the wall
    time they took together: research workers and the implement waves of more than one
    phase (a wave of one phase runs nothing beside it; its worktree and merge would count
    as time parallel work lost)."""
    steps = record.baton.steps
    out: dict[str, dict[str, int]] = {}
    research = record.baton.research
    workers = [s for sid, s in steps.items() if sid.startswith("research.") and
               (s.role or "research") == "research" and s.via is None]
    if research is not None and research.wall_ms is not None and len(workers) > 1:
        seq = sum(s.duration_ms or 0 for s in workers)
        out["research"] = {"sequential_ms": seq, "wall_ms": research.wall_ms}
    waves = _wave_results(record)
    seq = wall = 0
    parallel = [r for r in waves.values() if len(r.phases) > 1]
    for result in parallel:
        seq += sum((steps[f"implement.phase-{p}"].duration_ms or 0)
                   if f"implement.phase-{p}" in steps else 0 for p in result.phases)
        wall += int(result.duration_ms or 0)
    if parallel:
        out["implement"] = {"sequential_ms": seq, "wall_ms": wall}
    return out


def savings_text(seq_ms: int, wall_ms: int) -> str:
    """What running steps at once saved, in words; never a negative saving: when the waves'
    worktrees and merges cost more than running side by side gained, that is what it says."""
    if seq_ms > wall_ms:
        return f"saved {_s(seq_ms - wall_ms)}, {100 * (seq_ms - wall_ms) / seq_ms:.0f} %"
    return ("no time saved: starting, isolating and merging them took longer than running "
            "them side by side gained")


def _wave_results(record: RunRecord) -> dict[str, WaveResult]:
    ws = record.workflow_state
    return (ws.wave_results if ws is not None else None) or {}


def _rel(root: Path | None, path: str | None) -> str:
    if not path:
        return ""
    if root is not None:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            pass
    return path


def render(record: RunRecord, root: Path | None = None) -> str:
    baton = record.baton
    steps = baton.steps
    wid = record.checkpoint_id or "?"
    status = record.status
    shown: str = status
    cls = record.state_machine.classification
    source = cls.source
    timing = baton.timing
    saved = parallel_savings(record)
    ctx = baton.context.total if baton.context is not None else None
    mark = {RunStatus.COMPLETE: "✓", RunStatus.FAILED: "✗",
            RunStatus.CANCELLED: "■"}.get(status, "•")
    ending = baton.outcome if status == RunStatus.COMPLETE else None
    if ending is not None:  # the seeds' debug ending: complete, but tests still failing
        mark, shown = "⚠", f"{status}, NEEDS ATTENTION ({ending.reason})"
    lines = ["", "━━ Summary " + "━" * 50,
             f"{mark} {wid}: {shown} ({record.scope}, stopped in {record.state})",
             f"  {terminal_safe((record.workflow_description or '')[:200])}"]
    lines.append(f"  classification ({source or 'recorded'}): {cls.research_complexity} "
                 f"research topic(s), confidence {cls.confidence}")
    total_ms = sum(int(v) for v in timing.values())
    seq = sum(v["sequential_ms"] for v in saved.values())
    wall = sum(v["wall_ms"] for v in saved.values())
    lines.append(f"  wall time {_s(total_ms)}" + (
        f"; parallel steps took {_s(wall)} instead of {_s(seq)} one after another "
        f"({savings_text(seq, wall)})" if saved else ""))
    if ctx is not None and ctx.artifact_tokens:
        lines.append(f"  context passed up: {ctx.passed_tokens} of {ctx.artifact_tokens} "
                     f"tokens in the artifacts ({reduction_text(ctx)})")
    usage = baton.usage or UsageTotals()
    if cost := format_usage(usage.total):
        lines.append(f"  agent cost: {cost} (as the agent CLIs reported it; tokens they "
                     "gave no dollars for priced from [workflow.prices])")
    if status == RunStatus.FAILED and record.last_error:
        lines.append(f"  error: {terminal_safe(record.last_error)}")
    found = diagnose(root, record) if status == RunStatus.FAILED and root is not None else None
    if found is not None:  # the seeds' five-part error
        lines.append("━━ Error " + "━" * 52)
        lines += [f"  {line}" if line else "" for line in found.text().splitlines()]
    lines.append("━━ Phases " + "━" * 51)
    states_ctx = baton.context.states if baton.context is not None else {}
    for state in STATE_ORDER:
        if state not in timing:
            continue
        notes = []
        if state == "initialize":
            notes.append(f"classified by {source or '?'}")
        if state == "research" and baton.research is not None:
            r = baton.research
            notes.append(f"{r.reports_ok}/{r.reports_total} reports, {r.mode or 'flat'}"
                         + (" (partial)" if r.partial else ""))
        if state == "test":
            notes.append(_tests_note(record))
        if state == "implement":
            if baton.iteration is not None:
                notes.append(f"{baton.iteration.iteration} iteration(s), halt: "
                             f"{baton.iteration.halt_reason or 'running'}")
            elif _wave_results(record):
                notes.append(f"{len(_wave_results(record))} wave(s)")
        if state in saved:
            v = saved[state]
            notes.append(f"parallel {_s(v['wall_ms'])} vs {_s(v['sequential_ms'])} sequential")
        if state in states_ctx and states_ctx[state].reduction_pct is not None:
            notes.append(reduction_text(states_ctx[state], "context"))
        if cost := format_usage(usage.states.get(state)):
            notes.append(cost)
        lines.append(f"  {state:<11} {_s(timing[state]):>9}  " + "; ".join(notes))
        if state == "implement":
            lines += _implement_lines(record)
    lines.append("━━ Artifacts " + "━" * 48)
    paths = baton.paths
    reports = [s.artifact for sid, s in sorted(steps.items())
               if sid.startswith("research.") and s.role == "research" and s.done]
    for artifact in reports:
        lines.append(f"  report    {_rel(root, artifact)}")
    plan_done = "plan" in steps and steps["plan"].done
    if paths.plan and (plan_done or baton.request.plan_path):
        lines.append(f"  plan      {_rel(root, paths.plan)}")
    sdir = Path(paths.summaries_dir) if paths.summaries_dir else None
    summaries = sorted(sdir.glob("*.md")) if sdir is not None and sdir.is_dir() else []
    if summaries:
        lines.append(f"  summaries {len(summaries)} in {_rel(root, paths.summaries_dir)}")
    if record.debug_report_path:
        lines.append(f"  debug     {_rel(root, record.debug_report_path)}")
    if ending is not None and ending.test_output and not ending.debug_report:
        lines.append(f"  tests     {_rel(root, ending.test_output)}")
    for _, s in sorted(steps.items()):
        if s.role == "document" and s.done:
            lines += [f"  updated   {_rel(root, f)}" for f in s.updated_files or []]
    if paths.topic_dir:
        lines.append(f"  topic     {_rel(root, paths.topic_dir)}")
    lines.append("━━ Next steps " + "━" * 47)
    lines += [f"  {n}" for n in next_steps(record, root)]
    return "\n".join(lines)


def _tests_note(record: RunRecord) -> str:
    """What the last test step found: passed, failed — or skipped, which is neither."""
    tests = [s for sid, s in sorted(record.baton.steps.items(),
                                    key=lambda kv: _test_number(kv[0])) if sid.startswith("test.")]
    last = tests[-1] if tests else None
    if last is None:
        return "not run"
    if last.status == StepStatus.SKIPPED:
        return "skipped: no test command configured, nothing was tested"
    passed = (last.model_extra or {}).get("passed")
    return "passed" if passed is True else "FAILED" if passed is False else last.status


def _test_number(sid: str) -> int:
    tail = sid.removeprefix("test.")
    return int(tail) if tail.isdigit() else 0


def _implement_lines(record: RunRecord) -> list[str]:
    """Under implement: each wave's phases and wall time, or each iteration's progress."""
    it = record.baton.iteration
    if it is not None:
        return [f"    iteration {h['iteration']}: "
                + (f"phases {', '.join(map(str, h['phases_completed']))} done"
                   if h.get("phases_completed") else "no phase done")
                + f", remaining {h.get('work_remaining') or 'nothing'}"
                + (" (continued despite requires_continuation=false)"
                   if h.get("invariant_override") else "")
                for h in it.history]
    waves = _wave_results(record)
    return [f"    wave {w}: phase{'s' if len(r.phases) > 1 else ''} "
            f"{', '.join(map(str, r.phases))} {r.status} in {_s(int(r.duration_ms or 0))}"
            + (" (parallel)" if r.parallel else "")
            for w, r in sorted(waves.items(), key=lambda kv: int(kv[0]))]


def next_steps(record: RunRecord, root: Path | None) -> list[str]:
    baton = record.baton
    wid = record.checkpoint_id or "?"
    status = record.status
    desc = shlex.quote((record.workflow_description or "")[:200])
    if status in (RunStatus.FAILED, RunStatus.CANCELLED, RunStatus.INTERRUPTED,
                  RunStatus.IN_PROGRESS):
        out = []
        halt = baton.iteration.halt_reason if baton.iteration is not None else None
        if halt == "stuck":
            context = baton.iteration.continuation_context if baton.iteration else None
            out.append(f"the implementation made no progress: read {_rel(root, context)}")
        elif halt == "max_iterations":
            out.append("more iterations are needed: add --set workflow.max-iterations=N")
        elif status == RunStatus.FAILED:
            out.append("fix the cause above (details in .claude/data/logs/errors.jsonl)")
        out.append(f"baton resume {wid}   (finished steps are skipped)")
        return out
    if status == RunStatus.COMPLETE and baton.outcome is not None:  # seed 000's debug ending
        what = (f"the debug report {_rel(root, baton.outcome.debug_report)}"
                if baton.outcome.debug_report else
                f"the test output {_rel(root, baton.outcome.test_output)}")
        return [f"NOTE: review {what} and fix the issues manually",
                f"then re-run: {baton.outcome.rerun}"]
    plan = _rel(root, baton.paths.plan)
    if record.scope == "research-only":
        return ["read the reports above", f"plan from them: baton run {desc} --scope "
                "research-and-plan"]
    if record.scope in ("research-and-plan", "research-and-revise"):
        return [f"review the plan {plan}", f"implement it: baton run {desc} --scope "
                f"implement-only --plan {shlex.quote(plan)}"]
    out = ["review the summaries and the changes", f"details: baton status {wid}"]
    if any(sid.startswith("test.") and s.status == StepStatus.SKIPPED
           for sid, s in baton.steps.items()):
        out.insert(1, "no tests ran: set [workflow] test-command (e.g. [\"pytest\", \"-q\"]) "
                   "to have the next run test its work")
    return out

"""The end-of-run console summary in the seeds' four sections: Summary, Phases, Artifacts,
Next steps — with wall time per state, the time parallel work saved against running the
same steps one after another, and the measured context reduction.

Built from the checkpoint alone, so it reads the same after `run` and after `resume`.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from .accounting import format_usage

STATE_ORDER = ("initialize", "research", "plan", "implement", "test", "debug", "document")


def _s(ms: float) -> str:
    return f"{ms / 1000:.2f} s"


def parallel_savings(data: dict[str, Any]) -> dict[str, dict[str, int]]:
    """Per state, the sum of its parallel steps' durations (sequential) against the wall
    time they took together: research workers and implement waves."""
    baton = data.get("baton") or {}
    steps = baton.get("steps") or {}
    out: dict[str, dict[str, int]] = {}
    research = baton.get("research") or {}
    workers = [s for sid, s in steps.items() if sid.startswith("research.") and
               s.get("role", "research") == "research" and "via" not in s]
    if research.get("wall_ms") is not None and len(workers) > 1:
        seq = sum(int(s.get("duration_ms") or 0) for s in workers)
        out["research"] = {"sequential_ms": seq, "wall_ms": int(research["wall_ms"])}
    waves = (data.get("workflow_state") or {}).get("wave_results") or {}
    seq = wall = 0
    for result in waves.values():
        phases = result.get("phases") or []
        durs = [int((steps.get(f"implement.phase-{p}") or {}).get("duration_ms") or 0)
                for p in phases]
        seq += sum(durs)
        wall += int(result.get("duration_ms") or 0)
    if waves:
        out["implement"] = {"sequential_ms": seq, "wall_ms": wall}
    return out


def _rel(root: Path | None, path: str | None) -> str:
    if not path:
        return ""
    if root is not None:
        try:
            return str(Path(path).relative_to(root))
        except ValueError:
            pass
    return path


def render(data: dict[str, Any], root: Path | None = None) -> str:
    baton = data.get("baton") or {}
    steps = baton.get("steps") or {}
    wid = data.get("checkpoint_id") or "?"
    status = data.get("status") or "?"
    sm = data.get("state_machine") or {}
    cls = sm.get("classification") or {}
    scope = (sm.get("workflow_config") or {}).get("scope")
    timing = baton.get("timing") or {}
    saved = parallel_savings(data)
    ctx = (baton.get("context") or {}).get("total") or {}
    mark = {"complete": "✓", "failed": "✗", "cancelled": "■"}.get(status, "•")
    lines = ["", "━━ Summary " + "━" * 50,
             f"{mark} {wid}: {status} ({scope}, stopped in {sm.get('current_state')})",
             f"  {data.get('workflow_description', '')[:200]}"]
    if cls:
        lines.append(f"  classification ({cls.get('source', 'recorded')}): "
                     f"{cls.get('research_complexity')} research topic(s), confidence "
                     f"{cls.get('confidence')}")
    total_ms = sum(int(v) for v in timing.values())
    seq = sum(v["sequential_ms"] for v in saved.values())
    wall = sum(v["wall_ms"] for v in saved.values())
    lines.append(f"  wall time {_s(total_ms)}" + (
        f"; parallel steps took {_s(wall)} instead of {_s(seq)} one after another "
        f"(saved {_s(max(0, seq - wall))}"
        + (f", {100 * (seq - wall) / seq:.0f} %)" if seq > 0 else ")") if saved else ""))
    if ctx.get("artifact_tokens"):
        lines.append(f"  context passed up: {ctx['passed_tokens']} of {ctx['artifact_tokens']} "
                     f"tokens in the artifacts (reduction {ctx.get('reduction_pct')} %)")
    usage = baton.get("usage") or {}
    if cost := format_usage(usage.get("total")):
        lines.append(f"  agent cost: {cost} (as the agent CLIs reported it)")
    if status == "failed" and data.get("last_error"):
        lines.append(f"  error: {data['last_error']}")
    lines.append("━━ Phases " + "━" * 51)
    states_ctx = (baton.get("context") or {}).get("states") or {}
    for state in STATE_ORDER:
        if state not in timing:
            continue
        notes = []
        if state == "initialize" and cls:
            notes.append(f"classified by {cls.get('source', '?')}")
        if state == "research" and baton.get("research"):
            r = baton["research"]
            notes.append(f"{r.get('reports_ok')}/{r.get('reports_total')} reports, "
                         f"{r.get('mode', 'flat')}" + (" (partial)" if r.get("partial") else ""))
        if state == "implement":
            it = baton.get("iteration")
            waves = (data.get("workflow_state") or {}).get("wave_results") or {}
            if it:
                notes.append(f"{it.get('iteration')} iteration(s), halt: "
                             f"{it.get('halt_reason') or 'running'}")
            elif waves:
                notes.append(f"{len(waves)} wave(s)")
        if state in saved:
            v = saved[state]
            notes.append(f"parallel {_s(v['wall_ms'])} vs {_s(v['sequential_ms'])} sequential")
        if state in states_ctx and states_ctx[state].get("reduction_pct") is not None:
            notes.append(f"context reduction {states_ctx[state]['reduction_pct']} %")
        if cost := format_usage((usage.get("states") or {}).get(state)):
            notes.append(cost)
        lines.append(f"  {state:<11} {_s(timing[state]):>9}  " + "; ".join(notes))
        if state == "implement":
            lines += _implement_lines(data)
    lines.append("━━ Artifacts " + "━" * 48)
    paths = baton.get("paths") or {}
    reports = [s["artifact"] for sid, s in sorted(steps.items())
               if sid.startswith("research.") and s.get("role") == "research"
               and s.get("status") == "done"]
    for r in reports:
        lines.append(f"  report    {_rel(root, r)}")
    plan_done = (steps.get("plan") or {}).get("status") == "done"
    if paths.get("plan") and (plan_done or (baton.get("request") or {}).get("plan_path")):
        lines.append(f"  plan      {_rel(root, paths['plan'])}")
    sdir = Path(paths["summaries_dir"]) if paths.get("summaries_dir") else None
    summaries = sorted(sdir.glob("*.md")) if sdir is not None and sdir.is_dir() else []
    if summaries:
        lines.append(f"  summaries {len(summaries)} in {_rel(root, paths.get('summaries_dir'))}")
    if data.get("debug_report_path"):
        lines.append(f"  debug     {_rel(root, data['debug_report_path'])}")
    if paths.get("topic_dir"):
        lines.append(f"  topic     {_rel(root, paths['topic_dir'])}")
    lines.append("━━ Next steps " + "━" * 47)
    lines += [f"  {n}" for n in next_steps(data, root)]
    return "\n".join(lines)


def _implement_lines(data: dict[str, Any]) -> list[str]:
    """Under implement: each wave's phases and wall time, or each iteration's progress."""
    baton = data.get("baton") or {}
    it = baton.get("iteration")
    if it:
        return [f"    iteration {h['iteration']}: "
                + (f"phases {', '.join(map(str, h['phases_completed']))} done"
                   if h.get("phases_completed") else "no phase done")
                + f", remaining {h.get('work_remaining') or 'nothing'}"
                + (" (continued despite requires_continuation=false)"
                   if h.get("invariant_override") else "")
                for h in it.get("history") or []]
    waves = (data.get("workflow_state") or {}).get("wave_results") or {}
    return [f"    wave {w}: phase{'s' if len(r.get('phases') or []) > 1 else ''} "
            f"{', '.join(map(str, r.get('phases') or []))} {r.get('status')} in "
            f"{_s(int(r.get('duration_ms') or 0))}" + (" (parallel)" if r.get("parallel") else "")
            for w, r in sorted(waves.items(), key=lambda kv: int(kv[0]))]


def next_steps(data: dict[str, Any], root: Path | None) -> list[str]:
    baton = data.get("baton") or {}
    wid = data.get("checkpoint_id") or "?"
    status = data.get("status")
    scope = ((data.get("state_machine") or {}).get("workflow_config") or {}).get("scope")
    paths = baton.get("paths") or {}
    desc = shlex.quote(str(data.get("workflow_description", ""))[:200])
    if status in ("failed", "cancelled", "interrupted", "in_progress"):
        out = []
        halt = (baton.get("iteration") or {}).get("halt_reason")
        if halt == "stuck":
            out.append("the implementation made no progress: read "
                       f"{_rel(root, (baton.get('iteration') or {}).get('continuation_context'))}")
        elif halt == "max_iterations":
            out.append("more iterations are needed: add --set workflow.max-iterations=N")
        elif status == "failed":
            out.append("fix the cause above (details in .claude/data/logs/errors.jsonl)")
        out.append(f"baton resume {wid}   (finished steps are skipped)")
        return out
    plan = _rel(root, paths.get("plan"))
    if scope == "research-only":
        return ["read the reports above", f"plan from them: baton run {desc} --scope "
                "research-and-plan"]
    if scope in ("research-and-plan", "research-and-revise"):
        return [f"review the plan {plan}", f"implement it: baton run {desc} --scope "
                f"implement-only --plan {shlex.quote(plan)}"]
    return ["review the summaries and the changes", f"details: baton status {wid}"]

"""Code lenses on plans: dependency waves per phase, totals on the title, and the live state
of the plan's latest workflow as the run follower holds it, so the lens names the state the
progress, the Workflows view and the status bar name (title: `runs.describe`, age or the
failure with Resume / Show checkpoint; each phase: done in N s, running, hard barrier,
pending)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lsprotocol import types

from .convert import path_to_uri, to_lsp_range
from .plans import plan_for
from .runs import follower
from .server import BatonServer, guard
from .workflows import CANCEL, CHECKPOINT_OPEN, OPEN, RESUME_PREVIEW

if TYPE_CHECKING:
    from ..model.plan import Plan
    from ..runs.follow import RunView

SHOW_GRAPH = "baton.showGraph"


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @guard(list)
    def code_lens(ls: BatonServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        found = plan_for(ls, params.text_document.uri)
        if found is None:
            return []
        path, plan, graph = found
        if not plan.phases:
            return []
        lines = ls.session.lines_of(path)
        command = types.Command(title="", command=SHOW_GRAPH, arguments=[path_to_uri(path)])
        lenses: list[types.CodeLens] = []
        if plan.title_range is not None:
            cp = len(graph.critical_path)
            title = (f"{len(graph.order)} phases · {len(graph.waves)} waves · critical path "
                     f"{cp} phase{'s' if cp != 1 else ''}")
            if graph.cycles:
                title += f" · {len(graph.cycles)} cycle{'s' if len(graph.cycles) > 1 else ''}"
            lenses.append(types.CodeLens(
                range=to_lsp_range(plan.title_range, lines),
                command=types.Command(title=title, command=SHOW_GRAPH,
                                      arguments=command.arguments)))
        state = follower(ls).for_plan(path)
        view = state.view if state is not None else None
        if state is not None and view is not None:
            lenses = _run_lenses(view, state.text, plan, lines) + lenses
        seen: set[str] = set()
        for phase in plan.phases:
            if phase.id in seen:
                continue
            seen.add(phase.id)
            wave = graph.wave_of(phase.id)
            if wave is None:
                title = "blocked by a dependency cycle"
            else:
                title = f"Wave {wave} · " + parallel_phases(graph.waves[wave - 1], phase.id)
            lenses.append(types.CodeLens(
                range=to_lsp_range(phase.heading_range, lines),
                command=types.Command(title=title, command=SHOW_GRAPH,
                                      arguments=command.arguments)))
            if view is not None:
                lenses.append(types.CodeLens(range=to_lsp_range(phase.heading_range, lines),
                                             command=_phase_command(view, phase.id)))
        return lenses


MAX_PARALLEL_NAMED = 10
"""Phases a wave lens names before `and N more`: every lens of a wave naming all the others
is quadratic in the wave's width (a 100,000-phase plan with one wide wave)."""


def parallel_phases(wave: list[str], phase_id: str) -> str:
    if len(wave) <= 1:
        return "sequential"
    named = [p for p in wave[: MAX_PARALLEL_NAMED + 1] if p != phase_id][:MAX_PARALLEL_NAMED]
    more = len(wave) - 1 - len(named)
    return f"parallel with Phase {', '.join(named)}" + (f" and {more} more" if more else "")


def _ago(stamp: str | None) -> str | None:
    import datetime as dt  # only when a run is shown: not on the server's start-up path

    if not stamp:
        return None
    try:
        when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    return _duration((dt.datetime.now(dt.UTC) - when).total_seconds()) + " ago"


def _duration(seconds: float) -> str:
    seconds = max(0, int(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _args(view: Any, **extra: Any) -> list[Any]:
    return [{"id": view.workflow_id, "workspace": str(view.root), **extra}]


def _run_lenses(view: RunView, text: str, plan: Plan,
                lines: list[str]) -> list[types.CodeLens]:
    """The run's lenses on the plan's title; `text` is the follower's state text, the one
    the progress, the Workflows view and the status bar show."""
    from ..model.states import RunStatus  # the core loads on first use

    if plan.title_range is None:
        return []
    where = to_lsp_range(plan.title_range, lines)

    def lens(title: str, command: str = "", args: list[Any] | None = None) -> types.CodeLens:
        return types.CodeLens(range=where, command=types.Command(
            title=title, command=command, arguments=args))

    if view.foreign is not None:  # the bash system's run: its file, and how to adopt it
        run = view.foreign
        detail = run.problem if not run.readable else " · ".join(
            p for p in (f"{run.status} in {run.state}", run.phase_text(),
                        _ago(run.updated_at)) if p)
        return [lens(f"bash system: {detail}", OPEN, [{"path": str(run.path)}]),
                lens(f"adopt to resume: baton adopt {run.id}")]

    show = lens("Show checkpoint", CHECKPOINT_OPEN, _args(view))
    if view.running:
        age = _ago(view.updated_at)
        return [lens("● " + text + (f" · updated {age}" if age else ""),
                     CHECKPOINT_OPEN, _args(view)), lens("Cancel", CANCEL, _args(view))]
    from ..workflow.accounting import format_usage  # the core loads on first use

    cost = format_usage(view.usage)
    if view.status == RunStatus.COMPLETE and view.outcome:  # tests still failing: not a success
        report = view.outcome.get("debug_report") or view.outcome.get("test_output")
        return [lens(f"⚠ complete — needs attention: {view.outcome.get('reason')}"
                     + (f" · {_ago(view.updated_at)}" if view.updated_at else ""),
                     OPEN if report else CHECKPOINT_OPEN,
                     [{"path": report}] if report else _args(view)),
                lens(f"then re-run: {view.outcome.get('rerun')}"), show]
    if view.status == RunStatus.COMPLETE:
        return [lens("✓ " + text + (f" · {cost}" if cost else "")
                     + (f" · {_ago(view.updated_at)}" if view.updated_at else ""),
                     CHECKPOINT_OPEN, _args(view))]
    if view.resumable:
        mark = "✗" if view.status == RunStatus.FAILED else "⏸"
        return [lens(f"{mark} {view.status} in {view.state}" + (f" · {cost}" if cost else ""),
                     CHECKPOINT_OPEN, _args(view)),
                lens("Resume", RESUME_PREVIEW, _args(view)), show]
    return [lens(f"{view.status} · {view.problem or view.workflow_id}", CHECKPOINT_OPEN,
                 _args(view))]


def _on(step: Any) -> str:
    """Where a phase's last attempt ran when a Dask worker ran it (` · on host:port`)."""
    worker = getattr(step, "worker", None)
    if not worker:
        return ""
    return f" · on {str(worker).split('://', 1)[-1]}"


def _phase_command(view: Any, phase_id: str) -> types.Command:
    from ..model.states import RunStatus, StepStatus  # the core loads on first use

    if view.foreign is not None and view.foreign.plan_phases:
        run = view.foreign
        if phase_id in {str(n) for n in run.completed_phases}:
            return types.Command(title="✓ done (bash system)", command="")
        if phase_id == str(run.current_phase):
            return types.Command(title=f"⏸ {run.status} here (bash system)", command="")
        return types.Command(title="○ pending", command="")
    step = view.phase_step(phase_id)
    if step is None:
        if view.status == RunStatus.COMPLETE:
            return types.Command(title="✓ already complete in the plan", command="")
        return types.Command(title="○ pending", command="")
    log = view.log_path(step)
    open_log = [{"path": str(log)}] if log is not None else None
    git = step.git
    if step.status == StepStatus.DONE and git is not None and git.status == "conflict":
        files = git.conflicts
        top = git.top or str(view.root)
        return types.Command(title=f"✗ merge conflict: {', '.join(files[:3])}"
                             + (f" +{len(files) - 3}" if len(files) > 3 else ""),
                             command=OPEN if files else "",
                             arguments=[{"path": f"{top}/{files[0]}"}] if files else None)
    if step.status == StepStatus.DONE:
        secs = (step.duration_ms or 0) / 1000
        from ..workflow.accounting import format_usage  # the core loads on first use

        cost = format_usage(step.usage)
        merged = f" · merged {git.merged[:7]}" if git is not None and git.merged else ""
        return types.Command(title=f"✓ done in {_duration(secs) if secs >= 1 else f'{secs:.1f} s'}"
                             + (f" · {cost}" if cost else "") + merged + _on(step),
                             command=OPEN if step.artifact else "",
                             arguments=[{"path": step.artifact}] if step.artifact else None)
    if step.status == StepStatus.RUNNING and view.running:
        return types.Command(title=f"⟳ running (attempt {step.attempts})",
                             command=OPEN if open_log else "", arguments=open_log)
    if step.status == StepStatus.FAILED:
        if step.barrier:
            kind = view.barrier_kind(step) or "missing"
            what = {"missing": "summary missing", "empty": "summary empty",
                    "elsewhere": "summary written elsewhere",
                    "outside": "summary outside the workspace"}.get(kind, kind)
            title = f"✗ hard barrier: {what}"
        else:
            title = f"✗ failed: {(step.message or 'error')[:60]}"
        return types.Command(title=title + _on(step), command=OPEN if open_log else "",
                             arguments=open_log)
    return types.Command(title=f"⏸ {step.status}" if step.status != StepStatus.RUNNING else
                         "⏸ interrupted", command=OPEN if open_log else "",
                         arguments=open_log)

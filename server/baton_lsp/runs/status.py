"""`baton status --json`: every run of a workspace as the typed `follow.RunView` reads it,
written out as JSON rows. The view is what `baton status` (text) and the editor render; this
module only spells it in the row shape scripts and the language server's
`baton.server.workflow.*` commands have always read (`origin: baton` rows, then the bash
system's `origin: bash` rows)."""

from __future__ import annotations

from pathlib import Path

from ..model.states import RunStatus
from .follow import RunView, foreign_view, read_view
from .foreign import adopted_by, discover
from .record import RecordError, read_record
from .store import CheckpointStore, list_workflows

STEP_FIELDS = {"state", "status", "attempts", "artifact", "message", "duration_ms", "usage",
               "attempt_usage", "notes", "git", "updated_files", "worker", "workers"}
ITERATION_FIELDS = {"iteration", "max_iterations", "work_remaining", "last_work_remaining",
                    "continuation_context", "halt_reason"}


def views(root: Path) -> list[RunView]:
    """Every run of the workspace: Baton's workflows, then the bash system's checkpoints,
    each naming the Baton run that adopted it."""
    ours = [read_view(root, wid) for wid in list_workflows(root)]
    found = [v.adoption for v in ours if v.adoption is not None]
    return ours + [foreign_view(root, run, adopted_by(run, found)) for run in discover(root)]


def as_json(view: RunView) -> dict[str, object]:
    """One view as its `baton status --json` row."""
    if view.foreign is not None:
        return view.foreign.as_dict(view.adopted_by)
    out: dict[str, object] = {"workflow_id": view.workflow_id, "origin": view.origin,
                              "running": view.locked}
    record = view.record
    if record is None:
        out.update(status=view.status, problem=view.problem)
        return out
    baton = record.baton
    ws = record.workflow_state
    out.update(signature=view.signature, untrusted=view.untrusted)
    out.update(status=view.status, state=view.state, scope=view.scope,
               description=view.description, updated_at=view.updated_at,
               checkpoint=view.sequence, checkpoint_path=view.checkpoint_path,
               topic_dir=baton.paths.topic_dir, plan=baton.paths.plan,
               last_error=record.last_error,
               failure=baton.failure.model_dump(mode="json", by_alias=True, exclude_unset=True)
               if view.status == RunStatus.FAILED and baton.failure else None,
               steps={sid: step.model_dump(mode="json", include=STEP_FIELDS, exclude_none=True)
                      for sid, step in baton.steps.items()},
               waves=ws.wave_structure if ws else None)
    cls = record.state_machine.classification
    out["classification"] = {
        "workflow_type": cls.workflow_type.value,
        "research_complexity": cls.research_complexity,
        "topics": view.topics(), "source": cls.source,
        "confidence": cls.confidence}
    found = view.diagnosis()
    if found is not None:  # the seeds' five-part error, as the summary and hover show it
        out["diagnosis"] = found.as_dict()
    if view.outcome is not None:
        out["outcome"] = view.outcome
    if baton.adopted_from is not None:
        out["adopted_from"] = baton.adopted_from.model_dump(mode="json", exclude_unset=True)
    if baton.context is not None and (context := baton.context.model_dump(
            mode="json", exclude_unset=True)):
        out["context"] = context
    if baton.reconciled:
        out["reconciled"] = baton.reconciled
    if baton.usage is not None and (usage := baton.usage.model_dump(
            mode="json", exclude_unset=True)):
        out["usage"] = usage
    if baton.iteration is not None:
        out["iteration"] = baton.iteration.model_dump(mode="json", include=ITERATION_FIELDS)
    # the seeds' own paths: .supervisor_state.research_supervisor.…, .phase_data.<state>.…
    tiers = view.tiers()
    if shown := tiers.model_dump(mode="json", exclude_unset=True):
        out["supervisor_state"] = shown
    if record.phase_data:
        out["phase_data"] = record.phase_data
    sup = tiers.research_supervisor
    if sup is not None and sup.supervisor_id:
        agg = sup.aggregated_metadata
        out["supervisor"] = {"mode": sup.mode, "worker_count": sup.worker_count,
                             "reports_count": agg.reports_count,
                             "context_tokens": agg.context_tokens}
    return out


def history(root: Path, wid: str) -> list[dict[str, object]]:
    """Every checkpoint of workflow `wid`, oldest first: `{n, ok, problem, path, event,
    status, state, at}` (`baton checkpoints ID --json` and the editor's *Resume from an
    earlier checkpoint…*)."""
    rows = []
    for e in CheckpointStore(root, wid).entries():
        row: dict[str, object] = {"n": e.sequence, "ok": e.ok, "problem": e.problem,
                                  "path": str(e.path), "event": None, "status": None,
                                  "state": None, "at": None}
        if e.data is not None:
            try:
                record = read_record(e.data, str(e.path))
                row.update(event=record.baton.event, status=record.status, state=record.state,
                           at=record.updated_at)
            except RecordError as exc:
                row.update(ok=False, problem=str(exc))
        rows.append(row)
    return rows

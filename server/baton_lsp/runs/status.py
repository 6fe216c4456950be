"""The status of one workflow, read from its checkpoint directory and lock, and of the bash
system's runs beside them (shared by `baton status` and the language server's
`baton.server.workflow.*` commands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..model.states import RunStatus
from .diagnosis import diagnose
from .foreign import Adoption, adopted_by, discover
from .record import RESEARCH_SUPERVISOR, RecordError, read_record, supervisor_sections
from .store import CheckpointStore, list_workflows

STEP_FIELDS = {"state", "status", "attempts", "artifact", "message", "duration_ms", "usage",
               "attempt_usage", "notes", "git", "updated_files", "worker", "workers"}
ITERATION_FIELDS = {"iteration", "max_iterations", "work_remaining", "last_work_remaining",
                    "continuation_context", "halt_reason"}


def summaries(root: Path) -> list[dict[str, Any]]:
    """Every run of the workspace: Baton's workflows (`origin: baton`), then the bash
    system's checkpoints (`origin: bash`), each naming the Baton run that adopted it."""
    rows = [summary(root, wid) for wid in list_workflows(root)]
    found = [Adoption(r["workflow_id"], r["adopted_from"]["path"],
                      r["adopted_from"].get("sha256")) for r in rows if r.get("adopted_from")]
    return rows + [run.as_dict(adopted_by(run, found)) for run in discover(root)]


def summary(root: Path, wid: str) -> dict[str, Any]:
    store = CheckpointStore(root, wid)
    out: dict[str, Any] = {"workflow_id": wid, "origin": "baton", "running": store.locked()}
    try:
        entry = store.latest()
    except Exception as exc:
        out.update(status=RunStatus.UNREADABLE, problem=str(exc))
        return out
    try:
        record = read_record(entry.data or {}, str(entry.path))
    except RecordError as exc:
        out.update(status=RunStatus.UNREADABLE, problem=str(exc))
        return out
    baton = record.baton
    ws = record.workflow_state
    out.update(signature=entry.trust, untrusted=entry.distrust)
    out.update(status=record.status, state=record.state, scope=record.scope,
               description=record.workflow_description, updated_at=record.updated_at,
               checkpoint=entry.sequence, checkpoint_path=str(entry.path),
               topic_dir=baton.paths.topic_dir, plan=baton.paths.plan,
               last_error=record.last_error,
               failure=baton.failure.model_dump(mode="json", by_alias=True, exclude_unset=True)
               if record.status == RunStatus.FAILED and baton.failure else None,
               steps={sid: step.model_dump(mode="json", include=STEP_FIELDS, exclude_none=True)
                      for sid, step in baton.steps.items()},
               waves=ws.wave_structure if ws else None)
    cls = record.state_machine.classification.model_dump(mode="json")
    out["classification"] = {
        "workflow_type": cls.get("workflow_type"),
        "research_complexity": cls.get("research_complexity"),
        "topics": [t.get("short_name") if isinstance(t, dict) else t
                   for t in cls.get("research_topics") or []],
        "source": cls.get("source"), "confidence": cls.get("confidence")}
    if record.status == RunStatus.FAILED:
        found = diagnose(root, record)
        if found is not None:  # the seeds' five-part error, as the summary and hover show it
            out["diagnosis"] = found.as_dict()
    if record.status == RunStatus.COMPLETE and baton.outcome is not None:
        out["outcome"] = baton.outcome.model_dump(mode="json")
    if baton.adopted_from is not None:
        out["adopted_from"] = baton.adopted_from.model_dump(mode="json", exclude_unset=True)
    if baton.context:
        out["context"] = baton.context
    if baton.reconciled:
        out["reconciled"] = baton.reconciled
    if baton.usage:
        out["usage"] = baton.usage
    if baton.iteration is not None:
        out["iteration"] = baton.iteration.model_dump(mode="json", include=ITERATION_FIELDS)
    # the seeds' own paths: .supervisor_state.research_supervisor.…, .phase_data.<state>.…
    tiers = supervisor_sections(record.supervisor_state)
    if tiers:
        out["supervisor_state"] = tiers
    if record.phase_data:
        out["phase_data"] = record.phase_data
    sup = tiers.get(RESEARCH_SUPERVISOR) or {}
    if sup.get("supervisor_id"):
        agg = sup.get("aggregated_metadata") or {}
        out["supervisor"] = {"mode": sup.get("mode"), "worker_count": sup.get("worker_count"),
                             "reports_count": agg.get("reports_count"),
                             "context_tokens": agg.get("context_tokens")}
    if out["running"] is False and out["status"] == RunStatus.IN_PROGRESS:
        out["status"] = RunStatus.INTERRUPTED  # the engine died without writing its final state
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

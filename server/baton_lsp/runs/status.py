"""The status of one workflow, read from its checkpoint directory and lock, and of the bash
system's runs beside them (shared by `baton status` and the language server's
`baton.server.workflow.*` commands)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .foreign import Adoption, adopted_by, adoption_of, discover
from .store import CheckpointStore, list_workflows


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
        out.update(status="unreadable", problem=str(exc))
        return out
    d = entry.data or {}
    baton = d.get("baton") or {}
    out.update(status=d.get("status"), state=(d.get("state_machine") or {}).get(
        "current_state"), scope=(d.get("state_machine") or {}).get("workflow_config", {}).get(
        "scope"), description=d.get("workflow_description"), updated_at=d.get("updated_at"),
        checkpoint=entry.sequence, checkpoint_path=str(entry.path),
        topic_dir=(baton.get("paths") or {}).get("topic_dir"),
        plan=(baton.get("paths") or {}).get("plan"), last_error=d.get("last_error"),
        failure=baton.get("failure") if d.get("status") == "failed" else None,
        steps={k: {kk: v.get(kk) for kk in ("state", "status", "attempts", "artifact",
                                            "message", "duration_ms", "usage")
                   if v.get(kk) is not None}
               for k, v in (baton.get("steps") or {}).items()},
        waves=(d.get("workflow_state") or {}).get("wave_structure"))
    cls = (d.get("state_machine") or {}).get("classification") or {}
    if cls:
        out["classification"] = {
            "workflow_type": cls.get("workflow_type"),
            "research_complexity": cls.get("research_complexity"),
            "topics": [t.get("short_name") if isinstance(t, dict) else t
                       for t in cls.get("research_topics") or []],
            "source": cls.get("source"), "confidence": cls.get("confidence")}
    adoption = adoption_of(wid, d)
    if adoption is not None:
        out["adopted_from"] = baton["adopted_from"]
    if baton.get("context"):
        out["context"] = baton["context"]
    if baton.get("usage"):
        out["usage"] = baton["usage"]
    it = baton.get("iteration")
    if it:
        out["iteration"] = {k: it.get(k) for k in (
            "iteration", "max_iterations", "work_remaining", "last_work_remaining",
            "continuation_context", "halt_reason")}
    sup = d.get("supervisor_state") or {}
    if sup.get("supervisor_id"):
        agg = sup.get("aggregated_metadata") or {}
        out["supervisor"] = {"mode": sup.get("mode"), "worker_count": sup.get("worker_count"),
                             "reports_count": agg.get("reports_count"),
                             "context_tokens": agg.get("context_tokens")}
    if out["running"] is False and out["status"] == "in_progress":
        out["status"] = "interrupted"  # the engine died without writing its final state
    return out

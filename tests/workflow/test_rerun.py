"""`baton rerun ID`: a new workflow with the finished one's recorded request and pinned
settings (runs/rerun.py, shared with the editor's `baton.server.workflow.rerun`). Real `baton`
subprocesses with the scripted agents."""

from __future__ import annotations

import json

from baton_lsp.runs.record import read_record
from baton_lsp.runs.store import CheckpointStore
from tests.workflow.conftest import Workspace


def _record(ws: Workspace, wid: str) -> object:
    entry = CheckpointStore(ws.root, wid).latest()
    return read_record(entry.data or {}, str(entry.path))


def test_rerun_repeats_request_runner_and_settings_despite_a_changed_config(
        ws: Workspace) -> None:
    ws.baton("run", "--scope=research-only", "--complexity=1", "--topic=login flow",
             "--quiet", "Research login", check=True)
    old_id = ws.only_workflow()
    ws.config("timeout = 77\n")  # edited after the run: the re-run keeps 30
    r = ws.baton("rerun", old_id, "--quiet", check=True)
    rows = ws.status()
    assert len(rows) == 2, rows
    new_id = next(row["workflow_id"] for row in rows if row["workflow_id"] != old_id)
    assert r.stdout.strip(), r.stderr  # --quiet: the final line
    old, new = _record(ws, old_id), _record(ws, new_id)
    assert new.status == "complete"  # type: ignore[attr-defined]
    assert new.workflow_description == "Research login"  # type: ignore[attr-defined]
    assert new.scope == "research-only"  # type: ignore[attr-defined]
    assert new.baton.request.topics == ["login flow"]  # type: ignore[attr-defined]
    assert new.baton.request.complexity == 1  # type: ignore[attr-defined]
    assert new.baton.identity.runner == "script"  # type: ignore[attr-defined]
    assert new.baton.identity.settings == old.baton.identity.settings  # type: ignore[attr-defined]
    assert new.baton.identity.settings["timeout"] == 30  # type: ignore[attr-defined]


def test_rerun_of_an_unknown_or_invalid_id_is_a_clear_error(ws: Workspace) -> None:
    for wid in ("nope_123", "../../etc"):
        r = ws.baton("rerun", wid)
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "cannot re-run" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert json.loads(ws.baton("status", "--json", check=True).stdout) == []

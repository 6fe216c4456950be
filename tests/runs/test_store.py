"""Durable checkpoint history: atomic writes, checksums, corrupt files skipped, the lock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.runs.checkpoint import CheckpointError
from baton_lsp.runs.store import CheckpointStore, WorkflowBusy, checksum_of


def _doc(state: str) -> dict:
    return {"schema_version": "2.1", "status": "in_progress", "state": state}


def test_history_is_numbered_and_verified(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, "wf_1")
    for s in ("initialize", "research", "plan"):
        store.save(_doc(s), f"at {s}")
    entries = store.entries()
    assert [e.sequence for e in entries] == [1, 2, 3]
    assert all(e.ok for e in entries)
    latest = store.latest()
    assert latest.data["state"] == "plan"
    assert latest.data["baton"]["checksum"] == checksum_of(latest.data)
    assert store.latest(at=2).data["state"] == "research"
    # a second store object continues the numbering instead of overwriting
    CheckpointStore(tmp_path, "wf_1").save(_doc("implement"), "x")
    assert store.latest().sequence == 4


@pytest.mark.parametrize("damage", ["truncate", "empty", "edit", "garbage"])
def test_a_damaged_newest_checkpoint_falls_back_to_the_previous(tmp_path: Path,
                                                                 damage: str) -> None:
    store = CheckpointStore(tmp_path, "wf_2")
    store.save(_doc("research"), "a")
    newest = store.save(_doc("plan"), "b")
    raw = newest.read_bytes()
    if damage == "truncate":
        newest.write_bytes(raw[: len(raw) // 2])
    elif damage == "empty":
        newest.write_bytes(b"")
    elif damage == "edit":
        newest.write_text(raw.decode().replace('"plan"', '"test"'))
    else:
        newest.write_bytes(b"\x00\xff" * 100)
    entry = store.latest()
    assert entry.sequence == 1 and entry.data["state"] == "research"
    bad = store.entries()[-1]
    assert not bad.ok and bad.problem
    with pytest.raises(CheckpointError, match="unusable"):
        store.latest(at=2)


def test_ids_cannot_escape(tmp_path: Path) -> None:
    for bad in ("../x", "a/b", "", ".hidden", "x" * 200):
        with pytest.raises(CheckpointError):
            CheckpointStore(tmp_path, bad)


def test_one_engine_per_workflow_even_across_processes(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, "wf_3")
    store.acquire()
    store.write_owner({"pid": 4242, "started_at": "now"})
    try:
        code = ("import sys; from pathlib import Path; "
                "from baton_lsp.runs.store import CheckpointStore, WorkflowBusy\n"
                "s = CheckpointStore(Path(sys.argv[1]), 'wf_3')\n"
                "try:\n    s.acquire()\nexcept WorkflowBusy as e:\n    print(e); sys.exit(3)\n")
        r = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                           text=True, timeout=30)
        assert r.returncode == 3 and "already running by pid 4242" in r.stdout
        with pytest.raises(WorkflowBusy):
            CheckpointStore(tmp_path, "wf_3").acquire()
        assert store.locked()
    finally:
        store.release()
    assert not store.locked()


def test_files_are_plain_checkpoint_json(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path, "wf_4")
    path = store.save(_doc("plan"), "e")
    data = json.loads(path.read_text())
    assert data["schema_version"] == "2.1" and data["baton"]["event"] == "e"
    assert not list(path.parent.glob("*.tmp"))

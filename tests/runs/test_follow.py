"""`runs.follow`: run views from checkpoints + errors.jsonl, the incremental error log,
and the directory watcher (inotify and the polling fallback), against real engine runs."""

from __future__ import annotations

import os
import select
import time
from pathlib import Path

import pytest

from baton_lsp.runs.follow import DirWatcher, ErrorLog, RunIndex, read_view
from baton_lsp.runs.records import append_error, error_record, errors_log_path
from baton_lsp.runs.store import CheckpointStore
from tests.workflow.conftest import Workspace


def failed_run(ws: Workspace, step: str = "implement.phase-2") -> str:
    ws.behave({step: {"write": "nothing"}})
    r = ws.baton("run", "add a farewell", "--scope", "full-implementation")
    assert r.returncode == 1, r.stdout + r.stderr
    return ws.only_workflow()


def test_view_of_a_hard_barrier_failure(ws: Workspace) -> None:
    wid = failed_run(ws)
    view = read_view(ws.root, wid)
    assert view.status == "failed" and not view.running and view.resumable
    assert view.state == "implement" and view.plan and Path(view.plan).is_file()
    step = view.phase_step("2")
    assert step is not None and step.status == "failed" and step.barrier
    assert view.barrier_kind(step) == "missing"
    assert view.phase_step("1").status == "done"  # type: ignore[union-attr]
    log = view.log_path(step)
    assert log is not None and log.name == "implement.phase-2.attempt-1.log"
    assert "SUMMARY_CREATED" in (view.agent_report(step) or "")  # it claimed, but did not
    assert view.waves and view.total_phases() >= 2 and view.done_phases() >= 1


def test_index_caches_until_the_directory_changes_and_follows_resume(ws: Workspace) -> None:
    wid = failed_run(ws)
    past = time.time_ns() - 10**9  # the run ended a while ago (see the test below)
    os.utime(ws.root / ".claude/data/checkpoints" / wid, ns=(past, past))
    idx = RunIndex(ws.root)
    first = idx.view(wid)
    assert idx.view(wid) is first  # nothing changed: the cached object
    plan = first.plan
    assert plan is not None and idx.for_plan(plan) is first
    ws.behave({})
    ws.baton("resume", wid, check=True)
    after = idx.view(wid)
    assert after is not first and after.status == "complete"
    assert after.sequence > first.sequence


def test_a_checkpoint_in_the_same_timestamp_tick_is_not_missed(ws: Workspace) -> None:
    """Files are stamped with a coarse clock: two checkpoints written within one tick leave
    the directory's mtime as the first made it, and a view read between them was kept until
    the next write (a lens showing the run still going after it ended). A stamp younger
    than a few ticks when read is not trusted."""
    wid = failed_run(ws)
    directory = ws.root / ".claude/data/checkpoints" / wid
    tick = time.time_ns()
    os.utime(directory, ns=(tick, tick))  # the last change: just now
    idx = RunIndex(ws.root)
    first = idx.view(wid)
    store = CheckpointStore(ws.root, wid)
    data = dict(store.latest().data or {})
    data["status"] = "in_progress"
    store.save(data, "written in the same tick")
    os.utime(directory, ns=(tick, tick))  # … so the directory looks unchanged
    again = idx.view(wid)
    assert again is not first and again.sequence == first.sequence + 1
    assert again.status == "interrupted"


def test_interrupted_when_the_engine_died(ws: Workspace) -> None:
    wid = failed_run(ws)
    store = CheckpointStore(ws.root, wid)
    entry = store.latest()
    data = dict(entry.data or {})
    data["status"] = "in_progress"
    store.save(data, "simulated crash")  # nobody holds the lock
    assert read_view(ws.root, wid).status == "interrupted"


def test_unreadable_history_is_a_view_not_an_exception(ws: Workspace) -> None:
    d = ws.root / ".claude" / "data" / "checkpoints" / "wf_broken"
    d.mkdir(parents=True)
    (d / "000001.json").write_text("{not json")
    view = read_view(ws.root, "wf_broken")
    assert view.status == "unreadable" and "unusable" in (view.problem or "")


def test_error_log_reads_only_appended_lines_and_survives_rotation(tmp_path: Path) -> None:
    root = tmp_path
    log = ErrorLog(root)
    assert not log.refresh()

    def add(wid: str, msg: str) -> None:
        append_error(root, error_record(workflow_id=wid, command="c", user_args="",
                                        error_type="agent_error", message=msg, source="s"))

    add("a", "one")
    add("b", "two")
    assert log.refresh() and [e.record.error_message for e in log.of("a")] == ["one"]
    add("a", "three")
    assert log.refresh()
    assert [(e.line, e.record.error_message) for e in log.of("a")] == [(0, "one"), (2, "three")]
    assert not log.refresh()
    path = errors_log_path(root)
    with open(path, "ab") as fh:  # a half-written line waits for its newline
        fh.write(b'{"workflow_id": "a", "error_message": "four"')
    log.refresh()
    assert len(log.of("a")) == 2
    with open(path, "ab") as fh:
        fh.write(b"}\n")
    log.refresh()
    assert [e.record.error_message for e in log.of("a")][-1] == "four"
    with open(path, "ab") as fh:  # malformed lines are skipped, never raised
        fh.write(b'not json\n[1, 2]\n{"workflow_id": 7}\n'
                 b'{"workflow_id": "a", "context": ' + b"[" * 100_000 + b"\n"
                 b'{"workflow_id": "a", "error_message": {"odd": 1}, "stack": "x"}\n')
    assert log.refresh()
    odd = log.of("a")[-1]
    assert (odd.line, odd.record.error_message, odd.record.stack) == (8, '{"odd": 1}', ["x"])
    assert len(log.of("a")) == 4
    os.rename(path, path.with_name("errors.jsonl.1"))  # rotated
    add("a", "fresh")
    log.refresh()
    assert [(e.line, e.record.error_message) for e in log.of("a")] == [(0, "fresh")]


def _drain(w: DirWatcher, timeout: float = 5.0) -> set:
    fd = w.fileno()
    assert fd is not None
    out: set = set()
    while True:
        ready, _, _ = select.select([fd], [], [], timeout if not out else 0.05)
        if not ready:
            return out
        out |= w.read()


def test_inotify_watcher_sees_new_workflows_checkpoints_and_errors(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    w = DirWatcher(tmp_path)
    if not w.native:
        pytest.skip("no inotify on this system")
    try:
        store = CheckpointStore(tmp_path, "wf_1")
        store.save({"status": "in_progress"}, "created")  # creates data/, checkpoints/, wf_1/
        changes = _drain(w)
        assert ("checkpoint", "wf_1") in changes, changes
        store.save({"status": "complete"}, "done")
        assert _drain(w) >= {("checkpoint", "wf_1")}
        append_error(tmp_path, error_record(workflow_id="wf_1", command="c", user_args="",
                                            error_type="e", message="m", source="s"))
        assert ("errors", None) in _drain(w)
        (tmp_path / ".claude" / "unrelated.txt").write_text("x")
        assert not {c for c in _drain(w, 0.3) if c[0] == "checkpoint"}
    finally:
        w.close()


def test_polling_fallback_reports_the_same_changes(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BATON_NO_INOTIFY", "1")
    (tmp_path / ".claude").mkdir()
    w = DirWatcher(tmp_path)
    assert not w.native and w.fileno() is None
    assert w.poll() == set()
    CheckpointStore(tmp_path, "wf_2").save({"status": "in_progress"}, "created")
    changes = w.poll()
    assert ("checkpoint", "wf_2") in changes and ("workflows", None) in changes
    assert w.poll() == set()
    append_error(tmp_path, error_record(workflow_id="wf_2", command="c", user_args="",
                                        error_type="e", message="m", source="s"))
    assert w.poll() == {("errors", None)}


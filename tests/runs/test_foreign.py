"""`runs.foreign` and the RunIndex: the bash system's checkpoint files as runs the editor
follows (plan lenses ask `for_plan`), re-read only when their `stat` changes."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.runs.follow import RunIndex
from baton_lsp.runs.foreign import MAX_BYTES, ForeignRuns, path_of_id, run_id
from baton_lsp.runs.store import checkpoints_root
from tests.workflow.conftest import Workspace

CORPUS_RUN = Path(".claude/checkpoints/test_524747/test_checkpoint.json")


def bash_checkpoint(plan: str, **extra: object) -> dict[str, object]:
    """A 1.2 implement checkpoint as `save_checkpoint` writes one, made just now."""
    now = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"schema_version": "1.2", "checkpoint_id": "implement_demo", "workflow_type":
            "implement", "project_name": "demo", "workflow_description": "ship the feature",
            "created_at": now, "updated_at": now, "status": "in_progress",
            "current_phase": 2, "total_phases": 3, "completed_phases": [1],
            "workflow_state": {"plan_path": plan, "current_phase": 2}, "last_error": None,
            "tests_passing": True, **extra}


def test_ids_name_their_file_and_nothing_else(tmp_path: Path) -> None:
    root = tmp_path
    flat = checkpoints_root(root) / "implement_p_20251007_050046.json"
    legacy = root / CORPUS_RUN
    tmp = root / ".claude" / "tmp" / "research_checkpoint.json"
    nested = checkpoints_root(root) / "parallel_ops" / "parallel_x.json"
    for path in (flat, legacy, tmp, nested):
        rid = run_id(root, path)
        assert rid.startswith("bash:") and path_of_id(root, rid) == path
    assert run_id(root, flat) == "bash:implement_p_20251007_050046"
    assert run_id(root, legacy) == "bash:checkpoints/test_524747/test_checkpoint"
    for bad in ("bash:", "bash:../x", "bash:a//b", "bash:/etc/passwd", "bash:tmp/../../x"):
        assert path_of_id(root, bad) is None


def test_run_index_follows_a_bash_run_on_its_plan(ws: Workspace, corpus: Path) -> None:
    plan = ws.write_plan([[], [1], [2]])
    (ws.root / ".claude" / "tmp").mkdir()
    shutil.copy2(corpus / CORPUS_RUN, ws.root / ".claude" / "tmp" / "implement_checkpoint.json")
    base = checkpoints_root(ws.root)
    base.mkdir(parents=True)
    rel = os.path.relpath(plan, ws.root)  # a relative plan path is the workspace's
    (base / "implement_demo_20261120_101010.json").write_text(json.dumps(
        bash_checkpoint(rel)))
    index = RunIndex(ws.root)
    views = {v.workflow_id: v for v in index.views(max_age=0)}
    assert set(views) == {"bash:implement_demo_20261120_101010",
                          "bash:tmp/implement_checkpoint"}
    mine = views["bash:implement_demo_20261120_101010"]
    assert mine.origin == "bash" and not mine.running and not mine.resumable
    assert (mine.status, mine.state, mine.plan) == ("in_progress", "implement", str(plan))
    assert mine.foreign is not None and mine.foreign.problems == ()
    assert mine.foreign.phase_text() == "plan phase 2 of 3 (done: 1)"
    assert index.workflow_ids() == []  # nothing for the engine follower to watch
    assert index.for_plan(plan) is mine
    assert index.view(mine.workflow_id).foreign == mine.foreign

    r = subprocess.run([sys.executable, "-m", "baton_lsp", "adopt", mine.workflow_id,
                        "--json", "--workspace", str(ws.root)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    wid = json.loads(r.stdout)["workflow_id"]
    views = {v.workflow_id: v for v in index.views(max_age=0)}
    assert views[mine.workflow_id].adopted_by == wid
    adopter = index.for_plan(plan)
    assert adopter is not None and adopter.workflow_id == wid and adopter.origin == "baton"
    assert adopter.adoption is not None and adopter.adoption.path == mine.checkpoint_path
    assert adopter.resumable  # interrupted: `baton resume` takes it from here


def test_unchanged_files_are_not_read_again(ws: Workspace) -> None:
    """The cache is keyed by (mtime, size, inode): bytes changed under an unchanged stat
    are not seen, a touched file is read again."""
    base = checkpoints_root(ws.root)
    base.mkdir(parents=True)
    path = base / "implement_demo_20261120_101010.json"
    path.write_text(json.dumps(bash_checkpoint("plan.md")))
    runs = ForeignRuns(ws.root)
    (first,) = runs.scan()
    assert first.status == "in_progress"
    st = os.stat(path)
    with open(path, "r+b") as fh:  # same inode, same size, mtime put back
        fh.write(b"X" * st.st_size)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    (cached,) = runs.scan()
    assert cached.status == "in_progress" and cached.sha256 == first.sha256
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    (fresh,) = runs.scan()
    assert fresh.status == "unreadable" and "invalid JSON" in (fresh.problem or "")
    path.unlink()
    assert runs.scan() == []


def test_huge_and_special_files_are_not_read(ws: Workspace) -> None:
    base = checkpoints_root(ws.root)
    base.mkdir(parents=True)
    with open(base / "implement_big_20261120.json", "wb") as fh:
        fh.truncate(MAX_BYTES + 1)  # sparse: no need to write 4 MB
    os.mkfifo(base / "implement_fifo_20261120.json")  # opening it would block forever
    tmp = ws.root / ".claude" / "tmp"
    tmp.mkdir()
    with open(tmp / "huge.json", "wb") as fh:
        fh.truncate(MAX_BYTES + 1)
    (run,) = ForeignRuns(ws.root).scan()
    assert run.id == "bash:implement_big_20261120" and run.status == "unreadable"
    assert "more than a checkpoint can be" in (run.problem or "") and run.sha256 is None


@pytest.mark.parametrize("status, problem", [
    ("failed", "Checkpoint status: failed (expected: in_progress)"),
    ("in_progress", None),
])
def test_problems_are_judged_now(ws: Workspace, status: str, problem: str | None) -> None:
    base = checkpoints_root(ws.root)
    base.mkdir(parents=True)
    (base / "implement_demo_1.json").write_text(json.dumps(bash_checkpoint(
        "gone.md", status=status)))
    (run,) = ForeignRuns(ws.root).scan()
    assert list(run.problems) == ([problem] if problem else [])
    assert run.plan == str(ws.root / "gone.md") and not run.plan_exists

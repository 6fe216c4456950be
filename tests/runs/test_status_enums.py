"""Step, run and phase-git statuses are enums (`model.states.StepStatus`, `RunStatus`,
`PhaseStatus`, `PhaseMode`), and the records a real run writes with them read and write
exactly as the plain strings did (issue 37)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from baton_lsp.model.states import PhaseMode, PhaseStatus, RunStatus, StepStatus
from baton_lsp.runs.record import RecordError, read_record
from tests.workflow.conftest import Workspace


def _checkpoints(ws: Workspace, wid: str) -> list[Path]:
    return sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))


def test_a_run_writes_plain_strings_and_reads_back_enums(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    wid = ws.only_workflow()
    files = _checkpoints(ws, wid)
    assert files
    seen_steps: set[str] = set()
    for path in files:
        text = path.read_text()
        data = json.loads(text)
        record = read_record(data, str(path))
        assert type(record.status) is RunStatus
        assert data["status"] == record.status.value  # the file holds the plain word
        for sid, step in record.baton.steps.items():
            assert type(step.status) is StepStatus
            assert data["baton"]["steps"][sid]["status"] == step.status.value
            seen_steps.add(step.status.value)
        # what the file says is what the typed record says back, nothing added or lost
        assert json.loads(record.model_dump_json(by_alias=True, exclude_unset=True))[
            "status"] == data["status"]
    last = read_record(json.loads(files[-1].read_text()))
    assert last.status == RunStatus.FAILED
    assert last.baton.steps["plan"].status == StepStatus.FAILED
    assert last.baton.steps["research.1"].done
    assert {"running", "done", "failed"} <= seen_steps
    # `baton status --json` still says plain strings
    row = ws.status(wid)
    assert row["status"] == "failed" and row["steps"]["plan"]["status"] == "failed"


def test_the_serialised_enums_are_the_plain_strings() -> None:
    assert json.dumps({"s": StepStatus.DONE, "r": RunStatus.IN_PROGRESS}) == \
        '{"s": "done", "r": "in_progress"}'
    assert f"{RunStatus.COMPLETE}" == "complete" and str(StepStatus.SKIPPED) == "skipped"
    assert RunStatus.INTERRUPTED.resumable and not RunStatus.COMPLETE.resumable
    assert RunStatus.INTERRUPTED.finished and not RunStatus.IN_PROGRESS.finished


GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def _git(ws: Workspace, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=ws.root, check=True,
                          capture_output=True, text=True).stdout


def test_a_phases_git_record_reads_back_as_enums(ws: Workspace) -> None:
    """A real run in a git repository whose third phase's merge conflicts: every phase's
    git record reads as `PhaseStatus`/`PhaseMode`, the files hold the plain words, and
    `baton status ID` says the conflict."""
    plan = ws.write_plan([[], [1], [1]])
    (ws.root / "src").mkdir()
    (ws.root / "src/shared.py").write_text("value = 0\n")
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "base")
    ws.behave({"implement.phase-2": {"files": {"src/shared.py": "value = 2\n"}},
               "implement.phase-3": {"files": {"src/shared.py": "value = 3\n"}}})
    r = ws.baton("run", "Implement the plan", "--scope", "implement-only", "--plan", str(plan))
    assert r.returncode == 1, r.stdout + r.stderr
    wid = ws.only_workflow()
    seen: set[str] = set()
    for path in _checkpoints(ws, wid):
        data = json.loads(path.read_text())
        for sid, step in read_record(data, str(path)).baton.steps.items():
            if step.git is None:
                continue
            assert type(step.git.status) is PhaseStatus and type(step.git.mode) is PhaseMode
            written = data["baton"]["steps"][sid]["git"]
            assert (written["status"], written["mode"]) == (step.git.status.value, "worktree")
            seen.add(step.git.status.value)
    assert {"committed", "merged", "conflict"} <= seen
    last = read_record(json.loads(_checkpoints(ws, wid)[-1].read_text())).baton.steps
    three = last["implement.phase-3"].git
    assert three is not None and three.status == PhaseStatus.CONFLICT
    assert three.conflicts == ["src/shared.py"]
    text = ws.baton("status", wid).stdout
    assert f"merge conflict on baton/{wid}/phase-3: src/shared.py" in text
    assert ws.status(wid)["steps"]["implement.phase-3"]["status"] == "done"


@pytest.mark.parametrize("where", ["run", "step", "git", "git-mode"])
def test_a_status_no_baton_writes_is_named_not_taken(where: str) -> None:
    """A hand-edited or foreign status in Baton's own record is an unreadable record that
    names the field — not a string every comparison silently misses."""
    data: dict[str, object] = {
        "schema_version": "2.1", "checkpoint_id": "wf", "workflow_type": "research-only",
        "project_name": "p", "created_at": "2026-11-29T00:00:00Z",
        "status": "in_progress",
        "state_machine": {"current_state": "research",
                          "workflow_config": {"scope": "research-only"},
                          "classification": {"workflow_type": "research-only"}},
        "baton": {"steps": {"research.1": {"status": "done"}}}}
    assert read_record(data).baton.steps["research.1"].done
    if where == "run":
        data["status"] = "finished-ish"
    elif where == "step":
        data["baton"] = {"steps": {"research.1": {"status": "ok"}}}
    elif where == "git":
        data["baton"] = {"steps": {"research.1": {"status": "done",
                                                  "git": {"status": "landed"}}}}
    else:
        data["baton"] = {"steps": {"research.1": {"status": "done",
                                                  "git": {"mode": "in place"}}}}
    with pytest.raises(RecordError, match="mode" if where == "git-mode" else "status"):
        read_record(data, "cp.json")

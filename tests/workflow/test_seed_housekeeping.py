"""Housekeeping the seeds plan for (issue 35, item 9): the test phase's fallback to
`.claude/tests/run_all_tests.sh`, retention of finished workflows' checkpoints (`baton clean
--runs`) and the context-reduction figure. Real `baton` processes with the scripted agents."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from baton_lsp.runs.store import CheckpointStore
from tests.workflow.conftest import Workspace

# Seed 000, "5. Testing Phase":
#     # Fallback: use /test-all
#     bash "${CLAUDE_PROJECT_DIR}/.claude/tests/run_all_tests.sh"
#     TEST_EXIT_CODE=$?
RUN_ALL_TESTS = """\
#!/usr/bin/env bash
# Runs every test_*.sh beside it, as the seeds' suite does.
cd "$(dirname "$0")" || exit 2
failed=0
for t in test_*.sh; do
  bash "$t" || failed=1
done
echo "project=${CLAUDE_PROJECT_DIR}" > "${CLAUDE_PROJECT_DIR}/.claude/tests/ran.txt"
exit $failed
"""


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def _seed_suite(ws: Workspace, test_body: str) -> Path:
    tests = ws.root / ".claude" / "tests"
    tests.mkdir(parents=True)
    (tests / "run_all_tests.sh").write_text(RUN_ALL_TESTS)
    (tests / "test_state_machine.sh").write_text(test_body)
    return tests


def test_no_test_command_runs_the_seeds_run_all_tests(ws: Workspace) -> None:
    ws.config("test-command = []")
    tests = _seed_suite(ws, "echo 'PASS: sm_init'\nexit 0\n")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1", check=True)
    assert ("test: running bash .claude/tests/run_all_tests.sh (no test-command configured: "
            "the seeds' fallback)") in r.stdout
    assert "test: passed (exit 0)" in r.stdout
    assert "skipped" not in r.stdout.split("test: running", 1)[1]
    assert (tests / "ran.txt").read_text() == f"project={ws.root}\n"
    cp = _checkpoint(ws, ws.only_workflow())
    step = cp["baton"]["steps"]["test.1"]
    assert step["status"] == "done" and step["passed"] is True
    assert step["command"] == ["bash", str(tests / "run_all_tests.sh")]
    assert "PASS: sm_init" in Path(step["artifact"]).read_text()


def test_the_seeds_suite_failing_goes_to_debug(ws: Workspace) -> None:
    ws.config("test-command = []\nmax-debug-iterations = 1")
    _seed_suite(ws, "echo 'FAIL: sm_transition'\nexit 1\n")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1")
    assert "test: FAILED (exit 1)" in r.stdout, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["baton"]["steps"]["test.1"]["passed"] is False
    assert "debug.1" in cp["baton"]["steps"], r.stdout  # the seeds: test fails → debug


def test_a_seeds_script_linked_out_of_the_workspace_is_not_run(ws: Workspace,
                                                             tmp_path: Path) -> None:
    ws.config("test-command = []")
    outside = tmp_path / "elsewhere.sh"
    marker = tmp_path / "ran-outside"
    outside.write_text(f"#!/usr/bin/env bash\ntouch {marker}\n")
    (ws.root / ".claude" / "tests").mkdir(parents=True)
    os.symlink(outside, ws.root / ".claude" / "tests" / "run_all_tests.sh")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert not marker.exists()
    out = r.stdout + r.stderr
    assert "not running the seeds' test script" in out
    assert "run_all_tests.sh" in out and "Traceback" not in out


# -- context reduction: a report smaller than what is passed up ---------------------------------

TINY_AGENT = """\
import os, sys
path = sys.argv[1]
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    f.write("# Auth\\nOK.\\n")
print(f"REPORT_CREATED: {path}", flush=True)
"""


def test_metadata_larger_than_the_report_is_not_a_negative_reduction(ws: Workspace) -> None:
    """A research-specialist as the seeds write it (`REPORT_CREATED: [absolute path]`) whose
    report is two lines: the signal and metadata passed up are larger than the report."""
    agent = ws.root / "tiny_agent.py"
    agent.write_text(TINY_AGENT)
    ws.config(f'runner = "command"\ncommand = ["{sys.executable}", "{agent}", "{{artifact}}"]\n')
    r = ws.baton("run", "Research auth patterns", "--scope", "research-only", "--topic",
                 "auth", check=True)
    wid = ws.only_workflow()
    total = _checkpoint(ws, wid)["baton"]["context"]["total"]
    assert total["passed_tokens"] > total["artifact_tokens"]  # the case at hand
    assert total["reduction_pct"] < 0  # the JSON keeps the measured figure
    status = ws.baton("status", wid, check=True).stdout
    for out in (r.stdout, status):
        assert "reduction -" not in out, out
    expected = (f"no reduction: the {total['passed_tokens']} tokens passed up are more than "
                f"the {total['artifact_tokens']} tokens of the artifacts")
    assert f"context passed up: {total['passed_tokens']} of {total['artifact_tokens']} tokens " \
           f"in the artifacts ({expected})" in r.stdout
    assert "no context reduction: the" in r.stdout  # the research state's line
    assert expected in status


# -- retention: `baton clean --runs` -------------------------------------------------------------


def _research(ws: Workspace, wid: str, check: bool = True) -> None:
    ws.baton("run", f"Research auth patterns {wid}", "--scope", "research-only", "--topic",
             "auth", "--id", wid, check=check)


def _workflows(ws: Workspace) -> list[str]:
    """The workflow directories in the store (its `.gitignore` is no workflow)."""
    return sorted(n for n in os.listdir(ws.root / ".claude" / "data" / "checkpoints")
                  if n != ".gitignore")


def _age(ws: Workspace, wid: str, days: float) -> None:
    """Make workflow `wid` look finished `days` ago (its newest checkpoint's mtime)."""
    newest = sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))[-1]
    when = newest.stat().st_mtime - days * 86400
    os.utime(newest, (when, when))


def test_clean_runs_removes_old_and_surplus_finished_runs_never_a_resumable_one(
        ws: Workspace) -> None:
    for wid in ("done-a", "done-b", "done-c"):
        _research(ws, wid)
    ws.behave({"research.*": {"exit": 1}})
    _research(ws, "failed-old", check=False)
    ws.behave({})
    _age(ws, "failed-old", 400)  # resumable, however old
    _age(ws, "done-a", 45)  # past keep-runs-days (30 by default)
    _age(ws, "done-b", 2)
    state_a = ws.root / ".claude" / "tmp" / "workflow_done-a.sh"
    assert state_a.exists()
    reports = sorted((ws.root / "specs").glob("*/reports/*.md"))
    assert len(reports) == 3  # the three finished runs'
    dry = ws.baton("clean", "--runs", "--dry-run", check=True)
    assert "would remove done-a: finished 45.0 days ago (more than 30)" in dry.stdout
    assert _workflows(ws) == ["done-a", "done-b", "done-c", "failed-old"]

    r = ws.baton("clean", "--runs", check=True)
    assert "removed done-a: finished 45.0 days ago (more than 30)" in r.stdout
    assert "kept failed-old: failed in research: resumable, kept" in r.stdout
    assert _workflows(ws) == ["done-b", "done-c", "failed-old"]
    assert not state_a.exists()
    # the artifacts are the user's: never removed
    assert sorted((ws.root / "specs").glob("*/reports/*.md")) == reports

    ws.config("keep-runs = 1")  # the count, from the configuration
    r = ws.baton("clean", "--runs", check=True)
    assert "removed done-b: not one of the newest 1 finished" in r.stdout
    assert _workflows(ws) == ["done-c", "failed-old"]
    r = ws.baton("clean", "--runs", "--keep", "0", "--older-than", "0", check=True)
    assert _workflows(ws) == ["failed-old"]
    # the failed run survived every clean and still resumes
    resumed = ws.baton("resume", "failed-old", "--force")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert ws.status("failed-old")["status"] == "complete"


def test_clean_runs_leaves_a_workflow_whose_lock_is_held(ws: Workspace) -> None:
    """An engine holds its workflow's lock from start to end: `clean` never removes under
    it (here a `baton resume --force` of the finished run is simulated by taking the lock
    as the engine does)."""
    _research(ws, "done-a")
    store = CheckpointStore(ws.root, "done-a")
    store.acquire()
    try:
        r = ws.baton("clean", "--runs", "--keep", "0", "--older-than", "0", check=True)
    finally:
        store.release()
    assert "kept done-a: running now" in r.stdout
    assert _workflows(ws) == ["done-a"]
    ws.baton("clean", "--runs", "--keep", "0", "--older-than", "0", check=True)
    assert _workflows(ws) == []


def test_clean_runs_while_runs_start(ws: Workspace) -> None:
    """`clean --runs` racing new runs: every run started meanwhile keeps its whole history
    and ends complete; only the runs finished before are removed."""
    for i in range(4):
        _research(ws, f"old-{i}")
    starting = [ws.popen("run", f"Research topic {i}", "--scope", "research-only", "--topic",
                         "auth", "--id", f"new-{i}") for i in range(3)]
    cleans = [ws.baton("clean", "--runs", "--keep", "0", "--older-than", "0", check=True)
              for _ in range(3)]
    for run in starting:
        assert run.wait(300) == 0, run.stderr
    for clean in cleans:
        assert "Traceback" not in clean.stdout + clean.stderr
    left = _workflows(ws)
    assert not any(w.startswith("old-") for w in left), left  # finished before: gone
    for i in range(3):
        wid = f"new-{i}"
        if wid not in left:  # finished before a clean ran: a finished run may go
            continue
        row = ws.status(wid)
        assert row["status"] == "complete", row
        numbers = sorted(int(p.stem) for p in
                         (ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))
        assert numbers == list(range(1, len(numbers) + 1))  # the whole history


def test_clean_runs_never_follows_a_symlink(ws: Workspace, tmp_path: Path) -> None:
    _research(ws, "done-a")
    _research(ws, "done-b")
    outside = tmp_path / "outside"
    (outside / "keepme").mkdir(parents=True)
    (outside / "keepme" / "precious.txt").write_text("precious\n")
    # a link planted inside a finished workflow's history
    os.symlink(outside / "keepme", ws.root / ".claude/data/checkpoints/done-a/logs/escape")
    # a workflow directory that is itself a link, to a copy of a finished history outside
    shutil.copytree(ws.root / ".claude/data/checkpoints/done-b", outside / "done-b-copy")
    os.symlink(outside / "done-b-copy", ws.root / ".claude/data/checkpoints/linked")
    r = ws.baton("clean", "--runs", "--keep", "0", "--older-than", "0", check=True)
    assert "removed done-a" in r.stdout and "removed done-b" in r.stdout
    assert "skipped linked: a symbolic link, not a workflow directory of its own" in r.stdout
    assert (outside / "keepme" / "precious.txt").read_text() == "precious\n"
    assert sorted(p.name for p in (outside / "done-b-copy").iterdir()) == sorted(
        ["lock", "logs", "run.json", *[p.name for p in
                                       (outside / "done-b-copy").glob("[0-9]*.json")]])
    assert _workflows(ws) == ["linked"]
    # the whole store reached through a link out of the workspace: refused, nothing removed
    os.unlink(ws.root / ".claude/data/checkpoints/linked")
    os.unlink(ws.root / ".claude/data/checkpoints/.gitignore")  # Baton's, made with the store
    os.rmdir(ws.root / ".claude/data/checkpoints")
    store = tmp_path / "store"
    shutil.copytree(outside / "done-b-copy", store / "done-b")
    os.symlink(store, ws.root / ".claude/data/checkpoints")
    r = ws.baton("clean", "--runs", "--keep", "0", "--older-than", "0")
    assert r.returncode == 1
    assert "outside the workspace" in r.stderr and "Traceback" not in r.stderr
    assert (store / "done-b" / "run.json").exists()


def test_clean_runs_finishes_what_a_killed_clean_left(ws: Workspace, tmp_path: Path) -> None:
    """A clean killed between renaming a history aside and removing it leaves
    `.removing-<id>-…`; the next clean removes it (a link of that name is left alone)."""
    _research(ws, "done-a")
    store = ws.root / ".claude" / "data" / "checkpoints"
    os.rename(store / "done-a", store / ".removing-done-a-1-2")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("precious\n")
    os.symlink(outside, store / ".removing-link-1-2")
    assert ws.status() == []
    ws.baton("clean", "--runs", check=True)
    assert sorted(os.listdir(store)) == [".gitignore", ".removing-link-1-2"]
    assert (outside / "precious.txt").read_text() == "precious\n"


def test_clean_runs_bad_input_is_a_message(ws: Workspace) -> None:
    _research(ws, "done-a")
    for args, says in ((["--older-than", "nan"], "must be 0 or more"),
                       (["--keep", "-1"], "must be 0 or more")):
        r = ws.baton("clean", "--runs", *args)
        assert r.returncode == 2 and says in r.stderr, r.stderr
        assert "Traceback" not in r.stderr
    r = ws.baton("clean", "--keep", "3")
    assert r.returncode == 2 and "go with --runs" in r.stderr
    assert _workflows(ws) == ["done-a"]

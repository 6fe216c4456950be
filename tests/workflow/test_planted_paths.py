"""Every path a run writes, planted first — a symlink to a file outside the workspace, or a
FIFO — against the real engine, the real scripted agents and real `baton` processes.

A repository can ship either at any of these names (git stores symlinks; a tarball can
carry a FIFO). Whoever writes there — the engine (checkpoints, `run.json`, the locks, the
state file, agent logs, `errors.jsonl`, the test output) or the default `script` runner's
agents (artifacts, phase summaries and their temp names, the journal, the code they write)
— must either refuse the name, stopping the run with a message naming it, or replace it by
a rename; never write through it, never hang on it. Afterwards `baton status` and `baton
checkpoints` read the run back without hanging either.
"""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from .conftest import Workspace

OUTSIDE_TEXT = "# a file outside the workspace\nexport SECRET=1\n"
TOPIC = ".claude/specs/001_feature"
TEST_AND_DEBUG = ("run", "Test it", "--scope", "test-and-debug", "--plan",
                  f"{TOPIC}/plans/001_feature_plan.md", "--id", "atk")
RESEARCH = ("run", "Look at logging", "--scope", "research-only", "--complexity", "1",
            "--id", "atk")
REVISE = ("run", "Revise it", "--scope", "research-and-revise", "--complexity", "1", "--plan",
          f"{TOPIC}/plans/001_feature_plan.md", "--id", "atk")
IN_WORKTREES = ("run", "Implement", "--scope", "implement-only", "--plan",
                f"{TOPIC}/plans/001_feature_plan.md", "--id", "atk")
"""In a git repository: phases 2 and 3 form a wave, each in its own worktree."""

REFUSED, REPLACED, UNUSED = "refused", "replaced", "unused"
"""What happens to the planted name: the run stops naming it; Baton's own file is renamed
over it; nothing uses it (a temp name the writer never picks)."""

# planted path → (what `baton` runs, what must happen to a symlink there, to a FIFO there);
# an artifact path found to be a link out of the workspace is refused before its agent runs
PATHS = {
    # the scripted agents (the default runner)
    ".claude/tmp/scripted_runs.log": (TEST_AND_DEBUG, REFUSED, REFUSED),
    ".claude/tmp/scripted_tests_fixed": (TEST_AND_DEBUG, REPLACED, REPLACED),
    f"{TOPIC}/summaries/phase_1_summary.md": (TEST_AND_DEBUG, REFUSED, REPLACED),
    f"{TOPIC}/summaries/.phase_1_summary.md.tmp": (TEST_AND_DEBUG, UNUSED, UNUSED),
    f"{TOPIC}/debug/001_debug_report.md": (TEST_AND_DEBUG, REFUSED, REPLACED),
    f"{TOPIC}/debug/.001_debug_report.md.tmp": (TEST_AND_DEBUG, UNUSED, UNUSED),
    "src/phase_1.py": (TEST_AND_DEBUG, REPLACED, REPLACED),
    # the engine
    ".claude/tmp/workflow_atk.sh": (TEST_AND_DEBUG, REPLACED, REPLACED),
    ".claude/data/checkpoints/atk/run.json": (TEST_AND_DEBUG, REPLACED, REPLACED),
    ".claude/data/checkpoints/atk/lock": (TEST_AND_DEBUG, REFUSED, REFUSED),
    ".claude/data/checkpoints/atk/logs/implement.phase-1.attempt-1.log":
        (TEST_AND_DEBUG, REPLACED, REPLACED),
    ".claude/data/logs/errors.jsonl": (TEST_AND_DEBUG, REFUSED, REFUSED),
    f"{TOPIC}/debug/test_output_1.log": (TEST_AND_DEBUG, REPLACED, REPLACED),
    ".claude/data/locks/topics.lock": (RESEARCH, REFUSED, REFUSED),
    f"{TOPIC}/reports/001_revise_it.md": (REVISE, REFUSED, REPLACED),
    f"{TOPIC}/plans/backups": (REVISE, REFUSED, REFUSED),
    # git worktrees (git writes inside them; Baton makes the place and the exclude line)
    ".claude/worktrees/baton-atk-phase-2": (IN_WORKTREES, REFUSED, REFUSED),
    ".git/info/exclude": (IN_WORKTREES, UNUSED, REFUSED),
}


def plan(ws: Workspace, args: tuple[str, ...]) -> None:
    ws.behave({"*": {"tests": "pass-after-debug"}})
    if args is not IN_WORKTREES:
        ws.write_plan([[], [1]])
        return
    ws.write_plan([[], [1], [1]])
    git = ["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
    for argv in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*git, *argv], cwd=ws.root, check=True, capture_output=True)
    (ws.root / ".git" / "info" / "exclude").unlink(missing_ok=True)


def plant(ws: Workspace, rel: str, kind: str, outside: Path) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink":
        path.symlink_to(outside)
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
@pytest.mark.parametrize("rel", sorted(PATHS))
def test_a_planted_name_is_never_written_through_nor_hangs(
        ws: Workspace, tmp_path: Path, rel: str, kind: str) -> None:
    args, on_link, on_fifo = PATHS[rel]
    expected = on_link if kind == "symlink" else on_fifo
    plan(ws, args)
    outside = tmp_path / "outside.sh"
    outside.write_text(OUTSIDE_TEXT)
    plant(ws, rel, kind, outside)
    r = ws.baton(*args, timeout=120)  # a hang fails here (TimeoutExpired), not forever
    out = r.stdout + r.stderr
    assert outside.read_text() == OUTSIDE_TEXT, out
    assert "Traceback" not in out and "internal error" not in out, out
    path = ws.root / rel
    if expected == REFUSED:
        assert r.returncode == 1, out
        whys = ("symbolic link", "outside the workspace") if kind == "symlink" else \
            ("not a regular file", "FIFO", "not a directory")
        assert any(rel in line and any(w in line for w in whys)
                   for line in out.splitlines()), out
    else:
        assert r.returncode == 0, out
        st = os.lstat(path)
        if expected == REPLACED:
            assert stat.S_ISREG(st.st_mode), f"{rel} is still planted"
        else:
            assert stat.S_ISLNK(st.st_mode) if kind == "symlink" else stat.S_ISFIFO(st.st_mode)
    for read_back in (("status", "--json"), ("checkpoints", "atk")):
        after = ws.baton(*read_back, timeout=60)
        assert "Traceback" not in after.stdout + after.stderr, after.stderr
    assert outside.read_text() == OUTSIDE_TEXT


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_planted_state_file_does_not_hang_a_resume(ws: Workspace, tmp_path: Path,
                                                      kind: str) -> None:
    """A resume reads the state file back (the bash side's copy of the classification)."""
    ws.behave({"research.*": {"exit": 1}})
    assert ws.baton(*RESEARCH).returncode == 1
    ws.behave({})
    outside = tmp_path / "outside.sh"
    outside.write_text('export WORKFLOW_SCOPE="debug-only"\n')
    state = ws.root / ".claude/tmp/workflow_atk.sh"
    state.unlink()
    plant(ws, ".claude/tmp/workflow_atk.sh", kind, outside)
    r = ws.baton("resume", "atk", timeout=120)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert "debug-only" not in out  # the file outside was not read as the state file
    assert stat.S_ISREG(os.lstat(state).st_mode)


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_planted_history_file_is_skipped_not_read(ws: Workspace, tmp_path: Path,
                                                    kind: str) -> None:
    """A checkpoint name planted after the run (the newest number, so read first): status,
    the history and a resume skip it as unreadable instead of reading the file outside or
    blocking on the FIFO."""
    ws.behave({"research.*": {"exit": 1}})
    assert ws.baton(*RESEARCH).returncode == 1
    ws.behave({})
    outside = tmp_path / "outside.json"
    outside.write_text('{"status": "complete"}')
    plant(ws, ".claude/data/checkpoints/atk/000999.json", kind, outside)
    listed = ws.baton("checkpoints", "atk", timeout=60)
    out = listed.stdout + listed.stderr
    why = "not a regular file" if kind == "fifo" else "symbolic link"
    assert any("999" in line and why in line for line in out.splitlines()), out
    assert ws.status("atk")["status"] == "failed"
    r = ws.baton("resume", "atk", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert outside.read_text() == '{"status": "complete"}'

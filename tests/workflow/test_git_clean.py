"""A repository stays clean by default: after real `baton run`s (the scripted agents, real
git) on a copy of the example workspace, `git status` lists only the topic directory's
deliverables — Baton's checkpoint store, locks, logs, scratch and state files ignore
themselves, through a `.gitignore` written only into a directory Baton created."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.runs import confine

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
TOPIC = ".claude/specs/004_add_greeting/"
DELIVERABLES = ("reports/", "plans/", "summaries/")


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          check=True).stdout


def baton(root: Path, *args: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "baton_lsp", *args, "--workspace", str(root)],
                          capture_output=True, text=True, timeout=300, cwd=root,
                          env={**os.environ, **(env or {})})


def example_repo(tmp_path: Path, fresh: bool) -> Path:
    """The example workspace as a git repository with one commit; `fresh` drops the
    `.claude/data/` and `.claude/tmp/` it ships, as a repository that never ran Baton."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root, symlinks=True)
    if fresh:
        shutil.rmtree(root / ".claude" / "data")
        shutil.rmtree(root / ".claude" / "tmp")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return root


def changes(root: Path) -> list[str]:
    """`git status --porcelain` with every untracked file listed, one path each."""
    return [line[3:] for line in
            git(root, "status", "--porcelain", "--untracked-files=all").splitlines()]


def run(root: Path, wid: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return baton(root, "run", "Add a greeting", "--scope", "full-implementation",
                 "--complexity", "2", "--runner", "script", "--id", wid, env=env)


def only_deliverables(paths: list[str]) -> None:
    assert paths, "the run's deliverables should be listed for review"
    stray = [p for p in paths if not (p.startswith(TOPIC)
                                      and p[len(TOPIC):].startswith(DELIVERABLES))]
    assert not stray, f"Baton's own files in git status: {stray}"


def test_a_fresh_repository_shows_only_the_deliverables_through_failure_resume_and_clean(
        tmp_path: Path) -> None:
    """A run that fails (its errors log written), its resume, and `baton clean --runs`:
    after each, git lists the topic's reports, plans and summaries and nothing else."""
    root = example_repo(tmp_path, fresh=True)
    behaviour = tmp_path / "behave.json"
    behaviour.write_text('{"implement.phase-2": {"task_error": "test_error - planted"}}')
    failed = run(root, "clean1", env={"BATON_SCRIPT_BEHAVIOUR": str(behaviour)})
    assert "clean1: failed (implement)" in failed.stdout, failed.stdout + failed.stderr
    assert (root / ".claude/data/logs/errors.jsonl").is_file()
    only_deliverables(changes(root))

    resumed = baton(root, "resume", "clean1")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "complete" in resumed.stdout
    only_deliverables(changes(root))
    for own in (".claude/data/checkpoints", ".claude/data/locks", ".claude/data/logs",
                ".claude/tmp", ".claude/specs/.baton"):
        assert (root / own / ".gitignore").read_bytes() == confine.IGNORE_ALL, own
    assert not (root / ".claude/data/.gitignore").exists()  # a parent: maybe the user's
    ignored = git(root, "status", "--porcelain", "--ignored").splitlines()
    assert f"!! {TOPIC}debug/" in ignored  # the test output log only
    assert any(f.startswith("test_output_") for f in os.listdir(root / TOPIC / "debug"))

    cleaned = baton(root, "clean", "--runs", "--keep", "0", "--older-than", "0")
    assert cleaned.returncode == 0, cleaned.stdout + cleaned.stderr
    assert "removed clean1" in cleaned.stdout
    assert os.listdir(root / ".claude/data/checkpoints") == [".gitignore"]
    only_deliverables(changes(root))


def test_a_repository_that_tracks_claude_data_gets_no_ignore_file_there(tmp_path: Path
                                                                         ) -> None:
    """The example ships `.claude/data/logs/errors.jsonl` and `.claude/tmp/`; a team that
    also commits its checkpoint store keeps seeing it: Baton writes no `.gitignore` into a
    directory the repository already had, and changes none of its tracked files."""
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root, symlinks=True)
    (root / ".claude/data/checkpoints").mkdir()
    (root / ".claude/data/checkpoints/README.md").write_text("our runs, committed\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    tracked = {p: (root / p).read_bytes() for p in git(root, "ls-files").split()}

    done = run(root, "tracked1")
    assert done.returncode == 0, done.stdout + done.stderr
    for theirs in (".claude/data", ".claude/data/checkpoints", ".claude/data/logs",
                   ".claude/tmp"):
        assert not (root / theirs / ".gitignore").exists(), theirs
    assert git(root, "diff", "--name-only") == ""
    assert {p: (root / p).read_bytes() for p in tracked} == tracked
    listed = changes(root)
    assert any(p.startswith(".claude/data/checkpoints/tracked1/") for p in listed)
    rest = [p for p in listed if not p.startswith(".claude/data/checkpoints/")]
    only_deliverables(rest)  # locks and scratch Baton created still ignore themselves


@pytest.mark.parametrize("plant", ["fifo", "link-out", "link-in", "file"])
def test_a_name_planted_at_the_ignore_file_is_never_written_through(
        tmp_path: Path, plant: str, caplog: pytest.LogCaptureFixture) -> None:
    """`O_EXCL | O_NOFOLLOW`: a FIFO is never opened (no hang), a link's target — outside
    the workspace or in it — keeps its bytes, a file is not replaced; a warning names it."""
    root = tmp_path / "ws"
    own = root / ".claude" / "data" / "checkpoints"
    own.mkdir(parents=True)
    outside = tmp_path / "outside.txt"
    outside.write_text("theirs\n")
    inside = root / "notes.txt"
    inside.write_text("mine\n")
    target = own / ".gitignore"
    if plant == "fifo":
        os.mkfifo(target)
    elif plant == "link-out":
        target.symlink_to(outside)
    elif plant == "link-in":
        target.symlink_to(inside)
    else:
        target.write_text("!keep-me\n")
    with caplog.at_level(logging.WARNING, logger="baton_lsp.runs.confine"):
        assert confine.write_ignore(root, own) is False
    assert "not writing" in caplog.text and ".gitignore" in caplog.text
    assert outside.read_text() == "theirs\n" and inside.read_text() == "mine\n"
    if plant == "fifo":
        assert target.is_fifo()
    elif plant == "file":
        assert target.read_text() == "!keep-me\n"
    else:
        assert target.is_symlink()


def test_only_a_directory_baton_creates_gets_its_ignore_file(tmp_path: Path) -> None:
    """`makedirs_own`: the new directory ignores itself, a parent made on the way and a
    directory that was already there get nothing."""
    root = tmp_path / "ws"
    (root / "had").mkdir(parents=True)
    confine.makedirs_own(root, root / "had")
    assert os.listdir(root / "had") == []
    confine.makedirs_own(root, root / "new" / "own")
    assert os.listdir(root / "new") == ["own"]
    assert (root / "new" / "own" / ".gitignore").read_bytes() == confine.IGNORE_ALL
    confine.makedirs_own(root, root / "new" / "own")  # a second call: still one, unchanged
    assert os.listdir(root / "new" / "own") == [".gitignore"]

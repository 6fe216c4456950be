"""A hostile repository and a crafted checkpoint, against the real engine (`baton run|resume`
as processes, real symlinks, real files): every file Baton writes stays inside the workspace.

A repository can ship symlinks (git stores them) at any path Baton writes: the checkpoint
history, the errors log an agent failure appends to, the state file's directory, a topic's
`debug/` where the test output goes, `.claude/worktrees/`. Each one planted here points out
of the workspace; the run must refuse it naming the link, and nothing outside may change.
A checkpoint is data a repository can ship too: one whose paths point outside is never
resumed, and one Baton did not sign itself is shown but not trusted without
`--trust-checkpoint`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import rewrite_checkpoint

from .conftest import Workspace

BASHRC = "# ~/.bashrc of the user running baton\nexport PS1='$ '\n"


def snapshot(base: Path) -> dict[str, str]:
    """Every path under `base` with a hash of its content (directories as `dir`)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), base)] = "dir"
        for name in filenames:
            path = os.path.join(dirpath, name)
            with open(path, "rb") as fh:
                out[os.path.relpath(path, base)] = hashlib.sha256(fh.read()).hexdigest()
    return out


def git(ws: Workspace, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
                   cwd=ws.root, check=True, capture_output=True, text=True)


def plant(ws: Workspace, rel: str, target: Path) -> None:
    link = ws.root / rel
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


RESEARCH = ("run", "Look at logging", "--scope", "research-only", "--complexity", "1",
            "--id", "atk")
FAILING = {"research.*": {"exit": 1, "task_error": "execution_error - injected"}}

# (planted path, what the link points at, what `baton run` is asked, scripted behaviour)
LINKS = {
    "checkpoints": (".claude/data/checkpoints", "dir", RESEARCH, {}),
    "data": (".claude/data", "dir", RESEARCH, {}),
    "run-dir": (".claude/data/checkpoints/atk", "dir", RESEARCH, {}),
    "agent-logs": (".claude/data/checkpoints/atk/logs", "dir", RESEARCH, {}),
    "logs": (".claude/data/logs", "dir", RESEARCH, FAILING),
    "errors.jsonl": (".claude/data/logs/errors.jsonl", "file", RESEARCH, FAILING),
    "tmp": (".claude/tmp", "dir", RESEARCH, {}),
    "locks": (".claude/data/locks", "dir", RESEARCH, {}),
}


@pytest.mark.parametrize("case", sorted(LINKS))
def test_a_planted_symlink_is_refused_and_nothing_is_written_outside(
        ws: Workspace, tmp_path: Path, case: str) -> None:
    rel, kind, args, behaviour = LINKS[case]
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside
    if kind == "file":
        target = outside / ".bashrc"
        target.write_text(BASHRC)
    ws.behave(behaviour)
    plant(ws, rel, target)
    before = snapshot(outside)
    r = ws.baton(*args)
    out = r.stdout + r.stderr
    assert snapshot(outside) == before, out
    assert r.returncode == 1, out
    assert rel in out and "symbolic link" in out, out
    assert "internal error" not in out and "Traceback" not in out, out


def test_the_whole_dot_claude_linked_elsewhere_is_refused(ws: Workspace,
                                                          tmp_path: Path) -> None:
    """`.claude` itself pointing out of the repository: nothing is written through it, and
    its configuration is not read either (reads are confined like writes: a warning names
    the link). Without that configuration's `script` runner the run stops before it starts
    (exit 2, no agent CLI here) or, where one is installed, at its first write (exit 1)."""
    elsewhere = tmp_path / "shared-claude"
    (ws.root / ".claude").rename(elsewhere)
    (ws.root / ".claude").symlink_to(elsewhere)
    before = snapshot(elsewhere)
    r = ws.baton(*RESEARCH)
    out = r.stdout + r.stderr
    assert snapshot(elsewhere) == before, out
    assert r.returncode in (1, 2) and ".claude" in out and "symbolic link" in out, out
    assert "baton.toml: not read: it is reached through .claude, a symbolic link" in r.stderr


def test_a_planted_topic_debug_dir_is_refused(ws: Workspace, tmp_path: Path) -> None:
    """The test output goes to `<topic>/debug/test_output_N.log`: a plan shipped with its
    topic directory's `debug` linked elsewhere must not get it written there."""
    outside = tmp_path / "outside"
    outside.mkdir()
    plan = ws.write_plan([[]])
    plant(ws, str((plan.parent.parent / "debug").relative_to(ws.root)), outside)
    r = ws.baton("run", "Test it", "--scope", "test-and-debug", "--plan", str(plan))
    out = r.stdout + r.stderr
    assert snapshot(outside) == {}, out
    assert r.returncode == 1 and "debug" in out and "symbolic link" in out, out


def test_planted_worktrees_dir_is_refused(ws: Workspace, tmp_path: Path) -> None:
    """A repository committing `.claude/worktrees` as a symlink: the phases' worktrees
    would be created (and later deleted) wherever it points."""
    outside = tmp_path / "outside"
    outside.mkdir()
    plan = ws.write_plan([[], [1], [1]])
    plant(ws, ".claude/worktrees", outside)
    git(ws, "init", "-q", "-b", "main")
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    r = ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan))
    out = r.stdout + r.stderr
    assert snapshot(outside) == {}, out
    assert r.returncode == 1 and ".claude/worktrees" in out and "symbolic link" in out, out


def test_a_hard_linked_errors_log_is_not_appended_to(ws: Workspace, tmp_path: Path) -> None:
    """A hard link cannot be told from its target by its path: appending to a log with more
    than one link is refused (a tarball can carry one)."""
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text(BASHRC)
    log = ws.root / ".claude" / "data" / "logs" / "errors.jsonl"
    log.parent.mkdir(parents=True)
    os.link(bashrc, log)
    ws.behave(FAILING)
    r = ws.baton(*RESEARCH)
    out = r.stdout + r.stderr
    assert bashrc.read_text() == BASHRC, out
    assert r.returncode == 1 and "hard link" in out, out


def test_a_symlink_in_place_of_a_replaced_file_is_replaced_not_followed(
        ws: Workspace, tmp_path: Path) -> None:
    """The state file and the owner record are replaced by a rename: a link in their place
    is replaced, never written through."""
    bashrc = tmp_path / ".bashrc"
    bashrc.write_text(BASHRC)
    plant(ws, ".claude/tmp/workflow_atk.sh", bashrc)
    wid = failed_run(ws)
    assert bashrc.read_text() == BASHRC
    assert not (ws.root / ".claude/tmp/workflow_atk.sh").is_symlink()
    owner = ws.root / ".claude/data/checkpoints" / wid / "run.json"
    owner.unlink()
    owner.symlink_to(bashrc)
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert bashrc.read_text() == BASHRC and not owner.is_symlink()


# -- checkpoints a repository can ship ---------------------------------------------------------


def newest(ws: Workspace, wid: str) -> Path:
    return sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))[-1]


def failed_run(ws: Workspace) -> str:
    """A research-only workflow that failed in research: resumable without --force."""
    ws.behave(FAILING)
    r = ws.baton(*RESEARCH)
    assert r.returncode == 1, r.stdout + r.stderr
    ws.behave({})
    return "atk"


def steer_outside(outside: Path) -> Callable[[dict], None]:
    def edit(data: dict) -> None:
        topic = outside / "evil_topic"
        paths = data["baton"]["paths"]
        paths.update(topic_dir=str(topic), reports_dir=str(topic / "reports"),
                     plans_dir=str(topic / "plans"), summaries_dir=str(topic / "summaries"),
                     debug_dir=str(topic / "debug"), plan=str(outside / "plan.md"),
                     reports=[str(topic / "reports" / "001_x.md")])
        data["workflow_state"]["plan_path"] = str(outside / "plan.md")
        data["workflow_state"]["topic_directory"] = data["topic_directory"] = str(topic)
    return edit


def test_a_crafted_checkpoint_steering_paths_outside_is_refused(ws: Workspace,
                                                                 tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "plan.md").write_text("# Plan\n\n### Phase 1: Exfiltrate\n\n- [ ] x\n")
    wid = failed_run(ws)
    rewrite_checkpoint(newest(ws, wid), steer_outside(outside))
    before = snapshot(outside)
    r = ws.baton("resume", wid)
    out = r.stdout + r.stderr
    assert snapshot(outside) == before, out
    assert r.returncode != 0 and "--trust-checkpoint" in out, out
    r = ws.baton("resume", wid, "--trust-checkpoint")  # trusted or not: never outside
    out = r.stdout + r.stderr
    assert snapshot(outside) == before, out
    assert r.returncode != 0 and "outside the workspace" in out and "evil_topic" in out, out


def test_an_edited_checkpoint_is_shown_but_not_trusted(ws: Workspace) -> None:
    wid = failed_run(ws)

    def edit(data: dict) -> None:
        data["workflow_description"] = "Look at logging (edited)"

    rewrite_checkpoint(newest(ws, wid), edit)
    row = ws.status(wid)
    assert row["status"] == "failed" and row["signature"] == "edited", row
    r = ws.baton("resume", wid)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "changed after" in out and "--trust-checkpoint" in out, out
    assert ws.started("research") == ["research.1"]  # nothing ran
    r = ws.baton("resume", wid, "--trust-checkpoint")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.status(wid)["signature"] == "trusted"  # Baton's own records from then on


def test_a_checkpoint_from_another_machine_needs_trust(ws: Workspace, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Same repository, another user's (or machine's) key: the checkpoint is whole and
    shown, and resumed only when the user says they trust it."""
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path / "machine-a"))
    wid = failed_run(ws)
    key = tmp_path / "machine-a" / "checkpoint.key"
    assert key.is_file() and key.stat().st_mode & 0o777 == 0o600
    assert not list(ws.root.rglob("*.key"))
    monkeypatch.setenv("BATON_DATA_DIR", str(tmp_path / "machine-b"))
    assert ws.status(wid)["signature"] == "foreign"
    r = ws.baton("resume", wid)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "another machine" in out and "--trust-checkpoint" in out, out
    r = ws.baton("resume", wid, "--trust-checkpoint")
    assert r.returncode == 0, r.stdout + r.stderr


def test_an_unsigned_checkpoint_needs_trust(ws: Workspace) -> None:
    """A checkpoint without a signature (written by hand, or by a Baton before signatures)."""
    wid = failed_run(ws)
    rewrite_checkpoint(newest(ws, wid), lambda data: data["baton"].pop("mac", None))
    r = ws.baton("resume", wid)
    out = r.stdout + r.stderr
    assert r.returncode == 2 and "no signature" in out and "--trust-checkpoint" in out, out

"""`baton cancel` signals only processes /proc proves are the workflow's: real `baton`
processes, a real running workflow, real unrelated processes, planted `lock` and `run.json`.

`run.json` and the lock are files in the workspace. A repository (or anyone who can write
there) can plant a `lock` symlink to a live workflow's lock — so the workflow looks running —
next to a `run.json` naming any pid: cancel must not SIGTERM/SIGKILL it. Nor may it signal a
recorded pgid whose pid now belongs to another process (a different start time), or an
agent of a same-named workflow of another workspace.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import Run, Workspace, agent_started

LIVE = "live"


def start_ticks(pid: int) -> int:
    """Field 22 of /proc/<pid>/stat, read here independently of the code under test."""
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return int(stat.rsplit(b")", 1)[1].split()[19])


def alive(pid: int) -> bool:
    """Running and not a zombie (a SIGTERMed child not yet reaped is not alive)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in (b"Z", b"X")


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process leading its own process group (as an agent would)."""
    proc = subprocess.Popen(["sleep", "600"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait(10)


def spawn(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "600"], start_new_session=True,
                            env={**os.environ, **env})


@pytest.fixture
def live(ws: Workspace) -> Iterator[Run]:
    """A real workflow running (its research agent hangs), cancelled at the end."""
    ws.behave({"research.1": {"hang": True}})
    run = ws.popen("run", "Research", "--scope", "research-only", "--complexity", "1",
                   "--id", LIVE)
    run.wait_event(agent_started("research.1"))
    yield run
    if run.returncode is None:
        ws.baton("cancel", LIVE)
        run.wait(30)


def plant_record(ws: Workspace, pid: int, lock: str | None) -> Path:
    """`.claude/data/checkpoints/atk/` with a run.json naming `pid` as engine and agent,
    and its lock: a symlink to `lock`, or a regular file when None."""
    d = ws.root / ".claude" / "data" / "checkpoints" / "atk"
    d.mkdir(parents=True)
    (d / "run.json").write_text(json.dumps({"pid": pid, "pgids": [pid]}))
    if lock is None:
        (d / "lock").write_text("")
    else:
        (d / "lock").symlink_to(lock)
    return d


def test_a_lock_linked_to_a_live_workflow_does_not_get_a_bystander_killed(
        ws: Workspace, live: Run, bystander: subprocess.Popen[bytes]) -> None:
    plant_record(ws, bystander.pid, f"../{LIVE}/lock")
    r = ws.baton("cancel", "atk", timeout=60)
    out = r.stdout + r.stderr
    assert alive(bystander.pid), out
    assert r.returncode == 1, out
    assert "nothing signalled" in out and ".claude/data/checkpoints/atk/lock" in out and \
        "symbolic link" in out, out
    assert live.returncode is None and ws.status(LIVE)["status"] != "cancelled"


def test_a_workflow_directory_linked_to_a_live_one_is_not_its_engine(
        ws: Workspace, live: Run, bystander: subprocess.Popen[bytes]) -> None:
    """The whole directory linked: the live lock is reached as the workflow's own name."""
    d = ws.root / ".claude" / "data" / "checkpoints"
    (d / "atk").symlink_to(LIVE)
    r = ws.baton("cancel", "atk", timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "symbolic link" in out, out
    assert live.returncode is None and alive(live.pid), out


def test_a_live_lock_but_a_pid_that_is_not_its_engine(
        ws: Workspace, live: Run, bystander: subprocess.Popen[bytes]) -> None:
    """The real workflow's own run.json rewritten to name a bystander as its engine: the
    bystander does not hold the lock, so it is not signalled (and neither is the engine)."""
    owner = ws.root / ".claude" / "data" / "checkpoints" / LIVE / "run.json"
    record = json.loads(owner.read_text())
    owner.write_text(json.dumps({**record, "pid": bystander.pid,
                                 "start_ticks": start_ticks(bystander.pid)}))
    r = ws.baton("cancel", LIVE, timeout=60)
    out = r.stdout + r.stderr
    assert alive(bystander.pid), out
    assert r.returncode == 1, out
    assert f"not signalled: process {bystander.pid} does not belong to workflow {LIVE}" in out
    assert "lock" in out
    assert live.returncode is None
    owner.write_text(json.dumps(record))  # the engine's own record back, for the teardown


def test_an_agent_of_another_workspace_with_the_same_workflow_id_is_not_signalled(
        ws: Workspace, tmp_path: Path) -> None:
    """No engine (the lock is free): the recorded group's leader carries the workflow id,
    but of another workspace."""
    other = spawn({"BATON_WORKFLOW_ID": "atk", "BATON_WORKSPACE": str(tmp_path / "other")})
    try:
        d = plant_record(ws, other.pid, None)
        record = json.loads((d / "run.json").read_text())
        record["pgid_start_ticks"] = {str(other.pid): start_ticks(other.pid)}
        (d / "run.json").write_text(json.dumps(record))
        r = ws.baton("cancel", "atk", timeout=60)
        out = r.stdout + r.stderr
        assert alive(other.pid), out
        assert r.returncode == 1, out
        assert f"not signalled: process {other.pid} does not belong to workflow atk" in out
        assert "BATON_WORKSPACE" in out, out
    finally:
        other.kill()
        other.wait(10)


def test_a_reused_pid_is_not_signalled(ws: Workspace) -> None:
    """The record names a pid whose process carries the right id and workspace but started
    at another time than recorded: not the agent the engine started."""
    reused = spawn({"BATON_WORKFLOW_ID": "atk", "BATON_WORKSPACE": str(ws.root)})
    try:
        d = plant_record(ws, reused.pid, None)
        ticks = start_ticks(reused.pid)
        (d / "run.json").write_text(json.dumps({
            "pid": reused.pid, "pgids": [reused.pid],
            "pgid_start_ticks": {str(reused.pid): ticks - 1}}))
        r = ws.baton("cancel", "atk", timeout=60)
        out = r.stdout + r.stderr
        assert alive(reused.pid), out
        assert r.returncode == 1 and "started at tick" in out, out
        # the same record with the true start time: proven, stopped
        (d / "run.json").write_text(json.dumps({
            "pid": reused.pid, "pgids": [reused.pid],
            "pgid_start_ticks": {str(reused.pid): ticks}}))
        r = ws.baton("cancel", "atk", timeout=60)
        assert r.returncode == 0 and "stopped 1 leftover agent group" in r.stdout, r.stderr
        assert reused.wait(10) == -signal.SIGTERM
    finally:
        reused.kill()
        reused.wait(10)


def test_a_real_running_workflow_is_still_cancelled(ws: Workspace, live: Run) -> None:
    owner = json.loads((ws.root / ".claude/data/checkpoints" / LIVE / "run.json").read_text())
    agent = owner["pgids"][0]
    assert owner["start_ticks"] == start_ticks(live.pid)
    assert owner["pgid_start_ticks"] == {str(agent): start_ticks(agent)}
    r = ws.baton("cancel", LIVE, timeout=60)
    assert r.returncode == 0 and "cancelled" in r.stdout, r.stdout + r.stderr
    assert live.wait(30) == 130
    assert not alive(agent)
    assert ws.status(LIVE)["status"] == "cancelled"


def test_agents_of_a_killed_engine_are_still_stopped(ws: Workspace, live: Run) -> None:
    owner = json.loads((ws.root / ".claude/data/checkpoints" / LIVE / "run.json").read_text())
    agent = owner["pgids"][0]
    os.kill(live.pid, signal.SIGKILL)
    live.wait(30)
    assert alive(agent)
    r = ws.baton("cancel", LIVE, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "not running; stopped 1 leftover agent group" in r.stdout
    assert not alive(agent)


def test_cancel_refuses_to_guess_without_proc(ws: Workspace, tmp_path: Path,
                                              bystander: subprocess.Popen[bytes]) -> None:
    """No /proc to prove anything (as on macOS): nothing is signalled, and the message
    says why. /proc is hidden from the real `baton` process by a mount namespace when the
    machine allows one; otherwise this is skipped."""
    plant_record(ws, bystander.pid, None)
    d = ws.root / ".claude" / "data" / "checkpoints" / "atk"
    (d / "run.json").write_text(json.dumps({
        "pid": bystander.pid, "pgids": [bystander.pid],
        "pgid_start_ticks": {str(bystander.pid): start_ticks(bystander.pid)}}))
    argv = ["unshare", "--mount", "--map-root-user", "sh", "-c",
            'mount -t tmpfs none /proc && exec "$@"', "sh", sys.executable, "-m", "baton_lsp",
            "cancel", "atk", "--workspace", str(ws.root)]
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        pytest.skip("no unshare(1)")
    if r.stderr.startswith(("unshare:", "mount:", "sh:")):  # before baton ran
        pytest.skip(f"no mount namespace here: {r.stderr.strip()}")
    out = r.stdout + r.stderr
    assert alive(bystander.pid), out
    assert r.returncode == 1 and "/proc is not available" in out, out
    assert "refuses to signal rather than guess" in out


def test_resume_stops_no_bystander_named_in_run_json(ws: Workspace, tmp_path: Path) -> None:
    """`kill_orphans`: the resume stops a dead engine's agents, proven the same way; a
    recorded group that is an agent of another workspace's same-named workflow, or whose
    pid started at another time, is named and left alone."""
    ws.behave({"research.*": {"exit": 1}})
    assert ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1",
                    "--id", "atk").returncode == 1
    ws.behave({})
    other = spawn({"BATON_WORKFLOW_ID": "atk", "BATON_WORKSPACE": str(tmp_path / "other")})
    reused = spawn({"BATON_WORKFLOW_ID": "atk", "BATON_WORKSPACE": str(ws.root)})
    try:
        owner = ws.root / ".claude/data/checkpoints/atk/run.json"
        record = json.loads(owner.read_text())
        record.update(pgids=[other.pid, reused.pid], pgid_start_ticks={
            str(other.pid): start_ticks(other.pid),
            str(reused.pid): start_ticks(reused.pid) + 1})
        owner.write_text(json.dumps(record))
        r = ws.baton("resume", "atk", timeout=120)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out
        assert alive(other.pid) and alive(reused.pid), out
        for pid in (other.pid, reused.pid):
            assert f"not signalled: process {pid} does not belong to workflow atk" in out
    finally:
        for proc in (other, reused):
            proc.kill()
            proc.wait(10)

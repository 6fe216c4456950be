"""Disk faults are ordinary failures: a write Baton cannot make (the disk full, read-only, a
file size limit) ends the run with a clear message and exit code 1 — the workflow `failed`
when that can still be written, otherwise left at its last checkpoint, which `baton
status` shows as interrupted — and `baton resume` completes it once the fault is gone.

Real faults only: RLIMIT_FSIZE (writes past the limit fail with EFBIG; needs no privilege,
so it runs everywhere), and where this process may mount — root with CAP_SYS_ADMIN, as on
the project's VM — a full tmpfs (ENOSPC) and a read-only one (EROFS), inside a private mount
namespace (tests/workflow/disk_fault_driver.py). EDQUOT takes the same path as ENOSPC; no
quota-enabled file system is at hand to reproduce it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import Workspace

DRIVER = Path(__file__).resolve().parent / "disk_fault_driver.py"
LIMIT = ("import os, resource, sys; n = int(sys.argv[1]); "
         "resource.setrlimit(resource.RLIMIT_FSIZE, (n, n)); os.execv(sys.argv[2], sys.argv[2:])")


def limited(ws: Workspace, limit: int, *args: str) -> subprocess.CompletedProcess[str]:
    """`baton ARGS` with every file it (and its agents) writes capped at `limit` bytes."""
    return subprocess.run([sys.executable, "-c", LIMIT, str(limit), sys.executable, "-m",
                           "baton_lsp", *args, "--workspace", str(ws.root)],
                          capture_output=True, text=True, timeout=120, cwd=ws.root)


def clean(out: str) -> None:
    assert "internal error" not in out and "Traceback" not in out and "report it" not in out, out


def test_a_checkpoint_past_the_file_size_limit_fails_cleanly_and_resumes(
        ws: Workspace) -> None:
    # the first checkpoints are ~3-4 KB (with the run's pinned settings, issue 30), the one
    # recording the report ~5.7 KB
    r = limited(ws, 5120, "run", "Look at logging", "--scope", "research-only",
                "--complexity", "1", "--id", "big")
    out = r.stdout + r.stderr
    clean(out)
    assert r.returncode == 1, out
    assert "file size limit" in out and "baton resume big" in out, out
    row = ws.status("big")
    assert row["status"] in ("failed", "interrupted"), row
    r = ws.baton("resume", "big")
    assert r.returncode == 0, r.stdout + r.stderr
    assert ws.status("big")["status"] == "complete"
    # where the limit bites depends on the checkpoints' sizes (paths, the pinned settings):
    # before research (it runs once, in the resume) or at the checkpoint recording it done
    # — then its finished work is kept (issue 31): either way its agent ran once
    assert ws.started("research") == ["research.1"]


def can_mount(tmp_path: Path) -> str | None:
    """Why a tmpfs cannot be mounted in a private namespace here (None: it can)."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "unshare or mount is not installed"
    probe = tmp_path / "probe"
    probe.mkdir()
    r = subprocess.run(["unshare", "-m", "--propagation", "private", "mount", "-t", "tmpfs",
                        "-o", "size=4k", "tmpfs", str(probe)], capture_output=True, text=True,
                       timeout=30, check=False)
    return None if r.returncode == 0 else f"cannot mount a tmpfs: {r.stderr.strip()}"


def faulted(ws: Workspace, tmp_path: Path, mode: str) -> dict:
    why = can_mount(tmp_path)
    if why:
        pytest.skip(f"{why} (the RLIMIT_FSIZE test covers disk faults without privileges)")
    r = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                        str(DRIVER), str(ws.root), mode], capture_output=True, text=True,
                       timeout=600, check=False, cwd=ws.root)
    assert r.returncode == 0, r.stdout + r.stderr
    out = json.loads(r.stdout)
    assert out["mount"]["code"] == 0 and out["fix"]["code"] == 0, out
    return out


def test_a_full_disk_under_the_checkpoints_fails_cleanly_and_resumes(
        ws: Workspace, tmp_path: Path) -> None:
    out = faulted(ws, tmp_path, "enospc")
    run = out["run"]
    clean(run["out"])
    assert run["code"] == 1, run["out"]
    assert "no space left" in run["out"].lower() and "baton resume fault" in run["out"]
    assert out["after_run"]["status"] in ("failed", "interrupted"), out["after_run"]
    assert out["resume"]["code"] == 0, out["resume"]["out"]
    assert out["after_resume"]["status"] == "complete", out["after_resume"]


def test_a_read_only_state_directory_fails_the_workflow_and_resumes(
        ws: Workspace, tmp_path: Path) -> None:
    out = faulted(ws, tmp_path, "erofs")
    run = out["run"]
    clean(run["out"])
    assert run["code"] == 1, run["out"]
    assert "read-only file system" in run["out"].lower(), run["out"]
    assert out["after_run"]["status"] == "failed", out["after_run"]  # the checkpoints could be
    assert out["resume"]["code"] == 0, out["resume"]["out"]
    assert out["after_resume"]["status"] == "complete", out["after_resume"]

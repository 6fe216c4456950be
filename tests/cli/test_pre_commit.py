"""`.pre-commit-hooks.yaml` (issue 38): `pre-commit try-repo <this clone> baton-check` on a
git repository holding the bundled example workspace, run by the real pre-commit, which
builds the hook's virtualenv from this repository (`language: python`: it needs the package
index for Baton's dependencies, so the test skips when no index answers)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests.conftest import EXAMPLE, REPO

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pre_commit") is None,
                                reason="pre-commit is not installed (the test extra has it)")

PLAN = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"
AGENT = ".claude/agents/plan-architect.md"


def _index_reachable() -> bool:
    """Whether pip can reach an index to build the hook's environment: a local one
    (file://, as on an offline mirror) or PyPI."""
    probe = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                           capture_output=True, text=True, timeout=60)
    if "file://" in probe.stdout:
        return True
    host = urlparse("https://pypi.org/simple").hostname or "pypi.org"
    try:
        socket.create_connection((host, 443), timeout=10).close()
    except OSError:
        return False
    return True


@pytest.fixture(scope="module")
def hook_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pre-commit home for the module: the hook's environment is built once."""
    if not (REPO / ".git").exists():
        pytest.skip("pre-commit try-repo needs this repository as a git clone")
    if not _index_reachable():
        pytest.skip("building the hook's environment needs a package index")
    return tmp_path_factory.mktemp("pre-commit-home")


@pytest.fixture
def example_repo(tmp_path: Path) -> Path:
    """The example workspace as the git repository a user commits in."""
    repo = tmp_path / "project"
    shutil.copytree(EXAMPLE, repo)
    for argv in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=repo, check=True, capture_output=True, timeout=60)
    return repo


def try_repo(hook: str, repo: Path, home: Path, *files: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-m", "pre_commit", "try-repo", str(REPO), hook,
                           "--files", *files], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=900)


def test_the_manifest_is_valid() -> None:
    r = subprocess.run([sys.executable, "-m", "pre_commit", "validate-manifest",
                        str(REPO / ".pre-commit-hooks.yaml")], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr


def test_baton_check_hook_reports_the_example_findings(example_repo: Path,
                                                       hook_home: Path) -> None:
    r = try_repo("baton-check", example_repo, hook_home, PLAN, AGENT)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "baton check" in out and "Failed" in out
    assert f"{PLAN}:30:19: BTN101 Phase 3 (Notifications) depends on phase 7" in out
    assert f"{AGENT}:2:29: BTN206" in out
    # a file of no workspace kind is left alone: the hook passes on it
    (example_repo / "notes.md").write_text("# Notes\n", encoding="utf-8")
    subprocess.run(["git", "add", "notes.md"], cwd=example_repo, check=True, timeout=60)
    r = try_repo("baton-check", example_repo, hook_home, "notes.md")
    assert r.returncode == 0 and "Passed" in r.stdout, r.stdout + r.stderr


def test_baton_fix_hook_applies_the_fixes(example_repo: Path, hook_home: Path) -> None:
    r = try_repo("baton-fix", example_repo, hook_home, PLAN)
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "files were modified by this hook" in out, out
    text = (example_repo / PLAN).read_text(encoding="utf-8")
    assert "### Phase 2: Backoff Worker [COMPLETE]" in text and "[X]" not in text

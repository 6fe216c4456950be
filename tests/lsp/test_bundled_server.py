"""The server bundled in the VS Code extension: `client-vscode/scripts/bundle_libs.py` builds
`bundled/libs` for this machine (the wheels the runtime lock pins, hash-checked), and a bare
Python (a venv without pip, nothing installed) runs it with `-I` through
`bundled/tool/baton_bootstrap.py`: only the standard library and the bundle are importable, as
on a user's machine with no pip access."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient, make_test_lsp_client

from tests.conftest import EXAMPLE, REPO, SCRIPTED_WORKFLOW_CONFIG
from tests.lsp.conftest import CHANGED, CLIENTS, TIMEOUT, setup, wait_for_diagnostics

CLIENT = REPO / "client-vscode"
BOOTSTRAP = CLIENT / "bundled" / "tool" / "baton_bootstrap.py"
VERSION = f"{sys.version_info.major}.{sys.version_info.minor}"
DEPLOY = ".claude/commands/deploy.md"
DEPLOY_TEXT = "---\ndescription: d\n---\n\n# /deploy\n\n```bash\nrm -rf $TARGET/build\n```\n"
"""A command whose bash block ShellCheck flags (SC2086): BTN330 needs the bundled binary."""
SHELLCHECK = 'shellcheck = "all"\nshellcheck-checks = ["default", "SC2086"]\n'
SUPERVISED = 'research-mode = "agent"\n'
"""Four topics go to one research-supervisor agent, which starts its workers itself: a third
kind of Baton child process (appended to the `[workflow]` table)."""



@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`bundled/` for this machine and this CPython version, built as `npm run package` does."""
    root = tmp_path_factory.mktemp("bundled")
    (root / "tool").mkdir()
    shutil.copy(BOOTSTRAP, root / "tool" / BOOTSTRAP.name)
    built = subprocess.run(
        [sys.executable, str(CLIENT / "scripts" / "bundle_libs.py"), "--out", str(root / "libs"),
         "--pythons", VERSION], capture_output=True, text=True, timeout=900, check=False)
    assert built.returncode == 0, built.stderr[-4000:]
    return root / "tool" / BOOTSTRAP.name


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with nothing installed: neither baton_lsp nor any of its dependencies."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=300)
    python = str(venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))
    for module in ("baton_lsp", "pydantic", "pygls", "yaml"):
        probe = subprocess.run([python, "-I", "-c", f"import {module}"], capture_output=True,
                               timeout=60, check=False)
        assert probe.returncode != 0, f"{module} is importable by the bare Python"
    return python


def server_env() -> dict[str, str]:
    """No ShellCheck on PATH (the repository's venv has one): the bundle's must be found."""
    return {**os.environ, "PATH": os.pathsep.join(
        p for p in os.environ.get("PATH", "").split(os.pathsep)
        if p and not (Path(p) / "shellcheck").exists())}


@pytest.fixture
async def bundled(bare: str, bootstrap: Path, tmp_path: Path) -> AsyncIterator[LanguageClient]:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    (ws / ".claude" / "baton.toml").write_text(SHELLCHECK + SCRIPTED_WORKFLOW_CONFIG + SUPERVISED,
                                               encoding="utf-8")
    (ws / DEPLOY).write_text(DEPLOY_TEXT, encoding="utf-8")
    client = make_test_lsp_client()
    await client.start_io(bare, "-I", str(bootstrap), "-m", "baton_lsp", "lsp",
                          cwd=str(tmp_path), env=server_env())

    class Req:
        param = CLIENTS[0]

    await setup(client, Req, ws)  # type: ignore[arg-type]
    try:
        yield client
    finally:
        await client.shutdown_session()


def expected_codes(ws: Path, rel: str) -> set[str]:
    """What `baton check` (the pip-installed CLI of this test run) reports for one file."""
    out = subprocess.run([sys.executable, "-m", "baton_lsp", "check", str(ws / rel),
                          "--format", "json"], capture_output=True, text=True, timeout=300,
                         check=False, cwd=ws)
    return {f["code"] for f in json.loads(out.stdout)}


async def test_bundled_server_publishes_the_diagnostics_of_baton_check(
        bundled: LanguageClient) -> None:
    ws: Path = bundled.workspace_root  # type: ignore[attr-defined]
    for rel in (".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md", DEPLOY):
        want = expected_codes(ws, rel)
        assert want, rel
        got = await wait_for_diagnostics(bundled, (ws / rel).as_uri(),
                                         lambda ds, want=want: {d.code for d in ds} == want)
        assert {d.code for d in got} == want
    deploy = bundled.diagnostics[(ws / DEPLOY).as_uri()]
    assert any(d.code == "BTN330" and "SC2086" in d.message for d in deploy), deploy


async def test_a_workflow_started_from_the_bundled_server_runs_on_the_bundle(
        bundled: LanguageClient) -> None:
    """The engine, its scripted agents and the test command `{python} -m
    baton_lsp.workflow.scripted` are processes of their own: they start through the bootstrap
    too (a plain `python -m baton_lsp` finds nothing to import)."""
    started = await asyncio.wait_for(bundled.workspace_execute_command_async(
        types.ExecuteCommandParams(command="baton.server.workflow.start", arguments=[
            {"description": "Add a thing", "scope": "full-implementation", "complexity": 4}])),
        TIMEOUT)
    wid = started["workflow_id"]

    async def finished() -> dict[str, object]:
        while True:
            for p in bundled.changed:  # type: ignore[attr-defined]
                if p["workflow_id"] == wid and p["event"]["event"] == "finished":
                    return p["event"]  # type: ignore[no-any-return]
            await bundled.wait_for_notification(CHANGED)

    end = await asyncio.wait_for(finished(), TIMEOUT)
    assert end["status"] == "complete", end


def test_bootstrap_refuses_a_python_the_bundle_has_no_libraries_for(tmp_path: Path) -> None:
    """A clear message and exit 3 (the extension shows it), never an ImportError."""
    (tmp_path / "tool").mkdir()
    boot = shutil.copy(BOOTSTRAP, tmp_path / "tool" / BOOTSTRAP.name)
    for lib in ("common", "cp310", "cp399"):  # 3.10 is below what Baton supports
        (tmp_path / "libs" / lib).mkdir(parents=True)
    r = subprocess.run([sys.executable, "-I", str(boot), "-m", "baton_lsp", "--version"],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 3, r.stderr
    assert r.stderr == (f"Baton: the bundled server needs CPython 3.99; {sys.executable} "
                        f"is cpython {VERSION}. Select another interpreter, or install baton-lsp "
                        "into this one and set baton.interpreter.\n")
    r = subprocess.run([sys.executable, "-I", str(boot), "lsp"], capture_output=True,
                       text=True, timeout=60, check=False)
    assert r.returncode == 3  # refused before the arguments are looked at

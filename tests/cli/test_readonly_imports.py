"""Read-only commands import only what they read (issue 37): under load `baton status` spent
most of its time importing the engine (`workflow/isolation.py` and what it pulls in) and
`baton cancel` the pydantic checkpoint models, neither of which they use."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import EXAMPLE

PROBE = """
import sys
from baton_lsp.cli.main import main
code = main(sys.argv[1:])
heavy = sorted(m for m in sys.modules if m == "pydantic" or m in (
    "baton_lsp.workflow.isolation", "baton_lsp.workflow.run", "baton_lsp.workflow.engine",
    "baton_lsp.workflow.runners"))
print("IMPORTED", " ".join(heavy), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    ws = tmp_path_factory.mktemp("ro") / "ws"
    shutil.copytree(EXAMPLE, ws)
    subprocess.run([sys.executable, "-m", "baton_lsp", "run", "Research the greeting",
                    "--scope", "research-only", "--complexity", "1", "--runner", "script",
                    "--workspace", str(ws)], check=True, capture_output=True, timeout=300)
    out = subprocess.run([sys.executable, "-m", "baton_lsp", "status", "--json",
                          "--workspace", str(ws)], check=True, capture_output=True,
                         text=True, timeout=120).stdout
    return ws, json.loads(out)[0]["workflow_id"]


def imported(ws: Path, *args: str) -> set[str]:
    run = subprocess.run([sys.executable, "-c", PROBE, *args, "--workspace", str(ws)],
                         capture_output=True, text=True, timeout=120, cwd=ws)
    line = [x for x in run.stderr.splitlines() if x.startswith("IMPORTED")][-1]
    return set(line.split()[1:])


def test_cancel_of_a_finished_run_imports_neither_pydantic_nor_the_engine(
        finished: tuple[Path, str]) -> None:
    ws, wid = finished
    assert imported(ws, "cancel", wid) == set()


@pytest.mark.parametrize("args", [(), ("--json",)])
def test_status_does_not_import_the_engine(finished: tuple[Path, str],
                                           args: tuple[str, ...]) -> None:
    ws, _ = finished
    assert imported(ws, "status", *args) <= {"pydantic"}  # the run record's reader

"""The process entry (`baton` script, `python -m baton_lsp`): a check ends with `os._exit`
once its output is flushed, other commands with the interpreter's usual exit."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

from baton_lsp.cli.main import main
from tests.conftest import EXAMPLE

# Registers an exit handler, then runs `python -m baton_lsp ARGS` as the interpreter would.
PROBE = ("import atexit, runpy, sys\n"
         "atexit.register(lambda: print('TEARDOWN', file=sys.stderr, flush=True))\n"
         "sys.argv = ['baton_lsp', *sys.argv[1:]]\n"
         "runpy.run_module('baton_lsp', run_name='__main__', alter_sys=True)\n")
BATON = Path(sys.executable).parent / "baton"


def probe(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", PROBE, *args], capture_output=True,
                          text=True, timeout=300, check=False)


def test_a_check_skips_the_interpreter_teardown_and_writes_all_its_output(
        capsys: pytest.CaptureFixture[str]) -> None:
    args = ["check", str(EXAMPLE), "--no-shellcheck", "--format", "json"]
    proc = probe(*args)
    assert "TEARDOWN" not in proc.stderr  # exit handlers did not run: os._exit
    assert proc.stderr == ""
    in_process = main(args)
    expected = capsys.readouterr().out
    assert proc.returncode == in_process == 1  # the example has errors
    assert proc.stdout == expected and json.loads(proc.stdout)  # complete: flushed first


def test_other_commands_keep_the_usual_exit() -> None:
    proc = probe("rule", "BTN101")
    assert proc.returncode == 0 and "BTN101" in proc.stdout
    assert proc.stderr.strip() == "TEARDOWN"


def test_the_console_script_is_the_entry_wrapper() -> None:
    (script,) = [ep for ep in entry_points(group="console_scripts") if ep.name == "baton"]
    assert script.value == "baton_lsp.cli.main:run"


def test_worker_processes_and_shellcheck_under_the_fast_exit() -> None:
    """`--jobs 2` forks a pool, ShellCheck (on by default) runs in processes watched by
    daemon threads: the output is the same as one process's, and no ShellCheck is left."""
    base = [str(BATON), "check", str(EXAMPLE), "--format", "json", "--no-cache"]
    one = subprocess.run([*base, "--jobs", "1"], capture_output=True, text=True,
                         timeout=300, check=False)
    two = subprocess.run([*base, "--jobs", "2"], capture_output=True, text=True,
                         timeout=300, check=False)
    assert one.returncode == two.returncode == 1 and one.stderr == two.stderr == ""
    assert json.loads(one.stdout) == json.loads(two.stdout)
    assert any(f["code"].startswith("BTN3") for f in json.loads(one.stdout))

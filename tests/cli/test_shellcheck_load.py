"""ShellCheck's findings are a function of the input, not of the machine's load (issue 32).

The same command file, with more bash blocks than a file may hand to ShellCheck, is checked
by a real `baton check --format json` process twice: once as the machine is, once while
four CPU-burning processes load it. Both outputs are byte-identical, the blocks past the
file's limits are information findings, and the exit code is 0. With the old wall-clock
budgets (3 s a run, 10 s a file) the loaded run reported a different set of blocks as "not
checked", as warnings' neighbours that changed from run to run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from baton_lsp.rules import shellcheck_run
from baton_lsp.rules.shellcheck_tool import find_shellcheck

BURNERS = 4
EXTRA_BLOCKS = 3


def block(i: int) -> list[str]:
    """A clean script block of about 2,700 characters (no finding of any check)."""
    body = ['set -euo pipefail',
            'source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"',
            f'STATE_FILE="${{CLAUDE_PROJECT_DIR}}/.claude/tmp/state_{i}.sh"']
    for k in range(20):
        body += [f'for f in "${{DIR_{k}:-.}}"/*.md; do',
                 f'  if [ "${{COUNT_{k}:-0}}" -gt {k} ]; then echo "$f {i}"; fi',
                 'done',
                 f'case "${{MODE_{k}:-a}}" in a|b) echo {k} ;; *) printf "%s\\n" "{i}" ;; esac']
    body.append(f'append_workflow_state "BLOCK_{i}" "$STATE_FILE"')
    return [f"## Part {i + 1}", "", "```bash", *body, "```", ""]


def command_text(n: int) -> str:
    head = ["---", "description: Many steps, each a script", "allowed-tools: Bash", "---", "",
            "# /many", ""]
    return "\n".join(head + [line for i in range(n) for line in block(i)]) + "\n"


@contextmanager
def cpu_load(count: int) -> Iterator[None]:
    """`count` processes spinning on the CPU; killed (each by its pid) on the way out."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(count)]
    try:
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.wait(timeout=60)


def check_json(root: Path, cache: Path) -> tuple[int, bytes]:
    proc = subprocess.run(
        [sys.executable, "-m", "baton_lsp", "check", "--format", "json", "--shellcheck", "all",
         "--no-cache", str(root)],
        capture_output=True, timeout=600, check=False,
        env={**os.environ, "BATON_CACHE_DIR": str(cache)})
    assert proc.returncode in (0, 1), proc.stderr.decode(errors="replace")
    return proc.returncode, proc.stdout


def test_findings_are_the_same_on_an_idle_and_a_loaded_machine(tmp_path: Path) -> None:
    if find_shellcheck() is None:
        pytest.skip("shellcheck binary not available")
    root = tmp_path / "ws"
    (root / ".claude" / "commands").mkdir(parents=True)
    n = shellcheck_run.MAX_FILE_BLOCKS + EXTRA_BLOCKS
    (root / ".claude" / "commands" / "many.md").write_text(command_text(n), encoding="utf-8")

    idle_code, idle = check_json(root, tmp_path / "cache-idle")
    with cpu_load(BURNERS):
        loaded_code, loaded = check_json(root, tmp_path / "cache-loaded")

    assert loaded == idle  # byte for byte
    findings = json.loads(idle)
    skipped = [f for f in findings if "was not checked by ShellCheck" in f["message"]]
    assert [f["message"].split(" was")[0] for f in skipped] == [
        f"bash block {i}" for i in range(shellcheck_run.MAX_FILE_BLOCKS + 1, n + 1)]
    assert all(f["severity"] == "info" for f in skipped)
    assert all(f["message"].endswith(shellcheck_run.FILE_LIMIT) for f in skipped)
    assert not [f for f in findings if f["severity"] == "error"], findings
    assert idle_code == loaded_code == 0

"""Escape sequences from files and checkpoints never reach the terminal: `baton check`, `graph`,
`run`, `status`, `checkpoints` and `resume` run under a real pseudo-terminal (the master side is
what a terminal emulator would read) on a workspace whose plan title, phase title, agent tool
name, agent error and edited checkpoint carry OSC/CSI sequences, the 8-bit CSI and a bidi
override. None of them may arrive raw; each must be visible escaped; Baton's own colours (on a
tty, `baton check`) still arrive."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import EXAMPLE, SCRIPTED_WORKFLOW_CONFIG
from tests.helpers import rewrite_checkpoint

HOSTILE = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"
"""Retitles the window, clears the screen, starts a CSI in its 8-bit form, reverses the line."""
SHOWN = "\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil"
PLAN = ".claude/specs/001_auth_login/plans/001-auth-login-plan.md"
AGENT = ".claude/agents/implementation-executor.md"
OWN_COLOURS = re.compile(r"\x1b\[(?:0|1|2|31|33|36)m")
"""What `baton check --format text` adds itself on a terminal (cli/output.py)."""
BIDI = {chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]}
DEADLINE = 300.0


def on_a_terminal(argv: list[str], cwd: Path) -> tuple[int, str]:
    """Run `python -m baton_lsp ARGV` with stdin, stdout and stderr on a new pty; everything
    the master side read (decoded with surrogateescape: a lone C1 byte stays visible)."""
    master, slave = os.openpty()
    env = {**os.environ, "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "baton_lsp", *argv], cwd=cwd, env=env,
                            stdin=slave, stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                continue
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: every slave side is closed, the process is gone
                break
            if not chunk:
                break
            out += chunk
        else:
            proc.kill()
            raise AssertionError(f"baton {argv} still writing after {DEADLINE} s")
    finally:
        os.close(master)
    return proc.wait(timeout=DEADLINE), out.decode("utf-8", "surrogateescape")


def assert_nothing_raw(text: str, own: re.Pattern[str] | None = None) -> None:
    """No ESC, C1 control, lone undecodable byte or bidi control reached the terminal except
    Baton's own colour codes."""
    rest = own.sub("", text) if own else text
    assert "\x1b" not in rest, rest
    assert not [c for c in rest if 0x80 <= ord(c) <= 0x9F or 0xDC80 <= ord(c) <= 0xDCFF], rest
    assert not BIDI & set(rest), rest


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    (ws / ".claude" / "baton.toml").write_text(SCRIPTED_WORKFLOW_CONFIG)
    plan = ws / PLAN
    text = plan.read_text(encoding="utf-8")
    text = text.replace("# Login Flow Implementation Plan", f"# Login {HOSTILE} Plan", 1)
    text = text.replace("### Phase 3: Login Endpoint", f"### Phase 3: Login {HOSTILE}", 1)
    plan.write_text(text, encoding="utf-8")
    agent = ws / AGENT
    text = agent.read_text(encoding="utf-8")
    agent.write_text(text.replace("TodoWrite", f"TodoWrite, Zap{HOSTILE}", 1), encoding="utf-8")
    return ws


def test_check_and_graph_show_file_content_escaped_and_keep_their_colours(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, text = on_a_terminal(["check", "--no-cache", "."], ws)
    assert code == 1, text
    assert_nothing_raw(text, OWN_COLOURS)
    assert f"unknown tool `Zap{SHOWN}`" in text  # the content is there, escaped
    assert "\x1b[1m.claude/agents/implementation-executor.md:" in text  # Baton's own colours
    assert "\x1b[33mBTN206\x1b[0m" in text

    code, text = on_a_terminal(["graph", PLAN], ws)
    assert code == 0, text
    assert_nothing_raw(text)
    assert f"Plan: Login {SHOWN} Plan" in text and f"(Login {SHOWN})" in text

    code, text = on_a_terminal(["check", "--format", "json", "--no-cache", AGENT], ws)
    assert "\x1b" not in text  # JSON escapes control characters itself ...
    found = json.loads(text[text.index("["):])
    assert any(HOSTILE in f["message"] for f in found), found  # ... and keeps them exact


def failed_run(ws: Path, argv: list[str] | None = None) -> tuple[int, str]:
    """`baton run` of the hostile plan whose phase 3 agent fails with a hostile message, on a
    terminal (`argv`: run it through a pipe instead)."""
    (ws / ".claude" / "baton-script.json").write_text(json.dumps({"implement.phase-3": {
        "exit": 1, "task_error": f"execution_error - agent says {HOSTILE}"}}))
    run = ["run", f"describe {HOSTILE}", "--scope", "implement-only", "--plan", PLAN,
           "--id", "hostile"]
    if argv is None:
        return on_a_terminal(run, ws)
    proc = subprocess.run([*argv, *run], cwd=ws, capture_output=True, text=True,
                          timeout=DEADLINE)
    return proc.returncode, proc.stdout + proc.stderr


def test_run_shows_the_description_and_the_agent_error_escaped(tmp_path: Path) -> None:
    code, text = failed_run(workspace(tmp_path))
    assert code == 1, text
    assert_nothing_raw(text)
    assert f"describe {SHOWN}" in text  # the classification line and the report
    assert f"TASK_ERROR: execution_error - agent says {SHOWN}" in text  # the agent's line
    assert "agent says \\u202eevil" in text  # the failure: its sequences dropped, not run


def test_status_checkpoints_and_resume_show_an_edited_checkpoint_escaped(
        tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    code, text = failed_run(ws, [sys.executable, "-m", "baton_lsp"])
    assert code == 1, text
    # A checkpoint copied in from elsewhere: edited, so not trusted, and shown.
    newest = sorted((ws / ".claude/data/checkpoints/hostile").glob("[0-9]*.json"))[-1]

    def edit(data: dict) -> None:
        data["workflow_description"] = f"steered {HOSTILE}\nforged description"
        data["last_error"] = f"error {HOSTILE}\nforged line"
        data["error_state"]["last_error"] = data["last_error"]

    rewrite_checkpoint(newest, edit)
    code, text = on_a_terminal(["status"], ws)
    assert code == 0, text
    assert_nothing_raw(text)
    assert f"steered {SHOWN}"[:50] in text and "not trusted" in text

    code, text = on_a_terminal(["status", "hostile"], ws)
    assert code == 0, text
    assert_nothing_raw(text)
    assert f"description: steered {SHOWN}\\nforged description" in text
    assert f"last_error: error {SHOWN}\\nforged line" in text  # one line, not two

    code, text = on_a_terminal(["checkpoints", "hostile"], ws)
    assert code == 0, text
    assert_nothing_raw(text)

    code, text = on_a_terminal(["resume", "hostile", "--dry-run"], ws)
    assert code == 0, text
    assert_nothing_raw(text)
    assert "needs --trust-checkpoint" in text

    (ws / ".claude" / "baton-script.json").write_text("{}")
    code, text = on_a_terminal(["resume", "hostile", "--trust-checkpoint"], ws)
    assert code == 0, text
    assert_nothing_raw(text)
    assert f"last run ended with: error {SHOWN}" in text
    assert f"  steered {SHOWN}\\nforged description\r\n" in text  # the report's, one line

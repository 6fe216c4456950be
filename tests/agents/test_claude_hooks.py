"""The real `claude -p` (2.1.331) against `FakeAnthropic`: which project-settings hooks run.

Each hook touches its own marker file, so what ran is read off the disk. Baton's settings
rules (BTN801-BTN805) predict it: a hook under an event name Claude Code lacks (BTN802), of
an unknown `type` or written without its matcher group (BTN805), or in a settings file that
is not JSON (BTN801) never runs, while its well-formed siblings do; a matcher on `Stop` or
`UserPromptSubmit` (BTN803) filters nothing, so that hook runs anyway; a tool matcher in
permission-rule syntax (BTN808) never matches. What command hooks do with their exit status,
their output and the environment (BTN809-BTN811) is pinned the same way.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import (
    FakeAnthropic,
    Responder,
    reply_text,
    text_of,
    write_then_report,
)

CLAUDE = cli_path("claude")


def _run(tmp_path: Path, settings_text: str,
         respond: Responder | None = None) -> tuple[set[str], set[str]]:
    """(markers the real binary's hooks touched, Baton's finding codes) for one project."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".claude").mkdir(parents=True)
    home.mkdir()
    settings = ws / ".claude/settings.json"
    settings.write_text(settings_text.replace("MARK", str(tmp_path / "marks")), encoding="utf-8")
    (tmp_path / "marks").mkdir()
    with FakeAnthropic(respond or reply_text("done")) as api:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_BASE_URL": api.url,
               "ANTHROPIC_API_KEY": "test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}
        proc = subprocess.run([CLAUDE, "-p", "--output-format", "stream-json", "--verbose",
                               "--permission-mode", "acceptEdits"],
                              input="hi", capture_output=True, text=True, cwd=ws, env=env,
                              timeout=300, check=False)
        assert not api.errors, api.errors
    assert proc.returncode == 0, proc.stderr[-2000:]
    ran = set(os.listdir(tmp_path / "marks"))
    codes = {f.code for f in check_file(WorkspaceIndex(ws), settings)}
    return ran, codes


def _hook(name: str) -> list[dict[str, str]]:
    return [{"type": "command", "command": f"touch MARK/{name}"}]


def test_which_hooks_run_is_what_baton_predicts(tmp_path: Path) -> None:
    settings = {"hooks": {
        "Stop": [{"matcher": "Bash", "hooks": _hook("stop_with_matcher")},  # BTN803: runs
                 {"type": "command", "command": "touch MARK/stop_flat"}],  # BTN805: never
        "stop": [{"hooks": _hook("stop_lowercase")}],  # BTN802: never
        "UserPromptSubmit": [{"matcher": "nothing-matches", "hooks": _hook("prompt")}],
        "SessionStart": [{"hooks": [{"type": "shell", "command": "touch MARK/shell"}]},
                         {"hooks": _hook("session")}],
    }}
    ran, codes = _run(tmp_path, json.dumps(settings, indent=2))
    assert ran == {"stop_with_matcher", "prompt", "session"}
    assert {"BTN802", "BTN803", "BTN805"} <= codes


def test_a_settings_file_with_a_comment_is_not_applied(tmp_path: Path) -> None:
    text = "// project hooks\n" + json.dumps({"hooks": {"Stop": [{"hooks": _hook("stop")}]}})
    ran, codes = _run(tmp_path, text)
    assert ran == set()
    assert "BTN801" in codes
    ran, codes = _run(tmp_path / "plain", text.split("\n", 1)[1])
    assert ran == {"stop"} and not codes


def test_a_matcher_in_permission_rule_syntax_never_matches(tmp_path: Path) -> None:
    settings = {"hooks": {"PostToolUse": [
        {"matcher": "Write(*.md)", "hooks": _hook("rule_syntax")},  # BTN808: never
        {"matcher": "Write|Edit", "hooks": _hook("tool_name")},
    ]}}
    notes = tmp_path / "ws" / "notes.md"
    ran, codes = _run(tmp_path, json.dumps(settings), write_then_report(str(notes), "x\n", "OK"))
    assert notes.is_file()
    assert ran == {"tool_name"}
    assert codes == {"BTN808"}


def _guarded_write(tmp_path: Path, script: str) -> tuple[bool, list[str], set[str]]:
    """Run the real binary once with a PreToolUse Write hook running `script`: (whether the
    Write went ahead, the tool results the model was sent, Baton's finding codes)."""
    home, ws = tmp_path / "home", tmp_path / "ws"
    (ws / ".claude/hooks").mkdir(parents=True)
    home.mkdir()
    (ws / ".claude/hooks/guard.sh").write_text(script, encoding="utf-8")
    settings = ws / ".claude/settings.json"
    settings.write_text(json.dumps({"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": "bash .claude/hooks/guard.sh"}]}]}}), encoding="utf-8")
    notes = ws / "notes.md"
    seen: list[str] = []
    inner = write_then_report(str(notes), "x\n", "OK")

    def respond(req: Any) -> Any:
        seen.extend(text_of(r) for r in req.last_tool_results())
        return inner(req)

    with FakeAnthropic(respond) as api:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_BASE_URL": api.url,
               "ANTHROPIC_API_KEY": "test-key", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}
        proc = subprocess.run([CLAUDE, "-p", "--output-format", "stream-json", "--verbose",
                               "--permission-mode", "acceptEdits"],
                              input="hi", capture_output=True, text=True, cwd=ws, env=env,
                              timeout=300, check=False)
        assert not api.errors, api.errors
    assert proc.returncode == 0, proc.stderr[-2000:]
    codes = {f.code for f in check_file(WorkspaceIndex(ws), settings)}
    return notes.is_file(), seen, codes


def test_exit_one_does_not_block_and_exit_two_reads_stderr_only(tmp_path: Path) -> None:
    # BTN810: "BLOCKED" then exit 1 is a non-blocking error: the Write goes ahead
    wrote, _, codes = _guarded_write(
        tmp_path / "one", "#!/bin/bash\ncat >/dev/null\necho 'BLOCKED: notes are frozen'\n"
                          "exit 1\n")
    assert wrote and codes == {"BTN810"}
    # BTN811: exit 2 blocks, but a reason on stdout never reaches the model
    wrote, results, codes = _guarded_write(
        tmp_path / "two", "#!/bin/bash\ncat >/dev/null\necho 'BLOCKED: reason-on-stdout'\n"
                          "exit 2\n")
    assert not wrote and codes == {"BTN811"}
    assert results and not any("reason-on-stdout" in r for r in results), results
    assert any("No stderr output" in r for r in results), results
    # the fix: the same reason on stderr reaches the model, and nothing is reported
    wrote, results, codes = _guarded_write(
        tmp_path / "fixed", "#!/bin/bash\ncat >/dev/null\necho 'BLOCKED: reason-on-stderr' >&2\n"
                            "exit 2\n")
    assert not wrote and codes == set()
    assert any("reason-on-stderr" in r for r in results), results


def test_the_variables_guides_name_are_never_set(tmp_path: Path) -> None:
    # BTN809: the event reaches a hook on stdin; these variables are empty
    probe = ("[ -n \"$CLAUDE_TOOL_INPUT$CLAUDE_FILE_PATHS$TOOL_INPUT$CLAUDE_TOOL_NAME\" ] "
             "&& touch MARK/env_set; grep -q notes.md && touch MARK/stdin_has_path; "
             "[ -n \"$CLAUDE_PROJECT_DIR\" ] && touch MARK/project_dir")
    settings = {"hooks": {"PreToolUse": [{"matcher": "Write", "hooks": [
        {"type": "command", "command": probe}]}]}}
    notes = tmp_path / "ws" / "notes.md"
    ran, codes = _run(tmp_path, json.dumps(settings), write_then_report(str(notes), "x\n", "OK"))
    assert ran == {"stdin_has_path", "project_dir"}
    assert codes == {"BTN809"}


def test_a_matcher_of_exact_names_is_case_sensitive(tmp_path: Path) -> None:
    # BTN813: `write` and a bare name match no tool; `Write` does
    settings = {"hooks": {"PreToolUse": [
        {"matcher": "write|thinkdeep", "hooks": _hook("lower_case")},
        {"matcher": "Write", "hooks": _hook("exact")}]}}
    notes = tmp_path / "ws" / "notes.md"
    ran, codes = _run(tmp_path, json.dumps(settings), write_then_report(str(notes), "x\n", "OK"))
    assert notes.is_file()
    assert ran == {"exact"}
    assert codes == {"BTN813"}

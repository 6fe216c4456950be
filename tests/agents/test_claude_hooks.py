"""The real `claude -p` (2.1.331) against `FakeAnthropic`: which project-settings hooks run.

Each hook touches its own marker file, so what ran is read off the disk. Baton's settings
rules (BTN801-BTN805) predict it: a hook under an event name Claude Code lacks (BTN802), of
an unknown `type` or written without its matcher group (BTN805), or in a settings file that
is not JSON (BTN801) never runs, while its well-formed siblings do; a matcher on `Stop` or
`UserPromptSubmit` (BTN803) filters nothing, so that hook runs anyway; a tool matcher in
permission-rule syntax (BTN808) never matches.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic, Responder, reply_text, write_then_report

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

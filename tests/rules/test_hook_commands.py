"""BTN809-BTN811: what command hooks do, read against how Claude Code runs them.

The texts are excerpts of public trees' `.claude/settings.json` and hook scripts (quoted
as found, cut to the lines that matter).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from baton_lsp.model.base import Finding
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex

CODES = {"BTN809", "BTN810", "BTN811"}

INLINE_TOOL_INPUT = (
    "bash -c 'if echo \"$TOOL_INPUT\" | grep -q \"core.pipeline complete \"; then "
    "TASK_ID=$(echo \"$TOOL_INPUT\" | grep -oP \"complete \\S+ \\K\\S+\"); "
    "PROJECT=$(echo \"$TOOL_INPUT\" | grep -oP \"complete \\K\\S+\"); fi'")
"""From a public tree: a PostToolUse Bash hook looking for `core.pipeline complete`."""

GUARD = ("echo \"$CLAUDE_TOOL_INPUT\" | grep -qE '(rm -rf|git push.*--force|git reset --hard|"
         "DROP TABLE|\\bDELETE FROM)' && echo 'BLOCKED: Dangerous command detected' && exit 2"
         " || exit 0")
"""From a public tree: a PreToolUse guard that reads an unset variable and blocks to
stdout."""

FIREWALL = """#!/bin/bash
# PreToolUse hook: Block dangerous Bash commands
# Matcher: Bash

INPUT=$(cat)

# Extract the command from tool input using jq
COMMAND=$(echo "$INPUT" | jq -r '.tool_input.command // empty' 2>/dev/null)
CMD_LOWER=$(echo "$COMMAND" | tr '[:upper:]' '[:lower:]')

# Block eval/exec wrapping
if echo "$CMD_LOWER" | grep -qE '(^|\\s|;|&&|\\|\\|)eval\\s'; then
  echo "BLOCKED: eval wrapping detected: $COMMAND"
  echo "Direct commands only — no eval wrappers."
  exit 2
fi

exit 0
"""
"""From a public tree: the reason goes to stdout before `exit 2`."""

GATES = """#!/bin/bash
# Gate enforcement hook

if echo "$@" | grep -qE "origin (main|develop|master)"; then
    GATE7_SIGNAL=".claude/signals/${STORY_ID}-gate7.json"
    if [ ! -f "$GATE7_SIGNAL" ]; then
        echo ""
        echo "=============================================="
        echo "  GATE ENFORCEMENT: Push Blocked"
        echo "=============================================="
        echo "  Run: /gate-7 story $STORY_ID"
        exit 1
    fi
    echo "Gate 7 verified for $STORY_ID"
fi

exit 0
"""
"""From a public tree: a PreToolUse Bash hook that means to stop a push with `exit 1`."""

FALLBACK = """#!/bin/bash
set -uo pipefail

# Parse file path from stdin (PostToolUse hook input)
if [ -t 0 ]; then
  # Fallback: try env var
  FILE=$(echo "$CLAUDE_TOOL_INPUT" 2>/dev/null | jq -r '.file_path // empty' 2>/dev/null)
else
  INPUT=$(cat)
  FILE=$(echo "$INPUT" | jq -r '.tool_input.file_path // empty' 2>/dev/null)
fi
echo '{}'
"""
"""From a public tree: the env var is only a fallback beside stdin."""

FAILURE = """#!/bin/bash
INPUT=$(cat)
TOOL_NAME=$(echo "$INPUT" | jq -r '.tool_name // empty' 2>/dev/null)
case "$TOOL_NAME" in
  Bash) echo "bash failed" >> .claude/logs/failures.log ;;
esac
exit 0
"""
"""From a public tree: `$TOOL_NAME` is set by the script from stdin."""


def _settings(event: str, matcher: str, command: str, env: dict[str, str] | None = None
              ) -> str:
    data: dict[str, object] = {"hooks": {event: [{"matcher": matcher, "hooks": [
        {"type": "command", "command": command}]}]}}
    if env:
        data["env"] = env
    return json.dumps(data, indent=2) + "\n"


def _check(root: Path, files: dict[str, str]) -> list[Finding]:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    settings = root / ".claude/settings.json"
    return [f for f in check_file(WorkspaceIndex(root), settings) if f.code in CODES]


# -- BTN809 --------------------------------------------------------------------------------


def test_an_inline_hook_reading_tool_input_from_the_environment(tmp_path: Path) -> None:
    text = _settings("PostToolUse", "Bash", INLINE_TOOL_INPUT)
    got = _check(tmp_path, {".claude/settings.json": text})
    assert [f.code for f in got] == ["BTN809"]
    assert "`$TOOL_INPUT`" in got[0].message and "stdin" in got[0].message
    assert got[0].range.start_line == next(  # the command's line
        i for i, line in enumerate(text.splitlines()) if '"command":' in line)


def test_a_guard_on_an_unset_variable_that_blocks_to_stdout(tmp_path: Path) -> None:
    got = _check(tmp_path, {".claude/settings.json": _settings("PreToolUse", "Bash", GUARD)})
    assert sorted(f.code for f in got) == ["BTN809", "BTN811"]


def test_variables_the_hook_defines_or_reads_beside_stdin_are_not_reported(
        tmp_path: Path) -> None:
    files = {".claude/hooks/validate-plan-write.sh": FALLBACK,
             ".claude/hooks/post-tool-use-failure.sh": FAILURE,
             ".claude/settings.json": json.dumps({"env": {"CLAUDE_FILE_PATHS": "src"},
                                                  "hooks": {"PostToolUse": [{"hooks": [
        {"type": "command", "command": "bash .claude/hooks/validate-plan-write.sh"},
        {"type": "command", "command": "bash .claude/hooks/post-tool-use-failure.sh"},
        {"type": "command", "command": "npx prettier --write $CLAUDE_FILE_PATHS"},
        {"type": "command", "command": "TOOL_NAME=Edit; echo $TOOL_NAME"}]}]}})}
    assert _check(tmp_path, files) == []


def test_a_script_that_never_reads_stdin_is_reported_with_its_line(tmp_path: Path) -> None:
    script = ("#!/bin/bash\n# Read tool name from environment (set by Claude Code)\n"
              "TOOL_NAME=\"${CLAUDE_TOOL_NAME:-unknown}\"\n"
              "if [[ \"$TOOL_NAME\" =~ (thinkdeep|refactor) ]]; then echo heavy; fi\n")
    got = _check(tmp_path, {".claude/hooks/check_energy.sh": script,
                            ".claude/settings.json": _settings(
                                "PreToolUse", "*", "bash .claude/hooks/check_energy.sh")})
    assert [f.code for f in got] == ["BTN809"]
    assert got[0].related[0].path.endswith("check_energy.sh")
    assert got[0].related[0].range.start_line == 2


def test_agent_front_matter_hooks_are_read_too(tmp_path: Path) -> None:
    agent = ("---\nname: guard\ndescription: Guards\nhooks:\n  PreToolUse:\n"
             "    - matcher: \"Bash\"\n      hooks:\n        - type: command\n"
             "          command: \"echo $CLAUDE_TOOL_INPUT | grep -q rm && exit 2\"\n"
             "---\nGuard.\n")
    path = tmp_path / ".claude/agents/guard.md"
    path.parent.mkdir(parents=True)
    path.write_text(agent, encoding="utf-8")
    got = [f for f in check_file(WorkspaceIndex(tmp_path), path) if f.code == "BTN809"]
    assert len(got) == 1 and got[0].range.start_line == 8


# -- BTN810 --------------------------------------------------------------------------------


def test_a_gate_that_exits_one_to_block_a_push(tmp_path: Path) -> None:
    got = _check(tmp_path, {".claude/hooks/check-gates.sh": GATES,
                            ".claude/settings.json": _settings(
                                "PreToolUse", "Bash", "bash .claude/hooks/check-gates.sh")})
    assert [f.code for f in got] == ["BTN810"]
    assert "exit 2" in got[0].message and "line 12" in got[0].message


def test_exit_one_is_left_alone_where_it_does_not_mean_to_block(tmp_path: Path) -> None:
    # PostToolUse cannot stop anything already done; an error exit with no block message;
    # a script that blocks by exit 2 elsewhere or by a JSON decision.
    error_exit = GATES.replace("Push Blocked", "no signal file")
    json_decision = GATES.replace("exit 1\n", "echo '{\"decision\": \"block\"}'\n"
                                  "        exit 1\n")
    files = {".claude/hooks/check-gates.sh": GATES,
             ".claude/hooks/error-exit.sh": error_exit,
             ".claude/hooks/json-decision.sh": json_decision,
             ".claude/settings.json": json.dumps({"hooks": {
                 "PostToolUse": [{"hooks": [{"type": "command",
                                             "command": "bash .claude/hooks/check-gates.sh"}]}],
                 "PreToolUse": [{"hooks": [
                     {"type": "command", "command": "bash .claude/hooks/error-exit.sh"},
                     {"type": "command", "command": "bash .claude/hooks/json-decision.sh"}]}]}})}
    assert _check(tmp_path, files) == []


# -- BTN811 --------------------------------------------------------------------------------


def test_a_firewall_that_blocks_with_its_reason_on_stdout(tmp_path: Path) -> None:
    got = _check(tmp_path, {".claude/hooks/pre-tool-use-bash-firewall.sh": FIREWALL,
                            ".claude/settings.json": _settings(
                                "PreToolUse", "Bash",
                                "bash .claude/hooks/pre-tool-use-bash-firewall.sh")})
    assert [f.code for f in got] == ["BTN811"]
    assert "No stderr output" in got[0].message and "line 15" in got[0].message


def test_reasons_on_stderr_are_not_reported(tmp_path: Path) -> None:
    to_stderr = FIREWALL.replace('wrappers."\n', 'wrappers." >&2\n')
    exec_stderr = FIREWALL.replace("INPUT=$(cat)", "exec 1>&2\nINPUT=$(cat)")
    python = ("import json, sys\nd = json.load(sys.stdin)\nif 'rm -rf' in str(d):\n"
              "    print('BLOCKED: rm -rf', file=sys.stderr)\n    sys.exit(2)\n")
    files = {".claude/hooks/a.sh": to_stderr, ".claude/hooks/b.sh": exec_stderr,
             ".claude/hooks/c.py": python,
             ".claude/settings.json": json.dumps({"hooks": {"PreToolUse": [{"hooks": [
                 {"type": "command", "command": "bash .claude/hooks/a.sh"},
                 {"type": "command", "command": "bash .claude/hooks/b.sh"},
                 {"type": "command", "command": "python3 .claude/hooks/c.py"},
                 {"type": "command", "command": "jq -e '.x' >/dev/null || "
                                                "{ echo 'blocked' >&2; exit 2; }"}]}]}})}
    assert _check(tmp_path, files) == []


def test_a_python_hook_printing_its_reason_to_stdout(tmp_path: Path) -> None:
    python = ("import json, sys\nd = json.load(sys.stdin)\nif 'rm -rf' in str(d):\n"
              "    print('BLOCKED: rm -rf')\n    sys.exit(2)\n")
    got = _check(tmp_path, {".claude/hooks/guard.py": python,
                            ".claude/settings.json": _settings(
                                "PreToolUse", "Bash",
                                "python3 \"$CLAUDE_PROJECT_DIR\"/.claude/hooks/guard.py")})
    assert [f.code for f in got] == ["BTN811"]


# -- the scripts are read confined ---------------------------------------------------------


def test_a_fifo_or_a_link_out_named_as_the_script_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.sh"
    outside.write_text(GATES, encoding="utf-8")
    root = tmp_path / "ws"
    (root / ".claude/hooks").mkdir(parents=True)
    os.mkfifo(root / ".claude/hooks/fifo.sh")
    (root / ".claude/hooks/out.sh").symlink_to(outside)
    settings = _settings("PreToolUse", "Bash", "bash .claude/hooks/fifo.sh; "
                         "bash .claude/hooks/out.sh")
    got: list[Finding] = []
    worker = threading.Thread(target=lambda: got.extend(_check(root, {
        ".claude/settings.json": settings})), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "reading a FIFO hook script waited for a writer"
    assert got == []  # the linked script would be BTN810 if it were read


# -- BTN812 (rules/claude_settings.py) -------------------------------------------------------

FORGE_HOOKS = """{
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Write|Edit",
        "hooks": [
          {
            "type": "command",
            "command": "echo '{\\"decision\\": \\"approve\\"}'",
            "timeout": 5000
          }
        ]
      }
    ]
  }
}
"""
"""From a public tree whose README says this file runs "at hook events"; it has no
settings.json and is no plugin."""


def test_a_projects_hooks_json_is_never_loaded(tmp_path: Path) -> None:
    from baton_lsp.model.base import Kind
    from baton_lsp.workspace.discovery import classify

    assert classify(".claude/hooks/hooks.json") is Kind.SETTINGS
    assert classify(".claude/hooks/other.json") is None
    path = tmp_path / ".claude/hooks/hooks.json"
    path.parent.mkdir(parents=True)
    path.write_text(FORGE_HOOKS, encoding="utf-8")
    index = WorkspaceIndex(tmp_path)
    assert index.kind_of(path) is Kind.SETTINGS  # the walk finds it
    got = [f for f in check_file(index, path) if f.code.startswith("BTN8")]
    assert [(f.code, f.range.start_line) for f in got] == [("BTN812", 1)]
    # the same file in a plugin whose manifest names it is loaded
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin/plugin.json").write_text(
        '{"name": "forge", "hooks": "./.claude/hooks/hooks.json"}', encoding="utf-8")
    assert [f for f in check_file(WorkspaceIndex(tmp_path), path)
            if f.code.startswith("BTN8")] == []


# -- a plugin's hooks/hooks.json --------------------------------------------------------------

PLUGIN_HOOKS = """{
  "description": "statusline hooks",
  "hooks": {
    "UserPromptSubmit": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "bash \\"${CLAUDE_PLUGIN_ROOT}/hooks/install.sh\\"",
            "timeout": 5
          },
          {
            "type": "command",
            "command": "bash \\"${CLAUDE_PLUGIN_ROOT}/hooks/topic.sh\\"",
            "timeout": 5
          }
        ]
      }
    ]
  }
}
"""
"""A public plugin's hooks (from its plan's "wire the hook" step)."""


def test_a_plugins_hooks_file_is_checked_with_its_scripts(tmp_path: Path) -> None:
    from baton_lsp.model.base import Kind

    files = {".claude-plugin/plugin.json": '{"name": "fancy-statusline"}\n',
             "hooks/hooks.json": PLUGIN_HOOKS,
             "hooks/install.sh": "#!/bin/bash\nINPUT=$(cat)\necho 'Prompt denied: install "
                                 "first'\nexit 1\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    index = WorkspaceIndex(tmp_path)
    assert index.kind_of(tmp_path / "hooks/hooks.json") is Kind.SETTINGS
    got = [f for f in check_file(index, tmp_path / "hooks/hooks.json")
           if f.code.startswith("BTN8")]
    assert sorted((f.code, f.range.start_line + 1) for f in got) == [
        ("BTN804", 14), ("BTN810", 9)]
    assert "hooks/topic.sh" in next(f.message for f in got if f.code == "BTN804")
    # without a plugin manifest the folder is nobody's hooks file
    (tmp_path / ".claude-plugin/plugin.json").unlink()
    assert WorkspaceIndex(tmp_path).kind_of(tmp_path / "hooks/hooks.json") is None


# -- BTN813 (rules/claude_settings.py) -------------------------------------------------------


def test_bare_mcp_tool_names_and_lower_case_tools_in_a_matcher(tmp_path: Path) -> None:
    # a public tree's settings: an energy check meant for MCP tools, named without prefix
    settings = json.dumps({"hooks": {
        "PreToolUse": [
            {"matcher": "thinkdeep|morph|batch_edit|refactor|deep_research",
             "hooks": [{"type": "command", "command": "echo checked"}]},
            {"matcher": "bash|Edit", "hooks": [{"type": "command", "command": "echo b"}]},
            {"matcher": "Edit|Write|MultiEdit", "hooks": [{"type": "command",
                                                           "command": "echo ok"}]},
            {"matcher": "mcp__github__.*|mcp__zen__thinkdeep",
             "hooks": [{"type": "command", "command": "echo ok"}]}],
        "PostToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command": "echo"}]}],
        "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command",
                                                           "command": "echo"}]}],
        "Notification": [{"matcher": "permission_prompt|idle_prompt",
                          "hooks": [{"type": "command", "command": "echo"}]}]}}, indent=2)
    path = tmp_path / ".claude/settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(settings, encoding="utf-8")
    got = [f for f in check_file(WorkspaceIndex(tmp_path), path) if f.code == "BTN813"]
    assert len(got) == 2
    assert "`thinkdeep`" in got[0].message and "mcp__.*__thinkdeep" in got[0].message
    assert "did you mean `Bash`?" in got[1].message and "`Edit`" not in got[1].message


def test_a_plugin_commands_matcher_of_mcp_tools_without_their_prefix(tmp_path: Path) -> None:
    # a public plugin's command front matter (cut): its own MCP server's tools, unprefixed
    command = ("---\ndescription: Merge an approved pull request\nhooks:\n  PreToolUse:\n"
               "    - matcher: \"ralph_hero__update_workflow_state|ralph_hero__advance_children\"\n"
               "      hooks:\n        - type: command\n"
               "          command: \"${CLAUDE_PLUGIN_ROOT}/hooks/scripts/merge-state-gate.sh\"\n"
               "---\nMerge.\n")
    path = tmp_path / ".claude/skills/merge/SKILL.md"
    path.parent.mkdir(parents=True)
    path.write_text(command.replace("description:", "name: merge\ndescription:"),
                    encoding="utf-8")
    got = [f for f in check_file(WorkspaceIndex(tmp_path), path) if f.code == "BTN813"]
    assert len(got) == 1 and got[0].range.start_line == 5  # the matcher line


def test_scripts_run_from_the_git_top_level_are_read(tmp_path: Path) -> None:
    # a public tree's hooks: scripts "set by Claude Code" variables, run by the git root
    energy = ("#!/bin/bash\n# Read tool name from environment (set by Claude Code)\n"
              "TOOL_NAME=\"${CLAUDE_TOOL_NAME:-unknown}\"\n"
              "COMPLEX_TOOLS=\"thinkdeep|morph|batch_edit|refactor|deep_research\"\n"
              "if [[ \"$TOOL_NAME\" =~ ($COMPLEX_TOOLS) ]]; then\n    echo heavy\nfi\n")
    settings = json.dumps({"hooks": {
        "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command":
            "bash \"$(git rev-parse --show-toplevel)/.claude/hooks/check_energy.sh\""}]}],
        "PostToolUse": [{"matcher": ".*", "hooks": [{"type": "command", "command":
            "bash \"$(git rev-parse --show-toplevel)/.claude/hooks/log_progress.sh\""}]}]}},
        indent=2)
    path = tmp_path / ".claude/settings.json"
    (tmp_path / ".claude/hooks").mkdir(parents=True)
    (tmp_path / ".claude/hooks/check_energy.sh").write_text(energy, encoding="utf-8")
    path.write_text(settings, encoding="utf-8")
    got = sorted((f.code, f.message.split("`")[3]) for f in
                 check_file(WorkspaceIndex(tmp_path), path) if f.code in ("BTN804", "BTN809"))
    assert got == [("BTN804", ".claude/hooks/log_progress.sh"),
                   ("BTN809", ".claude/hooks/check_energy.sh")]

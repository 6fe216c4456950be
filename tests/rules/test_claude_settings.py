"""BTN801-BTN808 and BTN812-BTN814:
Claude Code settings files and the hooks of settings, agents and skills.

The texts are excerpts of real trees: the seeds' author's `.claude/settings.json` (copied
between several of his repositories) and agent and settings files from public trees.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

from baton_lsp.model.base import Finding, Kind
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.discovery import classify
from baton_lsp.workspace.index import WorkspaceIndex

CODES = {f"BTN80{n}" for n in range(1, 9)} | {"BTN814"}

AUTHOR_SETTINGS = """{
  "permissions": {
    "allow": [
      "Bash(git:*)",
      "Bash(lake *)",
      "Bash(chmod +x *)",
      "Read",
      "Write",
      "Edit",
      "Task",
      "TaskCreate",
      "Skill",
      "mcp__lean-lsp__*"
    ],
    "deny": [
      "Bash(rm -rf /)",
      "Bash(sudo *)"
    ]
  },
  "hooks": {
    "SessionStart": [
      {
        "matcher": "startup",
        "hooks": [
          {
            "type": "command",
            "command": "bash .claude/hooks/log-session.sh 2>/dev/null || echo '{}'"
          },
          {
            "type": "command",
            "command": "bash scripts/claude-ready-signal.sh 2>/dev/null || echo '{}'"
          }
        ]
      }
    ],
    "Stop": [
      {
        "matcher": "*",
        "hooks": [
          {
            "type": "command",
            "command": "bash .claude/hooks/post-command.sh 2>/dev/null || echo '{}'"
          },
          {
            "type": "command",
            "command": "bash .claude/hooks/claude-stop-notify.sh 2>/dev/null || echo '{}'"
          }
        ]
      }
    ],
    "Notification": [
      {
        "matcher": "permission_prompt|elicitation_dialog",
        "hooks": [
          {
            "type": "command",
            "command": "bash .claude/hooks/tts-notify.sh 2>/dev/null || echo '{}'"
          }
        ]
      }
    ]
  }
}
"""
"""The author's settings: `claude-stop-notify.sh` and `scripts/claude-ready-signal.sh` are
missing from the repositories the file was copied into."""

NAVIGATION_AGENT = """---
name: navigation-guardian
description: Detects navigation anti-patterns, Navigation 3 issues. Use AFTER implementation.
tools: Read, Grep, Glob, Bash(git diff:*)
model: sonnet
hooks:
  post_tool_use:
    - tool: Grep
      script: |
        echo "Check complete. Review findings for navigation anti-patterns."
---

# Android Navigation Guardian
"""
"""A public tree's agent: snake_case events, as another tool spells them."""

BUILDER_AGENT = """---
name: item-processing-builder
description: Build Item Processing Panel from Stitch design
model: sonnet
hooks:
  post_tool_use:
    write:
      - command: "npm run lint -- {{file_path}}"
        description: "Lint TypeScript files"
  on_stop:
    - command: "npm run build"
---

Build it.
"""

EXAMPLE_AGENT = """---
name: example-agent
description: Example agent showing the Claude Code native format with all available fields
model: sonnet
tools: Read, Grep, Glob, Bash
hooks:
  PreToolUse:
    - matcher: "Bash"
      hooks:
        - type: command
          command: "./scripts/validate-command.sh"
  Stop:
    - type: command
      command: "./scripts/cleanup.sh"
---

Example.
"""
"""A public tree's agent: the `Stop` hook is written without its matcher group."""

GUARD_AGENT = """---
name: test-writer
description: Writes tests. Never writes implementation code.
model: sonnet
tools: Read, Edit, Write, Bash, Grep, Glob, Skill
hooks:
  PreToolUse:
    - matcher: "Edit|Write"
      hooks:
        - type: command
          command: "bash \\"$CLAUDE_PROJECT_DIR\\"/.claude/hooks/guard-allowed-paths.sh test-writer"
  PostToolUse:
    - matcher: "Bash"
      hooks:
        - type: command
          command: "${CLAUDE_PLUGIN_ROOT}/lib/validate-ci-bash.py"
        - type: command
          command: python3 "${CLAUDE_PROJECT_DIR:-.}/tools/hooks/no-build.py"
        - type: command
          command: "~/.claude/hooks/write-safety.sh"
        - type: command
          command: "node .claude/hooks/dist/check-bash.js"
        - type: command
          command: "cd web && ./scripts/lint-changed.sh"
---

Write tests.
"""


def _check(root: Path, rel: str, text: str) -> list[Finding]:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return [f for f in check_file(WorkspaceIndex(root), path) if f.code in CODES]


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines()) if needle in line)


def _apply(text: str, f: Finding) -> str:
    assert f.fix is not None
    lines = text.splitlines(keepends=True)
    for edit in f.fix.edits:
        r = edit.range
        assert r.start_line == r.end_line
        line = lines[r.start_line]
        lines[r.start_line] = line[:r.start_char] + edit.new_text + line[r.end_char:]
    return "".join(lines)


# -- the file kind -----------------------------------------------------------------------


def test_settings_files_are_their_own_kind() -> None:
    assert classify(".claude/settings.json") is Kind.SETTINGS
    assert classify(".claude/settings.local.json") is Kind.SETTINGS
    assert classify(".claude/hooks/settings.json") is None
    assert classify("settings.json") is None
    assert WorkspaceIndex  # the index walks them with every other kind (below)


def test_a_walk_finds_the_settings(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude/settings.json").write_text("{}", encoding="utf-8")
    (tmp_path / ".claude/settings.local.json").write_text("{}", encoding="utf-8")
    index = WorkspaceIndex(tmp_path)
    kinds = {p.name: index.kind_of(p) for p in (tmp_path / ".claude").iterdir()}
    assert kinds == {"settings.json": Kind.SETTINGS, "settings.local.json": Kind.SETTINGS}


def test_a_fifo_settings_file_is_reported_unread_without_waiting(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    fifo = tmp_path / ".claude/settings.json"
    os.mkfifo(fifo)
    got: list[Finding] = []
    worker = threading.Thread(target=lambda: got.extend(check_file(WorkspaceIndex(tmp_path),
                                                                   fifo)), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "checking a FIFO settings file waited for a writer"
    assert [f.code for f in got] == ["BTN400"]


def test_a_settings_link_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"hooks": {"preToolUse": []}}', encoding="utf-8")
    root = tmp_path / "ws"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude/settings.json").symlink_to(outside)
    got = check_file(WorkspaceIndex(root), root / ".claude/settings.json")
    assert [f.code for f in got] == ["BTN400"]


# -- BTN801 -------------------------------------------------------------------------------


def test_invalid_json_is_one_finding_at_the_error(tmp_path: Path) -> None:
    text = AUTHOR_SETTINGS.replace('"mcp__lean-lsp__*"', '"mcp__lean-lsp__*",')
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [f.code for f in got] == ["BTN801"]
    assert got[0].range.start_line == _line(text, '"mcp__lean-lsp__*",') + 1  # the `]`
    assert "cannot parse" in got[0].message


def test_empty_settings_and_a_non_object(tmp_path: Path) -> None:
    assert _check(tmp_path, ".claude/settings.local.json", "\n") == []
    got = _check(tmp_path, ".claude/settings.json", '["Read"]\n')
    assert [f.code for f in got] == ["BTN801"]


def test_the_authors_settings_pass_where_their_scripts_exist(tmp_path: Path) -> None:
    for rel in (".claude/hooks/log-session.sh", ".claude/hooks/post-command.sh",
                ".claude/hooks/claude-stop-notify.sh", ".claude/hooks/tts-notify.sh",
                "scripts/claude-ready-signal.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("#!/bin/bash\necho '{}'\n", encoding="utf-8")
    assert _check(tmp_path, ".claude/settings.json", AUTHOR_SETTINGS) == []


# -- BTN802 -------------------------------------------------------------------------------


def test_snake_case_event_in_agent_front_matter(tmp_path: Path) -> None:
    got = _check(tmp_path, ".claude/agents/navigation-guardian.md", NAVIGATION_AGENT)
    unknown = [f for f in got if f.code == "BTN802"]
    assert len(unknown) == 1
    f = unknown[0]
    assert f.range.start_line == _line(NAVIGATION_AGENT, "post_tool_use")
    assert "`post_tool_use`" in f.message and "`PostToolUse`" in f.message
    fixed = _apply(NAVIGATION_AGENT, f)
    assert "  PostToolUse:\n" in fixed and "post_tool_use" not in fixed


def test_far_event_names_get_a_hint_but_no_fix(tmp_path: Path) -> None:
    got = [f for f in _check(tmp_path, ".claude/agents/builder.md", BUILDER_AGENT)
           if f.code == "BTN802"]
    by_line = {f.range.start_line: f for f in got}
    stop = by_line[_line(BUILDER_AGENT, "on_stop")]
    assert "`Stop`" in stop.message and stop.fix is None
    assert by_line[_line(BUILDER_AGENT, "post_tool_use")].fix is not None


def test_event_case_in_settings_is_fixed_with_its_quotes(tmp_path: Path) -> None:
    text = ('{\n  "hooks": {\n    "preToolUse": [{"matcher": "Bash", "hooks": '
            '[{"type": "command", "command": "echo ok"}]}]\n  }\n}\n')
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [f.code for f in got] == ["BTN802"]
    fixed = _apply(text, got[0])
    assert json.loads(fixed)["hooks"].keys() == {"PreToolUse"}
    assert _check(tmp_path, ".claude/settings.json", fixed) == []


CUSTOM_SCHEME_AGENT = """---
name: slideworks-builder
description: Production engineer for consulting-quality PPTX
model: claude-sonnet-4-6
tools: [Read, Write, Edit, Bash, Grep, Glob]
guardrails:
  input: ["required_fields: task, context"]
memory:
  type: session
  scope: department
hooks:
  on_start: validate_input
  on_complete: emit_trace
  on_error: escalate_to_supervisor
---

# Identity
"""
"""A public tree's agent (one of dozens alike): lifecycle names Claude Code does not have."""


def test_lifecycle_names_are_reported_without_guessing_an_event(tmp_path: Path) -> None:
    got = _check(tmp_path, ".claude/agents/slideworks-builder.md", CUSTOM_SCHEME_AGENT)
    assert [(f.code, f.range.start_line) for f in got] == [
        ("BTN802", _line(CUSTOM_SCHEME_AGENT, name)) for name in
        ("on_start", "on_complete", "on_error")]
    assert not any("did you mean" in f.message or f.fix for f in got)


def test_skill_front_matter_hooks_are_read(tmp_path: Path) -> None:
    skill = NAVIGATION_AGENT.replace("name: navigation-guardian", "name: nav")
    got = _check(tmp_path, ".claude/skills/nav/SKILL.md", skill)
    assert "BTN802" in {f.code for f in got}


# -- BTN803 -------------------------------------------------------------------------------


def test_matcher_on_stop(tmp_path: Path) -> None:
    text = AUTHOR_SETTINGS.replace('"matcher": "*"', '"matcher": "Bash"')
    for rel in (".claude/hooks/log-session.sh", ".claude/hooks/post-command.sh",
                ".claude/hooks/claude-stop-notify.sh", ".claude/hooks/tts-notify.sh",
                "scripts/claude-ready-signal.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("#!/bin/bash\n", encoding="utf-8")
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [f.code for f in got] == ["BTN803"]
    assert got[0].range.start_line == _line(text, '"matcher": "Bash"')
    assert "`Stop`" in got[0].message


def test_stop_in_agent_front_matter_is_subagent_stop(tmp_path: Path) -> None:
    """Claude Code registers an agent's `Stop` hooks as `SubagentStop`, which has a matcher
    (the agent type); a skill's `Stop` stays `Stop`."""
    agent = ("---\nname: reviewer\ndescription: Reviews\nhooks:\n  Stop:\n"
             "    - matcher: reviewer\n      hooks:\n        - type: command\n"
             "          command: echo done\n---\nReview.\n")
    assert _check(tmp_path, ".claude/agents/reviewer.md", agent) == []
    got = _check(tmp_path, ".claude/skills/reviewer/SKILL.md", agent)
    assert [f.code for f in got] == ["BTN803"]


# -- BTN808 -------------------------------------------------------------------------------


def test_matchers_in_permission_rule_syntax(tmp_path: Path) -> None:
    """Matchers from public trees' settings and docs (`Write(*.ts)|Edit(*.ts)`,
    `Write(.claude/**)`, `Write(*.test.js)`), beside regexes over tool names."""
    groups = [{"matcher": m, "hooks": [{"type": "command", "command": "true"}]} for m in (
        "Write(*.ts)|Edit(*.ts)", "Write(.claude/**)", "Write(*.test.js)", "Bash(git commit:*)",
        "Notebook(Edit|Read)", "Edit|Write", "mcp__github__.*", "Write")]
    text = json.dumps({"hooks": {"PostToolUse": groups,
                                 "SessionStart": [{"matcher": "Bash(x y)", "hooks": []}]}},
                      indent=2)
    got = _check(tmp_path, ".claude/settings.json", text)
    assert sorted((f.code, f.range.start_line) for f in got) == [
        ("BTN808", _line(text, m)) for m in ('"Write(*.ts)|Edit(*.ts)"', '"Write(.claude/**)"',
                                             '"Write(*.test.js)"', '"Bash(git commit:*)"')]
    assert "`if`" in got[0].message


# -- BTN804 -------------------------------------------------------------------------------


def test_missing_hook_scripts_of_the_copied_settings(tmp_path: Path) -> None:
    for rel in (".claude/hooks/log-session.sh", ".claude/hooks/post-command.sh",
                ".claude/hooks/tts-notify.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("#!/bin/bash\n", encoding="utf-8")
    got = _check(tmp_path, ".claude/settings.json", AUTHOR_SETTINGS)
    assert {(f.code, f.range.start_line) for f in got} == {
        ("BTN804", _line(AUTHOR_SETTINGS, "claude-ready-signal.sh")),
        ("BTN804", _line(AUTHOR_SETTINGS, "claude-stop-notify.sh")),
    }


def test_project_dir_forms_and_paths_not_looked_at(tmp_path: Path) -> None:
    got = _check(tmp_path, ".claude/agents/test-writer.md", GUARD_AGENT)
    assert sorted((f.code, f.range.start_line) for f in got) == [
        ("BTN804", _line(GUARD_AGENT, "guard-allowed-paths.sh")),
        ("BTN804", _line(GUARD_AGENT, "no-build.py")),
    ]
    for rel in (".claude/hooks/guard-allowed-paths.sh", "tools/hooks/no-build.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("#!/bin/bash\n", encoding="utf-8")
    assert _check(tmp_path, ".claude/agents/test-writer.md", GUARD_AGENT) == []


# -- BTN805 -------------------------------------------------------------------------------


def test_hook_written_without_its_matcher_group(tmp_path: Path) -> None:
    for rel in ("scripts/validate-command.sh", "scripts/cleanup.sh"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("#!/bin/bash\n", encoding="utf-8")
    got = _check(tmp_path, ".claude/agents/example-agent.md", EXAMPLE_AGENT)
    assert [f.code for f in got] == ["BTN805"]
    assert got[0].range.start_line == _line(EXAMPLE_AGENT, "  Stop:")
    assert "no `hooks` list" in got[0].message


def test_hook_without_a_type(tmp_path: Path) -> None:
    text = ('{\n  "hooks": {\n    "PreToolUse": [\n      {\n        "matcher": "Write",\n'
            '        "hooks": [{\n          "command": "python scripts/validate_framework.py",'
            '\n          "timeout": 60\n        }]\n      }\n    ]\n  }\n}\n')
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/validate_framework.py").write_text("", encoding="utf-8")
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [f.code for f in got] == ["BTN805"]
    assert "no `type`" in got[0].message


# -- BTN806 / BTN807 ---------------------------------------------------------------------


def test_write_path_rules_are_never_consulted(tmp_path: Path) -> None:
    text = ('{\n  "permissions": {\n    "allow": [\n      "Write(docs/ARCHITECTURE.md)",\n'
            '      "Write(.swarm/specs/**)",\n      "Edit(docs/PRD.md)",\n      "Write",\n'
            '      "Write(*)",\n      "Glob(src/**)"\n    ]\n  }\n}\n')
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [(f.code, f.range.start_line) for f in got] == [
        ("BTN806", 3), ("BTN806", 4), ("BTN806", 8)]
    fixed = text
    for f in reversed(got):
        fixed = _apply(fixed, f)
    assert json.loads(fixed)["permissions"]["allow"][:2] == [
        "Edit(docs/ARCHITECTURE.md)", "Edit(.swarm/specs/**)"]
    assert "Read(src/**)" in fixed
    assert _check(tmp_path, ".claude/settings.json", fixed) == []


def test_malformed_permission_rules(tmp_path: Path) -> None:
    rules = ["Bash(git log:*", "bash(ls)", "Read()", "mcp__github__get_issue(42)",
             "Bash(:*)", ""]
    good = ["Bash(git log:*)", "mcp__lean-lsp__*", "WebFetch(domain:github.com)",
            "Bash(echo \\(x\\))", "mcp__github", "Read(./secrets/**)"]
    text = json.dumps({"permissions": {"deny": rules, "allow": good}}, indent=2)
    got = _check(tmp_path, ".claude/settings.json", text)
    assert sorted(f.range.start_line for f in got) == sorted(
        [_line(text, json.dumps(r)) for r in rules if r] + [_line(text, '""')])
    assert {f.code for f in got} == {"BTN807"}


# -- BTN814 -----------------------------------------------------------------------------


def test_the_colon_form_names_no_tool(tmp_path: Path) -> None:
    """`Tool:pattern` is read as one tool name, never matched (lines of a public tree's
    settings.json); the fix writes the call form, or the bare tool for `**`/`*`."""
    rules = ["Read:**", "Edit:**", "Bash:npm *", "Bash:ts-node *", "WebFetch:**", "TodoWrite",
             "Task:*"]
    text = json.dumps({"alwaysThinkingEnabled": True,
                       "permissions": {"allow": rules, "deny": [], "ask": []}}, indent=2)
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [(f.code, f.range.start_line) for f in got] == [
        ("BTN814", _line(text, json.dumps(r))) for r in rules if r != "TodoWrite"]
    fixed = text
    for f in reversed(got):
        fixed = _apply(fixed, f)
    assert json.loads(fixed)["permissions"]["allow"] == [
        "Read", "Edit", "Bash(npm *)", "Bash(ts-node *)", "WebFetch", "TodoWrite", "Task"]
    assert _check(tmp_path, ".claude/settings.json", fixed) == []


def test_a_misspelt_tool_name_is_reported_only_when_clear(tmp_path: Path) -> None:
    """The author's rules with one tool misspelt each way; names far from every tool,
    legacy names, MCP tools and wildcards are left alone."""
    bad = ["Bsah(git:*)", "Bassh(lake *)", "Reed", "Webfetch(domain:github.com)",
           "TodoWirte", "Agents(reviewer)"]
    good = ["Bash(git:*)", "Bash(lake *)", "TaskCreate", "KillShell", "Task",
            "mcp__lean-lsp__*", "mcp__nixos__nix", "Deploy", "Notebook", "Lint(*)",
            "ExitPlanMode", "propose_skills"]
    text = json.dumps({"permissions": {"allow": bad + good, "deny": ["*"]}}, indent=2)
    got = _check(tmp_path, ".claude/settings.json", text)
    assert [(f.code, f.range.start_line) for f in got] == [
        ("BTN814", _line(text, json.dumps(r))) for r in bad]
    assert "did you mean `Bash(git:*)`?" in got[0].message
    assert "allows nothing" in got[0].message
    assert "did you mean `Agent(reviewer)`?" in got[-1].message


def test_a_huge_unknown_tool_name_is_not_compared(tmp_path: Path) -> None:
    """A name of a million letters is no misspelling: it is skipped at once, not compared
    letter by letter with every tool (minutes)."""
    text = json.dumps({"permissions": {"allow": ["B" * 1_000_000, "Bsah"]}})
    got: list[Finding] = []
    worker = threading.Thread(target=lambda: got.extend(
        _check(tmp_path, ".claude/settings.json", text)), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "a huge tool name made the check hang"
    assert [f.code for f in got] == ["BTN814"] and "`Bsah`" in got[0].message


def test_a_misspelt_deny_rule_denies_nothing(tmp_path: Path) -> None:
    text = json.dumps({"permissions": {"deny": ["Reed(./.env)", "Bash(sudo *)"]}}, indent=2)
    [found] = _check(tmp_path, ".claude/settings.json", text)
    assert found.code == "BTN814" and "denies nothing" in found.message
    assert "`Read(./.env)`" in found.message


def test_binary_and_nesting_bomb_settings(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    binary = tmp_path / ".claude/settings.json"
    binary.write_bytes(b'{"hooks": {}}\x00\x00\xff')
    assert [f.code for f in check_file(WorkspaceIndex(tmp_path), binary)] == ["BTN400"]
    bomb = '{"hooks": ' + "[" * 200_000 + "]" * 200_000 + "}"
    got = _check(tmp_path, ".claude/settings.local.json", bomb)
    assert [f.code for f in got] == ["BTN801"]
    assert "nests too deeply to read" in got[0].message


def test_a_hostile_hook_command_is_checked_quickly(tmp_path: Path) -> None:
    """Thousands of script paths in one command: each `cd` is looked for once, not once per
    path (this took minutes)."""
    command = " ".join(f"d{i}/s.sh" for i in range(20_000))
    text = json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}})
    got: list[Finding] = []
    worker = threading.Thread(target=lambda: got.extend(
        _check(tmp_path, ".claude/settings.json", text)), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "a long hook command made the check hang"
    assert 0 < len(got) <= 64


def test_many_unknown_events_in_front_matter_are_placed_quickly(tmp_path: Path) -> None:
    events = "".join(f"  on_event_{i}:\n    - hooks: []\n" for i in range(800))
    agent = f"---\nname: a\ndescription: d\nhooks:\n{events}---\nBody.\n"
    got: list[Finding] = []
    worker = threading.Thread(target=lambda: got.extend(
        _check(tmp_path, ".claude/agents/a.md", agent)), daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive()
    assert [f.range.start_line for f in got[:2]] == [4, 6]
    assert len(got) == 800

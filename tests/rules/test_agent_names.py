"""BTN210-BTN212 against the real `claude` (2.1.331): the agents its init event lists are
the agents Baton does not report as unloaded. Texts from public trees."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex
from tests.agents.clis import cli_path
from tests.agents.fake_anthropic import FakeAnthropic, reply_text

CLAUDE = cli_path("claude")

# The seeds' older format (a public tree): `allowed-tools` + `model`, no `name`.
RESEARCH = """---
allowed-tools: Read, Write, Grep, Glob, WebSearch, WebFetch, Bash
description: Specialized in codebase research, best practice investigation, and report file creation
model: sonnet
---

# Research Specialist Agent
"""


def _agent(name: str, description: str) -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n\nWork.\n"


AGENTS = {
    # an installer's two copies of one agent (a public tree's bug report):
    # `gsd-code-reviewer.md` and `gsd-code-reviewer.compact.md` both `name: gsd-code-reviewer`
    "gsd-code-reviewer.compact.md": _agent("gsd-code-reviewer", "Reviews code (compact)"),
    "gsd-code-reviewer.md": _agent("gsd-code-reviewer", "Reviews code"),
    "planner.md": _agent("planner", "Plans"),
    "coder.md": _agent("coder", "Codes"),
    "tester.md": _agent("tester", "Tests"),
    "docs/writer.md": _agent("writer", "Writes docs"),
    "sc-reviewer.md": _agent("sc:reviewer", "Reviews"),
    "dash.md": _agent("-dash", "Dashes"),
    "answer.md": _agent("42", "A number"),
    "research-specialist.md": RESEARCH,
}


def _registered(tmp_path: Path, ws: Path) -> set[str]:
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    api = FakeAnthropic(reply_text("ok"))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    with api:
        proc = subprocess.run([CLAUDE, "-p", "hi", "--output-format", "stream-json",
                               "--verbose"], cwd=ws, capture_output=True, text=True,
                              timeout=300, check=False,
                              env={**env, "ANTHROPIC_BASE_URL": api.url})
    assert proc.returncode == 0, proc.stderr
    init = next(e for e in map(json.loads, proc.stdout.splitlines())
                if e.get("type") == "system" and e.get("subtype") == "init")
    return set(init["agents"])


def test_unloaded_agents_are_the_ones_reported(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for rel, text in AGENTS.items():
        target = ws / ".claude" / "agents" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    index = WorkspaceIndex(ws, load_config(ws))
    found = {(rel, f.code) for rel in AGENTS
             for f in check_file(index, ws / ".claude" / "agents" / rel)
             if f.code in ("BTN210", "BTN211", "BTN212")}
    assert found == {("sc-reviewer.md", "BTN210"), ("dash.md", "BTN210"),
                     ("answer.md", "BTN210"), ("research-specialist.md", "BTN212"),
                     ("gsd-code-reviewer.md", "BTN211")}
    registered = _registered(tmp_path, ws)
    ours = {"gsd-code-reviewer", "planner", "coder", "tester", "writer", "sc:reviewer",
            "-dash", "42", "research-specialist"}
    # what Claude Code loaded: everything but the reported files; one of the two copies
    assert registered & ours == {"gsd-code-reviewer", "planner", "coder", "tester", "writer"}


def test_orchestrator_trees_are_left_alone(tmp_path: Path) -> None:
    """Agents a project's orchestrator reads (most without `name`) are not subagents."""
    ws = tmp_path / "ws"
    files = {"research-specialist.md": RESEARCH, "plan-architect.md": RESEARCH,
             "debug-analyst.md": RESEARCH, "planner-agent.md": _agent("planner-agent", "Plans"),
             "neovim-research-agent.md": _agent("neovim-research-agent", "Research"),
             "typst-implementation-agent.md": _agent("typst-implementation-agent", "Typst")}
    for rel, text in files.items():
        target = ws / ".claude" / "agents" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    index = WorkspaceIndex(ws, load_config(ws))
    assert not [f for rel in files for f in check_file(index, ws / ".claude/agents" / rel)
                if f.code == "BTN212"]


# A public plugin's agents (heads): `senior-developer.md` copied from `developer.md` with its
# `name` left as it was, the kind of slip that leaves one of the two unused.
DEVELOPER = """---
name: developer
description: "Use this agent for standard development tasks: implementing features, fixing \
bugs, writing tests, refactoring code."
model: sonnet
---

You are a developer.
"""
SENIOR = DEVELOPER.replace("standard development tasks", "complex development tasks") \
    .replace("model: sonnet", "model: opus")
PLUGIN_MANIFEST = {"name": "ai-prompt-guide", "version": "1.0.6"}


def _plugin(root: Path) -> WorkspaceIndex:
    files = {"agents/developer.md": DEVELOPER, "agents/senior-developer.md": SENIOR,
             "agents/review/developer.md": DEVELOPER,
             ".claude-plugin/plugin.json": json.dumps(PLUGIN_MANIFEST)}
    for rel, text in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return WorkspaceIndex(root, load_config(root))


def test_duplicate_names_within_one_plugin_folder(tmp_path: Path) -> None:
    root = tmp_path / "plugin"
    index = _plugin(root)
    found = {rel: [f for f in check_file(index, root / rel) if f.code == "BTN211"]
             for rel in ("agents/developer.md", "agents/senior-developer.md",
                         "agents/review/developer.md")}
    # the nested folder is its own namespace (`ai-prompt-guide:review:developer`)
    assert not found["agents/developer.md"] and not found["agents/review/developer.md"]
    [f] = found["agents/senior-developer.md"]
    assert "agents/developer.md" in f.message and f.range.start_line == 1


def test_plugin_agent_names_as_claude_registers_them(tmp_path: Path) -> None:
    """The pinned claude registers one agent for the two files of one folder, and the
    nested folder's copy under its own name: what BTN211 reports and leaves alone."""
    root = tmp_path / "plugin"
    _plugin(root)
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    home.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    api = FakeAnthropic(reply_text("ok"))
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    with api:
        proc = subprocess.run([CLAUDE, "-p", "hi", "--output-format", "stream-json",
                               "--verbose", "--plugin-dir", str(root)], cwd=ws,
                              capture_output=True, text=True, timeout=300, check=False,
                              env={**env, "ANTHROPIC_BASE_URL": api.url})
    assert proc.returncode == 0, proc.stderr
    init = next(e for e in map(json.loads, proc.stdout.splitlines())
                if e.get("type") == "system" and e.get("subtype") == "init")
    ours = sorted(a for a in init["agents"] if a.startswith("ai-prompt-guide:"))
    assert ours == ["ai-prompt-guide:developer", "ai-prompt-guide:review:developer"]

"""Baton's reading of OpenCode files against the real `opencode` binary.

The pinned OpenCode (scripts/install-agent-clis.sh) prints the configuration it resolved
with `opencode debug config --pure`, offline. Each case is an excerpt of a real `.opencode/`
tree; the test checks that what BTN701/BTN702/BTN720 predict is what OpenCode does: which
commands and agents it loads, with or without their front matter, and which files make it
refuse the configuration.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from baton_lsp.model.base import Kind
from baton_lsp.model.opencode import OpenCodeAgent, OpenCodeCommand
from baton_lsp.parse import parse_text
from baton_lsp.rules.opencode_frontmatter import agent_problems
from tests.agents.clis import cli_path, opencode_offline_env

OPENCODE = cli_path("opencode")

COMMANDS = {
    # nvim/.opencode/commands/merge.md: unreadable, nothing to rewrite -> loaded raw
    "merge": "---\ndescription: Create a pull/merge request for the current branch\n"
             "allowed-tools: Bash(git:*), Bash(gh:*)\n"
             "argument-hint: [--draft] [--assignee USER] [--label LABEL]\n---\n\nGo.\n",
    # nvim/.opencode/commands/fix-it.md: colons rewritten by the retry -> read
    "fix-it": "---\ndescription: Scan files for FIX:, NOTE:, TODO:, QUESTION: tags\n"
              "allowed-tools: Skill\nargument-hint: [PATH...]\n---\n\nScan.\n",
    # ProofChecker/.opencode/command/convert.md: duplicate key, rewritten line -> skipped
    "convert": "---\ncommand: convert\ndescription: Convert documents between formats\n"
               "arguments:\n  name: source_path\n  required: true\n  name: output_path\n"
               "allowed_tools: Skill, Bash(jq:*), Read\n---\n\n# /convert\n",
    # ProofChecker/.opencode/command/errors.md: Claude-style keys are dropped, not refused
    "errors": "---\ndescription: Analyze errors and create fix plans\nmode: command\n"
              "temperature: 0.2\ntools:\n  read: true\nallowed_tools: Read, Write\n---\n\nGo.\n",
}
AGENTS = {
    # ProofChecker/.opencode/agent/subagents/planner.md (head): read; unknown keys -> options
    "planner": "---\nname: planner\nversion: \"1.0.0\"\ndescription: Implementation plans\n"
               "mode: subagent\ntemperature: 0.2\ntools:\n  read: true\n  write: true\n"
               "permissions:\n  allow:\n    - read: [\"**/*.md\"]\n---\n\n# Planner\n",
    # ModelChecker/.opencode/agent/subagents/logic-research-agent.md (head)
    "logic-research-agent": "---\nname: logic-research-agent\ndescription: Research logic\n"
                            "model: opus\n---\n\n# Logic\n",
}


def _env(tmp_path: Path) -> dict[str, str]:
    return opencode_offline_env(tmp_path / "home")


def _resolved(root: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`opencode debug config` in `root`; stdout goes through a file and is read back, since
    through a pipe OpenCode exits before a long answer is drained (its end is lost)."""
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    out = root.parent / "resolved.json"
    with out.open("w", encoding="utf-8") as sink:
        done = subprocess.run([OPENCODE, "debug", "config", "--pure"], cwd=root, env=env,
                              stdout=sink, stderr=subprocess.PIPE, text=True, timeout=300)
    done.stdout = out.read_text(encoding="utf-8")
    return done


def test_baton_reads_front_matter_as_opencode_does(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    for name, text in COMMANDS.items():
        (root / ".opencode/commands").mkdir(parents=True, exist_ok=True)
        (root / f".opencode/commands/{name}.md").write_text(text, encoding="utf-8")
    for name, text in AGENTS.items():
        (root / ".opencode/agent/subagents").mkdir(parents=True, exist_ok=True)
        (root / f".opencode/agent/subagents/{name}.md").write_text(text, encoding="utf-8")
    done = _resolved(root, _env(tmp_path))
    assert done.returncode == 0, done.stderr
    config = json.loads(done.stdout)

    for name, text in COMMANDS.items():
        doc = parse_text(Kind.OPENCODE_COMMAND, text, f"/x/.opencode/commands/{name}.md")
        assert isinstance(doc, OpenCodeCommand)
        loaded = config.get("command", {}).get(name)
        if doc.load.data is None:  # BTN701: skipped
            assert loaded is None, name
            continue
        assert loaded is not None, name
        if doc.load.raw:  # BTN701: loaded without front matter, `---` in the template
            assert "description" not in loaded and loaded["template"].startswith("---"), name
        else:
            assert loaded.get("description") == doc.load.data.get("description"), name
            assert not loaded["template"].startswith("---"), name

    agents = config.get("agent", {})
    planner = agents["planner"]  # named by its front matter, not `subagents/planner`
    assert planner["options"]["version"] == "1.0.0"  # BTN704: an unknown key is an option
    assert "permissions" in planner["options"]  # BTN703: not `permission`
    assert agents["logic-research-agent"]["model"] == "opus"  # BTN705: loads, fails at run


@pytest.mark.parametrize(("text", "field"), [
    ("---\ndescription: Reviews code\nmode: command\n---\nGo.\n", "mode"),
    ("---\ndescription: Reviews code\ntools: Read, Grep\n---\nGo.\n", "tools"),
    ("---\ndescription:\n---\nGo.\n", "description"),
    ("---\ndescription: yes\nhidden: on\n---\nGo.\n", "hidden"),  # `on` is a string
])
def test_an_invalid_agent_value_is_refused(tmp_path: Path, text: str, field: str) -> None:
    """BTN702's claim: OpenCode refuses the configuration, naming the field."""
    doc = parse_text(Kind.OPENCODE_AGENT, text, "/x/.opencode/agent/a.md")
    assert isinstance(doc, OpenCodeAgent) and doc.load.data is not None
    assert {key for key, _ in agent_problems(doc.load.data)} == {field}  # Baton's prediction
    root = tmp_path / "ws"
    (root / ".opencode/agent").mkdir(parents=True)
    (root / ".opencode/agent/a.md").write_text(text, encoding="utf-8")
    done = _resolved(root, _env(tmp_path))
    assert done.returncode != 0 and field in done.stderr


def test_a_missing_file_reference_is_refused(tmp_path: Path) -> None:
    """BTN720's claim (ModelChecker's opencode.json names four prompt files that are gone)."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "opencode.json").write_text(json.dumps({"agent": {"spreadsheet": {
        "mode": "subagent",
        "prompt": "{file:.opencode/agent/subagents/spreadsheet-agent.md}"}}}))
    done = _resolved(root, _env(tmp_path))
    assert done.returncode != 0 and "bad file reference" in done.stderr


@pytest.mark.parametrize(("command", "field"), [
    ({"description": "no template"}, "template"),
    ({"template": "go", "subtask": "yes"}, "subtask"),
])
def test_an_invalid_config_command_is_refused(tmp_path: Path, command: dict[str, str],
                                              field: str) -> None:
    """BTN722's claim for the `command` section."""
    from baton_lsp.rules.engine import check_file
    from baton_lsp.workspace.index import WorkspaceIndex

    root = tmp_path / "ws"
    root.mkdir()
    (root / "opencode.json").write_text(json.dumps({"command": {"x": command}}))
    predicted = [f for f in check_file(WorkspaceIndex(root), root / "opencode.json")
                 if f.code == "BTN722"]
    assert [field in f.message for f in predicted] == [True]
    done = _resolved(root, _env(tmp_path))
    assert done.returncode != 0 and field in done.stderr

"""Extension folders (`.claude/extensions/<name>/{agents,commands,skills,context}`, and
`.opencode/`'s): checked as the agents, commands, skills and context documents the tree's
loader copies them into, with their links read from either place. Texts from a public tree."""

from __future__ import annotations

import os

from baton_lsp.model.base import Kind
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.discovery import classify, extension_installed, walk
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

CITE = """---
name: skill-cite
description: Verify citation claims against Literature/ index and Zotero library.
allowed-tools: Bash, Read, Write, Edit, AskUserQuestion
---

# Cite Skill (Direct Execution)

```bash
args="$ARGUMENTS"
score_against_index() {
  local source_text="$1"
  local query_terms
}
```

See [the index format](../../context/project/literature/index-format.md).
"""
"""A skill of an extension, abridged: `$1` in a shell function, which Claude Code replaces
with the invocation's argument once the skill is loaded (BTN230)."""

PLANNER = """---
name: planner-agent
description: Create phased implementation plans from research findings
---

# Planner Agent
"""


def test_extension_components_classified_as_loaded() -> None:
    assert classify(".claude/extensions/literature/skills/skill-cite/SKILL.md") is Kind.SKILL
    assert classify(".claude/extensions/core/agents/planner-agent.md") is Kind.AGENT
    assert classify(".claude/extensions/core/commands/task.md") is Kind.COMMAND
    assert classify(".claude/extensions/core/context/guides/x.md") is Kind.CONTEXT
    assert classify(".opencode/extensions/core/agents/planner-agent.md") is Kind.OPENCODE_AGENT
    assert classify(".opencode/extensions/core/commands/task.md") is Kind.OPENCODE_COMMAND
    # Rules, scripts, the extension's own docs and merge sources are not read as anything.
    for rel in (".claude/extensions/core/rules/git.md", ".claude/extensions/core/README.md",
                ".claude/extensions/core/EXTENSION.md", ".claude/extensions/core/docs/x.md",
                ".claude/extensions/core/merge-sources/claudemd.md"):
        assert classify(rel) is None, rel
    assert extension_installed(".opencode/extensions/core/agents/a.md") == \
        ".opencode/agent/subagents/a.md"


def test_positional_parameter_in_an_extension_skill(make_workspace) -> None:
    root = make_workspace({
        ".claude/extensions/literature/skills/skill-cite/SKILL.md": CITE,
        ".claude/extensions/literature/context/project/literature/index-format.md": "# I\n"})
    skill = root / ".claude/extensions/literature/skills/skill-cite/SKILL.md"
    assert (skill, Kind.SKILL) in set(walk(root))
    found = check_file(WorkspaceIndex(root), skill)
    assert [f.range.start_line for f in only(found, "BTN230")] == [11]
    # The link is written for the installed copy (.claude/skills/skill-cite/): from the
    # extension's folder it points into the extension, where the document also is.
    assert only(found, "BTN133") == []


def test_link_broken_in_both_places_is_reported(make_workspace) -> None:
    root = make_workspace({".claude/extensions/literature/skills/skill-cite/SKILL.md": CITE})
    skill = root / ".claude/extensions/literature/skills/skill-cite/SKILL.md"
    found = only(check_file(WorkspaceIndex(root), skill), "BTN133")
    assert [f.range.start_line for f in found] == [16]
    (root / ".claude/context/project/literature").mkdir(parents=True)
    (root / ".claude/context/project/literature/index-format.md").write_text("# I\n")
    assert only(check_file(WorkspaceIndex(root), skill), "BTN133") == []


def test_opencode_extension_agent_and_its_copy_are_one_agent(make_workspace) -> None:
    root = make_workspace({".opencode/extensions/core/agents/planner-agent.md": PLANNER,
                           ".opencode/agent/subagents/planner-agent.md": PLANNER})
    index = WorkspaceIndex(root)
    for rel in (".opencode/extensions/core/agents/planner-agent.md",
                ".opencode/agent/subagents/planner-agent.md"):
        assert only(check_file(index, root / rel), "BTN712") == [], rel


def test_linked_install_is_checked_once(make_workspace) -> None:
    """The tree links `.claude/agents/x.md` to its extension's file: one file, one check."""
    root = make_workspace({".claude/extensions/literature/agents/literature-agent.md":
                           PLANNER.replace("planner", "literature")})
    (root / ".claude/agents").mkdir()
    os.symlink("../extensions/literature/agents/literature-agent.md",
               root / ".claude/agents/literature-agent.md")
    walked = [p for p, k in walk(root) if k is Kind.AGENT]
    assert walked == [root / ".claude/agents/literature-agent.md"]


def test_extension_agent_answers_only_files_of_extensions(make_workspace) -> None:
    """A skill of the lean extension delegates to the extension's agent (they load together);
    a command outside the extensions naming that agent fails while it is not loaded."""
    task = ("\n```\nTask {\n  subagent_type: \"lean-research-agent\"\n"
            "  description: \"Research\"\n  prompt: \"Research the task\"\n}\n```\n")
    skill = ("---\nname: skill-lean-research\ndescription: Research Lean tasks\n---\n"
             "# Lean research\n" + task)
    command = "---\ndescription: Research Lean\n---\n# /lean\n" + task
    root = make_workspace({
        ".claude/extensions/lean/agents/lean-research-agent.md":
            PLANNER.replace("planner", "lean-research"),
        ".claude/extensions/lean/skills/skill-lean-research/SKILL.md": skill,
        ".claude/commands/lean.md": command,
        ".claude/agents/planner-agent.md": PLANNER})
    index = WorkspaceIndex(root)
    assert only(check_file(index, root / ".claude/extensions/lean/skills/skill-lean-research/"
                           "SKILL.md"), "BTN319") == []
    assert len(only(check_file(index, root / ".claude/commands/lean.md"), "BTN319")) == 1


def test_opencode_command_agent_only_in_an_extension(make_workspace) -> None:
    agent = "---\nname: lean-agent\ndescription: Lean work\nmode: subagent\n---\n# Lean\n"
    command = "---\ndescription: Build with Lean\nagent: lean-agent\n---\nBuild $ARGUMENTS\n"
    root = make_workspace({".opencode/extensions/lean/agents/lean-agent.md": agent,
                           ".opencode/extensions/lean/commands/lake.md": command,
                           ".opencode/commands/lake.md": command,
                           ".opencode/agent/subagents/planner-agent.md": PLANNER})
    index = WorkspaceIndex(root)
    assert only(check_file(index, root / ".opencode/extensions/lean/commands/lake.md"),
                "BTN711") == []
    assert len(only(check_file(index, root / ".opencode/commands/lake.md"), "BTN711")) == 1


def test_extension_files_name_what_the_extension_installs(make_workspace) -> None:
    """A skill of a not-loaded extension runs a script and injects an agent of its own
    extension by their installed paths: they exist once the extension is loaded."""
    skill = ("---\nname: skill-lake\ndescription: Repair the Lean build\n---\n# Lake\n\n"
             "```bash\nbash .claude/scripts/lake-repair.sh \"$ARGUMENTS\"\n"
             "bash .claude/scripts/not-anywhere.sh\n```\n")
    root = make_workspace({
        ".claude/extensions/lean/skills/skill-lake/SKILL.md": skill,
        ".claude/extensions/lean/scripts/lake-repair.sh": "#!/bin/sh\n",
        ".claude/scripts/update-task-status.sh": "#!/bin/sh\n",
        ".claude/agents/planner-agent.md": PLANNER})
    found = only(check_file(WorkspaceIndex(root),
                            root / ".claude/extensions/lean/skills/skill-lake/SKILL.md"),
                 "BTN315")
    assert [f.range.start_line for f in found] == [8]

"""BTN133: relative links in agents, commands and skills (real files on disk)."""

from __future__ import annotations

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

RELATED = (
    "---\ndescription: Migrate specs to the topic layout\n---\n# /migrate-specs\n\n"
    "## Related Documents\n\n"
    "- [Migration Strategy](specs/plans/009_orchestration_enhancement_adapted/design/"
    "migration_strategy.md) - Complete migration strategy\n"
    "- [Command patterns](../docs/command-patterns.md#agent-invocation-patterns)\n\n"
    "```markdown\n- [Artifact Taxonomy](specs/plans/009_x/design/artifact_taxonomy.md)\n```\n"
    "Use `[report](../reports/001_x.md)` and [Full Doc](path) as written.\n"
)
"""From a public tree's command: the design documents are linked relative to
`.claude/commands/`, where they never were."""


def test_command_links_checked_outside_code(make_workspace) -> None:
    root = make_workspace({".claude/commands/migrate-specs.md": RELATED,
                           ".claude/docs/command-patterns.md": "# Patterns\n"})
    found = only(check_file(WorkspaceIndex(root), root / ".claude/commands/migrate-specs.md"),
                 "BTN133")
    assert [(f.range.start_line, f.message.split("'")[1]) for f in found] == [
        (7, "specs/plans/009_orchestration_enhancement_adapted/design/migration_strategy.md")]
    assert "looked for .claude/commands/specs/plans/009_" in found[0].message


def test_agent_link_to_a_missing_example(make_workspace) -> None:
    """A public tree's planning agent points at an example document it never had."""
    text = ("---\nname: plan-architect\ndescription: Plans\n---\n# Plan Architect\n\n"
            "- Phases with same dependencies can run in parallel\n"
            "- See [docs/parallel-execution-example.md](../docs/parallel-execution-example.md)"
            " for examples\n")
    root = make_workspace({".claude/agents/plan-architect.md": text})
    agent = root / ".claude/agents/plan-architect.md"
    found = only(check_file(WorkspaceIndex(root), agent), "BTN133")
    assert [f.range.start_line for f in found] == [7]
    (root / ".claude/docs").mkdir()
    (root / ".claude/docs/parallel-execution-example.md").write_text("# Example\n")
    assert only(check_file(WorkspaceIndex(root), agent), "BTN133") == []


def test_skill_template_one_folder_off_says_where_it_is(make_workspace) -> None:
    """A public tree's development notes link `../../templates/…`; in a skill that is
    `.claude/templates/`, while the templates sit in the repository's `templates/`."""
    text = ("---\nname: lefser-dev\ndescription: Package development patterns\n---\n"
            "# Development Patterns\n\nFor complete Bioconductor and waldronlab standards, see:\n"
            "- [Core Bioconductor standards](../../templates/bioconductor-development.md)\n"
            "- [Waldronlab conventions](../../templates/waldronlab-standards.md)\n")
    root = make_workspace({".claude/skills/lefser-dev/SKILL.md": text,
                           "templates/bioconductor-development.md": "# Bioc\n",
                           ".claude/templates/waldronlab-standards.md": "# Lab\n"})
    found = only(check_file(WorkspaceIndex(root), root / ".claude/skills/lefser-dev/SKILL.md"),
                 "BTN133")
    assert len(found) == 1 and found[0].range.start_line == 7
    assert "templates/bioconductor-development.md exists: the path is relative to the wrong" \
        in found[0].message

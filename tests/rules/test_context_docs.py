"""Context documents (`.claude/context/**/*.md`, `.opencode/context/**/*.md`): their links
(BTN133, the shared checker) and `@path` references (BTN836), from real text."""

from __future__ import annotations

from baton_lsp.model.base import Kind
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.discovery import classify, walk
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

SCHEMA = (
    "# State Management Schema Reference\n\n"
    "## Related Documentation\n\n"
    "- [State Management Rules](../../../rules/state-management.md) - Quick reference\n"
    "- [Artifact Formats](../../../rules/artifact-formats.md) - Artifact naming\n"
    "- [Return Metadata](../formats/return-metadata-file.md) - Metadata file schema\n\n"
    "```markdown\n- [Example](../../../rules/not-here.md)\n```\n"
    "A link is written `[name](../rules/x.md)` in these files.\n"
)
"""From a public tree's `.claude/context/reference/`: three `../` reach the repository root,
where there is no `rules/`; the rules are in `.claude/rules/`."""

THIN_WRAPPER = (
    "# Thin Wrapper Skill Template\n\n"
    "**Reference**: See @.claude/context/patterns/thin-wrapper-skill.md for pattern details.\n"
    "**Delegation**: See @.claude/context/patterns/fork-patterns.md for the decision matrix.\n"
    "Create `specs/{N}_{SLUG}/reports/research-{NNN}.md` and notify @user.\n"
    "Template: @.claude/context/templates/{topic}-summary.md\n"
    "`@.claude/context/patterns/in-code.md` is an example.\n"
)
"""From a public tree's `.claude/context/templates/`: fork-patterns.md was never written."""


def test_context_documents_are_their_own_kind() -> None:
    assert classify(".claude/context/reference/state-management-schema.md") is Kind.CONTEXT
    assert classify(".claude/context/README.md") is Kind.CONTEXT
    assert classify(".opencode/context/core/patterns/x.md") is Kind.CONTEXT
    assert classify(".claude/context/index.json") is None
    assert classify(".claude/context.md") is None


def test_context_links_wrong_folder(make_workspace) -> None:
    root = make_workspace({
        ".claude/context/reference/state-management-schema.md": SCHEMA,
        ".claude/context/formats/return-metadata-file.md": "# Return metadata\n",
        ".claude/rules/state-management.md": "# State\n",
        ".claude/rules/artifact-formats.md": "# Artifacts\n",
        ".claude/agents/a.md": "---\nname: a\ndescription: d\n---\n# A\n"})
    doc = root / ".claude/context/reference/state-management-schema.md"
    assert (doc, Kind.CONTEXT) in set(walk(root))
    found = only(check_file(WorkspaceIndex(root), doc), "BTN133")
    assert [f.range.start_line for f in found] == [4, 5]
    assert ".claude/rules/state-management.md exists: the path is relative to the wrong " \
        "folder" in found[0].message


def test_context_at_reference_missing(make_workspace) -> None:
    root = make_workspace({
        ".claude/context/templates/thin-wrapper-skill.md": THIN_WRAPPER,
        ".claude/context/patterns/thin-wrapper-skill.md": "# Thin wrapper\n"})
    doc = root / ".claude/context/templates/thin-wrapper-skill.md"
    found = only(check_file(WorkspaceIndex(root), doc), "BTN836")
    assert [(f.range.start_line, f.message.split("`")[1]) for f in found] == [
        (3, "@.claude/context/patterns/fork-patterns.md")]
    (root / ".claude/context/patterns/fork-patterns.md").write_text("# Fork patterns\n")
    assert only(check_file(WorkspaceIndex(root), doc), "BTN836") == []


def test_context_reference_relative_to_the_file_counts(make_workspace) -> None:
    """Claude Code's own reading of `@path` (relative to the file) finds it: not reported."""
    root = make_workspace({
        ".claude/context/guides/a.md": "# A\nSee @b.md and @../patterns/c.md.\n",
        ".claude/context/guides/b.md": "# B\n",
        ".claude/context/patterns/c.md": "# C\n"})
    assert only(check_file(WorkspaceIndex(root), root / ".claude/context/guides/a.md"),
                "BTN836") == []


def test_opencode_context_reference(make_workspace) -> None:
    """From a public tree's OpenCode copy: it names a guide only the `.claude/` side has."""
    text = ("# Thin wrapper\n\n## Related\n"
            "- @.opencode/docs/guides/creating-commands.md - Command guide\n"
            "- @.opencode/docs/guides/creating-skills.md - Step-by-step guide\n")
    root = make_workspace({
        ".opencode/context/core/patterns/thin-wrapper-skill.md": text,
        ".opencode/docs/guides/creating-commands.md": "# Commands\n",
        ".opencode/agent/a.md": "---\ndescription: d\n---\n# A\n",
        ".claude/docs/guides/creating-skills.md": "# Skills\n"})
    doc = root / ".opencode/context/core/patterns/thin-wrapper-skill.md"
    found = only(check_file(WorkspaceIndex(root), doc), "BTN836")
    assert [f.range.start_line for f in found] == [4]

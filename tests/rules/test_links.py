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


def test_the_extension_folder_is_worked_out_once_and_only_for_a_missing_link(
        make_workspace) -> None:
    """Whether a file belongs to an extension (and where its loaded copy sits) depends on
    the file alone: it is worked out once per file, when the first missing target needs it,
    not for every file (`installed_dir`) and every missing target (`_extension_twin`).
    Counted with `sys.setprofile`; an extension's link to its loaded copy still resolves."""
    import os
    import sys
    from typing import Any

    from baton_lsp.workspace import discovery

    calls = {"relpath": 0, "installed": 0}

    def profile(frame: Any, event: str, arg: object) -> None:
        if event != "call":
            return
        if frame.f_code is os.path.relpath.__code__ and frame.f_back is not None \
                and frame.f_back.f_code.co_name in ("_extension_twin", "installed_dir"):
            calls["relpath"] += 1
        elif frame.f_code is discovery.extension_installed.__code__ \
                and frame.f_back is not None and frame.f_back.f_code.co_name == "installed_dir":
            calls["installed"] += 1

    broken = "".join(f"- [note {n}](notes/missing-{n}.md)\n" for n in range(4))
    root = make_workspace({
        ".claude/agents/fine.md": "---\nname: fine\ndescription: d\n---\n# Fine\n\n"
                                  "[the docs](../docs/x.md)\n",
        ".claude/docs/x.md": "# X\n",
        ".claude/agents/broken.md": "---\nname: broken\ndescription: d\n---\n# B\n\n" + broken,
        ".claude/extensions/lean/agents/lean.md": "---\nname: lean\ndescription: d\n---\n"
                                                  "# Lean\n\n[ctx](../context/lean.md)\n",
        ".claude/context/lean.md": "# Lean context\n"})
    index = WorkspaceIndex(root)
    sys.setprofile(profile)
    try:
        fine = only(check_file(index, root / ".claude/agents/fine.md"), "BTN133")
        after_fine = dict(calls)
        found = only(check_file(index, root / ".claude/agents/broken.md"), "BTN133")
        lean = only(check_file(index, root / ".claude/extensions/lean/agents/lean.md"),
                    "BTN133")
    finally:
        sys.setprofile(None)
    assert fine == [] and after_fine == {"relpath": 0, "installed": 0}
    assert len(found) == 4 and lean == []
    # broken.md: once for `installed_dir`, once for `_extension_twin`'s file part; lean.md
    # likewise, plus one per target it looks up in the extension.
    assert calls["installed"] == 2 and calls["relpath"] <= 6

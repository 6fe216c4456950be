"""BTN13x link rules (cross-file, real files on disk)."""

from __future__ import annotations

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only


def test_broken_and_working_links(make_workspace) -> None:
    root = make_workspace({
        ".claude/specs/001_x/plans/001-x-plan.md":
            "# P\n\n## Metadata\n- **Research Reports**:\n  - [Good](../reports/001-good.md)\n"
            "  - [Bad](../reports/002-missing.md)\n"
            "- **Other**: [abs](/home/someone/.config/.claude/specs/001_x/reports/001-good.md)\n"
            "[web](https://example.com) [anchor](#overview) [var](${CLAUDE_PROJECT_DIR}/nope.md)\n"
            "\n### Phase 1: A [See: phase_1_a.md]\n",
        ".claude/specs/001_x/reports/001-good.md": "# Good\n",
    })
    plan = root / ".claude/specs/001_x/plans/001-x-plan.md"
    found = only(check_file(WorkspaceIndex(root), plan), "BTN130")
    targets = sorted(f.message.split("'")[1] for f in found)
    assert targets == ["${CLAUDE_PROJECT_DIR}/nope.md", "../reports/002-missing.md",
                       "phase_1_a.md"]
    bad = next(f for f in found if "002-missing" in f.message)
    assert bad.range.start_line == 5
    assert "looked for .claude/specs/001_x/reports/002-missing.md" in bad.message


def test_opencode_links_are_read_from_the_repository_root(make_workspace) -> None:
    """ProofChecker's `.opencode/specs/234_.../plans/implementation-001.md` links its report
    as `.opencode/specs/234_.../reports/research-001.md`, a path from the repository root
    (the directory holding the `.opencode/` that its `specs/` makes a workspace)."""
    plan_text = ("# Implementation Plan: X\n\n- **Task**: 234 - X\n- **Status**: [COMPLETED]\n"
                 "- **Research Inputs**: [Research Report](.opencode/specs/234_x/reports/"
                 "research-001.md)\n- **Other**: [Gone](.opencode/specs/234_x/reports/gone.md)\n"
                 "\n### Phase 1: A [COMPLETED]\n")
    root = make_workspace({".opencode/specs/234_x/plans/implementation-001.md": plan_text,
                           ".opencode/specs/234_x/reports/research-001.md": "# R\n"})
    plan = root / ".opencode/specs/234_x/plans/implementation-001.md"
    found = only(check_file(WorkspaceIndex(root / ".opencode"), plan), "BTN130")
    assert [f.message.split("'")[1] for f in found] == [".opencode/specs/234_x/reports/gone.md"]


def test_link_inside_fence_is_ignored(make_workspace) -> None:
    root = make_workspace({".claude/specs/001_x/plans/p.md":
                           "# P\n```markdown\n[x](missing.md)\n```\n"})
    assert only(check_file(WorkspaceIndex(root), root / ".claude/specs/001_x/plans/p.md"),
                "BTN130") == []


def test_parent_plan_resolution(make_workspace) -> None:
    root = make_workspace({
        ".claude/specs/plans/010_x/010_x.md": "# Main\n### Phase 1: A\n",
        ".claude/specs/plans/010_x/phase_1_a.md":
            "# Phase 1: A\n\n## Metadata\n- **Parent Plan**: 010_x.md\n",
        ".claude/specs/plans/010_x/phase_2_b.md":
            "# Phase 2: B\n\n## Metadata\n- **Parent Plan**: 099_gone.md\n",
        ".claude/specs/plans/010_x/phase_3_c.md":
            "# Phase 3: C\n\n## Metadata\n- **Parent Plan**: A Human Title For The Plan\n",
    })
    idx = WorkspaceIndex(root)
    base = root / ".claude/specs/plans/010_x"
    assert only(check_file(idx, base / "phase_1_a.md"), "BTN131") == []
    missing = only(check_file(idx, base / "phase_2_b.md"), "BTN131")
    assert len(missing) == 1 and "099_gone.md" in missing[0].message
    assert only(check_file(idx, base / "phase_3_c.md"), "BTN131") == []


def test_phase_number_metadata_must_match_heading(make_workspace) -> None:
    from tests.helpers import apply_fix

    text = "# Phase 3: C\n\n## Metadata\n- **Phase Number**: 4\n- **Parent Plan**: 010_x.md\n"
    root = make_workspace({
        ".claude/specs/plans/010_x/010_x.md": "# Main\n### Phase 3: C\n",
        ".claude/specs/plans/010_x/phase_3_c.md": text,
    })
    found = only(check_file(WorkspaceIndex(root), root / ".claude/specs/plans/010_x/phase_3_c.md"),
                 "BTN132")
    assert len(found) == 1 and found[0].range.start_line == 3
    assert "- **Phase Number**: 3\n" in apply_fix(text, found[0].fix)


def test_percent_encoded_link_targets_are_decoded(make_workspace) -> None:
    # Jaggerxtrm/jaggers-agent-tools: `%20` is how markdown links spell a space.
    root = make_workspace({
        "docs/plans/guide.md": "# Guide\n\n- [ ] read\n\n"
                               "- [Hooks](../reference/Hooks%20Best%20Practices.md)\n"
                               "- [Gone](../reference/Missing%20Page.md)\n",
        "docs/reference/Hooks Best Practices.md": "# Hooks\n",
    })
    found = only(check_file(WorkspaceIndex(root), root / "docs/plans/guide.md"), "BTN130")
    assert [f.message.split("'")[1] for f in found] == ["../reference/Missing%20Page.md"]

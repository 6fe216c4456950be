"""BTN12x metadata rules."""

from __future__ import annotations

from baton_lsp.model.base import Kind
from baton_lsp.model.config import BatonConfig
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_edits, only

PATH = "/ws/.claude/specs/001_x/plans/001-x-plan.md"
FULL = """# P

## Metadata
- **Date**: 2025-11-30
- **Feature**: F
- **Status**: [NOT STARTED]
- **Estimated Hours**: 3-5 hours
- **Standards File**: /home/u/CLAUDE.md
- **Research Reports**: none

## Implementation Phases

### Phase 1: A
"""


STANDARD = BatonConfig(conventions={"plan-standard": "on"})


def check(text: str, config: BatonConfig | None = None) -> list:
    return check_text(Kind.PLAN, text, PATH, config=config)


def test_complete_metadata_is_clean() -> None:
    assert [f for f in check(FULL) if f.code.startswith("BTN12")] == []


def test_missing_keys_listed_once_and_fix_inserts_placeholders() -> None:
    text = FULL.replace("- **Feature**: F\n", "").replace("- **Research Reports**: none\n", "")
    found = only(check(text, STANDARD), "BTN120")
    assert len(found) == 1
    assert "Feature, Research Reports" in found[0].message
    fixed = apply_edits(text, found[0].fix.edits)
    assert "- **Feature**: TBD\n- **Research Reports**: none\n\n## Implementation" in fixed
    assert only(check(fixed, STANDARD), "BTN120") == []


def test_missing_metadata_section_is_created() -> None:
    text = "# Plan\n\n## Implementation Phases\n### Phase 1: A\n"
    found = only(check(text, STANDARD), "BTN120")
    fixed = apply_edits(text, found[0].fix.edits)
    assert fixed.startswith("# Plan\n\n## Metadata\n- **Date**: ")
    assert only(check(fixed, STANDARD), "BTN120") == []


def test_the_standard_applies_where_the_workspace_ships_it(tmp_path) -> None:
    # Other authors' plans, fixtures and plans of a tree without the standard follow none.
    text = FULL.replace("- **Status**: [NOT STARTED]\n", "")
    plan = tmp_path / ".claude/specs/001_x/plans/001-x-plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text(text)
    assert only(check_file(WorkspaceIndex(tmp_path), plan), "BTN120") == []
    standard = tmp_path / ".claude/docs/reference/standards/plan-metadata-standard.md"
    standard.parent.mkdir(parents=True)
    standard.write_text("# Plan metadata standard\n")
    (found,) = only(check_file(WorkspaceIndex(tmp_path), plan), "BTN120")
    assert found.message.endswith(": Status")
    index = WorkspaceIndex(tmp_path)
    check_file(index, plan)
    assert str(plan) in index.dependents(standard)  # the editor re-checks it when it appears
    off = BatonConfig(conventions={"plan-standard": "off"})
    assert only(check_file(WorkspaceIndex(tmp_path, off), plan), "BTN120") == []


def test_task_plans_use_their_own_required_set_and_config_changes_it() -> None:
    g3 = ("# Plan\n\n- **Task**: 1 - x\n- **Status**: [COMPLETED]\n"
          "- **Standards**: plan-format.md\n\n## Overview\n")
    assert only(check(g3, STANDARD), "BTN120") == []
    archived = g3.replace("- **Standards**: plan-format.md\n", "")
    assert only(check(archived), "BTN124") == []  # names no format standard
    found = only(check(g3), "BTN124")
    assert len(found) == 1 and found[0].message.endswith(": Effort")
    relaxed = BatonConfig(required_metadata_g3=["Task"])
    assert only(check(g3, relaxed), "BTN124") == []


def test_estimated_phases_mismatch_fix() -> None:
    text = FULL.replace("- **Date**", "- **Estimated Phases**: 4\n- **Date**")
    found = only(check(text), "BTN121")
    assert len(found) == 1 and "says 4 but the plan has 1 phases" in found[0].message
    assert "- **Estimated Phases**: 1\n" in apply_edits(text, found[0].fix.edits)


def test_dates() -> None:
    ok = FULL.replace("2025-11-30", "2025-12-02 (Revised: 2025-12-03)")
    assert only(check(ok), "BTN122") == []
    for human in ("Dec 2, 2025", "26 March 2026", "TBD"):
        assert only(check(FULL.replace("2025-11-30", human)), "BTN122") == []
    for bad, why in [("2025-13-01", "month must be in 1..12"), ("2025-1-5", "not a YYYY-MM-DD"),
                     ("2025/12/02", "not a YYYY-MM-DD")]:
        found = only(check(FULL.replace("2025-11-30", bad)), "BTN122")
        assert len(found) == 1 and why in found[0].message


def test_structure_level_and_expanded_phases_against_disk(make_workspace) -> None:
    root = make_workspace({
        ".claude/specs/plans/045_x/045_x.md":
            "# P\n\n## Metadata\n- **Structure Level**: 0\n- **Expanded Phases**: [2, 3]\n\n"
            "### Phase 1: A\n### Phase 2: B\n### Phase 3: C\n",
        ".claude/specs/plans/045_x/phase_2_b.md": "# Phase 2: B\n",
        ".claude/specs/plans/045_x/phase_1_a.md": "# Phase 1: A\n",
    })
    idx = WorkspaceIndex(root)
    plan = root / ".claude/specs/plans/045_x/045_x.md"
    messages = [f.message for f in only(check_file(idx, plan), "BTN123")]
    assert any("Structure Level is 0 but 2 phase files" in m for m in messages)
    assert any("lists phase 3 but no phase_3_" in m for m in messages)
    assert any("phase 1 is expanded on disk (phase_1_a.md)" in m for m in messages)
    # Creating the missing file is seen after the index is told about it.
    (root / ".claude/specs/plans/045_x/phase_3_c.md").write_text("# Phase 3: C\n")
    assert str(plan) in idx.changed(root / ".claude/specs/plans/045_x/phase_3_c.md",
                                    created_or_deleted=True)
    messages = [f.message for f in only(check_file(idx, plan), "BTN123")]
    assert not any("lists phase 3" in m for m in messages)

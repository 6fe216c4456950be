"""BTN11x phase/status/checkbox rules."""

from __future__ import annotations

from pathlib import Path

from baton_lsp.model.base import Kind
from baton_lsp.model.config import BatonConfig
from baton_lsp.rules.engine import check_text
from tests.helpers import apply_edits, only

PATH = "/ws/.claude/specs/001_x/plans/001-x-plan.md"


def check(text: str) -> list:
    return check_text(Kind.PLAN, text, PATH)


def test_duplicate_phase_number_points_at_first() -> None:
    text = "# P\n## Implementation Phases\n### Phase 1: A\n### Phase 2: B\n### Phase 1: C\n"
    found = only(check(text), "BTN110")
    assert len(found) == 1 and found[0].range.start_line == 4
    assert found[0].related[0].range.start_line == 2


def test_a_checklist_restating_the_phases_one_level_deeper_is_no_duplicate() -> None:
    # Jaggerxtrm/jaggers-agent-tools docs/plans/ts-migration.md (shortened)
    text = ("# CLI TypeScript Migration Plan\n\n## Phase 1: Foundation (Week 1-2)\n\n"
            "### 1.1 TypeScript Setup\n\n## Phase 2: Architecture Refactoring (Week 3-4)\n\n"
            "## Migration Checklist\n\n### Pre-Migration\n- [ ] Create feature branch\n\n"
            "### Phase 1: Foundation\n- [ ] Initialize TypeScript configuration\n\n"
            "### Phase 2: Architecture\n- [ ] Adapter pattern\n")
    assert only(check(text), "BTN110") == []
    same_level = text.replace("### Phase 2: Architecture\n", "## Phase 2: Architecture\n")
    [dup] = only(check(same_level), "BTN110")
    assert "Phase 2 is defined twice (first on line 7)" in dup.message


def test_complete_with_open_tasks_counts_and_fix_ticks() -> None:
    text = "# P\n### Phase 1: A [COMPLETED]\n- [ ] one\n- [x] two\n  - [ ] three\n"
    found = only(check(text), "BTN111")
    assert len(found) == 1
    assert "2 of 3 tasks are still open" in found[0].message
    fixed = apply_edits(text, found[0].fix.edits)
    assert "[ ]" not in fixed and fixed.count("[x]") == 3


def test_complete_with_all_tasks_done_is_clean() -> None:
    text = "# P\n### Phase 1: A [COMPLETE]\n- [x] one\n"
    assert only(check(text), "BTN111") == []


def test_all_tasks_done_not_marked_uses_plan_style() -> None:
    text = ("# P\n### Phase 1: A [COMPLETED]\n- [x] a\n### Phase 2: B [IN PROGRESS]\n- [x] b\n"
            "### Phase 3: C\n- [x] c\n")
    found = only(check(text), "BTN112")
    assert [f.range.start_line for f in found] == [3, 5]
    fixed = apply_edits(text, found[0].fix.edits + found[1].fix.edits)
    assert "### Phase 2: B [COMPLETED]" in fixed and "### Phase 3: C [COMPLETED]" in fixed


def test_unknown_status_marker_suggests_nearest() -> None:
    text = "# P\n### Phase 1: A [COMPLETD]\n### Phase 2: B [In Progress]\n### Phase 3: C [DONE]\n"
    found = only(check(text), "BTN113")
    assert len(found) == 2  # [DONE] is a word of the author's own, not a misspelling
    assert "misspelling of [COMPLETED]" in found[0].message
    assert apply_edits(text, found[1].fix.edits).split("\n")[2] == "### Phase 2: B [IN PROGRESS]"


def test_an_authors_own_status_words_are_not_misspellings() -> None:
    text = "# P\n### Phase 1: A [CANCELLED]\n### Phase 2: B [DEFERRED]\n### Phase 3: C [STARTED]\n"
    assert only(check(text), "BTN113") == []


def test_unknown_metadata_status() -> None:
    text = "# P\n\n## Metadata\n- **Status**: [IN PROGRES]\n"
    found = only(check(text), "BTN113")
    assert len(found) == 1 and found[0].range.start_line == 3
    assert apply_edits(text, found[0].fix.edits).endswith("[IN PROGRESS]\n")


def test_mixed_complete_markers_converted_to_majority() -> None:
    text = ("# P\n### Phase 1: A [COMPLETE]\n### Phase 2: B [COMPLETE]\n"
            "### Phase 3: C [COMPLETED]\n")
    found = only(check(text), "BTN114")
    assert len(found) == 1 and found[0].range.start_line == 3
    assert apply_edits(text, found[0].fix.edits).split("\n")[3] == "### Phase 3: C [COMPLETE]"


def test_complete_phase_with_incomplete_dependency() -> None:
    text = ("# P\n### Phase 1: A [IN PROGRESS]\ndependencies: []\n"
            "### Phase 2: B [COMPLETE]\ndependencies: [1]\n")
    found = only(check(text), "BTN115")
    assert len(found) == 1 and "marked [IN PROGRESS]" in found[0].message


def test_uppercase_checkbox_fix() -> None:
    text = "# P\n### Phase 1: A\n- [X] done\n"
    found = only(check(text), "BTN116")
    assert len(found) == 1
    assert apply_edits(text, found[0].fix.edits) == "# P\n### Phase 1: A\n- [x] done\n"


def test_conflicting_body_status() -> None:
    text = "# P\n### Phase 1: A [COMPLETE]\n**Status**: IN PROGRESS\n"
    found = only(check(text), "BTN117")
    assert len(found) == 1 and found[0].range.start_line == 2
    same = "# P\n### Phase 1: A [COMPLETE]\n**Status**: COMPLETED\n"
    assert only(check(same), "BTN117") == []


def test_suppression_comment_for_next_block_and_file() -> None:
    text = "# P\n<!-- baton: ignore BTN116 -->\n### Phase 1: A\n- [X] one\n\n- [X] two\n"
    found = only(check(text), "BTN116")
    assert [f.range.start_line for f in found] == [5]
    whole = "<!-- baton: ignore-file BTN116 -->\n" + text
    assert only(check(whole), "BTN116") == []


def test_task_based_plans_track_status_on_the_heading_not_the_boxes(corpus: Path) -> None:
    # The task-based dialect marks `[COMPLETED]` on the phase and leaves its task list as
    # written: open boxes under a completed phase are its convention, not a defect.
    path = corpus / ".claude/specs/001_update_claude_md_neovim/plans/implementation-001.md"
    findings = check_text(Kind.PLAN, path.read_text(), str(path))
    assert only(findings, "BTN111") == []
    on = BatonConfig(conventions={"checkbox-plan": "on"})
    flagged = only(check_text(Kind.PLAN, path.read_text(), str(path), config=on), "BTN111")
    assert len(flagged) == 4


def test_partial_marker_is_accepted() -> None:
    text = "# P\n### Phase 1: A [PARTIAL]\n- [x] a\n- [ ] b\n"
    assert only(check(text), "BTN113") == []


def test_a_partly_done_task_is_still_open() -> None:
    # `[~]` (partly done) is a task that is not done: the phase is not all done.
    text = "# P\n### Phase 1: A [IN PROGRESS]\n- [x] a\n- [~] b\n"
    assert only(check(text), "BTN112") == []
    text = "# P\n### Phase 1: A [COMPLETE]\n- [x] a\n- [~] b\n"
    (found,) = only(check(text), "BTN111")
    assert "1 of 2 tasks are still open" in found.message


def test_a_blocked_phase_is_not_told_to_mark_itself_complete() -> None:
    text = "# P\n### Phase 1: A [BLOCKED]\n- [x] a\n- [x] b\n"
    assert only(check(text), "BTN112") == []


def test_a_plan_without_markers_is_not_told_to_add_one() -> None:
    # The 731 plan tracks progress in its boxes only; no phase has a marker to forget.
    text = "# P\n### Phase 1: A\n- [x] a\n### Phase 2: B\n- [ ] b\n"
    assert only(check(text), "BTN112") == []
    text = "# P\n### Phase 1: A\n- [x] a\n### Phase 2: B [IN PROGRESS]\n- [ ] b\n"
    assert len(only(check(text), "BTN112")) == 1


def test_plan_status_and_optional_phases() -> None:
    # KToroman/nvim_latex 033: an optional phase left undone does not make a COMPLETED plan
    # contradict itself; 034: bare `**Status**:` header lines are the plan's metadata.
    text = ("# Plan\n\n- **Task**: 1 - x\n- **Status**: [COMPLETED]\n\n"
            "### Phase 0: Extra setup [OPTIONAL] [NOT STARTED]\n"
            "### Phase 1: Guard [COMPLETED]\n### Phase 2: Verify [COMPLETED]\n")
    assert only(check(text), "BTN142") == []
    bare = ("# Implementation Plan: Task #42\n\n**Date**: 2026-02-05\n"
            "**Status**: [IMPLEMENTING]\n\n## Overview\n\n"
            "### Phase 1: Fix [COMPLETED]\n- [ ] a\n### Phase 2: Docs [COMPLETED]\n- [ ] b\n")
    (found,) = only(check(bare), "BTN142")
    assert "all 2 phases are done" in found.message
    assert only(check(bare), "BTN111") == []  # a task-based plan: boxes stay as written


def test_streams_that_number_their_own_phases_are_not_duplicates() -> None:
    # AaronCarney/collabboard docs/plans/board-interaction-fixes.md: `## Stream A/B/C`,
    # each with Phase 1-3 and no dependency lines.
    streams = "# Plan\n" + "".join(
        f"\n## Stream {s}\n\n### Phase 1: TDD\n- [ ] t\n### Phase 2: Build\n- [ ] b\n"
        for s in "ABC")
    assert only(check(streams), "BTN110") == []
    flat = "# Plan\n\n## Phases\n### Phase 1: A\n### Phase 2: B\n### Phase 2: C\n"
    assert len(only(check(flat), "BTN110")) == 1
    with_deps = streams.replace("### Phase 2: Build\n", "### Phase 2: Build\ndependencies: [1]\n")
    assert only(check(with_deps), "BTN110")  # ids in dependency lists are ambiguous now


def test_a_marker_hidden_by_a_tick_is_reported_once_by_btn143_not_by_btn112() -> None:
    # issue 34: real-shaped plan, "### Phase 1: ... [COMPLETE] ✓" with every task ticked;
    # BTN112 said the phase "is not marked [COMPLETE]" while quoting the marker
    text = ("# Implementation Plan\n\n## Implementation Phases\n\n"
            "### Phase 1: Foundation Setup [COMPLETE] ✓\n"
            + "".join(f"- [x] Task 1.{n}: step {n}\n" for n in range(1, 13))
            + "\n### Phase 2: Integration [IN PROGRESS]\n- [x] Task 2.1: wire\n"
            "- [ ] Task 2.2: verify\n")
    found = check(text)
    assert only(found, "BTN112") == []
    [hidden] = only(found, "BTN143")
    assert hidden.range.start_line == 4 and "`✓` after [COMPLETE]" in hidden.message


def test_headings_naming_topics_about_a_phase_are_not_two_definitions(tmp_path: Path) -> None:
    """issue 34: an entry checklist under docs/**/plans/ (from a public tree, shortened):
    `## Phase 1 Entry Blockers` and `## Phase 1 Data-Plane Readiness` are topics about
    Phase 1, not two definitions of it."""
    from baton_lsp.rules.checker import check_paths

    text = ("# P0-E1 — Phase 1 Entry Checklist\n\n**Status:** Draft\n\n"
            "## Phase 0 Milestone Status\n\n| Milestone | Status |\n|---|---|\n"
            "| M0.5 | PENDING |\n\n## Phase 1 Entry Blockers\n\n"
            "### BLOCKER-01: Wave 0 Group Plans Reference Wrong ADR\n\n"
            "## Phase 1 Data-Plane Readiness\n\n### DATA-01: Domain Source-of-Record Mapping\n\n"
            "## Phase 0 Completion Gate\n\n"
            "- [ ] **BLOCKER-01** — Wave 0 G1–G6 files contain no ADR-0090 gate references\n"
            "- [ ] **DATA-01** — Phase 1 Domain Source-of-Record Mapping completed\n\n"
            "## Phase 1 Notice-to-Proceed Declaration\n")
    plan = tmp_path / "docs/architecture/plans/MASTER/P0-E1-Phase-1-Entry-Checklist.md"
    plan.parent.mkdir(parents=True)
    plan.write_text(text, encoding="utf-8")
    (tmp_path / ".claude").mkdir()
    assert [f for f in check_paths([tmp_path]).findings if f.code == "BTN110"] == []
    # headings that define the phase (a separator, a marker) are still duplicates
    for head in ("## Phase 1: Entry Blockers", "## Phase 1 Entry Blockers [IN PROGRESS]"):
        dup = text.replace("## Phase 1 Entry Blockers", head).replace(
            "## Phase 1 Data-Plane Readiness", "## Phase 1: Data-Plane Readiness")
        assert len(only(check(dup), "BTN110")) == 1, head  # Notice-to-Proceed: a topic

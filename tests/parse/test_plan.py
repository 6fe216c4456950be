"""Plan parser: all three generations, every dependency form, fences ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_lsp.model.plan import DependencyForm, Generation, PlanRole
from baton_lsp.parse.plan import normalize_id, parse_plan_text

G1 = """# Dark Mode Implementation Plan

## Metadata
- **Date**: 2025-10-02
- **Feature**: Dark mode
- **Research Reports**:
  - [Theme research](../reports/001_themes.md)
  - [Contrast study](../reports/002_contrast.md)

## Implementation Phases

### Phase 1: Tokens [COMPLETED]
**Objective**: Define colour tokens
**Dependencies**: []

Tasks:
- [x] Define tokens
  - [x] Nested detail

### Phase 2: Components [COMPLETED]
**Dependencies**: [1]

- [x] Update components
"""

G2 = """# Feature Plan

## Metadata
- **Date**: 2025-11-30
- **Feature**: Something
- **Status**: [IN PROGRESS]
- **Structure Level**: 0

## Implementation Phases

### Phase 0: Preparation [COMPLETE]
dependencies: []

### Phase 1: Core [IN PROGRESS]
dependencies: [0]

- [ ] first
- [X] second

### Phase 2.5: Hotfix [NOT STARTED]
depends_on: [phase_1, phase_0]

### Phase 3: Wrap up [NOT STARTED]
**Dependencies**: Phase 1 (completed - core), Phase 2.5 (Hard Barrier)
"""

G3 = """# Implementation Plan: Update CLAUDE.md

- **Task**: 001 - Update CLAUDE.md
- **Status**: [COMPLETED]
- **Effort**: 2 hours
- **Dependencies**: None

## Overview

Text.

## Implementation Phases

### Phase 1: Audit [COMPLETED]

- **Goal:** Identify sections
- **Tasks:**
  - [ ] Read current file
  - [ ] Catalog references
- **Timing:** 30 minutes
"""


def test_g1_metadata_with_multiline_reports_and_bold_dependencies() -> None:
    plan = parse_plan_text(G1, "/ws/.claude/specs/plans/007_dark.md")
    assert plan.generation is Generation.G1
    assert plan.has_metadata_heading
    reports = plan.meta("Research Reports")
    assert reports is not None
    assert [i.text for i in reports.items] == [
        "[Theme research](../reports/001_themes.md)",
        "[Contrast study](../reports/002_contrast.md)",
    ]
    assert reports.range.start_line == 5 and reports.range.end_line == 7
    p1, p2 = plan.phases
    assert p1.dependencies is not None and p1.dependencies.form is DependencyForm.BOLD
    assert p1.dependencies.explicit_none
    assert [r.id for r in p2.dependencies.refs] == ["1"]
    assert p1.status is not None and p1.status.text == "COMPLETED"
    assert [(t.depth, t.checked) for t in p1.tasks] == [(0, True), (1, True)]
    assert p1.tasks[1].parent == 0


def test_g2_phase_zero_decimal_ids_and_every_list_form() -> None:
    plan = parse_plan_text(G2)
    assert plan.generation is Generation.G2
    assert [p.id for p in plan.phases] == ["0", "1", "2.5", "3"]
    by_id = {p.id: p for p in plan.phases}
    assert by_id["1"].dependencies.form is DependencyForm.BARE
    assert [r.id for r in by_id["1"].dependencies.refs] == ["0"]
    dep = by_id["2.5"].dependencies
    assert dep.form is DependencyForm.DEPENDS_ON
    assert [(r.raw, r.id) for r in dep.refs] == [("phase_1", "1"), ("phase_0", "0")]
    line = G2.split("\n")[dep.refs[0].range.start_line]
    r = dep.refs[0].range
    assert line[r.start_char:r.end_char] == "phase_1"
    prose = by_id["3"].dependencies
    assert prose.form is DependencyForm.PROSE
    assert [r.id for r in prose.refs] == ["1", "2.5"]
    assert [t.marker for t in by_id["1"].tasks] == [" ", "X"]


def test_g3_bullet_metadata_without_heading() -> None:
    plan = parse_plan_text(G3)
    assert plan.generation is Generation.G3
    assert not plan.has_metadata_heading
    assert [m.key for m in plan.metadata] == ["Task", "Status", "Effort", "Dependencies"]
    phase = plan.phases[0]
    assert phase.dependencies is None  # the plan-level Dependencies bullet is not a phase dep
    assert len(phase.tasks) == 2 and not any(t.checked for t in phase.tasks)
    assert phase.tasks[0].depth == 0  # nested under "- **Tasks:**", but the first checkbox


def test_h2_phase_headings_from_fixtures() -> None:
    text = "# Test Plan\n\n## Phase 1: Foundation\n**Dependencies**: []\n\n" \
           "## Phase 2: Core\n**Dependencies**: [1]\n"
    plan = parse_plan_text(text)
    assert [(p.id, p.level, p.title) for p in plan.phases] == [("1", 2, "Foundation"),
                                                               ("2", 2, "Core")]


def test_no_dependency_lines_at_all() -> None:
    plan = parse_plan_text("# P\n\n### Phase 1: A\n\n- [ ] x\n\n### Phase 2: B\n")
    assert all(p.dependencies is None for p in plan.phases)


def test_fenced_sample_plans_create_no_phantom_phases() -> None:
    text = """# Plan

## Implementation Phases

### Phase 1: Real [COMPLETE]
dependencies: []

```bash
cat > /tmp/test.md <<'PLAN'
# Test
### Phase 1: Fake [COMPLETE]
dependencies: []
### Phase 2: Fake [COMPLETE]
dependencies: [1]
- [ ] fake task
PLAN
```

  ```markdown
  ### Phase 7: Indented fence inside a list
  dependencies: [all previous phases]
  ```

- [x] real task
"""
    plan = parse_plan_text(text)
    assert [p.id for p in plan.phases] == ["1"]
    assert len(plan.phases[0].tasks) == 1
    assert plan.phases[0].dependencies.explicit_none


def test_pseudo_phases_outside_the_phases_section_are_not_phases() -> None:
    text = """# Plan

## Technical Design

### Phase 1: Sketch only

#### Phase 2 [COMPLETE]

## Implementation Phases

### Phase 1: Real

### Phase 2: Also real

## Testing Strategy

### Phase 1 Testing
"""
    plan = parse_plan_text(text)
    assert [(p.id, p.title) for p in plan.phases] == [("1", "Real"), ("2", "Also real")]


def test_expanded_phase_links_all_three_forms() -> None:
    text = """# Plan

### Phase 1: Setup [See: phase_1_setup.md]

### Phase 2: Build
**File**: phase_2_build.md

### Phase 3: Ship [COMPLETE]
**Status**: [PENDING]
For details see [Phase 3 Details](phase_3_ship.md).
"""
    plan = parse_plan_text(text)
    assert [p.expanded_link.target for p in plan.phases] == [
        "phase_1_setup.md", "phase_2_build.md", "phase_3_ship.md"]
    assert plan.phases[0].status is None and plan.phases[0].title == "Setup"
    assert plan.phases[2].body_status.text == "PENDING"


def test_phase_file_and_stage_file_roles() -> None:
    phase_file = parse_plan_text(
        "# Phase 2: Backend\n\n## Metadata\n- **Phase Number**: 2\n"
        "- **Parent Plan**: [Main](../main.md)\n- **Dependencies**: Phase 1 (Hard Barrier)\n\n"
        "## Phase 2 Summary\n- [ ] task\n",
        "/ws/.claude/specs/plans/010_x/phase_2_backend.md")
    assert phase_file.role is PlanRole.PHASE_FILE
    assert [p.id for p in phase_file.phases] == ["2"]
    assert [r.id for r in phase_file.phases[0].dependencies.refs] == ["1"]
    stage = parse_plan_text("# Stage 1: Foundation\n\n- **Parent Phase**: phase_7_x\n",
                            "/ws/.claude/specs/plans/045/phase_7_x/stage_1_foundation.md")
    assert stage.role is PlanRole.STAGE_FILE and stage.phases == []


def test_success_criteria_and_links() -> None:
    text = "# P\n\n## Success Criteria\n- [ ] a\n- [x] b\n\n## Notes\n" \
           "See [r](../reports/r.md) and `[not](a link)`.\n"
    plan = parse_plan_text(text)
    assert [t.checked for t in plan.success_criteria] == [False, True]
    assert [link.target for link in plan.links] == ["../reports/r.md"]


def test_crlf_and_no_trailing_newline() -> None:
    text = "# P\r\n\r\n### Phase 1: A [COMPLETE]\r\ndependencies: []\r\n- [x] done"
    plan = parse_plan_text(text)
    assert plan.phases[0].status.text == "COMPLETE"
    assert plan.phases[0].tasks[0].checked


@pytest.mark.parametrize(("raw", "expected"), [("3", "3"), ("03", "3"), ("2.5", "2.5"),
                                               ("2.50", "2.50"), ("1.10", "1.10"),
                                               ("01.02", "1.2"), ("2.0", "2"), ("0", "0"),
                                               ("6a", "6a"), ("03B", "3B"), ("D1", "D1")])
def test_normalize_id(raw: str, expected: str) -> None:
    assert normalize_id(raw) == expected


def test_062_debug_strategy_has_no_phantom_phases(corpus: Path) -> None:
    path = corpus / ".claude/specs/062_subagent_phase_update_debug/plans/001-debug-strategy.md"
    plan = parse_plan_text(path.read_text(encoding="utf-8"), str(path))
    assert [p.id for p in plan.phases] == ["1", "2", "3", "4", "5"]
    assert [p.title for p in plan.phases][:2] == [
        "Root Cause Verification", "Implement Progress Tracking Instructions"]
    assert [r.id for r in plan.phases[4].dependencies.refs] == ["3"]


def test_every_corpus_plan_parses(corpus: Path) -> None:
    files = [p for p in corpus.rglob("*.md") if "/plans/" in str(p) or "fixtures" in str(p)]
    assert len(files) > 30
    for path in files:
        plan = parse_plan_text(path.read_text(encoding="utf-8"), str(path))
        for phase in plan.phases:
            assert phase.heading_range.start_line < plan.line_count

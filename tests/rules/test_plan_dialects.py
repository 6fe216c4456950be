"""The plan dialects of the seeds' author's newest trees (issue 33), each read from an excerpt
of a real plan (the trees of tests/author_trees.txt and two more of the author's,
benbrastmckie/cslib@2ce020c and benbrastmckie/BimodalHarness@d8fb7c9; path named per
excerpt): task-based plans with bare `**Project Number**:` headers, status lines that
restate the heading's status, hierarchical `Phase 1.10` ids and lettered `Phase 2A` ones,
recap headings, terminal markers, `**Depends on**:` lines and a task's dependencies on other
tasks. Every test here failed before the dialect was read."""

from __future__ import annotations

import json

from baton_lsp.model.base import Kind
from baton_lsp.model.graph import build_graph
from baton_lsp.parse.plan import parse_plan_text
from baton_lsp.rules.engine import check_text
from tests.helpers import only

PATH = "/ws/.claude/specs/215_fix/plans/implementation-001.md"

PROJECT_NUMBER = """# Implementation Plan: Fix /todo Command Task Block Removal

**Project Number**: 215
**Type**: bugfix
**Priority**: High
**Complexity**: Medium
**Estimated Hours**: 2.5
**Phases**: 6

---

## Phase Breakdown

### Phase 1: Task Block Structure Definition [COMPLETED]

**Started**: 2025-12-28
**Completed**: 2025-12-28

**Acceptance Criteria**:
- [ ] `<task_block_structure>` section added to Stage 4
- [ ] Heading pattern defined: `^### \\d+\\. `
"""
"""ProofChecker/.opencode/specs/215_fix_todo_task_removal/plans/implementation-001.md"""

DEFERRED = """# Implementation Plan: Module Hierarchy Restructuring

**Task**: 219
**Status**: [COMPLETED]

## Implementation Phases

### Phase 6: Create and Update Tests [DEFERRED]

- **Status**: Deferred to future task

**Goal**: Ensure comprehensive test coverage for moved code

### Phase 7: Manual TODO.md Cleanup and Standardization [COMPLETED]

**Goal**: Prepare TODO.md for successful /todo execution

**Status**: [PASS] COMPLETED (2025-12-29)
**Actual Time**: 2 hours

### Phase 8: Sorry registry [SKIPPED]

**Status**: SKIPPED for MVP
"""
"""Phases 6 and 7: ProofChecker/.opencode/specs/219_restructure_module_hierarchy and
235_find_and_fix_root_cause_of_todo_command_not_archiving_completed_tasks (implementation-001);
phase 8 is the issue's own example."""

HIERARCHICAL = """# Implementation Plan: Hybrid Proof Search - Tactic Mode + Programmatic API

## Implementation Phases

### Phase 1.1: Tactic Syntax and Basic Infrastructure [NOT STARTED]

**Tasks**:
- [ ] Create `Logos/Core/Automation/Tactics.lean` file for tactic implementations

### Phase 1.2: Axiom Matching in Tactic Monad [NOT STARTED]

### Phase 1.10: Phase 1 Integration and Validation [NOT STARTED]

### Phase 2.1: Axiom Refactor Planning and Preparation [NOT STARTED]

### Phase 2.10: Reimplement Tactic to Use Programmatic API [NOT STARTED]

## Testing & Validation

### Phase 1 Testing

**Unit Tests**:
- [ ] Test each tactic component individually

### Phase 2 Testing

- [ ] Test axiom refactor preserves all existing proofs
"""
"""ProofChecker/.opencode/specs/315_research_and_resolve_axiom_prop_vs_type_blocker_for_proof_
term_construction/plans/implementation-001.md"""

NOT_APPLICABLE = """# Implementation Plan: Fix Verbose Artifact Output in Commands

- **Task**: 202 - Fix verbose artifact output in commands
- **Status**: [COMPLETED]
- **Note**: Investigation revealed issue already resolved - no implementation needed

## Implementation Phases

### Phase 1: Fix task-executor Return Format [NOT APPLICABLE]

- **Tasks**:
  - [ ] Read current task-executor.md return format (lines 559-706)

### Phase 2: Fix batch-task-orchestrator Return Format [NOT APPLICABLE]

### Phase 3: Testing and Validation [NOT APPLICABLE]

### Phase 4: Documentation Updates [NOT APPLICABLE]
"""
"""ProofChecker/.opencode/specs/202_fix_verbose_artifact_output/plans/implementation-001.md"""

DEPENDS_ON = """# Implementation Plan: Task #792 — Right-size slash-command `model:` frontmatter

- **Task**: 792 - right_size_command_model_tiers
- **Status**: [NOT STARTED]
- **Dependencies**: 790 (refreshed tiering rationale, complete)

## Implementation Phases

**Dependency Analysis**:
| Wave | Phases | Blocked by |
|------|--------|------------|
| 1 | 1, 2, 3 | -- |
| 2 | 4 | 1, 2, 3 |

### Phase 1: OMIT-FIELD edits (remove `model: opus`) [NOT STARTED]

**Depends on**: none

### Phase 2: DOWNGRADE-TO-SONNET edits (`opus` -> `sonnet`) [NOT STARTED]

**Depends on**: none

### Phase 3: Root-cause template fix + stale-doc reconciliation [NOT STARTED]

- **Depends on:** none

### Phase 4: Verification greps + flag two-picker-resync user step [NOT STARTED]

**Depends on**: 1, 2, 3
"""
"""nvim/specs/792_right_size_command_model_tiers/plans/01_right-size-command-model-tiers.md
(phase 3's bullet spelling from nvim/.claude/context/formats/plan-format.md)."""

LETTERED = """# Implementation Plan: Construct D as translation group

- **Task**: 956 - construct_d_as_translation_group_from_syntax
- **Status**: [IMPLEMENTING]

## Implementation Phases

### Phase 1: Boneyard Archival [COMPLETED]

- **Dependencies**: None

### Phase 2A: NoMaxOrder and NoMinOrder [COMPLETED]

- **Dependencies**: Phase 1

### Phase 2B: Countable Instance [NOT STARTED]

- **Dependencies**: Phase 1

### Phase 3: DenselyOrdered from DN Axiom [NOT STARTED]

- **Dependencies**: Phase 2B

### Phase 4: Cantor Isomorphism [NOT STARTED]

- **Dependencies**: Phase 2B (Countable), Phase 3 (DenselyOrdered), Phase 2A (NoMax/NoMin)
"""
"""ProofChecker/specs/archive/956_construct_d_as_translation_group_from_syntax/plans/
implementation-012.md (phase titles and dependency lines as written)."""

TASK_DEPENDENCIES = """# Implementation Plan: Density frame condition

- **Task**: 957 - density_frame_condition_irreflexive_temporal
- **Status**: [NOT STARTED]

## Implementation Phases

### Phase 1: DerivationTree.irr Constructor [NOT STARTED]

**Depends on**: none

### Phase 2: Truth Independence Lemma [NOT STARTED]

**Depends on**: 1

- **Dependencies**: Task 956 Phase 5 (BLOCKED, this task unblocks it)

### Phase 3: Discrete Staged Build [NOT STARTED]

- **Dependencies:** Task 977 Phase 0 (DurationTransfer fix) [COMPLETED], Phase 2
"""
"""The `**Depends on**:` spelling of the newest plans with the dependency lines on other tasks
that the 957 plan (header) and ProofChecker/specs/archive/974_prove_discrete_timeline_
succorder_predorder/plans/implementation-004.md (phase 6.5) write."""


def check(text: str) -> list:
    return check_text(Kind.PLAN, text, PATH)


def test_bare_project_number_header_makes_a_task_based_plan_exempt_from_btn111() -> None:
    plan = parse_plan_text(PROJECT_NUMBER)
    assert plan.task_based
    assert [t.checked for t in plan.phases[0].tasks] == [False, False]
    assert only(check(PROJECT_NUMBER), "BTN111") == []


def test_a_plan_that_names_no_task_still_gets_btn111() -> None:
    untasked = PROJECT_NUMBER.replace("**Project Number**: 215\n", "")
    assert not parse_plan_text(untasked).task_based
    assert len(only(check(untasked), "BTN111")) == 1


def test_status_lines_restating_the_heading_status_agree() -> None:
    plan = parse_plan_text(DEFERRED)
    assert [p.body_status.text for p in plan.phases if p.body_status] == [
        "Deferred to future task", "COMPLETED", "SKIPPED for MVP"]
    assert only(check(DEFERRED), "BTN117") == []


def test_a_status_line_that_contradicts_the_heading_is_still_reported() -> None:
    stale = "# P\n\n### Phase 1: Fix skill-implementer [COMPLETED]\n\n**Status**: [IMPLEMENTING]\n"
    found = only(check(stale), "BTN117")
    assert len(found) == 1 and "IMPLEMENTING" in found[0].message


def test_hierarchical_phase_ids_are_not_decimals() -> None:
    plan = parse_plan_text(HIERARCHICAL)
    assert [p.id for p in plan.phases] == ["1.1", "1.2", "1.10", "2.1", "2.10"]
    assert only(check(HIERARCHICAL), "BTN110") == []


def test_recap_headings_of_a_part_are_not_stranded_phases() -> None:
    assert parse_plan_text(HIERARCHICAL).stranded_phases == []
    assert only(check(HIERARCHICAL), "BTN141") == []
    stray = HIERARCHICAL + "\n### Phase 3.1: Forgotten [NOT STARTED]\n- [ ] x\n"
    assert len(only(check(stray), "BTN141")) == 1


def test_not_applicable_phases_are_terminal_for_the_plan_status() -> None:
    from baton_lsp.model.plan import is_done  # here: the name is new with the reading

    plan = parse_plan_text(NOT_APPLICABLE)
    assert all(is_done(p) for p in plan.phases)
    assert only(check(NOT_APPLICABLE), "BTN142") == []


def test_depends_on_lines_give_the_waves() -> None:
    plan = parse_plan_text(DEPENDS_ON)
    assert [(p.dependencies.explicit_none, [r.id for r in p.dependencies.refs])
            for p in plan.phases if p.dependencies] == [
        (True, []), (True, []), (True, []), (False, ["1", "2", "3"])]
    graph = build_graph(plan)
    assert not graph.implicit
    assert graph.waves == [["1", "2", "3"], ["4"]]  # the plan's own Dependency Analysis table


def test_depends_on_cycles_and_unknown_ids_are_seen() -> None:
    cyclic = DEPENDS_ON.replace("**Depends on**: none\n\n### Phase 2",
                                "**Depends on**: 4\n\n### Phase 2", 1)
    assert len(only(check(cyclic), "BTN103")) == 1
    unknown = DEPENDS_ON.replace("**Depends on**: 1, 2, 3", "**Depends on**: 1, 2, 9")
    found = only(check(unknown), "BTN101")
    assert len(found) == 1 and "depends on phase 9," in found[0].message


def test_lettered_phase_ids_are_phases_and_dependency_targets() -> None:
    plan = parse_plan_text(LETTERED)
    assert [p.id for p in plan.phases] == ["1", "2A", "2B", "3", "4"]
    assert build_graph(plan).waves == [["1"], ["2A", "2B"], ["3"], ["4"]]
    assert only(check(LETTERED), "BTN101") == []


def test_dependencies_on_other_tasks_are_not_the_phase_order() -> None:
    plan = parse_plan_text(TASK_DEPENDENCIES)
    two, three = plan.phases[1], plan.phases[2]
    assert two.dependencies is not None and [r.id for r in two.dependencies.refs] == ["1"]
    assert two.extra_dependency_lines == []
    assert three.dependencies is not None and [r.id for r in three.dependencies.refs] == ["2"]
    findings = check(TASK_DEPENDENCIES)
    assert only(findings, "BTN106") == [] and only(findings, "BTN101") == []


def test_the_engine_reads_the_waves_baton_graph_draws(tmp_path, capsys) -> None:
    from baton_lsp.cli.main import main
    from baton_lsp.workflow.plans import PlanFiles

    plan = tmp_path / ".claude/specs/956_x/plans/implementation-012.md"
    plan.parent.mkdir(parents=True)
    plan.write_text(LETTERED)
    assert main(["graph", str(plan), "--format", "json"]) == 0
    drawn = json.loads(capsys.readouterr().out)
    assert drawn["waves"] == [["1"], ["2A", "2B"], ["3"], ["4"]]
    waves = PlanFiles(tmp_path).waves(plan)  # phases 1 and 2A are [COMPLETED]
    assert waves == [["2B"], ["3"], ["4"]]
    assert main(["graph", str(plan)]) == 0
    assert "Wave 2 [parallel]: Phase 2A (NoMaxOrder and NoMinOrder), Phase 2B" in \
        capsys.readouterr().out


def test_unknown_dependency_lists_hierarchical_ids_in_order() -> None:
    unknown = HIERARCHICAL.replace("**Tasks**:\n", "**Depends on**: 3.1\n\n**Tasks**:\n")
    found = only(check(unknown), "BTN101")
    assert len(found) == 1
    assert found[0].message.endswith("valid phase ids: 1.1, 1.2, 1.10, 2.1, 2.10")


TASK_LABELS = """# Implementation Plan: Plan PR 1 Decomposition into Smaller PRs

- **Task**: 124 - Plan PR 1 Decomposition into Smaller PRs
- **Status**: [COMPLETED]

## Implementation Phases

### Phase 1: Create All 11 Sub-PR Tasks with Report Artifacts [COMPLETED]

**Goal**: Create 11 tasks in state.json (tasks 125-135), one per sub-PR.

**Task 125 (Sub-PR 1.1): 3-Tier Hilbert Hierarchy Refactoring**
- Branch: `propositional/hilbert-hierarchy`
- Estimated: ~483 insertions, ~288 deletions
- Dependencies: none
- Required by: all other sub-PRs (125 is the foundation)

**Task 126 (Sub-PR 1.2): IntMin Instances**
- Branch: `propositional/intmin-instances`
- Dependencies: 125
- Required by: 130, 131, 132, 133

**Task 130 (Sub-PR 1.6): Classical Soundness**
- Dependencies: 126, 127

### Phase 2: Verify the Tasks [COMPLETED]

**Depends on**: 1
"""


def test_a_tasks_labelled_lines_are_the_tasks_not_the_phases() -> None:
    """cslib `specs/124_plan_pr1_decomposition_into_smaller_prs/plans/01_pr1-decomposition-
    plan.md`: each sub-PR task under its bold `**Task N ...**` label lists its dependencies on
    other tasks; none is Phase 1's dependency line (eleven BTN106 before)."""
    plan = parse_plan_text(TASK_LABELS, PATH)
    first = plan.phases[0]
    assert first.dependencies is None and first.extra_dependency_lines == []
    found = check_text(Kind.PLAN, TASK_LABELS, PATH)
    assert only(found, "BTN106") == [] and only(found, "BTN102") == []
    assert build_graph(plan).deps == {"1": [], "2": ["1"]}


DEPENDS_ABSENT = """# Implementation Plan: Extract Supervised Training Data from Existing Proofs

- **Task**: 9 - Extract supervised training data
- **Status**: [NOT STARTED]

## Implementation Phases

### Phase 1: Lean ProofStep Structure and extractStepSequence [NOT STARTED]

**Goal**: Implement the core Lean data structure.

### Phase 2: Python ProofStepRecord Schema and Action Mapping [NOT STARTED]

**Depends on**: none

### Phase 3: Lean proof_extractor Executable [NOT STARTED]

**Goal**: Create a `lake exe proof_extractor` executable.

### Phase 4: Python Ingestion Pipeline for Proof Steps [NOT STARTED]

**Depends on**: 2, 3

### Phase 5: Data Augmentation and Final Dataset Assembly [NOT STARTED]

**Depends on**: 4
"""


def test_a_phase_without_depends_on_follows_every_earlier_phase() -> None:
    """BimodalHarness `specs/009_extract_supervised_training_data_from_existing_proofs/plans/
    01_proof-extraction-plan.md`: Phase 3 has no `**Depends on**:` line, which the author's
    plan-format.md reads as "sequential (depends on all prior phases)". It is no first-wave
    phase (BTN105 said it would be), and the waves follow the format."""
    plan = parse_plan_text(DEPENDS_ABSENT, PATH)
    graph = build_graph(plan)
    assert sorted(graph.deps["3"]) == ["1", "2"]
    assert graph.waves == [["1", "2"], ["3"], ["4"], ["5"]]
    assert only(check_text(Kind.PLAN, DEPENDS_ABSENT, PATH), "BTN105") == []


def test_the_earlier_phases_a_phase_follows_are_the_unawaited_ones() -> None:
    """1 none, 2 after 1, 3 none, 4 without a line: 4 follows 2 and 3 (so 1 too), in wave 3;
    following only the phase before it would have put it in wave 2 beside 2."""
    text = DEPENDS_ABSENT.replace("**Goal**: Implement the core Lean data structure.",
                                  "**Depends on**: none")
    text = text.replace("### Phase 2: Python ProofStepRecord Schema and Action Mapping "
                        "[NOT STARTED]\n\n**Depends on**: none",
                        "### Phase 2: Python ProofStepRecord Schema and Action Mapping "
                        "[NOT STARTED]\n\n**Depends on**: 1")
    text = text.replace("**Goal**: Create a `lake exe proof_extractor` executable.",
                        "**Depends on**: none")
    text = text.replace("**Depends on**: 2, 3", "**Goal**: ingest")
    graph = build_graph(parse_plan_text(text, PATH))
    assert sorted(graph.deps["4"]) == ["2", "3"]
    assert graph.wave_of("4") == 3 and graph.wave_of("3") == 1


FILE_EDITED = """# Implementation Plan: Fix /todo archival

- **Task**: 235 - Fix /todo archival
- **Status**: [COMPLETED]

## Implementation Phases

### Phase 1: Manual TODO.md Cleanup [COMPLETED]

- **File**: TODO.md
- **Action**: remove the completed task blocks

### Phase 2: Expanded [NOT STARTED]

**File**: phase_2_build.md
"""


def test_a_file_line_naming_the_edited_file_is_no_link() -> None:
    """The issue's `- **File**: TODO.md` (a phase's file to edit, in the author's plans) was
    checked as the phase's expansion and reported missing (BTN130); the seeds' `**File**:
    phase_2_build.md` still is one."""
    plan = parse_plan_text(FILE_EDITED, PATH)
    assert plan.phases[0].expanded_link is None
    assert plan.phases[1].expanded_link is not None
    assert [f.message.split("'")[1] for f in only(check_text(Kind.PLAN, FILE_EDITED, PATH),
                                                 "BTN130")] == ["phase_2_build.md"]


def test_a_task_checkbox_is_no_label() -> None:
    """nvim `specs/archive/497_per_phase_plan_item_checkoff/plans/01_checkoff-plan.md`: the
    phase's `**Depends on**:` line follows its `- [x] **Task 1.1**: ...` checkboxes and is
    still the phase's."""
    text = """# Implementation Plan: Per-phase plan item check-off

- **Task**: 497 - Per-phase check-off
- **Status**: [COMPLETED]

## Implementation Phases

### Phase 1: Update Primary Agent File (.opencode/) [COMPLETED]

**Tasks**:
- [x] **Task 1.1**: Insert Stage 4B-ii subsection *(completed)*
  - Add heading `#### 4B-ii. Check Off Completed Items in Plan File`
- [x] **Task 1.2**: Update Stage 1 successor behavior *(completed)*

**Timing**: 45 minutes

**Depends on**: none

### Phase 2: Mirror the change [COMPLETED]

**Depends on**: 1
"""
    phases = parse_plan_text(text, PATH).phases
    assert phases[0].dependencies is not None and phases[0].dependencies.explicit_none
    assert [r.id for r in phases[1].dependencies.refs] == ["1"]

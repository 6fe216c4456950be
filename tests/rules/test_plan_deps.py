"""BTN10x dependency rules."""

from __future__ import annotations

from pathlib import Path

from baton_lsp.model.base import Kind
from baton_lsp.rules.engine import check_file, check_text
from tests.helpers import apply_edits, only

PATH = "/ws/.claude/specs/001_x/plans/001-x-plan.md"

CIRCULAR = """# Circular Dependency Plan Test

## Implementation Phases

### Phase 1: Module A
**Dependencies**: [3]

### Phase 2: Module B
**Dependencies**: [1]

### Phase 3: Module C
**Dependencies**: [2]
"""


def check(text: str) -> list:
    return check_text(Kind.PLAN, text, PATH)


def test_circular_plan_yields_exactly_one_cycle_1_3_2_1() -> None:
    cycles = only(check(CIRCULAR), "BTN103")
    assert len(cycles) == 1
    f = cycles[0]
    assert "1 → 3 → 2 → 1" in f.message
    assert f.range.start_line == 5  # the `[3]` of Phase 1
    assert CIRCULAR.split("\n")[5][f.range.start_char:f.range.end_char] == "3"
    assert {r.message for r in f.related} == {"Phase 3 depends on phase 2",
                                             "Phase 2 depends on phase 1"}


def test_two_independent_cycles_are_two_findings() -> None:
    text = ("# P\n### Phase 1: A\ndependencies: [2]\n### Phase 2: B\ndependencies: [1]\n"
            "### Phase 3: C\ndependencies: [4]\n### Phase 4: D\ndependencies: [3]\n")
    messages = [f.message for f in only(check(text), "BTN103")]
    assert len(messages) == 2
    assert "1 → 2 → 1" in messages[0] and "3 → 4 → 3" in messages[1]


def test_acyclic_diamond_has_no_dependency_findings() -> None:
    text = ("# P\n### Phase 1: A\n**Dependencies**: []\n### Phase 2: B\n**Dependencies**: [1]\n"
            "### Phase 3: C\n**Dependencies**: [1]\n### Phase 4: D\n**Dependencies**: [2, 3]\n")
    assert [f for f in check(text) if f.code.startswith("BTN10")] == []


def test_unknown_dependency_names_valid_ids_and_fix_removes_it() -> None:
    text = "# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\ndependencies: [1, 7, 0]\n"
    found = only(check(text), "BTN101")
    assert len(found) == 2
    assert "depends on phase 7" in found[0].message and "1, 2" in found[0].message
    fixed = apply_edits(text, found[0].fix.edits)
    assert "dependencies: [1, 0]" in fixed
    fixed_last = apply_edits(text, found[1].fix.edits)
    assert "dependencies: [1, 7]" in fixed_last


def test_forward_references_and_phase_prefixes_are_legal() -> None:
    text = ("# P\n### Phase 1: A\ndepends_on: [phase_2]\n### Phase 2: B\n"
            "**Dependencies**: [Phase 3]\n### Phase 3: C\ndependencies: []\n")
    assert only(check(text), "BTN101") == []


def test_unreadable_dependency_token() -> None:
    text = "# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\ndependencies: [setup]\n"
    found = only(check(text), "BTN101")
    assert len(found) == 1 and "cannot read dependency 'setup'" in found[0].message


def test_self_dependency_with_fix() -> None:
    text = "# P\n### Phase 1: A\ndependencies: [1]\n"
    found = only(check(text), "BTN102")
    assert len(found) == 1 and found[0].range.start_line == 2
    assert apply_edits(text, found[0].fix.edits) == "# P\n### Phase 1: A\ndependencies: []\n"
    assert only(check(text), "BTN103") == []


def test_duplicate_dependency() -> None:
    text = "# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\ndependencies: [1, 1]\n"
    found = only(check(text), "BTN104")
    assert len(found) == 1
    assert apply_edits(text, found[0].fix.edits).endswith("dependencies: [1]\n")


def test_undeclared_dependencies_only_when_others_declare() -> None:
    mixed = ("# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\n- [ ] t\n"
             "### Phase 3: C\ndependencies: [1]\n")
    found = only(check(mixed), "BTN105")
    assert len(found) == 1 and found[0].range.start_line == 3
    assert "dependencies: []" in apply_edits(mixed, found[0].fix.edits).split("\n")[4]
    none = "# P\n### Phase 1: A\n### Phase 2: B\n"
    assert only(check(none), "BTN105") == []


def test_a_plan_ordered_by_position_is_left_alone() -> None:
    # The 018 repair plan: only the last phase lists the others; phases 2-5 have no list.
    text = "# P\n" + "".join(f"### Phase {n}: P{n}\n- [ ] t\n" for n in range(1, 6)) + \
        "### Phase 6: Close\ndependencies: [1, 2, 3, 4, 5]\n"
    assert only(check(text), "BTN105") == []


def test_second_dependency_line_is_reported() -> None:
    text = "# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\ndependencies: [1]\n" \
           "**Dependencies**: [1]\n"
    found = only(check(text), "BTN106")
    assert len(found) == 1 and found[0].range.start_line == 5


def test_phase_file_dependencies_checked_against_parent(make_workspace) -> None:
    from baton_lsp.workspace.index import WorkspaceIndex

    root: Path = make_workspace({
        ".claude/specs/plans/010_x/010_x.md": "# Main\n### Phase 1: A\n### Phase 2: B\n",
        ".claude/specs/plans/010_x/phase_2_b.md":
            "# Phase 2: B\n\n## Metadata\n- **Parent Plan**: 010_x.md\n"
            "- **Dependencies**: Phase 1 (done), Phase 9 (typo)\n",
    })
    findings = check_file(WorkspaceIndex(root), root / ".claude/specs/plans/010_x/phase_2_b.md")
    unknown = only(findings, "BTN101")
    assert len(unknown) == 1 and "depends on phase 9," in unknown[0].message


def test_circular_fixture_from_corpus_when_present(corpus: Path) -> None:
    path = corpus / ".claude/lib/fixtures/wave_execution/diamond_plan.md"
    findings = check_text(Kind.PLAN, path.read_text(), str(path))
    assert [f for f in findings if f.code.startswith("BTN10")] == []


# A plan whose one ordering line is a `**Prerequisite**:` (from a public tree's plan,
# shortened; quoted lines kept).
PREREQUISITE = """# Implementation Plan: Task #179

## Phases

### Phase 1: Derivation Tree Benchmarks

**Status**: [COMPLETED]

### Phase 2: Semantic Evaluation Benchmarks

**Status**: [COMPLETED]

### Phase 3a: Project-Wide Benchmarking Documentation

**Status**: [COMPLETED]

### Phase 3b: Theory-Specific Performance Targets

**Estimated effort**: 1 hour

**Prerequisite**: Phase 1 and 2 must be complete (needs actual measurements).

### Phase 4: CI Integration (Minimal)

**Status**: [COMPLETED]

**Prerequisites**: Task should exist (ideally researched first, but not required).
"""


def test_a_prerequisite_line_naming_phases_orders_the_waves() -> None:
    """Phase 3b waits for 1 and 2 and no longer for 3a; phases without the line follow the
    ones before them, as in a `**Depends on**:` plan; a prerequisite naming no phase is no
    dependency line."""
    from baton_lsp.model.graph import build_graph
    from baton_lsp.model.plan import DependencyForm
    from baton_lsp.parse.plan import parse_plan_text

    plan = parse_plan_text(PREREQUISITE, PATH)
    deps = {p.id: p.dependencies for p in plan.phases}
    assert deps["3b"] is not None and deps["3b"].form is DependencyForm.PREREQUISITE
    assert [r.id for r in deps["3b"].refs] == ["1", "2"]
    assert deps["4"] is None
    graph = build_graph(plan)
    assert graph.deps["3b"] == ["1", "2"] and graph.deps["4"] == ["3a", "3b"]
    assert [sorted(w) for w in graph.waves] == [["1"], ["2"], ["3a", "3b"], ["4"]]
    assert only(check(PREREQUISITE), "BTN101") == []
    assert only(check(PREREQUISITE), "BTN105") == []


def test_a_prerequisite_naming_a_missing_phase_or_closing_a_cycle_is_reported() -> None:
    missing = PREREQUISITE.replace("Phase 1 and 2 must", "Phase 1 and 7 must")
    [unknown] = only(check(missing), "BTN101")
    line = missing.splitlines()[unknown.range.start_line]
    assert line.startswith("**Prerequisite**:") and "7" in unknown.message
    assert unknown.fix is None  # a sentence: no list item to cut
    cycle = PREREQUISITE.replace(
        "### Phase 1: Derivation Tree Benchmarks\n",
        "### Phase 1: Derivation Tree Benchmarks\n\n**Prerequisite**: Phase 4 (CI) first.\n")
    [found] = only(check(cycle), "BTN103")
    assert "1 → 4" in found.message


def test_a_dependency_line_wins_over_a_prerequisite() -> None:
    text = PREREQUISITE.replace("**Estimated effort**: 1 hour",
                                "**Dependencies**: [2]")
    from baton_lsp.parse.plan import parse_plan_text

    [phase] = [p for p in parse_plan_text(text, PATH).phases if p.id == "3b"]
    assert phase.dependencies is not None and [r.id for r in phase.dependencies.refs] == ["2"]
    assert only(check(text), "BTN106") == []  # the prerequisite is no second line

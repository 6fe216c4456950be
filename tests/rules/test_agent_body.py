"""BTN220-BTN222: STEP numbering, REQUIRED BEFORE targets and duplicate agent names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix as apply

AGENT_PATH = "/ws/.claude/agents/my-agent.md"
BODY_CODES = {"BTN220", "BTN221", "BTN222"}
HEAD = "---\nname: my-agent\ndescription: d\n---\n\n# My Agent\n\n"  # 7 lines


def check(text: str, path: str = AGENT_PATH) -> list[Finding]:
    return [f for f in check_text(Kind.AGENT, text, path) if f.code in BODY_CODES | {"BTN000"}]




def steps(*headings: str) -> str:
    """An agent whose body is the given headings, each followed by one line of text."""
    return HEAD + "".join(f"{h}\n\ntext\n\n" for h in headings)


def line_of(n: int) -> int:
    """0-based line of the n-th (0-based) heading built by `steps`."""
    return 7 + 4 * n


def test_rules_are_registered() -> None:
    for code in sorted(BODY_CODES):
        r = get_rule(code)
        assert r is not None and r.kinds == frozenset({Kind.AGENT}) and "\n\n" in r.doc
    dup = get_rule("BTN222")
    assert dup is not None and dup.cross_file


# -- BTN220 numbering -------------------------------------------------------------------


@pytest.mark.parametrize("headings", [
    ("### STEP 1 - a", "### STEP 2 - b", "### STEP 3 - c"),
    ("### STEP 0 - setup", "### STEP 1 - a", "### STEP 2 - b"),
    ("### STEP 1: a", "### STEP 2: b", "### STEP 2.5: check", "### STEP 3: c"),
    ("### STEP 1 (REQUIRED BEFORE STEP 2) - a", "### STEP 2 (FINAL) - b",
     "### STEP 1-REV (REQUIRED) - r", "### STEP 2-REV - r2"),
    ("### STEP 1 - create", "### STEP 2 - c2", "### STEP 1 - revise", "### STEP 2 - r2"),
    ("## STEP 1 - a", "### STEP 1 - sub a", "### STEP 2 - sub b", "## STEP 2 - b"),
])
def test_consecutive_steps_are_clean(headings: tuple[str, ...]) -> None:
    assert check(steps(*headings)) == []


def test_gap_names_the_missing_step_and_fix_renumbers() -> None:
    text = steps("### STEP 1 (REQUIRED BEFORE STEP 2) - a",
                 "### STEP 2 (REQUIRED BEFORE STEP 4) - b",
                 "### STEP 4 (REQUIRED BEFORE STEP 5) - c",
                 "### STEP 5 - d")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(2))]
    f = found[0]
    assert "STEP 3 is missing" in f.message and "found STEP 4" in f.message
    line = text.split("\n")[line_of(2)]
    assert line[f.range.start_char:f.range.end_char] == "4"
    assert f.fix is not None and not f.fix.safe
    fixed = apply(text, f.fix)
    assert "### STEP 2 (REQUIRED BEFORE STEP 3) - b" in fixed
    assert "### STEP 3 (REQUIRED BEFORE STEP 4) - c" in fixed
    assert "### STEP 4 - d" in fixed
    assert check(fixed) == []


def test_duplicate_step_names_the_number_and_first_line() -> None:
    text = steps("### STEP 1: a", "### STEP 2: b", "### STEP 2: c", "### STEP 3: d")
    found = check(text)
    # Only the repeat is reported: STEP 3 after the two STEP 2s continues the sequence.
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(2))]
    assert f"duplicate STEP 2 (also on line {line_of(1) + 1})" in found[0].message
    fixed = apply(text, found[0].fix)
    assert [ln for ln in fixed.split("\n") if ln.startswith("###")] == [
        "### STEP 1: a", "### STEP 2: b", "### STEP 3: c", "### STEP 4: d"]
    assert check(fixed) == []


def test_out_of_order_step_is_reported() -> None:
    text = steps("### STEP 1: a", "### STEP 3: c", "### STEP 2: b")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(1)),
                                                            ("BTN220", line_of(2))]
    assert "STEP 2 comes after STEP 3" in found[1].message
    fixed = apply(text, found[0].fix)
    assert [ln for ln in fixed.split("\n") if ln.startswith("###")] == [
        "### STEP 1: a", "### STEP 2: c", "### STEP 3: b"]


def test_steps_not_starting_at_one_are_reported() -> None:
    found = check(steps("### STEP 2: a", "### STEP 3: b"))
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(0))]
    assert "STEP 1 is missing" in found[0].message


def test_sub_steps_follow_their_step_when_renumbering() -> None:
    text = steps("### STEP 1: a", "### STEP 3: b", "### STEP 3.5: check", "### STEP 4: c")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(1))]
    fixed = apply(text, found[0].fix)
    assert [ln for ln in fixed.split("\n") if ln.startswith("###")] == [
        "### STEP 1: a", "### STEP 2: b", "### STEP 2.5: check", "### STEP 3: c"]


def test_steps_inside_code_fences_are_ignored() -> None:
    text = HEAD + "### STEP 1: a\n\n```markdown\n### STEP 5: example\n```\n\n### STEP 2: b\n"
    assert check(text) == []


def test_renumber_fix_handles_zero_padded_numbers() -> None:
    text = steps("### STEP 01 (REQUIRED BEFORE STEP 03) - a", "### STEP 03 - b")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(1))]
    fixed = apply(text, found[0].fix)
    assert [ln for ln in fixed.split("\n") if ln.startswith("###")] == [
        "### STEP 01 (REQUIRED BEFORE STEP 2) - a", "### STEP 2 - b"]
    assert check(fixed) == []


def test_huge_gaps_are_summarised_not_enumerated() -> None:
    found = check(steps("### STEP 1: a", "### STEP 99999999999999999999: b"))
    assert [(f.code, f.range.start_line) for f in found] == [("BTN220", line_of(1))]
    assert "STEP 2 to STEP 99999999999999999998 are missing" in found[0].message
    found = check(steps("### STEP 1: a", "### STEP 4: b"))
    assert "STEP 2, STEP 3 are missing" in found[0].message


# -- BTN221 REQUIRED BEFORE -------------------------------------------------------------


def test_required_before_pointing_backwards() -> None:
    text = steps("### STEP 1 - a", "### STEP 2 (REQUIRED BEFORE STEP 1) - b", "### STEP 3 - c")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN221", line_of(1))]
    f = found[0]
    assert "REQUIRED BEFORE STEP 1" in f.message and "expected STEP 3" in f.message
    line = text.split("\n")[line_of(1)]
    assert line[f.range.start_char:f.range.end_char] == "REQUIRED BEFORE STEP 1"
    fixed = apply(text, f.fix)
    assert "### STEP 2 (REQUIRED BEFORE STEP 3) - b" in fixed and check(fixed) == []


def test_required_before_pointing_to_itself() -> None:
    found = check(steps("### STEP 1 (REQUIRED BEFORE STEP 1) - a", "### STEP 2 - b"))
    assert [(f.code, f.range.start_line) for f in found] == [("BTN221", line_of(0))]


def test_required_before_missing_step() -> None:
    text = steps("### STEP 1 (REQUIRED BEFORE STEP 2) - a",
                 "### STEP 2 (REQUIRED BEFORE STEP 3) - b")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN221", line_of(1))]
    assert "does not exist" in found[0].message and "steps: 1, 2" in found[0].message
    assert found[0].fix is None  # no later step to point at


def test_required_before_skipping_ahead_to_existing_step_is_fine() -> None:
    text = steps("### STEP 1 (REQUIRED BEFORE STEP 3) - a", "### STEP 2 - b", "### STEP 3 - c")
    assert check(text) == []


# -- BTN222 duplicate agents (cross-file) -----------------------------------------------


AGENT = "---\nallowed-tools: Read\ndescription: {d}\n---\n\n# {t}\n"


def test_duplicate_agents_differing_by_dash_and_underscore(
        make_workspace: Callable[[dict[str, str]], Path]) -> None:
    root = make_workspace({
        ".claude/agents/collapse-specialist.md": AGENT.format(d="new", t="Collapse Specialist"),
        ".claude/agents/collapse_specialist.md": AGENT.format(d="old", t="Collapse (old)"),
        ".claude/agents/other-agent.md": AGENT.format(d="x", t="Other"),
    })
    index = WorkspaceIndex(root)
    dash = root / ".claude/agents/collapse-specialist.md"
    under = root / ".claude/agents/collapse_specialist.md"
    a = [f for f in check_file(index, dash) if f.code == "BTN222"]
    b = [f for f in check_file(index, under) if f.code == "BTN222"]
    assert len(a) == 1 and len(b) == 1
    assert a[0].range.start_line == 5 and a[0].path == str(dash)
    assert "`collapse-specialist.md` duplicates `collapse_specialist.md`" in a[0].message
    assert [(r.path, r.range.start_line) for r in a[0].related] == [(str(under), 5)]
    assert [r.path for r in b[0].related] == [str(dash)]
    assert [f for f in check_file(index, root / ".claude/agents/other-agent.md")
            if f.code == "BTN222"] == []
    # The finding depends on the agents directory: adding/removing a copy re-checks it.
    assert str(dash) in index.dependents(root / ".claude/agents")


def test_no_duplicate_finding_without_workspace_or_for_templates(
        make_workspace: Callable[[dict[str, str]], Path]) -> None:
    assert check(AGENT.format(d="d", t="T")) == []
    root = make_workspace({
        ".claude/agents/templates/x-y.md": "# T\n",
        ".claude/agents/x_y.md": AGENT.format(d="d", t="T"),
    })
    index = WorkspaceIndex(root)
    assert [f for f in check_file(index, root / ".claude/agents/x_y.md")
            if f.code == "BTN222"] == []
    assert [f for f in check_file(index, root / ".claude/agents/templates/x-y.md")
            if f.code == "BTN222"] == []


# -- the real corpus --------------------------------------------------------------------


def test_corpus_agents(corpus: Path) -> None:
    results: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(corpus.rglob(".claude/agents/**/*.md")):
        findings = check_text(Kind.AGENT, path.read_text(encoding="utf-8"), str(path))
        rel = path.relative_to(corpus).as_posix()
        assert not [f for f in findings if f.code == "BTN000"], rel
        results[rel] = sorted((f.code, f.range.start_line) for f in findings
                              if f.code in BODY_CODES)
    # implementer-coordinator.md really has two `### STEP 4:` headings (lines 247 and 437).
    assert results[".claude/agents/implementer-coordinator.md"] == [("BTN220", 436)]
    # STEP 0.5 / 2.5 / 3.5 intermediate steps are not duplicates.
    assert results["other/benbrastmckie__ProofChecker/.claude/agents/research-coordinator.md"] == []
    # STEP 1-REV .. 4-REV is a second procedure, not a repeat of STEP 1 .. 4.
    assert results["other/benbrastmckie__ProofChecker/.claude/agents/plan-architect.md"] == []
    assert results[".claude/agents/research-synthesizer.md"] == []
    flagged = {rel for rel, codes in results.items() if codes}
    assert flagged == {".claude/agents/implementer-coordinator.md"}


def test_corpus_workspace_has_no_duplicate_agents(corpus: Path) -> None:
    index = WorkspaceIndex(corpus)
    for path in sorted((corpus / ".claude/agents").glob("*.md")):
        assert [f.code for f in check_file(index, path) if f.code in {"BTN222", "BTN000"}] == []




def test_title_case_step_headings_are_a_tutorial_not_workflow_steps() -> None:
    # 0motionguy/gICM .claude/agents/tutorial-creator.md: `## Step 2: Install ...` in a
    # model tutorial whose `Step 1` sits inside an example fence.
    text = ("---\nname: tutor\ndescription: Writes tutorials\n---\n\n## Step 2: Install\n\n"
            "## Step 3: Configure\n")
    assert [f for f in check_text(Kind.AGENT, text, "/ws/.claude/agents/tutor.md")
            if f.code == "BTN220"] == []
    seeds = text.replace("## Step", "### STEP")
    assert [f.code for f in check_text(Kind.AGENT, seeds, "/ws/.claude/agents/tutor.md")
            if f.code == "BTN220"] == ["BTN220"]

"""BTN003: fences that render the headings after them as code, and the one fence pairing
every rule reads. Texts are shaped after files of public trees (quoted lines kept)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baton_lsp.model.base import Finding, Kind
from baton_lsp.parse.markdown import authored_fences, parse_markdown
from baton_lsp.parse.text import Source
from baton_lsp.rules.engine import check_text

AGENT = "/ws/.claude/agents/debug-analyst.md"
SKILL = "/ws/.claude/skills/report/SKILL.md"
PLAN = "/ws/specs/019_x/plans/phase_8_layer_planning.md"


def btn003(kind: Kind, text: str, path: str) -> list[Finding]:
    return [f for f in check_text(kind, text, path) if f.code in {"BTN003", "BTN000"}]


# An agent's report template: a ```markdown block holding a ```{language} block, closed by a
# bare ``` (from a public tree's debug-analyst agent, shortened).
TEMPLATE = """---
name: debug-analyst
description: Investigates a failure and writes a debug report
---
# Debug Analyst

### Artifact Structure
```markdown
# Debug Investigation: {issue_desc}

### Code Changes
```{language}
// File: {file_path}

{proposed_code_changes}
```

### Fix Rationale
{explanation_of_why_this_fixes_the_issue}
```

## Return Format

After creating the artifact, return only:

```json
{"artifact_path": "specs/{topic}/debug/NNN_investigation.md"}
```
"""


def test_a_markdown_example_closed_by_its_inner_fence_swallows_the_next_section() -> None:
    lines = TEMPLATE.splitlines()
    [found] = btn003(Kind.AGENT, TEMPLATE, AGENT)
    assert found.range.start_line == lines.index("### Fix Rationale") + 2  # the example's ```
    assert found.related[0].range.start_line == lines.index("## Return Format")
    assert "the bare ``` on line 16 already closed" in found.message
    assert '"Return Format"' in found.message and "````markdown" in found.message


def test_an_outer_fence_longer_than_the_inner_ones_is_not_reported() -> None:
    why = "{explanation_of_why_this_fixes_the_issue}\n"
    text = TEMPLATE.replace("```markdown", "````markdown").replace(why + "```", why + "````")
    assert btn003(Kind.AGENT, text, AGENT) == []


def test_headings_inside_a_markdown_example_are_the_examples_own() -> None:
    """The mis-nested example renders `### Fix Rationale` as prose, not code: nothing is
    swallowed by that, and headings meant as code are never reported."""
    text = TEMPLATE.split("## Return Format")[0]
    assert btn003(Kind.AGENT, text, AGENT) == []


def test_an_unclosed_fence_names_its_line_and_the_headings_it_swallows() -> None:
    text = ("---\nname: report\ndescription: Writes the weekly report\n---\n# Report\n\n"
            "Return this shape:\n\n```json\n{\"report_path\": \"<path>\"}\n\n"
            "## Usage\n\nRun it on Mondays.\n\n## Notes\n\nNone.\n")
    [found] = btn003(Kind.SKILL, text, SKILL)
    assert found.range.start_line == 8
    assert "never closed" in found.message and '"Usage" (line 12)' in found.message
    assert '"Notes" (line 16)' in found.message
    # In bash `## Usage` may be a comment; here the bash block is left open and only
    # markdown follows it to the end of the file: sections, not comments.
    in_bash = text.replace("```json", "```bash").replace("None.", "None so far.")
    [found] = btn003(Kind.SKILL, in_bash, SKILL)
    assert '"Usage" (line 12)' in found.message
    # A comment code follows is a comment.
    code = in_bash.replace("Run it on Mondays.", "run_report --weekly").replace(
        "None so far.", "exit 0")
    assert btn003(Kind.SKILL, code, SKILL) == []


def test_a_fence_left_open_before_the_next_one_swallows_a_phase() -> None:
    """A plan's ```json block not closed before the next ```json (a fence line with an info
    string cannot close a fence): the phase heading between renders as code, invisible to
    every reader of the plan."""
    text = ("# Layer Planning\n\n### Phase 1: Schema [COMPLETE]\n\n- [x] Write the schema\n\n"
            '```json\n{"layer": 1, "operators": ["would", "might"]}\n\n'
            "### Phase 2: Semantics [NOT STARTED]\n\n- [ ] Define truth conditions\n\n"
            '```json\n{"layer": 2}\n```\n')
    found = btn003(Kind.PLAN, text, PLAN)
    assert [f.range.start_line for f in found] == [6]
    assert "not closed before the ```json on line 14" in found[0].message
    assert '"Phase 2: Semantics [NOT STARTED]" (line 10)' in found[0].message


def test_a_doc_string_may_hold_headings_and_fences() -> None:
    """A Lean module doc string is markdown: its `# Title` and its nested ```lean example
    are the doc string's own, not a fence left open (from a public tree's plan)."""
    text = ("# Stage 1\n\n### Phase 1: Docs [NOT STARTED]\n\n**Template**:\n\n```lean\n/-!\n"
            "# Automation Tactics for Logos TM Logic\n\n## Usage Examples\n\n"
            "```lean\nexample : True := by trivial\n```\n-/\n```\n")
    assert btn003(Kind.PLAN, text, PLAN) == []
    assert btn003(Kind.PLAN, text.replace("```lean", "```bash"), PLAN) == []


def test_a_fence_in_a_list_item_ends_with_the_item() -> None:
    """CommonMark ends a list item's fence where the item ends: a heading at the margin
    after an indented fence is a heading (markdown-it confirms what the scanner, which
    leaves list items out, finds)."""
    text = ("# Plan\n\n## Phase 3: Delegation [COMPLETED]\n\n1. **Update the call**:\n"
            "   ```xml\n   <git_commit>\n       ```json\n       {\"status\": \"completed\"}\n"
            "       ```\n   </git_commit>\n   ```\n\n2. **Apply it**:\n   ```\n"
            "   copy the delegation\n\n## Phase 4: Error Handling [COMPLETED]\n\n- [x] Add it\n")
    assert btn003(Kind.PLAN, text, PLAN) == []


def test_an_unclosed_fence_that_swallows_phases_is_btn140s() -> None:
    text = "# Plan\n\n### Phase 1: A\n\n```json\n{}\n\n### Phase 2: B\n\n- [ ] b\n"
    codes = [f.code for f in check_text(Kind.PLAN, text, PLAN)]
    assert "BTN140" in codes and "BTN003" not in codes


def test_the_authored_pairing_nests_examples() -> None:
    md = parse_markdown(Source.from_text(TEMPLATE))
    got = [(f.start_line, f.end_line, f.lang, f.by_opener) for f in authored_fences(md)]
    assert (7, 19, "markdown", False) in got  # the example, closed where its author did
    assert (11, 15, "{language}", False) in got
    assert [(f.start_line, f.end_line) for f in md.fences][:2] == [(7, 15), (19, 27)]


# The last fence of an agent left open: a ```bash block whose multi-line string closes before
# the next section (from a public tree's finalize-reporter agent, shortened).
REPORTER = """---
name: finalize-reporter
description: Writes the final report
---
# Finalize Reporter

### 4. Gemini 실행 예시

```bash
gemini exec -m gemini-2.5-pro "
Generate a comprehensive final report for this GCX v6 project.

Input files:
- .gcx/state/project_context.json (Context Baton)
- .gcx/00_requirements/*.md
"
```

## 출력

- `.gcx/output/FINAL_REPORT.md`
- Console output: 커밋 명령어
"""


def test_a_bash_block_left_open_swallows_the_next_section() -> None:
    assert btn003(Kind.AGENT, REPORTER, AGENT) == []
    left_open = REPORTER.replace('"\n```\n', '"\n', 1)
    [found] = btn003(Kind.AGENT, left_open, AGENT)
    assert found.range.start_line == 8
    assert "never closed" in found.message and '"출력" (line 18)' in found.message


def test_a_tree_diagram_left_open_swallows_the_prose_after_it() -> None:
    """A bare fence runs to the end of the file: the section after it is the agent's own
    (from a public tree's training-engineer agent, shortened)."""
    text = ("---\nname: trainer\ndescription: Trains models\n---\n# Trainer\n\n"
            "## Run Directory Layout\n\n```\nruns/<date>-<slug>/\n├── training-brief.md\n"
            "└── roadbook.md\n\n## Failure Triage\n\nThree failure classes, each with an "
            "exact response. Diagnose which\nclass you're in before touching a config value.\n\n"
            "1. **Environment failure** — a launch-time crash, driver mismatch,\n"
            "   or resource error traceable to the platform.\n")
    [found] = btn003(Kind.AGENT, text, AGENT)
    assert found.range.start_line == 8 and '"Failure Triage" (line 14)' in found.message


def test_a_python_block_not_closed_before_the_next_swallows_a_phase() -> None:
    """Doc strings closed before the phase heading leave it a heading (from a public tree's
    plan, shortened)."""
    text = ("# Cache Fix\n\n### Phase 1: Invalidate Caches [NOT STARTED]\n\n```python\n"
            "def _invalidate_expression_caches() -> None:\n"
            '    """Invalidate expression caches when backend changes.\n\n'
            "    Three caches hold backend-specific types that must be reset:\n"
            '    """\n    _reset_backend()\n\n'
            "**Verification**:\n- `reset_registry()` also clears expression caches\n\n---\n\n"
            "### Phase 2: Set Backend Early in Example Construction [NOT STARTED]\n\n"
            "**Goal**: Ensure backend is set from settings before any expression construction."
            "\n\n**Code Change** (in `BuildExample.__init__`):\n"
            "```python\nself._set_backend(settings)\n```\n")
    [found] = btn003(Kind.PLAN, text, PLAN)
    assert found.range.start_line == 4
    assert "not closed before the ```python on line 23" in found.message
    assert '"Phase 2: Set Backend Early in Example Construction [NOT STARTED]" (line 18)' \
        in found.message
    # The same lines inside a doc string left open are the doc string's text.
    in_doc = text.replace('    """\n    _reset_backend()', "    _reset_backend()")
    assert btn003(Kind.PLAN, in_doc, PLAN) == []


def test_a_stray_closing_fence_swallows_the_sections_after_it() -> None:
    """Unchanged in a public tree's skill: a bare fence after the code opens a block that runs
    to the end of the file."""
    text = ("---\nname: data-quality-frameworks\ndescription: Data quality checks\n---\n"
            "# Data Quality Frameworks\n\n## Detailed patterns\n\n"
            '## Summary: {total_passed}/{total_tables} tables passed")\n'
            '        report.append("")\n'
            '    raise ValueError("Data quality checks failed!")\n```\n\n## Best Practices\n\n'
            "### Do's\n\n- **Test early** - Validate source data before transformations\n\n"
            "### Don'ts\n\n- **Don't test everything** - Focus on critical columns\n")
    [found] = btn003(Kind.SKILL, text, SKILL)
    assert found.range.start_line == 11
    assert "3 headings render as code" in found.message


def test_markdown_in_a_heredoc_of_a_block_left_open_is_the_heredoc_s() -> None:
    """A bash block writing a markdown file through a heredoc (from a public tree's plan,
    shortened), its closing fence gone: the heredoc's headings are its text."""
    text = ("---\nname: tester\ndescription: Tests markers\n---\n# Tester\n\n"
            "**Validation**:\n```bash\n# Create test plan with 3 simple phases\n"
            "cat > /tmp/test-phase-markers.md <<'EOF'\n# Test Phase Marker Updates\n\n"
            "## Metadata\n- **Date**: 2025-12-09\n- **Status**: [IN PROGRESS]\n\n"
            "## Implementation Phases\n\nTasks:\n- [x] Prove: theorem test1 : True := trivial\n")
    assert btn003(Kind.AGENT, text, AGENT) == []
    unquoted = text.replace("<<'EOF'", "").replace("Tasks:\n", "")
    assert [f.range.start_line for f in btn003(Kind.AGENT, unquoted, AGENT)] == [7]


def test_a_whole_skill_shown_in_a_yaml_fence_is_an_example() -> None:
    """A guide shows a complete SKILL.md in a ```yaml fence whose ```bash block CommonMark
    cannot nest (from a public tree's creating-skills guide, shortened): its headings are the
    example's, not sections swallowed by a fence left open."""
    text = ("---\nname: creating-skills\ndescription: How to write a skill\n---\n"
            "# Creating Skills\n\n## Complete Example\n\n"
            "Here is a complete skill for Rust research:\n\n```yaml\n---\n"
            "name: skill-rust-research\nallowed-tools: Agent\n---\n\n# Rust Research Skill\n\n"
            "Thin wrapper that delegates Rust research to `rust-research-agent` subagent.\n\n"
            "## Trigger Conditions\n\nThis skill activates when:\n- Task language is \"rust\"\n\n"
            "```bash\n# Lookup task\njq '.tasks' specs/state.json\n```\n")
    assert btn003(Kind.SKILL, text, SKILL) == []
    # Without its front matter, the example's own `# Title` after the guide's still says so.
    bare = text.replace("---\nname: skill-rust-research\nallowed-tools: Agent\n---\n",
                        "name: skill-rust-research\n")
    assert btn003(Kind.SKILL, bare, SKILL) == []


# A plan whose ```lean block lost its closing line, then a later phase whose list item holds
# its own indented fence (from a public tree's plan, shortened; quoted lines kept).
LEAN_LEFT_OPEN = """# Implementation Plan

### Phase 3: Complete Backward all_past Case (Conditional)

**Status**: [BLOCKED]

**Approach** (if Phase 2 succeeds):

```lean
· -- Backward: (∀ s ≤ t, truth_at s psi) → H psi ∈ mcs t
  intro h_all_past
  by_contra h_not_H

**Verification**:
- [ ] `lake build` succeeds

---

### Phase 4: Update Documentation

**Status**: [NOT STARTED]

**Documentation Updates**:

1. **CoherentConstruction.lean header**: Add to the gaps table:
   ```
   | forward_H Case 4 | line 681 | PROVEN - uses H-persistence |
   ```

2. **CrossOriginCases.lean**: Note that forward_H Case 4 was proven
"""


def test_a_list_items_fence_does_not_close_a_code_block_left_open() -> None:
    """The ```lean block left open runs (as CommonMark renders it) to the list item's
    indented ```, which closes it: Phase 4's heading renders as code. The authored pairing
    read that ``` as the lean block's own closing line, so nothing was reported."""
    lines = LEAN_LEFT_OPEN.splitlines()
    found = [f for f in btn003(Kind.PLAN, LEAN_LEFT_OPEN, PLAN) if f.range.start_line == 8]
    assert len(found) == 1, found
    assert '"Phase 4: Update Documentation"' in found[0].message
    item_fence = lines.index("   ```") + 1
    assert f"the list item whose ``` on line {item_fence} opens" in found[0].message
    pairs = [(a.start_line, a.end_line, a.by_opener)
             for a in authored_fences(parse_markdown(Source.from_text(LEAN_LEFT_OPEN)))]
    assert pairs[0] == (8, item_fence - 1, True)
    assert pairs[1] == (item_fence - 1, item_fence + 1, False)


def test_a_list_items_indented_markdown_fence_after_a_bash_block_left_open() -> None:
    """The same with a ```bash block left open and a ```markdown example indented under a
    task's list item (from a public tree's plan, shortened)."""
    text = ("# Plan\n\n### Phase 1: Add model field [COMPLETED]\n\n**Verification**:\n"
            "```bash\n# All 6 agents should have model field\n"
            'grep -l "^model:" .claude/agents/*.md | wc -l\n# Expected: 6\n\n---\n\n'
            "### Phase 2: Update CLAUDE.md Documentation [NOT STARTED]\n\n**Tasks**:\n\n"
            "- [ ] **2.2** Add Model column to the table:\n  ```markdown\n"
            "  ### Skill-to-Agent Mapping\n\n  | Skill | Agent | Model |\n  |---|---|---|\n"
            "  ```\n\n- [ ] **2.3** Add Model Selection section:\n  ```markdown\n"
            "  ### Model Selection\n\n  Agents specify their model via YAML frontmatter:\n\n"
            "  ```yaml\n  ---\n  name: agent-name\n  model: sonnet  # sonnet | opus | haiku\n"
            "  ---\n  ```\n  ```\n\n**Verification**:\n```bash\ngrep -c model CLAUDE.md\n```\n")
    [found] = btn003(Kind.PLAN, text, PLAN)
    assert found.range.start_line == 5
    assert '"Phase 2: Update CLAUDE.md Documentation [NOT STARTED]"' in found.message


def test_a_list_item_inside_code_without_a_heading_before_it_stays_code() -> None:
    """Near miss: a bash block whose here-document holds a list item with an indented fence
    and no heading between is code: its indented fences pair as before (the first bare one
    closes the block, as CommonMark reads it too), none taken for a list item's own."""
    text = ("# Plan\n\n### Phase 1: Notes [NOT STARTED]\n\n```bash\ncat > notes.md <<'EOF'\n"
            "- step one:\n  ```\n  make\n  ```\nEOF\n```\n\n### Phase 2: Done [NOT STARTED]\n")
    assert btn003(Kind.PLAN, text, PLAN) == []
    pairs = [(a.start_line, a.end_line, a.by_opener)
             for a in authored_fences(parse_markdown(Source.from_text(text)))]
    assert pairs == [(4, 7, False), (9, 11, False)]


# A plan whose ```markdown example lost its closing line; a later phase holds another
# ```markdown example (from a public tree's plan, shortened; quoted lines kept).
EXAMPLE_LEFT_OPEN = """# Implementation Plan: Task #726

## Implementation Phases

### Phase 1: Update EXTENSION.md [COMPLETED]

Change B -- Append after line 60 (end of CI Verification Pipeline section):
```markdown

### Commands

| Command | Usage | Description |
|---------|-------|-------------|
| `/pr` | `/pr --review <sources...>` | Create pr-type review task from GitHub PR URLs |

**Verification**:
- EXTENSION.md table renders correctly (pipe alignment, no broken rows)

---

### Phase 2: Update pr-prohibition.md [COMPLETED]

**Tasks**:
- [x] Add a new `## CSLib Extension: /pr --review Workflow` section *(completed)*

**Concrete content to add** -- Append after line 61 (end of file):
```markdown

## CSLib Extension: /pr --review Workflow

The `--review` flag to `/pr` creates tasks with `task_type: "pr"`.
```

## Testing & Validation

- [ ] Tables render
"""


def test_an_example_left_open_swallows_the_next_phase() -> None:
    """CommonMark closes the first example at the second one's bare ```, so "Phase 2"
    renders as code. As the author nested the fences the first example never closes (the
    second nests in it), which read every line after it as code: nothing was reported. The
    next numbered heading of the same level (`### Phase 2` under `### Phase 1`) is where
    the example's text stopped."""
    lines = EXAMPLE_LEFT_OPEN.splitlines()
    [found] = btn003(Kind.PLAN, EXAMPLE_LEFT_OPEN, PLAN)
    assert found.range.start_line == lines.index("```markdown")
    assert found.message.count("render") == 1
    assert '"Phase 2: Update pr-prohibition.md [COMPLETED]"' in found.message
    assert '"Commands"' not in found.message  # the example's own heading
    closer = lines.index("```") + 1
    inner = [no for no, line in enumerate(lines) if line == "```markdown"][1] + 1
    assert f"is never closed, so the ``` on line {closer}, meant to close the ```markdown " \
           f"fence of line {inner}, closes it instead" in found.message


def test_a_closed_example_may_show_the_next_phase() -> None:
    """Near miss: an example its author closes may hold a `### Phase 2` of its own; and an
    example left open under an unnumbered heading is left alone."""
    closed = ("# Plan\n\n### Phase 1: Template [COMPLETED]\n\n````markdown\n"
              "### Phase 1: Setup\n\n- [ ] a\n\n### Phase 2: Build\n\n```bash\nmake\n```\n"
              "````\n\n### Phase 2: Real [NOT STARTED]\n\n- [ ] b\n")
    assert btn003(Kind.PLAN, closed, PLAN) == []
    unnumbered = EXAMPLE_LEFT_OPEN.replace("### Phase 1: Update EXTENSION.md [COMPLETED]",
                                           "### Update EXTENSION.md").replace(
        "### Phase 2: Update", "### Then update")
    assert btn003(Kind.PLAN, unnumbered, PLAN) == []


def test_a_bare_fence_right_after_a_closed_block_opens_one() -> None:
    """A ```bash block holding a nested ```bash closes at the nested one's ```; the next ```,
    meant to close the outer one, opens a block that swallows the next fix (from a public
    tree's debug plan, shortened)."""
    text = ("# Fix Plan\n\n### Fix 2: Usage Examples\n\n**Current block**:\n```bash\n"
            "**Usage Examples**:\n\n```bash\n# Basic debugging\n"
            '/debug "authentication timeout errors in production"\n```\n```\n\n'
            "**Expected**: This block should NOT have a trap.\n\n"
            "### Fix 3: Reduce debug.md Line Count\n\n**Consolidation Strategy**:\n\n"
            "**Example 1** (Block 2, ~lines 170-172):\n```bash\n# Before (3 lines):\n"
            "declare -a _EARLY_ERROR_BUFFER=()\n```\n")
    [found] = btn003(Kind.PLAN, text, PLAN)
    assert found.range.start_line == 12
    assert "comes right after the block closed on line 12" in found.message
    assert '"Fix 3: Reduce debug.md Line Count"' in found.message


def test_a_bash_block_left_open_before_the_next_one_swallows_the_next_phase() -> None:
    """A ```bash block not closed before the next ```bash runs over `### Phase 4`, whose
    body (`dependencies: [2, 3]`, `Tasks:`) does not read as prose throughout: the heading
    that goes on numbering the phases is where the block's text stopped (from the shared
    corpus's plan-command repair plan, shortened)."""
    text = ("# Plan\n\n### Phase 3: Topic Naming [NOT STARTED]\ndependencies: [1]\n\n"
            "Testing:\n```bash\n# Run topic naming tests\n"
            "bash .claude/tests/topic-naming/test_topic_naming_agent.sh\n\n"
            "**Expected Duration**: 1.5 hours\n\n"
            "### Phase 4: Integration Testing and Validation [NOT STARTED]\n"
            "dependencies: [2, 3]\n\n"
            "**Objective**: Validate all fixes work together and no regressions introduced.\n\n"
            "Tasks:\n- [ ] Run full test suite to verify no regressions\n\n"
            "Testing:\n```bash\n# Run full test suite\nbash .claude/tests/run_all_tests.sh\n```\n")
    [found] = btn003(Kind.PLAN, text, PLAN)
    assert found.range.start_line == 6
    assert '"Phase 4: Integration Testing and Validation [NOT STARTED]"' in found.message
    commented = text.replace("### Phase 4: Integration", "### Step 4: Integration")
    assert btn003(Kind.PLAN, commented, PLAN) == []  # not the plan's numbering: a comment
    heredoc = text.replace("# Run topic naming tests\n", "cat > notes.md <<'EOF'\n").replace(
        "**Expected Duration**", "EOF2\n**Expected Duration**")
    assert btn003(Kind.PLAN, heredoc, PLAN) == []  # inside a here-document left open


def test_indented_fences_in_a_block_left_open_are_paired_in_linear_time() -> None:
    """Tens of thousands of indented fences inside one ```bash block: each is looked at for
    a list item above it within a bounded window, not back to the block's opening line
    (that took minutes)."""
    import threading

    text = "# T\n\n```bash\nx\n" + "   ```x\n      y\n   ```\n" * 40_000
    got: list[int] = []
    worker = threading.Thread(target=lambda: got.append(len(authored_fences(
        parse_markdown(Source.from_text(text))))), daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "pairing indented fences took minutes"
    assert got == [40_001]


def test_examples_nested_without_end_are_checked_in_linear_time() -> None:
    """Tens of thousands of ```markdown openers, none closed: only the outermost is read for
    the heading that ends it, not each nested one to the end of the file."""
    import threading

    text = "# P\n\n### Phase 1: A\n\n" + "```markdown\n\n" * 30_000 + "```\n\n### Phase 2: B\n"
    got: list[Finding] = []
    worker = threading.Thread(target=lambda: got.extend(btn003(Kind.PLAN, text, PLAN)),
                              daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "nested examples took minutes"
    assert got == []


# -- files whose fences pair as written (the usual case) skip the comparison ----------------


def _pairing(path: Path) -> tuple[list[tuple[int, int, bool, int]], list[tuple[int, int]],
                                    bool]:
    from baton_lsp.parse.text import split_lines
    from baton_lsp.rules.markdown_structure import _paired_as_written

    lines = split_lines(path.read_bytes().decode("utf-8", "replace"))
    md = parse_markdown(Source(text="\n".join(lines), lines=lines))
    authored = [(a.start_line, a.end_line if a.end_line is not None else -1, a.by_opener,
                 a.depth) for a in authored_fences(md)]
    rendered = [(f.start_line, f.end_line) for f in md.fences]
    return authored, rendered, _paired_as_written(md, lines)


def test_fences_paired_as_written_are_paired_so_by_the_author(corpus: Path) -> None:
    """Where `_paired_as_written` says so (and BTN003 returns before `authored_fences`), the
    author's pairing is CommonMark's, fence by fence, on every markdown file of the corpus
    and of this repository's tests (a few thousand, most of them paired so); where it is not
    so, the full comparison runs."""
    paired = compared = 0
    for root in (corpus, Path(__file__).resolve().parent.parent):
        for path in sorted(root.rglob("*.md")):
            if not path.is_file():
                continue
            authored, rendered, fast = _pairing(path)
            if not rendered:
                continue
            if fast:
                paired += 1
                assert authored == [(s, e, False, 0) for s, e in rendered], path
            else:
                compared += 1
    assert paired > compared > 0


def test_a_file_paired_as_written_is_not_compared() -> None:
    """Most files with fences close each one plainly: BTN003 then has no candidate, and
    pairing the file again as its author nested it (`authored_fences`) was wasted work on
    every such file of a check."""
    import sys

    calls: list[int] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is authored_fences.__code__:
            calls.append(frame.f_lineno)

    plain = ("---\nname: a\ndescription: d\n---\n# A\n\n```bash\n# step 1\nls\n```\n\n"
             "## Notes\n\n~~~json\n{}\n~~~\n")
    sys.setprofile(profile)
    try:
        assert btn003(Kind.AGENT, plain, AGENT) == []
        assert calls == []
        lines = TEMPLATE.splitlines()
        assert [f.range.start_line for f in btn003(Kind.AGENT, TEMPLATE, AGENT)] == [
            lines.index("### Fix Rationale") + 2]
    finally:
        sys.setprofile(None)
    assert len(calls) == 1


def test_the_block_closed_right_before_a_fence_is_found_without_rereading_the_file() -> None:
    """`_what` looked for the block closed right before a stray fence by testing every
    closed block above it for blank lines between it and the fence: work growing with the
    blocks above, for every finding. It now reads up from the fence to the first line with
    text. Counted with `sys.setprofile` (`str.strip` calls made by `_what`: 122 with 60
    blocks above on the old code); the message is the usual one."""
    import sys

    head = "".join(f"## Step {n}\n\n```bash\necho {n}\n```\n\nDone {n}.\n\n" for n in range(60))
    text = ("# Fix Plan\n\n" + head + "### Fix 2: Usage Examples\n\n**Current block**:\n"
            "```bash\n**Usage Examples**:\n\n```bash\n# Basic debugging\n"
            '/debug "authentication timeout errors in production"\n```\n```\n\n'
            "**Expected**: This block should NOT have a trap.\n\n"
            "### Fix 3: Reduce debug.md Line Count\n\n**Consolidation Strategy**:\n\n"
            "**Example 1** (Block 2, ~lines 170-172):\n```bash\n# Before (3 lines):\n"
            "declare -a _EARLY_ERROR_BUFFER=()\n```\n")
    strips: list[int] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__name__", "") == "strip" \
                and frame.f_code.co_qualname.startswith("_what"):
            strips.append(1)

    sys.setprofile(profile)
    try:
        [found] = btn003(Kind.PLAN, text, PLAN)
    finally:
        sys.setprofile(None)
    assert "comes right after the block closed on line" in found.message
    assert '"Fix 3: Reduce debug.md Line Count"' in found.message
    assert len(strips) < 20

"""BTN315: a command's or skill's bash sources or runs a `.claude/` file that is missing."""

from __future__ import annotations

from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

GATE_CHECK = """\
---
name: gate-check
description: Quality gate between SDLC phases.
---

# Verificacao de Quality Gate

```bash
# 1. Carregar biblioteca de fallback
source .claude/lib/fallback.sh
source .claude/lib/logging.sh

# 2. Identificar gate
GATE="${1:-$(detect_current_gate)}"
log_info "Avaliando gate: $GATE" "gate-check"
python3 .claude/skills/session-analyzer/scripts/query_phase_errors.py \\
  --json > "$ERRORS_JSON" 2>/dev/null || true
check_service github && .claude/skills/session-analyzer/scripts/report_sdlc_bug.sh "$X" || true
python3 .claude/skills/gate-evaluator/evaluate.py --gate "$GATE"
if [ $RESULT -eq 0 ]; then
    .claude/skills/phase-commit/scripts/phase-commit.sh
fi
```
"""
"""A public tree's command (shortened): two libraries, four skill scripts."""

TREE = {
    ".claude/lib/logging.sh": "log_info() { :; }\n",
    ".claude/skills/session-analyzer/scripts/query_phase_errors.py": "",
    ".claude/skills/session-analyzer/scripts/report_sdlc_bug.sh": "",
    ".claude/skills/gate-evaluator/evaluate.py": "",
    ".claude/skills/phase-commit/phase-commit.sh": "",
}


def _found(root: Path, rel: str) -> list[tuple[int, str]]:
    found = only(check_file(WorkspaceIndex(root), root / rel), "BTN315")
    return [(f.range.start_line, f.message) for f in found]


def test_missing_library_and_script(make_workspace) -> None:
    root = make_workspace({".claude/commands/gate-check.md": GATE_CHECK, **TREE})
    got = _found(root, ".claude/commands/gate-check.md")
    assert [line for line, _ in got] == [9, 20]
    assert got[0][1] == "the block sources .claude/lib/fallback.sh, which does not exist"
    assert got[1][1] == ("the block runs .claude/skills/phase-commit/scripts/phase-commit.sh, "
                         "which does not exist; .claude/skills/phase-commit/phase-commit.sh "
                         "has that name")


def test_guarded_written_and_partial_trees_are_left_alone(make_workspace, tmp_path: Path) -> None:
    """A public tree sources its environment only after testing for it; a tree with no
    library at all (the folder is synced from elsewhere) cannot be judged."""
    guarded = ("---\ndescription: Trigger\n---\n```bash\n"
               "if [ -f \".claude/lib/project-env.sh\" ]; then\n"
               "  source .claude/lib/project-env.sh\nelse\n"
               "  echo \"ERROR: project-env.sh not found. Run 'starforge install' first.\"\n"
               "  exit 1\nfi\n"
               "cat > .claude/scripts/step.sh <<'EOF'\necho step\nEOF\n"
               "bash .claude/scripts/step.sh\n```\n")
    root = make_workspace({".claude/commands/trigger.md": guarded,
                           ".claude/lib/other.sh": "", ".claude/scripts/other.sh": ""})
    assert _found(root, ".claude/commands/trigger.md") == []
    bare = tmp_path / "bare"
    (bare / ".claude/commands").mkdir(parents=True)
    (bare / ".claude/commands/gate-check.md").write_text(GATE_CHECK, encoding="utf-8")
    assert _found(bare, ".claude/commands/gate-check.md") == []


REVIEW = """\
---
name: review
argument-hint: pr_number(optional) | additional_instructions
description: Code review with smart parent branch detection and optional PR posting
---

# CODE REVIEW WORKFLOW

**Argument:** `$ARGUMENTS` (optional PR number)

### 1a. If PR number provided:

```bash
CURRENT_BRANCH=$(git branch --show-current)
PR_NUMBER="${ARGUMENTS}"
PR_BRANCH=$(gh pr view $PR_NUMBER --json headRefName -q '.headRefName')
```

```bash
[ -z "${PHASE_ARG:-}" ] && PHASE_ARG=$(echo "${ARGUMENTS}" | awk '{print $1}')
for tok in ${ARGUMENTS:-}; do echo "$tok"; done
echo '${ARGUMENTS} stays literal in single quotes'
PHASE_ARG=$(echo "$ARGUMENTS" | awk '{print $1}')
```
"""
"""A public tree's review command (first block) and, in the second, lines of another public
tree's build command."""


def test_braced_arguments_in_bash_blocks(make_workspace) -> None:
    root = make_workspace({".claude/commands/review.md": REVIEW})
    found = only(check_file(WorkspaceIndex(root), root / ".claude/commands/review.md"),
                 "BTN316")
    assert [(f.range.start_line, f.range.start_char) for f in found] == [
        (14, 11), (19, 45), (20, 11)]
    assert found[0].fix is not None and found[0].fix.edits[0].new_text == "$ARGUMENTS"
    assert found[2].fix is None  # `${ARGUMENTS:-}`: the default has no one-word rewrite
    assert "never substituted" in found[0].message


def test_braced_arguments_assigned_in_the_file(make_workspace) -> None:
    text = REVIEW.replace("CURRENT_BRANCH=$(git branch --show-current)\n",
                          'ARGUMENTS="$ARGUMENTS"\n', 1)
    root = make_workspace({".claude/commands/review.md": text})
    assert only(check_file(WorkspaceIndex(root), root / ".claude/commands/review.md"),
                "BTN316") == []


def test_a_block_without_a_target_is_not_classified(make_workspace) -> None:
    """Only a block that sources or runs a literal `.claude/` path needs classifying (a
    template's paths are not checked); one that only reads or prints such paths has nothing
    to check, and classifying it was wasted. Counted on `classify`'s cache."""
    from baton_lsp.parse.shell import classify

    skill = ("---\nname: notes\ndescription: Notes\n---\n# Notes\n\n```bash\n"
             "cat .claude/notes/3f9a.md\necho \"see .claude/notes/3f9a-index.md\"\n```\n\n"
             "```bash\nsource .claude/lib/3f9a-missing.sh\n```\n")
    root = make_workspace({".claude/skills/notes/SKILL.md": skill,
                           ".claude/lib/present.sh": "x() { :; }\n"})
    before = classify.cache_info().misses
    found = only(check_file(WorkspaceIndex(root), root / ".claude/skills/notes/SKILL.md"),
                 "BTN315")
    assert [f.range.start_line for f in found] == [12]
    assert classify.cache_info().misses == before + 1  # the second block only

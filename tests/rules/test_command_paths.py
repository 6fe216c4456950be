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

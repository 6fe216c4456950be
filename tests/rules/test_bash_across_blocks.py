"""BTN317 (a `$$` path spelt again in a later block) and BTN318 (`export` expected to reach
a later block), on lines of a public tree's commands."""

from __future__ import annotations

from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

DEBUG = """\
---
description: Debug an issue
---
## Block 4

```bash
echo "SPECS_DIR=$SPECS_DIR" > "${CLAUDE_PROJECT_DIR}/.claude/tmp/debug_state_$$.txt"
echo "RESEARCH_DIR=$RESEARCH_DIR" >> "${CLAUDE_PROJECT_DIR}/.claude/tmp/debug_state_$$.txt"
```

## Block 5

```bash
# Load state from previous block
# CRITICAL: Use CLAUDE_PROJECT_DIR for consistent path
source "${CLAUDE_PROJECT_DIR}/.claude/tmp/debug_state_$$.txt" 2>/dev/null || true

if [ ! -d "$RESEARCH_DIR" ]; then
  echo "ERROR: research directory missing"
fi
```

## Block 6

```bash
echo "PLAN_PATH=$PLAN_PATH" >> "${CLAUDE_PROJECT_DIR}/.claude/tmp/debug_state_$$.txt"
grep PLAN_PATH "${CLAUDE_PROJECT_DIR}/.claude/tmp/debug_state_$$.txt"
```

## Cleanup

```bash
rm -f "${CLAUDE_PROJECT_DIR}/.claude/tmp/debug_state_$$.txt"
```
"""

SETUP = """\
---
description: Set up CLAUDE.md
---
```bash
MODE="standard"
if [ -f "$CLAUDE_MD_PATH" ] && [ "$FORCE" != true ]; then
  MODE="analyze"
fi

export MODE FORCE PROJECT_DIR CLAUDE_MD_PATH COMMAND_NAME WORKFLOW_ID USER_ARGS
```

```bash
if [ -z "${CLAUDE_PROJECT_DIR:-}" ]; then
  CLAUDE_PROJECT_DIR="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
  export CLAUDE_PROJECT_DIR
fi

case "$MODE" in
  standard)
    echo "Generating CLAUDE.md at: ${CLAUDE_MD_PATH:-CLAUDE.md}"
    ;;
esac
if [ -z "$WORKFLOW_ID" ]; then
  WORKFLOW_ID="setup_$(date +%s)"
fi
echo "$WORKFLOW_ID"
```
"""


def _check(root: Path, name: str, text: str, code: str) -> list:
    path = root / ".claude/commands" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return only(check_file(WorkspaceIndex(root), path), code)


def test_pid_path_read_in_a_later_block(tmp_path: Path) -> None:
    found = _check(tmp_path, "debug.md", DEBUG, "BTN317")
    assert [(f.range.start_line, f.range.start_char) for f in found] == [(15, 8)]
    assert "debug_state_$$.txt` is built from `$$` again in bash block 2, after block 1" \
        in found[0].message
    # block 3 appends first, then reads what it wrote itself; block 4's `rm` removes nothing,
    # which leaves a stray file but reads nothing wrong: neither is reported


def test_pid_path_reassigned_and_written_first_is_fine(tmp_path: Path) -> None:
    text = ("---\ndescription: X\n---\n```bash\nF=/tmp/x_$$.txt\necho a > \"$F\"\n```\n\n"
            "```bash\nF=/tmp/x_$$.txt\necho b > \"$F\"\ncat \"$F\"\n```\n\n"
            "```bash\nF=/tmp/x_$$.txt\ncat \"$F\"\n```\n")
    found = _check(tmp_path, "x.md", text, "BTN317")
    assert [f.range.start_line for f in found] == [15]


def test_export_expected_in_the_next_block(tmp_path: Path) -> None:
    found = _check(tmp_path, "setup.md", SETUP, "BTN318")
    assert [(f.range.start_line, f.message.split("`")[1]) for f in found] == [(18, "$MODE")]
    # `${CLAUDE_MD_PATH:-…}` has a default; WORKFLOW_ID is set again in the block.
    assert found[0].related[0].range.start_line == 9


def test_export_persisted_or_restored_is_not_reported(tmp_path: Path) -> None:
    persisted = SETUP.replace(
        "export MODE FORCE", 'echo "MODE=$MODE" > .claude/tmp/setup.env\nexport MODE FORCE')
    assert _check(tmp_path, "setup.md", persisted, "BTN318") == []
    restored = SETUP.replace('case "$MODE" in', 'source .claude/tmp/setup.env\ncase "$MODE" in')
    assert _check(tmp_path, "setup.md", restored, "BTN318") == []


def test_export_of_a_pid_value_is_left_to_btn320(tmp_path: Path) -> None:
    text = ("---\ndescription: Build\n---\n```bash\nsource .claude/lib/state-persistence.sh\n"
            "export WORKFLOW_ID=\"build_$$\"\n```\n\n```bash\n"
            "STATE_FILE=\".claude/tmp/workflow_${WORKFLOW_ID}.sh\"\n```\n")
    assert _check(tmp_path, "build.md", text, "BTN318") == []
    assert [f.range.start_line for f in _check(tmp_path, "build.md", text, "BTN320")] == [5]

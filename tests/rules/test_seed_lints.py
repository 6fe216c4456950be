"""The lints the seeds ask for (issue 35, item 8), run on the seeds' own example text.

Seed 000 is the `/coordinate` analysis (../shared/seeds/000_*.txt), seed 001 the state-based
orchestration plan (001_*.txt). Where a seed writes "# Next block..." inside one fence, the
test splits it into the two fences Claude Code would run as two shells.
"""

from __future__ import annotations

from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix, only

HEAD = "---\ndescription: Coordinate\n---\n"


def _check(root: Path, text: str, code: str) -> list:
    path = root / ".claude/commands/coordinate.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return only(check_file(WorkspaceIndex(root), path), code)


# Seed 000, "Issue #1: Process ID ($$ Pattern)", **Before**.
SEED000_PID_BEFORE = HEAD + """\
```bash
echo "description" > /tmp/coordinate_workflow_$$.txt  # PID 12345
```

Next block:

```bash
cat /tmp/coordinate_workflow_$$.txt  # PID 67890 - different file!
```
"""

# Seed 001, "Orchestrator Command Structure (coordinate.md)": Block 1 and Block 2.
SEED001_ORCHESTRATOR = HEAD + """\
```bash
# Block 1: Initialize state machine
source "${CLAUDE_PROJECT_DIR}/.claude/lib/workflow-state-machine.sh"
source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"

# Initialize workflow state (GitHub Actions pattern)
STATE_FILE=$(init_workflow_state "coordinate_$$")

# Initialize state machine
sm_init "$WORKFLOW_DESCRIPTION" "coordinate"
```

```bash
# In orchestrator bash block
source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
load_workflow_state "coordinate_$$"
```
"""


def test_seed000_pid_path_in_the_next_block(tmp_path: Path) -> None:
    found = _check(tmp_path, SEED000_PID_BEFORE, "BTN317")
    assert [f.range.start_line for f in found] == [10]
    assert "`/tmp/coordinate_workflow_$$.txt` is built from `$$` again in bash block 2" \
        in found[0].message


def test_seed001_state_id_from_pid_loaded_in_a_later_block(tmp_path: Path) -> None:
    found = _check(tmp_path, SEED001_ORCHESTRATOR, "BTN317")
    assert [(f.range.start_line, f.range.start_char) for f in found] == [(18, 21)]
    assert found[0].message.startswith(
        "`coordinate_$$` is built from `$$` again in bash block 2, after block 1 used it")
    assert "names a state file" in found[0].message


def test_state_id_initialised_again_in_the_later_block_is_fine(tmp_path: Path) -> None:
    # Seed 001's own Block 1 alone: the id is made and used in one shell.
    text = SEED001_ORCHESTRATOR.replace(
        'load_workflow_state "coordinate_$$"',
        'init_workflow_state "coordinate_$$"\nload_workflow_state "coordinate_$$"')
    assert _check(tmp_path, text, "BTN317") == []


# Seed 000, "Library Sourcing Pattern": every block follows this pattern.
SEED000_SOURCING = """\
# Re-source libraries (functions lost across bash block boundaries)
if [ -z "${CLAUDE_PROJECT_DIR:-}" ]; then
  CLAUDE_PROJECT_DIR="$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
  export CLAUDE_PROJECT_DIR
fi

LIB_DIR="${CLAUDE_PROJECT_DIR}/.claude/lib"

# Re-source critical libraries (source guards make this safe)
source "${LIB_DIR}/workflow-state-machine.sh"
source "${LIB_DIR}/state-persistence.sh"
source "${LIB_DIR}/workflow-initialization.sh"
source "${LIB_DIR}/error-handling.sh"
source "${LIB_DIR}/verification-helpers.sh"
"""

SEED000_LOAD = """\
# Load workflow state (read WORKFLOW_ID from fixed location)
COORDINATE_STATE_ID_FILE="${HOME}/.claude/tmp/coordinate_state_id.txt"
if [ -f "$COORDINATE_STATE_ID_FILE" ]; then
  WORKFLOW_ID=$(cat "$COORDINATE_STATE_ID_FILE")
  load_workflow_state "$WORKFLOW_ID"
else
  echo "ERROR: Workflow state ID file not found: $COORDINATE_STATE_ID_FILE"
  exit 1
fi
"""


def test_library_function_called_before_the_block_sources_it(tmp_path: Path) -> None:
    # Seed 000's block with the state restore moved above the sourcing (its risk 2: "easy
    # to forget when adding new libraries", "no compile-time checks").
    text = HEAD + "```bash\n" + SEED000_LOAD + "\n" + SEED000_SOURCING + "```\n"
    found = _check(tmp_path, text, "BTN328")
    assert [(f.range.start_line, f.range.start_char) for f in found] == [(8, 2)]
    assert found[0].message.startswith(
        "`load_workflow_state` (from `state-persistence.sh`) is called in bash block 1 but "
        "the block sources `state-persistence.sh` only on line 25")
    # The seeds' own order passes.
    text = HEAD + "```bash\n" + SEED000_SOURCING + "\n" + SEED000_LOAD + "```\n"
    assert _check(tmp_path, text, "BTN328") == []


def test_library_function_in_a_later_block_that_sources_nothing(tmp_path: Path) -> None:
    # "Functions don't persist (must re-source libraries)": block 2 relies on block 1.
    text = HEAD + ("```bash\n" + SEED000_SOURCING + "sm_init \"$SAVED_WORKFLOW_DESC\" "
                   "\"coordinate\"\n```\n\n```bash\nsm_transition \"$STATE_RESEARCH\"\n```\n")
    found = _check(tmp_path, text, "BTN328")
    assert [f.range.start_line for f in found] == [22]
    assert "the block sources no library before it" in found[0].message
    # Seed 001's Block 2 sources workflow-state-machine.sh, which may load the state
    # library itself: not reported, since Baton cannot tell.
    text = SEED001_ORCHESTRATOR.replace(
        'source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"\nload',
        'source "${CLAUDE_PROJECT_DIR}/.claude/lib/workflow-state-machine.sh"\nload')
    assert _check(tmp_path, text, "BTN328") == []


# Seed 000, "Issue #1", **After**: the fixed-location fix the seed recommends.
SEED000_PID_AFTER = HEAD + """\
```bash
source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
# Fixed semantic filename (same in all blocks)
COORDINATE_DESC_FILE="${HOME}/.claude/tmp/coordinate_workflow_desc.txt"
echo "description" > "$COORDINATE_DESC_FILE"
```

```bash
source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
COORDINATE_DESC_FILE="${HOME}/.claude/tmp/coordinate_workflow_desc.txt"
cat "$COORDINATE_DESC_FILE"  # Same file ✅
```
"""


def test_home_tmp_names_the_seeds_fix_and_keeps_its_file_names(tmp_path: Path) -> None:
    found = _check(tmp_path, SEED000_PID_AFTER, "BTN323")
    assert len(found) == 1
    message = found[0].message
    assert "seed 000 keeps its fixed-name files there (its fix for `$$`)" in message
    assert "expected the same fixed names under `${CLAUDE_PROJECT_DIR}/.claude/tmp/`" \
        in message
    assert "where the seeds keep the state file itself" in message
    fixed = apply_fix(SEED000_PID_AFTER, found[0].fix)
    assert fixed.count(
        'COORDINATE_DESC_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/coordinate_workflow_desc.txt"'
    ) == 2
    assert _check(tmp_path, fixed, "BTN323") == []


def test_home_checkpoints_keep_the_project_message(tmp_path: Path) -> None:
    text = HEAD + ('```bash\nsource "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"\n'
                   'CHECKPOINT_DIR="${HOME}/.claude/data/checkpoints"\n```\n')
    found = _check(tmp_path, text, "BTN323")
    assert [f.message for f in found] == [
        "state path `${HOME}/.claude/data` is under the user's home directory: expected "
        "`${CLAUDE_PROJECT_DIR}/.claude/...` so state stays with the project"]


# Seed 000, "Issue #2: Variable Scoping with Sourced Libraries". Root cause
# (`workflow-state-machine.sh:76`): `WORKFLOW_DESCRIPTION=""  # Overwrites parent's ...!`
STATE_MACHINE_LIB = """\
#!/usr/bin/env bash
if [ -n "${WORKFLOW_STATE_MACHINE_SOURCED:-}" ]; then
  return 0
fi
export WORKFLOW_STATE_MACHINE_SOURCED=1

WORKFLOW_DESCRIPTION=""  # Overwrites parent's WORKFLOW_DESCRIPTION!
CURRENT_STATE="${CURRENT_STATE:-initialize}"

sm_init() {
  WORKFLOW_SCOPE="$2"
}
"""

SEED000_SOURCE_BEFORE = HEAD + """\
```bash
LIB_DIR="${CLAUDE_PROJECT_DIR}/.claude/lib"
source "${LIB_DIR}/state-persistence.sh"
COORDINATE_DESC_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/coordinate_workflow_desc.txt"
WORKFLOW_DESCRIPTION=$(cat "$COORDINATE_DESC_FILE")  # Set correctly
source "${LIB_DIR}/workflow-state-machine.sh"  # OVERWRITES to ""!
sm_init "$WORKFLOW_DESCRIPTION" "coordinate"  # Empty string ❌
```
"""

SEED000_SOURCE_AFTER = HEAD + """\
```bash
LIB_DIR="${CLAUDE_PROJECT_DIR}/.claude/lib"
source "${LIB_DIR}/state-persistence.sh"
COORDINATE_DESC_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/coordinate_workflow_desc.txt"
WORKFLOW_DESCRIPTION=$(cat "$COORDINATE_DESC_FILE")
# CRITICAL: Save BEFORE sourcing
SAVED_WORKFLOW_DESC="$WORKFLOW_DESCRIPTION"
source "${LIB_DIR}/workflow-state-machine.sh"  # Overwrites WORKFLOW_DESCRIPTION
sm_init "$SAVED_WORKFLOW_DESC" "coordinate"  # Uses saved value ✅
```
"""


def _with_library(root: Path, where: str = ".claude/lib/workflow-state-machine.sh") -> None:
    lib = root / where
    lib.parent.mkdir(parents=True, exist_ok=True)
    lib.write_text(STATE_MACHINE_LIB, encoding="utf-8")


def test_seed000_variable_overwritten_by_a_sourced_library(tmp_path: Path) -> None:
    _with_library(tmp_path)
    found = _check(tmp_path, SEED000_SOURCE_BEFORE, "BTN329")
    assert [(f.range.start_line, f.range.start_char) for f in found] == [(9, 9)]
    assert found[0].message == (
        "`$WORKFLOW_DESCRIPTION` is used after bash block 1 sources "
        "`workflow-state-machine.sh` (line 9), which sets `WORKFLOW_DESCRIPTION=\"\"` when it "
        "loads: the value assigned on line 8 is gone; expected it saved before the `source` "
        "(`SAVED_WORKFLOW_DESCRIPTION=\"$WORKFLOW_DESCRIPTION\"`) and the copy used, as seed "
        "000 does")
    assert _check(tmp_path, SEED000_SOURCE_AFTER, "BTN329") == []


def test_the_library_is_found_in_a_folder_below_lib_and_must_exist(tmp_path: Path) -> None:
    # The newer layout (`.claude/lib/workflow/workflow-state-machine.sh`, formats.md).
    _with_library(tmp_path, ".claude/lib/workflow/workflow-state-machine.sh")
    assert len(_check(tmp_path, SEED000_SOURCE_BEFORE, "BTN329")) == 1
    # Without the library Baton cannot know what it sets: nothing is reported.
    other = tmp_path / "other"
    other.mkdir()
    assert _check(other, SEED000_SOURCE_BEFORE, "BTN329") == []


def test_a_library_keeping_the_callers_value_is_fine(tmp_path: Path) -> None:
    _with_library(tmp_path)
    text = SEED000_SOURCE_BEFORE.replace("WORKFLOW_DESCRIPTION=$(cat", "CURRENT_STATE=$(cat") \
        .replace('sm_init "$WORKFLOW_DESCRIPTION"', 'sm_init "$CURRENT_STATE"')
    assert _check(tmp_path, text, "BTN329") == []


_LISTINGS = r'''
import sys
from pathlib import Path

listed, active = [0], [False]


def hook(event, args):
    if active[0] and event == "os.scandir":
        listed[0] += 1


sys.addaudithook(hook)
from baton_lsp.model.base import Kind
from baton_lsp.paths import norm
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.engine import read_for_rules
from baton_lsp.workspace.index import WorkspaceIndex

root = Path(sys.argv[1])
found = read_for_rules(WorkspaceIndex(root), norm(root / ".claude/commands/coordinate.md"),
                       Kind.COMMAND)
assert found is not None
doc, ctx = found
ctx.rule = get_rule("BTN329")
active[0] = True
findings = list(ctx.rule.check(doc, ctx))
active[0] = False
print(len(findings), listed[0])
'''


def test_each_library_is_looked_up_once_per_file(tmp_path: Path) -> None:
    """BTN329 finds a sourced library by listing `.claude/lib/` when the path does not name
    it; blocks source the same libraries again and again, and the listing was repeated for
    every `source` line. Counted with a real audit hook (`os.scandir`) in a fresh process:
    three blocks sourcing two libraries list the folder once (the listing is shared by the
    lookups of a check), and every block's reset is still reported."""
    import subprocess
    import sys

    _with_library(tmp_path, ".claude/lib/workflow/workflow-state-machine.sh")
    block = SEED000_SOURCE_BEFORE[len(HEAD):]
    command = tmp_path / ".claude/commands/coordinate.md"
    command.parent.mkdir(parents=True)
    command.write_text(HEAD + "\nNext:\n\n".join([block] * 3), encoding="utf-8")
    out = subprocess.run([sys.executable, "-c", _LISTINGS, str(tmp_path)], check=True,
                         capture_output=True, text=True, timeout=120).stdout.split()
    assert out == ["3", "1"]

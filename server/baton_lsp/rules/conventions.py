"""Which conventions a file follows, so a rule runs only where its convention applies.

Real `.claude/` trees mix several dialects: Claude Code's own formats, the seeds' plan
metadata standard, the newer task-based plans, plain plans by other authors, and the seeds'
multi-block bash orchestration. A rule enforces one of them (`Rule.convention`); applying
it to a file written in another dialect is what makes a linter wrong.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..lazy_pattern import LazyPattern
from ..model.agent import CommandFile
from ..model.base import Convention, Kind
from ..model.config import BatonConfig
from ..model.plan import Generation, Plan

_STATE_LIBRARY = re.compile(
    r"\b(?:append_workflow_state|load_workflow_state|init_workflow_state|"
    r"state-persistence\.sh|STATE_FILE)\b")
_PROJECT_LIBRARY = LazyPattern(r"^\s*(?:source|\.)\s+[\"']?\S*\.(?:claude|opencode)/\S+",
                              re.MULTILINE)
"""`source .claude/lib/x.sh`, `. "${CLAUDE_PROJECT_DIR}/.claude/lib/x.sh"`, and an OpenCode
command's `source .opencode/scripts/x.sh`."""

STANDARD_MARKER = "Standards File"
"""The metadata key plans of the seeds' lineage carry (the plan names its standards)."""
STANDARD_DOC = ".claude/docs/reference/standards/plan-metadata-standard.md"
"""Where the seeds' tree keeps the plan metadata standard; a workspace without it has not
adopted the standard (its older plans predate it and its tools insert a missing Status)."""

TASK_PLAN_STANDARD = "plan-format.md"
"""Task-based plans that follow their tree's plan format name it under `Standards`;
archived and hand-written plans of the same shape follow no such standard."""


def _adopts_standard(root: Path | None) -> bool:
    return root is not None and (root / STANDARD_DOC).is_file()


def detected(convention: Convention, doc: Any, kind: Kind, root: Path | None = None) -> bool:
    """True when `doc` (a parsed file of `kind` in the workspace at `root`) follows
    `convention`, judged from its text and whether the workspace adopted the convention."""
    if convention in (Convention.BATON, Convention.CLAUDE_CODE, Convention.OPENCODE):
        return True
    if convention is Convention.PLAN:
        return isinstance(doc, Plan)
    if convention is Convention.CHECKBOX_PLAN:
        # Task-based plans (`Plan.task_based`: the header names the task, in bullets or in
        # bare `**Project Number**:` lines) mark phase headings only.
        return isinstance(doc, Plan) and doc.generation is not Generation.G3 \
            and not doc.task_based
    if convention is Convention.PLAN_STANDARD:
        return (isinstance(doc, Plan) and doc.generation is not Generation.G3
                and doc.meta(STANDARD_MARKER) is not None and _adopts_standard(root))
    if convention is Convention.TASK_PLAN:
        if not isinstance(doc, Plan) or doc.generation is not Generation.G3:
            return False
        standards = doc.meta("Standards")
        return standards is not None and TASK_PLAN_STANDARD in standards.value
    if convention is Convention.WORKFLOW_AGENTS:
        return _workflow_agents(doc)
    if convention is Convention.WORKFLOW_BASH:
        if kind is Kind.STATE:  # `.claude/tmp/workflow_*.sh`: written by the state library
            return True
        if not isinstance(doc, CommandFile):
            return False
        return any(_STATE_LIBRARY.search(b.content) for b in doc.bash_blocks)
    if convention is Convention.SCRIPT_BLOCKS:
        return isinstance(doc, CommandFile) and any(
            _STATE_LIBRARY.search(b.content) or _PROJECT_LIBRARY.search(b.content)
            for b in doc.bash_blocks)
    return True


_WORKFLOW_KEYS = ("dependent-agents", "dependent-commands", "parent-commands", "command-type")


def _workflow_agents(doc: Any) -> bool:
    """Task blocks, injections, STEP headings or the seeds' front-matter keys."""
    if getattr(doc, "task_blocks", None) or getattr(doc, "injections", None) \
            or getattr(doc, "steps", None):
        return True
    fm = getattr(doc, "frontmatter", None)
    return fm is not None and any(fm.get(k) is not None for k in _WORKFLOW_KEYS)


def inputs(convention: Convention, root: Path | None) -> tuple[Path, ...]:
    """Workspace files whose presence `detected` reads for `convention`: a file checked under
    it depends on them (creating the plan standard turns its rules on in the editor too)."""
    if convention is Convention.PLAN_STANDARD and root is not None:
        return (root / STANDARD_DOC,)
    return ()


def follows(convention: Convention, doc: Any, kind: Kind, config: BatonConfig,
            root: Path | None = None) -> bool:
    """`detected`, overridden by `[tool.baton] conventions = {name = "on"|"off"}`."""
    setting = config.conventions.get(convention.value, "auto")
    if setting == "off":
        return False
    if setting == "on":
        return True
    return detected(convention, doc, kind, root)

"""Which conventions a file follows, so a rule runs only where its convention applies.

Real `.claude/` trees mix several dialects: Claude Code's own formats, the seeds' plan
metadata standard, the newer task-based plans, plain plans by other authors, and the seeds'
multi-block bash orchestration. A rule enforces one of them (`Rule.convention`); applying
it to a file written in another dialect is what makes a linter wrong.
"""

from __future__ import annotations

import re
from typing import Any

from ..model.agent import CommandFile
from ..model.base import Convention, Kind
from ..model.config import BatonConfig
from ..model.plan import Generation, Plan

_STATE_LIBRARY = re.compile(
    r"\b(?:append_workflow_state|load_workflow_state|init_workflow_state|"
    r"state-persistence\.sh|STATE_FILE)\b")

STANDARD_MARKER = "Standards File"
"""The metadata key only plans written to the seeds' plan standard (spec 010) carry."""


def detected(convention: Convention, doc: Any, kind: Kind) -> bool:
    """True when `doc` (a parsed file of `kind`) follows `convention`, judged from its text."""
    if convention in (Convention.BATON, Convention.CLAUDE_CODE):
        return True
    if convention is Convention.PLAN:
        return isinstance(doc, Plan)
    if convention is Convention.CHECKBOX_PLAN:
        return isinstance(doc, Plan) and doc.generation is not Generation.G3
    if convention is Convention.PLAN_STANDARD:
        return (isinstance(doc, Plan) and doc.generation is not Generation.G3
                and doc.meta(STANDARD_MARKER) is not None)
    if convention is Convention.TASK_PLAN:
        return isinstance(doc, Plan) and doc.generation is Generation.G3
    if convention is Convention.WORKFLOW_BASH:
        if not isinstance(doc, CommandFile):
            return False
        return any(_STATE_LIBRARY.search(b.content) for b in doc.bash_blocks)
    return True


def follows(convention: Convention, doc: Any, kind: Kind, config: BatonConfig) -> bool:
    """`detected`, overridden by `[tool.baton] conventions = {name = "on"|"off"}`."""
    setting = config.conventions.get(convention.value, "auto")
    if setting == "off":
        return False
    if setting == "on":
        return True
    return detected(convention, doc, kind)

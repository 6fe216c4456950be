"""Helpers shared by the plan rule modules (status vocabulary, edits)."""

from __future__ import annotations

import re
from collections import Counter

from ..model.base import Range
from ..model.plan import KNOWN_STATUSES, Phase, Plan, is_complete, status_word

MARKER_THEN_TEXT = re.compile(
    r"\[(" + "|".join(re.escape(s) for s in KNOWN_STATUSES) + r")\]([^\[\]]*\S)\s*$")
"""A status marker with more text after it (`[COMPLETE] ✓`): the marker utilities read only
the end of the heading, so the marker is hidden (BTN143 reports it)."""


def completion_style(plan: Plan) -> str:
    """`COMPLETE` or `COMPLETED`, whichever the plan already uses most (ties: COMPLETE)."""
    counts = Counter(status_word(p) for p in plan.phases if is_complete(p))
    return "COMPLETED" if counts["COMPLETED"] > counts["COMPLETE"] else "COMPLETE"


def marker_edit_range(phase: Phase) -> tuple[Range, str]:
    """Where to write a heading status marker: replace the existing one or append."""
    if phase.status is not None:
        return phase.status.range, ""
    end = phase.title_range.end_char if phase.title else phase.number_range.end_char
    line = phase.heading_range.start_line
    return Range.of_line(line, end, end), " "


def phase_label(phase: Phase) -> str:
    return f"Phase {phase.number}" + (f" ({phase.title})" if phase.title else "")


def hidden_marker(phase: Phase, lines: list[str]) -> re.Match[str] | None:
    """The marker text hides when `phase` has no status only because text follows it."""
    if phase.status is not None:
        return None
    no = phase.heading_range.start_line
    return MARKER_THEN_TEXT.search(lines[no]) if no < len(lines) else None

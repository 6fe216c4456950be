"""BTN4xx: data files (state files, errors.jsonl) and input that cannot be read at all."""

from __future__ import annotations

from collections.abc import Iterator

from ..model.base import Finding, Kind, Range, Severity
from ..model.data import Unreadable
from .base import RuleContext, rule

ALL_KINDS = tuple(Kind)


@rule("BTN400", "unreadable-file", Severity.ERROR, ALL_KINDS)
def unreadable_file(doc: Unreadable, ctx: RuleContext) -> Iterator[Finding]:
    """File cannot be read as text (binary, invalid UTF-8, too large).

    Baton reads workspace files as UTF-8 text. A file that contains NUL bytes, is not valid
    UTF-8 or exceeds `max-file-size` is reported once here instead of being parsed, so a
    stray binary or a runaway log never slows down or crashes checking.

    Fix: re-save the file as UTF-8, move binaries out of `.claude/`, or exclude the path with
    `exclude = ["..."]` in `[tool.baton]`.
    """
    if isinstance(doc, Unreadable):
        yield ctx.finding(Range.of_line(0), f"{doc.reason}")

"""Line-level helpers shared by the markdown parsers: links and suppression comments."""

from __future__ import annotations

import re

from ..lazy_pattern import LazyPattern
from ..model.base import Range
from ..model.common import Link, Suppression
from .markdown import MarkdownDoc, blank_code_spans

# Link text holds no brackets and a title runs to its own closing quote: with `[^\]]*` and
# `[^)]*` instead, a line of `[[[[…` or of repeated `[a](b "` rescanned itself per match
# attempt (quadratic). CommonMark also takes the innermost `[...]` before `(`.
_LINK_RE = re.compile(
    r"\[([^\[\]\n]*)\]\(\s*<?([^)\s>]+)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
_SUPPRESS_RE = re.compile(
    r"<!--\s*baton\s*:\s*(ignore-file|ignore)\b([^>]*?)-->", re.IGNORECASE
)
_CODE_RE = LazyPattern(r"[A-Z]{3}\d{3}")  # only for suppressions that name codes


def line_links(line_no: int, line: str) -> list[Link]:
    """Markdown links on one line, ignoring those inside inline code."""
    if "](" not in line:
        return []
    text = blank_code_spans(line)
    return [
        Link(
            text=m.group(1),
            target=m.group(2),
            range=Range.of_line(line_no, m.start(), m.end()),
            target_range=Range.of_line(line_no, m.start(2), m.end(2)),
        )
        for m in _LINK_RE.finditer(text)
    ]


def suppressions(md: MarkdownDoc) -> list[Suppression]:
    """Read `<!-- baton: ignore CODES -->` and `<!-- baton: ignore-file CODES -->` comments.

    An `ignore` comment covers the next block: the first non-blank line after it and the
    lines that follow it up to the next blank line.
    """
    out: list[Suppression] = []
    lines = md.lines
    blocks: tuple[list[int], list[int]] | None = None
    for comment in md.comments:
        for m in _SUPPRESS_RE.finditer(comment.text):
            codes = _CODE_RE.findall(m.group(2).upper())
            rng = Range.span(comment.start_line, 0, comment.end_line, len(lines[comment.end_line]))
            if m.group(1).lower() == "ignore-file":
                out.append(Suppression(codes=codes, range=rng, scope_start=0,
                                       scope_end=len(lines), file_level=True))
                continue
            if blocks is None:
                blocks = _blocks(lines)
            start = blocks[0][comment.end_line + 1]
            end = blocks[1][start]
            out.append(Suppression(codes=codes, range=rng, scope_start=start, scope_end=end))
    return out


def _blocks(lines: list[str]) -> tuple[list[int], list[int]]:
    """For each line (and one past the end): the first non-blank line at or after it, and the
    last line of the non-blank run it starts. One backward pass: a forward scan per comment
    was quadratic in a file with a comment in every block and no blank line between them."""
    n = len(lines)
    first = list(range(n + 2))
    last = list(range(n + 2))
    for i in range(n - 1, -1, -1):
        if lines[i].strip():
            if i + 1 < n and lines[i + 1].strip():
                last[i] = last[i + 1]
        else:
            first[i] = first[i + 1]
    return first, last

"""Block structure of a markdown file: headings, fenced code, HTML comments.

markdown-it-py tokenises the blocks so fenced code is never mistaken for structure (real
plans embed whole sample plans in fences). Only the block rules we need are enabled and
inline parsing is off: lists are matched per line by the parsers, which keeps parsing
linear and well under a millisecond per hundred lines.

Two deliberate departures from CommonMark, both because agent-written markdown nests fences
inside list items that we do not tokenise: a fence opens at any indentation, and an
indented line never hides a fence or heading from the paragraph terminator check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock

from .text import Source


@dataclass(frozen=True, slots=True)
class Heading:
    level: int
    text: str
    line: int
    text_start: int
    """Column where the heading text starts (after the `#`s and spaces)."""
    end_char: int


@dataclass(frozen=True, slots=True)
class Fence:
    start_line: int
    end_line: int
    """Line of the closing marker, or the last line of the file when unclosed."""
    info: str
    indent: int
    closed: bool

    @property
    def body(self) -> range:
        """Line numbers of the content between the markers."""
        return range(self.start_line + 1, self.end_line if self.closed else self.end_line + 1)

    @property
    def lang(self) -> str:
        return self.info.strip().split(" ", 1)[0].lower() if self.info.strip() else ""


@dataclass(frozen=True, slots=True)
class Comment:
    start_line: int
    end_line: int
    text: str


@dataclass(slots=True)
class MarkdownDoc:
    """The block skeleton of a markdown file plus a per-line mask of opaque lines."""

    source: Source
    headings: list[Heading] = field(default_factory=list)
    fences: list[Fence] = field(default_factory=list)
    comments: list[Comment] = field(default_factory=list)
    opaque: list[bool] = field(default_factory=list)
    """True for lines inside fences or HTML blocks: no structure may be read from them."""
    frontmatter_end: int = -1
    """Line of the closing `---` of YAML front matter, or -1 when there is none."""

    @property
    def lines(self) -> list[str]:
        return self.source.lines

    def text_lines(self, start: int = 0, end: int | None = None) -> list[tuple[int, str]]:
        """(line number, text) of lines that are ordinary markdown in [start, end)."""
        stop = len(self.source.lines) if end is None else min(end, len(self.source.lines))
        lines, opaque = self.source.lines, self.opaque
        return [(i, lines[i]) for i in range(max(start, 0), stop) if not opaque[i]]


_FENCE_CHARS = "`~"


def _lenient_fence(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    pos = state.bMarks[start] + state.tShift[start]
    maximum = state.eMarks[start]
    if pos + 3 > maximum:
        return False
    src = state.src
    marker = src[pos]
    if marker not in _FENCE_CHARS:
        return False
    mem = pos
    while pos < maximum and src[pos] == marker:
        pos += 1
    length = pos - mem
    if length < 3:
        return False
    params = src[pos:maximum]
    if marker == "`" and "`" in params:
        return False
    if silent:
        return True
    line = start
    closed = False
    while True:
        line += 1
        if line >= end:
            break
        p = state.bMarks[line] + state.tShift[line]
        m = state.eMarks[line]
        if p >= m or src[p] != marker:
            continue
        q = p
        while q < m and src[q] == marker:
            q += 1
        if q - p < length:
            continue
        if src[q:m].strip():
            continue
        closed = True
        break
    state.line = line + (1 if closed else 0)
    token = state.push("fence", "code", 0)
    token.info = params
    token.markup = src[mem : mem + length]
    token.map = [start, state.line]
    token.meta = {"closed": closed, "indent": state.sCount[start]}
    return True


def _lenient_paragraph(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    next_line = start + 1
    terminators = state.md.block.ruler.getRules("paragraph")
    end = state.lineMax
    while next_line < end:
        if state.isEmpty(next_line):
            break
        if any(rule(state, next_line, end, True) for rule in terminators):
            break
        next_line += 1
    state.line = next_line
    token = state.push("paragraph_open", "p", 1)
    token.map = [start, next_line]
    state.push("paragraph_close", "p", -1)
    return True


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True})
    md.core.ruler.disable(["inline", "text_join"])
    md.block.ruler.enableOnly(["fence", "heading", "html_block", "paragraph"])
    md.block.ruler.at("fence", _lenient_fence, {"alt": ["paragraph"]})
    md.block.ruler.at("paragraph", _lenient_paragraph)
    return md


_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FRONTMATTER_OPEN = re.compile(r"^---[ \t]*$")
_FRONTMATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")


def find_frontmatter_end(lines: list[str]) -> int:
    """Index of the closing `---` when line 1 is exactly `---` (the repo's own loader rule)."""
    if not lines or not _FRONTMATTER_OPEN.match(lines[0]):
        return -1
    for i in range(1, min(len(lines), 2000)):
        if _FRONTMATTER_CLOSE.match(lines[i]):
            return i
    return -1


def parse_markdown(source: Source, frontmatter: bool = True) -> MarkdownDoc:
    """Tokenise `source` into headings, fences and comments, masking opaque lines."""
    lines = source.lines
    n = len(lines)
    doc = MarkdownDoc(source=source, opaque=[False] * n)
    fm_end = find_frontmatter_end(lines) if frontmatter else -1
    doc.frontmatter_end = fm_end
    body_start = fm_end + 1 if fm_end >= 0 else 0
    for i in range(body_start):
        doc.opaque[i] = True
    body = "\n".join(lines[body_start:]) if body_start else "\n".join(lines)
    tokens = _parser().parse(body)
    opaque = doc.opaque
    for tok in tokens:
        if tok.map is None:
            continue
        a, b = tok.map[0] + body_start, tok.map[1] + body_start
        if tok.type == "heading_open":
            text = lines[a]
            m = _HEADING_RE.match(text)
            if m:
                content = m.group(2) or ""
                start = m.start(2) if m.group(2) is not None else len(text)
                doc.headings.append(
                    Heading(len(m.group(1)), content.strip(), a, start, start + len(content))
                )
        elif tok.type == "fence":
            closed = bool(tok.meta.get("closed"))
            last = b - 1 if b > a else a
            doc.fences.append(
                Fence(a, min(last, n - 1), tok.info, int(tok.meta.get("indent", 0)), closed)
            )
            for i in range(a, min(b, n)):
                opaque[i] = True
        elif tok.type == "html_block":
            chunk = "\n".join(lines[a:b])
            if chunk.lstrip().startswith("<!--"):
                doc.comments.append(Comment(a, b - 1, chunk))
            for i in range(a, min(b, n)):
                opaque[i] = True
    return doc


_CODE_SPAN_RE = re.compile(r"(`+)(.+?)\1")


def blank_code_spans(line: str) -> str:
    """Replace inline code spans with spaces so their contents are never read as structure."""
    if "`" not in line:
        return line
    return _CODE_SPAN_RE.sub(lambda m: " " * len(m.group(0)), line)

"""Block structure of a markdown file: headings, fenced code, HTML comments.

Fenced code must never be mistaken for structure (real plans embed whole sample plans in
fences), so the block rules markdown-it-py applies for headings, fences, HTML blocks and
paragraphs are run here, line by line, over the lines `Source` already split. Inline
parsing and container blocks are left out: lists are matched per line by the parsers,
which keeps parsing linear. `tests/parse/test_markdown_scanner.py` checks the result
against markdown-it-py itself.

Two deliberate departures from CommonMark, both because agent-written markdown nests fences
inside list items that we do not tokenise: a fence opens at any indentation, and an
indented line never hides a fence or heading from the paragraph terminator check.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, NamedTuple

from ..lazy_pattern import LazyPattern
from ..model.base import FieldRecord
from .fences import fence_lines
from .text import Source

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


class Heading(NamedTuple):
    """An ATX heading. The scanner's records are named tuples, not dataclasses: a dataclass
    compiles its methods when its module is imported, a cost every check paid for each."""

    level: int
    text: str
    line: int
    text_start: int
    """Column where the heading text starts (after the `#`s and spaces)."""
    end_char: int


class Fence(NamedTuple):
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


class Comment(NamedTuple):
    start_line: int
    end_line: int
    text: str


class MarkdownDoc(FieldRecord):
    """The block skeleton of a markdown file plus a per-line mask of opaque lines.

    Written out rather than a dataclass (see `Heading`): the fields, `__eq__` and
    `__repr__` a `@dataclass(slots=True)` would make."""

    __slots__ = ("comments", "fences", "frontmatter_end", "headings", "opaque", "source")
    _FIELDS = ("source", "headings", "fences", "comments", "opaque", "frontmatter_end")

    def __init__(self, source: Source, headings: list[Heading] | None = None,
                 fences: list[Fence] | None = None, comments: list[Comment] | None = None,
                 opaque: list[bool] | None = None, frontmatter_end: int = -1) -> None:
        self.source = source
        self.headings: list[Heading] = [] if headings is None else headings
        self.fences: list[Fence] = [] if fences is None else fences
        self.comments: list[Comment] = [] if comments is None else comments
        self.opaque: list[bool] = [] if opaque is None else opaque
        """True for lines inside fences or HTML blocks: no structure may be read from
        them."""
        self.frontmatter_end = frontmatter_end
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
_BLOCK_STARTS = frozenset("`~#<")
_BLOCK_NAMES = (
    "address|article|aside|base|basefont|blockquote|body|caption|center|col|colgroup|dd|"
    "details|dialog|dir|div|dl|dt|fieldset|figcaption|figure|footer|form|frame|frameset|h1|h2|"
    "h3|h4|h5|h6|head|header|hr|html|iframe|legend|li|link|main|menu|menuitem|nav|noframes|ol|"
    "optgroup|option|p|param|search|section|summary|table|tbody|td|tfoot|th|thead|title|tr|"
    "track|ul")
_ATTRIBUTE = ("(?:\\s+[a-zA-Z_:][a-zA-Z0-9:._-]*(?:\\s*=\\s*(?:[^\"'=<>`\\x00-\\x20]+|'[^']*'|"
              "\"[^\"]*\"))?)")
_OPEN_CLOSE_TAG = ("^(?:<[A-Za-z][A-Za-z0-9\\-]*" + _ATTRIBUTE + "*\\s*\\/?>|"
                   "<\\/[A-Za-z][A-Za-z0-9\\-]*\\s*>)")
_HTML_BLOCKS: tuple[tuple[LazyPattern, LazyPattern, bool], ...] = (
    (LazyPattern(r"^<(?a:(script|pre|style|textarea))(?=(\s|>|$))", re.IGNORECASE),
     LazyPattern(r"<\/(?a:(script|pre|style|textarea))>", re.IGNORECASE), True),
    (LazyPattern(r"^<!--"), LazyPattern(r"-->"), True),
    (LazyPattern(r"^<\?"), LazyPattern(r"\?>"), True),
    (LazyPattern(r"^<![A-Za-z]"), LazyPattern(r">"), True),
    (LazyPattern(r"^<!\[CDATA\["), LazyPattern(r"\]\]>"), True),
    (LazyPattern("^</?(?a:(" + _BLOCK_NAMES + "))(?=(\\s|/?>|$))", re.IGNORECASE),
     LazyPattern(r"^$"), True),
    (LazyPattern(_OPEN_CLOSE_TAG + "\\s*$"), LazyPattern(r"^$"), False),
)
"""(opener, closer, may interrupt a paragraph) per HTML block type: CommonMark 0.31.2's seven
conditions as markdown-it-py 4 writes them (`tests/parse/test_markdown_scanner.py` keeps them
equal to its `HTML_SEQUENCES`). Written out here because importing that one table imports all
of markdown-it-py (parser, renderer, every rule), which nothing else a check runs needs."""


def _fence_opener(rest: str) -> tuple[str, int, str] | None:
    """(marker, length, info) when `rest` (a line without its indentation) opens a fence."""
    marker = rest[0]
    if len(rest) < 3 or marker not in _FENCE_CHARS:
        return None
    length = len(rest) - len(rest.lstrip(marker))
    if length < 3:
        return None
    info = rest[length:]
    if marker == "`" and "`" in info:
        return None
    return marker, length, info


def _heading_level(rest: str) -> int:
    """ATX heading level of `rest` (a line without its indentation), 0 when not a heading."""
    hashes = len(rest) - len(rest.lstrip("#"))
    if not 1 <= hashes <= 6 or (hashes < len(rest) and rest[hashes] not in " \t"):
        return 0
    return hashes


def _html_block(rest: str) -> tuple[LazyPattern, bool] | None:
    """(closing pattern, may interrupt a paragraph) when `rest` opens an HTML block."""
    if not rest.startswith("<"):
        return None
    for opener, closer, interrupts in _HTML_BLOCKS:
        if opener.search(rest):
            return closer, interrupts
    return None


def _indent(line: str, shift: int) -> int:
    """Visual indentation of the first `shift` characters (tabs to 4-column stops)."""
    if "\t" not in line[:shift]:
        return shift
    col = 0
    for ch in line[:shift]:
        col += 4 - col % 4 if ch == "\t" else 1
    return col


def _interrupts(rest: str) -> bool:
    """Whether a line (without indentation) ends the paragraph above it."""
    if rest[0] in _FENCE_CHARS:
        return _fence_opener(rest) is not None
    if rest[0] == "#":
        return _heading_level(rest) > 0
    html = _html_block(rest)
    return html is not None and html[1]


def _scan_blocks(doc: MarkdownDoc, start: int) -> None:
    """Find headings, fences and HTML blocks from line `start` on, line by line.

    The block rules markdown-it ran for us (lenient fence, ATX heading, HTML block,
    paragraph; no indented code, no containers) reproduced over the already-split lines:
    markdown-it re-split the text, built per-line state and dispatched every rule on every
    line, which was a third of the time of parsing a plan.
    """
    lines, opaque = doc.source.lines, doc.opaque
    end = len(lines)
    if end > start and not lines[-1].strip(" \t"):
        end -= 1  # markdown-it does not count a final blank line without a newline
    i = start
    while i < end:
        line = lines[i]
        rest = line.lstrip(" \t")
        if not rest:
            i += 1
            continue
        first = rest[0]
        if first in _BLOCK_STARTS:
            fence = _fence_opener(rest) if first in _FENCE_CHARS else None
            if fence is not None:
                marker, length, info = fence
                run = marker * length
                j, closed = i + 1, False
                while j < end:
                    if run in lines[j]:  # else it cannot close the fence: no need to strip it
                        close = lines[j].lstrip(" \t")
                        if close[:length] == run and not close.lstrip(marker).strip():
                            closed = True
                            break
                    j += 1
                stop = j + 1 if closed else end
                doc.fences.append(Fence(i, min(stop - 1 if stop > i else i, len(lines) - 1),
                                        info, _indent(line, len(line) - len(rest)), closed))
                opaque[i:stop] = [True] * (stop - i)
                i = stop
                continue
            level = _heading_level(rest) if first == "#" else 0
            if level:
                heading = _heading(i, line, rest, level)
                if heading is not None:
                    doc.headings.append(heading)
                i += 1
                continue
            html = _html_block(rest) if first == "<" else None
            if html is not None:
                closer = html[0]
                j = i + 1
                if not closer.search(rest):
                    while j < end:
                        text = lines[j].lstrip(" \t")
                        if closer.search(text):
                            if text:
                                j += 1
                            break
                        j += 1
                chunk = "\n".join(lines[i:j])
                if chunk.lstrip().startswith("<!--"):
                    doc.comments.append(Comment(i, j - 1, chunk))
                opaque[i:j] = [True] * (j - i)
                i = j
                continue
        # A paragraph: runs to a blank line or a line that opens a block.
        i += 1
        while i < end:
            rest = lines[i].lstrip(" \t")
            if not rest or (rest[0] in _BLOCK_STARTS and _interrupts(rest)):
                break
            i += 1


NESTING_LANGS = frozenset({"", "markdown", "md", "mdx"})
"""Fences an author nests others in: a markdown example holding ```bash blocks. A fence of
a programming language does not hold fences; a fence line inside it with an info string
means its author forgot to close it."""


class AuthoredFence(NamedTuple):
    """A fence as its author nested it, which CommonMark may pair differently."""

    start_line: int
    end_line: int | None
    """The line that closes it; None when nothing does (it runs to the end of the file)."""
    info: str
    by_opener: bool = False
    """Closed by the next fence's opening line (`end_line`), not by a closing fence."""
    depth: int = 0
    """How many authored fences enclose it."""

    @property
    def lang(self) -> str:
        return self.info.strip().split(" ", 1)[0].lower() if self.info.strip() else ""


def authored_fences(doc: MarkdownDoc) -> list[AuthoredFence]:
    """The fences of `doc` as its author meant them, for comparison with `doc.fences`.

    CommonMark closes a fence at the first later line of at least as many of its
    characters with no info string, whatever the lines between say. An author writing a
    ```markdown example that holds ```bash blocks, or forgetting a closing fence before the
    next ```bash, meant otherwise: here a fence line with an info string inside a markdown
    (or bare) fence, or indented deeper than the fence it is in (a ```json example inside
    an ```xml prompt), opens a nested one, and a bare one closes the innermost (in an example,
    a bare one indented deeper than the example opens a block of it); otherwise a line of
    the same character with an info string starts the next block. A fence indented under a
    list item that follows a heading inside a code fence opened at the margin
    (`_list_item_fence`) is the item's own: the code fence was left open before the heading.
    Lines CommonMark reads as HTML blocks or front matter are not read.
    """
    lines = doc.source.lines
    fenced = [False] * len(lines)
    for fence in doc.fences:
        fenced[fence.start_line:fence.end_line + 1] = [True] * (
            fence.end_line + 1 - fence.start_line)
    stack: list[tuple[int, str, int, str, int]] = []  # (line, marker, length, info, indent)
    headings: list[int] | None = None  # read on first need
    done: list[AuthoredFence] = []
    for no in range(doc.frontmatter_end + 1, len(lines)):
        if doc.opaque[no] and not fenced[no]:
            continue  # an HTML block
        rest = lines[no].lstrip(" \t")
        if not rest or rest[0] not in _FENCE_CHARS:
            continue
        opener = _fence_opener(rest)
        if opener is None:
            continue
        marker, length, info = opener
        bare = not info.strip()
        indent = _indent(lines[no], len(lines[no]) - len(rest))
        if not stack:
            stack.append((no, marker, length, info, indent))
            continue
        top_line, top_marker, top_length, top_info, top_indent = stack[-1]
        example = (top_info.strip().split(" ", 1)[0].lower() if top_info.strip() else "") \
            in NESTING_LANGS
        if not example and top_indent == 0 and indent > 0:
            if headings is None:
                headings = _prose_headings(lines)
            item_fence = _list_item_fence(lines, no, indent, top_line, headings)
        else:
            item_fence = False
        if item_fence:
            # a code block left open before a list item whose own fence this is
            stack.pop()
            done.append(AuthoredFence(top_line, no, top_info, by_opener=True, depth=len(stack)))
            stack.append((no, marker, length, info, indent))
            continue
        nests = indent > top_indent or example
        if bare and marker == top_marker and length >= top_length and not (
                example and indent > top_indent):  # deeper in an example: its own block
            stack.pop()
            done.append(AuthoredFence(top_line, no, top_info, depth=len(stack)))
        elif nests:
            stack.append((no, marker, length, info, indent))
        elif marker == top_marker and length >= top_length:  # not closed before this one
            stack.pop()
            done.append(AuthoredFence(top_line, no, top_info, by_opener=True, depth=len(stack)))
            stack.append((no, marker, length, info, indent))
    while stack:
        top_line, _, _, top_info, _ = stack.pop()
        done.append(AuthoredFence(top_line, None, top_info, depth=len(stack)))
    return sorted(done, key=lambda f: f.start_line)


_LIST_ITEM = LazyPattern(r"^([ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+)\S")
_PROSE_HEADING = LazyPattern(r"^#{1,6}[ \t]+\S")
_ITEM_LOOKBACK = 100
"""Most lines between a list item and its fence that are read back (a hostile file of
indented fences must stay linear)."""


def _prose_headings(lines: Sequence[str]) -> list[int]:
    """Lines of `# …` headings at the margin after a blank line, in order."""
    return [k for k in range(1, len(lines)) if lines[k].startswith("#")
            and _PROSE_HEADING.match(lines[k]) and not lines[k - 1].strip()]


def _list_item_fence(lines: Sequence[str], no: int, indent: int, top_line: int,
                     headings: list[int]) -> bool:
    """Whether the fence line `no`, indented `indent` inside a code fence opened at the
    margin on `top_line`, is a list item's own fence: the first line above it indented less
    is a list item whose text starts at most at `indent`, and a heading at the margin, after
    a blank line (`headings`), stands between them. Code does not hold that shape (a `- `
    line and a `# ` line of a script, then a fence indented under the `- `); a plan whose
    ```` ```lean ```` lost its closing line does, and the later item's fence then belongs
    to the item, not to the code block left open."""
    item = no - 1
    while item > max(top_line, no - _ITEM_LOOKBACK):
        text = lines[item]
        rest = text.lstrip(" \t")
        if rest and _indent(text, len(text) - len(rest)) < indent:
            break
        item -= 1
    if item <= top_line:
        return False
    m = _LIST_ITEM.match(lines[item])
    if m is None or _indent(lines[item], len(m.group(1))) > indent:
        return False
    k = bisect.bisect_left(headings, top_line + 2)
    return k < len(headings) and headings[k] < item


@lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    """markdown-it's CommonMark block parser, without inline parsing (a third of its time,
    and nothing a fence depends on); built once, on first need."""
    from markdown_it import MarkdownIt  # lazy: a warm check never parses markdown

    return MarkdownIt("commonmark").disable(["inline", "text_join"], ignoreInvalid=True)


def rendered_fence_lines(doc: MarkdownDoc, upto: int | None = None) -> set[int]:
    """Lines inside fenced code as markdown-it renders `doc`, list items and block quotes
    included (a fence in a list item ends with the item): the scanner above leaves
    containers out, so what it finds swallowed is confirmed here, by markdown-it's block
    rules run without markdown-it (`parse.fences`) or, for what they leave out (block
    quotes, HTML blocks, link reference definitions, tabs), by markdown-it. With `upto`,
    only the lines up to that one are parsed, and the answer holds for the non-blank ones
    among them: whether a line with text is in a fence depends on the lines before it alone
    (a fence or list item is closed by a later line, never reopened by one); a blank line's
    depends on whether the block goes on after it."""
    lines = list(doc.source.lines if upto is None else doc.source.lines[:upto + 1])
    lines[:doc.frontmatter_end + 1] = [""] * (doc.frontmatter_end + 1)
    inside = fence_lines(lines)  # markdown-it's rules without markdown-it, where they cover
    if inside is not None:
        return inside
    inside = set()
    for token in _block_parser().parse("\n".join(lines)):
        if token.type == "fence" and token.map:
            inside.update(range(token.map[0], token.map[1]))
    return inside


def _heading(no: int, line: str, rest: str, level: int) -> Heading | None:
    r"""The heading on `line`, whose `rest` (`line` without its indentation) opens with a
    heading of `level` (`_heading_level`). What the pattern `^ {0,3}(#{1,6})(?:[ \t]+(.*))?$`
    read from the line, worked out from what the scanner already knows instead of matching
    every heading line again (`tests/parse/test_markdown_scanner.py` keeps the two equal)."""
    indent = len(line) - len(rest)
    if indent > 3 or "\t" in line[:indent]:
        return None  # more than three spaces of indentation: tokenised, not read as a heading
    after = rest[level:]
    if not after:
        return Heading(level, "", no, len(line), len(line))
    text = after.lstrip(" \t")
    start = len(line) - len(text)
    content = _heading_content(text)
    return Heading(level, content.strip(), no, start, start + len(content))


_FRONTMATTER_OPEN = re.compile(r"^---[ \t]*$")
_FRONTMATTER_CLOSE = re.compile(r"^(?:---|\.\.\.)[ \t]*$")


def _heading_content(rest: str) -> str:
    """Heading text without the optional closing `#` sequence and trailing blanks.

    Done with string methods: the regex form (`(.*?)(?:[ \t]+#+)?[ \t]*$`) backtracks
    quadratically on a heading with a long run of inner blanks.
    """
    content = rest.rstrip(" \t")
    if content.endswith("#"):
        bare = content.rstrip("#")
        if bare[-1:] in (" ", "\t"):
            return bare.rstrip(" \t")
    return content


def find_frontmatter_end(lines: list[str]) -> int:
    """Index of the closing `---` when line 1 is exactly `---` (the repo's own loader rule)."""
    if not lines or not _FRONTMATTER_OPEN.match(lines[0]):
        return -1
    for i in range(1, min(len(lines), 2000)):
        if _FRONTMATTER_CLOSE.match(lines[i]):
            return i
    return -1


_RECENT_SIZE = 8
_recent_lock = threading.Lock()
_recent: dict[tuple[tuple[str, ...], bool], MarkdownDoc] = {}


def parse_markdown(source: Source, frontmatter: bool = True) -> MarkdownDoc:
    """Tokenise `source` into headings, fences and comments, masking opaque lines.

    The last few results are kept by content: a file's parser (plan, agent, command) and
    the rules' `RuleContext.markdown` read the same lines one after the other, and the
    scan is a large part of a check. Safe to share because nothing changes a
    `MarkdownDoc` once it is made, and its `source` is only read for its lines."""
    key = (tuple(source.lines), frontmatter)
    doc = _recent.get(key)
    if doc is None:
        doc = _parse_markdown(source, frontmatter)
        with _recent_lock:  # the language server checks files on several threads
            while len(_recent) >= _RECENT_SIZE:
                del _recent[next(iter(_recent))]
            _recent[key] = doc
    return doc


def _parse_markdown(source: Source, frontmatter: bool) -> MarkdownDoc:
    lines = source.lines
    n = len(lines)
    doc = MarkdownDoc(source=source, opaque=[False] * n)
    fm_end = find_frontmatter_end(lines) if frontmatter else -1
    doc.frontmatter_end = fm_end
    body_start = fm_end + 1 if fm_end >= 0 else 0
    doc.opaque[:body_start] = [True] * body_start
    _scan_blocks(doc, body_start)
    return doc


_BACKTICKS_RE = re.compile(r"`+")
_SINGLE_SPAN_RE = re.compile(r"`[^`]+`")


def _blank(m: re.Match[str]) -> str:
    return " " * (m.end() - m.start())


def blank_code_spans(line: str) -> str:
    """Replace inline code spans with spaces so their contents are never read as structure.

    CommonMark pairing: a run of N backticks opens a span closed by the next run of exactly
    N. Runs are indexed by length up front, so a line of unmatched backticks stays linear
    (a backreference regex took cubic time on one).
    """
    if "`" not in line:
        return line
    if "``" not in line:  # only single backticks: each pairs with the next one
        return _SINGLE_SPAN_RE.sub(_blank, line)
    runs = [(m.start(), m.end()) for m in _BACKTICKS_RE.finditer(line)]
    by_length: dict[int, list[int]] = {}
    for i, (a, b) in enumerate(runs):
        by_length.setdefault(b - a, []).append(i)
    out: list[str] = []
    pos = 0
    i = 0
    while i < len(runs):
        a, b = runs[i]
        same = by_length[b - a]
        k = bisect.bisect_right(same, i)
        if k == len(same):
            i += 1  # no closing run: the backticks are literal
            continue
        j = same[k]
        end = runs[j][1]
        out.append(line[pos:a])
        out.append(" " * (end - a))
        pos = end
        i = j + 1
    out.append(line[pos:])
    return "".join(out)

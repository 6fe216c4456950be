"""BTN003: markdown structure that renders differently from what its author wrote.

Every rule that asks whether a line is code reads the fences `parse.markdown` pairs the
CommonMark way; this family compares that pairing with the one the author meant
(`authored_fences`) and reports the headings the difference turns into code.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any

from ..lazy_pattern import LazyPattern
from ..model.base import Convention, Finding, Kind, Related, Severity
from ..parse.markdown import (
    NESTING_LANGS,
    AuthoredFence,
    Fence,
    Heading,
    MarkdownDoc,
    authored_fences,
    blank_code_spans,
    rendered_fence_lines,
)
from .base import RuleContext, rule

MARKDOWN_KINDS = (Kind.AGENT, Kind.COMMAND, Kind.SKILL, Kind.PLAN)
_HEADING = re.compile(r"^ {0,3}#{1,6}(?:[ \t]+(.*))?$")
NO_MARKDOWN_LANGS = frozenset({"json", "jsonl", "json5", "csv", "tsv"})
"""Languages with no comments or doc strings: a `## Usage` line in one cannot be meant as
code. Anywhere else (a bash `## step` comment, a Lean or Python doc string, which holds
markdown and nested fences) it may be, so a fence of theirs left open proves nothing."""
_SWALLOWED_HEADING = re.compile(r"^#{1,6}[ \t]+\S")
_HEREDOC = re.compile(r"<<-?[ \t]*['\"]?([A-Za-z_]\w*)")
_BLOCK_COMMENT = re.compile(r"<!--|(?:^|\s)(?:/-|/\*|\{-)")
_COMMENT_CLOSERS = {"<!--": "-->", "/-": "-/", "/*": "*/", "{-": "-}"}
_MARKDOWN_LINE = LazyPattern(
    r"^(?:#{1,6}[ \t]+\S"            # a heading
    r"|[ \t]*(?:[-*+]|\d{1,3}[.)])[ \t]+\S"  # a list item
    r"|[ \t]*>"                       # a block quote
    r"|[ \t]*\|"                      # a table row
    r"|[ \t]*(?:\*\*|__)\S"           # a bold lead-in
    r"|[ \t]*(?:-{3,}|\*{3,}|_{3,})[ \t]*$"  # a rule
    r"|[A-Z](?:[a-z'’][\w'’-]*)?[:,]?(?:[ \t]+\S+)+)"  # a sentence (not `FROM x`, `RUN y`)
)
_CODE_SHAPE = LazyPattern(r"[{};\\]\s*$|\s=\s|^\w+=|\$\(")
"""What a sentence-shaped line of code still shows: a brace, `;` or `\\` at its end, an
assignment, a command substitution."""
_SHOWN = 4
_CHAR_NAMES = {"`": "backticks", "~": "tildes"}


def _meant_as_code(lines: list[str], authored: list[AuthoredFence],
                   to_eof: set[int], title: int | None = None,
                   sections: list[Heading] | None = None) -> list[bool]:
    """Per line: inside a fence as the author nested them. Where the author's fence has no
    closing line (left open, or open when the next one starts) its lines count as code
    unless its language cannot hold a `#` line (`NO_MARKDOWN_LANGS`), or up to a heading
    that reads as the document's own (`_markdown_heading`; for an example left open that
    CommonMark closes, `_next_section`). `to_eof`: the lines of fences that run to the end
    of the file as rendered; `title`: the line of the document's first level-1 heading;
    `sections`: the document's own headings."""
    code = [False] * len(lines)
    numbered = [h for h in sections or () if _NUMBERED.match(h.text)]
    starts = [h.line for h in numbered]
    for fence in authored:
        if fence.end_line is not None and not fence.by_opener:
            end = fence.end_line
        elif fence.lang in NO_MARKDOWN_LANGS:
            end = fence.start_line
        else:
            end = len(lines) - 1 if fence.end_line is None else fence.end_line - 1
            if fence.lang not in NESTING_LANGS or (
                    fence.end_line is None and fence.start_line in to_eof):
                heading = _markdown_heading(lines, fence, end, title)
                if heading is None and fence.depth == 0 and fence.lang not in NESTING_LANGS:
                    heading = _next_section(lines, fence, end, _under(numbered, starts, fence),
                                            code=True)
                end = end if heading is None else heading - 1
            elif fence.end_line is None and fence.depth == 0:
                heading = _next_section(lines, fence, end, _under(numbered, starts, fence))
                end = end if heading is None else heading - 1
        code[fence.start_line:end + 1] = [True] * (end + 1 - fence.start_line)
    return code


_NUMBERED = re.compile(r"^(\w+)[ \t]+(\d+)(?!\d)")
_LEVEL_HEADING = re.compile(r"^(#{1,6})[ \t]+(\S.*)$")


def _under(numbered: list[Heading], starts: list[int], fence: AuthoredFence) -> Heading | None:
    """The last numbered heading (`### Phase 1: …`) before `fence` (`starts`: their lines)."""
    k = bisect.bisect_left(starts, fence.start_line)
    return numbered[k - 1] if k else None


def _next_section(lines: list[str], fence: AuthoredFence, end: int,
                  under: Heading | None, code: bool = False) -> int | None:
    """The heading that goes on numbering the document's sections inside a ```` ```markdown ````
    (or bare) example its author never closed, or None: under `### Phase 1: …`, the first
    `### Phase 2` (or later) at the same level, after a blank line. An example that holds
    such a heading and is closed in its turn is left alone; this one never is, as the author
    nested the fences, so that heading is where its text stopped. In a `code` block left
    open (a ```` ```bash ```` not closed before the next) the heading counts only where no
    heredoc, doc string, block comment or string is open (`_OpenText`). `under`: the
    numbered heading the fence stands under; only a fence no other encloses is read."""
    if under is None:
        return None
    m = _NUMBERED.match(under.text)
    assert m is not None
    word, number = m.group(1).lower(), int(m.group(2))
    text = _OpenText()
    for no in range(fence.start_line + 1, end + 1):
        line = lines[no]
        if (line.startswith("#") and no > fence.start_line + 1 and not lines[no - 1].strip()
                and not (code and text.open)):
            hm = _LEVEL_HEADING.match(line)
            nm = _NUMBERED.match(hm.group(2)) if hm and len(hm.group(1)) == under.level \
                else None
            if nm and nm.group(1).lower() == word and int(nm.group(2)) > number:
                return no
        if code:
            text.read(line)
    return None


def _markdown_heading(lines: list[str], fence: AuthoredFence, end: int,
                      title: int | None) -> int | None:
    """The first `#` line of a fence left open that is a markdown heading, not a comment.

    It follows a blank line, no heredoc, doc string, block comment or string is open where
    it stands (`_OpenText`), and every non-blank line from it to where
    the fence's text ends (`end`) is markdown: headings, list items, quotes, tables, bold
    lead-ins, rules or sentences that show no code (and the wrapped lines of their
    paragraphs) — never the code a `# step` comment precedes. A markdown example
    (```` ```markdown ````, a bare fence) holds such text itself, so one is read only when
    it runs to the end of the file (the caller's check). A whole markdown file shown in a
    ```` ```yaml ```` fence (front matter first, or a second `# Title` after the document's
    own) is an example too: none of its headings is taken."""
    example = fence.lang in NESTING_LANGS
    text = _OpenText()
    body = next((line.strip() for line in lines[fence.start_line + 1:end + 1] if line.strip()),
                "")
    if not example and body == "---":
        return None
    for no in range(fence.start_line + 1, end + 1):
        line = lines[no]
        if (_SWALLOWED_HEADING.match(line) and not lines[no - 1].strip()
                and no > fence.start_line + 1 and (example or not text.open)
                and _reads_as_markdown(lines, no + 1, end)):
            titled = title is not None and title < fence.start_line
            return None if titled and line.startswith("# ") else no
        if not example:
            text.read(line)
    return None


class _OpenText:
    """Whether a heredoc, a doc string, a block comment or a `"` string is open after the
    lines read so far: a `#` line inside one is its text, perhaps markdown meant as code."""

    def __init__(self) -> None:
        self.heredoc: str | None = None
        self.closer: str | None = None
        self.triple = {'"""': False, "'''": False}
        self.quote = False

    @property
    def open(self) -> bool:
        return bool(self.heredoc or self.closer or self.quote or any(self.triple.values()))

    def read(self, line: str) -> None:
        if self.heredoc is not None:
            if line.strip() == self.heredoc:
                self.heredoc = None
            return
        if self.closer is not None:
            if self.closer in line:
                self.closer = None
            return
        for mark in self.triple:
            if line.count(mark) % 2:
                self.triple[mark] = not self.triple[mark]
        if line.replace('"""', "").count('"') % 2:
            self.quote = not self.quote
        if (m := _BLOCK_COMMENT.search(line)) is not None:
            opener = m.group().strip()
            if _COMMENT_CLOSERS[opener] not in line[m.end():]:
                self.closer = _COMMENT_CLOSERS[opener]
        if (h := _HEREDOC.search(line)) is not None:
            self.heredoc = h.group(1)


def _reads_as_markdown(lines: list[str], start: int, end: int) -> bool:
    """Lines `start`..`end` hold text, and all of it is markdown-shaped (see above)."""
    text = False
    paragraph = False  # the line before is text a wrapped line may continue
    for no in range(start, end + 1):
        line = lines[no]
        if not line.strip():
            paragraph = False
            continue
        if _CODE_SHAPE.search(blank_code_spans(line)) or not (
                paragraph or _MARKDOWN_LINE.match(line)):
            return False
        heading = _SWALLOWED_HEADING.match(line) is not None
        text = text or not heading
        paragraph = not heading
    return text


def _marker(line: str) -> str:
    text = line.strip()
    return text[:len(text) - len(text.lstrip(text[0]))]


def _what(fence: Fence, authored: list[AuthoredFence], rendered: dict[int, Fence],
          lines: list[str]) -> tuple[str, str]:
    """(why the fence opened at `fence.start_line` swallows prose, its fix)."""
    line = lines[fence.start_line].strip()
    marker = _marker(line)
    closes = next((a for a in authored if a.end_line == fence.start_line and not a.by_opener),
                  None)
    if closes is not None:
        outer = rendered.get(closes.start_line)
        opener = lines[closes.start_line].strip()
        if outer is not None and outer.closed and outer.end_line < fence.start_line:
            longer = marker[0] * (len(_marker(opener)) + 1)
            outer_lang = closes.lang
            return (f"this {line} was meant to close the {opener} fence of line "
                    f"{closes.start_line + 1}, but the bare {lines[outer.end_line].strip()} on "
                    f"line {outer.end_line + 1} already closed that one (a fence ends at the "
                    "first bare fence of its character at least as long: fences inside it do "
                    "not nest), so this line opens a new code block",
                    f"give the example's outer fence more {_CHAR_NAMES[marker[0]]} than any "
                    f"fence inside it ({longer}{outer_lang} … {longer})")
        return (f"this {line} was meant to close the {opener} fence of line "
                f"{closes.start_line + 1}, but the fences before it pair off by one (a fence "
                "closed early, or a closing fence without its opening line), so this line "
                "opens a new code block", "balance the fences before it")
    own = next((a for a in authored if a.start_line == fence.start_line), None)
    if own is not None and own.by_opener and own.end_line is not None:
        after = lines[own.end_line].strip()
        if not after.lstrip(after[0]).strip():  # a bare one: a list item's fence
            return (f"the {line} fence opened here is not closed before the list item whose "
                    f"{after} on line {own.end_line + 1} opens the item's own block (a bare "
                    "fence line indented up to 3 spaces closes any open fence), so it runs on "
                    f"to line {fence.end_line + 1}",
                    f"close it with {marker} before line {own.end_line + 1}")
        return (f"the {line} fence opened here is not closed before the "
                f"{lines[own.end_line].strip()} on line {own.end_line + 1} (a fence line "
                f"with an info string cannot close a fence), so it runs on to line "
                f"{fence.end_line + 1}",
                f"close it with {marker} before line {own.end_line + 1}")
    if not fence.closed:
        return (f"the {line} fence opened here is never closed, so it runs to the end of "
                "the file", f"close it with {marker} after its last line")
    # The block closed right before this line, blank lines apart: the one closed on the last
    # line with text above it (a closing line has text, so no other can qualify).
    last = fence.start_line - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    before = next((f for f in rendered.values() if f.closed and f.end_line == last), None)
    if before is not None and not line.lstrip(marker[0]).strip():
        return (f"this {line} comes right after the block closed on line "
                f"{before.end_line + 1}, so it opens a new code block (a second closing "
                "fence, or one meant for an outer fence that line already closed)",
                f"delete it if it is a stray, or give the outer fence more "
                f"{_CHAR_NAMES[marker[0]]} than the fences inside it")
    inner = next((a for a in authored if a.end_line == fence.end_line and not a.by_opener),
                 None)
    if own is not None and own.end_line is None and inner is not None:
        return (f"the {line} fence opened here is never closed, so the "
                f"{lines[fence.end_line].strip()} on line {fence.end_line + 1}, meant to close "
                f"the {lines[inner.start_line].strip()} fence of line {inner.start_line + 1}, "
                "closes it instead", f"close it with {marker} where its text ends")
    return (f"the {line} fence opened here runs to line {fence.end_line + 1}, past where "
            "its author meant it to end", "balance the fences")


def _paired_as_written(md: MarkdownDoc, lines: list[str]) -> bool:
    """Whether the author's pairing of `md`'s fences is plainly CommonMark's, so that no
    heading can be swallowed: every fence is closed, below the front matter, by a line
    indented as its opening line, and no line inside one holds ```` ``` ```` or `~~~`.
    Outside fences every line that begins as a fence line opens one (the scanner opens a
    fence at any indentation), so `authored_fences` then meets just these opening and
    closing lines, each closing line pops the fence its opening line pushed, and
    `_meant_as_code` marks every line of every fence as code: BTN003 has no candidate.
    Most files with fences are so; this spares them `authored_fences` and the comparison
    (`test_fences_paired_as_written_are_paired_so_by_the_author` holds the two to each
    other on every markdown file of the corpus and the tests)."""
    for fence in md.fences:
        if not fence.closed or fence.start_line <= md.frontmatter_end:
            return False
        if _lead(lines[fence.start_line]) != _lead(lines[fence.end_line]):
            return False
        body = "\n".join(lines[fence.start_line + 1:fence.end_line])
        if "```" in body or "~~~" in body:
            return False
    return True


def _lead(line: str) -> str:
    return line[:len(line) - len(line.lstrip(" \t"))]


@rule("BTN003", "fence-swallows-headings", Severity.WARNING, MARKDOWN_KINDS,
      convention=Convention.MARKDOWN)
def fence_swallows_headings(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A code fence renders the headings after it as code.

    CommonMark (GitHub, the editor's preview, every reader Baton has) closes a fence at the
    first later line of at least as many of its characters with no info string, whatever
    the lines between say: a ```` ```markdown ```` example that holds ```` ```bash ````
    blocks ends at their first bare ```` ``` ````, and its own closing line then opens a
    new block that runs on to the next bare fence; a fence left open before the next
    ```` ```bash ```` runs on past it. The sections in between render as code: their
    headings vanish from the outline, and in a plan a phase heading in them is invisible to
    every reader of the plan. Reported on the fence that swallows them, when a heading its
    author wrote as prose (outside every fence as the author nested them) is inside it as
    markdown-it renders the file (list items included: a fence in a list item ends with the
    item); a fence that only renders code as code is not reported. In a fence left open
    whose language may hold `#` lines (a bash comment, a Lean or Python doc string; only
    JSON and CSV cannot), a `#` line is taken for a swallowed heading only when it follows a
    blank line, no heredoc, doc string, block comment or string is open there, and all that
    follows it up to where the fence's text ends reads as markdown (headings, list items,
    tables, bold lead-ins, sentences showing no code); a ```` ```markdown ```` or bare
    example is read so only when it runs to the end of the file, and one the author's
    nesting never closes (while CommonMark does) ends at the heading that goes on numbering
    the section it stands in (`### Phase 2` under `### Phase 1`), as a code block left open
    does where its text is not all prose. A list item's indented
    fence is the item's own, not the closing line of a code block left open before it. In
    plans an unclosed fence that swallows phases is BTN140's.

    Fix: give the outer fence more backticks than any fence inside it (```` ````markdown ````
    … ```` ```` ````), or close the block that was left open.

    Reported:

        ==> .claude/agents/debug-analyst.md <==
        # Debug Analyst

        Write the report in this shape:

        ```markdown
        ## Proposed Fix
        ```bash
        {fix_command}
        ```
        ```

        ## Return Format

        Return only the report path.

    Not reported:

        ==> .claude/agents/debug-analyst.md <==
        # Debug Analyst

        Write the report in this shape:

        ````markdown
        ## Proposed Fix
        ```bash
        {fix_command}
        ```
        ````

        ## Return Format

        Return only the report path.

    Reported (the last ```` ```bash ```` block lost its closing fence):

        ==> .claude/agents/qa-validator.md <==
        # QA Validator

        ```bash
        # Run the test suite
        npm test
        OUTPUT_PATH=".claude/qa/report.md"

        ## Return Format

        - **Status**: PASS or FAIL
        - **Report**: the path of the written report

    Not reported (comments in a block left open: code follows them):

        ==> .claude/agents/qa-validator.md <==
        # QA Validator

        ```bash
        # Run the test suite
        npm test

        ## Write the report
        OUTPUT_PATH=".claude/qa/report.md"
        cat > "$OUTPUT_PATH" <<EOF
        ## Summary

        All checks passed.
        EOF
    """
    md = ctx.markdown()
    if not md.fences:
        return
    lines = ctx.lines
    if _paired_as_written(md, lines):
        return
    authored = authored_fences(md)
    to_eof = {f.start_line for f in md.fences if not f.closed}
    title = next((h.line for h in md.headings if h.level == 1), None)
    code = _meant_as_code(lines, authored, to_eof, title, md.headings)
    rendered = {f.start_line: f for f in md.fences}
    owned_by_btn140 = bool(getattr(doc, "swallowed_phases", None))
    candidates: list[tuple[Any, list[tuple[int, str]]]] = []
    for fence in md.fences:
        if not fence.closed and owned_by_btn140:
            continue
        headings = [(no, (m.group(1) or "").strip()) for no in fence.body
                    if not code[no] and (m := _HEADING.match(lines[no])) is not None]
        if headings:
            candidates.append((fence, headings))
    if not candidates:
        return
    confirmed = rendered_fence_lines(md, upto=max(no for _, hs in candidates for no, _ in hs))
    for fence, headings in candidates:
        headings = [(no, text) for no, text in headings if no in confirmed]
        if not headings:
            continue  # a list item's end closed the fence before them
        what, fix = _what(fence, authored, rendered, lines)
        shown = ", ".join(f'"{text}" (line {no + 1})' for no, text in headings[:_SHOWN])
        more = f" and {len(headings) - _SHOWN} more" if len(headings) > _SHOWN else ""
        said = (f"the heading {shown} renders as code" if len(headings) == 1 else
                f"{len(headings)} headings render as code: {shown}{more}")
        yield ctx.finding(
            ctx.line_range(fence.start_line), f"{what}: {said}; fix: {fix}",
            related=[Related(path=ctx.path, range=ctx.line_range(no),
                             message="rendered as code") for no, _ in headings[:_SHOWN]])

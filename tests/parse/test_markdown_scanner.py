"""The line scanner in `parse.markdown` must find exactly what markdown-it-py finds.

`parse_markdown` used to run markdown-it-py with four block rules (a lenient fence, ATX
headings, HTML blocks and a lenient paragraph). It now runs the same rules itself over the
lines it already has, because tokenising was a third of the time of parsing a plan. This
test keeps the markdown-it-py configuration as the oracle and compares the two on
generated and real documents, so the scanner cannot drift from the behaviour it replaced.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_block.html_block import HTML_SEQUENCES

from baton_lsp.parse.markdown import (
    _HTML_BLOCKS,
    Comment,
    Fence,
    Heading,
    _heading,
    _heading_content,
    _heading_level,
    find_frontmatter_end,
    parse_markdown,
)
from baton_lsp.parse.text import Source

from .test_properties import markdownish

Skeleton = tuple[list[Heading], list[Fence], list[Comment], list[bool], int]

_HEADING_RE = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*))?$")
"""How the scanner read a heading line before `_heading` worked it out without a match."""


def _lenient_fence(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """A fence opens at any indentation (the rule `parse.markdown` used to install)."""
    pos = state.bMarks[start] + state.tShift[start]
    maximum = state.eMarks[start]
    if pos + 3 > maximum:
        return False
    src = state.src
    marker = src[pos]
    if marker not in "`~":
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
        if q - p < length or src[q:m].strip():
            continue
        closed = True
        break
    state.line = line + (1 if closed else 0)
    token = state.push("fence", "code", 0)
    token.info = params
    token.map = [start, state.line]
    token.meta = {"closed": closed, "indent": state.sCount[start]}
    return True


def _lenient_paragraph(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """An indented line never hides a block opener from the terminator check."""
    next_line = start + 1
    terminators = state.md.block.ruler.getRules("paragraph")
    while next_line < state.lineMax:
        if state.isEmpty(next_line):
            break
        if any(rule(state, next_line, state.lineMax, True) for rule in terminators):
            break
        next_line += 1
    state.line = next_line
    token = state.push("paragraph_open", "p", 1)
    token.map = [start, next_line]
    state.push("paragraph_close", "p", -1)
    return True


def _oracle_parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": True})
    md.core.ruler.disable(["inline", "text_join"])
    md.block.ruler.enableOnly(["fence", "heading", "html_block", "paragraph"])
    md.block.ruler.at("fence", _lenient_fence, {"alt": ["paragraph"]})
    md.block.ruler.at("paragraph", _lenient_paragraph)
    return md


ORACLE = _oracle_parser()


def oracle(source: Source, frontmatter: bool) -> Skeleton:
    """The markdown-it-py based implementation `parse_markdown` replaced."""
    lines = source.lines
    n = len(lines)
    opaque = [False] * n
    fm_end = find_frontmatter_end(lines) if frontmatter else -1
    body_start = fm_end + 1 if fm_end >= 0 else 0
    for i in range(body_start):
        opaque[i] = True
    headings: list[Heading] = []
    fences: list[Fence] = []
    comments: list[Comment] = []
    for tok in ORACLE.parse("\n".join(lines[body_start:])):
        if tok.map is None:
            continue
        a, b = tok.map[0] + body_start, tok.map[1] + body_start
        if tok.type == "heading_open":
            m = _HEADING_RE.match(lines[a])
            if m:
                content = _heading_content(m.group(2) or "")
                start = m.start(2) if m.group(2) is not None else len(lines[a])
                headings.append(Heading(len(m.group(1)), content.strip(), a, start,
                                        start + len(content)))
        elif tok.type == "fence":
            last = b - 1 if b > a else a
            # markdown-it replaces NUL with U+FFFD before tokenising; the scanner keeps it.
            info = lines[a].lstrip(" \t").lstrip(lines[a].lstrip(" \t")[0])
            assert tok.info == info.replace("\x00", "\ufffd")
            fences.append(Fence(a, min(last, n - 1), info, int(tok.meta["indent"]),
                                bool(tok.meta["closed"])))
            opaque[a:min(b, n)] = [True] * (min(b, n) - a)
        elif tok.type == "html_block":
            chunk = "\n".join(lines[a:b])
            if chunk.lstrip().startswith("<!--"):
                comments.append(Comment(a, b - 1, chunk))
            opaque[a:min(b, n)] = [True] * (min(b, n) - a)
    return headings, fences, comments, opaque, fm_end


def scanned(source: Source, frontmatter: bool) -> Skeleton:
    md = parse_markdown(source, frontmatter=frontmatter)
    return md.headings, md.fences, md.comments, md.opaque, md.frontmatter_end


BLOCKY = [
    "```", "````", "~~~", "```bash", "``` `x`", "~~~ ~", "  ```", "\t```", "    ~~~~",
    "# h", "#", "####### seven", "#no", "  ## indented", "    # four spaces", "\t# tab",
    "## closing ##", "<!--", "-->", "<!-- one line -->", "<div>", "</div>", "<script>",
    "</script>", "<?php", "?>", "<!DOCTYPE html>", "<![CDATA[", "]]>", "<span>", "<a href=x>",
    "<custom-tag>", "text", "- item", "", " ", "\t", "---", "key: value", "\x00", "\u00a0```",
]
blocky = st.lists(
    st.one_of(st.sampled_from(BLOCKY), st.tuples(st.sampled_from(BLOCKY), st.text(max_size=6))
              .map("".join)), max_size=30,
).map("\n".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=st.one_of(blocky, markdownish, st.text()), frontmatter=st.booleans())
def test_scanner_matches_markdown_it(text: str, frontmatter: bool) -> None:
    source = Source.from_text(text)
    assert scanned(source, frontmatter) == oracle(source, frontmatter)


def test_scanner_matches_markdown_it_on_the_corpus(corpus: Path) -> None:
    files = sorted(p for p in corpus.rglob("*.md") if p.is_file())
    assert files
    for path in files:
        source = Source.from_text(path.read_text(encoding="utf-8", errors="replace"))
        assert scanned(source, True) == oracle(source, True), path


@pytest.mark.parametrize("text", [
    "```\ncode\n", "```\ncode\n  \t", "<!--\nopen", "# a\n```x`\n# b", "para\n```\n# in\n```",
    "para\n    ```\nstill code\n```", "---\nk: v\n---\n# T\n", "x\n<span>\n# h", "\t```\n```",
    "####### x\n<span>\n# h", "<div>\n# h\n\n# h2",
])
def test_scanner_matches_markdown_it_on_edge_cases(text: str) -> None:
    source = Source.from_text(text)
    for frontmatter in (True, False):
        assert scanned(source, frontmatter) == oracle(source, frontmatter)


def test_html_block_conditions_are_markdown_its() -> None:
    """The scanner's copy of the seven HTML block conditions is markdown-it-py's, pattern for
    pattern and flag for flag (it is written out so a check need not import markdown-it-py)."""
    ours = [(o.compiled.pattern, o.compiled.flags, c.compiled.pattern, c.compiled.flags, i)
            for o, c, i in _HTML_BLOCKS]
    theirs = [(o.pattern, o.flags, c.pattern, c.flags, i) for o, c, i in HTML_SEQUENCES]
    assert ours == theirs


def test_parsing_markdown_imports_no_markdown_it() -> None:
    """Scanning a document with every block type loads no markdown-it-py module."""
    probe = ("import sys\nfrom baton_lsp.parse.markdown import parse_markdown\n"
             "from baton_lsp.parse.text import Source\n"
             "text = '# T\\n<div>\\nx\\n</div>\\n\\n```bash\\nls\\n```\\n'\n"
             "doc = parse_markdown(Source.from_text(text))\n"
             "assert doc.fences and doc.opaque[2], doc\n"
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'markdown_it'))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def _fenced_upto(text: str, upto: int) -> tuple[set[int], set[int]]:
    from baton_lsp.parse.markdown import rendered_fence_lines

    doc = parse_markdown(Source.from_text(text))
    lines = doc.source.lines
    whole = {no for no in rendered_fence_lines(doc) if no <= upto and lines[no].strip()}
    return whole, {no for no in rendered_fence_lines(doc, upto=upto) if lines[no].strip()}


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(markdownish, st.integers(min_value=0, max_value=80))
def test_fence_lines_of_a_prefix_are_those_of_the_whole(text: str, upto: int) -> None:
    """BTN003 parses only up to its last candidate heading: whether a line with text renders
    inside a fence must not depend on the lines after it (list items, quotes and fences
    included)."""
    whole, prefix = _fenced_upto(text, upto)
    assert prefix == whole


CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the shared corpus is not here")
def test_fence_lines_of_a_prefix_on_real_files() -> None:
    files = sorted(CORPUS.rglob("*.md"))
    assert files
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        count = text.count("\n") + 1
        for upto in sorted({count // 4, count // 2, (3 * count) // 4, count - 1}):
            whole, prefix = _fenced_upto(text, upto)
            assert prefix == whole, (path, upto)


def test_the_same_lines_are_scanned_once() -> None:
    """A file's parser and the rules' `RuleContext.markdown` scan the same lines one after
    the other (each through a `Source` of its own): the second gets the first's result,
    and other lines or the other frontmatter setting get their own."""
    text = "---\nname: x\n---\n# T\n\n```bash\nls\n```\n"
    first = parse_markdown(Source.from_text(text))
    lines = list(first.source.lines)
    again = parse_markdown(Source(text="\n".join(lines), lines=lines))
    assert again is first
    assert parse_markdown(Source(text="\n".join(lines), lines=lines), frontmatter=False) \
        is not first
    other = parse_markdown(Source.from_text(text + "# U\n"))
    assert other is not first and [h.text for h in other.headings] == ["T", "U"]
    assert parse_markdown(Source.from_text(text)).frontmatter_end == 2


def _old_heading(no: int, line: str) -> Heading | None:
    m = _HEADING_RE.match(line)
    if m is None:
        return None
    content = _heading_content(m.group(2) or "")
    start = m.start(2) if m.group(2) is not None else len(line)
    return Heading(len(m.group(1)), content.strip(), no, start, start + len(content))


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from([" ", "  ", "\t", "#", "##", "###", "#######", "x", "# x",
                                 " #", "\u00a0", "\x0b", "é"]), max_size=8).map("".join))
def test_heading_reads_what_the_heading_pattern_read(line: str) -> None:
    """On every line the scanner hands it (one opening with a heading of some level once its
    blanks are stripped), `_heading` gives what matching the old pattern gave."""
    rest = line.lstrip(" \t")
    level = _heading_level(rest) if rest[:1] == "#" else 0
    if level:
        assert _heading(3, line, rest, level) == _old_heading(3, line), line

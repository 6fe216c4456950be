"""`parse.fences.fence_lines` must place fenced code exactly where markdown-it does.

BTN003 confirms a swallowed heading against CommonMark's rendering, list items included.
It used to ask markdown-it-py for every such file; `fence_lines` runs markdown-it's own block
rules (code, fence, hr, list, heading, lheading, paragraph) without importing it, and hands
documents that need the rules it leaves out (block quotes, HTML blocks, link reference
definitions, tabs) back to markdown-it. markdown-it stays the oracle here: generated
documents with nested, indented, tilde and backtick fences in lists, and every real
markdown file at hand, must give the same lines.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from baton_lsp.parse.fences import fence_lines
from baton_lsp.parse.text import Source, split_lines

from .test_properties import markdownish

ORACLE = MarkdownIt("commonmark").disable(["inline", "text_join"], ignoreInvalid=True)


def rendered(lines: list[str]) -> set[int]:
    inside: set[int] = set()
    for token in ORACLE.parse("\n".join(lines)):
        if token.type == "fence" and token.map:
            inside.update(range(token.map[0], token.map[1]))
    return inside


def same(lines: list[str]) -> bool:
    """`fence_lines` agrees with markdown-it, or leaves the document to it."""
    ours = fence_lines(lines)
    assert ours is None or ours == rendered(lines), lines
    return ours is not None


MARKERS = ["", "", "", "- ", "* ", "+ ", "1. ", "2. ", "1) ", "10. ", "-", "1.", "-     ",
           "1.      ", "- - ", "1. - ", "-  ", "123456789. ", "1234567890. "]
BODIES = ["```", "```", "````", "~~~", "~~~~", "```bash", "```markdown", "``` x`y", "~~~ `x`",
          "``` ", "`` x", "# Heading", "## Phase 2", "#x", "####### no", "---", "***", "___",
          "- - -", "===", "--", "text", "a paragraph line", "", "", "", "[ ] task",
          "[link](x.md)", "    indented", "$ cmd", "  ```  ", "```   ", "~~~bash"]
line = st.tuples(st.integers(0, 9), st.sampled_from(MARKERS), st.sampled_from(BODIES)).map(
    lambda t: " " * t[0] + t[1] + t[2])
documents = st.lists(line, max_size=40)
uncovered = st.lists(st.one_of(line, st.sampled_from(["> quote", "<div>", "\t```", "- > q",
                                                        "[a]: /u", "a\rb", "  <!-- x -->",
                                                        "1.  <div>", "  - - >x", "-- 0 >",
                                                        "x <b>", "  1) [a]: /u"])),
                     max_size=30)


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_fence_lines_match_markdown_it(lines: list[str]) -> None:
    assert same(lines)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(uncovered, markdownish.map(split_lines)))
def test_fence_lines_match_or_defer_on_any_text(lines: list[str]) -> None:
    same(lines)


@pytest.mark.parametrize("lines,covered", [
    (["- a", "  ```", "  # in", "# out"], True),
    (["1. x", "   ```bash", "   # c", "", "   ```", "# h"], True),
    (["-", "  ```", "  x"], True),
    (["para", "    ```", "# h"], True),
    (["```", "# a", "````"], True),
    ([" " * 4 * 12 + "- x"] + [" " * 2 * k + "- x" for k in range(12)] + ["  ```"], False),
    (["> ```", "# h"], False),
    (["<div>", "```"], False),
    (["[x]:", "/u", "```"], False),
    (["\t```"], False),
])
def test_fence_lines_edge_cases(lines: list[str], covered: bool) -> None:
    assert same(lines) is covered


def _markdown_files() -> list[Path]:
    roots = [Path(__file__).resolve().parents[2].parent / "shared" / "corpus",
             *sorted((Path.home() / ".cache" / "baton-author-trees").glob("*")),
             *sorted(Path("/work/unseen").glob("*"))]
    return [p for root in roots if root.is_dir() for p in sorted(root.rglob("*.md"))
            if p.is_file()]


def test_fence_lines_match_markdown_it_on_real_files() -> None:
    files = _markdown_files()
    if not files:
        pytest.skip("no real markdown files here")
    covered = 0
    for path in files:
        lines = Source.from_text(path.read_text(encoding="utf-8", errors="replace")).lines
        covered += same(lines)
        for upto in (len(lines) // 3, (2 * len(lines)) // 3):
            same(lines[:upto + 1])
    assert covered > len(files) // 2


def test_confirming_a_swallowed_heading_imports_no_markdown_it() -> None:
    """A stray fence in a list item runs to the item's end, not over the `## Next` after
    it: found without loading any markdown-it module."""
    probe = ("import sys\nfrom baton_lsp.parse.markdown import parse_markdown, "
             "rendered_fence_lines\nfrom baton_lsp.parse.text import Source\n"
             "text = '# T\\n\\n- item\\n  ```markdown\\n  ```bash\\n  ls\\n  ```\\n  ```\\n"
             "\\n## Next\\n\\ntext\\n'\n"
             "lines = rendered_fence_lines(parse_markdown(Source.from_text(text)))\n"
             "print(sorted(lines), sorted(m for m in sys.modules "
             "if m.split('.')[0] == 'markdown_it'))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[3, 4, 5, 6, 7, 8] []"

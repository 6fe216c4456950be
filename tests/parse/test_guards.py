"""The cheap tests the parsers run before a pattern or a rule never turn away a line the
pattern or rule would have taken: each guard is a necessary condition of what it guards, so
the answers are those of the unguarded code (only the time differs)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.parse import shell
from baton_lsp.parse.fences import _OPENERS, _Blocks
from baton_lsp.parse.signals import SIGNAL_RE, SIGNAL_WORD_ALONE, SIGNAL_WORDS

_PIECES = [
    "IF", "ELSE IF", "FOR EACH", "END IF", "THEN", "WHILE", "OTHERWISE", "$", "$ ", "@", ":",
    ">", ">>>", "=#", "=>", "(gdb) ", "ipdb> ", "mysql> ", "user@host:~$ ", "PASS ", "FAIL ",
    "Tests: ", "3 tests passed", "٣ tests failed", "---", "|---|---|", ":--", "===", "✓",
    "✅", "❌", "├", "•", "- ", "* ", "+ ", "1. ", "2) ", "Step 1 (Init):", "Use it:", "x=",
    "a", "Z", "ok", " ", "\t", "echo ", "_COMPLETE", "PLAN_CREATED:", "PROGRESS:", "progress:",
    "TASK_ERROR:", "`", "```", "~~~", "#", "## ", "_", "__", "***", "9", "0)", "(", "{", "é",
]
_lines = st.lists(st.sampled_from(_PIECES), max_size=8).map("".join)


def _first_guards(text: str) -> dict[str, bool]:
    """What `classify_lines` asks of a code line (`text` starts at its first character)
    before trying each pattern."""
    c = text[:1]
    return {
        "keyword": c in shell._PSEUDO_KEYWORD_FIRST,
        "prompt": c in "$(" or "@" in text or ">" in text or "=#" in text,
        "output": c in shell._OUTPUT_FIRST or c.isdigit(),
        "prose": c in "-*+" or c.isdigit() or "A" <= c <= "Z",
    }


_OUTPUT_GLYPH_RE = re.compile("^[" + "".join(sorted(shell._OUTPUT_GLYPHS)) + "]")
"""What `classify_lines` asks of a line's first character (`c in shell._OUTPUT_GLYPHS`)."""
_TREE_RE = re.compile(f"[{shell._TREE_GLYPHS}]")

_GUARDED: dict[str, tuple[re.Pattern[str], ...]] = {
    "keyword": (shell._PSEUDO_KEYWORD_RE,),
    "prompt": (shell._PROMPT_RE,),
    "output": (_OUTPUT_GLYPH_RE, shell._OUTPUT_LINE_RE),
    "prose": (shell._PROSE_RE,),
}


@settings(max_examples=1000, deadline=None)
@given(_lines)
def test_classify_guards_are_necessary(line: str) -> None:
    text = line.strip()
    if not text:
        return
    guards = _first_guards(text)
    for name, patterns in _GUARDED.items():
        if any(p.match(text) for p in patterns):
            assert guards[name], (name, text)


def test_classify_guards_on_the_example_lines() -> None:
    """Each pattern's own kind of line passes its guard (the evidence the tests of
    `classify` expect)."""
    for name, text in [("keyword", "IF on main → merge"), ("prompt", "$ npm test"),
                       ("prompt", "(gdb) bt"), ("prompt", "db=# select 1"),
                       ("output", "✓ passes (2 ms)"), ("output", "٣ tests passed"),
                       ("output", "|---|---|"), ("prose", "- Scan the root"),
                       ("prose", "1. Scan"), ("prose", "Use Context7 to research:")]:
        assert any(p.match(text) for p in _GUARDED[name]), text
        assert _first_guards(text)[name], text


@settings(max_examples=1000, deadline=None)
@given(_lines)
def test_a_line_with_a_signal_holds_an_underscore_or_the_one_word(line: str) -> None:
    if SIGNAL_RE.search(line):
        assert "_" in line or SIGNAL_WORD_ALONE in line, line


def test_the_one_signal_without_an_underscore_is_the_guarded_word() -> None:
    assert [w for w in SIGNAL_WORDS if "_" not in w] == [SIGNAL_WORD_ALONE.rstrip(":")]
    assert SIGNAL_RE.search(f"Print {SIGNAL_WORD_ALONE} 3/5")


@settings(max_examples=1000, deadline=None)
@given(_lines)
def test_only_an_opener_can_end_a_paragraph(line: str) -> None:
    """`_Blocks._terminates_paragraph` tries its four rules only on a line whose character
    at its indentation is in `_OPENERS`: no rule takes any other."""
    blocks = _Blocks([line, ""])
    blocks.parent = "paragraph"
    hit = (blocks._fence(0, 1, True) or blocks._hr(0, True) or blocks._list(0, 1, True)
           or blocks._heading(0, True))
    if hit:
        assert blocks._ch(0, blocks.ind[0]) in _OPENERS, line


_bash = st.lists(st.sampled_from(["a", " ", "$x", "$(", ")", "${", "}", '"', "'", "#", "`",
                                  "\\", "<<E", "\nE\n", "\n", ";", "echo "]),
                 max_size=16).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_bash)
def test_code_only_blanks_every_character_that_is_not_code(block: str) -> None:
    """`_code_only`'s shortcuts (a line with no code, a line all code) give what blanking
    each character that is not unquoted code gives."""
    for line in shell.lex_bash(block):
        expected = "".join(ch if cls == shell.CODE else " "
                           for ch, cls in zip(line.text, line.classes, strict=True))
        assert shell._code_only(line) == expected, line


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(['"', "\\", "a", " ", '\\"', "\\\\"]), max_size=12).map("".join))
def test_unescaped_quotes_counts_as_the_character_walk_does(text: str) -> None:
    from baton_lsp.parse.agent import _unescaped_quotes

    count, escaped = 0, False
    for ch in text:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch == '"':
            count += 1
    assert _unescaped_quotes(text) == count


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(["a", " ", ";", "|", "(", ")", "{", "}", "&", "do", "done",
                                 "while", "for", "if", "then", "else", "!", "time", "until",
                                 "select", "elif", "continue", "break", "x=1", "\t"]),
                max_size=12).map("".join))
def test_a_line_without_a_scan_word_starts_no_segment_with_one(code: str) -> None:
    """`_scan_loop_words` skips a line `_LOOP_SCAN_WORD_RE` finds nothing in: none of its
    segments starts with a word the scan acts on."""
    if shell._LOOP_SCAN_WORD_RE.search(code):
        return
    words = shell._LOOP_WORDS | shell._PREFIX_WORDS | shell._LOOP_KEYWORDS
    for segment in shell._SEGMENT_RE.split(code):
        assert not (segment.split()[:1] and segment.split()[0] in words), code


def _scan_loop_words_unguarded(lines: list[shell.BashLine]) -> tuple[int, str] | None:
    """`shell._scan_loop_words` as it was before it blanked only the lines its patterns can
    match: every line's code worked out first."""
    codes = [shell._code_only(line) for line in lines]
    if any(shell._FUNCTION_RE.match(code) for code in codes):
        return None
    depth = headers = 0
    for no, code in enumerate(codes):
        for segment in shell._SEGMENT_RE.split(code):
            words = segment.split()
            while words and words[0] in shell._PREFIX_WORDS and words[0] not in shell._LOOP_WORDS:
                if words.pop(0) in shell._LOOP_KEYWORDS:
                    depth += 1
                    headers += 1
                    words = []
            if words and words[0] in shell._LOOP_KEYWORDS:
                depth += 1
                headers += 1
                continue
            while words and words[0] in shell._LOOP_WORDS:
                word = words.pop(0)
                if word == "do":
                    if headers:
                        headers -= 1
                    else:
                        depth += 1
                elif word == "done":
                    depth = max(0, depth - 1)
                    headers = min(headers, depth)
                elif depth == 0:
                    return no, word
                else:
                    break
    return None


_loop_block = st.lists(st.sampled_from([
    "while true; do", "for f in *; do", "do", "done", "continue", "break", "echo break",
    "# continue", "'break'", "f() {", "}", "function g {", "echo 'f() {'", "# function x",
    "echo \"(\" done", "x=\"continue\" break", "if x; then break; fi", "cat <<EOF", "EOF",
    "until y", "! continue", "time break", "a;break", "echo breakfast", "(", "",
]), max_size=12).map("\n".join)


@settings(max_examples=1000, deadline=None)
@given(_loop_block)
def test_scan_loop_words_blanks_only_lines_that_can_match(block: str) -> None:
    """Skipping the code of a line whose raw text holds no `(`, `function` nor scan word
    gives the answer of the scan that blanks every line."""
    lines = list(shell.lex_bash(block))
    assert shell._scan_loop_words(lines) == _scan_loop_words_unguarded(lines)


def test_scan_loop_words_leaves_plain_lines_alone() -> None:
    """A block of commands with one `continue` blanks the quotes of the loop's lines only, not
    every line's (old code: 204 calls)."""
    import sys
    from types import FrameType

    block = "\n".join(["while read -r f; do"] + ['  echo "$f" | grep -q x'] * 200
                      + ["  continue", "done"])
    lines = list(shell.lex_bash(block))
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call" and frame.f_code is shell._code_only.__code__:
            calls += 1

    sys.setprofile(profile)
    try:
        found = shell._loose_loop_word(lines)
    finally:
        sys.setprofile(None)
    assert found is None
    assert calls <= 4, calls  # `continue` once to find it, then the loop's three lines


_quoting = st.lists(st.sampled_from([
    "a", " ", "$x", "$", "$(", ")", "${", "${a}", "${#x}", "${x:-\"y\"}", "}", "{", "(", '"',
    "'", "#", "`", "\\", "<<E", "\nE\n", "\n", ";", "echo ", '"$HOME/x"', '"${a}b"', '"$"',
    "$'", '"\\""', '"a$(b)"',
]), max_size=14).map("".join)


@settings(max_examples=2000, deadline=None)
@given(_quoting)
def test_simple_double_quotes_read_at_once_lex_as_one_character_at_a_time(block: str) -> None:
    """Reading a closed `"..."` holding only `$name`/`${name}` at once gives the classes of
    reading it a character at a time (the lexer with the shortcut switched off)."""
    import re as re_

    fast = [(line.text, line.classes) for line in shell.lex_bash(block)]
    saved = shell._SIMPLE_DQ
    shell._SIMPLE_DQ = re_.compile(r"(?!)")  # matches nothing: every quote read as before
    try:
        slow = [(line.text, line.classes) for line in shell.lex_bash(block)]
    finally:
        shell._SIMPLE_DQ = saved
    assert fast == slow


def test_simple_double_quotes_are_read_in_one_step() -> None:
    """A block of echo lines with quoted `$name` and `${name}` costs under half the built-in
    calls it cost when each quote was read a character at a time (old code: 4,402)."""
    import sys
    from types import FrameType

    block = "\n".join(['echo "Done: $name in ${dir}" >> "$LOG"'] * 100)
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "c_call":
            calls += 1

    sys.setprofile(profile)
    try:
        lines = shell.lex_bash(block)
    finally:
        sys.setprofile(None)
    assert all(line.classes == "c" * 5 + "d" * 23 + "c" * 4 + "d" * 6 for line in lines)
    assert calls <= 2_200, calls


_restore_lines = st.lists(st.sampled_from([
    "source", ".", " ", "\t", "\u00a0", "\u2003", "x", "$f", "eval", "load_workflow_state",
    ";", "&", "|", "(", "/lib/", "a.sh", "sources", "\"", "#", "=", "evaluate",
]), max_size=10).map("".join)


@settings(max_examples=1000, deadline=None)
@given(_restore_lines)
def test_restore_word_is_necessary_for_a_restore(text: str) -> None:
    """`_block_vars` tries BTN320's restore pattern only on a line `_RESTORE_WORD_RE` finds
    something in: every line the pattern matches has it."""
    from baton_lsp.rules import command_bash

    if command_bash._RESTORE_RE.search(text):
        assert command_bash._RESTORE_WORD_RE.search(text), text


def test_block_vars_tries_the_restore_pattern_only_where_it_can_match() -> None:
    """A block of 200 `echo "$x"` lines and one `source` runs the look-behind restore
    pattern on the `source` line only (old code: on all 201)."""
    import sys
    from types import FrameType

    from baton_lsp.rules import command_bash

    lines = list(shell.lex_bash("\n".join(['echo "$x" >> "$LOG"'] * 200 + ['source "$F"'])))
    tries = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal tries
        if event == "c_call" and getattr(arg, "__self__", None) is command_bash._RESTORE_RE:
            tries += 1

    sys.setprofile(profile)
    try:
        info = command_bash._block_vars(lines)
    finally:
        sys.setprofile(None)
    assert info.restore_line == 200
    assert info.uses["x"] == (0, 6, 8) and info.uses["F"] == (200, 8, 10)
    assert tries == 1, tries


@settings(max_examples=1000, deadline=None)
@given(_bash)
def test_path_only_cuts_the_comment_as_filtering_did(block: str) -> None:
    """A comment is the end of its line, so cutting the text at it gives the code that
    dropping each comment character gave, and `_path_only` the same answer."""
    for line in shell.lex_bash(block):
        comment = line.classes.find(shell.COMMENT)
        assert comment < 0 or line.classes[comment:] == shell.COMMENT * (len(line.text) - comment)
        start = shell._code_start(line)
        if start is None:
            continue
        code = "".join(ch for ch, cls in zip(line.text[start:], line.classes[start:], strict=True)
                       if cls != shell.COMMENT).strip()
        old = bool(_TREE_RE.search(line.text)) or bool(
            code and not code.startswith("-") and "=" not in code
            and shell._PATH_TOKEN_RE.match(code))
        assert shell._path_only(line, start) == old, line


def test_path_only_reads_no_character_one_at_a_time() -> None:
    """Old code: a generator filtered the line a character at a time (20 calls here)."""
    import sys
    from types import FrameType

    (line,) = shell.lex_bash("src/lib/parse.py  # the parser, as the plan describes it here")
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    sys.setprofile(profile)
    try:
        found = shell._path_only(line, 0)
    finally:
        sys.setprofile(None)
    assert found
    assert calls <= 2, calls


def test_single_quotes_closed_on_their_line_are_read_in_one_step() -> None:
    """Old code: each `'...'` took a step for its opening quote and one for the rest
    (2,202 built-in calls for this block)."""
    import sys
    from types import FrameType

    block = "\n".join(["grep -q 'a b' x 'c' # note"] * 100)
    calls = 0

    def profile(frame: FrameType, event: str, arg: object) -> None:
        nonlocal calls
        if event == "c_call":
            calls += 1

    sys.setprofile(profile)
    try:
        lines = shell.lex_bash(block)
    finally:
        sys.setprofile(None)
    assert all(line.classes == "cccccccc" "sssss" "ccc" "sss" "c" "######" for line in lines)
    assert calls <= 2_100, calls

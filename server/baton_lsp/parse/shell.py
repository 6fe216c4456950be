"""Bash blocks read without running them: a lexer that knows quoting, comments and
here-documents, and a classifier that tells a script from text that only looks like one.

Command files put all sorts of text in ```bash fences: real scripts, but also usage
templates (`/cmd [OPTIONS] <file>`), pseudo-code, terminal transcripts and lists of paths.
Linting those as scripts is what made ShellCheck findings noise, so rules ask `classify`
first. Pure functions, no I/O: the core of BTN32x and BTN330.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

from ..lazy_pattern import LazyPattern
from ..model.base import FieldRecord
from .text import has_any

CODE, DQ, SQ, ESC, COMMENT, HEREDOC, HEREDOC_QUOTED = "c", "d", "s", "e", "#", "h", "H"
"""Per-character classes: unquoted code, inside "...", inside '...', the character after a
backslash, a comment, an expanding here-document body, a quoted (literal) here-document body."""

_HEREDOC_RE = re.compile(r"<<(-?)[ \t]*(?:'([^'\n]*)'|\"([^\"\n]*)\"|\\?([A-Za-z_][\w.-]*))")
_COMMENT_PREV = frozenset(" \t;&|()")
_PLAIN_CODE = re.compile(r"[^\\$`\"'#<()]+")
"""Unquoted characters that open or close nothing (`#` and `<<` are looked at one by one)."""
_PLAIN_DQ = re.compile(r"[^\\$`\"]+")
"""Characters inside double quotes that open or close nothing."""
_SIMPLE_DQ = re.compile(r'"[^\\$`"]*(?:(?:\$(?![({])|\$\{[^\\`"\'$}]*\})[^\\$`"]*)*"')
"""A double-quoted string closed on its line with nothing nested in it but `$name` and a
plain `${name}`: every character of it is DQ, and the context after it is the one before,
so it is read at once (most quotes of a block are these; each costs three steps read one
opening or closing character at a time)."""


class BashLine(FieldRecord):
    """A line of a bash block and the class of each of its characters.

    Written out rather than a dataclass (nor is `BlockClass` one): a dataclass compiles its
    methods when its module is imported, which every check paid for."""

    __slots__ = ("classes", "text")
    _FIELDS = ("text", "classes")

    def __init__(self, text: str, classes: str) -> None:
        self.text = text
        self.classes = classes
        """One class character per character of `text`."""

    def is_code(self, i: int) -> bool:
        return self.classes[i] == CODE

    def expands(self, i: int) -> bool:
        """True where bash expands `$...`: code, double quotes, unquoted here-documents."""
        return self.classes[i] in (CODE, DQ, HEREDOC)


def lex_bash(content: str) -> list[BashLine]:
    """Classify every character of a bash block.

    Quotes, `$( )`, backticks and `${ }` nest (so `"$(echo 'x')"` has a single-quoted part,
    as bash itself reads it); quoting state and here-documents carry over line ends.
    """
    out: list[BashLine] = []
    # Context stack: "q" double quotes, "(" command substitution (with paren depth), "`"
    # backticks, "{" ${...} inside double quotes. The bottom (empty stack) is plain code.
    stack: list[list[Any]] = []
    in_sq = False
    pending: list[tuple[str, bool, bool]] = []  # (delimiter, strip tabs, quoted)
    heredoc: tuple[str, bool, bool] | None = None
    for text in content.split("\n"):
        if heredoc is not None:
            delim, strip_tabs, quoted = heredoc
            out.append(BashLine(text, (HEREDOC_QUOTED if quoted else HEREDOC) * len(text)))
            check = text.lstrip("\t") if strip_tabs else text
            if check.rstrip("\r") == delim:
                heredoc = pending.pop(0) if pending else None
            continue
        classes: list[str] = []
        n = len(text)
        i = 0
        while i < n:
            top = stack[-1][0] if stack else ""
            # Runs of characters that change nothing, classified at once.
            if in_sq:
                j = text.find("'", i)
                end = n if j < 0 else j + 1
                classes.append(SQ * (end - i))
                in_sq = j < 0
                i = end
                continue
            run = _PLAIN_DQ.match(text, i) if top == "q" else \
                _PLAIN_CODE.match(text, i) if top in ("", "(", "`") else None
            if run is not None:
                classes.append((DQ if top == "q" else CODE) * (run.end() - i))
                i = run.end()
                if i >= n:
                    break
                # The run stopped at a character that opens or closes something (else it
                # would have gone on): read it now, in the same context, rather than try
                # the run's pattern on it again only to fail.
            ch = text[i]
            quoted = top in ("q", "{")
            here = DQ if quoted else CODE
            if ch == "\\" and i + 1 < n:
                classes += [here, ESC]
                i += 2
                continue
            elif ch == "$" and i + 1 < n and text[i + 1] in "({":
                stack.append(["(", 0] if text[i + 1] == "(" else ["{", 0])
                classes += [here, here]
                i += 2
                continue
            elif ch == "`":
                classes.append(here)
                if top == "`":
                    stack.pop()
                else:
                    stack.append(["`", 0])
            elif top == "q":
                classes.append(DQ)
                if ch == '"':
                    stack.pop()
            elif top == "{" and ch == "}":
                classes.append(here)
                stack.pop()
            elif ch == '"':
                simple = _SIMPLE_DQ.match(text, i)
                if simple is not None:
                    classes.append(DQ * (simple.end() - i))
                    i = simple.end()
                    continue
                classes.append(DQ)
                stack.append(["q", 0])
            elif top == "{":
                classes.append(DQ if len(stack) > 1 and stack[-2][0] == "q" else CODE)
            elif ch == "'":
                # Read to its closing quote at once when it is on this line.
                j = text.find("'", i + 1)
                if j >= 0:
                    classes.append(SQ * (j + 1 - i))
                    i = j + 1
                    continue
                in_sq = True
                classes.append(SQ)
            elif ch == "#" and (i == 0 or text[i - 1] in _COMMENT_PREV):
                classes.append(COMMENT * (n - i))
                break
            else:
                if top == "(":
                    if ch == "(":
                        stack[-1][1] += 1
                    elif ch == ")":
                        if stack[-1][1] == 0:
                            stack.pop()
                        else:
                            stack[-1][1] -= 1
                if ch == "<" and text.startswith("<<", i) and not text.startswith("<<<", i) \
                        and (i == 0 or text[i - 1] != "<"):
                    m = _HEREDOC_RE.match(text, i)
                    if m:
                        quoted_delim = m.group(4) is None or text[m.start(4) - 1] == "\\"
                        delim = next(g for g in m.group(2, 3, 4) if g is not None)
                        pending.append((delim, bool(m.group(1)), quoted_delim))
                classes.append(CODE)
            i += 1
        out.append(BashLine(text, "".join(classes)))
        if pending and heredoc is None:
            heredoc = pending.pop(0)
    return out


# -- script or not? ----------------------------------------------------------------------------

SCRIPT, EMPTY, TEMPLATE, PSEUDO_CODE, TRANSCRIPT, PATH_LIST, FRAGMENT = (
    "script", "empty", "template", "pseudo-code", "transcript", "path list", "fragment")


class BlockClass(NamedTuple):
    """What a ```bash block holds; `line` (0-based, in the block) is the evidence."""

    kind: str
    line: int = -1
    evidence: str = ""

    @property
    def is_script(self) -> bool:
        return self.kind == SCRIPT

    def describe(self) -> str:
        """`template: {topic} on line 3 is a placeholder` — why the block is not a script."""
        where = f" on line {self.line + 1} of the block" if self.line >= 0 else ""
        return f"{self.kind}: {self.evidence}{where}"


_MARKER_RE = re.compile(r"#.*\bpseudo[- ]?code\b", re.IGNORECASE)
_EXAMPLE_RE = re.compile(r"^#\s*(?:example|illustrative|conceptual|sketch|not (?:meant to be )?"
                         r"(?:run|executed))\b", re.IGNORECASE)
_TOOL_CALL_RE = re.compile(r"^(?:Task|Agent|Skill|SlashCommand|TodoWrite)\s*[({]")
_CALL_RE = re.compile(r"^[A-Za-z_][\w$.]*\((?!\s*\))[^)]*(?:\)\s*;?|\{|\[|,)?\s*$")
"""`AskUserQuestion({`, `validate(input, rules)`: a JavaScript/Python-style call. A bash
function is defined `name() {` and called without parentheses."""
_LEADING_FILL_RE = re.compile(r"^\[[a-z][\w-]*\](?=\s)")
"""`[package_mgr] run dev`: a fill-in where the command goes (bash's test is `[ x ]`)."""
_BRACKET_FILL_RE = re.compile(r"^\[(?![\[\s])[A-Za-z][^\]]*\s[^\]]*(?<!\s)\]$")
"""`[test command from CONVENTIONS.md]` alone on a line: a fill-in; bash's test is `[ x ]`."""
_PY_STRONG_RE = re.compile(r"^(?:async\s+)?def\s+\w+\s*\(.*\)\s*(?:->.*)?:$|^class\s+\w+.*:$")
_PY_CONTROL_RE = re.compile(r"^(?:if|elif|else|while|for|with|try|except|finally)\b.*:$")
_PROMPT_RE = re.compile(
    r"^(?:\$|[\w.-]+@[\w.-]+:[^\s$#]*[$#]|>>>|\((?:gdb|lldb|rr|pdb|Pdb|dlv)\)"
    r"|(?:ipdb|mysql|sqlite|psql|redis[\w:.-]*)>|[\w-]+=[#>])[ \t]+\S")
_BANG_MODE_RE = LazyPattern(r"^![A-Za-z./~]")
"""`!cat notes.md`: a line typed in Claude Code's `!` bash mode (bash itself needs `! cmd`)."""
_SLASH_USAGE_RE = LazyPattern(r"^/[A-Za-z][\w:.-]*(?:\s|$)")  # only for lines starting `/`
_BRACE_RE = re.compile(r"(?<![$\\{])\{\{?\s*[A-Za-z_][\w.-]*(?: [\w.-]+)*\s*\}\}?(?![\w}])")
_ANGLE_RE = re.compile(r"(?<![<\w$>&])<([A-Za-z][\w./:-]*(?: [\w./:-]+)*)>(?![>&\w])")
_PROSE_ANGLE_RE = re.compile(r"(?<=\s)<([A-Za-z][^<>\n$]*?\s+[^\s<>$][^<>\n$]*)>(?=\s|$)")
"""`<specific files — never git add .>`: a fill-in written as words, not a redirect."""
_HTTP_RE = re.compile(r"^(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+(?:/|https?://)\S*")
"""`GET /users?status=active`: an HTTP request or an API log, not a command."""
_OPTION_RE = re.compile(
    r"(?<=\s)\[(?:--?[A-Za-z][\w-]*(?:[ =|][^\]]*)?|[A-Z][A-Z0-9_-]{2,}(?:\.\.\.)?"
    r"|[a-z][\w-]*[-_][\w-]*|[a-z]{6,}|[^\]\s]*\.\.\.|[\w-]+(?:\|[\w-]+)+)\](?=\s|$)")
_ELLIPSIS_LINES = frozenset({"...", "…", "[...]", "# ...", "<...>"})
_PATH_TOKEN_RE = re.compile(r"^(?:[\w.~*?{}\[\]@+-]*/[\w.~*?{}\[\]@/+-]*|[\w.*?-]*\*[\w.*?-]*"
                            r"|[\w-]+\.[A-Za-z0-9]{1,5})$")
_TREE_GLYPHS = "├└│"
"""Box-drawing characters of a `tree` listing. This and the other non-ASCII glyph sets are
tested with `in`, not compiled into character classes: a class of scattered non-ASCII
characters compiles to a big-charset table, a cost every check paid at import."""
_ECHO_RE = re.compile(r"^\s*(?:echo|printf|cat|log\w*|warn\w*|error\w*|die)\b")
_PSEUDO_KEYWORD_RE = re.compile(
    r"^(?:IF|ELSE(?:\s+IF)?|ELIF|THEN|FOR(?:\s+EACH)?|FOREACH|WHILE|UNTIL|OTHERWISE"
    r"|END\s*IF)(?=[\s:]|$)(?!\s*[\[(!])")
"""Upper-case control words opening a line; `IF [ -f x ]; then` is a script's typo, kept."""
_PSEUDO_KEYWORD_FIRST = frozenset("IETFWUO")
"""The letters `_PSEUDO_KEYWORD_RE` can match first."""
_ARROWS = "→⇒←"
_OUTPUT_GLYPHS = frozenset("✓✔✕✗×•●▶→├└│✅❌")
"""Glyphs opening a line of printed output (check marks, bullets, tree branches)."""
_OUTPUT_LINE_RE = re.compile(
    r"^(?:(?:PASS|FAIL)\s+\S"                                   # jest/vitest file lines
    r"|(?:Tests?|Test Suites):\s+\d+\s+(?:passed|failed)"          # runner summaries
    r"|\d+\s+tests?\s+(?:passed|failed)\b"
    r"|\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)+\|?$"                # table separator row
    r"|={3,}$|-{3,}$)")                                           # rules under a heading
_OUTPUT_FIRST = frozenset("PFT|:-=✓✔✕✗×•●▶→├└│✅❌")
"""What `_OUTPUT_GLYPHS` or `_OUTPUT_LINE_RE` can match first, digits aside."""
_PROSE_RE = re.compile(
    r"^(?:[-*+]\s+(?!-)[\w`\"'(\[]"                    # `- Scan the root`: a markdown bullet
    r"|\d+[.)]\s+[A-Z][a-z]"                            # `1. Scan the root`
    r"|[A-Z][a-z]+(?:\s+[\w'()/-]+){0,4}:(?:\s+\S|$))")    # `Use Context7 to research:`
"""A line of markdown prose: bash has no command `-`, `1.` or `Step 1 (Init):`."""
_CRON_RE = LazyPattern(r"^\s*(?:@(?:reboot|yearly|annually|monthly|weekly|daily|hourly)\s+"
                      r"|(?:[\d*][\d*/,-]*\s+){5})\S")
"""`*/5 * * * * /path/check.sh`: a crontab entry shown for the user to add, not a command."""
_LOOP_WORDS = frozenset({"do", "done", "continue", "break"})
_PREFIX_WORDS = frozenset({"then", "else", "do", "!", "if", "elif", "while", "until", "time"})
_LOOP_KEYWORDS = frozenset({"while", "until", "for", "select"})
_LOOP_SCAN_WORD_RE = re.compile(
    "|".join(sorted(map(re.escape, _LOOP_WORDS | _PREFIX_WORDS | _LOOP_KEYWORDS))))
"""Any word `_scan_loop_words` acts on, anywhere in a line: a line holding none changes
nothing in the scan."""
_FUNCTION_RE = re.compile(r"^\s*(?:function\s+[\w:.-]+|[\w:.-]+\s*\(\s*\))")


def _code_start(line: BashLine) -> int | None:
    """Column of the line's first character when it is unquoted code, else None."""
    stripped = line.text.lstrip()
    if not stripped:
        return None
    col = len(line.text) - len(stripped)
    return col if line.classes[col] == CODE else None


def _placeholder(line: BashLine) -> str | None:
    """A `{name}`, `<name>` or `[OPTIONS]` template token bash would not read as meant.

    Each pattern is tried only on a line holding the brackets it needs: most lines of a
    script hold none, and this runs on every code line of every block."""
    text = line.text
    if "{" in text and "}" in text:
        in_message: bool | None = None
        for m in _BRACE_RE.finditer(text):
            cls = line.classes[m.start()]
            if cls == DQ and in_message is None:
                in_message = bool(_ECHO_RE.match(text))
            if cls == CODE or (cls == DQ and not in_message):
                return m.group(0)
    if "[" in text and "]" in text and "[[" not in text and "=~" not in text:
        for m in _OPTION_RE.finditer(text):
            if line.classes[m.start()] == CODE:
                return m.group(0)
    if "<" in text and ">" in text:
        for m in _ANGLE_RE.finditer(text):
            if line.classes[m.start()] == CODE:
                return m.group(0)
        for m in _PROSE_ANGLE_RE.finditer(text):
            if line.classes[m.start()] == CODE:
                return m.group(0)
    return None


def _path_only(line: BashLine, start: int) -> bool:
    """True when the line's code is one path or glob (a trailing comment allowed).

    A comment runs to the end of its line (`lex_bash` classes the rest of the line once it
    opens), so the code is the text before it, cut rather than filtered a character at a
    time."""
    if has_any(line.text, _TREE_GLYPHS):
        return True
    comment = line.classes.find(COMMENT, start)
    code = (line.text[start:comment] if comment >= 0 else line.text[start:]).strip()
    return bool(
        code and not code.startswith("-") and "=" not in code and _PATH_TOKEN_RE.match(code))


_CLASS_RUNS = re.compile(f"{CODE}+|[^{CODE}]+")
_SEGMENT_RE = re.compile(r"[;&|(){}]")


def _code_only(line: BashLine) -> str:
    """The line with everything but unquoted code blanked out."""
    classes = line.classes
    if CODE not in classes:
        return " " * len(classes)
    if not classes.strip(CODE):  # all code (no quotes, no comment): the line itself
        return line.text
    return "".join(line.text[m.start():m.end()] if classes[m.start()] == CODE
                   else " " * (m.end() - m.start()) for m in _CLASS_RUNS.finditer(classes))


def _loose_loop_word(lines: Sequence[BashLine]) -> tuple[int, str] | None:
    """(line, word) of a `continue`/`break` run outside any loop, the body of one shown alone.

    A loop opens at its keyword (`while`, `until`, `for`, `select`), not at its `do`: a header
    mistyped as `while [ … ]; then` still opens one, so its `break` is a real script's, and
    the syntax error is reported rather than the block skipped as a fragment. A `do` with no
    header before it (a loop body shown from its `do`) opens one too. Blocks defining
    functions are left alone (a function's `continue` acts on its caller's loop, and SC2104
    there is a real finding).
    """
    if not any(_has_loop_exit(line) for line in lines):
        return None  # the only words it reports: most blocks need no scan
    return _scan_loop_words(lines)


def _has_loop_exit(line: BashLine) -> bool:
    """A `continue` or `break` word in the line's code, as `_scan_loop_words` splits it."""
    if "continue" not in line.text and "break" not in line.text:
        return False
    return any(word in ("continue", "break") for segment in _SEGMENT_RE.split(_code_only(line))
               for word in segment.split())


def _scan_loop_words(lines: Sequence[BashLine]) -> tuple[int, str] | None:
    # A line's code is worked out only where the raw text can match: blanking quotes and
    # comments adds no character, so a pattern that finds nothing in the text finds nothing
    # in its code (a function needs `(` or `function`, the scan one of its words).
    for line in lines:
        text = line.text
        if ("(" in text or "function" in text) and _FUNCTION_RE.match(_code_only(line)):
            return None
    depth = 0
    headers = 0  # loop keywords still waiting for their `do`
    for no, line in enumerate(lines):
        if not _LOOP_SCAN_WORD_RE.search(line.text):
            continue  # no segment of it starts with a word the scan reads
        code = _code_only(line)
        if not _LOOP_SCAN_WORD_RE.search(code):
            continue
        for segment in _SEGMENT_RE.split(code):
            words = segment.split()
            while words and words[0] in _PREFIX_WORDS and words[0] not in _LOOP_WORDS:
                if words.pop(0) in _LOOP_KEYWORDS:
                    depth += 1
                    headers += 1
                    words = []
            if words and words[0] in _LOOP_KEYWORDS:
                depth += 1
                headers += 1
                continue
            while words and words[0] in _LOOP_WORDS:
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


def classify_lines(lines: Sequence[BashLine]) -> BlockClass:
    """Classify a lexed block; see `classify`."""
    code_lines = [(no, line, col) for no, line in enumerate(lines)
                  if (col := _code_start(line)) is not None]
    if not any(line.text.strip() for line in lines):
        return BlockClass(EMPTY)
    first = next((line.text.strip() for line in lines if line.text.strip()), "")
    for no, line in enumerate(lines):
        if COMMENT in line.classes and _MARKER_RE.search(line.text[line.classes.index(COMMENT):]):
            return BlockClass(PSEUDO_CODE, no, "a `# Pseudo-code` comment")
    if _EXAMPLE_RE.match(first):
        no = next(i for i, line in enumerate(lines) if line.text.strip())
        return BlockClass(PSEUDO_CODE, no, f"the block opens with `{first[:40]}`")
    # Each pattern below is tried only where the characters it must match are (`(` for a
    # call, a final `:` for Python, the characters a keyword, prompt, output or prose line
    # can start with): the passes run on every code line of every block, and the first
    # evidence found in this order is the one reported.
    # (no, line, the code from its first character, the same without trailing blanks)
    codes = [(no, line, rest, rest.rstrip())
             for no, line, col in code_lines for rest in (line.text[col:],)]
    controls: list[int] = []
    for no, _, _, text in codes:
        if "(" in text or "{" in text:
            if _TOOL_CALL_RE.match(text):
                return BlockClass(PSEUDO_CODE, no,
                                  f"a `{text[:12].strip()}` tool call, not shell")
            if "(" in text and _CALL_RE.match(text) and not _FUNCTION_RE.match(text):
                return BlockClass(PSEUDO_CODE, no,
                                  f"a function call with parentheses `{text[:30]}`")
        if text.endswith(":"):
            if _PY_STRONG_RE.match(text):
                return BlockClass(PSEUDO_CODE, no, f"Python-like `{text[:40]}`")
            if _PY_CONTROL_RE.match(text) and not re.search(r"\b(?:then|do)\b", text):
                controls.append(no)
    if len(controls) >= 2:
        text = lines[controls[0]].text.strip()
        return BlockClass(PSEUDO_CODE, controls[0], f"Python-like `{text[:40]}`")
    for no, line, _, text in codes:
        if text[:1] in _PSEUDO_KEYWORD_FIRST and _PSEUDO_KEYWORD_RE.match(text) \
                and not re.search(r";\s*(?:then|do)\b", text):
            return BlockClass(PSEUDO_CODE, no, f"the upper-case keyword line `{text[:40]}`")
        if has_any(text, _ARROWS) and not _ECHO_RE.match(text) and any(
                ch in _ARROWS and cls == CODE
                for ch, cls in zip(line.text, line.classes, strict=True)):
            return BlockClass(PSEUDO_CODE, no, f"an arrow outside quotes in `{text[:40]}`")
    for no, _, rest, _ in codes:
        if (rest[0] in "$(" or "@" in rest or ">" in rest or "=#" in rest) \
                and _PROMPT_RE.match(rest):
            return BlockClass(TRANSCRIPT, no, f"a shell prompt `{rest[:30]}`")
        if rest.startswith("!") and _BANG_MODE_RE.match(rest):
            return BlockClass(TRANSCRIPT, no, f"a Claude Code `!` bash-mode line `{rest[:30]}`")
        if rest[:1].isupper() and _HTTP_RE.match(rest):
            return BlockClass(TRANSCRIPT, no, f"an HTTP request `{rest[:30]}`")
    for no, line, _, text in codes:
        if text.startswith("/") and _SLASH_USAGE_RE.match(text):
            return BlockClass(TEMPLATE, no, f"slash-command usage `{text[:40]}`")
        if text in _ELLIPSIS_LINES:
            return BlockClass(TEMPLATE, no, f"an elision `{text}`")
        if text.startswith("[") and (_BRACKET_FILL_RE.match(text)
                                     or _LEADING_FILL_RE.match(text)):
            return BlockClass(TEMPLATE, no, f"the fill-in `{text[:40]}`")
        token = _placeholder(line)
        if token:
            return BlockClass(TEMPLATE, no, f"the placeholder `{token}`")
    if len(code_lines) > 1 and all(line.text[col:].startswith("-") and COMMENT in line.classes
                                   for _, line, col in code_lines):
        return BlockClass(TEMPLATE, code_lines[0][0], "a list of options with comments")
    if code_lines and all(_path_only(line, col) for _, line, col in code_lines) and (
            len(code_lines) > 1 or any(ch in line.text for _, line, _ in code_lines
                                       for ch in "*?├└│")):
        # One bare path alone is more likely a script being run (`./test.sh`) than a list.
        return BlockClass(PATH_LIST, code_lines[0][0], "only paths or globs, no command")
    for no, _, _, text in codes:
        c = text[:1]
        if (c in _OUTPUT_FIRST or c.isdigit()) and (c in _OUTPUT_GLYPHS
                                                     or _OUTPUT_LINE_RE.match(text)):
            return BlockClass(TRANSCRIPT, no, f"printed output `{text[:40]}`")
    for no, _, _, text in codes:
        c = text[:1]
        if (c in "-*+" or c.isdigit() or "A" <= c <= "Z") and _PROSE_RE.match(text) \
                and "=" not in text.split(":", 1)[0]:
            return BlockClass(PSEUDO_CODE, no, f"markdown prose `{text[:40]}`")
    loose = _loose_loop_word(lines)
    if loose is not None:
        return BlockClass(FRAGMENT, loose[0],
                          f"`{loose[1]}` outside any loop: the body of a loop shown alone")
    return BlockClass(SCRIPT)


_LISTED_PATH_RE = LazyPattern(r"[\w.~*?{},\[\]@+/-]+")


def path_list_line(text: str) -> bool:
    """A line of a real script that only lists paths or globs (`CLAUDE.md .claude/**/*.md`
    under `# Scan patterns`): a description, not a command."""
    words = text.split("#", 1)[0].split()
    if not words or not all(_LISTED_PATH_RE.fullmatch(w) and ("/" in w or "." in w)
                            for w in words):
        return False
    return len(words) > 1 or any(ch in words[0] for ch in "*?{")  # one script path is a run


def cron_line(text: str) -> bool:
    """A crontab entry (`*/5 * * * * cmd`, `@daily cmd`) inside a script's instructions."""
    return _CRON_RE.match(text) is not None


@lru_cache(maxsize=1024)
def lexed(content: str) -> tuple[BashLine, ...]:
    """`lex_bash`, remembered by content: the BTN32x rules and `classify` read the same
    blocks."""
    return tuple(lex_bash(content))


@lru_cache(maxsize=1024)
def classify(content: str) -> BlockClass:
    """Is this ```bash block a script, or a template, pseudo-code, transcript, path list or
    loop fragment?

    Conservative by design: a block is a non-script only on positive evidence bash itself
    would choke on (a `$ ` prompt, `def f():`, `Task {`, `IF on main →`, `{placeholder}` or
    `<file>` in unquoted code, a `/slash-command` usage line, an `...` line, printed output
    such as `✓ passes (2 ms)`, `PASS src/a.test.ts` or a `---|---` table rule, an HTTP request
    line `GET /users?x=1`, markdown prose (`- Scan the root`, `Use Context7 to research:`),
    a `<fill in these words>` placeholder, a `continue` outside any loop) or an explicit
    `# Pseudo-code` / leading `# Example` comment. Quoted text, comments and here-documents
    never count, so a real script that prints usage text stays a script.
    """
    return classify_lines(lexed(content))

"""The `export KEY="value"` lines of a workflow state file, read as bash would assign them.

The seeds' `append_workflow_state` appends `echo "export ${key}=\"${value}\""` to the state
file: a double-quoted word whose value was expanded when it was appended. Baton rewrites the
file at each transition and carries such lines over, so it reads them as bash does — double
quotes (where a backslash escapes only `$`, `` ` ``, `"`, `\\` and a newline), single quotes,
bare text and their concatenation (`"a"b'c'`), across lines — but never runs anything: a
`$NAME` or `$(…)` still in the text is kept as text. A line that is more than one assignment
(`export A="x"; rm -rf ~`) or whose quote never closes is not an assignment Baton carries.
"""

from __future__ import annotations

import re

_EXPORT_RE = re.compile(r"[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=")
_DQ_ESCAPED = frozenset('$`"\\\n')
_WORD_END = frozenset(" \t\n;&|<>()")


def read_exports(text: str) -> dict[str, str]:
    """Every plain `[export] KEY=word` assignment of `text`, in order, the last one of a key
    winning (as when sourced); other lines are skipped."""
    out: dict[str, str] = {}
    pos, end = 0, len(text)
    while pos < end:
        m = _EXPORT_RE.match(text, pos)
        if m is None:
            pos = _next_line(text, pos)
            continue
        word = _word(text, m.end())
        if word is None:  # a quote that never closes: nothing after it can be read
            break
        value, after = word
        stop = _next_line(text, after)
        rest = text[after:stop].strip()
        if not rest or rest.startswith("#"):
            out.pop(m.group(1), None)
            out[m.group(1)] = value
        pos = stop
    return out


def _next_line(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl < 0 else nl + 1


def _word(text: str, pos: int) -> tuple[str, int] | None:
    """The value of the shell word starting at `pos` and where it ends; None when a quote
    is left open."""
    out: list[str] = []
    i, end = pos, len(text)
    while i < end and text[i] not in _WORD_END:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < end and text[i] != '"':
                if text[i] == "\\" and i + 1 < end and text[i + 1] in _DQ_ESCAPED:
                    if text[i + 1] != "\n":  # backslash-newline is a line continuation
                        out.append(text[i + 1])
                    i += 2
                    continue
                out.append(text[i])
                i += 1
            if i >= end:
                return None
            i += 1
        elif ch == "'":
            close = text.find("'", i + 1)
            if close < 0:
                return None
            out.append(text[i + 1:close])
            i = close + 1
        elif ch == "\\" and i + 1 < end:
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out), i

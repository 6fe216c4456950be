"""Where markdown-it puts fenced code, without markdown-it: BTN003's confirmation.

`rendered_fence_lines` needs the lines CommonMark renders inside fences, list items
included. markdown-it answers that, but importing it and running its block parser was most
of BTN003's time on a tree with many nested fences. `fence_lines` is markdown-it's own block
tokenizer (its `commonmark` preset: the code, fence, hr, list, heading, lheading and
paragraph rules, in its order and with its terminators) cut down to the fences' line spans,
for documents in which the rules it leaves out (block quotes, HTML blocks, link reference
definitions) cannot start and which have no tabs; for any other it answers None and the
caller asks markdown-it. `tests/parse/test_fence_lines.py` holds it to markdown-it on
generated and real documents.
"""

from __future__ import annotations

import re

from ..lazy_pattern import LazyPattern

_MAX_DEPTH = 8
"""Nested lists deeper than this are left to markdown-it (it stops nesting at 10)."""

_NOT_COVERED = re.compile(r"^ *(?:(?:[-*+]|[0-9]{1,9}[.)]) +)*[<>]", re.M)
"""A line whose first character past indentation and list markers could open an HTML block
or a block quote."""
_REFERENCE = LazyPattern(r"^ *(?:(?:[-*+]|[0-9]{1,9}[.)]) +)*\[", re.M)
"""A line that could open a link reference definition: looked for only in a document
holding a `]:`, which few do."""


_LIST_STARTS = frozenset("*-+0123456789")
_OPENERS = frozenset("`~*-_+#0123456789")
"""The first characters of a fence, thematic break, list item or heading: a paragraph line
starting with another cannot end the paragraph."""


class _Fallback(Exception):
    """The document needs a rule `fence_lines` leaves out."""


def fence_lines(lines: list[str]) -> set[int] | None:
    """Line numbers inside fenced code blocks as markdown-it's CommonMark parser renders
    `lines` joined by newlines, or None when markdown-it has to be asked."""
    text = "\n".join(lines)
    if ("\t" in text or "\r" in text or _NOT_COVERED.search(text) is not None
            or ("]:" in text and _REFERENCE.search(text) is not None)):
        return None
    blocks = _Blocks(lines)
    try:
        blocks.tokenize(0, blocks.line_max)
    except _Fallback:
        return None
    return blocks.inside


class _Blocks:
    """markdown-it's `StateBlock` and block rules for tab-free text: a line's column is its
    offset, so `sCount` and `tShift` are one list (`ind`), and `bMarks` are all 0."""

    def __init__(self, lines: list[str]) -> None:
        n = len(lines)
        if n and not lines[-1].strip(" "):
            n -= 1  # markdown-it does not count a last line of nothing but spaces
        self.lines = [*lines[:n], ""]
        self.line_max = n
        self.ind = [len(t) - len(t.lstrip(" ")) for t in self.lines]
        self.blk = 0
        self.list_indent = -1
        self.parent = "root"
        self.line = 0
        self.depth = 0
        self.inside: set[int] = set()

    def _ch(self, line: int, pos: int) -> str:
        text = self.lines[line]
        return text[pos] if pos < len(text) else "\n"

    def _empty(self, line: int) -> bool:
        return self.ind[line] >= len(self.lines[line])

    def _code(self, line: int) -> bool:
        return self.ind[line] - self.blk >= 4

    def _skip_spaces(self, line: int, pos: int) -> int:
        text = self.lines[line]
        while pos < len(text) and text[pos] == " ":
            pos += 1
        return pos

    def _skip_chars(self, line: int, pos: int, ch: str) -> int:
        text = self.lines[line]
        while pos < len(text) and text[pos] == ch:
            pos += 1
        return pos

    def tokenize(self, line: int, end: int) -> None:
        while line < end:
            while line < self.line_max and self._empty(line):
                line += 1
            self.line = line
            if line >= end:
                break
            if self.ind[line] < self.blk:
                break
            # markdown-it's rules in its order, each tried only on a line starting with a
            # character it can start with (the rest it would refuse on that character).
            ch = self._ch(line, self.ind[line])
            if not ((self._code(line) and self._code_block(line, end))
                    or (ch in "`~" and self._fence(line, end, False))
                    or (ch in "*-_" and self._hr(line, False))
                    or (ch in _LIST_STARTS and self._list(line, end, False))
                    or (ch == "#" and self._heading(line, False))
                    or self._lheading(line, end)):
                self._paragraph(line)
            line = self.line
            if line < end and self._empty(line):
                line += 1
                self.line = line

    def _code_block(self, line: int, end: int) -> bool:
        if not self._code(line):
            return False
        last = nxt = line + 1
        while nxt < end:
            if self._empty(nxt):
                nxt += 1
                continue
            if self._code(nxt):
                nxt += 1
                last = nxt
                continue
            break
        self.line = last
        return True

    def _fence(self, start: int, end: int, silent: bool) -> bool:
        text = self.lines[start]
        pos, maximum = self.ind[start], len(text)
        if self._code(start) or pos + 3 > maximum:
            return False
        marker = text[pos]
        if marker not in "~`":
            return False
        mem = pos
        pos = self._skip_chars(start, pos, marker)
        length = pos - mem
        if length < 3 or (marker == "`" and "`" in text[pos:]):
            return False
        if silent:
            return True
        nxt = start
        closed = False
        while True:
            nxt += 1
            if nxt >= end:
                break
            pos = mem = self.ind[nxt]
            maximum = len(self.lines[nxt])
            if pos < maximum and self.ind[nxt] < self.blk:
                break
            if self._ch(nxt, pos) != marker or self._code(nxt):
                continue
            pos = self._skip_chars(nxt, pos, marker)
            if pos - mem < length:
                continue
            if self._skip_spaces(nxt, pos) < maximum:
                continue
            closed = True
            break
        self.line = nxt + (1 if closed else 0)
        self.inside.update(range(start, self.line))
        return True

    def _hr(self, line: int, silent: bool) -> bool:
        if self._code(line):
            return False
        text = self.lines[line]
        pos = self.ind[line]
        marker = self._ch(line, pos)
        if marker not in "*-_" or marker == "\n":
            return False
        count = 1
        for ch in text[pos + 1:]:
            if ch != marker and ch != " ":
                return False
            if ch == marker:
                count += 1
        if count < 3:
            return False
        if not silent:
            self.line = line + 1
        return True

    def _heading(self, line: int, silent: bool) -> bool:
        if self._code(line):
            return False
        text = self.lines[line]
        pos, maximum = self.ind[line], len(text)
        if pos >= maximum or text[pos] != "#":
            return False
        level = 1
        pos += 1
        while pos < maximum and text[pos] == "#" and level <= 6:
            level += 1
            pos += 1
        if level > 6 or (pos < maximum and text[pos] != " "):
            return False
        if not silent:
            self.line = line + 1
        return True

    def _terminates_paragraph(self, line: int, end: int) -> bool:
        # Each of the four rules first reads the character at the line's indentation: a
        # line starting with none of theirs (most prose) is not tried.
        if self._ch(line, self.ind[line]) not in _OPENERS:
            return False
        return (self._fence(line, end, True) or self._hr(line, True)
                or self._list(line, end, True) or self._heading(line, True))

    def _lheading(self, start: int, end: int) -> bool:
        if self._code(start):
            return False
        old_parent, self.parent = self.parent, "paragraph"
        level = 0
        nxt = start + 1
        while nxt < end and not self._empty(nxt):
            if self.ind[nxt] - self.blk > 3:
                nxt += 1
                continue
            if self.ind[nxt] >= self.blk:
                pos = self.ind[nxt]
                text = self.lines[nxt]
                if pos < len(text) and text[pos] in "-=":
                    pos = self._skip_spaces(nxt, self._skip_chars(nxt, pos, text[pos]))
                    if pos >= len(text):
                        level = 1
                        break
            if self._terminates_paragraph(nxt, end):
                break
            nxt += 1
        self.parent = old_parent
        if not level:
            return False
        self.line = nxt + 1
        return True

    def _paragraph(self, start: int) -> None:
        old_parent, self.parent = self.parent, "paragraph"
        nxt = start + 1
        end = self.line_max
        while nxt < end:
            if self._empty(nxt):
                break
            if self.ind[nxt] - self.blk > 3:
                nxt += 1
                continue
            if self._terminates_paragraph(nxt, end):
                break
            nxt += 1
        self.line = nxt
        self.parent = old_parent

    def _bullet(self, line: int) -> int:
        text = self.lines[line]
        pos = self.ind[line]
        if pos >= len(text) or text[pos] not in "*-+":
            return -1
        pos += 1
        if pos < len(text) and text[pos] != " ":
            return -1
        return pos

    def _ordered(self, line: int) -> int:
        text = self.lines[line]
        start = pos = self.ind[line]
        maximum = len(text)
        if pos + 1 >= maximum:
            return -1
        if not "0" <= text[pos] <= "9":
            return -1
        pos += 1
        while True:
            if pos >= maximum:
                return -1
            ch = text[pos]
            pos += 1
            if "0" <= ch <= "9":
                if pos - start >= 10:
                    return -1
                continue
            if ch in ").":
                break
            return -1
        if pos < maximum and text[pos] != " ":
            return -1
        return pos

    def _list(self, start_line: int, end: int, silent: bool) -> bool:
        if self._code(start_line):
            return False
        if (self.list_indent >= 0 and self.ind[start_line] - self.list_indent >= 4
                and self.ind[start_line] < self.blk):
            return False
        terminating = (silent and self.parent == "paragraph"
                       and self.ind[start_line] >= self.blk)
        after = self._ordered(start_line)
        if after >= 0:
            ordered = True
            first = self.ind[start_line]
            if terminating and int(self.lines[start_line][first:after - 1]) != 1:
                return False
        else:
            after = self._bullet(start_line)
            if after < 0:
                return False
            ordered = False
        if terminating and self._skip_spaces(start_line, after) >= len(self.lines[start_line]):
            return False
        marker = self.lines[start_line][after - 1]
        if silent:
            return True
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise _Fallback
        nxt = start_line
        old_parent, self.parent = self.parent, "list"
        while nxt < end:
            text = self.lines[nxt]
            maximum = len(text)
            initial = self.ind[nxt] + after - self.ind[start_line]
            content = self._skip_spaces(nxt, after)
            offset = initial + content - after
            indent_after = 1 if content >= maximum else offset - initial
            if indent_after > 4:
                indent_after = 1
            indent = initial + indent_after
            old_ind = self.ind[start_line]
            old_list_indent = self.list_indent
            self.list_indent = self.blk
            self.blk = indent
            self.ind[start_line] = content
            if content >= maximum and self._empty(start_line + 1):
                self.line = min(self.line + 2, end)
            else:
                self.tokenize(start_line, end)
            self.blk = self.list_indent
            self.list_indent = old_list_indent
            self.ind[start_line] = old_ind
            nxt = start_line = self.line
            if nxt >= end:
                break
            if self.ind[nxt] < self.blk or self._code(start_line):
                break
            if self._fence(nxt, end, True) or self._hr(nxt, True):
                break
            after = self._ordered(nxt) if ordered else self._bullet(nxt)
            if after < 0 or marker != self.lines[nxt][after - 1]:
                break
        self.line = nxt
        self.parent = old_parent
        self.depth -= 1
        return True

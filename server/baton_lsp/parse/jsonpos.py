"""Where each value of a JSON document is: `json.loads` gives values, not positions, and a
schema error is only useful in an editor when it points at the offending key or value.

`locate(text)` walks the text once and maps every path (`("state_machine",
"current_state")`, `("steps", 0)`) to the offsets of its key and value. It is tolerant: on a
syntax error it returns what it found so far. Depth is capped so hostile nesting cannot
exhaust the stack.
"""

from __future__ import annotations

import contextlib
import json
import re
from bisect import bisect_right
from typing import NamedTuple

from ..model.base import Range

Path = tuple[str | int, ...]
MAX_DEPTH = 200
_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


class Span(NamedTuple):
    """Where a value (and its key, in an object) sits; a named tuple, not a dataclass, whose
    methods would be compiled at import."""

    key_start: int | None
    key_end: int | None
    start: int
    end: int


class _Stop(Exception):
    pass


class _Walker:
    def __init__(self, text: str) -> None:
        self.text = text
        self.out: dict[Path, Span] = {}

    def ws(self, i: int) -> int:
        m = _WS.match(self.text, i)
        return m.end() if m else i

    def value(self, i: int, path: Path, key: tuple[int, int] | None, depth: int) -> int:
        if depth > MAX_DEPTH:
            raise _Stop
        i = self.ws(i)
        if i >= len(self.text):
            raise _Stop
        ch = self.text[i]
        start = i
        if ch == "{":
            i = self.ws(i + 1)
            if i < len(self.text) and self.text[i] == "}":
                i += 1
            else:
                while True:
                    i = self.ws(i)
                    m = _STRING.match(self.text, i)
                    if not m:
                        raise _Stop
                    name = _unquote(m.group(0))
                    i = self.ws(m.end())
                    if i >= len(self.text) or self.text[i] != ":":
                        raise _Stop
                    i = self.value(i + 1, (*path, name), (m.start(), m.end()), depth + 1)
                    i = self.ws(i)
                    if i < len(self.text) and self.text[i] == ",":
                        i += 1
                        continue
                    if i < len(self.text) and self.text[i] == "}":
                        i += 1
                        break
                    raise _Stop
        elif ch == "[":
            i = self.ws(i + 1)
            if i < len(self.text) and self.text[i] == "]":
                i += 1
            else:
                n = 0
                while True:
                    i = self.value(i, (*path, n), None, depth + 1)
                    n += 1
                    i = self.ws(i)
                    if i < len(self.text) and self.text[i] == ",":
                        i += 1
                        continue
                    if i < len(self.text) and self.text[i] == "]":
                        i += 1
                        break
                    raise _Stop
        elif ch == '"':
            m = _STRING.match(self.text, i)
            if not m:
                raise _Stop
            i = m.end()
        else:
            m = _SCALAR.match(self.text, i)
            if not m:
                raise _Stop
            i = m.end()
        self.out[path] = Span(key[0] if key else None, key[1] if key else None, start, i)
        return i


def _unquote(token: str) -> str:
    try:
        value = json.loads(token)
    except ValueError:
        return token[1:-1]
    return value if isinstance(value, str) else token[1:-1]


def locate(text: str) -> dict[Path, Span]:
    """Every path of the document → its span (partial on a syntax error)."""
    walker = _Walker(text)
    with contextlib.suppress(_Stop, RecursionError):
        walker.value(0, (), None, 0)
    return walker.out


class Positions:
    """Offsets → `Range`s for one text, plus `locate`'s map."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        at = text.find("\n")
        while at >= 0:  # one step per line, not per character (a registry is large)
            self.starts.append(at + 1)
            at = text.find("\n", at + 1)
        self.spans = locate(text)

    def point(self, offset: int) -> tuple[int, int]:
        line = bisect_right(self.starts, offset) - 1
        return line, offset - self.starts[line]

    def range(self, start: int, end: int) -> Range:
        a, b = self.point(start), self.point(end)
        return Range.span(a[0], a[1], b[0], b[1])

    def value_range(self, path: Path) -> Range | None:
        span = self.spans.get(path)
        return self.range(span.start, span.end) if span else None

    def key_range(self, path: Path) -> Range | None:
        span = self.spans.get(path)
        if span is None:
            return None
        if span.key_start is None or span.key_end is None:
            return self.range(span.start, span.end)
        return self.range(span.key_start, span.key_end)

    def path_at(self, offset: int) -> tuple[Path, bool] | None:
        """The innermost path whose key or scalar value contains `offset`, and whether the
        offset is on the key."""
        best: tuple[Path, bool] | None = None
        best_len = -1
        for path, span in self.spans.items():
            if span.key_start is not None and span.key_end is not None and \
                    span.key_start <= offset <= span.key_end and len(path) > best_len:
                best, best_len = (path, True), len(path)
            elif span.start <= offset <= span.end and self.text[span.start] not in "{[" and \
                    len(path) > best_len:
                best, best_len = (path, False), len(path)
        return best

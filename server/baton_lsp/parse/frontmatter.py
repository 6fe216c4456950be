"""A safe YAML front matter loader that keeps source positions.

PyYAML's event stream is walked iteratively instead of composing nodes, so we can refuse
aliases (no alias bombs), cap nesting depth and event count (no recursion blow-ups) and
record where every top-level key and list element sits. The limits are ours, not the YAML
library's: libyaml builds differ in what they refuse (PyYAML 6.0.4's libyaml stops deep flow
nesting with a scanner error), so every syntax error from the C parser is re-read by the
pure-Python parser, whose event stream is iterative, before it is called a syntax error.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import yaml

from ..lazy_pattern import LazyPattern
from ..model.base import Range
from ..model.common import Frontmatter, FrontmatterEntry, ListItem
from .text import has_any

_T = TypeVar("_T")

MAX_EVENTS = 20_000
MAX_DEPTH = 40
MAX_CHARS = 256 * 1024

PURE_LOADER: Any = yaml.SafeLoader
LOADER: Any = getattr(yaml, "CSafeLoader", PURE_LOADER)
"""The parser used first: libyaml's when this PyYAML build has it (much faster)."""

DEPTH_MESSAGE = f"front matter nests deeper than {MAX_DEPTH} levels"

_INT_RE = re.compile(r"^[-+]?\d+$")
_YAML_BREAKS = "\x85\u2028\u2029"
"""What YAML reads as line breaks besides `\n` and `\r` (tested with `has_any`)."""
_BLANK_BREAKS = str.maketrans("\r\x85\u2028\u2029", "    ")
_NULLS = {"", "~", "null", "Null", "NULL"}
_TRUE = {"true", "True", "TRUE"}
_FALSE = {"false", "False", "FALSE"}


class _FrontmatterError(Exception):
    def __init__(self, message: str, line: int, col: int, syntax: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.col = col
        self.syntax = syntax


class YAMLLimitError(yaml.YAMLError):
    """YAML refused for its shape (nesting, size, aliases) rather than its syntax."""

    def __init__(self, message: str, line: int = 0, col: int = 0) -> None:
        super().__init__(message)
        self.line = line
        self.col = col


def _where(event: yaml.Event) -> tuple[int, int]:
    """(line, column) where `event` starts; PyYAML's parser always sets the mark."""
    mark = event.start_mark
    return (mark.line, mark.column) if mark is not None else (0, 0)


def _events(text: str, loader: Any) -> Iterator[yaml.Event]:
    """PyYAML events with our limits applied as they stream (never a composed tree)."""
    depth = 0
    for count, event in enumerate(yaml.parse(text, Loader=loader), 1):
        if count > MAX_EVENTS:
            raise _FrontmatterError("front matter is too large to read safely", 0, 0)
        if isinstance(event, yaml.AliasEvent):
            raise _FrontmatterError(
                "YAML aliases (*name) are not allowed in front matter: they can expand "
                "exponentially",
                *_where(event),
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if depth >= MAX_DEPTH:
                raise _FrontmatterError(DEPTH_MESSAGE, *_where(event))
            depth += 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        yield event


_Recorded = tuple[tuple[yaml.Event, ...], Exception | None]


@functools.lru_cache(maxsize=32)
def _recorded(text: str, loader: object) -> _Recorded:
    """Every event `_events` yields for `text`, and the error that ended the stream.

    One front matter is read several times within a few files of each other (its parse,
    the Claude Code retry, `check_limits` and `claude_code_error` from the rules), and a
    block libyaml refuses is each time re-read by the slow pure-Python parser; both parsers
    are deterministic, so the stream is recorded once and replayed. A RecursionError
    depends on the caller's stack depth, so it is raised, never recorded.
    """
    events: list[yaml.Event] = []
    try:
        for event in _events(text, loader):
            events.append(event)
    except (yaml.YAMLError, _FrontmatterError) as exc:
        return tuple(events), exc
    return tuple(events), None


def _replay(text: str, loader: object) -> Iterator[yaml.Event]:
    """`_events(text, loader)` from the record: the same events, then the same error."""
    events, error = _recorded(text, loader)
    yield from events
    if error is not None:
        raise error.with_traceback(None)


def _syntax_error(exc: yaml.YAMLError) -> _FrontmatterError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line, mark.column) if mark else (0, 0)
        problem = exc.problem or "invalid YAML"
        return _FrontmatterError(f"front matter is not valid YAML: {problem}", line, col,
                                 syntax=True)
    return _FrontmatterError(f"front matter is not valid YAML: {exc}", 0, 0, syntax=True)


def _read(text: str, walk: Callable[[Iterator[yaml.Event]], _T]) -> _T:
    """Run `walk` over the events of `text`, first with LOADER, then with the pure parser.

    A syntax error from libyaml may be its own nesting limit rather than a real syntax
    error; the pure-Python parser streams events without recursion, so our depth limit
    decides. RecursionError anywhere is reported as too deep, never raised.
    """
    loaders = [LOADER] if LOADER is PURE_LOADER else [LOADER, PURE_LOADER]
    first: _FrontmatterError | None = None
    for loader in loaders:
        try:
            return walk(_replay(text, loader))
        except yaml.YAMLError as exc:
            first = first or _syntax_error(exc)
        except RecursionError:
            raise _FrontmatterError(DEPTH_MESSAGE, 0, 0) from None
    assert first is not None
    raise first


def _parses(text: str) -> bool:
    """Whether some loader parses `text` to its end; YAMLLimitError when `text` is too deep,
    too large or uses aliases."""
    try:
        _read(text, lambda events: sum(1 for _ in events))
    except _FrontmatterError as exc:
        if not exc.syntax:
            raise YAMLLimitError(str(exc), exc.line, exc.col) from None
        return False
    return True


def check_limits(text: str) -> None:
    """Raise YAMLLimitError when `text` is too deep, too large or uses aliases.

    Syntax errors are not reported here (the caller's own parse reports them).
    """
    _parses(text)


def loads(text: str) -> bool:
    """Whether `safe_load(text)` returns rather than raising a YAMLError.

    For callers that need only the answer: when no loader parses `text`, no `yaml.load`
    can succeed either (a load reads every event to the end of the stream), so the slow
    pure-Python load of a block libyaml refused is not run again just to fail.
    """
    try:
        if not _parses(text):
            return False
        safe_load(text)
    except yaml.YAMLError:
        return False
    return True


def safe_load(text: str) -> Any:
    """`yaml.safe_load` that cannot recurse deeply or expand aliases: limits first. A
    number too long for `int()` (4,300 digits) is a limit too, not a ValueError."""
    check_limits(text)
    try:
        try:
            return yaml.load(text, Loader=LOADER)
        except yaml.YAMLError:
            if LOADER is PURE_LOADER:
                raise
            return yaml.load(text, Loader=PURE_LOADER)
    except ValueError as exc:
        raise YAMLLimitError(f"front matter holds a number too long to read ({exc})") \
            from None


def _scalar(event: yaml.ScalarEvent) -> Any:
    value = event.value
    if event.style:  # quoted or block scalar: always a string
        return value
    if value in _NULLS:
        return None
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    if _INT_RE.match(value) and len(value) < 19:
        return int(value)
    return value


_Composed = list[tuple[str, Any, Range, Range, list[ListItem]]]


def _compose(text: str, line_offset: int) -> _Composed:
    """(key, value, key_range, value_range, items) per top-level key of `text`."""
    return _read(text, lambda events: _compose_events(events, text, line_offset))


def _compose_events(events: Iterator[yaml.Event], text: str, line_offset: int) -> _Composed:
    """Walk events (already limited by `_events`) into top-level entries with positions."""
    out: list[tuple[str, Any, Range, Range, list[ListItem]]] = []
    stack: list[list[Any]] = []  # frames: [container, pending_key, is_mapping]
    top_key: tuple[str, Range] | None = None
    value_start: tuple[int, int] | None = None
    items: list[ListItem] = []

    widths = [len(line) for line in text.split("\n")]
    last_end: Any = None  # end mark of the last scalar or flow collection seen

    def at(mark: Any) -> tuple[int, int]:
        """(line, column) of a mark; one past the last line (an empty value at the very
        end) is moved to the end of the last line, so it stays inside the front matter."""
        if mark.line >= len(widths):
            return len(widths) - 1, widths[-1]
        return mark.line, mark.column

    def end_of(start_line: int, end: Any) -> tuple[int, int]:
        """(line, column) of an end mark, pulled back from the start of the next line.

        Block collections and block scalars end where the next token starts (column 0 of
        a later line): ranges must stop at the end of their own text, or a fix replacing
        the value would also eat the newline or the closing `---`.
        """
        line, col = at(end)
        if col == 0 and line > start_line:
            line -= 1
            col = widths[line] if line < len(widths) else 0
        return line + line_offset, col

    def rng(start: Any, end: Any) -> Range:
        start_line, start_col = at(start)
        end_line, end_col = end_of(start_line, end)
        return Range.span(start_line + line_offset, start_col, end_line, end_col)

    def emit(value: Any, end_mark: Any) -> None:
        nonlocal top_key, value_start, items
        if top_key is None or value_start is None:
            return
        key, key_range = top_key
        vline, vcol = value_start
        value_range = Range.span(vline, vcol, *end_of(vline - line_offset, end_mark))
        out.append((key, value, key_range, value_range, items))
        top_key, value_start, items = None, None, []

    def add(value: Any, start_mark: Any, end_mark: Any) -> None:
        """Attach a finished value to the enclosing container."""
        nonlocal top_key, value_start
        if not stack:
            return
        frame = stack[-1]
        container, pending, is_map = frame
        if is_map:
            if pending is _NO_KEY:
                key = value if isinstance(value, str) else text_slice(start_mark, end_mark)
                frame[1] = key
                if len(stack) == 1:
                    top_key = (str(key), rng(start_mark, end_mark))
            else:
                if len(stack) == 1 and top_key is not None and value_start is None:
                    line, col = at(start_mark)
                    value_start = (line + line_offset, col)
                container[pending] = value
                frame[1] = _NO_KEY
                if len(stack) == 1:
                    emit(value, end_mark)
        else:
            container.append(value)
            if len(stack) == 2 and stack[0][2] and top_key is not None:
                items.append(ListItem(value=value, range=rng(start_mark, end_mark)))

    def text_slice(start_mark: Any, end_mark: Any) -> str:
        return text[start_mark.index : end_mark.index]

    starts: list[Any] = []
    for event in events:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            is_map = isinstance(event, yaml.MappingStartEvent)
            if not stack and not is_map:
                raise _FrontmatterError(
                    "front matter must be a mapping of `key: value` lines, not a list",
                    *_where(event),
                )
            if (len(stack) == 1 and top_key is not None and value_start is None
                    and stack[0][1] is not _NO_KEY):
                line, col = at(event.start_mark)
                value_start = (line + line_offset, col)
            stack.append([{} if is_map else [], _NO_KEY, is_map])
            starts.append((event.start_mark, bool(event.flow_style)))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            frame = stack.pop()
            start_mark, flow = starts.pop()
            # A block collection ends at its last item, not at the next key.
            end_mark = event.end_mark if flow or last_end is None else last_end
            last_end = end_mark
            add(frame[0], start_mark, end_mark)
        elif isinstance(event, yaml.ScalarEvent):
            if not stack:
                if event.value.strip():
                    raise _FrontmatterError(
                        "front matter must be a mapping of `key: value` lines",
                        *_where(event),
                    )
                continue
            last_end = event.end_mark
            add(_scalar(event), event.start_mark, event.end_mark)
    return out


class _NoKey:
    __slots__ = ()


_NO_KEY: Any = _NoKey()


def _comma_items(value: str, value_range: Range) -> list[ListItem]:
    """Split an inline comma list (`Read, Write, Bash(git:*)`) keeping each item's columns."""
    if value_range.start_line != value_range.end_line:
        return []
    items: list[ListItem] = []
    base = value_range.start_char
    depth = 0
    start = 0
    for i, ch in enumerate(value + ","):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            raw = value[start:i]
            stripped = raw.strip()
            if stripped:
                lead = len(raw) - len(raw.lstrip())
                col = base + start + lead
                items.append(
                    ListItem(value=stripped, range=Range.of_line(value_range.start_line, col,
                                                                 col + len(stripped)))
                )
            start = i + 1
    return items


def parse_frontmatter(lines: list[str], end_line: int) -> Frontmatter:
    """Parse the YAML between line 0 (`---`) and `end_line` (the closing `---`)."""
    block = Range.span(0, 0, end_line, len(lines[end_line]) if end_line < len(lines) else 0)
    text = "\n".join(lines[1:end_line])
    if len(text) > MAX_CHARS:
        return Frontmatter(range=block, error="front matter is larger than 256 KiB",
                           error_range=Range.of_line(0, 0, 3))
    if "\r" in text or has_any(text, _YAML_BREAKS):
        # YAML also breaks lines at NEL, LS and PS; the editor does not. Blank them so YAML
        # marks keep counting the same lines we do.
        text = text.translate(_BLANK_BREAKS)
    try:
        composed = _compose(text, 1)
    except _FrontmatterError as exc:
        if exc.syntax:
            retried = _claude_code_compose(text, 1)
            if retried is not None:
                return _entries(lines, block, retried, lenient_reason=str(exc))
            lenient = _lenient(lines, end_line)
            too_deep = _lenient_limit_error(lines, lenient) if lenient is not None else None
            if lenient is not None and too_deep is None:
                firsts, dups = _split_duplicates(lenient)
                return Frontmatter(entries=firsts, range=block, duplicates=dups,
                                   lenient_reason=str(exc))
            exc = too_deep or exc
        line = min(exc.line + 1, max(end_line - 1, 0))
        width = len(lines[line]) if line < len(lines) else 0
        return Frontmatter(range=block, error=str(exc),
                           error_range=Range.of_line(line, min(exc.col, width), width))
    return _entries(lines, block, composed)


def _string_items(lines: list[str], value: str, value_range: Range) -> list[ListItem]:
    """The comma-separated items of a one-line string value, plain or quoted.

    `tools: 'Read, Glob'` and `tools: Read, Glob` are the same YAML string, and Claude Code
    splits a string `tools` value on commas, so both give the same items. Items keep their
    columns when the text between the quotes is the value itself; a quoted value with escapes
    gives items that all point at the whole value.
    """
    if value_range.start_line != value_range.end_line or value_range.start_line >= len(lines):
        return []
    raw = lines[value_range.start_line][value_range.start_char:value_range.end_char]
    if raw == value:
        return _comma_items(value, value_range)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        inner = Range.of_line(value_range.start_line, value_range.start_char + 1,
                              value_range.end_char - 1)
        if raw[1:-1] == value:
            return _comma_items(value, inner)
        return [ListItem(value=item.value, range=value_range)
                for item in _comma_items(value, Range.of_line(0, 0, len(value)))]
    return []


def _entries(lines: list[str], block: Range, composed: _Composed,
             lenient_reason: str | None = None) -> Frontmatter:
    """Front matter from composed top-level entries, string lists split on commas."""
    entries: list[FrontmatterEntry] = []
    for key, value, key_range, value_range, items in composed:
        if not items and isinstance(value, str) and "," in value:
            items = _string_items(lines, value, value_range)
        entry = FrontmatterEntry(
            key=key,
            value=value,
            key_range=key_range,
            value_range=value_range,
            range=Range.span(key_range.start_line, key_range.start_char,
                             value_range.end_line, value_range.end_char),
            items=items,
        )
        entries.append(entry)
    firsts, duplicates = _split_duplicates(entries)
    return Frontmatter(entries=firsts, range=block, duplicates=duplicates,
                       lenient_reason=lenient_reason)


def _claude_code_compose(text: str, line_offset: int) -> _Composed | None:
    """Entries as Claude Code reads a block strict YAML refuses (its quoting retry), with
    ranges mapped back to the original text; None when the retry fails too.

    What Claude Code reads is what its agent gets, so those values are used rather than
    Baton's line-by-line reading, which cannot follow nested mappings.
    """
    retried = claude_code_retry(text)
    try:
        composed = _compose(retried, line_offset)
    except _FrontmatterError:
        return None
    if retried == text:
        return composed
    quoted: dict[int, tuple[int, int, int]] = {}  # file line -> colon end, value span
    tabs: dict[int, int] = {}  # file line -> leading tabs turned into two spaces each
    for i, (old, new) in enumerate(zip(text.split("\n"), retried.split("\n"), strict=True)):
        if old == new:
            continue
        m = _CC_KEY_RE.match(old)
        if m and not old.startswith("\t"):
            try:  # a value too deep for any YAML reader is reported, not read as text
                check_limits(old)
            except YAMLLimitError:
                return None
            quoted[i + line_offset] = (m.end(1) + 1, m.start(2), len(old))
        else:
            tabs[i + line_offset] = len(old) - len(old.lstrip("\t"))

    def col(line: int, c: int) -> int:
        n = tabs.get(line, 0)
        return c // 2 if c < 2 * n else c - n

    def remap(rng: Range) -> Range:
        if rng.start_line == rng.end_line and rng.start_line in quoted:
            colon, start, end = quoted[rng.start_line]
            if rng.start_char >= colon:  # the quoted value, not the key
                return Range.of_line(rng.start_line, start, end)
        return Range.span(rng.start_line, col(rng.start_line, rng.start_char),
                          rng.end_line, col(rng.end_line, rng.end_char))

    return [(key, value, remap(key_range), remap(value_range),
             [ListItem(value=item.value, range=remap(item.range)) for item in items])
            for key, value, key_range, value_range, items in composed]


def _lenient_limit_error(
    lines: list[str], entries: list[FrontmatterEntry]
) -> _FrontmatterError | None:
    """The first lenient entry whose own text is too deep or large for YAML readers.

    A value such as `tools: [[[…` is kept as text by the lenient reader, but every YAML
    reader downstream (ours included) would choke on it, so it is reported as the limit it
    breaks rather than accepted.
    """
    for entry in entries:
        start, end = entry.range.start_line, entry.range.end_line
        try:
            check_limits("\n".join(lines[start:end + 1]))
        except YAMLLimitError as exc:
            return _FrontmatterError(str(exc), start - 1 + exc.line, exc.col)
    return None


def _split_duplicates(
    entries: list[FrontmatterEntry],
) -> tuple[list[FrontmatterEntry], list[FrontmatterEntry]]:
    """First occurrence of each key, and the repeats (both parse paths report them)."""
    firsts: list[FrontmatterEntry] = []
    duplicates: list[FrontmatterEntry] = []
    seen: set[str] = set()
    for entry in entries:
        if entry.key in seen:
            duplicates.append(entry)
        else:
            seen.add(entry.key)
            firsts.append(entry)
    return firsts, duplicates


# `((?:.*[^ \t])?)[ \t]*$` rather than `(.*?)[ \t]*$`: the lazy form is quadratic on long
# inner runs of blanks.
_FLAT_KEY_RE = LazyPattern(
    r"^([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+((?:.*[^ \t])?))?[ \t]*$")
_ITEM_RE = LazyPattern(r"^([ \t]+)-[ \t]+((?:.*[^ \t])?)[ \t]*$")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


_FLOW_ITEM_RE = LazyPattern(r"""[ \t]*("[^"\\]*"|'[^']*'|[^,"'\[\]{}]*?)[ \t]*(?:,|$)""")


def _flow_list(raw: str, value_range: Range) -> list[ListItem] | None:
    """A one-line flow sequence of scalars (`["Bash", 'Read', Grep]`) with each item's
    columns, for the lenient reader; None for anything else (nesting stays text)."""
    if len(raw) < 2 or raw[0] != "[" or raw[-1] != "]" or any(c in raw[1:-1] for c in "[]{}"):
        return None
    inner, base = raw[1:-1], value_range.start_char + 1
    items: list[ListItem] = []
    pos = 0
    while pos < len(inner):
        m = _FLOW_ITEM_RE.match(inner, pos)
        if m is None or m.end() == pos:
            return None
        text = m.group(1)
        if text:
            col = base + m.start(1)
            items.append(ListItem(value=_unquote(text),
                                  range=Range.of_line(value_range.start_line, col,
                                                      col + len(text))))
        pos = m.end()
    return items


def _lenient(lines: list[str], end_line: int) -> list[FrontmatterEntry] | None:
    """Read flat `key: value` lines plus indented `- item` lists; None if that fails too."""
    entries: list[FrontmatterEntry] = []
    current: FrontmatterEntry | None = None
    for i in range(1, end_line):
        line = lines[i]
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _FLAT_KEY_RE.match(line)
        if m:
            raw = m.group(2) or ""
            start = m.start(2) if m.group(2) is not None else len(line)
            value_range = Range.of_line(i, start, start + len(raw))
            value: Any = _unquote(raw) if raw else None
            items = _string_items(lines, value, value_range) if raw and "," in raw else []
            flow = _flow_list(raw, value_range)
            if flow is not None:  # `tools: ["Bash", "Read"]` is a list, not one string
                value, items = [item.value for item in flow], flow
            current = FrontmatterEntry(
                key=m.group(1), value=value, key_range=Range.of_line(i, 0, len(m.group(1))),
                value_range=value_range, range=Range.of_line(i, 0, len(line)), items=items,
            )
            entries.append(current)
            continue
        item = _ITEM_RE.match(line)
        if current is not None and item:
            text = item.group(2)
            col = item.start(2)
            if not isinstance(current.value, list):
                current.value = []
                current.value_range = Range.of_line(i, col, col + len(text))
            current.value.append(_unquote(text))
            current.items.append(ListItem(value=_unquote(text),
                                          range=Range.of_line(i, col, col + len(text))))
            current.value_range = Range.span(current.value_range.start_line,
                                             current.value_range.start_char, i, col + len(text))
            current.range = Range.span(current.range.start_line, 0, i, len(line))
            continue
        if current is not None and line[:1] in " \t" and isinstance(current.value, str):
            current.value = f"{current.value} {line.strip()}"
            continue
        return None
    return entries


_CC_KEY_RE = re.compile(r"^([a-zA-Z_-]+):\s+(\S.*)$")
_CC_SPECIAL_RE = re.compile(r"[{}\[\]*&#!|>%@`]|: ")


def claude_code_retry(text: str) -> str:
    """The block as Claude Code re-reads it after strict YAML fails.

    Claude Code (2.1.x, `pu` in the CLI bundle) wraps every unquoted one-line `key: value`
    whose value holds a YAML indicator (`{}[]*&#!|>%@` + backquote, or `: `) in double
    quotes, keeps real flow lists, turns leading tabs into two spaces, and parses again. So
    the `/agents` generator's `description: … Examples: <example>Context: …` loads fine.
    """
    out: list[str] = []
    for line in text.split("\n"):
        m = _CC_KEY_RE.match(line)
        if m:
            key, value = m.groups()
            if (value[:1] == value[-1:] and value[:1] in "\"'" and len(value) > 1):
                out.append(line)
                continue
            if value.startswith("[") and value.endswith("]"):
                try:
                    if isinstance(safe_load(value), list):
                        out.append(line)
                        continue
                except yaml.YAMLError:
                    pass
            if _CC_SPECIAL_RE.search(value):
                escaped = value.replace("\\", "\\\\").replace('"', '\\"')
                out.append(f'{key}: "{escaped}"')
                continue
        out.append(line)
    return re.sub(r"^\t+", lambda t: "  " * len(t.group(0)), "\n".join(out), flags=re.M)


def claude_code_error(text: str) -> str | None:
    """Why Claude Code cannot read this front matter text at all (strict YAML and its quoting
    retry both fail), or None when it reads it. Claude Code then reads no fields and skips
    the agent (sub-agents docs, "Subagent files Claude Code skips")."""
    if loads(text):
        return None
    try:
        safe_load(claude_code_retry(text))
        return None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return f"{problem} (line {mark.line + 1})" if mark is not None else str(problem)

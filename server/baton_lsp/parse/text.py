"""Turning bytes into text we can trust, and text into lines.

Everything that reads a file goes through `decode` so binary files, invalid UTF-8 and
oversized inputs become one clear `Unreadable` reason instead of an exception deep inside a
parser.
"""

from __future__ import annotations

from typing import NamedTuple

from ..lazy_pattern import LazyPattern

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
"""Files above this size are reported, not parsed: a 10 MB plan is not a plan."""

MAX_INT_DIGITS = 4000
"""Digits a number read from a document may have: `int()` refuses 4,300 and more
(ValueError), so patterns that feed it match at most this many."""

MAX_LINE_CHARS = 200_000
"""Lines longer than this are blanked before parsing so no regex ever sees them."""


class UnreadableError(Exception):
    """The input cannot be treated as text; the message says why, for a user."""


class Source(NamedTuple):
    """Decoded text split into lines (without terminators) for positional parsing.

    A named tuple, not a dataclass: a dataclass compiles its methods at import, which
    every check paid for."""

    text: str
    lines: list[str]
    long_lines: tuple[int, ...] = ()

    @classmethod
    def from_text(cls, text: str, *, decoded: bool = False) -> Source:
        """`decoded`: `text` is what `decode` returned, which holds no lone surrogate (UTF-8
        cannot encode one), so `scrub` would find nothing and is skipped."""
        if not decoded:
            text = scrub(text)
        lines = split_lines(text)
        if max(map(len, lines)) <= MAX_LINE_CHARS:  # the usual case, at C speed
            return cls(text=text, lines=lines)
        long_lines = tuple(i for i, line in enumerate(lines) if len(line) > MAX_LINE_CHARS)
        for i in long_lines:
            lines[i] = ""
        return cls(text=text, lines=lines, long_lines=long_lines)


def scrub(text: str) -> str:
    """`text` with lone surrogates replaced by U+FFFD.

    Editor text arrives as JSON, which can carry `\\udcff`; no file can, and every encoder
    (libyaml, ShellCheck's stdin, log files) raises on one. One code point for one keeps
    every position, in code points and in UTF-16 units alike."""
    if text.isascii():
        return text
    try:
        # Any encoder that fails on a surrogate and nothing else answers; UTF-16 is the
        # cheapest of them on the two-byte strings most non-ASCII files decode to.
        text.encode("utf-16-le")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


_SURROGATES = LazyPattern("[\ud800-\udfff]")


def split_lines(text: str) -> list[str]:
    """Lines the way LSP clients count them: `\n`, `\r\n` and a lone `\r` all end a line.

    Splitting on `\n` alone put every position after a lone `\r` on the wrong line in the
    editor (and markdown-it, which the block scanner mirrors, breaks lines there too).
    """
    global _last_split
    last_text, last_lines = _last_split  # one read: another thread may replace it
    if text is last_text:
        return list(last_lines)
    split = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    lines = split.split("\n")
    _last_split = (text, tuple(lines))
    return lines


_last_split: tuple[str, tuple[str, ...]] = ("", ("",))
"""The text `split_lines` split last and its lines. A check splits each file's text once for
its `Source` and again for each rule context, from the same string object; a copy of a tuple
is much cheaper than splitting again. Each caller gets a list of its own, as
`Source.from_text` blanks long lines in place. Holds one text alive (at most a file's)."""


def has_any(text: str, chars: str) -> bool:
    """True when `text` holds one of `chars`, which must all be non-ASCII: what a search for
    the class `[chars]` answers, without compiling it (a class of scattered non-ASCII
    characters compiles to a big-charset table, a cost paid at import). ASCII text, most
    lines, is answered at once."""
    return not text.isascii() and any(ch in text for ch in chars)


NUL_REASON = "file contains NUL bytes: it looks binary, not text"


def too_large(size: int, max_bytes: int) -> str:
    """Why a file or document of `size` bytes is not parsed (one wording everywhere)."""
    return (f"file is {size / 1_048_576:.1f} MiB, over the {max_bytes / 1_048_576:.1f} MiB "
            "limit for workspace files (max-file-size); it was not parsed")


def text_problem(text: str, max_bytes: int = DEFAULT_MAX_BYTES) -> str | None:
    """Why already-decoded text (a document open in the editor) is not parsed, with the
    same limits `decode` applies to files: its UTF-8 size, NUL bytes."""
    chars = len(text)
    if chars > max_bytes:
        return too_large(len(text.encode("utf-8", "surrogatepass")), max_bytes)
    if chars * 4 > max_bytes:  # only then can the encoded size pass the limit
        size = len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            return too_large(size, max_bytes)
    if "\x00" in text:
        return NUL_REASON
    return None


def decode(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Decode file bytes as UTF-8 text or raise `UnreadableError` naming the problem."""
    if len(data) > max_bytes:
        raise UnreadableError(too_large(len(data), max_bytes))
    if b"\x00" in data:
        raise UnreadableError(NUL_REASON)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UnreadableError(
            f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line})"
        ) from None

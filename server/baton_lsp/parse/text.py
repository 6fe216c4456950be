"""Turning bytes into text we can trust, and text into lines.

Everything that reads a file goes through `decode` so binary files, invalid UTF-8 and
oversized inputs become one clear `Unreadable` reason instead of an exception deep inside a
parser.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_BYTES = 4 * 1024 * 1024
"""Files above this size are reported, not parsed: a 10 MB plan is not a plan."""

MAX_LINE_CHARS = 200_000
"""Lines longer than this are blanked before parsing so no regex ever sees them."""


class UnreadableError(Exception):
    """The input cannot be treated as text; the message says why, for a user."""


@dataclass(frozen=True, slots=True)
class Source:
    """Decoded text split into lines (without terminators) for positional parsing."""

    text: str
    lines: list[str]
    long_lines: tuple[int, ...] = ()

    @classmethod
    def from_text(cls, text: str) -> Source:
        raw = text.split("\n")
        lines: list[str] = []
        long_lines: list[int] = []
        for i, line in enumerate(raw):
            if line.endswith("\r"):
                line = line[:-1]
            if len(line) > MAX_LINE_CHARS:
                long_lines.append(i)
                line = ""
            lines.append(line)
        return cls(text=text, lines=lines, long_lines=tuple(long_lines))


def decode(data: bytes, max_bytes: int = DEFAULT_MAX_BYTES) -> str:
    """Decode file bytes as UTF-8 text or raise `UnreadableError` naming the problem."""
    if len(data) > max_bytes:
        raise UnreadableError(
            f"file is {len(data) / 1_048_576:.1f} MiB, over the {max_bytes / 1_048_576:.1f} MiB "
            "limit for workspace files; it was not parsed"
        )
    if b"\x00" in data[:8192] or b"\x00" in data:
        raise UnreadableError("file contains NUL bytes: it looks binary, not text")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise UnreadableError(
            f"file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at line {line})"
        ) from None

"""Text made safe for a terminal: the one place that decides what of a file's or a checkpoint's
content may reach a terminal as it is.

A plan title, a checkpoint description or an agent's error message is data, but printed raw it
can drive the terminal: ESC and the 8-bit CSI (0x9b) start sequences that retitle or clear the
window, move the cursor over earlier lines or write to the clipboard, and bidi overrides make
the line read differently from what it says. Such characters are shown escaped (`\\x1b`,
`\\u202e`) instead, so the reader sees that they are there and nothing is executed. Machine
formats (JSON, SARIF) escape on their own and must stay exact: only human-readable output
goes through here, and Baton's own colour codes are added after it.
"""

from __future__ import annotations

import re
import unicodedata

_HIDDEN = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Unicode categories never shown as they are: control characters (C0, DEL, C1), invisible
format characters (bidi overrides and isolates, zero-width spaces, BOM, tags), lone surrogates
(undecodable bytes) and the line and paragraph separators."""

_JOINERS = frozenset("\u200c\u200d")
"""Zero-width (non-)joiners are format characters too, but scripts such as Persian and the
Indic ones and emoji sequences need them to be rendered right; they cannot move the cursor
or reorder a line."""

_SINGLE_LINE = re.compile(r"[^ -~]")
_MULTI_LINE = re.compile(r"[^\t\n -~]")
"""Everything outside printable ASCII (and, multi-line, tab and newline): the candidates whose
Unicode category is looked at."""

_SEQUENCE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
                       r"|\x1b[\]P^_X][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC, DCS…: ended by BEL or ST
                       r"|\x1b[ -/]*[0-OQ-WYZ\\`-~]"  # the other escape sequences
                       r"|\x9b[0-?]*[ -/]*[@-~]")  # CSI in its 8-bit form
"""A complete escape sequence. An unterminated string (OSC without its BEL or ST) is not one:
its ESC is shown escaped like any other."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
"""The escapes every reader knows; any other character is shown by its code point."""


def _shown(match: re.Match[str]) -> str:
    ch = match.group()
    if unicodedata.category(ch) not in _HIDDEN or ch in _JOINERS:
        return ch
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else (
        f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")


def terminal_safe(text: str, *, multiline: bool = False, strip_sequences: bool = False) -> str:
    """`text` with every character that could control a terminal or hide what a line says
    shown escaped. `multiline`: newlines and tabs are kept (a report, a traceback, an agent's
    stderr; CRLF counts as a newline); otherwise they are escaped too, so a value cannot forge
    a line of its own. `strip_sequences`: complete escape sequences are dropped rather than
    shown — an agent CLI's colours are noise in a stored message, not content. Backslashes
    are kept as they are: this is for reading, not a reversible encoding."""
    if strip_sequences and ("\x1b" in text or "\x9b" in text):
        text = _SEQUENCE.sub("", text)
    if multiline:
        if "\r\n" in text:
            text = text.replace("\r\n", "\n")
        return _MULTI_LINE.sub(_shown, text)
    return _SINGLE_LINE.sub(_shown, text)

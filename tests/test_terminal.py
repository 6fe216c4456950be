"""`terminal_safe`: what of a file's or a checkpoint's text may reach a terminal as it is."""

from __future__ import annotations

import unicodedata

import pytest

from baton_lsp.terminal import terminal_safe

HOSTILE = ("\x1b]0;owned\x07", "\x1b[2J", "\x9b31m", "\u202e", "\x1bP1$r\x1b\\", "\x07",
           "\x00", "\x7f", "\x85", "\r", "\x08", "\u2066", "\u2069", "\u200b", "\ufeff",
           "\u2028", "\u2029", "\U000e0041", "\udc9b")


@pytest.mark.parametrize("text", HOSTILE)
def test_no_control_format_or_separator_character_survives(text: str) -> None:
    for multiline in (False, True):
        out = terminal_safe(f"a{text}b", multiline=multiline)
        assert out.startswith("a") and out.endswith("b")
        hidden = [c for c in out if unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
        assert hidden == [], (text, out)


def test_characters_are_shown_escaped_not_dropped() -> None:
    assert terminal_safe("title\x1b]0;owned\x07") == "title\\x1b]0;owned\\x07"
    assert terminal_safe("\x1b[2Jclear") == "\\x1b[2Jclear"
    assert terminal_safe("a\x9b2Jb") == "a\\x9b2Jb"
    assert terminal_safe("abc\u202edef") == "abc\\u202edef"
    assert terminal_safe("tag\U000e0041") == "tag\\U000e0041"
    assert terminal_safe("bad\udcffbyte") == "bad\\udcffbyte"
    assert terminal_safe("x\x7fy\x00z") == "x\\x7fy\\x00z"


def test_newlines_and_tabs_only_where_the_output_has_several_lines() -> None:
    assert terminal_safe("one\ntwo\tthree") == "one\\ntwo\\tthree"
    assert terminal_safe("one\ntwo\tthree", multiline=True) == "one\ntwo\tthree"
    assert terminal_safe("one\r\ntwo\rthree", multiline=True) == "one\ntwo\\rthree"
    assert terminal_safe("one\r\ntwo") == "one\\r\\ntwo"


def test_readable_text_is_unchanged() -> None:
    for text in ("plain ASCII: `baton run` — 100 %", "Übersicht über die Phasen", "日本語の計画",
                 "emoji 👩‍💻 with a joiner", "فارسی\u200cها", "back\\slash \\x1b as text",
                 "no-break\u00a0space", ""):
        assert terminal_safe(text) == text
        assert terminal_safe(text, multiline=True) == text


def test_escaping_twice_changes_nothing() -> None:
    once = terminal_safe("".join(HOSTILE) + "\n\t", multiline=True)
    assert terminal_safe(once, multiline=True) == once
    assert terminal_safe(once) == terminal_safe("".join(HOSTILE) + "\n\t")


def test_strip_sequences_drops_whole_sequences_and_escapes_the_rest() -> None:
    coloured = "\x1b[31mError:\x1b[0m bad \x1b]8;;http://x\x1b\\link\x1b]8;;\x07 \x9b1m!"
    assert terminal_safe(coloured, strip_sequences=True) == "Error: bad link !"
    # An unterminated sequence is not a whole one: its ESC is shown, not dropped.
    assert terminal_safe("a\x1b]0;never ends", strip_sequences=True) == "a\\x1b]0;never ends"
    assert terminal_safe("a\nb\x1b[1m", multiline=True, strip_sequences=True) == "a\nb"

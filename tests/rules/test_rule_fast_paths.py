"""The rules' fast paths held to the simple forms they replace (kept here as oracles), over
the text of every file of the shared corpus and over generated text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.parse.shell import CODE, COMMENT, BashLine, lexed
from baton_lsp.rules import command_bash


def _corpus_texts(corpus: Path) -> list[str]:
    texts = [p.read_text(encoding="utf-8", errors="replace")
             for p in sorted(corpus.rglob("*")) if p.suffix in (".md", ".sh") and p.is_file()]
    assert len(texts) > 100
    return texts


# -- BTN328: library calls found by a word scan, not an alternation of the names ---------------

_OLD_LIB_CALL_RE = re.compile(
    r"(?<![^\s;&|(`{!])(" + "|".join(sorted(command_bash._OWNER, key=len, reverse=True))
    + r")\b(?!\s*\()")
"""The pattern `_library_calls` replaced."""


def _old_calls(text: str) -> list[tuple[int, int, str]]:
    return [(m.start(1), m.end(1), m.group(1)) for m in _OLD_LIB_CALL_RE.finditer(text)]


def _old_lines_naming(content: str, names: list[str]) -> list[int]:
    """The per-line test `_lines_naming` replaced."""
    return [no for no, text in enumerate(content.split("\n"))
            if any(name in text for name in names)]


_NAMES = sorted(command_bash._OWNER)
_pieces = st.sampled_from([
    *_NAMES[:6], "sm_init", "sm_initx", "xsm_init", "sm_init_", " ", "\t", "\u00a0", "\u2003",
    "(", " (", "()", ";", "&", "|", "`", "{", "!", "$", "=", "\"", "'", "\n", "é", "\u0663",
    "_", "a", "-", ".", "/", "#",
])
_texts = st.lists(_pieces, max_size=12).map("".join)


@settings(max_examples=3000, deadline=None)
@given(_texts)
def test_library_calls_are_the_patterns_matches(text: str) -> None:
    assert list(command_bash._library_calls(text)) == _old_calls(text)


@settings(max_examples=1500, deadline=None)
@given(_texts, st.lists(st.sampled_from([*_NAMES[:6], "sm_init", "sm_init_x"]), max_size=4))
def test_lines_naming_are_the_lines_that_name(content: str, names: list[str]) -> None:
    assert command_bash._lines_naming(content, names) == _old_lines_naming(content, names)


def test_library_fast_paths_on_the_corpus(corpus: Path) -> None:
    calls = 0
    for text in _corpus_texts(corpus):
        named = [fn for fn in command_bash._OWNER if fn in text]
        # `_lines_naming` numbers the lines as the lexer splits them
        assert [line.text for line in lexed(text)] == text.split("\n")
        assert command_bash._lines_naming(text, named) == _old_lines_naming(text, named)
        for line in text.split("\n"):
            found = list(command_bash._library_calls(line))
            assert found == _old_calls(line), line
            calls += len(found)
    assert calls > 0  # the corpus calls the libraries: the comparison saw real calls


@pytest.mark.parametrize("text", ["sm_init x", "a; sm_init", "sm_init ()", "(sm_init)",
                                  "xsm_init", "sm_init_x", "!sm_init", "\u00a0sm_init"])
def test_library_calls_examples(text: str) -> None:
    assert list(command_bash._library_calls(text)) == _old_calls(text)


# -- BTN320/BTN329: where an assigned value ends -------------------------------------------------

def _old_value_end(line: BashLine, start: int) -> int:
    """`_value_end` as it was: every character visited."""
    depth = 0
    text, classes = line.text, line.classes
    i = start
    while i < len(text):
        ch, cls = text[i], classes[i]
        if cls == CODE:
            if ch in "({":
                depth += 1
            elif ch in ")}":
                if depth == 0:
                    return i
                depth -= 1
            elif depth == 0 and ch in " \t;&|":
                return i
        elif cls == COMMENT:
            return i
        i += 1
    return i


_bash = st.lists(st.sampled_from([
    "A=", "x", "$(", ")", "${", "}", "(", "{", " ", "\t", ";", "&", "|", "#", " # c", "\"",
    "'", "\\", "`", "$x", "<<EOF", "\n", "EOF", "=",
]), max_size=14).map("".join)


def _every_start(content: str) -> int:
    checked = 0
    for line in lexed(content):
        for start in range(len(line.text) + 1):
            assert command_bash._value_end(line, start) == _old_value_end(line, start), \
                (line.text, start)
            checked += 1
    return checked


@settings(max_examples=1500, deadline=None)
@given(_bash)
def test_value_end_is_the_character_scan(content: str) -> None:
    _every_start(content)


def test_value_end_on_the_corpus(corpus: Path) -> None:
    """From every position of every line of the corpus's bash blocks (the files' lines
    lexed as bash: a superset), not only where an assignment's value starts."""
    assert sum(_every_start(text) for text in _corpus_texts(corpus)
               if "```bash" in text or text.startswith("#!")) > 100_000


# -- the registry: a rule's name tested against a set of the names -----------------------------

def test_registered_names_are_the_registry_s_names() -> None:
    """`register` refuses a name found in `_NAMES` where it looked through every rule for
    it: the same answer while `_NAMES` holds exactly the registered rules' names, through
    registrations, refusals and `unregister`."""
    from baton_lsp.model.base import Finding, Kind, Severity
    from baton_lsp.rules import base

    def names() -> set[str]:
        return {r.name for r in base._REGISTRY.values()}

    def check(doc: object, ctx: base.RuleContext) -> list[Finding]:
        """A test rule."""
        return []

    base.all_rules()
    assert names() == base._NAMES and len(names()) > 100
    taken = next(iter(base._REGISTRY.values())).name
    with pytest.raises(ValueError, match="duplicate rule name"):
        base.rule("TST951", taken, Severity.INFO, (Kind.PLAN,))(check)
    try:
        base.rule("TST951", "test-fast-name", Severity.INFO, (Kind.PLAN,))(check)
        assert names() == base._NAMES and "test-fast-name" in base._NAMES
        with pytest.raises(ValueError, match="duplicate rule name"):
            base.rule("TST952", "test-fast-name", Severity.INFO, (Kind.PLAN,))(check)
    finally:
        base.unregister("TST951")
        base.unregister("TST952")  # never registered: nothing to drop
    assert names() == base._NAMES and "test-fast-name" not in base._NAMES
    base.rule("TST952", "test-fast-name", Severity.INFO, (Kind.PLAN,))(check)  # free again
    base.unregister("TST952")
    assert names() == base._NAMES

"""Patterns made cheaper to compile must read text exactly as the ones they replaced.

Each old pattern stays here as the oracle; the new form is held to it over every line of the
shared corpus and over generated text rich in the characters the pattern turns on.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import SupportsIndex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.model import plan as model_plan
from baton_lsp.parse import frontmatter, shell
from baton_lsp.parse.plan import _PHASE_RE
from baton_lsp.parse.text import Source, UnreadableError, decode, has_any, scrub, split_lines

_ID = r"(?:\d+(?:\.\d+)*(?-i:[a-zA-Z])?|(?-i:[A-Z])\d*)"
OLD_PHASE_RE = re.compile(rf"^Phase\s+({_ID})(?=$|[\s:.\-—–(\[])\s*(?:[:.\-—–]\s*)?(.*)$",
                          re.IGNORECASE)
OLD_TREE_RE = re.compile(r"[├└│]")
OLD_ARROW_RE = re.compile("[→⇒←]")
OLD_OUTPUT_GLYPH_RE = re.compile(r"^[✓✔✕✗×•●▶→├└│✅❌]")
OLD_YAML_BREAKS = re.compile("[\r\x85\u2028\u2029]")
OLD_LEADING_STATE = re.compile(
    rf"^({'|'.join(re.escape(w) for w in sorted(model_plan.STATES, key=len, reverse=True))})"
    r"(?![A-Z])")

SETTINGS = settings(max_examples=500, deadline=None)
GLYPHS = "├└│→⇒←✓✔✕✗×•●▶✅❌\r\x85\u2028\u2029—–-ſKk"
"""Every character a replaced class names, plus case-folding traps (`ſ` folds to `s`, the
Kelvin sign to `k` under IGNORECASE)."""
texts = st.text(alphabet=st.sampled_from(list(GLYPHS + "Phase PHASE 0123.aAzZ:([\t\n"))
                | st.characters(), max_size=40)


def corpus_lines() -> Iterator[str]:
    corpus = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
    if not corpus.is_dir():
        pytest.skip("shared corpus not present")
    for path in sorted(corpus.rglob("*")):
        if path.is_file() and path.suffix in (".md", ".sh", ".yaml", ".yml", ".json"):
            yield from path.read_text(encoding="utf-8", errors="replace").splitlines()


def phase_groups(pattern: re.Pattern[str], text: str) -> tuple[str | None, ...] | None:
    m = pattern.match(text)
    return None if m is None else (*m.groups(), str(m.span()))


def old_state_of(word: str) -> str:
    m = OLD_LEADING_STATE.match(word)
    return m.group(1) if m else word


def assert_same(text: str) -> None:
    heading = text.lstrip("# ")
    for candidate in (text, heading):
        assert phase_groups(_PHASE_RE, candidate) == phase_groups(OLD_PHASE_RE, candidate)
    assert has_any(text, shell._TREE_GLYPHS) == bool(OLD_TREE_RE.search(text))
    assert has_any(text, shell._ARROWS) == bool(OLD_ARROW_RE.search(text))
    assert (text[:1] in shell._OUTPUT_GLYPHS) == bool(OLD_OUTPUT_GLYPH_RE.match(text))
    assert ("\r" in text or has_any(text, frontmatter._YAML_BREAKS)) == \
        bool(OLD_YAML_BREAKS.search(text))
    word = " ".join(heading.replace("_", " ").split()).upper()
    assert model_plan.state_of(word) == old_state_of(word)


def test_cheap_patterns_match_the_old_ones_on_the_corpus() -> None:
    seen = phases = 0
    for line in corpus_lines():
        assert_same(line)
        seen += 1
        phases += OLD_PHASE_RE.match(line.lstrip("# ")) is not None
    assert seen > 10_000 and phases > 100  # the corpus was read, phase headings in it


@SETTINGS
@given(texts)
def test_cheap_patterns_match_the_old_ones_on_generated_text(text: str) -> None:
    assert_same(text)


@SETTINGS
@given(st.sampled_from(sorted(model_plan.STATES)), st.lists(
    st.sampled_from([*"AZaz _-09[]", "ED", " TO TASK"]), max_size=6).map("".join))
def test_state_of_matches_the_old_pattern_after_a_state(state: str, tail: str) -> None:
    word = state + tail
    assert model_plan.state_of(word) == old_state_of(word)
    assert model_plan.state_of(state) == state


@SETTINGS
@given(st.sampled_from(["Phase", "phase", "PHASE", "Phaſe", "Phase\u00a0"]),
       st.sampled_from([" ", "  ", "\t", "\u2003"]), st.sampled_from(["1", "1.10", "6a", "3B",
                                                                     "A", "D1", "x", ""]),
       st.sampled_from(["", " ", ":", ".", "-", "—", "–", "(", "[", "x", " — ", ": ", "-—"]),
       st.text(alphabet=st.sampled_from(list("ab —–:[]")), max_size=6))
def test_phase_heading_matches_the_old_pattern(word: str, gap: str, ident: str, sep: str,
                                               rest: str) -> None:
    text = f"{word}{gap}{ident}{sep}{rest}"
    assert phase_groups(_PHASE_RE, text) == phase_groups(OLD_PHASE_RE, text)


def old_split_lines(text: str) -> list[str]:
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


@SETTINGS
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab \r\n\t")), max_size=12), min_size=1,
                max_size=4), st.lists(st.integers(0, 3), max_size=8))
def test_split_lines_gives_what_splitting_gives(texts: list[str], order: list[int]) -> None:
    """Whatever order texts come in, each call gives the lines of its own text, and a list
    the caller may change without changing what a later call gives."""
    for k in [*range(len(texts)), *order]:
        text = texts[k % len(texts)]
        lines = split_lines(text)
        assert lines == old_split_lines(text)
        lines[0] = "changed by the caller"
        assert split_lines(text) == old_split_lines(text)


def test_split_lines_matches_the_old_split_on_the_corpus() -> None:
    corpus = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
    if not corpus.is_dir():
        pytest.skip("shared corpus not present")
    for path in sorted(p for p in corpus.rglob("*") if p.is_file()):
        text = path.read_text(encoding="utf-8", errors="replace")
        assert split_lines(text) == split_lines(text) == old_split_lines(text)


class CountingStr(str):
    splits = 0

    def split(self, sep: str | None = None, maxsplit: SupportsIndex = -1) -> list[str]:
        CountingStr.splits += 1
        return str(self).split(sep, maxsplit)


def test_split_lines_splits_the_same_text_once() -> None:
    """The `Source` and each rule context ask for the lines of one string object: it is
    split once, then copied."""
    text = CountingStr("a\nb\nc")
    first = split_lines(text)
    first[0] = ""  # as `Source.from_text` blanks a long line
    again = [split_lines(text) for _ in range(3)]
    assert CountingStr.splits == 1
    assert again == [["a", "b", "c"]] * 3
    split_lines("other text")
    assert split_lines(text) == ["a", "b", "c"] and CountingStr.splits == 2


def old_scrub(text: str) -> str:
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return re.sub("[\ud800-\udfff]", "\ufffd", text)
    return text


@SETTINGS
@given(st.text(alphabet=st.characters(codec=None, categories=None) | st.sampled_from(
    ["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00", "é", "😀", "a"])))
def test_scrub_finds_the_surrogates_the_utf8_encoder_refused(text: str) -> None:
    assert scrub(text) == old_scrub(text)
    assert len(scrub(text).encode("utf-8")) >= len(text)  # nothing is left to refuse


@SETTINGS
@given(st.binary(max_size=40) | st.text(max_size=20).map(lambda t: t.encode("utf-8")))
def test_decoded_text_holds_nothing_to_scrub(data: bytes) -> None:
    """What lets `Source.from_text(decoded=True)` skip `scrub`: `decode` is strict UTF-8,
    which cannot carry a lone surrogate."""
    try:
        text = decode(data)
    except UnreadableError:
        return
    assert scrub(text) is text
    assert Source.from_text(text, decoded=True) == Source.from_text(text)


def test_parsing_bytes_skips_the_scrub(monkeypatch: pytest.MonkeyPatch) -> None:
    from baton_lsp.model import Kind
    from baton_lsp.parse import parse_bytes, parse_text
    from baton_lsp.parse import text as text_module

    calls: list[str] = []

    def counting_scrub(text: str) -> str:
        calls.append(text)
        return scrub(text)

    monkeypatch.setattr(text_module, "scrub", counting_scrub)
    plan = "# Plan — é\n\n## Phase 1: Setup [NOT STARTED]\n"
    assert parse_bytes(Kind.PLAN, plan.encode("utf-8"), "p.md") == parse_text(Kind.PLAN, plan,
                                                                               "p.md")
    assert calls == [plan]  # parse_text's, not parse_bytes'

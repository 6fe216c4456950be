"""A front matter block is parsed once per loader however many times a check reads it.

The parse, Claude Code's quoting retry and the rules' `claude_code_error` read the same text
within a few files of each other; a block libyaml refuses used to be re-read each time by
the pure-Python parser (issue 34). The replayed reading must be the reading itself: same
entries, same error, same limit.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
import yaml

from baton_lsp.parse.frontmatter import (
    PURE_LOADER,
    YAMLLimitError,
    check_limits,
    claude_code_error,
    loads,
    parse_frontmatter,
    safe_load,
)


@pytest.fixture()
def parses(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """Every `yaml.parse` call, (text, loader), still running the real parser."""
    seen: list[tuple[str, object]] = []
    real = yaml.parse

    def counting(stream: str, Loader: object) -> Iterator[yaml.Event]:
        seen.append((stream, Loader))
        return real(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "parse", counting)
    return seen


def _generator_agent() -> list[str]:
    """The `/agents` generator's shape: strict YAML refuses the `: ` inside the value.
    A fresh name each run, so no earlier test's reading is replayed."""
    name = f"worker-{uuid.uuid4().hex}"
    return ["---", f"name: {name}",
            "description: Use it when asked. Examples: <example>Context: a user</example>",
            "tools: Read, Grep", "---", "body"]


def test_a_refused_block_is_parsed_once_per_loader(
        parses: list[tuple[str, object]]) -> None:
    lines = _generator_agent()
    text = "\n".join(lines[1:4])
    first = parse_frontmatter(lines, 4)
    why = claude_code_error(text)
    again = parse_frontmatter(lines, 4)
    assert first == again
    assert first.lenient_reason is not None and "mapping values" in first.lenient_reason
    assert [e.key for e in first.entries] == ["name", "description", "tools"]
    assert why is None  # Claude Code's retry reads it
    for key in {(t, loader) for t, loader in parses}:
        assert parses.count(key) == 1, key
    assert (text, PURE_LOADER) in parses  # the slow re-read happened, once


def test_the_replayed_error_is_the_same_error(parses: list[tuple[str, object]]) -> None:
    text = f"a: {uuid.uuid4().hex}\n  b: [\n"
    errors = []
    for _ in range(3):
        lines = ["---", *text.split("\n")[:-1], "---"]
        errors.append(parse_frontmatter(lines, len(lines) - 1))
    assert errors[0] == errors[1] == errors[2]
    assert errors[0].error is not None or errors[0].lenient_reason is not None
    assert len(parses) == len(set(parses))


def test_a_replayed_limit_is_still_refused(parses: list[tuple[str, object]]) -> None:
    text = f"a: &x {uuid.uuid4().hex}\nb: *x\n"
    for _ in range(2):
        with pytest.raises(YAMLLimitError, match="aliases"):
            check_limits(text)
    assert len(parses) == len(set(parses))


@pytest.fixture()
def loads_seen(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """Every `yaml.load` call, (text, loader), still running the real loader."""
    seen: list[tuple[str, object]] = []
    real = yaml.load

    def counting(stream: str, Loader: object) -> object:
        seen.append((stream, Loader))
        return real(stream, Loader=Loader)

    monkeypatch.setattr(yaml, "load", counting)
    return seen


def test_an_unreadable_block_is_not_loaded_just_to_fail(
        loads_seen: list[tuple[str, object]]) -> None:
    """The `/agents` generator's block: strict YAML refuses it, Claude Code's retry reads it.
    Deciding that must not run `yaml.load` (the pure-Python one above all) on the refused
    text, whose parse already failed on every loader."""
    lines = _generator_agent()
    text = "\n".join(lines[1:4])
    assert parse_frontmatter(lines, 4).lenient_reason is not None
    assert claude_code_error(text) is None
    assert [loader for t, loader in loads_seen if t == text] == []


def _safe_load_returns(text: str) -> bool:
    try:
        safe_load(text)
    except yaml.YAMLError:
        return False
    return True


LOADS_CASES = [
    "", "a: 1", "a: b: c", "a: [1, 2", "a: &x 1\nb: *x", "a: &x 1\nb: &x 2",
    "--- a\n--- b", "a: 1\n---\nb: 2", "\ta: 1", "a:\n\t- b", "a: 'unclosed",
    f"a: {'9' * 5000}", "a: [" * 50 + "]" * 50, "a: !!python/object:os.system x",
    "a: !!int x", "a: !!timestamp 2026-13-45", "? [a, b]\n: c", "{a: 1}: 2", "- a\n- b",
    "a: |\n  x\n b", "key: value # comment", "k: @x", "k: `x`", "a: 1\na: 2",
    "description: Use it. Examples: <example>Context: x</example>", "%YAML 1.1\n--- a: 1",
    "%BAD\n---\na: 1", "a: \"\\x\"", "a: \"\\u00e9\"", "a: 0o17", "a: .inf", "a: 1_000",
]


@pytest.mark.parametrize("text", LOADS_CASES)
def test_loads_answers_as_safe_load_does(text: str) -> None:
    assert loads(text) is _safe_load_returns(text)

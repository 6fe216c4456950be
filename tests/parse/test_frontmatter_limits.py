"""Hostile front matter gets BTN202/BTN303 "nests deeper than N", never BTN000, on every loader.

PyYAML builds differ in what they refuse: 6.0.4's libyaml stops deep flow nesting with a
scanner error where 6.0.3's parsed it, and the pure-Python parser accepts any depth. Every
case runs with libyaml's loader (where this PyYAML has it) and with the pure-Python one; CI
runs this module on PyYAML 6.0.3 as well as on the locked release.
"""

from __future__ import annotations

import pytest
import yaml

from baton_lsp.model.base import Finding, Kind
from baton_lsp.parse import frontmatter
from baton_lsp.parse.frontmatter import MAX_DEPTH, YAMLLimitError, check_limits, safe_load
from baton_lsp.rules.engine import check_text

DEPTH = f"nests deeper than {MAX_DEPTH} levels"
AGENT = "/ws/.claude/agents/worker.md"
COMMAND = "/ws/.claude/commands/run.md"
N = 10_000


@pytest.fixture(params=["libyaml", "pure-python"], autouse=True)
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "libyaml":
        if not yaml.__with_libyaml__:
            pytest.skip(f"PyYAML {yaml.__version__} was built without libyaml")
        monkeypatch.setattr(frontmatter, "LOADER", yaml.CSafeLoader)
    else:
        monkeypatch.setattr(frontmatter, "LOADER", yaml.SafeLoader)
    return str(request.param)


def _block_map(depth: int) -> str:
    return "".join(f"{' ' * i}k{i}:\n" for i in range(depth)) + f"{' ' * depth}leaf\n"


CASES = {
    "flow list": f"tools: {'[' * N}{']' * N}\n",
    "unclosed flow list": f"tools: {'[' * N}\n",
    "flow map": f"x: {'{a: ' * N}1{'}' * N}\n",
    "block map": "x:\n" + "".join(f"{' ' * (i + 1)}k{i}:\n" for i in range(200)) + "   v\n",
    "block sequence": "x:\n  " + "- " * N + "leaf\n",
    "flow in block": "x:\n" + "".join(f"{'  ' * (i + 1)}- k{i}:\n" for i in range(30))
                     + " " * 64 + "[" * 60 + "]" * 60 + "\n",
    "flow maps in flow lists": "x: " + "[{a: " * 500 + "1" + "}]" * 500 + "\n",
}


def _findings(kind: Kind, path: str, fm: str) -> list[Finding]:
    return check_text(kind, f"---\nname: worker\ndescription: d\n{fm}---\n# Body\n", path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_agent_front_matter_too_deep(case: str) -> None:
    findings = _findings(Kind.AGENT, AGENT, CASES[case])
    assert not [f for f in findings if f.code == "BTN000"], findings
    deep = [f for f in findings if f.code == "BTN202"]
    assert len(deep) == 1 and DEPTH in deep[0].message, findings
    assert deep[0].range.start_line >= 3  # on the offending key's lines, not the `---`


@pytest.mark.parametrize("case", sorted(CASES))
def test_command_front_matter_too_deep(case: str) -> None:
    findings = _findings(Kind.COMMAND, COMMAND, CASES[case])
    assert not [f for f in findings if f.code == "BTN000"], findings
    assert [f for f in findings if f.code == "BTN303" and DEPTH in f.message], findings


def test_lenient_fallback_refuses_a_deep_value() -> None:
    # `argument-hint: [x] y` is invalid YAML that Claude Code reads as text, so the block is
    # read leniently; the deep value after it must still be reported, not kept as text.
    fm = f"argument-hint: [--flag] TEXT\ntools: {'[' * N}{']' * N}\n"
    findings = _findings(Kind.AGENT, AGENT, fm)
    assert not [f for f in findings if f.code in {"BTN000", "BTN203"}], findings
    deep = [f for f in findings if f.code == "BTN202"]
    assert len(deep) == 1 and DEPTH in deep[0].message and deep[0].range.start_line == 4


def test_lenient_fallback_still_reads_shallow_values() -> None:
    findings = _findings(Kind.AGENT, AGENT, "argument-hint: [--flag] TEXT\ntools: [[Read]]\n")
    # Claude Code's own retry quotes `[--flag] TEXT`, so that is no longer BTN203; the point
    # here is that the lenient reader still reads the block (no BTN000/BTN202).
    assert [f.code for f in findings if f.code.startswith("BTN20")].count("BTN203") == 0
    assert not [f for f in findings if f.code in {"BTN000", "BTN202"}], findings


def test_depth_limit_is_exact() -> None:
    ok = "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    too_deep = "x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n"
    assert not [f for f in _findings(Kind.AGENT, AGENT, ok) if f.code == "BTN202"]
    assert [f for f in _findings(Kind.AGENT, AGENT, too_deep) if f.code == "BTN202"]


def test_safe_load_matches_pyyaml_within_limits() -> None:
    for text in ("k: 1.5", "k: [a, {b: c}]", "k: 2024-01-01", "k: 'x: y'", "a: [1, 2]\nb: no"):
        assert safe_load(text) == yaml.safe_load(text)
    with pytest.raises(yaml.YAMLError):  # a syntax error is still a YAMLError
        safe_load("k: [a")


@pytest.mark.parametrize("text", [
    "k: " + "[" * N + "]" * N,
    "k: " + "{a: " * N + "1" + "}" * N,
    "- " * N + "x",
    "a: &a [x]\nb: [*a, *a]",
])
def test_safe_load_refuses_what_would_recurse_or_expand(text: str) -> None:
    with pytest.raises(YAMLLimitError):
        safe_load(text)
    with pytest.raises(YAMLLimitError):
        check_limits(text)


def test_check_limits_ignores_plain_syntax_errors() -> None:
    check_limits("k: [a")  # the caller's own parse reports syntax; no limit was broken
    check_limits("description: a: b")

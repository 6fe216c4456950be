"""Property tests: no parser may raise, and parsed positions must point into the document.

The language server parses every keystroke, so a parser exception is a dead editor and a
range outside the document is a client-side crash or a fix that edits the wrong text.
Hypothesis feeds arbitrary text and bytes plus a markdown-ish strategy built from the
fragments real plans, agents, commands and state files are made of, so the interesting
branches (fences, front matter, dependency lines, Task blocks, quotes) are actually reached.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from baton_lsp.model import BatonConfig, Kind, Plan, Range, Unreadable
from baton_lsp.model.base import Model
from baton_lsp.model.graph import build_graph
from baton_lsp.parse import _parsers, parse_bytes, parse_text
from baton_lsp.parse.frontmatter import parse_frontmatter
from baton_lsp.parse.markdown import find_frontmatter_end, parse_markdown
from baton_lsp.parse.text import Source
from baton_lsp.rules.engine import check_text

SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])
CONFIG = BatonConfig(shellcheck="off")
PARSED_KINDS = [k for k in Kind if k in _parsers()]
CHECKED_KINDS = [Kind.PLAN, Kind.AGENT, Kind.COMMAND, Kind.STATE, Kind.ERRORS_LOG]
PATHS = {
    Kind.PLAN: "/ws/.claude/specs/001_x/plans/001_plan.md",
    Kind.AGENT: "/ws/.claude/agents/some-agent.md",
    Kind.COMMAND: "/ws/.claude/commands/do.md",
    Kind.SKILL: "/ws/.claude/skills/do/SKILL.md",
    Kind.REGISTRY: "/ws/specs/state.json",
    Kind.STATE: "/ws/.claude/tmp/workflow_state.sh",
    Kind.ERRORS_LOG: "/ws/.claude/data/logs/errors.jsonl",
    Kind.REPORT: "/ws/.claude/specs/001_x/reports/001_r.md",
    Kind.SUMMARY: "/ws/.claude/specs/001_x/summaries/001_s.md",
    Kind.CHECKPOINT: "/ws/.claude/data/checkpoints/wf_1/000001.json",
    Kind.OPENCODE_AGENT: "/ws/.opencode/agent/subagents/some-agent.md",
    Kind.OPENCODE_COMMAND: "/ws/.opencode/commands/do.md",
    Kind.OPENCODE_CONFIG: "/ws/opencode.json",
    Kind.UNLOADED: "/ws/.claude/skills/loose.md",
    Kind.MCP_CONFIG: "/ws/.mcp.json",
    Kind.PLUGIN_MANIFEST: "/ws/.claude-plugin/plugin.json",
    Kind.MEMORY: "/ws/CLAUDE.md",
    Kind.CONTEXT: "/ws/.claude/context/patterns/x.md",
    Kind.SETTINGS: "/ws/.claude/settings.json",
}

FRAGMENTS = [
    "# ", "## ", "### Phase ", "## Phase ", "#### ", "Phase 1", "Phase 2.5", "Phase 03",
    "## Metadata\n", "## Implementation Phases\n", "## Success Criteria\n",
    "dependencies: [", "dependencies: []", "depends_on: [phase_", "**Dependencies**:",
    "**Dependencies**: Phase 1", "**Status**:", "**File**: phase_1.md", "**Date**: 2026-01-01",
    "- **Estimated Phases**: 3", "- **Structure Level**: 1", "[COMPLETE]", "[IN PROGRESS]",
    "[See: phase_2_x.md]", "- [ ] ", "- [x] ", "- [X] ", "  - [ ] ", "1. ", "- ", "* ",
    "```", "```bash\n", "~~~", "    ", "\t", "---\n", "...\n", "\n", "\n\n", "\r\n", "\r",
    "<!--", "-->", "<!-- baton: ignore BTN101 -->", "<!-- baton: ignore-file -->", "<div>",
    "[", "]", "(", ")", "](", "[link](x.md)", "[Phase 1 Details](phase_1.md)", "`", "``",
    "*", "**", ":", ",", "'", '"', "\\", "{", "}", "{{", "}}", "{{NAME}}",
    "Task {", "  prompt: \"", "  subagent_type: general-purpose", "  description: |",
    "export X=\"", "export Y='", "Z=", "STEP 1", "### STEP 2 (REQUIRED BEFORE STEP 3)",
    "Read and follow ALL behavioral guidelines from: ", ".claude/agents/x.md",
    "PLAN_CREATED:", "TASK_ERROR:", "name: ", "description: ", "allowed-tools: Read, Bash(",
    "model: ", "tools:\n  - Read\n", "&a ", "*a ", "!!python/object ", "%YAML 1.2\n",
    '{"timestamp": "t", "error_type": "state_error", "error_message": "m"}', "[[", "]]",
    "1", "0", "2.50", "é", "😀", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\ufeff",
    "\x00", "\u200b", "\U0001d400",
]

LINES = [
    "# Implementation Plan", "## Metadata", "- **Date**: 2026-11-21", "- **Status**: [COMPLETE]",
    "- **Estimated Phases**: 2", "- **Research Reports**:", "  - [r](../reports/001_r.md)",
    "## Implementation Phases", "## Phase 1: Setup [COMPLETE]", "### Phase 2: Build",
    "### Phase 2.5 - Extra [IN PROGRESS] [See: phase_2_5.md]", "## Phase 03 [NOT STARTED]",
    "dependencies: [1]", "dependencies: [1, 2, phase_3]", "depends_on: [phase_1]",
    "**Dependencies**: Phase 1 and Phase 2", "**Dependencies**: None", "- [ ] Write tests",
    "- [x] Done", "  - [X] Nested", "**Status**: IN PROGRESS", "```bash", "```", "~~~yaml",
    "---", "name: planner", "description: Plans things", "allowed-tools: Read, Bash(git:*)",
    "model: sonnet", "tools:", "  - Read", "Task {", '  prompt: "Read and follow: x.md',
    '  "', "}", "export STATE_FILE=\"/tmp/x\"", "export JSON='[1, 2'", "### STEP 1: Go",
    "PLAN_CREATED: /abs/path.md", "<!-- baton: ignore BTN101 -->", "<!--", "-->",
    '{"timestamp": "2026", "error_type": "x", "error_message": "m", "status": "ERROR"}', "[",
]
fragment = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12))
line_ending = st.sampled_from(["\n", "\n", "\n", "\n", "\r\n", "\r"])
line = st.one_of(
    st.sampled_from(LINES),
    st.tuples(st.sampled_from(LINES), fragment).map("".join),
    st.lists(fragment, max_size=4).map("".join),
)
FM_LINES = [
    "name: planner", "description: Plans things", "description: >", "  folded text",
    "allowed-tools: Read, Write, Bash(git:*), Task", "allowed-tools: [Read, Write]",
    "argument-hint: [--flag] <text>", "model: sonnet", "model: opus-4", "tools:", "  - Read",
    "  - Bash", "dependent-agents: [a, b]", "a: &x [1, 2]", "b: *x", "c: {d: [e, {f: g}]}",
    "key: 'unterminated", 'key: "a\\"b"', "- item", "? complex", "name: {{NAME}}", "x: 1",
    "x: 2", "tab:\tvalue", "empty:", "  indented: wrong", "list: [", "'quoted key': v",
]
frontmatter_lines = st.lists(
    st.tuples(st.one_of(st.sampled_from(FM_LINES), st.sampled_from(FM_LINES).flatmap(
        lambda base: fragment.map(lambda f: base + f)), fragment), line_ending),
    max_size=12,
).map(lambda pairs: "".join(a + b for a, b in pairs))
_scalar = st.text(alphabet="abcXYZ019 -_./:#é😀\t\u2028\u2029\x85", min_size=1, max_size=12)


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# Mostly valid YAML, so the strict path (YAML marks → ranges) runs, not just the fallback.
yaml_frontmatter = st.lists(
    st.tuples(
        st.sampled_from(["name", "description", "allowed-tools", "model", "tools", "x"]),
        st.one_of(
            _scalar, _scalar.map(_quote), _scalar.map(lambda v: "'" + v.replace("'", "''") + "'"),
            st.lists(_scalar, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
            st.lists(_scalar, min_size=1, max_size=3).map(
                lambda xs: "".join(f"\n  - {x}" for x in xs)),
        ),
    ).map(lambda kv: f"{kv[0]}: {kv[1]}"),
    max_size=6,
).map(lambda entries: "---\n" + "\n".join(entries) + "\n---\n# Title\n")
# Line-oriented, so headings, fences and `key: value` pairs start lines as they do in files.
markdown_lines = st.lists(st.tuples(line, line_ending), max_size=40).map(
    lambda pairs: "".join(a + b for a, b in pairs))
markdownish = st.one_of(
    markdown_lines,
    yaml_frontmatter,
    st.tuples(frontmatter_lines, markdown_lines).map(lambda t: f"---\n{t[0]}---\n{t[1]}"),
    st.lists(fragment, max_size=60).map("".join),
)
any_text = st.one_of(st.text(), markdownish)
any_bytes = st.one_of(
    st.binary(max_size=2000),
    markdownish.map(lambda s: s.encode("utf-8", "surrogatepass")),
    st.tuples(markdownish, st.binary(max_size=8), st.integers(0, 400)).map(
        lambda t: _splice(t[0].encode("utf-8", "surrogatepass"), t[1], t[2])),
)


def _splice(data: bytes, junk: bytes, at: int) -> bytes:
    """Corrupt valid UTF-8 somewhere in the middle (truncated sequences, stray bytes)."""
    at = min(at, len(data))
    return data[:at] + junk + data[at:]


def _lines(text: str) -> list[str]:
    """Lines as LSP clients count them: `\\n`, `\\r\\n` and a lone `\\r` end a line."""
    return re.split(r"\r\n|\r|\n", text)


def _ranges(obj: Any, where: str = "doc") -> list[tuple[str, Range]]:
    """Every `Range` reachable from a parsed model, with a path for the failure message."""
    found: list[tuple[str, Range]] = []
    stack: list[tuple[str, Any]] = [(where, obj)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, Range):
            found.append((path, value))
        elif isinstance(value, Model):
            for name in type(value).model_fields:
                stack.append((f"{path}.{name}", getattr(value, name)))
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{path}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, dict):
            stack.extend((f"{path}[{k!r}]", v) for k, v in value.items())
    return found


def assert_ranges_inside(obj: Any, text: str) -> None:
    lines = _lines(text)
    for path, r in _ranges(obj):
        assert r.start_line >= 0 and r.start_char >= 0 and r.end_char >= 0, (path, r)
        assert (r.start_line, r.start_char) <= (r.end_line, r.end_char), (path, r)
        assert r.end_line < len(lines), (path, r, len(lines))
        assert r.start_char <= len(lines[r.start_line]), (path, r, lines[r.start_line])
        assert r.end_char <= len(lines[r.end_line]), (path, r, lines[r.end_line])


def _dump(doc: Any) -> Any:
    return doc.model_dump(mode="json") if isinstance(doc, Model) else doc


# -- parse_text / parse_bytes -----------------------------------------------------------


@pytest.mark.parametrize("kind", PARSED_KINDS, ids=str)
@SETTINGS
@given(text=any_text)
def test_parser_never_raises_on_text(kind: Kind, text: str) -> None:
    # Call the parser itself: parse_text would turn a crash into an "internal error" result.
    doc = _parsers()[kind](Source.from_text(text), PATHS[kind])
    assert_ranges_inside(doc, text)
    wrapped = parse_text(kind, text, PATHS[kind])
    assert not isinstance(wrapped, Unreadable), wrapped
    assert _dump(wrapped) == _dump(doc), "parsing the same text twice must give the same model"


@pytest.mark.parametrize("kind", list(Kind), ids=str)
@SETTINGS
@given(data=any_bytes)
def test_parse_bytes_never_raises(kind: Kind, data: bytes) -> None:
    doc = parse_bytes(kind, data, PATHS.get(kind, "/ws/.claude/x"))
    try:
        text = data.removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        assert isinstance(doc, Unreadable) and doc.reason, doc
        return
    if kind not in _parsers():
        assert doc is None
        return
    assert not isinstance(doc, Unreadable), doc
    assert_ranges_inside(doc, text)
    assert _dump(doc) == _dump(parse_bytes(kind, data, PATHS[kind]))


# -- markdown and front matter ----------------------------------------------------------


@SETTINGS
@given(text=any_text, frontmatter=st.booleans())
def test_parse_markdown_skeleton_is_consistent(text: str, frontmatter: bool) -> None:
    source = Source.from_text(text)
    lines, n = source.lines, len(source.lines)
    md = parse_markdown(source, frontmatter=frontmatter)
    assert len(md.opaque) == n
    assert -1 <= md.frontmatter_end < n
    for h in md.headings:
        assert 0 <= h.line < n and 1 <= h.level <= 6
        assert 0 <= h.text_start <= h.end_char <= len(lines[h.line])
        assert lines[h.line].lstrip(" ").startswith("#")
        assert not md.opaque[h.line], "a heading can never sit inside a fence or HTML block"
    for f in md.fences:
        assert 0 <= f.start_line <= f.end_line < n
        assert all(md.opaque[i] for i in range(f.start_line, f.end_line + 1))
        assert all(0 <= i < n for i in f.body)
    for c in md.comments:
        assert 0 <= c.start_line <= c.end_line < n
    assert [h.line for h in md.headings] == sorted(h.line for h in md.headings)
    again = parse_markdown(Source.from_text(text), frontmatter=frontmatter)
    assert (again.headings, again.fences, again.comments, again.opaque) == (
        md.headings, md.fences, md.comments, md.opaque)


@SETTINGS
@given(text=st.one_of(yaml_frontmatter, any_text.map(lambda body: f"---\n{body}\n---\n# T\n")))
def test_parse_frontmatter_never_raises(text: str) -> None:
    lines = Source.from_text(text).lines
    end = find_frontmatter_end(lines)
    assert end >= 1
    fm = parse_frontmatter(lines, end)
    assert_ranges_inside(fm, text)
    for entry in [*fm.entries, *fm.duplicates]:
        assert 1 <= entry.key_range.start_line <= entry.range.end_line < end, entry
    if fm.error is not None:
        assert fm.error_range is not None and not fm.entries
    assert fm.model_dump() == parse_frontmatter(lines, end).model_dump()


@SETTINGS
@given(body=any_text, end=st.integers(0, 80))
def test_parse_frontmatter_any_end_line(body: str, end: int) -> None:
    """Callers pass the closing line index; any index inside the document must be safe."""
    lines = Source.from_text(body).lines
    end = min(end, len(lines) - 1)
    fm = parse_frontmatter(lines, end)
    assert_ranges_inside(fm, body)


# -- plans: the dependency graph --------------------------------------------------------


plan_text = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["## Phase ", "### Phase "]),
                  st.sampled_from(["1", "2", "2.5", "02", "3", "10", "1.0"]),
                  st.sampled_from(["", ": Title", " [COMPLETE]", " - x [See: p.md]"])).map(
            lambda t: "".join(t) + "\n"),
        st.lists(st.sampled_from(["1", "2", "3", "2.5", "phase_1", "x", "10"]), max_size=4).map(
            lambda ids: f"dependencies: [{', '.join(ids)}]\n"),
        st.sampled_from(FRAGMENTS),
    ),
    max_size=40,
).map("".join)


@SETTINGS
@given(text=st.one_of(plan_text, markdownish))
def test_plan_graph_invariants(text: str) -> None:
    plan = parse_text(Kind.PLAN, text, PATHS[Kind.PLAN])
    assert isinstance(plan, Plan)
    graph = build_graph(plan)
    assert len(graph.order) == len(set(graph.order)), graph.order
    assert set(graph.order) == {p.id for p in plan.phases}
    for pid, deps in graph.deps.items():
        assert pid in graph.order and pid not in deps and set(deps) <= set(graph.order)
    in_waves = [p for wave in graph.waves for p in wave]
    assert len(in_waves) == len(set(in_waves))
    assert sorted(in_waves + graph.blocked) == sorted(graph.order)
    for cycle in graph.cycles:
        assert cycle[0] == cycle[-1] and len(cycle) >= 3
        assert all(b in graph.deps[a] for a, b in itertools.pairwise(cycle))
    assert bool(graph.cycles) == bool(graph.blocked)


# -- full rule runs ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", CHECKED_KINDS, ids=str)
@SETTINGS
@given(text=any_text)
def test_rules_never_crash(kind: Kind, text: str) -> None:
    findings = check_text(kind, text, PATHS[kind], config=CONFIG)
    crashed = [f.message for f in findings if f.code == "BTN000"]
    assert not crashed, crashed
    lines = _lines(text)
    for f in findings:
        r = f.range
        assert 0 <= r.start_line <= r.end_line < len(lines), (f.code, r, len(lines))
        assert (r.start_line, r.start_char) <= (r.end_line, r.end_char), (f.code, r)
    again = check_text(kind, text, PATHS[kind], config=CONFIG)
    assert [f.model_dump() for f in again] == [f.model_dump() for f in findings]

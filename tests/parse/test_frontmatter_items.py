"""Front matter string lists and Claude Code's quoting retry, at the parser level."""

from __future__ import annotations

from baton_lsp.parse.frontmatter import parse_frontmatter


def _fm(body: str):
    lines = ["---", *body.split("\n"), "---"]
    return lines, parse_frontmatter(lines, len(lines) - 1)


def _texts(lines: list[str], items) -> list[str]:
    return [lines[i.range.start_line][i.range.start_char:i.range.end_char] for i in items]


def test_quoted_comma_string_is_split_at_its_columns() -> None:
    # 0x7067/ai-dev-pipeline .claude/agents/auditor.md
    lines, fm = _fm("name: auditor\ntools: 'Read, Glob, Grep, Bash'\n"
                    "disallowedTools: \"Write, Edit\"")
    tools, denied = fm.get("tools"), fm.get("disallowedTools")
    assert tools is not None and denied is not None
    assert [i.value for i in tools.items] == ["Read", "Glob", "Grep", "Bash"]
    assert _texts(lines, tools.items) == ["Read", "Glob", "Grep", "Bash"]
    assert _texts(lines, denied.items) == ["Write", "Edit"]


def test_quoted_string_with_escapes_is_split_on_the_whole_value() -> None:
    _, fm = _fm('tools: "Read,\\tGlob"')
    tools = fm.get("tools")
    assert tools is not None and [i.value for i in tools.items] == ["Read", "Glob"]
    assert all(i.range == tools.value_range for i in tools.items)


def test_quoted_string_without_commas_stays_one_item() -> None:
    _, fm = _fm("tools: 'Read Glob'")
    tools = fm.get("tools")
    assert tools is not None and tools.items == [] and tools.value == "Read Glob"


def test_lenient_reader_splits_quoted_strings_too() -> None:
    # `[x] y` breaks strict YAML and the continued line breaks Claude Code's retry, so the
    # line reader reads the block; its quoted tools must split like YAML's.
    lines, fm = _fm("description: [x] y\n  more: z\ntools: 'Read, Glob'")
    tools = fm.get("tools")
    assert fm.error is None and tools is not None
    assert _texts(lines, tools.items) == ["Read", "Glob"]


def test_retry_values_map_back_to_original_columns() -> None:
    lines, fm = _fm("name: x\ndescription:   Use it. Examples: a\nrelated:\n  agents: [a, b]")
    assert fm.error is None and fm.lenient_reason is not None
    desc = fm.get("description")
    assert desc is not None and desc.value == "Use it. Examples: a"
    rng = desc.value_range
    assert lines[rng.start_line][rng.start_char:rng.end_char] == "Use it. Examples: a"
    related = fm.get("related")
    assert related is not None and related.value == {"agents": ["a", "b"]}


def test_retry_tab_indented_lines_map_back_to_original_columns() -> None:
    # Claude Code turns leading tabs into two spaces before its retry.
    lines, fm = _fm("description: a: b\ntools:\n\t- Read\n\t- Glob")
    tools = fm.get("tools")
    assert fm.error is None and tools is not None and tools.value == ["Read", "Glob"]
    assert _texts(lines, tools.items) == ["Read", "Glob"]

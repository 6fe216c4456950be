"""BTN201-BTN209: agent front matter rules, on small inputs and on the real corpus."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind
from baton_lsp.model.config import BatonConfig
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.engine import check_text
from tests.helpers import apply_fix as apply

AGENT_PATH = "/ws/.claude/agents/my-agent.md"
FM_CODES = {f"BTN20{i}" for i in range(1, 10)}


def check(text: str, path: str = AGENT_PATH, config: BatonConfig | None = None) -> list[Finding]:
    return [f for f in check_text(Kind.AGENT, text, path, config=config)
            if f.code in FM_CODES | {"BTN000"}]


def by_code(findings: list[Finding], code: str) -> list[Finding]:
    return [f for f in findings if f.code == code]




GOOD_OLD = """---
allowed-tools: Read, Write, Bash(git:*), mcp__github__create_issue
description: Writes reports
model: claude-sonnet-4-5
fallback-model: haiku
---

# My Agent
"""

GOOD_NEW = """---
name: my-agent
description: Writes reports
---

# My Agent
"""


@pytest.mark.parametrize("text", [GOOD_OLD, GOOD_NEW])
def test_valid_agents_have_no_frontmatter_findings(text: str) -> None:
    assert check(text) == []


def test_rules_are_registered_with_docs() -> None:
    for code in sorted(FM_CODES):
        r = get_rule(code)
        assert r is not None and r.doc and "\n\n" in r.doc, code
        assert r.kinds == frozenset({Kind.AGENT})


# -- BTN201 missing front matter --------------------------------------------------------


@pytest.mark.parametrize("text", [
    "# Debug Analyst\n\nRead by /debug and injected into a Task prompt.\n",  # behavioural file
    "/Users/someone/git/vault/agents/claude/taskmaster.md",  # git symlink checked out as text
    "# [Agent Name]\n\n## Role\n[Describe the role]\n",  # a template outside templates/
])
def test_files_without_front_matter_are_documentation_not_defects(text: str) -> None:
    # Claude Code treats an agents/ file without `name` as documentation kept beside the
    # agents (sub-agents docs, "Subagent files Claude Code skips"): nothing is wrong.
    assert check(text) == []


def test_key_lines_without_dashes_are_reported() -> None:
    text = "name: my-agent\ndescription: Reviews code\n\nYou review code.\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN201", 0)]
    assert "no `---`" in found[0].message


def test_frontmatter_after_blank_lines_is_reported_with_fix() -> None:
    text = "\n\n---\nname: my-agent\ndescription: x\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN201", 2)]
    assert "line 3" in found[0].message
    fixed = apply(text, found[0].fix)
    assert fixed.startswith("---\nname: my-agent")
    assert check(fixed) == []


def test_leading_horizontal_rule_is_not_mistaken_for_front_matter() -> None:
    assert check("\n---\n\n# Title\n") == []

@pytest.mark.parametrize("path", [
    "/ws/.claude/agents/templates/x-template.md",
    "/ws/.claude/agents/prompts/evaluate.md",
])
def test_missing_frontmatter_skips_templates_and_prompts(path: str) -> None:
    assert check("# Fragment\n\ntext\n", path) == []


# -- BTN202 / BTN203 readability --------------------------------------------------------


def test_unreadable_frontmatter_is_an_error_at_the_bad_line() -> None:
    text = "---\ndescription: ok\n[broken, list\nname: x\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN202"]
    assert found[0].severity == "error"
    assert "not valid YAML" in found[0].message
    assert 2 <= found[0].range.start_line <= 3


def test_aliases_are_refused_as_invalid() -> None:
    text = "---\ndescription: &a x\nname: *a\n---\n# T\n"
    found = by_code(check(text), "BTN202")
    assert len(found) == 1 and "aliases" in found[0].message


@pytest.mark.parametrize("value", [
    "[--flag] TEXT runs it",
    "Use this agent when tests are needed. Examples: <example>Context: x\\n user: y</example>",
    "Writes docs #internal, see @docs",
])
def test_values_claude_code_quotes_itself_are_not_reported(value: str) -> None:
    # Claude Code re-reads a block that fails strict YAML with such values quoted (the
    # `/agents` generator's own descriptions look like the second one).
    assert check(f"---\nname: my-agent\ndescription: {value}\n---\n# T\n") == []


def test_frontmatter_claude_code_cannot_read_is_reported_with_quote_fix() -> None:
    text = '---\nname: my-agent\ndescription: "Reviews" code and tests\n---\n# T\n'
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN203", 2)]
    f = found[0]
    assert f.severity == "warning"
    assert "`description`" in f.message and "skips the agent" in f.message
    fixed = apply(text, f.fix)
    assert check(fixed) == []


def test_continued_value_with_colon_is_reported_without_fix() -> None:
    text = "---\nname: a\ndescription: Use when\n  the user asks: review\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN203"] and found[0].fix is None


@pytest.mark.parametrize("tools", ['["Bash", "Read"]', "[Bash, 'Read', Grep]"])
def test_flow_list_tools_survive_the_lenient_reader(tools: str) -> None:
    # The description breaks strict YAML, so the lenient reader reads the file; the valid
    # flow list must stay a list of tools, not become `["Bash"` and `"Read"]`.
    text = f"---\nname: my-agent\ndescription: [--flag] TEXT runs it\ntools: {tools}\n---\n# T\n"
    found = check(text)
    assert found == [], [(f.code, f.message) for f in found]


def test_a_misspelt_tool_in_a_flow_list_is_found_at_its_column() -> None:
    text = '---\nname: a\ndescription: [x] y\ntools: ["Bash", "Reed"]\n---\n# T\n'
    (typo,) = [f for f in check(text) if "Reed" in f.message]
    line = text.splitlines()[typo.range.start_line]
    assert line[typo.range.start_char:typo.range.end_char].strip('"') == "Reed"


# 1215-Labs/claude-code-templates .claude/agents/code-reviewer.md (description shortened):
# not strict YAML (`Examples: ...` after a plain value), read by Claude Code's quoting retry,
# with a nested `related:` mapping Baton's line-by-line reader cannot follow.
CODE_REVIEWER = """---
name: code-reviewer
description: Use this agent to review code. Examples:\\n<example>\\nContext: x\\nuser: "Write it"
model: inherit
# Model rationale: Inherits parent model; code review benefits from same reasoning level
color: red
tools: ["Read", "Glob", "Grep", "Bash(*)"]
category: quality
related:
  agents: [test-automator, type-checker, codebase-analyst]
  commands: [/code-review, /ui-review]
  skills: [lsp-type-safety-check]
  workflows: [code-quality, feature-development]
---

You are a senior code reviewer.
"""

# 1215-Labs/claude-code-templates .claude/agents/test-automator.md (description shortened)
TEST_AUTOMATOR = """---
name: test-automator
model: sonnet
# Model rationale: Test design requires understanding code behavior and reasoning about edge cases
color: green
tools: ["Read", "Glob", "Grep", "Write", "Bash(*)"]
description: Use this agent to create test suites. Examples:\\n\\n<example>\\nContext: New code.
category: quality
related:
  agents: [code-reviewer, debugger]
  commands: [/code-review]
  workflows: [code-quality, feature-development, bug-investigation]
---
# T
"""


@pytest.mark.parametrize("text", [CODE_REVIEWER, TEST_AUTOMATOR])
def test_nested_mapping_claude_code_reads_is_not_invalid(text: str) -> None:
    # Strict YAML fails, Claude Code's retry reads the block (nested mapping included), so
    # neither BTN202 nor BTN203 applies, and the retry's values are the ones checked.
    from baton_lsp.parse.frontmatter import claude_code_error

    assert claude_code_error(text.split("---\n")[1]) is None
    assert check(text, "/ws/.claude/agents/code-reviewer.md") == []


def test_values_read_by_claude_codes_retry_are_checked_at_their_columns() -> None:
    text = CODE_REVIEWER.replace('"Glob"', '"Glb"').replace("model: inherit", "model: sonet-4")
    found = check(text, "/ws/.claude/agents/code-reviewer.md")
    assert sorted(f.code for f in found) == ["BTN206", "BTN207"]
    lines = text.splitlines()
    for f in found:
        assert lines[f.range.start_line][f.range.start_char:f.range.end_char].strip('"') in {
            "Glb", "sonet-4"}


def test_description_read_by_the_retry_keeps_its_original_columns() -> None:
    from baton_lsp.parse.frontmatter import parse_frontmatter

    lines = CODE_REVIEWER.split("\n")
    fm = parse_frontmatter(lines, lines.index("---", 1))
    assert fm.error is None and fm.lenient_reason is not None
    entry = fm.get("description")
    assert entry is not None and entry.value.startswith("Use this agent")
    rng = entry.value_range
    assert lines[rng.start_line][rng.start_char:rng.end_char] == entry.value
    related = fm.get("related")
    assert related is not None and related.value["agents"][0] == "test-automator"


def test_nested_mapping_claude_code_cannot_read_is_still_invalid() -> None:
    # Near miss: the same shape with a continued value holding `: ` fails strict YAML and
    # Claude Code's retry, and the nested mapping defeats the line reader too.
    text = CODE_REVIEWER.replace("model: inherit", "model: inherit\n  and more: text")
    from baton_lsp.parse.frontmatter import claude_code_error

    assert claude_code_error(text.split("---\n")[1]) is not None
    assert [f.code for f in check(text)] == ["BTN202"]


def test_strict_yaml_gets_no_lenient_hint() -> None:
    assert by_code(check(GOOD_OLD), "BTN203") == []


# -- BTN204 / BTN205 required keys ------------------------------------------------------


def test_missing_description_warns_with_fix() -> None:
    text = "---\nname: my-agent\n---\n\n# Report Writer\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN204", 0)]
    assert "`name`" in found[0].message
    fixed = apply(text, found[0].fix)
    assert fixed.startswith("---\nname: my-agent\ndescription: Report Writer\n---\n")
    assert check(fixed) == []


def test_empty_description_is_reported_on_its_key() -> None:
    text = "---\nname: my-agent\ndescription:\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN204", 2)]
    assert "empty" in found[0].message


def test_missing_description_says_claude_code_does_not_load_the_agent() -> None:
    # claude 2.1.331's agent loader returns 'Missing required "description" field in
    # frontmatter' and skips the file: the agent is not "never picked automatically", it does
    # not exist.
    found = check("---\nname: my-agent\ntools: Read, Grep\n---\n# Reviewer\n")
    assert [f.code for f in found] == ["BTN204"]
    assert "refuses to load the agent" in found[0].message
    assert "never picked" not in get_rule("BTN204").doc  # type: ignore[union-attr]
    empty = check("---\nname: my-agent\ndescription: \"\"\n---\n# T\n")
    assert [f.code for f in empty] == ["BTN204"]
    assert "refuses to load" in empty[0].message


def test_missing_name_in_newer_format_with_fix() -> None:
    text = "---\ndescription: Writes reports\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN205", 0)]
    assert "name: my-agent" in found[0].message
    fixed = apply(text, found[0].fix)
    assert fixed.startswith("---\nname: my-agent\ndescription: Writes reports\n---")
    assert check(fixed) == []


def test_tools_key_marks_the_newer_format() -> None:
    text = "---\ndescription: d\ntools: Read\nmodel: sonnet\n---\n# T\n"
    assert [f.code for f in check(text)] == ["BTN205"]


@pytest.mark.parametrize("text", [
    "---\nallowed-tools: Read\ndescription: d\n---\n# T\n",
    "---\ndescription: d\nmodel: haiku\n---\n# T\n",
])
def test_older_format_does_not_need_a_name(text: str) -> None:
    assert by_code(check(text), "BTN205") == []


def test_prompt_fragments_need_no_description_or_name() -> None:
    text = "---\nmodel: sonnet\n---\n# T\n"
    assert check(text, "/ws/.claude/agents/prompts/p.md") == []


# -- BTN206 tools -----------------------------------------------------------------------


def test_unknown_tool_reports_item_range_and_suggests_nearest() -> None:
    text = "---\nallowed-tools: Read, Wrte, Bash\ndescription: d\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN206", 1)]
    f = found[0]
    line = text.split("\n")[1]
    assert line[f.range.start_char:f.range.end_char] == "Wrte"
    assert "unknown tool `Wrte`" in f.message and "did you mean `Write`" in f.message
    fixed = apply(text, f.fix)
    assert "allowed-tools: Read, Write, Bash\n" in fixed
    assert check(fixed) == []


def test_removed_tool_in_an_agents_allowed_tools_names_the_launcher_cost() -> None:
    # Claude Code does not read an agent's `allowed-tools`; Baton passes it to --allowedTools.
    text = "---\nname: a\ndescription: d\nallowed-tools: Read, MultiEdit\n---\n# T\n"
    tools = "---\nname: a\ndescription: d\ntools: Read, MultiEdit\n---\n# T\n"
    [in_allowed] = check(text)
    [in_tools] = check(tools)
    assert "claude --allowedTools" in in_allowed.message
    assert "subagent's tools from `tools`" in in_allowed.message
    assert "does not get it" not in in_allowed.message
    assert "does not get it" in in_tools.message
    assert "--allowedTools" not in in_tools.message


def test_unknown_tool_in_block_list_and_case_typo() -> None:
    text = "---\nname: a\ndescription: d\ntools:\n  - read\n  - Grep\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN206", 4)]
    assert apply(text, found[0].fix).count("  - Read\n") == 1


def test_scoped_permission_with_unknown_tool_fixes_only_the_tool_part() -> None:
    text = "---\nallowed-tools: Bsh(git:*), Bash(npm test:*)\ndescription: d\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN206"]
    assert "scoped rule `Bsh(git:*)`" in found[0].message
    assert "allowed-tools: Bash(git:*), Bash(npm test:*)" in apply(text, found[0].fix)


def test_space_separated_tools_are_reported_with_comma_fix() -> None:
    text = "---\nallowed-tools: Read Write Grep\ndescription: d\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN206"]
    assert "comma" in found[0].message
    assert "allowed-tools: Read, Write, Grep\n" in apply(text, found[0].fix)


# 0x7067/ai-dev-pipeline .claude/agents/auditor.md (description shortened)
AUDITOR = """---
name: auditor
description: Use when the user asks for a project-wide audit, health check, or assessment.
tools: 'Read, Glob, Grep, Bash'
disallowedTools: 'Write, Edit'
maxTurns: 30
skills: 'fcis-architecture'
---
# Auditor
"""


@pytest.mark.parametrize("quoted", ["'Read, Glob, Grep, Bash'", '"Read, Glob, Grep, Bash"',
                                    "Read, Glob, Grep, Bash"])
def test_quoted_comma_separated_tools_are_split_like_unquoted(quoted: str) -> None:
    # YAML gives the same string for all three; Claude Code splits a string on commas.
    text = AUDITOR.replace("'Read, Glob, Grep, Bash'", quoted)
    assert by_code(check(text, "/ws/.claude/agents/auditor.md"), "BTN206") == []


def test_misspelt_tool_in_a_quoted_list_is_found_at_its_column() -> None:
    text = AUDITOR.replace("'Write, Edit'", "'Write, Edti'")
    (found,) = by_code(check(text, "/ws/.claude/agents/auditor.md"), "BTN206")
    line = text.splitlines()[found.range.start_line]
    assert line[found.range.start_char:found.range.end_char] == "Edti"
    assert "Edit" in found.message and "spaces" not in found.message


def test_quoted_space_separated_tools_are_still_reported() -> None:
    # Near miss: no commas, so Claude Code reads one tool named `Read Glob Grep`.
    text = AUDITOR.replace("'Read, Glob, Grep, Bash'", "'Read Glob Grep'")
    (found,) = by_code(check(text, "/ws/.claude/agents/auditor.md"), "BTN206")
    assert "separated by spaces" in found.message
    assert "tools: 'Read, Glob, Grep'\n" in apply(text, found.fix)


def test_several_tools_in_one_list_item_are_not_called_space_separated() -> None:
    text = '---\nname: a\ndescription: d\ntools: ["Read, Glob", Grep]\n---\n# T\n'
    (found,) = by_code(check(text), "BTN206")
    assert "one list item" in found.message and "spaces" not in found.message


@pytest.mark.parametrize("value", [
    "None", "mcp__github__create_issue", "mcp__memory", "Bash(git add:*)", "WebFetch",
    "AskUserQuestion, Skill, KillShell, Task, ListMcpResourcesTool, ReadMcpResourceTool",
    "Agent(reviewer), Task(reviewer), mcp__github__*, Monitor, CronCreate, EnterWorktree",
])
def test_accepted_tool_spellings(value: str) -> None:
    text = f"---\nallowed-tools: {value}\ndescription: d\n---\n# T\n"
    assert check(text) == []


def test_extra_tools_from_config_are_accepted() -> None:
    text = "---\nallowed-tools: Read, Frobnicate\ndescription: d\n---\n# T\n"
    assert [f.code for f in check(text)] == ["BTN206"]
    config = BatonConfig(extra_tools=["Frobnicate"])
    assert check(text, config=config) == []


def test_unknown_tool_far_from_any_known_has_no_fix() -> None:
    text = "---\nallowed-tools: Zzqx\ndescription: d\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN206"]
    assert found[0].fix is None and "extra-tools" in found[0].message


# -- BTN207 models ----------------------------------------------------------------------


@pytest.mark.parametrize("model", [
    "inherit", "haiku", "sonnet", "opus", "opusplan", "default", "sonnet[1m]",
    "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-1", "claude-opus-4-0",
    "claude-sonnet-4-5-20250929", "claude-3-5-haiku-latest", "claude-opus-4-1-20250805",
    "claude-3-7-sonnet-20250219", "claude-sonnet-4-20250514",
])
def test_known_models_are_accepted(model: str) -> None:
    text = f"---\nallowed-tools: Read\ndescription: d\nmodel: {model}\n---\n# T\n"
    assert check(text) == []


@pytest.mark.parametrize(("model", "full"), [
    ("haiku-4.5", "claude-haiku-4-5"), ("sonnet-4.5", "claude-sonnet-4-5"),
    ("opus-4.1", "claude-opus-4-1"), ("opus-4", "claude-opus-4-0"), ("sonnet-5", "claude-sonnet-5"),
])
def test_short_versioned_models_get_the_full_id(model: str, full: str) -> None:
    # Claude Code sends `sonnet-4.5` to the API verbatim, which rejects it.
    text = f"---\nallowed-tools: Read\ndescription: d\nmodel: {model}\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN207", 3)]
    assert f"expected the full id `{full}`" in found[0].message
    fixed = apply(text, found[0].fix)
    assert f"model: {full}\n" in fixed and check(fixed) == []


@pytest.mark.parametrize(("model", "hyphenated"), [
    ("claude-opus-4.6", "claude-opus-4-6"), ("claude-sonnet-4.5", "claude-sonnet-4-5"),
    ("claude-3.5-sonnet", "claude-3-5-sonnet"),
    ("claude-sonnet-4.5-20250929", "claude-sonnet-4-5-20250929"),
])
def test_dotted_full_ids_are_reported_with_the_hyphenated_id(model: str, hyphenated: str) -> None:
    # From a public tree: `model: claude-opus-4.6` in three agents. The claude 2.1.331 binary
    # has no dotted id and tells users to write the version with a hyphen.
    text = ("---\nname: app-release-manager\ndescription: Prepares releases\ntools: Read\n"
            f"model: {model}\n---\n# T\n")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN207", 4)]
    assert "with a hyphen" in found[0].message and f"expected `{hyphenated}`" in found[0].message
    fixed = apply(text, found[0].fix)
    assert f"model: {hyphenated}\n" in fixed and check(fixed) == []


def test_dotted_full_ids_are_mapped_at_launch() -> None:
    from baton_lsp.model.claude_models import claude_model_arg, is_claude_model

    assert not is_claude_model("claude-opus-4.6")
    assert claude_model_arg("claude-opus-4.6") == "claude-opus-4-6"
    assert claude_model_arg("claude-opus-4-6") == "claude-opus-4-6"


@pytest.mark.parametrize("model", ["sonet-4.5", "claude-sonnet", "Sonnet", "opus-x"])
def test_unknown_models_are_reported(model: str) -> None:
    text = f"---\nallowed-tools: Read\ndescription: d\nmodel: {model}\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN207", 3)]
    assert f"unknown model `{model}` in `model`" in found[0].message


def test_fallback_model_is_not_claude_codes_key_and_not_checked() -> None:
    # Claude Code never reads `fallback-model`; Baton maps the seeds' short form itself.
    text = "---\nallowed-tools: Read\ndescription: d\nfallback-model: sonnet-4.5\n---\n# T\n"
    assert check(text) == []


@pytest.mark.parametrize(("tool", "until"), [
    ("MultiEdit", "2.0.41"), ("LS", "2.0.41"), ("NotebookRead", "2.0.51"),
    ("SlashCommand", "2.1.3"), ("BashOutput", "2.0.64"), ("TaskOutput", "2.1.331"),
])
def test_removed_tools_are_reported_with_the_release(tool: str, until: str) -> None:
    text = f"---\nname: a\ndescription: d\ntools: Read, {tool}\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN206"]
    assert f"removed from Claude Code in {until}" in found[0].message


def test_disallowed_tools_are_checked_too() -> None:
    text = "---\nname: a\ndescription: d\ndisallowedTools: Wirte\n---\n# T\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN206"]
    assert "nothing is denied: the tool meant stays allowed" in found[0].message


def test_denying_a_removed_tool_is_not_reported() -> None:
    # zone1987/claude-a-dev-team: a read-only reviewer denies MultiEdit too, which is gone
    # from current releases but still denied on older ones.
    text = ("---\nname: a\ndescription: d\ntools: Read, Grep\n"
            "disallowedTools: Write, Edit, MultiEdit, NotebookEdit\n---\n# T\n")
    assert check(text) == []


def test_extra_models_from_config_are_accepted() -> None:
    text = "---\nallowed-tools: Read\ndescription: d\nmodel: local-llama\n---\n# T\n"
    assert check(text, config=BatonConfig(extra_models=["local-llama"])) == []


# -- BTN208 placeholders ----------------------------------------------------------------


def test_placeholders_in_an_agent_are_reported_per_occurrence() -> None:
    text = ("---\nname: my-agent\ndescription: d\n---\n# T\n\nYou coordinate {{DOMAIN}} work.\n"
            "```bash\necho {{IN_CODE}}\n```\nSee `{{IN_SPAN}}`.\n")
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN208", 6)]
    assert "`{{DOMAIN}}`" in found[0].message and "body" in found[0].message


def test_placeholder_in_agent_frontmatter_is_reported() -> None:
    text = "---\nname: my-agent\ndescription: d\nmodel: {{MODEL}}\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN208", 3)]
    assert "front matter" in found[0].message


def test_templates_may_keep_placeholders() -> None:
    text = "---\ndescription: {{D}}\nmodel: {{MODEL}}\n---\n# {{TYPE}} Agent\n"
    assert check(text, "/ws/.claude/agents/templates/t.md") == []


# -- BTN209 duplicate keys --------------------------------------------------------------


def test_duplicate_key_is_reported_with_removal_fix() -> None:
    text = "---\ndescription: d\nmodel: haiku\nname: my-agent\nmodel: opus\n---\n# T\n"
    found = check(text)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN209", 4)]
    assert "first on line 3" in found[0].message and "`opus`" in found[0].message
    fixed = apply(text, found[0].fix)
    assert fixed == "---\ndescription: d\nmodel: haiku\nname: my-agent\n---\n# T\n"
    assert check(fixed) == []


def test_duplicate_key_in_lenient_frontmatter_is_reported() -> None:
    # Regression: the lenient reader used to return repeated keys as ordinary entries.
    text = "---\nname: a\ndescription: [x] y\ndescription: z\n---\n# T\n"
    found = check(text)
    assert ("BTN209", 3) in [(f.code, f.range.start_line) for f in found]


# -- the real corpus --------------------------------------------------------------------


def _corpus_agents(corpus: Path) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for path in sorted(corpus.rglob(".claude/agents/**/*.md")):
        rel = path.relative_to(corpus).as_posix()
        out[rel] = check_text(Kind.AGENT, path.read_text(encoding="utf-8"), str(path))
    return out


def test_corpus_agents(corpus: Path) -> None:
    results = _corpus_agents(corpus)
    assert len(results) >= 15
    for rel, findings in results.items():
        assert not [f for f in findings if f.code == "BTN000"], rel
    # BTN207 on the short `sonnet-4.5` model form is checked on its own below.
    fm = {rel: sorted((f.code, f.range.start_line) for f in fs
                      if f.code in FM_CODES and f.code != "BTN207")
          for rel, fs in results.items()}
    # The stored debug-analyst.md and implementation-executor.md begin with `# Title`.
    # They are behavioural files read and injected by commands, which Claude Code itself
    # keeps as documentation (no `name`): not reported.
    assert fm[".claude/agents/debug-analyst.md"] == []
    assert fm[".claude/agents/implementation-executor.md"] == []
    # The coordinator template keeps `{{...}}` (also in its front matter): not a warning.
    assert fm[".claude/agents/templates/coordinator-template.md"] == []
    # Prompt fragments have no front matter and need none.
    assert fm[".claude/agents/prompts/evaluate-plan-phases.md"] == []
    # G3 agents (name + description) and older ones are clean but for their model names.
    assert fm[".claude/agents/planner-agent.md"] == []
    assert fm[".claude/agents/topic-naming-agent.md"] == []
    assert fm["other/benbrastmckie__ProofChecker/.claude/agents/plan-architect.md"] == []
    assert fm["other/benbrastmckie__ProofChecker/.claude/agents/research-coordinator.md"] == []
    # Exact for the trees this test was written against (the seeds' author and ProofChecker);
    # the corpus has since grown with other authors' trees, whose findings are judged file by
    # file in the diagnostics-precision work (BTN203 on the `/agents` generator's unquoted
    # descriptions, a git symlink stored as text, a `[Agent Name]` template).
    known = (".claude/", "other/benbrastmckie__ProofChecker/")
    flagged = {rel for rel, codes in fm.items() if codes and rel.startswith(known)}
    assert flagged == set()
    # `haiku-4.5` / `sonnet-4.5` / `opus-4.1` reach the API verbatim and are rejected there:
    # each is reported with the full id as its fix, and nothing else is.
    models = {rel: [(f.range.start_line, f.fix.edits[0].new_text if f.fix else None)
                    for f in fs if f.code == "BTN207"]
              for rel, fs in results.items() if rel.startswith(known)}
    assert {rel for rel, found in models.items() if found} == {
        ".claude/agents/implementer-coordinator.md", ".claude/agents/research-specialist.md",
        ".claude/agents/research-sub-supervisor.md",
        ".claude/agents/topic-naming-agent.md",
        "other/benbrastmckie__ProofChecker/.claude/agents/plan-architect.md",
        "other/benbrastmckie__ProofChecker/.claude/agents/research-coordinator.md"}
    # Only `model`: `fallback-model` is the seeds' key, which Claude Code never reads (the
    # template's only finding was on it).
    assert models[".claude/agents/topic-naming-agent.md"] == [(3, "claude-haiku-4-5")]
    assert all(fix and fix.startswith("claude-") for found in models.values()
               for _, fix in found)


def test_a_reference_sheet_of_placeholder_keys_is_not_an_agent() -> None:
    # 1215-Labs/claude-code-templates: `.claude/agents/_Agent.metadata.reference.md`.
    text = ("name: [Must be unique, descriptive]\ndescription: [2-3 sentences on what agent "
            "does]\nmodel: [sonnet or haiku, sonnet recommended]\n")
    assert [f for f in check_text(Kind.AGENT, text, "/ws/.claude/agents/_ref.md")
            if f.code == "BTN201"] == []
    real = "name: reviewer\ndescription: Reviews diffs\n\nYou review code.\n"
    assert [f.code for f in check_text(Kind.AGENT, real, "/ws/.claude/agents/reviewer.md")
            if f.code == "BTN201"] == ["BTN201"]


@pytest.mark.parametrize("model", ["glm-4.7", "gpt-4o", "deepseek-chat", "qwen3-coder"])
def test_other_providers_models_are_left_alone(model: str) -> None:
    # 360AYA25/ClaudeN8N routes Claude Code to Z.AI's GLM-4.7 (ANTHROPIC_BASE_URL).
    text = f"---\nallowed-tools: Read\ndescription: d\nmodel: {model}\n---\n# T\n"
    assert check(text) == []


def test_an_agent_carrying_a_handlebars_template_keeps_its_placeholders() -> None:
    # Beaulewis1977/master-workflow doc-generator-agent.md: an API-doc template to fill.
    text = ("---\nname: doc-generator\ndescription: Writes docs\n---\n\n"
            "{{LICENSE_TYPE}} - see LICENSE.\n\n{{#each responses}}\n"
            "#### {{statusCode}} {{statusText}}\n{{/each}}\n")
    assert [f for f in check(text, "/ws/.claude/agents/doc-generator.md")
            if f.code == "BTN208"] == []
    left = "---\nname: a\ndescription: d\n---\n\nYou work on {{PROJECT_NAME}}.\n"
    assert [f.code for f in check(left, "/ws/.claude/agents/a.md")] == ["BTN208"]


def test_prose_about_the_placeholder_syntax_is_not_a_leftover() -> None:
    # Roberdan/MyConvergio po-prompt-optimizer.md.
    text = ("---\nname: po\ndescription: Optimises prompts\n---\n\n"
            "Use {{variable}} syntax for scalable, reusable prompt templates.\n")
    assert [f for f in check(text, "/ws/.claude/agents/po.md") if f.code == "BTN208"] == []


# -- BTN240 allowed-tools in a subagent -------------------------------------------------

RESEARCHER = """---
name: researcher
description: Deep technical research on infrastructure, AI systems, hardware, and software
model: opus
background: true
allowed-tools:
  - Read
  - Grep
  - Glob
  - WebFetch
---

You are the research agent.
"""
"""From a public tree: a read-only research agent restricted with `allowed-tools`."""


def test_allowed_tools_in_a_subagent_is_reported_with_a_rename_fix() -> None:
    found = [f for f in check_text(Kind.AGENT, RESEARCHER, AGENT_PATH) if f.code == "BTN240"]
    assert [(f.code, f.range.start_line) for f in found] == [("BTN240", 5)]
    assert "gets every tool" in found[0].message and "`tools:`" in found[0].message
    assert found[0].fix is not None and found[0].fix.safe
    fixed = apply(RESEARCHER, found[0].fix)
    assert "\ntools:\n  - Read\n" in fixed and "allowed-tools" not in fixed
    assert [f for f in check_text(Kind.AGENT, fixed, AGENT_PATH) if f.code == "BTN240"] == []


def test_allowed_tools_with_scoped_rules_gets_a_fix_to_review() -> None:
    # From a public tree: `allowed-tools: Read, Grep, Glob, Bash(ssh *), Bash(cat *)`.
    text = ("---\nname: node-inspector\ndescription: Inspects nodes over SSH\n"
            "allowed-tools: Read, Grep, Glob, Bash(ssh *), Bash(cat *)\n---\n# T\n")
    found = [f for f in check_text(Kind.AGENT, text, AGENT_PATH) if f.code == "BTN240"]
    assert len(found) == 1 and found[0].fix is not None and not found[0].fix.safe


def test_allowed_tools_not_a_tool_list_gets_no_fix() -> None:
    text = ("---\nname: a\ndescription: d\nallowed-tools: everything you need\n---\n# T\n")
    found = [f for f in check_text(Kind.AGENT, text, AGENT_PATH) if f.code == "BTN240"]
    assert len(found) == 1 and found[0].fix is None


@pytest.mark.parametrize("text", [
    # The seeds' older format: no `name`, so Claude Code does not load it as a subagent.
    "---\nallowed-tools: Read, Grep\ndescription: Researches a topic\nmodel: sonnet\n---\n# T\n",
    # `tools` present: Claude Code restricts by it; `allowed-tools` is for a launcher.
    "---\nname: a\ndescription: d\ntools: Read\nallowed-tools: Read\n---\n# T\n",
    # No description: Claude Code does not load it (BTN204 says so).
    "---\nname: a\nallowed-tools: Read\n---\n# T\n",
])
def test_allowed_tools_outside_a_loaded_subagent_is_not_reported(text: str) -> None:
    assert [f for f in check_text(Kind.AGENT, text, AGENT_PATH) if f.code == "BTN240"] == []


@pytest.mark.parametrize("key", ["allowed_tools", "allowedTools"])
def test_other_spellings_of_allowed_tools_are_reported_and_renamed(key: str) -> None:
    # claude 2.1.331 compares keys without `-`, `_` and case: all of them hint at `tools`.
    text = f"---\nname: a\ndescription: d\n{key}: Read, Grep\n---\n# T\n"
    found = [f for f in check_text(Kind.AGENT, text, AGENT_PATH) if f.code == "BTN240"]
    assert len(found) == 1 and f"`{key}`" in found[0].message
    assert "\ntools: Read, Grep\n" in apply(text, found[0].fix)

def test_agents_of_the_projects_own_orchestrator_are_not_subagents(tmp_path: Path) -> None:
    """issue 34: a tree whose orchestrator reads its agent files as prompts; 10 of its 12
    agents have no front matter at all, and the other two carry only the keys the
    orchestrator reads. They are not Claude Code subagents: no description is missing."""
    from baton_lsp.rules.engine import check_file
    from baton_lsp.workspace.config import load_config
    from baton_lsp.workspace.index import WorkspaceIndex

    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    roles = ["architect", "backend", "frontend", "tester", "reviewer", "docs", "security",
             "devops", "data", "ux"]
    for role in roles:
        (agents / f"{role}.md").write_text(
            f"# {role.title()} Agent\n\nYou are the {role} of the team. Read the task from "
            "the orchestrator's message and write your result to the shared notes file.\n",
            encoding="utf-8")
    for role in ("orchestrator", "planner"):
        (agents / f"{role}.md").write_text(
            f"---\nmodel: opus\ntools: Read, Write, Bash\n---\n# {role.title()}\n\n"
            "Split the request into tasks for the other agents.\n", encoding="utf-8")
    (tmp_path / "orchestrate.py").write_text(
        'PROMPTS = ".claude/agents"  # each role file is sent as the system prompt\n',
        encoding="utf-8")

    def btn204(code: str = "BTN204") -> list[str]:
        index = WorkspaceIndex(tmp_path, load_config(tmp_path))
        return [p.name for p in sorted(agents.glob("*.md"))
                for f in check_file(index, p) if f.code == code]

    assert btn204() == [] and btn204("BTN205") == []
    for role in roles[:6]:  # most agents are subagents now: the two lack a description
        (agents / f"{role}.md").write_text(
            f"---\nname: {role}\ndescription: The {role} of the team\n---\n# {role}\n",
            encoding="utf-8")
    assert btn204() == ["orchestrator.md", "planner.md"] == btn204("BTN205")


# -- BTN242 MCP servers where Claude Code does not read them --------------------------------

# A public tree's Copilot-format test planner (its `mcp-servers` block), as a Claude subagent.
REACT_PLANNER = """---
name: react-test-planner
description: Plans React tests with Jest and React Testing Library
model: sonnet
mcp-servers:
  react-test:
    type: stdio
    command: npx
    args:
      - react-test
      - run-mcp-server
    tools:
      - "*"
---

You are an expert React test planner.
"""


def _btn242(text: str) -> list[Finding]:
    return [f for f in check_text(Kind.AGENT, text, AGENT_PATH) if f.code == "BTN242"]


def test_btn242_inline_server_under_a_key_claude_code_ignores() -> None:
    [f] = _btn242(REACT_PLANNER)
    assert f.range.start_line == 4 and "`react-test`" in f.message and "`mcpServers`" in f.message
    assert f.fix is None  # a mapping must become a list: no blind rename
    as_list = REACT_PLANNER.replace("  react-test:\n    type", "  - react-test:\n      type")
    as_list = as_list.replace("\n    command", "\n      command").replace(
        "\n    args", "\n      args").replace("\n      - react", "\n        - react").replace(
        "\n      - run", "\n        - run").replace("\n    tools:\n      - ",
                                                    "\n      tools:\n        - ")
    [g] = _btn242(as_list)
    assert g.fix is not None
    assert _btn242(apply(as_list, g.fix)) == []


def test_btn242_mcp_servers_as_a_mapping_is_skipped_by_claude_code() -> None:
    [f] = _btn242(REACT_PLANNER.replace("mcp-servers:", "mcpServers:"))
    assert "only as a list" in f.message and f.fix is None


def test_btn242_server_names_and_empty_lists_are_left_alone() -> None:
    # a public tree's agents: `mcp-servers: []` and a list of configured servers' names
    assert _btn242(REACT_PLANNER.split("mcp-servers:")[0] + "mcp-servers: []\n---\n") == []
    names = REACT_PLANNER.split("mcp-servers:")[0] + "mcp-servers:\n  - sec-edgar\n---\n"
    assert _btn242(names) == []


def test_btn242_claude_code_names_the_key_it_ignores(tmp_path: Path) -> None:
    """The pinned claude's debug log says it does not apply `mcp-servers`; BTN242's claim."""
    import os
    import subprocess

    from tests.agents.clis import cli_path
    from tests.agents.fake_anthropic import FakeAnthropic, reply_text

    ws, home = tmp_path / "ws", tmp_path / "home"
    (ws / ".claude" / "agents").mkdir(parents=True)
    home.mkdir()
    (ws / ".claude/agents/react-test-planner.md").write_text(REACT_PLANNER, encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=ws, check=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
           "HOME": str(home), "TMPDIR": str(tmp_path), "ANTHROPIC_API_KEY": "test-key",
           "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    api = FakeAnthropic(reply_text("ok"))
    with api:
        proc = subprocess.run([cli_path("claude"), "-p", "hi", "--debug"], cwd=ws,
                              capture_output=True, text=True, timeout=300, check=False,
                              env={**env, "ANTHROPIC_BASE_URL": api.url})
    assert proc.returncode == 0, proc.stderr
    logs = "".join(p.read_text(encoding="utf-8", errors="replace")
                   for p in (home / ".claude" / "debug").glob("*.txt"))
    assert 'does not recognize or apply: "mcp-servers" (did you mean "mcpServers"?)' in logs

"""BTN301-BTN306: command front matter."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind, Severity
from baton_lsp.model.config import BatonConfig
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix as apply

CMD = "/ws/.claude/commands/deploy.md"
CODES = {"BTN301", "BTN302", "BTN303", "BTN304", "BTN305", "BTN306", "BTN307", "BTN308"}


def check(text: str, config: BatonConfig | None = None) -> list[Finding]:
    return [f for f in check_text(Kind.COMMAND, text, CMD, config=config)
            if f.code in CODES | {"BTN000"}]


def codes(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.code, f.range.start_line) for f in findings]




def test_rules_are_registered_with_docs() -> None:
    for code in sorted(CODES):
        r = get_rule(code)
        assert r is not None, code
        assert Kind.COMMAND in r.kinds
        assert "\n\n" in r.doc and "Fix" in r.doc
    # Claude Code's own format rules cover skills too; the seeds' keys only commands.
    for code in ("BTN301", "BTN302", "BTN303", "BTN306", "BTN307", "BTN308"):
        assert Kind.SKILL in get_rule(code).kinds  # type: ignore[union-attr]
    assert get_rule("BTN304").kinds == frozenset({Kind.COMMAND})  # type: ignore[union-attr]
    assert get_rule("BTN305").cross_file  # type: ignore[union-attr]
    assert get_rule("BTN303").severity is Severity.ERROR  # type: ignore[union-attr]
    assert get_rule("BTN304").severity is Severity.INFO  # type: ignore[union-attr]
    assert get_rule("BTN302").severity is Severity.INFO  # type: ignore[union-attr]


def test_all_known_keys_are_accepted() -> None:
    text = (
        "---\n"
        "allowed-tools: Task, Bash, Read\n"
        "argument-hint: [--command CMD] [--since TIME]\n"
        "description: Deploy things\n"
        "command-type: workflow\n"
        "dependent-commands: research, plan\n"
        "parent-commands: implement\n"
        "library-requirements:\n"
        "  - workflow-state-machine.sh: \">=2.0.0\"\n"
        "documentation: See the guide\n"
        "model: sonnet\n"
        "disable-model-invocation: false\n"
        "name: deploy\n"
        "---\n\n# /deploy\n"
    )
    assert check(text) == []


def test_unknown_key_with_suggestion_and_fix() -> None:
    text = "---\ndescription: d\nallowed_tools: Read, Bash\n---\n\n# /deploy\n"
    found = check(text)
    assert codes(found) == [("BTN301", 2)]
    f = found[0]
    assert (f.range.start_char, f.range.end_char) == (0, 13)
    assert "`allowed_tools` looks like a misspelling of `allowed-tools`" in f.message
    assert f.fix is not None
    fixed = apply(text, f.fix)
    assert "allowed-tools: Read, Bash" in fixed
    assert check(fixed) == []


def test_a_projects_own_keys_are_its_metadata_not_mistakes() -> None:
    # Real trees keep keys their own scripts read (loa's `cost-profile`, 1215-Labs' `owner`).
    assert check("---\ndescription: d\nowner: me\ncost-profile: heavy\n---\n") == []
    # ... and keys the claude binary recognises though the docs do not list them.
    assert check("---\ndescription: d\nhide-from-slash-command-tool: \"true\"\n---\n") == []


def test_extra_frontmatter_keys_from_config() -> None:
    text = "---\ndescription: d\nowner: me\n---\n"
    assert check(text, BatonConfig(extra_frontmatter_keys=["owner"])) == []


def test_missing_description_is_fine_claude_code_uses_the_first_line() -> None:
    # Slash-command docs: `description` defaults to "the first line from the prompt".
    assert check("---\nallowed-tools: Read\n---\n\n# /deploy Command\n") == []
    assert check("# /refresh Command\n\nClean things up.\n") == []


def test_empty_description_key_fix_uses_the_title() -> None:
    text = "---\ndescription:\nallowed-tools: Read\n---\n# /deploy Command\n"
    found = check(text)
    assert codes(found) == [("BTN302", 1)]
    fixed = apply(text, found[0].fix)  # type: ignore[arg-type]
    assert 'description: "deploy Command"' in fixed and check(fixed) == []


def test_empty_description() -> None:
    found = check('---\ndescription: ""\n---\n')
    assert codes(found) == [("BTN302", 1)]
    assert "empty" in found[0].message


def test_invalid_yaml_is_an_error_and_silences_key_rules() -> None:
    text = "---\ndescription: d\nthis is not yaml: [\nbogus_key: 1\n---\n"
    found = check(text)
    assert [f.code for f in found] == ["BTN303"]
    assert found[0].severity is Severity.ERROR
    assert 1 <= found[0].range.start_line <= 3
    assert "not valid YAML" in found[0].message


def test_lenient_yaml_is_not_invalid() -> None:
    # Strict YAML rejects this argument-hint; Claude Code reads it as a flat string.
    text = "---\ndescription: d\nargument-hint: [--flag] TEXT\n---\n"
    assert check(text) == []


@pytest.mark.parametrize("value", ["primary", "utility", "workflow", "dependent", "example"])
def test_known_command_types(value: str) -> None:
    assert check(f"---\ndescription: d\ncommand-type: {value}\n---\n") == []


def test_unknown_command_type_with_fix() -> None:
    text = "---\ndescription: d\ncommand-type: primery\n---\n"
    found = check(text)
    assert codes(found) == [("BTN304", 2)]
    f = found[0]
    assert f.severity is Severity.INFO
    assert (f.range.start_char, f.range.end_char) == (14, 21)
    assert "`primery`" in f.message and "did you mean `primary`" in f.message
    assert check(apply(text, f.fix)) == []  # type: ignore[arg-type]


def test_unknown_command_type_without_fix() -> None:
    found = check("---\ndescription: d\ncommand-type: orchestrator\n---\n")
    assert codes(found) == [("BTN304", 2)] and found[0].fix is None


def test_duplicate_key() -> None:
    found = check("---\ndescription: d\nmodel: a\nmodel: b\n---\n")
    assert codes(found) == [("BTN306", 3)]
    assert found[0].related[0].range.start_line == 2


# -- BTN305: dependent-agents (cross-file) ------------------------------------------------

AGENT = "---\ndescription: x\n---\n\n# Agent\n"


@pytest.fixture
def ws(make_workspace: Callable[[dict[str, str]], Path]) -> Callable[[str], tuple[Path, Path]]:
    def build(command: str) -> tuple[Path, Path]:
        root = make_workspace({
            ".claude/agents/research-specialist.md": AGENT,
            ".claude/agents/plan-architect.md": AGENT,
            ".claude/commands/deploy.md": command,
        })
        return root, root / ".claude/commands/deploy.md"
    return build


def dep_findings(root: Path, path: Path) -> list[Finding]:
    return [f for f in check_file(WorkspaceIndex(root), path) if f.code in {"BTN305", "BTN000"}]


def test_dependent_agents_yaml_list(ws: Callable[[str], tuple[Path, Path]]) -> None:
    text = ("---\ndescription: d\ndependent-agents:\n  - research-specialist\n"
            "  - research_specialist\n  - ghost-agent\n---\n")
    root, path = ws(text)
    found = dep_findings(root, path)
    assert codes(found) == [("BTN305", 4), ("BTN305", 5)]
    typo, ghost = found
    assert typo.severity is Severity.ERROR
    assert (typo.range.start_char, typo.range.end_char) == (4, 23)
    assert "did you mean `research-specialist`" in typo.message
    assert ghost.fix is None and "`ghost-agent`" in ghost.message
    assert ".claude/agents/ghost-agent.md" in ghost.message
    fixed = apply(text, typo.fix)  # type: ignore[arg-type]
    path.write_text(fixed)
    assert codes(dep_findings(root, path)) == [("BTN305", 5)]


def test_dependent_agents_comma_string(ws: Callable[[str], tuple[Path, Path]]) -> None:
    root, path = ws("---\ndescription: d\ndependent-agents: plan-architect, debug-analyst\n---\n")
    found = dep_findings(root, path)
    assert codes(found) == [("BTN305", 2)]
    assert (found[0].range.start_char, found[0].range.end_char) == (34, 47)
    assert "`debug-analyst`" in found[0].message


def test_dependent_agents_single_string_and_md_suffix(
        ws: Callable[[str], tuple[Path, Path]]) -> None:
    root, path = ws("---\ndescription: d\ndependent-agents: plan-architect.md\n---\n")
    assert dep_findings(root, path) == []


def test_dependent_agent_added_later_clears_finding(
        ws: Callable[[str], tuple[Path, Path]]) -> None:
    root, path = ws("---\ndescription: d\ndependent-agents:\n  - debug-analyst\n---\n")
    index = WorkspaceIndex(root)
    assert [f.code for f in check_file(index, path) if f.code == "BTN305"] == ["BTN305"]
    new_agent = root / ".claude/agents/debug-analyst.md"
    new_agent.write_text(AGENT)
    assert str(path) in index.changed(new_agent, created_or_deleted=True)
    assert [f.code for f in check_file(index, path) if f.code == "BTN305"] == []


def test_dependent_agents_not_checked_without_workspace() -> None:
    assert check("---\ndescription: d\ndependent-agents:\n  - ghost\n---\n") == []


def test_dependent_agents_not_checked_without_agents_dir(
        make_workspace: Callable[[dict[str, str]], Path]) -> None:
    root = make_workspace({".claude/commands/deploy.md":
                           "---\ndescription: d\ndependent-agents:\n  - ghost\n---\n"})
    assert dep_findings(root, root / ".claude/commands/deploy.md") == []


# -- BTN301 keys from the docs ------------------------------------------------------------


@pytest.mark.parametrize("key", ["args", "thinking", "allowed_tools", "forbidden_tools"])
def test_keys_claude_code_does_not_read_are_reported(key: str) -> None:
    found = check(f"---\ndescription: d\n{key}: x\n---\n")
    assert codes(found) == [("BTN301", 2)]
    if key == "allowed_tools":
        assert "misspelling of `allowed-tools`" in found[0].message
    else:
        assert f"Claude Code does not read `{key}`" in found[0].message


USER_ONLY_SKILL = (
    "---\nname: skill-tag\n"
    "description: Create and push semantic version tags for CI/CD deployment. User-only "
    "command - agents cannot invoke.\n"
    "allowed-tools: Bash, AskUserQuestion, Read\nuser-only: true\n---\n\n"
    "# Tag Skill (Direct Execution)\n\nThis command is **user-only** - agents MUST NOT "
    "invoke it.\n")
"""From a public tree: a skill that means to keep the model from invoking it."""


def test_user_only_is_reported_with_the_real_key_as_fix() -> None:
    path = "/ws/.claude/skills/skill-tag/SKILL.md"
    found = [f for f in check_text(Kind.SKILL, USER_ONLY_SKILL, path) if f.code == "BTN301"]
    assert codes(found) == [("BTN301", 4)]
    assert "Claude Code does not read `user-only`" in found[0].message
    assert "disable-model-invocation: true" in found[0].message
    assert found[0].fix is not None
    assert "disable-model-invocation: true\n" in apply(USER_ONLY_SKILL, found[0].fix)


def test_user_only_false_or_beside_the_real_key_has_no_rename() -> None:
    text = "---\ndescription: d\nuser-only: false\n---\n"
    found = check(text)
    assert codes(found) == [("BTN301", 2)] and found[0].fix is None
    text = "---\ndescription: d\ndisable-model-invocation: true\nuser-only: true\n---\n"
    found = check(text)
    assert codes(found) == [("BTN301", 3)] and found[0].fix is None


ARG_SCHEMA = ("args:\n  - name: topic\n    description: \"Design topic\"\n    required: true\n"
              "  - name: --dry-run\n    description: \"Skip ticket creation\"\n")


def test_a_projects_own_argument_schema_is_left_alone() -> None:
    # OmniNode-ai/omniclaude's skills: `args` records read by the project's own tooling.
    text = f"---\ndescription: d\nmode: full\n{ARG_SCHEMA}---\n# Pipeline\nRun on the topic.\n"
    assert check(text) == []


def test_an_argument_schema_the_body_expects_filled_in_is_reported() -> None:
    # mikkelkrogsholm/wp-plugins: Claude Code never fills in `{{plugin-slug}}` from `args`.
    text = ("---\ndescription: d\nargs:\n  - name: plugin-slug\n    hint: the plugin\n---\n"
            "Test the {{plugin-slug}} WordPress plugin.\n")
    found = check(text)
    assert [f.code for f in found if f.code == "BTN301"] == ["BTN301"]
    assert "Claude Code does not read `args`" in found[0].message


def test_documented_skill_keys_are_accepted_on_commands() -> None:
    text = ("---\ndescription: d\nwhen_to_use: w\narguments: [issue, branch]\n"
            "user-invocable: false\ncontext: fork\nagent: Explore\neffort: high\n"
            "disallowed-tools: AskUserQuestion\npaths: src/**\nshell: bash\n---\n")
    assert check(text) == []


# -- BTN307 inline bash ----------------------------------------------------------------------


def test_inline_bash_without_bash_rule_is_reported() -> None:
    text = "---\ndescription: d\nallowed-tools: Read\n---\nOut: !`npm test`\n"
    found = check(text)
    assert codes(found) == [("BTN307", 4)]
    assert "Bash(npm:*)" in found[0].message


@pytest.mark.parametrize("text", [
    "---\ndescription: d\n---\nOut: !`npm test`\n",  # no allowed-tools: settings decide
    "---\ndescription: d\nallowed-tools: Bash(npm test:*)\n---\nOut: !`npm test`\n",
    "---\ndescription: d\nallowed-tools: Read\n---\nNow: !`git status --short`\n",
    "---\ndescription: d\nallowed-tools: Read\n---\nKEY=!`npm test`\n",  # not after space
    "---\ndescription: d\nallowed-tools: Read\n---\n```\nOut: !`npm test`\n```\n",
])
def test_inline_bash_not_reported(text: str) -> None:
    assert [f for f in check(text) if f.code == "BTN307"] == []


# -- BTN308 unexpanded template syntax -------------------------------------------------------


@pytest.mark.parametrize(("body", "wanted"), [
    ("Fix {{ARGUMENTS}} now", "$ARGUMENTS"), ("Fix ${ARGUMENTS} now", "$ARGUMENTS"),
    ("Fix $ARGS now", "$ARGUMENTS"), ("Fix issue ${1}", "$1"), ("Use {{ input }}", "$ARGUMENTS"),
])
def test_unexpanded_template_is_reported_with_fix(body: str, wanted: str) -> None:
    text = f"---\ndescription: d\n---\n{body}\n"
    found = check(text)
    assert codes(found) == [("BTN308", 3)]
    fixed = apply(text, found[0].fix)  # type: ignore[arg-type]
    assert wanted in fixed and check(fixed) == []


@pytest.mark.parametrize("body", [
    "Fix $ARGUMENTS and $ARGUMENTS[0], $1, ${CLAUDE_SKILL_DIR}, ${CLAUDE_PROJECT_DIR}",
    "Run `echo ${1}` in bash", "```bash\nX=${1}\nY={{ARGS}}\n```", "Costs \\$ARGS",
    "Fill {{TOPIC}} from the plan",  # the model fills non-argument placeholders itself
])
def test_supported_or_code_syntax_is_not_reported(body: str) -> None:
    assert check(f"---\ndescription: d\n---\n{body}\n") == []


def test_nested_fences_are_paired_as_commonmark_pairs_them() -> None:
    """issue 34: a command documenting a command template in a ````markdown block holding
    ```bash blocks; the old pairing toggled on every ``` line, so the ${ARGUMENTS} of some
    inner blocks were read as prose (3 of the file's identical ones reported)."""
    block = ("```bash\n"
             'TOPIC="${ARGUMENTS}"\n'
             'echo "Starting workflow for: ${ARGUMENTS}"\n'
             "```\n")
    template = ("````markdown\n---\ndescription: Research a topic\n---\n"
                "# /research-topic\n\n## Step 1: Setup\n\n" + block
                + "\n## Step 2: Report\n\n" + block + "````\n")
    text = ("---\ndescription: Create a new workflow command from the template\n---\n"
            "# /create-command\n\nCopy this template and replace the placeholders:\n\n"
            + template + "\n~~~~text\n```\n${ARGUMENTS}\n~~~~\n\n"
            "Then run it with ${ARGUMENTS} as its topic.\n")
    found = check(text)
    assert codes(found) == [("BTN308", text.splitlines().index(
        "Then run it with ${ARGUMENTS} as its topic."))]


def test_declared_argument_names_are_not_reported() -> None:
    assert check("---\ndescription: d\narguments: [args]\n---\nUse $args\n") == []


@pytest.mark.parametrize("key", ["mode", "command_type", "agent_type", "owner"])
def test_short_or_own_keys_are_not_called_misspellings(key: str) -> None:
    # 0xHoneyJar/loa's scripts read `mode` and `command_type` from its commands.
    assert check(f"---\ndescription: d\n{key}: x\n---\n") == []


@pytest.mark.parametrize(("key", "meant"), [("argumentHint", "argument-hint"),
                                            ("descripton", "description"),
                                            ("disable_model_invocation",
                                             "disable-model-invocation")])
def test_misspellings_name_the_key_meant(key: str, meant: str) -> None:
    (found,) = check(f"---\ndescription: d\n{key}: x\n---\n")
    assert f"misspelling of `{meant}`" in found.message


def test_btn308_reads_only_lines_that_may_hold_a_template() -> None:
    """BTN308's patterns need a `$` or `{{`: a prose line with neither is not read (its
    code spans were blanked for every line of every command and skill). Counted with
    `sys.setprofile`; the usual finding is still reported."""
    import sys
    from typing import Any

    from baton_lsp.parse import markdown
    from baton_lsp.rules import command_frontmatter

    own = command_frontmatter.unexpanded_template.__code__
    blanked: list[int] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is markdown.blank_code_spans.__code__ \
                and frame.f_back is not None and frame.f_back.f_code is own:
            blanked.append(1)

    text = ("---\ndescription: d\n---\n# /fix 5e0a\n\nRead `notes.md` first.\n"
            "Then plan the change.\nFix issue {{ARGUMENTS}} now.\n")
    sys.setprofile(profile)
    try:
        found = [f for f in check_text(Kind.COMMAND, text, CMD) if f.code == "BTN308"]
    finally:
        sys.setprofile(None)
    assert [f.range.start_line for f in found] == [7]
    assert len(blanked) == 1

"""BTN310-BTN314: Task blocks and behavioural injection (commands and coordinator agents)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from baton_lsp.model.agent import CommandFile
from baton_lsp.model.base import Finding, Kind, Severity
from baton_lsp.parse import parse_text
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix as apply

CMD = "/ws/.claude/commands/deploy.md"
COORD = "/ws/.claude/agents/coordinator.md"
CODES = {"BTN310", "BTN311", "BTN312", "BTN313", "BTN314"}
LOCAL = {"BTN310", "BTN311", "BTN312"}
"""Rules that need no workspace (the cross-file ones are checked through WorkspaceIndex)."""
HEAD = "---\ndescription: d\n---\n\n# /deploy\n\n"  # 6 lines: the body starts on line 6


def check(text: str, kind: Kind = Kind.COMMAND, path: str = CMD) -> list[Finding]:
    return [f for f in check_text(kind, text, path) if f.code in LOCAL | {"BTN000"}]


def codes(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.code, f.range.start_line) for f in findings]




GOOD_TASK = (
    "Task {\n"                                              # 6
    '  subagent_type: "general-purpose"\n'                  # 7
    '  description: "Research things"\n'                    # 8
    '  prompt: "\n'                                         # 9
    "    Read and follow ALL behavioral guidelines from:\n"  # 10
    "    ${CLAUDE_PROJECT_DIR}/.claude/agents/research-specialist.md\n"  # 11
    "\n"
    "    Return: REPORT_CREATED: <path>\n"                  # 13
    "    On failure: TASK_ERROR: <type> - <message>\n"      # 14
    '  "\n'                                                 # 15
    "}\n"                                                   # 16
)


def test_rules_are_registered() -> None:
    for code in sorted(CODES):
        r = get_rule(code)
        assert r is not None, code
        assert r.kinds == frozenset({Kind.COMMAND, Kind.AGENT})
        assert "\n\n" in r.doc
    assert get_rule("BTN313").cross_file and get_rule("BTN314").cross_file  # type: ignore[union-attr]
    assert get_rule("BTN314").severity is Severity.WARNING  # type: ignore[union-attr]


def test_complete_block_is_clean() -> None:
    assert check(HEAD + GOOD_TASK) == []


@pytest.mark.parametrize("missing", ["description", "prompt"])
def test_missing_field(missing: str) -> None:
    lines = GOOD_TASK.split("\n")
    if missing == "description":
        lines.pop(2)
    else:
        lines = lines[:3] + lines[10:]  # drop the whole prompt
    found = check(HEAD + "\n".join(lines))
    assert codes(found) == [("BTN310", 6)]
    f = found[0]
    assert f.severity is Severity.ERROR
    assert f"`{missing}`" in f.message and "found: subagent_type" in f.message
    assert (f.range.start_char, f.range.end_char) == (0, 6)
    assert f.fix is None


def test_missing_subagent_type_fix_inserts_general_purpose() -> None:
    text = HEAD + GOOD_TASK.replace('  subagent_type: "general-purpose"\n', "")
    found = check(text)
    assert codes(found) == [("BTN310", 6)]
    fixed = apply(text, found[0].fix)  # type: ignore[arg-type]
    assert fixed.split("\n")[7] == '  subagent_type: "general-purpose"'
    assert check(fixed) == []


def test_unclosed_block_before_heading() -> None:
    text = HEAD + GOOD_TASK.replace("}\n", "") + "\n## Next part\n"
    found = check(text)
    assert codes(found) == [("BTN311", 6)]
    assert "never closed" in found[0].message


def test_unbalanced_quote_reports_the_prompt_line_only() -> None:
    text = HEAD + GOOD_TASK.replace('  "\n}', "}")  # the closing quote line is gone
    found = check(text)
    assert codes(found) == [("BTN312", 9)]
    assert "`prompt`" in found[0].message and "line 10" in found[0].message


def test_yaml_block_prompt_is_not_read_as_fields() -> None:
    # Lines of a `prompt: |` block are text: `Context: "oops` must neither become a field nor
    # open a quote that swallows the closing brace (parser fix).
    text = HEAD + (
        "Task {\n"
        '  subagent_type: "general-purpose"\n'
        '  description: "Link report"\n'
        "  prompt: |\n"
        "    Read and follow the behavioral guidelines from:\n"
        "    /home/someone/.config/.claude/agents/spec-updater.md\n"
        '    Context: "unbalanced\n'
        "\n"
        "    Tasks:\n"
        "}\n"
    )
    assert check(text) == []
    doc = parse_text(Kind.COMMAND, text, CMD)
    assert isinstance(doc, CommandFile)
    block = doc.task_blocks[0]
    assert [f.name for f in block.fields] == ["subagent_type", "description", "prompt"]
    assert "Context:" in block.fields[2].value and block.closed
    assert block.fields[2].value_range.end_line == 14


def test_task_call_inside_bash_fence_is_read() -> None:
    # A Task call in a ```bash loop is one the model makes (the seeds' /debug): its unclosed
    # quote is reported like anywhere else. Code that only says `Task {` is not read
    # (tests/rules/test_fenced_tasks.py).
    text = HEAD + "```bash\nfor x in 1; do\n  Task {\n    prompt: \"\n  }\ndone\n```\n"
    assert codes(check(text)) == [("BTN312", 9)]
    swift = HEAD + "```bash\nfor x in 1; do\n  Task {\n    await run()\n  }\ndone\n```\n"
    assert check(swift) == []


def test_agent_kind_task_block() -> None:
    text = "---\nname: coordinator\ndescription: c\n---\n\n# Coordinator\n" + \
        GOOD_TASK.replace('  description: "Research things"\n', "")
    found = check(text, Kind.AGENT, COORD)
    assert codes(found) == [("BTN310", 6)]
    assert "`description`" in found[0].message


# -- cross-file: injections and signals ----------------------------------------------------

SPECIALIST = (
    "---\ndescription: r\n---\n\n# Research Specialist\n\n"
    "## STEP 4\n\nReturn exactly:\n\nREPORT_CREATED: /abs/path\n"
)


@pytest.fixture
def ws(make_workspace: Callable[[dict[str, str]], Path]) -> Callable[..., tuple[Path, Path]]:
    def build(body: str, rel: str = ".claude/commands/deploy.md") -> tuple[Path, Path]:
        root = make_workspace({
            ".claude/agents/research-specialist.md": SPECIALIST,
            rel: body,
        })
        return root, root / rel
    return build


def ws_check(root: Path, path: Path) -> list[Finding]:
    return [f for f in check_file(WorkspaceIndex(root), path) if f.code in CODES | {"BTN000"}]


def test_injection_resolves_project_dir_foreign_abs_and_relative(
        ws: Callable[..., tuple[Path, Path]]) -> None:
    body = HEAD + GOOD_TASK + (
        "\nRead and follow: .claude/agents/research-specialist.md\n"
        "\nRead and follow ALL behavioral guidelines from: "
        "/home/benjamin/.config/.claude/agents/research-specialist.md\n"
    )
    root, path = ws(body)
    assert ws_check(root, path) == []


def test_missing_injected_agent_with_fix(ws: Callable[..., tuple[Path, Path]]) -> None:
    body = HEAD + GOOD_TASK.replace("research-specialist.md", "research_specialist.md") + (
        "\nRead and follow: .claude/agents/ghost.md\n"                 # line 18
        "\nRead and follow: ${CLAUDE_PROJECT_DIR}/.claude/agents/{{AGENT}}.md\n"
    )
    root, path = ws(body)
    found = ws_check(root, path)
    assert codes(found) == [("BTN313", 11), ("BTN313", 18)]
    typo, ghost = found
    assert typo.severity is Severity.ERROR
    assert (typo.range.start_char, typo.range.end_char) == (4, 63)
    assert "did you mean `research-specialist`" in typo.message
    assert "expected a file at .claude/agents/research_specialist.md" in typo.message
    assert ghost.fix is None and "ghost.md" in ghost.message
    path.write_text(apply(body, typo.fix))  # type: ignore[arg-type]
    assert codes(ws_check(root, path)) == [("BTN313", 18)]


def test_injection_in_agent_file(ws: Callable[..., tuple[Path, Path]]) -> None:
    body = ("---\nname: coord\ndescription: c\n---\n\n# Coord\n" +
            GOOD_TASK.replace("research-specialist.md", "missing-worker.md"))
    root, path = ws(body, ".claude/agents/coord.md")
    assert codes(ws_check(root, path)) == [("BTN313", 11)]


def test_signal_not_documented_by_agent(ws: Callable[..., tuple[Path, Path]]) -> None:
    body = HEAD + GOOD_TASK.replace("REPORT_CREATED", "PLAN_CREATED")
    root, path = ws(body)
    found = ws_check(root, path)
    assert codes(found) == [("BTN314", 13)]
    f = found[0]
    assert f.severity is Severity.WARNING
    assert (f.range.start_char, f.range.end_char) == (12, 24)
    assert "`PLAN_CREATED:`" in f.message and "`research-specialist`" in f.message
    assert "it documents: REPORT_CREATED" in f.message
    assert f.related[0].path.endswith("research-specialist.md")


def test_documented_and_generic_signals_are_fine(ws: Callable[..., tuple[Path, Path]]) -> None:
    # GOOD_TASK expects REPORT_CREATED (documented) and TASK_ERROR (generic).
    root, path = ws(HEAD + GOOD_TASK)
    assert ws_check(root, path) == []


def test_injection_finding_clears_when_agent_is_created(
        ws: Callable[..., tuple[Path, Path]]) -> None:
    root, path = ws(HEAD + "Read and follow: .claude/agents/new-agent.md\n")
    index = WorkspaceIndex(root)
    assert [f.code for f in check_file(index, path) if f.code in CODES] == ["BTN313"]
    agent = root / ".claude/agents/new-agent.md"
    agent.write_text(SPECIALIST)
    assert str(path) in index.changed(agent, created_or_deleted=True)
    assert [f.code for f in check_file(index, path) if f.code in CODES] == []


def test_an_abbreviated_example_block_is_not_missing_fields() -> None:
    """issue 34: a command explaining the pattern shows the call shortened with an ellipsis
    line, in a fence; its left-out fields are not missing. An ellipsis inside the prompt's
    text elides nothing of the block."""
    elided = (HEAD + "Invoke the research agent for each topic:\n\n```\nTask {\n"
              '  subagent_type: "general-purpose"\n  ...\n}\n```\n')
    assert check(elided) == []
    for mark in ("…", "[...]", "// ..."):
        assert check(elided.replace("  ...\n", f"  {mark}\n")) == []
    in_prompt = (HEAD + "Task {\n" '  subagent_type: "general-purpose"\n'
                 '  prompt: "\n    Research the topic\n    ...\n  "\n}\n')
    assert codes(check(in_prompt)) == [("BTN310", 6)]

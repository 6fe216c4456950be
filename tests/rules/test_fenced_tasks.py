"""`Task {` calls held in ```yaml and ```bash fences are read; code that merely says `Task {`
(Swift's structured concurrency, an ERD entity) in a fence of another language is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only
from tests.rules.test_task_subagent import SYNTHESIS

CMD = "/ws/.claude/commands/research.md"
COORD = "/ws/.claude/agents/research-coordinator.md"
LOCAL = {"BTN310", "BTN311", "BTN312"}

RESEARCH = """\
---
description: Research a topic with parallel subagents
---
# /research

**CRITICAL INSTRUCTION**: The agent prompt below is NOT an example.

For EACH subtopic in SUBTOPICS array, invoke research-specialist agent:

```yaml
Task {
  subagent_type: "general-purpose"
  description: "Research [SUBTOPIC] with mandatory artifact creation"
  timeout: 300000  # 5 minutes per research agent
  prompt: "
    Read and follow the behavioral guidelines from:
    /home/benjamin/.config/.claude/agents/research-specialist.md

    **Research Topic**: [SUBTOPIC_DISPLAY_NAME]
    **Report Path**: [ABSOLUTE_PATH_FROM_SUBTOPIC_REPORT_PATHS]

    **STEP 4 (ABSOLUTE REQUIREMENT)**: Verify file exists and return:
    REPORT_CREATED: [EXACT_ABSOLUTE_PATH]
  "
}
```

**Monitor agent execution**:
- Collect REPORT_CREATED: paths when agents complete

```json
{
  "status": "complete"
}
```
"""
"""A public tree's /research command (shortened): its Task calls are in ```yaml fences."""

DEBUG = """\
---
description: Investigate a failure with parallel debug analysts
---
# /debug

```bash
# Build agent prompts for each hypothesis
for i in $(seq 0 $((HYPOTHESIS_COUNT - 1))); do
  HYPOTHESIS=$(echo "$HYPOTHESES" | jq -r ".[$i].hypothesis")

  # Invoke Task tool for this hypothesis (all in ONE message)
  Task {
    subagent_type: "general-purpose"
    description: "Investigate hypothesis: ${HYPOTHESIS}"
    prompt: |
      Read and follow behavioral guidelines from:
      ${CLAUDE_PROJECT_DIR}/.claude/agents/debug-analyst.md

      Investigate this hypothesis and create artifact at:
      specs/${TOPIC_DIR}/debug/$(printf "%03d" $((i+1)))_investigation_${HYPOTHESIS// /_}.md
  }
done
```

**Parallel Invocation Requirements**:
- MUST invoke ALL debug-analyst agents in ONE message (not sequential)
"""
"""A public tree's /debug command (shortened): the call sits in a ```bash loop."""

COORDINATOR = """\
---
name: research-coordinator
description: Invokes research-specialist agents in parallel
---
# Research Coordinator

```bash
   for i in "${!TOPICS[@]}"; do
     # Output the actual Task invocation (this is what the agent must execute)
     cat <<EOF_TASK_INVOCATION

**EXECUTE NOW (Topic $INDEX_NUM/${#TOPICS[@]})**: USE the Task tool.

Task {
  subagent_type: "general-purpose"
  description: "Research topic: $TOPIC"
  prompt: "
    Read and follow behavioral guidelines from:
    /home/benjamin/.config/.claude/agents/research-specialist.md

    **Research Topic**: $TOPIC
    4. STEP 4: Verify file exists and return: REPORT_CREATED: $REPORT_PATH
  "
}

EOF_TASK_INVOCATION
   done
```
"""
"""A public tree's research-coordinator agent (shortened): the call is a heredoc it prints."""


def check(text: str, kind: Kind = Kind.COMMAND, path: str = CMD) -> list[Finding]:
    return [f for f in check_text(kind, text, path) if f.code in LOCAL | {"BTN000"}]


def codes(found: list[Finding]) -> list[tuple[str, int]]:
    return [(f.code, f.range.start_line) for f in found]


def line_of(text: str, needle: str) -> int:
    """0-based line of the first line holding `needle`."""
    return next(no for no, line in enumerate(text.splitlines()) if needle in line)


def without(text: str, needle: str) -> str:
    """`text` less the first line holding `needle`."""
    lines = text.splitlines(keepends=True)
    del lines[line_of(text, needle)]
    return "".join(lines)


CASES = [(RESEARCH, Kind.COMMAND, CMD), (DEBUG, Kind.COMMAND, CMD),
         (COORDINATOR, Kind.AGENT, COORD)]


@pytest.mark.parametrize(("text", "kind", "path"), CASES, ids=["yaml", "bash-loop", "heredoc"])
def test_fenced_call_is_clean_as_written(text: str, kind: Kind, path: str) -> None:
    assert check(text, kind, path) == []


@pytest.mark.parametrize(("text", "kind", "path"), CASES, ids=["yaml", "bash-loop", "heredoc"])
def test_fenced_call_missing_description(text: str, kind: Kind, path: str) -> None:
    found = check(without(text, 'description: "'), kind, path)
    assert codes(found) == [("BTN310", line_of(text, "Task {"))]
    assert "`description`" in found[0].message


@pytest.mark.parametrize(("text", "kind", "path", "closer"), [
    (RESEARCH, Kind.COMMAND, CMD, "}\n```\n\n**Monitor"),
    (DEBUG, Kind.COMMAND, CMD, "  }\ndone"),
    (COORDINATOR, Kind.AGENT, COORD, "}\n\nEOF_TASK"),
], ids=["yaml", "bash-loop", "heredoc"])
def test_fenced_call_never_closed(text: str, kind: Kind, path: str, closer: str) -> None:
    # The call ends with its fence: the `}` of the later ```json block closes nothing.
    assert closer in text
    found = check(text.replace(closer, closer.split("\n", 1)[1], 1), kind, path)
    assert codes(found) == [("BTN311", line_of(text, "Task {"))]


def test_unknown_subagent_in_a_yaml_fence(tmp_path: Path) -> None:
    path = tmp_path / ".claude/commands/research.md"
    path.parent.mkdir(parents=True)
    (tmp_path / ".claude/agents").mkdir()
    (tmp_path / ".claude/agents/research-specialist.md").write_text(
        "---\nname: research-specialist\ndescription: Researches\n---\n# Research\n",
        encoding="utf-8")
    path.write_text(RESEARCH.replace('"general-purpose"', '"genreal-purpose"'), encoding="utf-8")
    found = only(check_file(WorkspaceIndex(tmp_path), path), "BTN319")
    assert [f.range.start_line for f in found] == [line_of(RESEARCH, "subagent_type")]


SWIFT = """\
    Task {
        await process.executeProcess()
    }
"""
"""From a public tree's notes: Swift's `Task { … }`, there in a ```bash fence."""

ERD = """\
Task {
    string task_id PK
    string ownerid FK "Task owner"  // Conflicts with Dataverse system column
}
"""
"""From a public tree's docs: an ERD entity named Task, in a ```bash fence."""


@pytest.mark.parametrize("lang", ["bash", "swift", "yaml"])
@pytest.mark.parametrize("code", [SWIFT, ERD], ids=["swift", "erd"])
def test_code_that_says_task_is_not_a_call(lang: str, code: str) -> None:
    text = "---\nname: ios\ndescription: Builds iOS apps\n---\n# iOS\n\n" \
        f"```{lang}\n{code}```\n"
    assert check(text, Kind.AGENT, "/ws/.claude/agents/ios.md") == []


def test_artifact_path_dropped_from_a_yaml_fenced_prompt(tmp_path: Path) -> None:
    # The /research synthesis step as its tree writes it: the Task call in a ```yaml fence.
    fenced = SYNTHESIS.replace("Task {\n", "```yaml\nTask {\n", 1).replace(
        "\n}\n\n```bash", "\n}\n```\n\n```bash", 1)
    assert fenced.count("```yaml") == 1 and fenced.count("```\n") == 3
    path = tmp_path / ".claude/commands/research.md"
    path.parent.mkdir(parents=True)
    path.write_text(fenced, encoding="utf-8")
    assert only(check_file(WorkspaceIndex(tmp_path), path), "BTN331") == []
    path.write_text(fenced.replace("    **Overview Report Path**: $OVERVIEW_PATH\n", ""),
                    encoding="utf-8")
    found = only(check_file(WorkspaceIndex(tmp_path), path), "BTN331")
    assert [f.message.split("`")[1] for f in found] == ["$OVERVIEW_PATH"]
    assert found[0].related[0].range.start_line == line_of(fenced, "Task {")

"""BTN319: a Task call's `subagent_type` that no agent of the workspace answers to."""

from __future__ import annotations

from pathlib import Path

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

SKILL = """\
---
name: skill-implementer
description: Execute an implementation plan
---
### Stage 5: Invoke Subagent

```
Tool: Agent (NOT Skill, NOT Plan)
Parameters:
  - subagent_type: "general-implementation-agent"
  - prompt: [Include task_context, delegation_context, plan_path, metadata_file_path]
  - description: "Execute implementation for task {N}"
```

Then `Task(subagent_type="Explore", prompt="Find the tests")`, or
`subagent_type: "fork"` for a fork; `subagent_type="{agent}"` is a placeholder.
"""
"""From a public tree's skill (shortened)."""


def _agent(root: Path, stem: str, name: str | None) -> None:
    path = root / ".claude/agents" / f"{stem}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    head = f"name: {name}\n" if name else ""
    path.write_text(f"---\n{head}description: An agent\n---\n# Agent\n", encoding="utf-8")


def _found(root: Path) -> list:
    path = root / ".claude/skills/skill-implementer/SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SKILL, encoding="utf-8")
    return only(check_file(WorkspaceIndex(root), path), "BTN319")


def test_renamed_agent_is_reported_with_the_close_name(tmp_path: Path) -> None:
    _agent(tmp_path, "general-implementation-hard-agent", "general-implementation-hard-agent")
    _agent(tmp_path, "planner", "planner-agent")
    found = _found(tmp_path)
    assert [(f.range.start_line, f.range.start_char) for f in found] == [(9, 20)]
    assert "did you mean `general-implementation-hard-agent`?" in found[0].message


def test_agent_found_by_front_matter_name_or_missing_agents_dir(tmp_path: Path) -> None:
    _agent(tmp_path / "a", "impl", "general-implementation-agent")
    assert _found(tmp_path / "a") == []
    (tmp_path / "b" / ".claude").mkdir(parents=True)
    assert _found(tmp_path / "b") == []  # no agents here: they live in the user's ~/.claude


SYNTHESIS = """\
---
description: Research a topic with parallel subagents
---
```bash
OVERVIEW_PATH="${RESEARCH_SUBDIR}/OVERVIEW.md"
```

**Invoke research-synthesizer** using Task tool:

Task {
  subagent_type: "general-purpose"
  description: "Synthesize research findings into overview report"
  timeout: 180000  # 3 minutes
  prompt: "
    Read and follow the behavioral guidelines from:
    /home/benjamin/.config/.claude/agents/research-synthesizer.md

    **Overview Report Path**: $OVERVIEW_PATH
    **Research Topic**: $RESEARCH_TOPIC

    **STEP 3**: Create overview file at EXACT path using Write tool (filename: OVERVIEW.md).
  "
}

```bash
if [ ! -f "$OVERVIEW_PATH" ]; then
  echo "ERROR: overview not created at $OVERVIEW_PATH"
  exit 1
fi
```
"""
"""A public tree's /research command (shortened; its Task block was in a ```yaml fence, which
Baton reads as an example): the path is computed, passed, verified."""


def _barrier(root: Path, text: str) -> list:
    path = root / ".claude/commands/research.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return only(check_file(WorkspaceIndex(root), path), "BTN331")


def test_artifact_path_dropped_from_the_prompt(tmp_path: Path) -> None:
    assert _barrier(tmp_path / "kept", SYNTHESIS) == []
    dropped = SYNTHESIS.replace("    **Overview Report Path**: $OVERVIEW_PATH\n", "")
    found = _barrier(tmp_path / "dropped", dropped)
    assert [(f.range.start_line, f.message.split("`")[1]) for f in found] == [
        (24, "$OVERVIEW_PATH")]
    assert found[0].related[0].range.start_line == 9
    # A prompt passing what the path is built from leaves the agent the same path.
    built = dropped.replace("**Research Topic**", "**Research Dir**: ${RESEARCH_SUBDIR}\n"
                            "    **Research Topic**")
    assert _barrier(tmp_path / "built", built) == []


REVISE = """\
# /coordinate

Task {
  subagent_type: "general-purpose"
  description: "Revise existing plan based on research findings"
  timeout: 180000
  prompt: "
    Read and follow ALL behavioral guidelines from:
    /home/benjamin/.config/.claude/agents/revision-specialist.md

    **Workflow-Specific Context**:
    - Existing Plan Path: $EXISTING_PLAN_PATH (absolute)

    Execute revision following all guidelines in behavioral file.
    Return: REVISION_COMPLETED: $EXISTING_PLAN_PATH
  "
}
"""
"""A public tree's /coordinate command (shortened)."""


def _revise(root: Path, agent_returns: str) -> list:
    agent = root / ".claude/agents/revision-specialist.md"
    agent.parent.mkdir(parents=True, exist_ok=True)
    agent.write_text(f"---\nname: revision-specialist\ndescription: Revise plans\n---\n"
                     f"# Revision Specialist\n\nReturn: {agent_returns}: <absolute-path>\n")
    cmd = root / ".claude/commands/coordinate.md"
    cmd.parent.mkdir(parents=True, exist_ok=True)
    cmd.write_text(REVISE, encoding="utf-8")
    return only(check_file(WorkspaceIndex(root), cmd), "BTN314")


def test_signal_of_any_form_the_agent_never_mentions(tmp_path: Path) -> None:
    """Old code read only `*_CREATED`/`*_COMPLETE`-like names and missed this one."""
    found = _revise(tmp_path / "a", "PLAN_REVISED")
    assert [(f.range.start_line, f.message.split("`")[1]) for f in found] == [
        (14, "REVISION_COMPLETED:")]
    assert "(it documents: PLAN_REVISED)" in found[0].message
    assert _revise(tmp_path / "b", "REVISION_COMPLETED") == []


def test_agent_named_only_by_subagent_type(tmp_path: Path) -> None:
    """No injection line: the agent is the one `subagent_type` starts. Old code skipped the
    block, since it compared signals only for injected agents."""
    text = REVISE.replace('"general-purpose"', '"revision-specialist"').replace(
        "    Read and follow ALL behavioral guidelines from:\n"
        "    /home/benjamin/.config/.claude/agents/revision-specialist.md\n", "")
    root = tmp_path / "c"
    _revise(root, "PLAN_REVISED")
    cmd = root / ".claude/commands/coordinate.md"
    cmd.write_text(text, encoding="utf-8")
    found = only(check_file(WorkspaceIndex(root), cmd), "BTN314")
    assert [f.message.split("`")[1] for f in found] == ["REVISION_COMPLETED:"]


def test_an_artifact_path_is_looked_for_only_in_blocks_that_assign_it(tmp_path: Path) -> None:
    """BTN331 finds the value a verified variable was given by scanning the earlier blocks
    with a pattern that needs `VAR=`; a block without that text was scanned anyway, for
    every verified variable. Counted with `sys.setprofile` (the pattern's scans); the
    finding is the usual one."""
    import sys
    from typing import Any

    from baton_lsp.rules import command_tasks

    dropped = SYNTHESIS.replace("    **Overview Report Path**: $OVERVIEW_PATH\n", "")
    first = dropped.index("```bash")
    extra = "```bash\necho \"checking 0c4e\"\n```\n\n```bash\nls specs/0c4e\n```\n\n"
    dropped = dropped[:first] + extra + dropped[first:]
    own = command_tasks._assignment.__code__
    scans: list[int] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and frame.f_code is own and getattr(arg, "__name__", "") \
                == "finditer":
            scans.append(1)

    sys.setprofile(profile)
    try:
        found = _barrier(tmp_path, dropped)
    finally:
        sys.setprofile(None)
    assert [f.message.split("`")[1] for f in found] == ["$OVERVIEW_PATH"]
    assert len(scans) == 1  # the block assigning it, not the two before

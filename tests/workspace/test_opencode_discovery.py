"""`.opencode/` is read beside `.claude/`: its agents and commands are OpenCode's kinds, its
specs are the root's, and it is never a workspace of its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.model.base import Kind
from baton_lsp.workspace.discovery import classify, find_root, find_workspaces, walk_files

PLAN = "# Plan\n\n## Phase 1: Setup [NOT STARTED]\n\n**Dependencies**: [7]\n\n- [ ] do it\n"
"""A plan with one finding (BTN101: phase 7 does not exist)."""
AGENT = "---\nname: planner\ndescription: Plans\nmode: subagent\nmodel: opus\n---\n# P\n"
"""An OpenCode agent with one finding (BTN705: `opus` is no `provider/model`)."""


@pytest.mark.parametrize(("rel", "kind"), [
    (".opencode/agent/orchestrator.md", Kind.OPENCODE_AGENT),
    (".opencode/agent/subagents/planner-agent.md", Kind.OPENCODE_AGENT),
    (".opencode/agents/review.md", Kind.OPENCODE_AGENT),
    (".opencode/command/review.md", Kind.OPENCODE_COMMAND),
    (".opencode/commands/implement.md", Kind.OPENCODE_COMMAND),
    (".opencode/commands/git/commit.md", Kind.OPENCODE_COMMAND),
    (".opencode/specs/state.json", Kind.REGISTRY),
    (".opencode/specs/209_x/plans/implementation-001.md", Kind.PLAN),
    (".opencode/specs/209_x/reports/research-001.md", Kind.REPORT),
    (".opencode/agent/subagents/README.md", None),
    (".opencode/commands/README.md", None),
    (".opencode/agent/templates/agent-template.md", None),
    (".opencode/commands/templates/x.md", None),
    (".opencode/OPENCODE.md.backup", None),
    (".opencode/skills/skill-meta/SKILL.md", None),
    (".opencode/context/index.md", Kind.CONTEXT),  # its links and @references are checked
    (".opencode/agent.md", None),
    (".opencode/mode/code-qa.md", Kind.OPENCODE_AGENT),
    (".opencode/modes/review.md", Kind.OPENCODE_AGENT),
    (".opencode/mode/old/code-qa.md", None),  # `{mode,modes}/*.md`: one level only
    (".opencode/mode/README.md", None),
])
def test_classify(rel: str, kind: Kind | None) -> None:
    assert classify(rel) is kind


def _tree(root: Path) -> Path:
    for rel, text in {
        ".claude/agents/a.md": "---\nname: a\ndescription: A\n---\n# A\n",
        ".opencode/agent/subagents/planner.md": AGENT,
        ".opencode/specs/001_x/plans/001-plan.md": PLAN,
        ".opencode/specs/state.json": json.dumps({"active_projects": []}),
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_opencode_is_read_with_its_parent(tmp_path: Path) -> None:
    """Before, `.opencode/` (it holds `specs/`) was a second workspace root."""
    root = _tree(tmp_path / "ws")
    assert find_workspaces(tmp_path) == [root]
    assert find_root(root / ".opencode/specs/001_x/plans/001-plan.md") == root
    assert find_root(root / ".opencode/agent/subagents/planner.md") == root
    walked = [p for p, _ in walk_files(root)]
    assert len(walked) == len(set(walked))
    assert str(root / ".opencode/specs/001_x/plans/001-plan.md") in walked


def test_a_workspace_of_opencode_alone(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".opencode/command").mkdir(parents=True)
    (root / ".opencode/command/review.md").write_text("---\ndescription: R\n---\nGo\n")
    assert find_workspaces(tmp_path) == [root]
    assert find_root(root / ".opencode/command/review.md") == root


def test_a_workspace_of_opencode_modes_alone(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / ".opencode/mode").mkdir(parents=True)
    (root / ".opencode/mode/review.md").write_text("---\nmodel: a/b\n---\nReview.\n")
    assert find_workspaces(tmp_path) == [root]
    assert find_root(root / ".opencode/mode/review.md") == root


def test_a_bare_opencode_directory_is_no_workspace(tmp_path: Path) -> None:
    """OpenCode's installer keeps its binary in `~/.opencode/bin`: that is no workspace."""
    home = tmp_path / "home"
    (home / ".opencode/bin").mkdir(parents=True)
    (home / ".opencode/bin/opencode").write_text("#!/bin/sh\n")
    assert find_workspaces(tmp_path) == []
    assert find_root(home / ".opencode/bin/opencode") is None


def test_check_reports_opencode_files_once(tmp_path: Path) -> None:
    """`baton check` on the tree: the `.opencode/specs` plan's finding once, the agent's
    finding under OpenCode's rule (a real subprocess, as a user runs it)."""
    root = _tree(tmp_path / "ws")
    out = subprocess.run(
        [sys.executable, "-m", "baton_lsp", "check", "--format", "json", "--no-cache",
         "--exit-zero", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=True)
    found = [(f["code"], Path(f["filename"]).relative_to(root).as_posix())
             for f in json.loads(out.stdout)]
    assert found.count(("BTN101", ".opencode/specs/001_x/plans/001-plan.md")) == 1
    assert ("BTN705", ".opencode/agent/subagents/planner.md") in found
    assert not [c for c, rel in found if rel.startswith(".opencode/agent")
                and c.startswith("BTN2")]


def test_workspace_symbols_name_opencode_files_as_opencode_does(tmp_path: Path) -> None:
    from baton_lsp.workspace.index import WorkspaceIndex

    root = _tree(tmp_path / "ws")
    (root / ".opencode/commands").mkdir(parents=True)
    (root / ".opencode/commands/review.md").write_text("---\ndescription: R\n---\nGo\n")
    (root / ".opencode/agent/subagents/x.md").write_text("---\ndescription: X\n---\nGo\n")
    idx = WorkspaceIndex(root)
    assert [s.name for s in idx.symbols(root / ".opencode/agent/subagents/planner.md")] == \
        ["planner"]  # its front matter's name
    assert [s.name for s in idx.symbols(root / ".opencode/agent/subagents/x.md")] == \
        ["subagents/x"]  # else its path below agent/
    assert [s.name for s in idx.symbols(root / ".opencode/commands/review.md")] == ["/review"]

"""Values several files' checks derive from the whole workspace (every agent of
`.claude/agents/`, every OpenCode agent, the OpenCode configuration) are read once per state
of the workspace, not once per file checked, and are read again after a change."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.config import load_config
from baton_lsp.workspace.index import WorkspaceIndex

N = 12


def _agent(name: str) -> str:
    return f"---\nname: {name}\ndescription: Does {name} work\n---\n\nWork.\n"


def _opencode_agent(name: str) -> str:
    return f"---\nname: {name}\ndescription: Does {name} work\nmode: subagent\n---\n\nWork.\n"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    oc = tmp_path / ".opencode" / "agent"
    oc.mkdir(parents=True)
    for i in range(N):
        (agents / f"agent-{i}.md").write_text(_agent(f"agent-{i}"))
        (oc / f"oc-{i}.md").write_text(_opencode_agent(f"oc-{i}"))
    (tmp_path / "opencode.json").write_text('{"agent": {"reviewer": {"mode": "subagent"}}}')
    return tmp_path


def _check_all(index: WorkspaceIndex, root: Path) -> list[str]:
    codes = []
    for folder in (root / ".claude" / "agents", root / ".opencode" / "agent"):
        for path in sorted(folder.glob("*.md")):
            codes += [f.code for f in check_file(index, path)]
    return codes


def test_a_workspace_check_lists_the_agent_folders_once(ws: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Before, BTN211/212 listed `.claude/agents/` and BTN712 walked every workspace file
    once per agent file: quadratic in the number of agents."""
    walks: list[str] = []
    real_walk = os.walk

    def counting_walk(top: str, *args: object, **kwargs: object):  # type: ignore[no-untyped-def]
        walks.append(os.path.normpath(top))
        return real_walk(top, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "walk", counting_walk)
    index = WorkspaceIndex(ws, load_config(ws))
    listings = 0
    real_files = WorkspaceIndex.files

    def counting_files(self: WorkspaceIndex) -> dict:  # type: ignore[type-arg]
        nonlocal listings
        listings += 1
        return real_files(self)

    monkeypatch.setattr(WorkspaceIndex, "files", counting_files)
    _check_all(index, ws)
    agents_dir = os.path.normpath(ws / ".claude" / "agents")
    assert walks.count(agents_dir) == 1, walks
    # kind_of may list the tree for each file; the OpenCode agent map lists it once more
    # in all, not once per OpenCode agent file checked
    assert listings <= 2 * N + 2


def test_a_change_is_seen_by_the_next_check(ws: Path) -> None:
    """The shared value belongs to one state of the workspace: an agent added on disk (the
    editor reports it) or typed in an open buffer is seen by the next check."""
    index = WorkspaceIndex(ws, load_config(ws))
    first = ws / ".claude" / "agents" / "agent-0.md"
    assert "BTN211" not in [f.code for f in check_file(index, first)]
    twin = ws / ".claude" / "agents" / "agent-0-copy.md"
    twin.write_text(_agent("agent-0"))
    index.changed(twin, created_or_deleted=True)
    assert "BTN211" in [f.code for f in check_file(index, first)]
    index.set_overlay(twin, _agent("agent-zero"))
    assert "BTN211" not in [f.code for f in check_file(index, first)]

    oc_first = ws / ".opencode" / "agent" / "oc-0.md"
    assert "BTN712" not in [f.code for f in check_file(index, oc_first)]
    sub = ws / ".opencode" / "agent" / "subagents"
    sub.mkdir()
    (sub / "oc-0.md").write_text("---\nname: oc-0\ndescription: Does oc-0 work\n---\n")
    index.changed(sub / "oc-0.md", created_or_deleted=True)
    assert "BTN712" in [f.code for f in check_file(index, oc_first)]


def test_each_file_still_records_what_the_shared_value_was_read_from(ws: Path) -> None:
    """A file checked after the value was shared depends on the same inputs as the first:
    the result cache re-checks both when an agent changes."""
    index = WorkspaceIndex(ws, load_config(ws))
    _check_all(index, ws)
    agents = ws / ".claude" / "agents"
    one = index.dependents(str(agents / "agent-3.md"))
    assert str(agents / "agent-0.md") in one and str(agents / "agent-11.md") in one

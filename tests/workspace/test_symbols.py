"""Symbol summaries in the index: recorded on parse, kept past the document cache, and
invalidated by edits on disk, overlays and `changed`."""

from __future__ import annotations

from pathlib import Path

import pytest

import baton_lsp.workspace.index as index_module
from baton_lsp.model.base import Range
from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from baton_lsp.workspace.symbols import SymbolSummary

PLAN = ".claude/specs/001_x/plans/001-x-plan.md"


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths the index parses, in order (the real parser still runs)."""
    seen: list[str] = []
    real = index_module._parse  # the index's one way to the (lazily imported) parser

    def counting(kind, text, path="", decoded=False):  # type: ignore[no-untyped-def]
        seen.append(path)
        return real(kind, text, path, decoded)

    monkeypatch.setattr(index_module, "_parse", counting)
    return seen


def _names(idx: WorkspaceIndex, path: Path) -> list[str]:
    return [s.name for s in idx.symbols(path)]


def test_plan_agent_and_command_summaries(make_workspace) -> None:
    root = make_workspace({
        PLAN: "# Login Plan\n\n### Phase 1: Storage\n- [ ] a\n\n### Phase 2: API\n",
        ".claude/agents/helper.md": "---\ndescription: d\n---\n",
        ".claude/commands/go.md": "# Go\n",
        ".claude/specs/001_x/reports/001-r.md": "# R\n"})
    idx = WorkspaceIndex(root)
    plan = idx.symbols(root / PLAN)
    assert plan == (
        SymbolSummary("Login Plan", "plan", Range.of_line(0, 2, 12)),
        SymbolSummary("Phase 1: Storage", "phase", Range.of_line(2, 0, 20), "Login Plan"),
        SymbolSummary("Phase 2: API", "phase", Range.of_line(5, 0, 16), "Login Plan"))
    assert idx.symbols(root / ".claude/agents/helper.md") == (
        SymbolSummary("helper", "agent", Range.of_line(0), "agent"),)
    assert _names(idx, root / ".claude/commands/go.md") == ["/go"]
    assert idx.symbols(root / ".claude/specs/001_x/reports/001-r.md") == ()


def test_untitled_plan_is_named_by_its_path(make_workspace) -> None:
    root = make_workspace({PLAN: "### Phase 1: A\n"})
    assert _names(WorkspaceIndex(root), root / PLAN) == [
        ".claude/specs/001_x/plans/001-x-plan.md", "Phase 1: A"]


def test_line_text_only_for_non_ascii_lines(make_workspace) -> None:
    root = make_workspace({PLAN: "# 🚀 Über Plan\n\n### Phase 1: Plain\n### Phase 2: Été\n"})
    got = {s.name: s.line_text for s in WorkspaceIndex(root).symbols(root / PLAN)}
    assert got == {"🚀 Über Plan": "# 🚀 Über Plan", "Phase 1: Plain": None,
                   "Phase 2: Été": "### Phase 2: Été"}


def test_summaries_outlive_the_document_cache(make_workspace, parses: list[str]) -> None:
    files = {f".claude/specs/{i:03d}_x/plans/001-p.md": f"# P{i}\n### Phase 1: A{i}\n"
             for i in range(6)}
    root = make_workspace(files)
    idx = WorkspaceIndex(root)
    idx.max_cached_docs = 2
    for path in idx.files():
        check_file(idx, path)
    assert len(parses) == 6 and len(idx._docs) == 2  # four documents evicted
    names = [_names(idx, root / rel) for rel in sorted(files)]
    assert names == [[f"P{i}", f"Phase 1: A{i}"] for i in range(6)]
    assert len(parses) == 6  # nothing parsed again


def test_never_parsed_file_is_parsed_once(make_workspace, parses: list[str]) -> None:
    root = make_workspace({PLAN: "# P\n"})
    idx = WorkspaceIndex(root)
    assert _names(idx, root / PLAN) == ["P"]
    assert _names(idx, root / PLAN) == ["P"]
    assert parses == [str(root / PLAN)]


def test_edit_on_disk_invalidates(make_workspace, parses: list[str]) -> None:
    root = make_workspace({PLAN: "# Old\n"})
    idx = WorkspaceIndex(root)
    assert _names(idx, root / PLAN) == ["Old"]
    (root / PLAN).write_text("# Newer title\n")  # no event: the (mtime, size) stamp differs
    assert _names(idx, root / PLAN) == ["Newer title"]
    assert len(parses) == 2


def test_changed_drops_the_summary(make_workspace, parses: list[str]) -> None:
    root = make_workspace({PLAN: "# P\n"})
    idx = WorkspaceIndex(root)
    idx.symbols(root / PLAN)
    idx.changed(root / PLAN)
    assert str(root / PLAN) not in idx._symbols
    assert _names(idx, root / PLAN) == ["P"] and len(parses) == 2


def test_overlay_changes_invalidate(make_workspace, parses: list[str]) -> None:
    root = make_workspace({PLAN: "# Disk\n"})
    idx = WorkspaceIndex(root)
    assert _names(idx, root / PLAN) == ["Disk"]
    idx.set_overlay(root / PLAN, "# Editor\n### Phase 1: Typed\n")
    assert _names(idx, root / PLAN) == ["Editor", "Phase 1: Typed"]
    idx.set_overlay(root / PLAN, "# Editor again\n")
    assert _names(idx, root / PLAN) == ["Editor again"]
    assert len(parses) == 3
    idx.set_overlay(root / PLAN, "# Half typ")  # never queried
    idx.set_overlay(root / PLAN, "# Editor again\n")  # undone: the cached document is current
    assert _names(idx, root / PLAN) == ["Editor again"]
    assert len(parses) == 3
    idx.drop_overlay(root / PLAN)
    assert _names(idx, root / PLAN) == ["Disk"]
    assert len(parses) == 4


def test_deleted_file_has_no_symbols(make_workspace) -> None:
    root = make_workspace({PLAN: "# P\n"})
    idx = WorkspaceIndex(root)
    assert _names(idx, root / PLAN) == ["P"]
    (root / PLAN).unlink()
    assert idx.symbols(root / PLAN) == ()

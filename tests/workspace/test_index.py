"""The index: caching, overlays and reverse dependencies for re-checking."""

from __future__ import annotations

from baton_lsp.rules.engine import check_file
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import only

PLAN = ".claude/specs/001_x/plans/001-x-plan.md"


def test_cache_reparses_after_edit_on_disk(make_workspace) -> None:
    root = make_workspace({PLAN: "# P\n### Phase 1: A\ndependencies: [2]\n"})
    idx = WorkspaceIndex(root)
    assert len(only(check_file(idx, root / PLAN), "BTN101")) == 1
    doc = idx.document(root / PLAN)
    assert idx.document(root / PLAN) is doc  # cached by (mtime, size)
    (root / PLAN).write_text("# P\n### Phase 1: A\ndependencies: []\n\n")
    assert only(check_file(idx, root / PLAN), "BTN101") == []


def test_overlay_wins_over_disk_and_can_be_dropped(make_workspace) -> None:
    root = make_workspace({PLAN: "# P\n### Phase 1: A\ndependencies: []\n"})
    idx = WorkspaceIndex(root)
    idx.set_overlay(root / PLAN, "# P\n### Phase 1: A\ndependencies: [1]\n")
    assert len(only(check_file(idx, root / PLAN), "BTN102")) == 1
    idx.drop_overlay(root / PLAN)
    assert only(check_file(idx, root / PLAN), "BTN102") == []


def test_dependents_of_a_linked_report(make_workspace) -> None:
    root = make_workspace({PLAN: "# P\n[r](../reports/001-r.md)\n"})
    idx = WorkspaceIndex(root)
    assert len(only(check_file(idx, root / PLAN), "BTN130")) == 1
    report = root / ".claude/specs/001_x/reports/001-r.md"
    report.parent.mkdir(parents=True)
    report.write_text("# R\n")
    assert str(root / PLAN) in idx.changed(report, created_or_deleted=True)
    assert only(check_file(idx, root / PLAN), "BTN130") == []


def test_files_lists_every_kind(make_workspace) -> None:
    root = make_workspace({PLAN: "# P\n", ".claude/agents/a.md": "---\ndescription: d\n---\n",
                           ".claude/commands/c.md": "# C\n"})
    assert sorted(k.value for k in WorkspaceIndex(root).files().values()) == [
        "agent", "command", "plan"]


def test_parallel_check_matches_serial(make_workspace) -> None:
    from baton_lsp.rules.checker import check_paths

    files = {f".claude/specs/{i:03d}_x/plans/p.md":
             f"# P{i}\n### Phase 1: A\ndependencies: [{i % 3}]\n- [X] t\n" for i in range(30)}
    files[".claude/agents/a.md"] = "---\ndescription: d\n---\n"
    root = make_workspace(files)
    serial = check_paths([root], jobs=1)
    parallel = check_paths([root], jobs=2)
    assert serial.files == parallel.files == 31
    assert [(f.path, f.code, f.range) for f in serial.findings] == \
        [(f.path, f.code, f.range) for f in parallel.findings]
    assert any(f.code == "BTN102" for f in parallel.findings)

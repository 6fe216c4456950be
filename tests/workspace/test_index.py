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


def test_norm_returns_a_normal_absolute_path_as_it_is() -> None:
    """`norm` keys every cache and index and is asked for the same paths thousands of times
    in a check; a path that is absolute and normal already is returned without `abspath` /
    `normpath` (watched with `sys.setprofile`), and every path gets the same key as
    `normpath(abspath())` gives (all paths of up to four parts from a set of awkward ones,
    with one to three leading slashes, with and without a trailing one, and relative)."""
    import itertools
    import os
    import sys
    from typing import Any

    from baton_lsp.paths import norm

    called: list[str] = []

    def profile(frame: Any, event: str, arg: object) -> None:
        if event == "call" and frame.f_code is os.path.normpath.__code__:
            called.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        key = norm("/work/repo/.claude/agents/planner.md")
    finally:
        sys.setprofile(None)
    assert key == "/work/repo/.claude/agents/planner.md" and called == []
    parts = ["a", "..", ".", "", "b.md", ".claude", "...", "x y", "\\", "é"]
    for size in range(1, 5):
        for combo in itertools.product(parts, repeat=size):
            for lead, tail in itertools.product(("/", "//", "///", ""), ("", "/")):
                path = lead + "/".join(combo) + tail
                if path:
                    assert norm(path) == os.path.normpath(os.path.abspath(path)), path

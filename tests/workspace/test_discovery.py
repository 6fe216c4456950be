"""Workspace discovery and file kinds from paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton_lsp.model.base import Kind
from baton_lsp.workspace.discovery import classify, find_root, find_workspaces, walk


@pytest.mark.parametrize(("rel", "kind"), [
    (".claude/specs/001_x/plans/001-x-plan.md", Kind.PLAN),
    (".claude/specs/plans/007_dark.md", Kind.PLAN),
    (".claude/specs/plans/045_x/phase_7_y/stage_1_z.md", Kind.PLAN),
    (".claude/specs/955_x/debug/002-fix-implementation-plan.md", Kind.PLAN),
    ("specs/081_x/plans/17_implementation-plan.md", Kind.PLAN),
    (".claude/specs/001_x/reports/001-r.md", Kind.REPORT),
    (".claude/specs/001_x/summaries/s.md", Kind.SUMMARY),
    (".claude/agents/research-specialist.md", Kind.AGENT),
    (".claude/agents/templates/coordinator-template.md", Kind.AGENT),
    (".claude/commands/errors.md", Kind.COMMAND),
    (".claude/commands/errors.md.backup-20251101", None),
    (".claude/commands/plan.bak", None),
    (".claude/commands/backups/errors.md", None),
    (".claude/commands/shared/part.md", None),
    (".claude/specs/001_x/plans/backups/001-x_20251201_101010.md", None),
    (".claude/tmp/workflow_coordinate_1762902471.sh", Kind.STATE),
    (".claude/data/logs/errors.jsonl", Kind.ERRORS_LOG),
    (".claude/tests/logs/test-errors.jsonl", Kind.ERRORS_LOG),
    (".claude/data/checkpoints/implement_x_20251101_101010.json", Kind.CHECKPOINT),
    (".claude/tests/.claude/data/logs/errors.jsonl", None),
    (".claude/agents/README.md", None),
    (".claude/docs/guide.md", None),
])
def test_classify(rel: str, kind: Kind | None) -> None:
    assert classify(rel) is kind


def test_find_root_from_inside_and_below(make_workspace) -> None:
    root: Path = make_workspace({".claude/specs/001_x/plans/p.md": "# P\n"})
    assert find_root(root / ".claude/specs/001_x/plans/p.md") == root
    assert find_root(root) == root
    assert find_root(root / ".claude") == root


def test_find_workspaces_finds_nested_roots(make_workspace) -> None:
    root: Path = make_workspace({"other/a/.claude/agents/x.md": "---\n---\n",
                                 ".claude/agents/y.md": "x"})
    assert find_workspaces(root) == [root, root / "other/a"]


def test_walk_respects_exclude(make_workspace) -> None:
    root: Path = make_workspace({".claude/lib/fixtures/a.md": "# A\n",
                                 ".claude/agents/b.md": "x"})
    assert {p.name for p, _ in walk(root)} == {"a.md", "b.md"}
    assert {p.name for p, _ in walk(root, [".claude/lib/*"])} == {"b.md"}


def test_walk_skips_the_engines_history_but_it_is_still_classified(make_workspace) -> None:
    """Up to 500 checksummed files per workflow are engine output: checked when opened or
    named, not on every walk. A hand-placed checkpoint beside them is still walked."""
    root = make_workspace({".claude/data/checkpoints/wf_1/000001.json": "{}",
                           ".claude/data/checkpoints/legacy.json": "{}"})
    walked = {p.relative_to(root).as_posix() for p, _ in walk(root)}
    assert ".claude/data/checkpoints/legacy.json" in walked
    assert ".claude/data/checkpoints/wf_1/000001.json" not in walked
    assert classify(".claude/data/checkpoints/wf_1/000001.json") is Kind.CHECKPOINT

"""Topic allocation, slugs and workspace containment."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from baton_lsp.errors import PathError
from baton_lsp.workflow.layout import (
    allocate_topic,
    contained,
    planned_topic,
    slugify,
    specs_dir,
    topic_of_plan,
)


def test_slug_keeps_only_safe_characters() -> None:
    assert slugify("Research auth patterns and plan the login flow") == \
        "research_auth_patterns_plan_login"
    assert slugify("$(touch pwned) `rm -rf /` ../../etc") == "touch_pwned_rm_rf_etc"
    assert slugify("!!!") == "workflow"


def test_topics_are_numbered_after_the_highest(tmp_path: Path) -> None:
    (tmp_path / ".claude" / "specs" / "007_old").mkdir(parents=True)
    t = allocate_topic(tmp_path, "Add login")
    assert t.number == 8 and t.path.name == "008_add_login"
    assert all((t.path / s).is_dir() for s in ("reports", "plans", "summaries", "debug"))


@pytest.mark.parametrize(("dirs", "claude", "expected"), [
    ([], False, "specs"),                                   # a new tree: the current layout
    ([".claude/specs"], False, ".claude/specs"),            # an existing tree's layout
    ([".claude/specs", "specs"], False, "specs"),
    ([".claude/specs"], True, "specs"),                     # claude may not write in .claude/
])
def test_specs_dir_follows_the_tree_and_the_agent(tmp_path: Path, dirs: list[str],
                                                  claude: bool, expected: str) -> None:
    for d in dirs:
        (tmp_path / d).mkdir(parents=True)
    assert specs_dir(tmp_path, claude=claude) == tmp_path / expected
    assert specs_dir(tmp_path, "docs/specs", claude=claude) == tmp_path / "docs" / "specs"
    with pytest.raises(PathError):
        specs_dir(tmp_path, "../elsewhere")


def test_plan_outside_the_writable_specs_gets_its_artifacts_mirrored(tmp_path: Path) -> None:
    plan = tmp_path / ".claude" / "specs" / "002_pay" / "plans" / "p.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# Plan\n")
    t = topic_of_plan(tmp_path, plan, tmp_path / "specs")
    assert (t.number, t.slug, t.path) == (2, "pay", tmp_path / "specs" / "002_pay")
    assert t.summaries.is_dir() and not (plan.parent.parent / "summaries").exists()
    same = topic_of_plan(tmp_path, plan, tmp_path / ".claude" / "specs")
    assert same.path == plan.parent.parent


def test_concurrent_allocation_never_shares_a_directory(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    out: list[int] = []
    threads = [threading.Thread(target=lambda: out.append(allocate_topic(tmp_path, "x").number))
               for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(out) == list(range(1, 17))


def test_escaping_paths_are_refused(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    root = tmp_path / "ws"
    assert contained(root, "a/b.md") == root / "a" / "b.md"
    with pytest.raises(PathError, match="outside the workspace"):
        contained(root, "../outside.md")
    with pytest.raises(PathError):
        contained(root, "/etc/passwd")
    (root / "link").symlink_to(tmp_path)
    with pytest.raises(PathError):
        contained(root, "link/escape.md")


def test_topic_of_plan(tmp_path: Path) -> None:
    plan = tmp_path / ".claude" / "specs" / "012_auth" / "plans" / "012_plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("# P\n")
    t = topic_of_plan(tmp_path, plan)
    assert (t.number, t.slug) == (12, "auth") and (t.path / "debug").is_dir()


def test_the_planned_topic_is_the_one_allocated_and_nothing_is_created(tmp_path: Path) -> None:
    """Preflight checks the topic directory a run will get before it exists."""
    base = tmp_path / "specs"
    assert planned_topic(tmp_path, base, "Add login") == base / "001_add_login"
    assert not base.exists()
    (base / "007_old").mkdir(parents=True)
    planned = planned_topic(tmp_path, base, "Add login")
    assert planned == allocate_topic(tmp_path, "Add login", base).path == base / "008_add_login"
    plan = ".claude/specs/002_pay/plans/001_plan.md"
    assert planned_topic(tmp_path, base, "x", plan) == base / "002_pay"
    assert planned_topic(tmp_path, base, "x", "specs/003_y/plans/p.md") == base / "003_y"

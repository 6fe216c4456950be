"""Topic allocation, slugs and workspace containment."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from baton_lsp.errors import PathError
from baton_lsp.workflow.layout import allocate_topic, contained, slugify, topic_of_plan


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

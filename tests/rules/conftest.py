from __future__ import annotations

from pathlib import Path

import pytest

from tests.rules.cached_tree import make_tree


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """`cached_tree`'s workspace, in `tmp_path / "ws"`."""
    return make_tree(tmp_path / "ws")

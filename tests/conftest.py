"""Shared fixtures: the real corpus (when present) and small workspace builders."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
EXAMPLE = REPO / "examples" / "workspace"

_SESSION_CACHE = tempfile.mkdtemp(prefix="baton-test-cache-")
os.environ["BATON_CACHE_DIR"] = _SESSION_CACHE  # servers and CLIs started outside a test too
atexit.register(shutil.rmtree, _SESSION_CACHE, True)


@pytest.fixture(autouse=True)
def result_cache_dir(tmp_path_factory: pytest.TempPathFactory,
                     monkeypatch: pytest.MonkeyPatch) -> Path:
    """A result cache of its own for every test (`BATON_CACHE_DIR`, inherited by the CLIs
    and servers it starts): no test sees another's results, none touches the user's cache."""
    directory = tmp_path_factory.mktemp("baton-cache")
    monkeypatch.setenv("BATON_CACHE_DIR", str(directory))
    return directory


@pytest.fixture
def corpus() -> Path:
    """The shared corpus of real `.claude/` files; tests using it skip when it is absent."""
    if not (CORPUS / ".claude").is_dir():
        pytest.skip("shared corpus not present")
    return CORPUS


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[[dict[str, str]], Path]:
    """Write {relative path: text} under a temporary root and return the root."""

    def make(files: dict[str, str]) -> Path:
        (tmp_path / ".claude").mkdir(exist_ok=True)
        for rel, text in files.items():
            p = tmp_path / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text, encoding="utf-8")
        return tmp_path

    return make


SCRIPTED_WORKFLOW_CONFIG = """\
[workflow]
runner = "script"
backoff = 0.01
backoff-max = 0.05
timeout = 30
stall-timeout = 30
kill-grace = 0.5
test-command = ["{python}", "-m", "baton_lsp.workflow.scripted"]
"""
"""`.claude/baton.toml` of engine and editor workflow tests: the deterministic scripted agents,
retries without real waiting, the scripted test suite."""


@pytest.fixture(autouse=True, scope="session")
def _checkpoint_key_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test (and every `baton` process a test starts, which inherits the environment)
    signs checkpoints with a key in a temporary directory, never the user's real one."""
    from baton_lsp.runs.signing import DATA_DIR_ENV

    old = os.environ.get(DATA_DIR_ENV)
    os.environ[DATA_DIR_ENV] = str(tmp_path_factory.mktemp("baton-data"))
    yield
    if old is None:
        os.environ.pop(DATA_DIR_ENV, None)
    else:
        os.environ[DATA_DIR_ENV] = old

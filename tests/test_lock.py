"""requirements.lock.txt is complete, hashed, address-free and agrees with pyproject.toml.

CI installs the lock and nothing else (`pip install --require-hashes`), so a dependency added
to pyproject.toml without a lock refresh must fail here rather than install unpinned.
"""

from __future__ import annotations

import os
import re
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements.lock.txt"
RUNTIME_LOCK = ROOT / "requirements.runtime.lock.txt"
"""What a user installs: the runtime dependencies only (`scripts/deps.sh runtime-lock`)."""
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^ ;\\]+)\s*(?:;\s*([^\\]+?))?\s*\\?$")


def _locked(lock: Path = LOCK) -> dict[str, tuple[str, list[str], str | None]]:
    """{name: (version, hashes, marker)} of every pin in the lock."""
    pins: dict[str, tuple[str, list[str], str | None]] = {}
    current: str | None = None
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = _PIN.match(line)
        if match:
            current = canonicalize_name(match.group(1))
            assert current not in pins, f"{current} is pinned twice"
            pins[current] = (match.group(2), [], match.group(3))
        elif line.strip().startswith("--hash=sha256:") and current is not None:
            pins[current][1].append(line.strip().removesuffix("\\").strip())
        elif line.strip() and not line.lstrip().startswith("#"):
            raise AssertionError(f"unexpected lock line: {line!r}")
    return pins


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = [*project["project"]["dependencies"],
            *project["project"]["optional-dependencies"]["test"],
            *project["project"]["optional-dependencies"]["dask"],
            *project["build-system"]["requires"]]
    return [Requirement(r) for r in reqs]


def test_every_pin_is_hashed() -> None:
    pins = _locked()
    assert len(pins) >= 20
    for name, (_, hashes, _marker) in pins.items():
        assert hashes, f"{name} has no hash"
        assert all(re.fullmatch(r"--hash=sha256:[0-9a-f]{64}", h) for h in hashes), name


def test_lock_names_no_download_address() -> None:
    text = LOCK.read_text(encoding="utf-8")
    assert not re.search(r"(?i)(https?|file)://|--(extra-)?index-url|--find-links", text)


def test_lock_satisfies_every_declared_requirement() -> None:
    pins = _locked()
    env = default_environment()
    for req in _declared():
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} is declared in pyproject.toml but not locked"
        version = pins[name][0]
        assert req.specifier.contains(version, prereleases=True), (
            f"{name}=={version} in the lock does not satisfy `{req}`: run scripts/deps.sh lock")


@pytest.mark.skipif(os.environ.get("BATON_UNLOCKED") == "1",
                    reason="scripts/deps.sh latest|lowest tests other versions on purpose")
def test_installed_environment_is_the_lock() -> None:
    """The venv running the tests holds the locked versions (what CI installs)."""
    for name, (locked, _, marker) in _locked().items():
        if marker is not None and not Marker(marker).evaluate():
            continue  # e.g. colorama, Windows only
        assert version(name) == locked, f"{name} {version(name)} is installed, lock: {locked}"


def test_the_runtime_lock_holds_no_test_tool_and_the_same_pins() -> None:
    """A user's install (README) takes the runtime lock: Baton's dependencies and the build
    backend, hashed, at exactly the development lock's versions, and nothing the test
    extra alone brings in."""
    runtime, full = _locked(RUNTIME_LOCK), _locked()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tools = {canonicalize_name(Requirement(r).name)
             for r in project["project"]["optional-dependencies"]["test"]}
    assert not tools & set(runtime), f"test tools in the runtime lock: {tools & set(runtime)}"
    assert not {"pluggy", "iniconfig", "mypy-extensions", "virtualenv"} & set(runtime)
    for name, (pinned, hashes, _marker) in runtime.items():
        assert name in full, f"{name} is in the runtime lock only"
        assert pinned == full[name][0], (
            f"{name}=={pinned} in the runtime lock, =={full[name][0]} in the full lock: run "
            "scripts/deps.sh runtime-lock")
        assert hashes and set(hashes) == set(full[name][1]), name
    env = default_environment()
    for raw in [*project["project"]["dependencies"], *project["build-system"]["requires"]]:
        req = Requirement(raw)
        if req.marker is None or req.marker.evaluate(env):
            name = canonicalize_name(req.name)
            assert name in runtime and req.specifier.contains(runtime[name][0]), raw
    assert not re.search(r"(?i)(https?|file)://|--(extra-)?index-url|--find-links",
                         RUNTIME_LOCK.read_text(encoding="utf-8"))

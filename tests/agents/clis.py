"""Where the real agent CLIs are: installed by scripts/install-agent-clis.sh (pinned, npm).

A test that needs one skips only when it cannot be had, saying why: the reason npm gave
(`UNAVAILABLE` in the install directory), or that the install script has not run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

AGENTS_DIR = Path(os.environ.get("BATON_AGENTS_DIR") or Path(
    os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "baton-agents")


def cli_path(name: str, version: str | None = None) -> str:
    """The `name` binary (claude, codex, gemini, opencode): `BATON_<NAME>` or the install directory;
    with `version`, that release's (installed beside the newest: `versions/<name>-<v>/`)."""
    override = None if version else os.environ.get(f"BATON_{name.upper()}")
    path = (Path(override) if override else
            AGENTS_DIR / "versions" / f"{name}-{version}" / name if version else
            AGENTS_DIR / "node_modules" / ".bin" / name)
    if os.access(path, os.X_OK):
        return str(path)
    own = AGENTS_DIR / f"UNAVAILABLE-{name}"  # this CLI alone (no build for this machine)
    if own.is_file():
        reason = own.read_text(encoding="utf-8", errors="replace").strip()
        pytest.skip(f"the {name} CLI is not available: {reason}", allow_module_level=True)
    marker = AGENTS_DIR / "UNAVAILABLE"
    if marker.is_file():
        reason = marker.read_text(encoding="utf-8", errors="replace").strip()
        pytest.skip(f"the {name} CLI could not be installed from npm: {reason}",
                    allow_module_level=True)
    pytest.skip(f"the {name} CLI is not installed at {path}: run scripts/install-agent-clis.sh"
                f" (or set BATON_{name.upper()})", allow_module_level=True)
    raise AssertionError("unreachable")


def opencode_offline_env(home: Path) -> dict[str, str]:
    """The environment to run the real opencode in with nothing of the user's: its own HOME
    and XDG directories under `home`, no OPENCODE_* setting, no update check, no models.dev
    download (it must answer offline)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENCODE")}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               XDG_DATA_HOME=str(home / ".local/share"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_STATE_HOME=str(home / ".local/state"), OPENCODE_DISABLE_AUTOUPDATE="1",
               OPENCODE_DISABLE_MODELS_FETCH="1")
    return env

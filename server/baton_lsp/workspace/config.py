"""Loading `[tool.baton]` from pyproject.toml and `.claude/baton.toml`."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import ConfigError
from ..model.config import BatonConfig
from ..paths import look
from ..runs import confine

MAX_CONFIG = 1 << 20
"""Bytes of a configuration file read at most."""


def _read_toml(root: Path, path: Path) -> dict[str, Any]:
    """Read through `confine`: a FIFO is refused, not waited on, and a link out of the
    workspace is named, never read (its target's text would reach messages)."""
    try:
        return tomllib.loads(confine.read_bytes(root, path, MAX_CONFIG).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {confine.describe(exc)}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from None


def config_sources(root: Path) -> list[Path]:
    candidates = (root / "pyproject.toml", root / ".claude" / "baton.toml")
    for path in candidates:
        look(path)
    return [p for p in candidates if os.path.lexists(p)]  # a FIFO or a link is reported


def merge(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, tables merged key by key at every depth (`[workflow.claude]` set in
    one file keeps `[workflow] timeout` from another); a None in `top` changes nothing."""
    out = dict(base)
    for key, value in top.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def load_config(root: Path | None, overrides: dict[str, Any] | None = None) -> BatonConfig:
    """Merge pyproject `[tool.baton]`, then `.claude/baton.toml`, then `overrides`."""
    merged: dict[str, Any] = {}
    sources: list[Path] = config_sources(root) if root is not None else []
    for src in sources:
        data = _read_toml(root or src.parent, src)
        if src.name == "pyproject.toml":
            data = data.get("tool", {}).get("baton", {})
        if not isinstance(data, dict):
            raise ConfigError(f"{src}: [tool.baton] must be a table")
        merged = merge(merged, data)
    merged = merge(merged, overrides or {})  # editor/CLI overrides last
    try:
        return BatonConfig.model_validate(merged)
    except ValidationError as exc:
        where = ", ".join(str(s) for s in sources) or "settings"
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise ConfigError(f"{where}: invalid baton configuration: {problems}") from None

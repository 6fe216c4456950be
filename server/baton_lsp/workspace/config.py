"""Loading `[tool.baton]` from pyproject.toml and `.claude/baton.toml`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..lazylog import LazyLogger
from ..model.config import BatonConfig
from ..paths import look
from ..runs.confine import NotRegular, OutsideLink, read_head

log = LazyLogger(__name__)  # not `logging`: a check that logs nothing never loads it

_CONFIG_MAX = 1 << 20


def _read_toml(root: Path, path: Path) -> dict[str, Any]:
    """The TOML of the workspace file `path`, read without following a link out of the
    workspace (its text could end up in an error message: such a file is skipped with a
    warning) or waiting on a FIFO."""
    import tomllib  # here: most trees have no such file, and it imports `datetime`

    try:
        data, size = read_head(root, path, _CONFIG_MAX + 1)
        if size > _CONFIG_MAX:
            raise ConfigError(f"{path}: cannot read: {size} bytes, more than {_CONFIG_MAX}")
        return tomllib.loads(data.decode("utf-8"))
    except OutsideLink as exc:
        log.warning("%s: not read: it is reached through %s, a symbolic link to %s, outside "
                    "the workspace", path, exc.link, exc.target)
        return {}
    except NotRegular:
        raise ConfigError(f"{path}: cannot read: it is not a regular file") from None
    except (OSError, UnicodeDecodeError) as exc:
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


def load_config(root: Path | None, overrides: dict[str, Any] | None = None,
                flags: dict[str, Any] | None = None) -> BatonConfig:
    """Merge pyproject `[tool.baton]`, then `.claude/baton.toml`, then `overrides` (an
    editor's settings: validated like the files), then `flags`: settings the CLI's argument
    parser already checked (`--select`, `--ignore`, `--shellcheck`), put over the result
    without validation. A tree that configures nothing is checked without pydantic."""
    merged: dict[str, Any] = {}
    sources: list[Path] = []
    read: list[dict[str, Any]] = []
    if root is not None:
        sources = config_sources(root)
        read = [_read_toml(root, src) for src in sources]
    for src, data in zip(sources, read, strict=True):
        if src.name == "pyproject.toml":
            data = data.get("tool", {}).get("baton", {})
        if not isinstance(data, dict):
            raise ConfigError(f"{src}: [tool.baton] must be a table")
        merged = merge(merged, data)
    merged = merge(merged, overrides or {})  # editor/CLI overrides last
    config = _validated(merged, sources) if merged else BatonConfig.defaults()
    if not flags:
        return config
    try:
        return config.with_flags({k: v for k, v in flags.items() if v is not None})
    except ValueError as exc:
        raise ConfigError(f"command line: invalid baton configuration: {exc}") from None


def _validated(merged: dict[str, Any], sources: list[Path]) -> BatonConfig:
    from pydantic import ValidationError  # lazy: only a configured tree is validated

    try:
        return BatonConfig.model_validate(merged)
    except ValidationError as exc:
        where = ", ".join(str(s) for s in sources) or "settings"
        problems = "; ".join(_problem(err) for err in exc.errors())
        raise ConfigError(f"{where}: invalid baton configuration: {problems}") from None


def _problem(err: Any) -> str:
    """One of pydantic's errors as the user reads it: the setting's path, then what is
    wrong (a check of several settings names them in its message)."""
    msg = str(err["msg"]).removeprefix("Value error, ")
    if err["type"] == "unexpected_keyword_argument":
        msg = "not a Baton setting"
    loc = ".".join(str(p) for p in err["loc"])
    return f"{loc}: {msg}" if loc else msg

"""What OpenCode's rules read from the workspace beyond the file checked: its configuration
files (`opencode.json(c)` at the root or in `.opencode/`) and whether plugins are installed.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator
from typing import Any

from ..model.opencode import CONFIG_NAMES, OPENCODE_DIR
from ..parse.opencode import blank_jsonc
from ..runs.confine import read_bytes
from .base import SKIPPED_LOG, RuleContext

CONFIG_FILES = (*CONFIG_NAMES, *(f"{OPENCODE_DIR}/{name}" for name in CONFIG_NAMES))
"""Project configuration files OpenCode reads (root, then `.opencode/`)."""
CONFIG_MAX = 1 << 20
"""Bytes of a configuration file read (a larger one is read up to here, and fails to parse)."""
PLUGIN_DIRS = (f"{OPENCODE_DIR}/plugin", f"{OPENCODE_DIR}/plugins")
"""Local plugins: OpenCode loads each `*.{js,ts}` file of these directories."""

skipped = logging.getLogger(SKIPPED_LOG)


def config_data(ctx: RuleContext) -> Iterator[dict[str, Any]]:
    """Each of the workspace's OpenCode configuration files that parses to an object (read
    once per check, not once per agent file asking)."""
    if ctx.root is not None:
        yield from ctx.shared("opencode-config-data", _read_config_data)


def _read_config_data(ctx: RuleContext) -> list[dict[str, Any]]:
    root = ctx.root
    found: list[dict[str, Any]] = []
    if root is None:
        return found
    for rel in CONFIG_FILES:
        path = root / rel
        if not ctx.exists(path):
            continue
        try:
            text = read_bytes(root, path, CONFIG_MAX).decode("utf-8", errors="replace")
            data: Any = json.loads(blank_jsonc(text))
        except (OSError, ValueError, RecursionError) as exc:
            skipped.info("%s: not read (%s)", path, exc)
            continue
        if isinstance(data, dict):
            found.append(data)
    return found


def plugins_installed(ctx: RuleContext) -> bool:
    """True when a plugin may read what OpenCode itself ignores: a configuration's `plugin`
    list names one, or `.opencode/plugin(s)/` holds a file. Plugins receive the resolved
    configuration (agents' `options` among it), so OpenCode's own schema no longer says what
    a key is for."""
    if any(isinstance(d.get("plugin"), list) and d["plugin"] for d in config_data(ctx)):
        return True
    root = ctx.root
    if root is None:
        return False
    inside = os.path.realpath(root) + os.sep
    for rel in PLUGIN_DIRS:
        where = root / rel
        ctx.depends_on.add(str(where))
        if not os.path.realpath(where).startswith(inside):
            continue  # a link out of the workspace: not listed (nothing outside is read)
        try:
            if any(e.is_file() for e in os.scandir(where)):
                return True
        except OSError:
            continue
    return False

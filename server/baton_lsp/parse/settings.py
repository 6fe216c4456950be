"""`.claude/settings(.local).json` → `ClaudeSettings`. Never raises on any text input."""

from __future__ import annotations

import json
from typing import Any

from ..model.base import Range
from ..model.claude_settings import TOO_DEEP, ClaudeSettings
from .text import Source


def parse_settings(source: Source, path: str = "") -> ClaudeSettings:
    """Parse a settings file as strict JSON: Claude Code ignores a file with a comment."""
    if not source.text.strip():
        return ClaudeSettings(path=path, data={})  # nothing set: nothing to report
    try:
        data: Any = json.loads(source.text)
    except RecursionError:
        return ClaudeSettings(path=path, error=TOO_DEEP,
                              error_range=Range.of_line(0))
    except json.JSONDecodeError as exc:
        row = min(exc.lineno - 1, max(len(source.lines) - 1, 0))
        width = len(source.lines[row]) if row < len(source.lines) else 0
        col = min(exc.colno - 1, width)
        return ClaudeSettings(path=path, error=f"{exc.msg} at line {exc.lineno} column "
                              f"{exc.colno}",
                              error_range=Range.of_line(row, col, min(col + 1, width)))
    if not isinstance(data, dict):
        return ClaudeSettings(path=path, error="the settings are not a JSON object",
                              error_range=Range.of_line(0))
    return ClaudeSettings(path=path, data=data)

"""`specs/state.json` task registries → `TaskRegistry`, with the range of every value."""

from __future__ import annotations

import json
from typing import Any

from ..model.base import Range
from ..model.registry import RegistryArtifact, RegistryEntry, TaskRegistry
from .jsonpos import Positions
from .text import Source

ENTRIES_KEY = "active_projects"


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _fail(reg: TaskRegistry, message: str, rng: Range) -> TaskRegistry:
    reg.error, reg.error_range = message, rng
    return reg


def parse_registry(source: Source, path: str = "") -> TaskRegistry:
    """Decode the registry; an unreadable one carries a single `error` instead of a
    traceback, so the rule reporting it can point at the broken line."""
    lines = source.lines
    reg = TaskRegistry(path=path, line_count=len(lines))
    first = Range.of_line(0, 0, len(lines[0]) if lines else 0)
    if not source.text.strip():
        return _fail(reg, "the task registry is empty", first)
    try:
        data: Any = json.loads(source.text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        line = min(max(exc.lineno - 1, 0), max(len(lines) - 1, 0))
        end = len(lines[line]) if lines else 0
        return _fail(reg, f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})",
                     Range.of_line(line, min(max(exc.colno - 1, 0), end), end))
    except RecursionError:
        return _fail(reg, "invalid JSON: nested too deeply", first)
    except ValueError as exc:
        return _fail(reg, f"invalid JSON: {exc}", first)
    if not isinstance(data, dict):
        return _fail(reg, f"a task registry is a JSON object, not {type(data).__name__}",
                     first)
    pos = Positions(source.text)
    for key, value in data.items():
        if not isinstance(value, (dict, list)):
            reg.top[key] = value
            rng = pos.value_range((key,))
            if rng is not None:
                reg.top_ranges[key] = rng
    projects = data.get(ENTRIES_KEY)
    if projects is None:
        return reg
    where = pos.key_range((ENTRIES_KEY,)) or first
    if not isinstance(projects, list):
        return _fail(reg, f"`{ENTRIES_KEY}` is a list of task objects, not "
                          f"{type(projects).__name__}", where)
    for i, item in enumerate(projects):
        at = pos.value_range((ENTRIES_KEY, i)) or where
        if not isinstance(item, dict):
            return _fail(reg, f"`{ENTRIES_KEY}[{i}]` is a task object, not "
                              f"{type(item).__name__}", at)
        entry = RegistryEntry(index=i, range=Range.of_line(
            at.start_line, at.start_char, at.start_char + 1), fields=item)
        for name in item:
            rng = pos.value_range((ENTRIES_KEY, i, name))
            if rng is not None:
                entry.value_ranges[name] = rng
        artifacts = item.get("artifacts")
        if isinstance(artifacts, list):
            for j, art in enumerate(artifacts):
                if not isinstance(art, dict) or not isinstance(art.get("path"), str):
                    continue
                rng = pos.value_range((ENTRIES_KEY, i, "artifacts", j, "path"))
                if rng is None:
                    continue
                kind = art.get("type")
                entry.artifacts.append(RegistryArtifact(
                    path=art["path"], type=kind if isinstance(kind, str) else None, range=rng))
        reg.entries.append(entry)
    return reg

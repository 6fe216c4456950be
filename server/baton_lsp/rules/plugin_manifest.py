"""BTN840-BTN841: Claude Code plugin manifests (`.claude-plugin/plugin.json`) and plugin
marketplaces (`.claude-plugin/marketplace.json`).

The checks are the errors of Claude Code 2.1's own `claude plugin validate` that stop a
plugin from loading or installing (the tests compare with it, and with which plugins
`claude --plugin-dir` loads): a `name` with spaces, component paths that do not start with
`./`, lead out of the plugin or do not exist. Validator errors that do not stop loading (an
`author` string, npm's `repository` object) are not reported, nor are its plugin-directory
submission checks (README, LICENSE, icon): the catalog's policy, not a project's defects.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..model.base import Convention, Finding, Kind, Range, Severity
from ..model.claude_files import JsonFile
from ..parse.jsonpos import Path as JsonPath
from ..parse.jsonpos import Positions
from .base import RuleContext, rule

CC = Convention.CLAUDE_CODE
MANIFEST = (Kind.PLUGIN_MANIFEST,)
COMPONENT_PATHS = ("commands", "agents", "skills", "hooks", "mcpServers", "outputStyles")
"""Manifest keys whose string values (or lists of strings) are paths in the plugin."""
INSTALL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
"""A part of a plugin id (`plugin@marketplace`) Claude Code can install."""


def _positions(ctx: RuleContext) -> Positions:
    pos = ctx.memo.get("manifest-positions")
    if pos is None:
        pos = ctx.memo["manifest-positions"] = Positions("\n".join(ctx.lines))
    return pos


def _at(ctx: RuleContext, path: JsonPath) -> Range:
    pos = _positions(ctx)
    while path:
        span = pos.spans.get(path)
        if span is not None:  # an object or list: its key, not all its lines
            container = pos.text[span.start:span.start + 1] in ("{", "[")
            found = pos.key_range(path) if container else pos.value_range(path)
            if found is not None:
                return found
        path = path[:-1]
    return Range.of_line(0)


def _marketplace(ctx: RuleContext) -> bool:
    return Path(ctx.path).name == "marketplace.json"


def _name_problem(value: Any, what: str, install: bool) -> str | None:
    if not isinstance(value, str) or not value:
        return f"{what} needs a `name` (a non-empty string)"
    if " " in value:
        return f"{what} name `{value}` contains spaces: use kebab-case"
    if install and INSTALL_NAME.match(value) is None:
        return (f"{what} name `{value}` cannot be installed: letters, digits, `.`, `_` and "
                "`-` only, starting with a letter or digit")
    return None


def _paths(value: Any, key: str) -> Iterator[tuple[JsonPath, str]]:
    if isinstance(value, str):
        yield (key,), value
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                yield (key, i), item


def _local(text: str) -> bool:
    return "://" not in text and "${" not in text


def plugin_problems(data: dict[str, Any]) -> list[tuple[JsonPath, str]]:
    """(where, problem) for each error of a plugin.json that stops Claude Code from loading
    the plugin, existence of paths aside. The validator's other errors (an `author` string,
    npm's `repository` object) are left out: the plugin loads all the same."""
    problems: list[tuple[JsonPath, str]] = []
    why = _name_problem(data.get("name"), "the plugin", install=False)
    if why:
        problems.append((("name",), why))
    for key in COMPONENT_PATHS:
        for where, text in _paths(data.get(key), key):
            if not _local(text):
                continue
            if ".." in text.replace("\\", "/").split("/"):
                problems.append((where, f"`{text}` leads out of the plugin (`..`)"))
            elif not text.startswith("./"):
                problems.append((where, f"`{text}` must start with `./` (paths are relative "
                                 "to the plugin root)"))
    return problems


def marketplace_problems(data: dict[str, Any]) -> list[tuple[JsonPath, str]]:
    """The same for a marketplace.json: its name, owner and plugin entries."""
    problems: list[tuple[JsonPath, str]] = []
    why = _name_problem(data.get("name"), "the marketplace", install=True)
    if why:
        problems.append((("name",), why))
    owner = data.get("owner")
    if not (isinstance(owner, dict) and isinstance(owner.get("name"), str)):
        problems.append((("owner",), "`owner` must be an object with a `name`"))
    plugins = data.get("plugins")
    if not isinstance(plugins, list):
        problems.append((("plugins",), "`plugins` must be a list of plugin entries"))
        return problems
    bad_sources: list[tuple[int, str]] = []
    for i, entry in enumerate(plugins):
        if not isinstance(entry, dict):
            problems.append((("plugins", i), "a plugin entry must be an object"))
            continue
        why = _name_problem(entry.get("name"), "the plugin", install=True)
        if why:
            problems.append((("plugins", i, "name"), why))
        source = entry.get("source")
        if isinstance(source, str) and _local(source) and not source.startswith("./") \
                and "/" in source:
            bad_sources.append((i, source))
    if bad_sources:  # one mistake repeated over a catalog: reported once, counted
        i, source = bad_sources[0]
        more = f" ({len(bad_sources)} entries write their source this way)" \
            if len(bad_sources) > 1 else ""
        problems.append((("plugins", i, "source"),
                         f"`{source}` must start with `./` (a local directory) or be an "
                         f"object such as `{{\"source\": \"github\", \"repo\": \"owner/name\"}}`"
                         f"{more}: the marketplace cannot be added"))
    return problems


@rule("BTN840", "plugin-manifest-invalid", Severity.ERROR, MANIFEST, convention=CC)
def manifest_invalid(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """A plugin or marketplace manifest has an error that stops Claude Code from loading the
    plugin, or from installing it from the marketplace.

    `plugin.json` needs a `name` without spaces, and its component paths (`commands`,
    `agents`, `skills`, `hooks`, `mcpServers`, `outputStyles`) start with `./` and stay inside
    the plugin: otherwise Claude Code does not load the plugin at all (checked by loading
    plugins with `--plugin-dir`). `marketplace.json` needs a
    `name` and each plugin entry a `name` made of letters, digits, `.`, `_` and `-` (the
    parts of a `plugin@marketplace` id), an `owner` object, and local sources starting with
    `./`. Not JSON at all is reported too. (`claude plugin validate` prints the same errors.)

    Fix: as the message says.

    Reported:

        ==> .claude-plugin/plugin.json <==
        {
          "name": "cc-observer",
          "version": "0.1.0",
          "author": "Djalma Araujo",
          "commands": ["commands/*.md"]
        }

    Not reported (an `author` string is a validator error, but the plugin loads):

        ==> commands/observe.md <==
        Observe.
        ==> .claude-plugin/plugin.json <==
        {
          "name": "cc-observer",
          "version": "0.1.0",
          "author": "Djalma Araujo",
          "commands": ["./commands/observe.md"]
        }
    """
    if doc.error is not None:
        yield ctx.finding(doc.error_range or Range.of_line(0),
                          f"{Path(ctx.path).name} is not valid JSON ({doc.error}): Claude Code "
                          "cannot read it")
        return
    if not isinstance(doc.data, dict):
        yield ctx.finding(Range.of_line(0), f"{Path(ctx.path).name} is not a JSON object")
        return
    found = marketplace_problems(doc.data) if _marketplace(ctx) else plugin_problems(doc.data)
    for where, problem in found:
        yield ctx.finding(_at(ctx, where), problem)


@rule("BTN841", "plugin-path-missing", Severity.ERROR, MANIFEST, cross_file=True,
      convention=CC)
def path_missing(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """A path in a plugin manifest, or a marketplace's local plugin source, does not exist.

    Claude Code loads a plugin's components from the paths its manifest names (relative to
    the plugin root, the directory holding `.claude-plugin/`); a missing one is a load
    failure, and a missing `mcpServers` file is skipped without a word. A marketplace entry
    whose `source` is a directory of the repository that does not exist cannot be
    installed.

    Fix: correct the path or add the missing files.

    Reported:

        ==> .claude-plugin/plugin.json <==
        {
          "name": "cc-observer",
          "hooks": "./hooks/hooks.json"
        }

    Not reported:

        ==> hooks/hooks.json <==
        {"hooks": {}}
        ==> .claude-plugin/plugin.json <==
        {
          "name": "cc-observer",
          "hooks": "./hooks/hooks.json"
        }
    """
    data = doc.data
    if not isinstance(data, dict):
        return
    root = Path(ctx.path).parent.parent
    top = os.path.normpath(root)
    wanted: list[tuple[JsonPath, str, Path]] = []
    if _marketplace(ctx):
        plugins = data.get("plugins")
        meta = data.get("metadata")
        base = meta.get("pluginRoot") if isinstance(meta, dict) else None
        for i, entry in enumerate(plugins if isinstance(plugins, list) else []):
            source = entry.get("source") if isinstance(entry, dict) else None
            if not isinstance(source, str) or not _local(source):
                continue
            if source.startswith("./"):
                wanted.append((("plugins", i, "source"), source, root / source))
            elif "/" not in source and isinstance(base, str):
                wanted.append((("plugins", i, "source"), source, root / base / source))
    else:
        for key in COMPONENT_PATHS:
            for where, text in _paths(data.get(key), key):
                if _local(text) and text.startswith("./") and not any(
                        c in text for c in "*?["):
                    wanted.append((where, text, root / text))
    place = "repository" if _marketplace(ctx) else "plugin"
    for where, text, target in wanted:
        resolved = os.path.normpath(target)
        if not resolved.startswith(top + os.sep) or ctx.exists(Path(resolved)):
            continue
        yield ctx.finding(_at(ctx, where),
                          f"`{text}` does not exist in the {place}: Claude Code cannot load "
                          "it")

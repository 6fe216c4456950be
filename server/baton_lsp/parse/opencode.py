"""OpenCode agent and command markdown → `OpenCodeAgent` / `OpenCodeCommand`.

The markdown is read as Baton reads any agent or command (positions, links, bash blocks);
the front matter is also read the way OpenCode reads it, so the rules judge what OpenCode
gets. OpenCode's reader (`packages/opencode/src/config/markdown.ts`, commit 0a8a0ed8) is
gray-matter over js-yaml, retried once after `fallbackSanitization` (and answered from
gray-matter's cache when the retry's text is unchanged); js-yaml refuses a key given twice
in one mapping, which PyYAML accepts, so duplicates are looked for here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import yaml

from ..model.base import Range
from ..model.opencode import (
    AGENT_DIRS,
    COMMAND_DIRS,
    MODE_DIRS,
    OPENCODE_DIR,
    FileRef,
    OpenCodeAgent,
    OpenCodeCommand,
    OpenCodeConfig,
    OpenCodeLoad,
    entry_name,
    mode_file,
)
from .agent import parse_agent, parse_command
from .frontmatter import LOADER, PURE_LOADER, YAMLLimitError, check_limits
from .text import Source

_FM_RE = re.compile(r"^---\r?\n([\s\S]*?)\r?\n---")
"""OpenCode's own pattern for the front-matter block (markdown.ts)."""
_FALLBACK_KEY_RE = re.compile(r"^([a-zA-Z_][a-zA-Z0-9_]*)\s*:\s*(.*)$")


def fallback_sanitization(content: str) -> str:
    """OpenCode's `fallbackSanitization`, line for line: a top-level `key: value` whose
    value is unquoted, not a block scalar and holds a `:` becomes `key: |-` + the value."""
    m = _FM_RE.match(content)
    if not m:
        return content
    block = m.group(1)
    out: list[str] = []
    for line in re.split(r"\r?\n", block):
        stripped = line.strip()
        if stripped.startswith("#") or stripped == "" or re.match(r"^\s+", line):
            out.append(line)
            continue
        kv = _FALLBACK_KEY_RE.match(line)
        if not kv:
            out.append(line)
            continue
        key, value = kv.group(1), kv.group(2).strip()
        if value in ("", ">", "|") or value.startswith(('"', "'")):
            out.append(line)
            continue
        if ":" in value:
            out.append(f"{key}: |-")
            out.append(f"  {value}")
            continue
        out.append(line)
    return content.replace(block, "\n".join(out), 1)


class _Refused(Exception):
    def __init__(self, message: str, line: int, col: int) -> None:
        super().__init__(message)
        self.line, self.col = line, col


def _duplicate(node: Any, depth: int = 0) -> tuple[str, Any] | None:
    """The first key given twice in one mapping (js-yaml: "duplicated mapping key")."""
    if depth > 64:
        return None
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                if key.value in seen and key.value != "<<":
                    return key.value, key.start_mark
                seen.add(key.value)
            found = _duplicate(value, depth + 1)
            if found:
                return found
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            found = _duplicate(item, depth + 1)
            if found:
                return found
    return None


_BOOL_TAG = "tag:yaml.org,2002:bool"


def _js_yaml_loader(base: Any) -> Any:
    """`base` reading booleans as js-yaml does: only `true`/`false` (any case), so `yes`,
    `no`, `on` and `off` stay strings (YAML 1.2), where PyYAML's YAML 1.1 makes them
    booleans (`description: yes` is the string "yes" to OpenCode)."""
    loader: Any = type(f"JsYaml{base.__name__}", (base,), {})
    loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag != _BOOL_TAG]
        for first, resolvers in base.yaml_implicit_resolvers.items()}
    loader.add_implicit_resolver(_BOOL_TAG, re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
                                 list("tTfF"))
    return loader


_JS_LOADERS = tuple(dict.fromkeys((_js_yaml_loader(LOADER), _js_yaml_loader(PURE_LOADER))))
"""libyaml's loader first, the pure parser when libyaml refuses (as `safe_load` does)."""


def _js_load(text: str) -> Any:
    """`text` as js-yaml loads it (limits already checked by the caller)."""
    try:
        try:
            return yaml.load(text, Loader=_JS_LOADERS[0])
        except yaml.YAMLError:
            if len(_JS_LOADERS) == 1:
                raise
            return yaml.load(text, Loader=_JS_LOADERS[1])
    except ValueError as exc:  # a number too long for int()
        raise YAMLLimitError(f"front matter holds a number too long to read ({exc})") from None


class _Limit(Exception):
    """Front matter past Baton's YAML limits (aliases, depth, size): not judged."""


def _compose(text: str) -> Any:
    """The YAML node tree of `text`: libyaml first, the pure parser when libyaml refuses
    (its own nesting limit is not a syntax error; see `parse.frontmatter`)."""
    try:
        return yaml.compose(text, Loader=LOADER)
    except yaml.YAMLError:
        if LOADER is PURE_LOADER:
            raise
        return yaml.compose(text, Loader=PURE_LOADER)


def _read_yaml(text: str) -> dict[str, Any]:
    """js-yaml's reading of `text` as gray-matter does it: a mapping (empty → `{}`)."""
    try:
        check_limits(text)  # before anything composes or expands it
    except YAMLLimitError as exc:
        raise _Limit(str(exc)) from exc
    try:
        node = _compose(text)
        data = _js_load(text)
    except YAMLLimitError as exc:
        raise _Limit(str(exc)) from exc
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line, mark.column) if mark is not None else (0, 0)
        raise _Refused(" ".join(str(exc.problem or exc).split()), line, col) from exc
    except yaml.YAMLError as exc:
        raise _Refused(" ".join(str(exc).split()), 0, 0) from exc
    except RecursionError as exc:
        raise _Limit("front matter nests too deeply") from exc
    dup = _duplicate(node)
    if dup is not None:
        raise _Refused(f"duplicated mapping key `{dup[0]}`", dup[1].line, dup[1].column)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise _Refused("front matter is not a mapping of keys to values", 0, 0)
    return {str(k): v for k, v in data.items()}


def opencode_load(text: str, lines: list[str]) -> OpenCodeLoad:
    """The front matter of `text` as OpenCode reads it (see the module docstring)."""
    m = _FM_RE.match(text)
    if not m:
        return OpenCodeLoad(data={})
    try:
        return OpenCodeLoad(data=_read_yaml(m.group(1)))
    except _Limit as exc:
        return OpenCodeLoad(unchecked=str(exc))
    except _Refused as first:
        strict = first
    line = min(strict.line + 1, max(len(lines) - 1, 0))
    width = len(lines[line]) if line < len(lines) else 0
    where = Range.of_line(line, min(strict.col, width), width)
    retry = fallback_sanitization(text)
    if retry == text:  # gray-matter's cache answers the retry: loaded, front matter unread
        return OpenCodeLoad(data={}, error=str(strict), error_range=where, raw=True)
    sanitized = _FM_RE.match(retry)
    try:
        data = _read_yaml(sanitized.group(1) if sanitized else "")
    except _Limit as exc:
        return OpenCodeLoad(unchecked=str(exc))
    except _Refused:
        return OpenCodeLoad(error=str(strict), error_range=where)
    return OpenCodeLoad(data=data, fallback=True)


_NAME_LINE_RE = re.compile(r"""^name[ \t]*:[ \t]*(["']?)([^"'#\s][^"'#]*?)\1[ \t]*$""")


def _plain_name(lines: list[str]) -> str | None:
    """A top-level `name: x` line of the front matter, read line by line: for front matter
    past Baton's YAML limits, which no YAML reader of Baton's expands."""
    for line in lines[1:]:
        if line.rstrip() == "---":
            return None
        m = _NAME_LINE_RE.match(line)
        if m:
            return m.group(2)
    return None


def _rel(path: str) -> str:
    """`path` from its `.opencode/` directory on (`.opencode/agent/x.md`)."""
    parts = path.replace("\\", "/").split("/")
    if OPENCODE_DIR in parts:
        idx = len(parts) - 1 - parts[::-1].index(OPENCODE_DIR)
        return "/".join(parts[idx:])
    return parts[-1]


def parse_opencode_agent(source: Source, path: str = "") -> OpenCodeAgent:
    """Parse an OpenCode agent file. Never raises on any text input."""
    doc = parse_agent(source, path)
    load = opencode_load(source.text, source.lines)
    is_mode = mode_file(path)
    name = entry_name(_rel(path), MODE_DIRS if is_mode else AGENT_DIRS)
    if load.data is not None and isinstance(load.data.get("name"), str):
        name = load.data["name"]
    elif load.unchecked is not None:
        name = _plain_name(source.lines) or name
    return OpenCodeAgent.model_construct(**doc.__dict__, load=load, agent_name=name,
                                         is_mode=is_mode)


def parse_opencode_command(source: Source, path: str = "") -> OpenCodeCommand:
    """Parse an OpenCode command file. Never raises on any text input."""
    doc = parse_command(source, path)
    load = opencode_load(source.text, source.lines)
    name = entry_name(_rel(path), COMMAND_DIRS)
    if load.data is not None and isinstance(load.data.get("name"), str):
        name = load.data["name"]
    return OpenCodeCommand.model_construct(**doc.__dict__, load=load, command_name=name)


_FILE_REF_OPEN = "{file:"


def file_refs(line: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each of OpenCode's `{file:path}` tokens in `line` (`config/variable.ts`:
    `{file:` and a non-empty path up to the next `}`), found in linear time: the regex
    `\\{file:[^}]+\\}` scans to the end of the line from every `{file:` when no `}` follows,
    which took seconds on a long line of them. Once one has no `}` after it, none after it
    has either."""
    at = line.find(_FILE_REF_OPEN)
    while at >= 0:
        close = line.find("}", at + len(_FILE_REF_OPEN))
        if close < 0:
            return
        if close > at + len(_FILE_REF_OPEN):
            yield at, close + 1
        at = line.find(_FILE_REF_OPEN, close + 1)


def blank_jsonc(text: str) -> str:
    """`text` as plain JSON with every offset kept: JSONC comments and trailing commas
    (which OpenCode's parser accepts) become spaces, newlines stay."""
    out = list(text)
    i, n = 0, len(text)
    last_comma: int | None = None
    while i < n:
        c = text[i]
        if c == '"':
            last_comma = None
            i += 1
            while i < n and text[i] not in '"\n':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if text.startswith("//", i) or text.startswith("/*", i):
            if text[i + 1] == "/":
                end = text.find("\n", i)
                end = n if end < 0 else end
            else:
                end = text.find("*/", i + 2)
                end = n if end < 0 else end + 2
            for j in range(i, end):
                if out[j] != "\n":
                    out[j] = " "
            i = end
            continue
        if c == ",":
            last_comma = i
        elif c in "}]" and last_comma is not None:
            out[last_comma] = " "
            last_comma = None
        elif not c.isspace():
            last_comma = None
        i += 1
    return "".join(out)


def parse_opencode_config(source: Source, path: str = "") -> OpenCodeConfig:
    """Parse `opencode.json(c)` as OpenCode does (JSONC). Never raises on any text input."""
    refs: list[FileRef] = []
    for no, line in enumerate(source.lines):
        if "{file:" not in line:
            continue
        commented = line.lstrip().startswith("//")
        for start, end in file_refs(line):
            if commented and line[:start].lstrip().startswith("//"):
                continue  # OpenCode leaves a commented-out reference alone
            token = line[start:end]
            refs.append(FileRef(token=token, target=token[len(_FILE_REF_OPEN):-1],
                                range=Range.of_line(no, start, end)))
    try:
        data: Any = json.loads(blank_jsonc(source.text))
    except RecursionError:
        return OpenCodeConfig(path=path, error="nested too deeply to read",
                              error_range=Range.of_line(0), file_refs=refs)
    except json.JSONDecodeError as exc:
        row = min(exc.lineno - 1, max(len(source.lines) - 1, 0))
        width = len(source.lines[row]) if row < len(source.lines) else 0
        col = min(exc.colno - 1, width)
        return OpenCodeConfig(path=path, error=exc.msg, file_refs=refs,
                              error_range=Range.of_line(row, col, min(col + 1, width)))
    if not isinstance(data, dict):
        return OpenCodeConfig(path=path, error="the configuration is not a JSON object",
                              error_range=Range.of_line(0), file_refs=refs)
    return OpenCodeConfig(path=path, data=data, file_refs=refs)

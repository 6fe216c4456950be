"""`.mcp.json` and instruction files (`CLAUDE.md`, `.claude/rules/*.md`) → their models.

Imports are read the way Claude Code 2.1's loader reads them: `(?:^|\\s)@((?:[^\\s\\\\]|\\\\ )+)`
in markdown text (code fences, code spans and HTML comments are skipped), the `#fragment`
dropped, and only targets that start with `./`, `~/`, `/` or a name character kept."""

from __future__ import annotations

import json
import re

from ..model.base import Range
from ..model.claude_files import ContextFile, JsonFile, MemoryFile, MemoryImport
from .common import line_links, suppressions
from .frontmatter import parse_frontmatter
from .markdown import blank_code_spans, parse_markdown
from .text import Source

_IMPORT_RE = re.compile(r"(?:^|\s)@((?:[^\s\\]|\\ )+)")
_NAME_START = re.compile(r"^[a-zA-Z0-9._-]")
_SYMBOLS = re.compile(r"^[#%^&*()]+")


def _is_import(target: str) -> bool:
    """The loader's own test of what an `@token` may name."""
    if target.startswith(("./", "~/")) or (target.startswith("/") and target != "/"):
        return True
    return (not target.startswith("@") and _SYMBOLS.match(target) is None
            and _NAME_START.match(target) is not None)


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s")


def _indented_code(lines: list[str], no: int) -> bool:
    """An indented code block's line (four spaces or a tab after a blank line, not a list
    item's continuation): code to the loader, so no import."""
    line = lines[no]
    if not line.startswith(("    ", "\t")) or _LIST_ITEM.match(line):
        return False
    j = no - 1
    while j >= 0 and lines[j].startswith(("    ", "\t")) and lines[j].strip():
        j -= 1
    return j < 0 or not lines[j].strip()


def parse_json_file(source: Source, path: str = "") -> JsonFile:
    """Parse `.mcp.json` or a plugin manifest as strict JSON (Claude Code rejects the file
    otherwise). Never raises on any text input."""
    try:
        data = json.loads(source.text)
    except RecursionError:
        return JsonFile(path=path, error="nested too deeply to read",
                         error_range=Range.of_line(0))
    except json.JSONDecodeError as exc:
        row = min(exc.lineno - 1, max(len(source.lines) - 1, 0))
        width = len(source.lines[row]) if row < len(source.lines) else 0
        col = min(exc.colno - 1, width)
        return JsonFile(path=path, error=exc.msg,
                         error_range=Range.of_line(row, col, min(col + 1, width)))
    return JsonFile(path=path, data=data)


def parse_memory(source: Source, path: str = "") -> MemoryFile:
    """The `@path` imports of an instruction file and its front matter (rules files scope
    themselves with `paths:`)."""
    md = parse_markdown(source)
    doc = MemoryFile(path=path)
    if md.frontmatter_end > 0:
        doc.frontmatter = parse_frontmatter(source.lines, md.frontmatter_end)
    imports: list[MemoryImport] = []
    lines = source.lines
    for no, line in md.text_lines(md.frontmatter_end + 1):
        if "@" not in line or _indented_code(lines, no):
            continue
        text = blank_code_spans(line)
        for m in _IMPORT_RE.finditer(text):
            raw = m.group(1)
            target = raw.split("#", 1)[0].replace("\\ ", " ")
            if not target or not _is_import(target):
                continue
            imports.append(MemoryImport(target=target,
                                        range=Range.of_line(no, m.start(1) - 1, m.end(1))))
    doc.imports = imports
    return doc


def parse_context(source: Source, path: str = "") -> ContextFile:
    """A context document's `@path` references (read as Claude Code reads imports) and its
    relative links, both outside code fences and code spans."""
    md = parse_markdown(source, frontmatter=True)
    links = []
    for no, line in md.text_lines(md.frontmatter_end + 1):
        if "](" in line:
            links.extend(line_links(no, line))
    return ContextFile(path=path, imports=parse_memory(source, path).imports, links=links,
                       suppressions=suppressions(md))

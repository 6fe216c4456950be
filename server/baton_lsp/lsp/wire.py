"""LSP on the wire without lsprotocol: URIs ↔ paths, UTF-16 columns, edits applied with
LSP's line rules, findings as the JSON of a `Diagnostic` and their publication.

`diagnostic_json` is the one encoder of findings: pushes are written with it directly (no
cattrs on the way to the first diagnostics), and `convert.to_diagnostic` structures its
output where a typed `Diagnostic` is needed (pull reports, code actions).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pygls import uris  # plain functions over urllib: no lsprotocol behind them

from ..paths import norm

if TYPE_CHECKING:
    from ..model.base import Finding, Fix, Range

SOURCE = "baton"
SEVERITY = {"error": 1, "warning": 2, "info": 3, "hint": 4}
"""LSP `DiagnosticSeverity` by `Severity` value (a StrEnum compares equal to its value)."""
TAGS = {"unnecessary": 1, "deprecated": 2}
"""LSP `DiagnosticTag` by finding tag."""
POSITION_ENCODING = "utf-16"
"""The only column unit Baton speaks: LSP's default, which every client must support."""

MAX_PATH_BYTES = 4096
MAX_NAME_BYTES = 255


def path_to_uri(path: str | Path) -> str:
    return _path_to_uri(str(path))


@functools.lru_cache(maxsize=16384)
def _path_to_uri(path: str) -> str:
    """Cached: each publication quotes its path, and related locations theirs."""
    return uris.from_fs_path(path) or Path(path).as_uri()


def uri_to_path(uri: str) -> str | None:
    """The file path of a `file:` URI, or None for any other URI and for one no file can
    have: a NUL byte (`%00`), a lone surrogate, a path or name too long for the system.
    Handlers treat None as "not a file of ours"; such paths made every `os` call raise
    (`embedded null byte`, `File name too long`)."""
    try:
        path = uris.to_fs_path(uri)
    except (ValueError, IndexError):  # urlparse on a malformed netloc ("file://[x")
        return None
    if not path or "\x00" in path:
        return None
    try:
        raw = os.fsencode(path)
    except UnicodeError:
        return None
    if len(raw) >= MAX_PATH_BYTES or any(len(part) > MAX_NAME_BYTES
                                         for part in raw.replace(b"\\", b"/").split(b"/")):
        return None
    return path


@functools.lru_cache(maxsize=16384)
def uri_path(uri: str) -> str | None:
    """The normalised file path of `uri` (None if it names no file of ours); cached, as
    every edit, publication and request asks."""
    path = uri_to_path(uri)
    return norm(path) if path else None


def utf16_col(line: str, char: int) -> int:
    """The UTF-16 column of code point `char` on `line` (clamped to the line)."""
    if line.isascii():
        return min(char, len(line))
    prefix = line[:char]
    return len(prefix) + sum(1 for ch in prefix if ord(ch) > 0xFFFF)


def cp_col(line: str, col16: int) -> int:
    """The code point index of UTF-16 column `col16` on `line` (clamped to the line)."""
    if line.isascii():
        return min(col16, len(line))
    units = 0
    for i, ch in enumerate(line):
        if units >= col16:
            return i
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line)


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def _offset(source: str, line: int, char16: int) -> int:
    """Index into `source` of an LSP position: lines end at \n, \r\n or \r only, the
    column counts UTF-16 units; both are clamped to the text (LSP: a column past the end
    of its line means the end of the line)."""
    start = 0
    if line > 0:
        if "\r" not in source:
            parts = source.split("\n", line)  # the first `line` lines, cut in C
            if len(parts) <= line:
                return len(source)
            start = len(source) - len(parts[-1])
        else:
            for seen, m in enumerate(_LINE_BREAK.finditer(source), 1):
                if seen == line:
                    start = m.end()
                    break
            else:
                return len(source)
    brk = _LINE_BREAK.search(source, start)
    end = brk.start() if brk else len(source)
    return start + cp_col(source[start:end], char16)


class Change(Protocol):
    """One `contentChanges` item as lsprotocol structures it (a range replacement when it
    has a `range`, else the whole text)."""

    @property
    def text(self) -> str: ...


def apply_change(source: str, change: Change) -> str:
    """`source` after one `contentChanges` item (a range replacement or the whole text).

    LSP's lines end at \n, \r\n or \r only: pygls' `str.splitlines` also breaks at
    U+2028, U+0085 and form feeds, which put every edit below one a line off."""
    rng = getattr(change, "range", None)
    if rng is None:
        return change.text
    a = _offset(source, rng.start.line, rng.start.character)
    b = _offset(source, rng.end.line, rng.end.character)
    if b < a:
        a, b = b, a
    return source[:a] + change.text + source[b:]


def position(line: int, char: int, lines: Sequence[str]) -> tuple[int, int]:
    """(line, UTF-16 column) of a core position, both clamped at 0."""
    text = lines[line] if 0 <= line < len(lines) else ""
    return max(line, 0), utf16_col(text, max(char, 0))


def range_json(r: Range, lines: Sequence[str]) -> dict[str, Any]:
    (sl, sc), (el, ec) = position(r.start_line, r.start_char, lines), \
        position(r.end_line, r.end_char, lines)
    return {"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}}


def fix_to_data(fix: Fix) -> dict[str, Any]:
    """`fix.model_dump(mode="json")`, written out: dumping through pydantic would build its
    serialiser on the way to a server's first diagnostics (the test keeps them equal)."""
    def rng(r: Range) -> dict[str, int]:
        return {"start_line": r.start_line, "start_char": r.start_char,
                "end_line": r.end_line, "end_char": r.end_char}

    return {"title": fix.title,
            "edits": [{"path": e.path, "range": rng(e.range), "new_text": e.new_text}
                      for e in fix.edits],
            "safe": fix.safe}


def diagnostic_data(f: Finding) -> dict[str, Any]:
    """What a diagnostic carries back to code actions: its rule and its fix."""
    data: dict[str, Any] = {"rule": f.rule}
    if f.fix is not None:
        data["fix"] = fix_to_data(f.fix)
    return data


def diagnostic_json(f: Finding, lines: Sequence[str],
                    lines_of: Callable[[str], Sequence[str]] | None = None) -> dict[str, Any]:
    """`f` as the JSON of an LSP `Diagnostic`: the one encoding of a finding (typed, it is
    `convert.to_diagnostic`; the test writes that back and compares on the whole corpus)."""
    out: dict[str, Any] = {"range": range_json(f.range, lines), "message": f.message,
                           "severity": SEVERITY[f.severity], "code": f.code,
                           "codeDescription": {"href": f.url}, "source": SOURCE}
    if f.related:
        out["relatedInformation"] = [
            {"location": {"uri": path_to_uri(rel.path), "range": range_json(
                rel.range, lines if rel.path == f.path or lines_of is None
                else lines_of(rel.path))},
             "message": rel.message} for rel in f.related]
    tags = [TAGS[t] for t in f.tags if t in TAGS]
    if tags:
        out["tags"] = tags
    out["data"] = diagnostic_data(f)
    return out


def publish_diagnostics(uri: str, version: int | None,
                        diagnostics: list[dict[str, Any]]) -> dict[str, Any]:
    """The `textDocument/publishDiagnostics` notification as lsprotocol writes it (no
    `version` when there is none)."""
    params: dict[str, Any] = {"uri": uri, "diagnostics": diagnostics}
    if version is not None:
        params["version"] = version
    return {"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": params}


CLIENT_LOG_FORMAT = "%(name)s: %(message)s"
"""How a log record reads in the client's output (`window/logMessage`)."""
_MESSAGE_TYPES = ((logging.ERROR, 1), (logging.WARNING, 2), (logging.INFO, 3))


def log_message(levelno: int, text: str) -> dict[str, Any]:
    """`window/logMessage` for a record of level `levelno`: LSP's Error, Warning, Info, or
    Log for DEBUG and below."""
    kind = next((t for level, t in _MESSAGE_TYPES if levelno >= level), 4)
    return {"jsonrpc": "2.0", "method": "window/logMessage",
            "params": {"type": kind, "message": text}}

"""Rendering findings: text (like ruff), JSON, SARIF 2.1.0 and GitHub annotations."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from pathlib import Path
from typing import Any

from .. import __version__
from ..model.base import Finding, Range, Severity
from ..rules.base import Rule, all_rules
from ..terminal import terminal_safe

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_COLORS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36", Severity.HINT: "2"}


def display_path(path: str, cwd: Path | None = None) -> str:
    base = str(cwd or Path.cwd())
    try:
        rel = os.path.relpath(path, base)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _display_paths() -> Callable[[str], str]:
    """`display_path` under the current directory, each path worked out once: a report
    names the same few files over and over, and `relpath` normalises both paths each
    time."""
    base = Path.cwd()
    shown: dict[str, str] = {}

    def display(path: str) -> str:
        rel = shown.get(path)
        if rel is None:
            rel = shown[path] = display_path(path, base)
        return rel

    return display


def _pos(r: Range) -> dict[str, int]:
    return {"line": r.start_line + 1, "column": r.start_char + 1}


def _end(r: Range) -> dict[str, int]:
    return {"line": r.end_line + 1, "column": r.end_char + 1}


def summary(findings: list[Finding], files: int) -> str:
    if not findings:
        return f"All checks passed ({files} file{'s' if files != 1 else ''} checked)."
    counts = Counter(f.severity for f in findings)
    parts = [f"{counts[s]} {s.value}{'s' if counts[s] != 1 else ''}"
             for s in Severity if counts[s]]
    safe = sum(1 for f in findings if f.fix is not None and f.fix.safe)
    unsafe = sum(1 for f in findings if f.fix is not None and not f.fix.safe)
    nfiles = len({f.path for f in findings})
    text = (f"Found {len(findings)} problem{'s' if len(findings) != 1 else ''} "
            f"({', '.join(parts)}) in {nfiles} of {files} files.")
    if safe:  # as ruff's "[*] N fixable with the `--fix` option"
        text += f" {safe} fixable with --fix (the editor's fix-all)"
        text += f", {unsafe} more with --unsafe-fixes." if unsafe else "."
    elif unsafe:
        text += f" {unsafe} fixable with --fix --unsafe-fixes (quick fixes in the editor)."
    return text


def render_text(findings: list[Finding], files: int, color: bool = False) -> str:
    """One line per finding, for a terminal: messages quote file content (titles, names,
    values) and paths are names from the tree, so both are made terminal-safe before Baton
    adds its own colours."""
    lines = []
    for f in findings:
        loc = (f"{terminal_safe(display_path(f.path))}:{f.range.start_line + 1}:"
               f"{f.range.start_char + 1}:")
        code = f.code
        if color:
            loc = f"\x1b[1m{loc}\x1b[0m"
            code = f"\x1b[{_COLORS[f.severity]}m{code}\x1b[0m"
        lines.append(f"{loc} {code} {terminal_safe(f.message)}")
    lines.append(summary(findings, files))
    return "\n".join(lines) + "\n"


def finding_json(f: Finding, display: Callable[[str], str] = display_path) -> dict[str, Any]:
    out: dict[str, Any] = {
        "code": f.code,
        "rule": f.rule,
        "severity": f.severity.value,
        "message": f.message,
        "filename": display(f.path),
        "location": _pos(f.range),
        "end_location": _end(f.range),
        "url": f.url,
        "related": [
            {"filename": display(r.path), "location": _pos(r.range),
             "end_location": _end(r.range), "message": r.message}
            for r in f.related
        ],
        "fix": None,
    }
    if f.fix is not None:
        out["fix"] = {
            "title": f.fix.title,
            "safe": f.fix.safe,
            "edits": [{"filename": display(e.path), "location": _pos(e.range),
                       "end_location": _end(e.range), "content": e.new_text}
                      for e in f.fix.edits],
        }
    return out


def render_json(findings: list[Finding]) -> str:
    display = _display_paths()
    return indented_json([finding_json(f, display) for f in findings]) + "\n"


def indented_json(value: object) -> str:
    """`json.dumps(value, indent=2, ensure_ascii=False)` for what `finding_json` makes
    (dicts with string keys, lists, strings, numbers, booleans, None), character for
    character (`tests/cli/test_output_json.py`): with an indent, `json` encodes in pure
    Python through a generator per container, twice as slow as this."""
    out: list[str] = []
    _indented(value, "\n", out)
    return "".join(out)


_INF = float("inf")


def _indented(value: object, newline: str, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(encode_basestring(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, float):  # as `json`'s default `allow_nan=True` writes them
        out.append("NaN" if value != value else "Infinity" if value == _INF
                   else "-Infinity" if value == -_INF else float.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = newline + "  "
        separator = "{" + inner
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"keys must be str, not {type(key).__name__}")
            out += (separator, encode_basestring(key), ": ")
            _indented(item, inner, out)
            separator = "," + inner
        out.append(newline + "}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = newline + "  "
        separator = "[" + inner
        for item in value:
            out.append(separator)
            _indented(item, inner, out)
            separator = "," + inner
        out.append(newline + "]")
    else:
        raise TypeError(f"{type(value).__name__} is not written as JSON here")


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note",
                Severity.HINT: "note"}


def _uri(path: str) -> str:
    rel = display_path(path)
    if os.path.isabs(rel):
        return Path(rel).as_uri()
    return rel.replace(os.sep, "/")


def _region(r: Range) -> dict[str, int]:
    return {"startLine": r.start_line + 1, "startColumn": r.start_char + 1,
            "endLine": r.end_line + 1, "endColumn": r.end_char + 1}


def _location(path: str, r: Range) -> dict[str, Any]:
    return {"physicalLocation": {
        "artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"},
        "region": _region(r)}}


def render_sarif(findings: list[Finding], rules: Iterable[Rule] | None = None) -> str:
    rule_list = list(rules) if rules is not None else all_rules()
    index = {r.code: i for i, r in enumerate(rule_list)}
    results = []
    for f in findings:
        result: dict[str, Any] = {
            "ruleId": f.code,
            "level": _SARIF_LEVEL[f.severity],
            "message": {"text": f.message},
            "locations": [_location(f.path, f.range)],
        }
        if f.code in index:
            result["ruleIndex"] = index[f.code]
        if f.related:
            result["relatedLocations"] = [
                {"id": i, **_location(r.path, r.range), "message": {"text": r.message}}
                for i, r in enumerate(f.related)]
        if f.fix is not None:
            by_file: dict[str, list[dict[str, Any]]] = {}
            for e in f.fix.edits:
                by_file.setdefault(e.path, []).append({
                    "deletedRegion": _region(e.range),
                    "insertedContent": {"text": e.new_text}})
            result["fixes"] = [{
                "description": {"text": f.fix.title},
                "artifactChanges": [
                    {"artifactLocation": {"uri": _uri(p), "uriBaseId": "%SRCROOT%"},
                     "replacements": reps} for p, reps in by_file.items()]}]
        results.append(result)
    doc = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "baton",
                "semanticVersion": __version__,
                "informationUri": "https://baton-lsp.dev",
                "rules": [{
                    "id": r.code,
                    "name": r.name,
                    "shortDescription": {"text": r.summary},
                    "fullDescription": {"text": r.doc},
                    "helpUri": r.url,
                    "defaultConfiguration": {"level": _SARIF_LEVEL[r.severity]},
                } for r in rule_list],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().as_uri() + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _gh_escape(value: str, prop: bool = False) -> str:
    value = value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    if prop:
        value = value.replace(":", "%3A").replace(",", "%2C")
    return value


_GH_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice",
             Severity.HINT: "notice"}


def render_github(findings: list[Finding]) -> str:
    out = []
    for f in findings:
        r = f.range
        props = (f"file={_gh_escape(display_path(f.path), True)},line={r.start_line + 1},"
                 f"col={r.start_char + 1},endLine={r.end_line + 1},endColumn={r.end_char + 1},"
                 f"title={_gh_escape(f'{f.code} {f.rule}', True)}")
        out.append(f"::{_GH_LEVEL[f.severity]} {props}::{_gh_escape(f.message)}")
    return "\n".join(out) + ("\n" if out else "")

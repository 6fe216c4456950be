"""State files, the errors log and report metadata."""

from __future__ import annotations

import json
import re

from ..lazy_pattern import LazyPattern
from ..model.base import Range
from ..model.data import (
    BadLine,
    CheckpointDoc,
    ErrorRecord,
    ErrorsLog,
    LoggedError,
    ReportMeta,
    StateEntry,
    StateFile,
    StateProblem,
)
from .common import line_links
from .markdown import parse_markdown
from .text import Source

_ASSIGN_RE = re.compile(r"^\s*(export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def _scan_value(lines: list[str], no: int, col: int) -> tuple[str, int, int, bool]:
    """Read a shell value starting at (no, col); returns (value, end_line, end_col, balanced).

    Double-quoted values may span lines (`REPORT_PATHS_JSON="[ ... ]"`) and honour backslash
    escapes; single quotes have no escapes. Unquoted values end at whitespace.
    """
    line = lines[no]
    if col >= len(line):
        return "", no, col, True
    quote = line[col]
    if quote not in "\"'":
        end = col
        while end < len(line) and not line[end].isspace():
            end += 1
        return line[col:end], no, end, True
    out: list[str] = []
    i, cur = col + 1, no
    limit = min(len(lines), no + 500)
    while cur < limit:
        text = lines[cur]
        while i < len(text):
            ch = text[i]
            if quote == '"' and ch == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
                continue
            if ch == quote:
                return "".join(out), cur, i + 1, True
            out.append(ch)
            i += 1
        out.append("\n")
        cur += 1
        i = 0
    return "".join(out), no, len(line), False


def parse_state(source: Source, path: str = "") -> StateFile:
    """Parse a workflow state file (`export KEY="value"` lines, last one wins)."""
    lines = source.lines
    state = StateFile(path=path, line_count=len(lines))
    no = 0
    while no < len(lines):
        line = lines[no]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            no += 1
            continue
        m = _ASSIGN_RE.match(line)
        if not m:
            no += 1
            continue
        col = m.start(3)
        value, end_line, end_col, balanced = _scan_value(lines, no, col)
        if not balanced:
            state.problems.append(StateProblem(
                message=f"unbalanced quote in the value of {m.group(2)}: the opening "
                        f"{line[col]} is never closed",
                range=Range.of_line(no, col, len(line))))
            no += 1
            continue
        raw_tail = lines[end_line][end_col:]
        tail = raw_tail.strip()
        glued = bool(raw_tail) and not raw_tail[0].isspace() and line[col] == '"' and '"' in tail
        # Text glued to the closing quote that itself holds quotes (`"["a"]"`) means inner
        # double quotes were not escaped: bash concatenates the pieces and drops them.
        if tail and not tail.startswith("#") and (tail.count('"') % 2 == 1 or glued):
            state.problems.append(StateProblem(
                message=f"unbalanced quoting after the value of {m.group(2)}: "
                        "inner double quotes are not escaped",
                range=Range.span(no, col, end_line, len(lines[end_line]))))
        state.entries.append(StateEntry(
            key=m.group(2), value=value, exported=bool(m.group(1)),
            range=Range.span(no, len(line) - len(line.lstrip()), end_line, len(lines[end_line])),
            value_range=Range.span(no, col, end_line, end_col),
        ))
        no = end_line + 1
    return state


def parse_errors_log(source: Source, path: str = "") -> ErrorsLog:
    """Parse `errors.jsonl`: one JSON object per line, both record shapes."""
    log = ErrorsLog(path=path, line_count=len(source.lines))
    for no, line in enumerate(source.lines):
        if not line.strip():
            continue
        rng = Range.of_line(no, 0, len(line))
        try:
            obj = json.loads(line)
        except ValueError as exc:
            log.bad_lines.append(BadLine(line=no, message=f"not valid JSON: {exc}", range=rng))
            continue
        except RecursionError:
            log.bad_lines.append(BadLine(
                line=no, message="JSON that nests too deeply to read (arrays or objects "
                                 "hundreds of levels deep)", range=rng))
            continue
        if not isinstance(obj, dict):
            log.bad_lines.append(BadLine(
                line=no, message=f"expected a JSON object, found {type(obj).__name__}",
                range=rng))
            continue
        try:
            record = ErrorRecord.model_validate(obj)
        except (ValueError, RecursionError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            log.bad_lines.append(BadLine(line=no, message=f"not an error record ({reason})",
                                         range=rng))
            continue
        log.records.append(LoggedError(line=no, range=rng, record=record))
    return log


_META_LINE_RE = LazyPattern(r"^\s*[-*]\s+\*\*([^*]+?)\*\*\s*:?\s*((?:.*\S)?)\s*$")


def parse_report(source: Source, path: str = "") -> ReportMeta:
    """Title, `## Metadata` bullets and links of a research report or summary."""
    md = parse_markdown(source)
    report = ReportMeta(path=path, line_count=len(source.lines))
    in_meta = False
    for h in md.headings:
        if h.level == 1 and report.title is None:
            report.title = h.text
            report.title_range = Range.of_line(h.line, h.text_start, h.end_char)
    meta_lines: set[int] = set()
    for i, h in enumerate(md.headings):
        if h.level == 2 and h.text.strip().lower() == "metadata":
            end = next((x.line for x in md.headings[i + 1:] if x.level <= 2), len(md.lines))
            meta_lines = set(range(h.line + 1, end))
            in_meta = True
            break
    for no, line in md.text_lines():
        if in_meta and no in meta_lines:
            m = _META_LINE_RE.match(line)
            if m:
                report.metadata[m.group(1).strip().rstrip(":")] = m.group(2)
        if "](" in line:
            report.links.extend(line_links(no, line))
    return report


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_checkpoint_file(source: Source, path: str = "") -> CheckpointDoc:
    """Decode a checkpoint's JSON; schema checks are rules (they need positions only when
    something is wrong)."""
    doc = CheckpointDoc(path=path, line_count=len(source.lines))
    if not source.text.strip():
        doc.error, doc.error_range = "the checkpoint file is empty", Range.of_line(0)
        return doc
    try:
        data = json.loads(source.text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        line = min(max(exc.lineno - 1, 0), max(len(source.lines) - 1, 0))
        col = max(exc.colno - 1, 0)
        end = len(source.lines[line]) if source.lines else 0
        doc.error = f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
        doc.error_range = Range.of_line(line, min(col, end), end)
        return doc
    except RecursionError:
        doc.error, doc.error_range = "invalid JSON: nested too deeply", Range.of_line(0)
        return doc
    except ValueError as exc:
        doc.error, doc.error_range = f"invalid JSON: {exc}", Range.of_line(0)
        return doc
    if not isinstance(data, dict):
        doc.error = f"a checkpoint is a JSON object, not {type(data).__name__}"
        doc.error_range = Range.of_line(0, 0, len(source.lines[0]) if source.lines else 0)
        return doc
    doc.data = data
    return doc

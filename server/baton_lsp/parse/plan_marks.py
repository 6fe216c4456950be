"""The plan's progress markers as the seeds' implementer keeps them, edited in place: a phase's
heading marker (`[IN PROGRESS]`, `[COMPLETE]`), its task boxes (`- [ ]` → `- [x]`, that phase's
section only) and the metadata `**Status**` line, at the positions the plan parser found.

Only those characters change: line endings (LF, CRLF, lone CR), trailing blanks, a missing
final newline, a byte order mark and every other phase's text are kept byte for byte. The same
positions give the phase's fingerprint, its section without markers or boxes, so marking a
phase never reads as an edit of it (resume re-runs a phase whose section changed).
"""

from __future__ import annotations

import re

from ..model.plan import FINISHED, STARTED, Phase, Plan, is_done
from .plan import parse_plan
from .text import Source, UnreadableError, decode, split_lines

_BOM = b"\xef\xbb\xbf"
_LINE_END = re.compile(r"(\r\n|\r|\n)")
_OPEN_BOXES = " ~"

Edit = tuple[int, int, int, str]
"""(line, start, end, replacement) in the parser's line and character positions."""


def mark_phase(data: bytes, phase_id: str, word: str, tick: bool = False) -> bytes | None:
    """`data` with phase `phase_id` marked `[word]` — its heading marker replaced, else its
    body `**Status**` value, else the marker appended to the heading — its open boxes ticked
    with `tick`, and the metadata Status following (`COMPLETE` once every phase is done, else
    `IN PROGRESS`) where the plan has one. None when the text is not a readable plan or has
    no such phase (a plan the user renumbered meanwhile)."""
    bom = _BOM if data.startswith(_BOM) else b""
    try:
        text = decode(data)
    except UnreadableError:
        return None
    plan = parse_plan(Source.from_text(text))
    phase = plan.phase(phase_id)
    if phase is None:
        return None
    lines, ends = _split(text)
    edits = [_marker_edit(phase, lines, word)]
    if tick:
        edits += [(t.checkbox_range.start_line, t.checkbox_range.start_char + 1,
                   t.checkbox_range.start_char + 2, "x")
                  for t in phase.tasks if t.marker in _OPEN_BOXES]
    text = _apply(lines, ends, edits)
    status = _plan_status_edit(parse_plan(Source.from_text(text)), split_lines(text))
    if status is not None:
        lines, ends = _split(text)
        text = _apply(lines, ends, [status])
    return bom + text.encode("utf-8")


def phase_fingerprints(text: str, plan: Plan) -> dict[str, str]:
    """Each phase's section text (heading to last line, `\\n`-joined) with its status markers
    cut and its task boxes emptied: what the phase asks for, not how far it got."""
    lines = split_lines(text)
    out: dict[str, str] = {}
    for phase in plan.phases:
        if phase.id in out:
            continue
        first, last = phase.range.start_line, phase.range.end_line
        section = lines[first:last + 1]
        edits: list[Edit] = [(t.checkbox_range.start_line, t.checkbox_range.start_char + 1,
                              t.checkbox_range.start_char + 2, " ") for t in phase.tasks]
        for marker in (phase.status, phase.body_status):
            if marker is not None:
                edits.append((marker.range.start_line, marker.range.start_char,
                               marker.range.end_char, ""))
        for line, start, end, new in sorted(edits, key=lambda e: (e[0], -e[1])):
            if first <= line <= last:
                row = section[line - first]
                section[line - first] = row[:start] + new + row[end:]
        if phase.status is not None:  # `Title [COMPLETE]` and `Title` alike
            section[0] = section[0].rstrip()
        out[phase.id] = "\n".join(section)
    return out


def plan_fingerprint(data: bytes) -> str | None:
    """SHA-256 of the whole plan with every phase's status markers cut, its task boxes
    emptied and the metadata Status value cut: equal for two versions that differ only in
    progress (the engine's marker edits, boxes ticked by hand). None when it is no readable
    text."""
    try:
        text = decode(data[len(_BOM):] if data.startswith(_BOM) else data)
    except UnreadableError:
        return None
    plan = parse_plan(Source.from_text(text))
    lines = split_lines(text)
    edits: list[Edit] = []
    for phase in plan.phases:
        edits += [(t.checkbox_range.start_line, t.checkbox_range.start_char + 1,
                   t.checkbox_range.start_char + 2, " ") for t in phase.tasks]
        edits += [(m.range.start_line, m.range.start_char, m.range.end_char, "")
                  for m in (phase.status, phase.body_status) if m is not None]
    status = plan.meta("Status")
    if status is not None:
        r = status.value_range
        edits.append((r.start_line, r.start_char, r.end_char, ""))
    for line, start, end, new in sorted(set(edits), key=lambda e: (e[0], -e[1])):
        row = lines[line]
        lines[line] = row[:start] + new + row[end:]
    import hashlib  # here: a check imports this module for every plan, and hashes none

    return hashlib.sha256("\n".join(r.rstrip() for r in lines).encode()).hexdigest()


def _split(text: str) -> tuple[list[str], list[str]]:
    """Lines as the parser numbers them, and the terminator each had ('' for the last)."""
    parts = _LINE_END.split(text)
    return parts[0::2], [*parts[1::2], ""]


def _apply(lines: list[str], ends: list[str], edits: list[Edit]) -> str:
    for line, start, end, new in sorted(edits, key=lambda e: (e[0], -e[1])):
        row = lines[line]
        lines[line] = row[:start] + new + row[end:]
    return "".join(row + end for row, end in zip(lines, ends, strict=True))


def _marker_edit(phase: Phase, lines: list[str], word: str) -> Edit:
    if phase.status is not None:
        r = phase.status.range
        return (r.start_line, r.start_char, r.end_char, f"[{word}]")
    if phase.body_status is not None:
        r = phase.body_status.range
        bracketed = lines[r.start_line][r.start_char:r.start_char + 1] == "["
        return (r.start_line, r.start_char, r.end_char, f"[{word}]" if bracketed else word)
    line = phase.heading_range.start_line
    end = len(lines[line].rstrip())
    return (line, end, end, f" [{word}]")


def _plan_status_edit(plan: Plan, lines: list[str]) -> Edit | None:
    entry = plan.meta("Status")
    if entry is None or not entry.value:
        return None
    seen: dict[str, bool] = {}
    for phase in plan.phases:
        seen.setdefault(phase.id, is_done(phase))
    word = FINISHED if seen and all(seen.values()) else STARTED
    r = entry.value_range
    value = lines[r.start_line][r.start_char:r.end_char]
    bracket = re.match(r"\[[^\]]*\]", value)
    if bracket:
        return (r.start_line, r.start_char, r.start_char + bracket.end(), f"[{word}]")
    word_match = re.match(r"[A-Za-z][A-Za-z _-]*[A-Za-z]", value)
    if word_match is None:
        return None  # `✅ …` or a sentence: not a marker Baton knows how to keep
    return (r.start_line, r.start_char, r.start_char + word_match.end(), word)


__all__ = ["mark_phase", "phase_fingerprints", "plan_fingerprint"]

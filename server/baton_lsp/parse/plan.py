"""Plan markdown → `Plan`: every generation, every dependency form, fences ignored.

The parser is line-oriented over the block skeleton from `parse.markdown`: headings give
phase boundaries, opaque lines (fences, HTML blocks) are never read, and each remaining line
is tried against a few anchored regexes. That keeps it linear in file size.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePath

from ..lazy_pattern import LazyPattern
from ..model.base import Range
from ..model.common import Link
from ..model.plan import (
    CHECK_MARKS,
    PHASES_SECTIONS,
    Dependencies,
    DependencyForm,
    DependencyRef,
    Generation,
    MetadataEntry,
    MetadataItem,
    Phase,
    Plan,
    PlanRole,
    Section,
    StatusMarker,
    Task,
    covering_index,
)
from .common import line_links, suppressions
from .markdown import Heading, MarkdownDoc, blank_code_spans, parse_markdown
from .text import MAX_INT_DIGITS, Source

_ID = r"(?:\d+(?:\.\d+)*(?-i:[a-zA-Z])?|(?-i:[A-Z])\d*)"
"""A phase id as the plans write it: `3`, `1.10` (hierarchical: the tenth phase of part 1, not
1.1), `6a`, `3B`, and lettered `A`, `D1` (capital letters only: `Phase Breakdown` is none)."""
_PHASE_RE = re.compile(
    rf"^Phase\s+({_ID})(?=$|[\s:.\-(\[]|[—–])\s*(?:[:.\-]\s*|[—–]\s*)?(.*)$", re.IGNORECASE)
"""The dashes are a class of their own, apart from the ASCII ones: one class holding both
compiles to a big-charset table, a cost every check paid at import (in a branch of one-
character alternatives the two classes would be merged again, so each takes its blanks)."""
_STAGE_RE = re.compile(r"^Stage\s+(\d+(?:\.\d+)?)\b", re.IGNORECASE)
# `(?<!\s)`: start only where a blank run starts, or every blank of a long run rescans it.
_TRAILING_BRACKET_RE = re.compile(r"(?<!\s)\s*\[([^\[\]]*)\]\s*$")
_MAX_TRAILING_GROUPS = 8
_SEE_RE = re.compile(r"^See:\s*(.+)$", re.IGNORECASE)
# Values are captured as `((?:.*\S)?)\s*$`, not `(.*?)\s*$`: same text, but the lazy form
# backtracks quadratically on a line with a long run of inner blanks.
_META_RE = re.compile(r"^(\s*)[-*+]\s+\*\*([^*]+?)\*\*\s*:?\s*((?:.*\S)?)\s*$")
_BARE_META_RE = re.compile(r"^()\*\*([^*]+?)\*\*\s*:?\s*((?:.*\S)?)\s*$")
"""`**Status**: [IMPLEMENTING]` on its own line: header metadata some task plans write
without bullets."""
_BARE_META_KEYS = {"task", "status", "effort", "date"}
_TASK_KEYS = {"task", "task number", "project", "project number"}
"""Header keys naming the registry task a plan belongs to (`- **Task**: 219 - title`,
`**Project Number**: 215`): the task-based trees' planners write one
(`.claude/context/formats/plan-format.md`, "Required fields: Task, ...")."""
_SUBITEM_RE = re.compile(r"^(\s+)(?:[-*+]|\d+[.)])\s+((?:.*\S)?)\s*$")
_TASK_RE = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+\[([ xX~])\](?=\s|$)\s*((?:.*\S)?)\s*$")
_DEP_RES: tuple[tuple[DependencyForm, re.Pattern[str]], ...] = (
    (DependencyForm.BOLD,
     re.compile(r"^\s*(?:[-*+]\s+)?\*\*Dependenc(?:ies|y)(?::\*\*|\*\*\s*:?)\s*((?:.*\S)?)\s*$",
                re.I)),
    # `**Depends on**: 1, 3`: the phase line of the task-based trees' plan format
    # (`.claude/context/formats/plan-format.md`, "Implementation Phases (format)"), also
    # written `- **Depends on:** 1` and `Depends on: 2`.
    (DependencyForm.DEPENDS,
     re.compile(r"^\s*(?:[-*+]\s+)?(?:\*\*)?Depends\s+on(?::\*\*|\*\*\s*:|\s*:)\s*((?:.*\S)?)\s*$",
                re.I)),
    (DependencyForm.BARE,
     re.compile(r"^\s*(?:[-*+]\s+)?dependencies\s*:\s*((?:.*\S)?)\s*$", re.I)),
    (DependencyForm.DEPENDS_ON,
     re.compile(r"^\s*(?:[-*+]\s+)?depends_on\s*:\s*((?:.*\S)?)\s*$", re.I)),
)
_PREREQ_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?\*\*Prerequisites?(?::\*\*|\*\*\s*:)\s*((?:.*\S)?)\s*$", re.I)
"""`**Prerequisite**: Phase 1 and 2 must be complete`: how the seeds' author says what a
phase waits for where he writes no dependency line (ProofChecker's task 179 plans); also
what a task needs (`Task should exist`, `Task 121 completed`), which names no phase."""
_BODY_STATUS_RE = re.compile(
    r"^\s*(?:[-*+]\s+)?\*\*Status(?::\*\*|\*\*\s*:?)\s*((?:.*\S)?)\s*$", re.I)
_FILE_LINE_RE = re.compile(r"^\s*(?:[-*+]\s+)?\*\*File(?::\*\*|\*\*\s*:?)\s*(\S+\.md)\s*$", re.I)
_NUMBERS_RE = re.compile(r"[\d.,\s]+")
_BRACKETED_RE = re.compile(r"^\[([^\]]*)\]")
_STATUS_TEXT_RE = re.compile(r"[A-Za-z][A-Za-z _-]{0,30}")
_PHASE_FILE_RE = re.compile(r"phase_\d")
_EXPANSION_NAME_RE = re.compile(r"(?:^|/)(?:phase|stage)[_-]?\d[^/]*$", re.IGNORECASE)
"""An expanded phase's own file (`**File**: phase_1_setup.md`, the seeds' form); a
`**File**:` line naming another file (`TODO.md`) says which file the phase edits."""
_STATUS_WORD_RE = re.compile(r"^[^\w]*([A-Za-z][A-Za-z ]*[A-Za-z])")  # [^\w] covers blanks
_DEP_ID_RE = re.compile(rf"^(?:phase[\s_-]*)?({_ID})$", re.IGNORECASE)
_NOT_OURS = r"(?!\w|\s+of\s+(?:the\s+)?(?:parent\s+)?task)"
_PROSE_PHASE_RE = re.compile(rf"\bPhase\s+({_ID}){_NOT_OURS}", re.IGNORECASE)
"""`Phase 2` in a `**Dependencies**:` sentence; not `Phase 5 of task 864` (another task's).
`Phases 1-5 completed` there recalls an earlier plan version's phases, so plurals are not
read."""
_PROSE_PHASES_RE = re.compile(
    rf"\bPhases?\s+({_ID}(?:\s*(?:,|&|and|-|–|to)\s*{_ID}(?![^\W\d]))*){_NOT_OURS}",
    re.IGNORECASE)
"""`Phase 2`, `Phases 1 and 2`, `Phases 1-3` in a `**Depends on**:` value, which names only
the phases this one waits for."""
_ID_TOKEN_RE = re.compile(rf"(?<![\w.]){_ID}(?!\w|\.\d)")
_RANGE_RE = LazyPattern(r"(\d+)\s*(?:-|–|to)\s*(\d+)$")
_MAX_RANGE = 100
"""Most phases a `Phases 1-3` range expands to (a typo such as `1-1000000` stays one ref)."""
_ID_LIST_RE = re.compile(
    rf"(?:phases?\s+)?{_ID}(?:(?:\s*(?:,|&|\band\b)\s*|\s+)(?:phases?\s+)?{_ID})*\s*[.;]?",
    re.IGNORECASE)
"""`1, 3`, `2A, 2B`, `Phase 1, Phase 2`: a value that is only phase ids (once the remarks
in parentheses are cut, as in `1 (needs CLAUDE.md current state)`)."""
_DIGITS_RE = re.compile(r"[\d.]*")
_MAX_GROUP_DEPTH = 4
"""Parts of a dotted id that may be recapped (`1` and `1.2` of `1.2.3`); a hostile id of
thousands of parts must not cost the square of its length."""
_PAREN_RE = re.compile(r"\([^()]*\)")
_TASK_REF_RE = LazyPattern(r"\btasks?\s*#?\s*(?:\d|\{)", re.IGNORECASE)
"""`Task 957 (COMPLETE)`, `Task 956 Phase 5`: a line naming only other tasks of the registry
is a dependency of the task (`.claude/context/formats/plan-format.md` metadata
`Dependencies`), written in a phase too; it says nothing of the phase order."""
_PROSE_FORMS = (DependencyForm.BOLD, DependencyForm.DEPENDS)
_TASK_BEFORE_RE = re.compile(r"\btasks?\s*#?\s*\d+\s*$", re.IGNORECASE)
_TASK_LOOKBACK = 24
"""`Task 977 Phase 0`: the phase of another task. Only the text just before a mention is
searched, so a line of many mentions stays linear."""
_NONE_VALUES = {"", "none", "n/a", "na", "-", "--", "—", "[]", "nothing"}
_TASK_LABEL_RE = re.compile(r"^\*\*Task\s+#?\d[^*]*\*\*:?\s*$", re.IGNORECASE)
"""`**Task 126 (Sub-PR 1.2): IntMin Instances**` alone on its line: a task's label inside a
phase, as a sub-heading would be. The `- Dependencies: 125` and `**Status**:` lines after it
are that task's (cslib's `specs/124_.../plans/01_pr1-decomposition-plan.md` gives each of
eleven tasks one), not the phase's. A task checkbox (`- [x] **Task 1.1**: ...`) is no label:
the phase's own `**Depends on**:` line follows its task list."""
_PHASE_HEADING_RE = LazyPattern(r"^#{2,3}\s+Phase\s+\d", re.IGNORECASE)


def normalize_id(number: str) -> str:
    """Canonical phase id: `03` → `3`, `2.0` → `2`, `01.02` → `1.2`, `6a` → `6a`.

    Dotted ids are hierarchical, part by part, never decimals: the task-based plans number
    `Phase 1.1` … `Phase 1.9`, `Phase 1.10`, so `1.10` is not `1.1`."""
    m = _DIGITS_RE.match(number)
    digits = m.group() if m else ""
    tail = number[len(digits):]
    parts = [_int_text(p) for p in digits.split(".")] if digits else []
    while len(parts) > 1 and parts[-1] == "0":
        parts.pop()
    return ".".join(parts) + tail


def _int_text(part: str) -> str:
    if part.isdigit():  # int() normalises `٣` too, but has a limit
        return str(int(part)) if len(part) <= MAX_INT_DIGITS else (part.lstrip("0") or "0")
    return part


def _split_list(value: str, line_no: int, col: int) -> list[tuple[str, Range]]:
    """Items of `[a, b]` with their ranges (col = column of the value's first char)."""
    out: list[tuple[str, Range]] = []
    inner_start = value.find("[") + 1
    close = value.find("]", inner_start)
    inner_end = close if close >= 0 else len(value)
    pos = inner_start
    for part in value[inner_start:inner_end].split(","):
        stripped = part.strip().strip("\"'")
        if stripped:
            offset = pos + part.index(stripped[0]) if stripped[0] in part else pos
            out.append((stripped, Range.of_line(line_no, col + offset,
                                                col + offset + len(stripped))))
        pos += len(part) + 1
    return out


def _dependencies(form: DependencyForm, line_no: int, line: str, value: str,
                  value_col: int) -> Dependencies:
    """The phases a dependency line names. `[1, 2]`, `1, 2` and `1.` are lists; in a
    sentence only `Phase N` mentions count."""
    lowered = value.lower().strip().rstrip(".")
    line_range = Range.of_line(line_no, len(line) - len(line.lstrip()), len(line))
    value_range = Range.of_line(line_no, value_col, value_col + len(value))
    deps = Dependencies(form=form, raw=value, range=line_range, value_range=value_range,
                        refs=[])  # passed, not defaulted: pydantic deep-copies defaults
    if lowered in _NONE_VALUES or lowered.startswith("none"):
        deps.explicit_none = True
        return deps
    listed = value.rstrip(".;") if not value.startswith("[") else value  # `**Depends on**: 1.`
    if value.startswith("[") or _NUMBERS_RE.fullmatch(listed):
        items = (_split_list(value, line_no, value_col) if value.startswith("[")
                 else _split_list(f"[{listed}]", line_no, value_col - 1))
        for raw, rng in items:
            m = _DEP_ID_RE.match(raw)
            deps.refs.append(DependencyRef(raw=raw, id=normalize_id(m.group(1)) if m else None,
                                           range=rng))
        deps.explicit_none = not items
        return deps
    # Remarks in parentheses blanked, columns kept: `1, 3 (needs the schema)` is a list.
    head = _PAREN_RE.sub(lambda p: " " * len(p.group()), value) if "(" in value else value
    if _ID_LIST_RE.fullmatch(head.strip()):
        if head != value or not _ID_TOKEN_RE.fullmatch(head.split(",")[0].strip()):
            # `Phase 1 (done)`: no list a quick fix may cut an item from
            deps.form = DependencyForm.PROSE if form in _PROSE_FORMS else form
        for m in _ID_TOKEN_RE.finditer(head):
            deps.refs.append(DependencyRef(
                raw=m.group(), id=normalize_id(m.group()),
                range=Range.of_line(line_no, value_col + m.start(), value_col + m.end())))
        return deps
    deps.form = DependencyForm.PROSE if form in _PROSE_FORMS else form
    mentions = _PROSE_PHASES_RE if form is DependencyForm.DEPENDS else _PROSE_PHASE_RE
    for m in mentions.finditer(value):
        if not _TASK_BEFORE_RE.search(value, max(0, m.start() - _TASK_LOOKBACK), m.start()):
            deps.refs.extend(_prose_refs(m, line_no, value_col))
    return deps


def _prerequisites(line_no: int, line: str, value: str, value_col: int) -> Dependencies | None:
    """The phases a `**Prerequisite**:` line names (`Phase 1 and 2 must be complete`), or
    None when it names none: a prerequisite of another kind is no phase order."""
    refs: list[DependencyRef] = []
    for m in _PROSE_PHASES_RE.finditer(value):
        if not _TASK_BEFORE_RE.search(value, max(0, m.start() - _TASK_LOOKBACK), m.start()):
            refs.extend(_prose_refs(m, line_no, value_col))
    if not refs:
        return None
    return Dependencies(form=DependencyForm.PREREQUISITE, raw=value,
                        range=Range.of_line(line_no, len(line) - len(line.lstrip()), len(line)),
                        value_range=Range.of_line(line_no, value_col, value_col + len(value)),
                        refs=refs)


def _prose_refs(m: re.Match[str], line_no: int, value_col: int) -> list[DependencyRef]:
    """The ids of one `Phase 2` / `Phases 1 and 2` / `Phases 1-3` mention; a range names
    every phase from its first to its last (each ref spans the range as written)."""
    group_start = m.start(1)
    tokens = list(_ID_TOKEN_RE.finditer(m.group(1)))
    refs: list[DependencyRef] = []
    for k, tok in enumerate(tokens):
        start, end = value_col + group_start + tok.start(), value_col + group_start + tok.end()
        rng = Range.of_line(line_no, start, end)
        if k and refs:
            gap = m.group(1)[tokens[k - 1].end():tok.start()]
            span = _RANGE_RE.match(f"{tokens[k - 1].group()}{gap}{tok.group()}")
            if span and 0 < int(span.group(2)) - int(span.group(1)) <= _MAX_RANGE:
                whole = Range.of_line(line_no, refs[-1].range.start_char, end)
                refs.extend(DependencyRef(raw=str(i), id=str(i), range=whole)
                            for i in range(int(span.group(1)) + 1, int(span.group(2))))
        if len(tokens) == 1:  # `Phase 2`: the mention as written, as before lists were read
            raw, rng = m.group(0), Range.of_line(line_no, value_col + m.start(),
                                                 value_col + m.end())
        else:
            raw = tok.group()
        refs.append(DependencyRef(raw=raw, id=normalize_id(tok.group()), range=rng))
    return refs


def _status_from(text: str, line_no: int, col: int) -> StatusMarker | None:
    """A body status value: `[IN PROGRESS]`, `IN PROGRESS`, `✅ COMPLETED`."""
    m = _BRACKETED_RE.match(text)
    if m and m.group(1).strip().upper() in CHECK_MARKS:
        word = _STATUS_WORD_RE.match(text[m.end():])
        if word:  # `[PASS] COMPLETED (2025-12-29)`: the check mark, then the status
            at = col + m.end()
            return StatusMarker(text=word.group(1).strip(), range=Range.of_line(
                line_no, at + word.start(1), at + word.end(1)))
    if m:
        return StatusMarker(text=m.group(1).strip(), range=Range.of_line(line_no, col,
                                                                         col + m.end()))
    word = _STATUS_WORD_RE.match(text)
    if word:
        return StatusMarker(text=word.group(1).strip(),
                            range=Range.of_line(line_no, col + word.start(1), col + word.end(1)))
    return None


def _parse_phase_heading(h: Heading, line: str) -> Phase | None:
    text = line[h.text_start : h.end_char]
    m = _PHASE_RE.match(text)
    if not m:
        return None
    number = m.group(1)
    rest_start = h.text_start + m.start(2)
    rest = m.group(2)
    status: StatusMarker | None = None
    expanded = None
    # Peel trailing `[...]` groups: `[See: file.md]` is an expansion link, the rest a status.
    # Bounded: each peel rescans the title, and real headings carry two groups at most.
    for _ in range(_MAX_TRAILING_GROUPS):
        bm = _TRAILING_BRACKET_RE.search(rest)
        if not bm:
            break
        inner = bm.group(1).strip()
        start = rest_start + bm.start(1) - 1
        see = _SEE_RE.match(inner)
        if see:
            target = see.group(1).strip()
            t0 = rest_start + bm.start(1) + bm.group(1).index(target)
            expanded = Link(text=inner, target=target,
                            range=Range.of_line(h.line, start, rest_start + bm.end(1) + 1),
                            target_range=Range.of_line(h.line, t0, t0 + len(target)))
        elif status is None and _STATUS_TEXT_RE.fullmatch(inner):
            status = StatusMarker(text=inner, range=Range.of_line(h.line, start,
                                                                  rest_start + bm.end(1) + 1))
        else:
            break
        rest = rest[: bm.start()]
    title = rest.strip()
    title_col = rest_start + (len(rest) - len(rest.lstrip()))
    number_col = h.text_start + m.start(1)
    whole = Range.of_line(h.line, 0, len(line))  # ranges are frozen: one object serves both
    return Phase(
        number=number,
        id=normalize_id(number),
        title=title,
        level=h.level,
        heading_range=whole,
        number_range=Range.of_line(h.line, number_col, number_col + len(number)),
        title_range=Range.of_line(h.line, title_col, title_col + len(title)),
        range=whole,
        status=status,
        expanded_link=expanded,
        tasks=[],  # passed, not defaulted: pydantic deep-copies mutable defaults
        extra_dependency_lines=[],
    )


def _tasks(lines: list[tuple[int, str]]) -> list[Task]:
    tasks: list[Task] = []
    stack: list[int] = []  # indices of the enclosing tasks
    indents: list[int] = []
    match, of_line = _TASK_RE.match, Range.of_line  # a hot loop: one call per list line
    for no, line in lines:
        if "[" not in line:
            continue
        m = match(line)
        if m is None:
            continue
        lead, marker, text = m.groups()
        indent = len(lead.expandtabs(4)) if "\t" in lead else len(lead)
        while stack and indents[stack[-1]] >= indent:
            stack.pop()
        box = m.start(2) - 1
        tasks.append(Task(
            text=text, marker=marker, indent=indent, depth=len(stack),
            parent=stack[-1] if stack else None,
            range=of_line(no, len(lead), len(line)),
            checkbox_range=of_line(no, box, box + 3),
        ))
        indents.append(indent)
        stack.append(len(tasks) - 1)
    return tasks


def _metadata(lines: list[tuple[int, str]], bare: bool = False) -> list[MetadataEntry]:
    """Bullet metadata entries; with `bare`, also `**Key**: value` lines without a bullet."""
    entries: list[MetadataEntry] = []
    current: MetadataEntry | None = None
    base_indent = -1
    for no, line in lines:
        if not line.strip():
            continue
        m = _META_RE.match(line) or (_BARE_META_RE.match(line) if bare else None)
        if m and (base_indent < 0 or len(m.group(1)) <= base_indent):
            base_indent = len(m.group(1))
            key = m.group(2).strip().rstrip(":").strip()
            value = m.group(3)
            vcol = m.start(3) if value else len(line)
            current = MetadataEntry(
                key=key, value=value,
                key_range=Range.of_line(no, m.start(2), m.start(2) + len(m.group(2))),
                value_range=Range.of_line(no, vcol, vcol + len(value)),
                range=Range.of_line(no, len(m.group(1)), len(line)),
                items=[],  # passed, not defaulted: pydantic deep-copies mutable defaults
            )
            entries.append(current)
            continue
        sub = _SUBITEM_RE.match(line)
        if current is not None and sub and len(sub.group(1)) > base_indent:
            current.items.append(MetadataItem(
                text=sub.group(2), range=Range.of_line(no, sub.start(2), sub.end(2))))
            current.range = Range.span(current.range.start_line, current.range.start_char,
                                       no, len(line))
            continue
        if current is not None and line[:1] in " \t" and not current.items:
            continue  # wrapped continuation of the value
        if m is None and current is not None and not line.lstrip().startswith(("-", "*", "+")):
            current = None
    return entries


def _role(path: str, title: str | None) -> PlanRole:
    name = PurePath(path).name
    if name.startswith("stage_") or (title is not None and _STAGE_RE.match(title)):
        return PlanRole.STAGE_FILE
    if _PHASE_FILE_RE.match(name) or (title is not None and _PHASE_RE.match(title)):
        return PlanRole.PHASE_FILE
    return PlanRole.PLAN


def parse_plan(source: Source, path: str = "") -> Plan:
    """Parse a plan, phase file or stage file. Never raises on any text input."""
    md: MarkdownDoc = parse_markdown(source, frontmatter=True)
    lines = source.lines
    n = len(lines)
    plan = Plan(path=path, line_count=n, suppressions=suppressions(md))
    headings = md.headings

    title_h = next((h for h in headings if h.level == 1), None)
    if title_h is not None:
        plan.title = title_h.text
        plan.title_range = Range.of_line(title_h.line, title_h.text_start, title_h.end_char)
    plan.role = _role(path, plan.title)

    # Sections (H2) and the end line of every heading's section: the line before the next
    # heading of the same or a higher level. One pass with a stack (a scan per heading was
    # quadratic in the number of headings).
    ends = [n - 1] * len(headings)
    open_: list[int] = []
    for j, h in enumerate(headings):
        while open_ and headings[open_[-1]].level >= h.level:
            ends[open_.pop()] = h.line - 1
        open_.append(j)

    first_h2 = None
    meta_heading = None
    for i, h in enumerate(headings):
        if h.level == 2:
            end = ends[i]
            plan.sections.append(Section(
                title=h.text, level=2, heading_range=Range.of_line(h.line, 0, len(lines[h.line])),
                range=Range.span(h.line, 0, end, len(lines[end]))))
            if first_h2 is None:
                first_h2 = h
            if meta_heading is None and h.text.strip().lower() == "metadata":
                meta_heading = (h, end)

    # Phases: H2/H3 headings `Phase N`, plus the H1 title of a phase file. When the plan
    # has a phases section (`## Implementation Phases` …) holding phases, H3 `Phase N`
    # headings elsewhere (Technical Design sketches, `### Phase 1 Testing`) are not phases.
    candidates: list[tuple[int, Heading, Phase]] = []
    for i, h in enumerate(headings):
        if h.level > 3 or (h.level == 1 and h is not title_h):
            continue
        if h.level == 1 and plan.role is not PlanRole.PHASE_FILE:
            continue
        phase = _parse_phase_heading(h, lines[h.line])
        if phase is not None:
            candidates.append((i, h, phase))
    if plan.role is PlanRole.PHASE_FILE:
        candidates = candidates[:1]
    elif plan.role is PlanRole.STAGE_FILE:
        candidates = []
    else:
        areas = [s.range for s in plan.sections if s.title.strip().lower() in PHASES_SECTIONS]
        starts = [a.start_line for a in areas]  # sections do not overlap: bisect, not scan
        inside = [c for c in candidates if covering_index(areas, starts, c[1].line) >= 0]
        if inside:
            kept = [c for c in candidates
                    if c[1].level == 2 or covering_index(areas, starts, c[1].line) >= 0]
            kept_at = {c[0] for c in kept}  # a set: a list membership test per phase is n²
            numbers = {c[2].id for c in kept} | _groups(c[2].id for c in kept)
            last = max(a.end_line for a in areas)
            for i, h, phase in candidates:
                if i in kept_at or phase.id in numbers or h.line < last:
                    continue  # sketches before the section, or repeats of real phases
                phase.range = Range.span(h.line, 0, ends[i], len(lines[ends[i]]))
                _fill_phase(phase, md, h.line + 1, ends[i] + 1, i + 1)
                if phase.status is not None or phase.dependencies is not None or phase.tasks:
                    plan.stranded_phases.append(phase)
            candidates = kept
    for i, h, phase in candidates:
        end = ends[i]
        phase.range = Range.span(h.line, 0, end, len(lines[end]))
        _fill_phase(phase, md, h.line + 1, end + 1, i + 1)
        plan.phases.append(phase)

    # Metadata: under `## Metadata`, else bullets between the title and the first H2.
    if meta_heading is not None:
        h, end = meta_heading
        plan.has_metadata_heading = True
        plan.metadata = _metadata(md.text_lines(h.line + 1, end + 1))
        plan.metadata_range = Range.span(h.line, 0, end, len(lines[end]))
    else:
        start = title_h.line + 1 if title_h is not None else 0
        stop = first_h2.line if first_h2 is not None else n
        if plan.phases:
            stop = min(stop, plan.phases[0].heading_range.start_line)
        plan.metadata = _metadata(md.text_lines(start, stop))
        if not plan.metadata:
            bare = _metadata(md.text_lines(start, stop), bare=True)
            if _BARE_META_KEYS & {e.key.lower() for e in bare}:
                plan.metadata = bare
        if plan.metadata:
            last = plan.metadata[-1].range.end_line
            plan.metadata_range = Range.span(plan.metadata[0].range.start_line, 0, last,
                                             len(lines[last]))
    plan.generation = _generation(plan)
    header_keys = {e.key.lower() for e in plan.metadata}
    if plan.has_metadata_heading or not plan.metadata:  # the lines above `## Metadata` too
        start = title_h.line + 1 if title_h is not None else 0
        stop = first_h2.line if first_h2 is not None else n
        if plan.phases:
            stop = min(stop, plan.phases[0].heading_range.start_line)
        header_keys |= {e.key.lower() for e in _metadata(md.text_lines(start, stop), bare=True)}
    plan.task_based = bool(_TASK_KEYS & header_keys)

    for section in plan.sections:
        if section.title.strip().lower() == "success criteria":
            plan.success_criteria = _tasks(
                md.text_lines(section.range.start_line + 1, section.range.end_line + 1))
            break

    unclosed = next((f for f in md.fences if not f.closed), None)
    if unclosed is not None and unclosed.start_line < n:
        plan.unclosed_fence = Range.of_line(unclosed.start_line, 0,
                                            len(lines[unclosed.start_line]))
        for no in unclosed.body:
            text = lines[no]
            if text.startswith("#") and _PHASE_HEADING_RE.match(text):
                plan.swallowed_phases.append(Range.of_line(no, 0, len(text)))

    opaque = md.opaque
    for no, line in enumerate(lines):
        if "](" in line and not opaque[no]:
            plan.links.extend(line_links(no, line))
    return plan


def _groups(ids: Iterable[str]) -> set[str]:
    """The parts the phases are numbered in: `1` for `1.1` … `1.10`, `6` for `6a`. A
    `### Phase 1 Testing` under `## Testing & Validation` recaps part 1; it is no phase."""
    out: set[str] = set()
    for pid in ids:
        m = _DIGITS_RE.match(pid)
        digits = m.group() if m else ""
        if digits != pid and digits:
            out.add(digits)
        parts = digits.split(".")
        out.update(".".join(parts[:k]) for k in range(1, min(len(parts), _MAX_GROUP_DEPTH)))
    return out


def _fill_phase(phase: Phase, md: MarkdownDoc, start: int, stop: int, first: int) -> None:
    """`first`: the index in `md.headings` of the first heading after the phase's own."""
    lines, opaque = md.lines, md.opaque
    # Blank lines left out: no task, dependency, status or link line is blank.
    cleaned = [(no, blank_code_spans(lines[no])) for no in range(start, min(stop, len(lines)))
               if not opaque[no] and not lines[no].isspace() and lines[no]]
    phase.tasks = _tasks(cleaned)
    # A phase's own dependency and status lines sit in its first part, unindented: lines
    # under a sub-heading (`### Phase 8a`, `#### Theorem 3`) or nested in a task list belong
    # to a sub-phase, a task or a proof, not to the phase.
    headings = md.headings  # in line order: start where this phase starts, not at line 0
    sub_heading = stop
    # Indexed, not `islice(headings, first, None)`: islice steps over the `first` headings
    # before it, which made this a scan of all earlier phases per phase.
    for k in range(first, len(headings)):
        h = headings[k]
        if h.line >= stop or h.text.strip().lower() != "metadata":
            sub_heading = min(h.line, stop)
            break
    prerequisite: Dependencies | None = None
    for no, line in cleaned:
        low = line.lower()
        if no < sub_heading and "task" in low and _TASK_LABEL_RE.match(line):
            sub_heading = no  # a task's own lines follow, as under a `#### Task` heading
        if no >= sub_heading or line[:2].isspace() or line[:1] == "\t":
            if phase.expanded_link is None and ".md" in low:
                _expanded_link_line(phase, no, line, low)
            continue
        if "depend" in low:
            for form, rx in _DEP_RES:
                m = rx.match(line)
                if m:
                    value = m.group(1)
                    col = m.start(1) if value else len(line)
                    deps = _dependencies(form, no, line, value, col)
                    if not deps.refs and not deps.explicit_none and _TASK_REF_RE.search(value):
                        break  # the task's dependencies on other tasks: not a phase order
                    if phase.dependencies is None:
                        phase.dependencies = deps
                    else:
                        phase.extra_dependency_lines.append(Range.of_line(no, 0, len(line)))
                    break
        elif prerequisite is None and "prerequisite" in low:
            m = _PREREQ_RE.match(line)
            if m and m.group(1):
                prerequisite = _prerequisites(no, line, m.group(1), m.start(1))
        if "status" in low and phase.body_status is None:
            m = _BODY_STATUS_RE.match(line)
            if m and m.group(1):
                phase.body_status = _status_from(m.group(1), no, m.start(1))
        if phase.expanded_link is None and ".md" in low:
            _expanded_link_line(phase, no, line, low)
    if phase.dependencies is None:  # a dependency line, where there is one, says it all
        phase.dependencies = prerequisite


def _expanded_link_line(phase: Phase, no: int, line: str, low: str) -> None:
    """A `**File**: phase_N.md` line or a `[Phase N Details](x.md)` link of an expanded phase."""
    m = _FILE_LINE_RE.match(line)
    if m and _EXPANSION_NAME_RE.search(m.group(1)) is None:
        return  # `- **File**: TODO.md`: the file the phase edits, not its expansion
    if m:
        rng = Range.of_line(no, m.start(1), m.end(1))
        phase.expanded_link = Link(text="File", target=m.group(1), range=rng,
                                   target_range=rng)
    elif "details" in low:  # the link text must say so; skip building other links
        for link in line_links(no, line):
            if "details" in link.text.lower() and link.target.endswith(".md"):
                phase.expanded_link = link
                break


def _generation(plan: Plan) -> Generation:
    if not plan.has_metadata_heading and plan.metadata:
        return Generation.G3
    keys = {e.key.lower() for e in plan.metadata}
    if plan.has_metadata_heading and "status" not in keys and "structure level" not in keys:
        return Generation.G1
    return Generation.G2


def parse_plan_text(text: str, path: str = "") -> Plan:
    return parse_plan(Source.from_text(text), path)


__all__ = ["normalize_id", "parse_plan", "parse_plan_text"]

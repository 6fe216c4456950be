"""Implementation plans: metadata, phases, dependencies and tasks, all with positions."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from enum import StrEnum

from .base import Model, Range
from .common import Link, Suppression

PHASES_SECTIONS = frozenset({"implementation phases", "implementation plan", "phases"})
"""`##` titles of the section that holds a plan's phases (lower case)."""


class Generation(StrEnum):
    """Which of the three historical plan formats a file follows (formats.md §1)."""

    G1 = "g1"
    G2 = "g2"
    G3 = "g3"


class PlanRole(StrEnum):
    """Where a file sits in a Level 0/1/2 expansion hierarchy."""

    PLAN = "plan"
    PHASE_FILE = "phase_file"
    STAGE_FILE = "stage_file"


class MetadataItem(Model):
    """One line of a multi-valued metadata entry, e.g. a report link under Research Reports."""

    text: str
    range: Range


class MetadataEntry(Model):
    key: str
    value: str
    """The raw inline value (may be empty when the value is an indented sub-list)."""
    key_range: Range
    value_range: Range
    range: Range
    items: list[MetadataItem] = []


class DependencyForm(StrEnum):
    BARE = "bare"  # dependencies: [1, 2]
    BOLD = "bold"  # **Dependencies**: [1]
    DEPENDS_ON = "depends_on"  # depends_on: [phase_1]
    PROSE = "prose"  # **Dependencies**: Phase 1 (completed ...)
    DEPENDS = "depends"  # **Depends on**: 1, 3 (the task-based trees' plan-format.md)
    PREREQUISITE = "prerequisite"  # **Prerequisite**: Phase 1 and 2 must be complete


SEQUENTIAL_FORMS = frozenset({DependencyForm.DEPENDS, DependencyForm.PREREQUISITE})
"""Forms a plan writes on the phases that wait for more than the one before: a phase
without the line follows every earlier phase, as the plan's order says."""


class DependencyRef(Model):
    raw: str
    id: str | None
    """Normalised phase id (`phase_3` → `3`, `02` → `2`, `2.50` → `2.5`); None if unreadable."""
    range: Range


class Dependencies(Model):
    form: DependencyForm
    raw: str
    range: Range
    """The whole dependency line."""
    value_range: Range
    refs: list[DependencyRef] = []
    explicit_none: bool = False
    """`[]`, `none` or `None`: the phase declares that it depends on nothing."""


class Task(Model):
    text: str
    marker: str
    """The character between the brackets: ' ', 'x' or 'X', or '~' (partly done: open)."""
    indent: int
    depth: int
    parent: int | None = None
    """Index of the enclosing task in the same list, for nested checkboxes."""
    range: Range
    checkbox_range: Range

    @property
    def checked(self) -> bool:
        return self.marker in "xX"


class StatusMarker(Model):
    text: str
    """Marker text without brackets, as written (e.g. `COMPLETED`, `In Progress`)."""
    range: Range
    """Range of the whole `[...]` including brackets."""


class Phase(Model):
    number: str
    """As written: `0`, `3`, `2.5`, `03`."""
    id: str
    title: str
    level: int
    heading_range: Range
    number_range: Range
    title_range: Range
    range: Range
    """From the heading to the last line of the phase section."""
    status: StatusMarker | None = None
    body_status: StatusMarker | None = None
    """A `**Status**: IN PROGRESS` line in the phase body (bracketed or not)."""
    dependencies: Dependencies | None = None
    extra_dependency_lines: list[Range] = []
    tasks: list[Task] = []
    expanded_link: Link | None = None
    """`[See: phase_3_x.md]` suffix, `**File**: x.md` line or `[Phase N Details](x.md)` link."""


class Section(Model):
    title: str
    level: int
    heading_range: Range
    range: Range



STARTED = "IN PROGRESS"
"""The marker of a phase whose agent is at work (and of a plan with work under way)."""
FINISHED = "COMPLETE"
"""The marker of a finished phase (and of a plan with every phase done): the spelling the
seeds' scripts match (`[COMPLETED]` they do not)."""
KNOWN_STATUSES = ("NOT STARTED", STARTED, FINISHED, "COMPLETED", "BLOCKED", "SKIPPED")
"""Phase status markers of the seeds' plans, in the order completion offers them."""
EXTRA_STATUSES = ("PENDING", "PARTIAL")
"""Accepted, not suggested: markers newer trees write (`[PARTIAL]`: some tasks done)."""
COMPLETE = frozenset({FINISHED, "COMPLETED"})
"""Both spellings mean finished (the seeds' scripts match only `[COMPLETE]`; BTN114 says so)."""
TERMINAL = frozenset({"SKIPPED", "ABANDONED", "DEFERRED", "NOT APPLICABLE", "N/A", "EXPANDED",
                      "SUPERSEDED", "CANCELLED", "NOT IN SCOPE", "OBSOLETE"})
"""Markers of phases given up rather than finished. The task-based trees' tooling resumes only
`[NOT STARTED]`, `[IN PROGRESS]` and `[PARTIAL]` phases (`.claude/agents/
general-implementation-agent.md` "Find Resume Point"; the resume grep of
`.claude/extensions/lean/skills/skill-lean-implementation-hard/SKILL.md`) and calls
`[ABANDONED]` and `[EXPANDED]` terminal (`.claude/context/standards/status-markers.md`), so a
phase its plans mark `[SKIPPED]`, `[DEFERRED]` or `[NOT APPLICABLE]` is never run again."""
DONE = COMPLETE | TERMINAL
"""Phases nothing waits for and the engine does not run again."""
OPEN = frozenset({"NOT STARTED", STARTED, "PARTIAL", "BLOCKED", "PENDING"})
"""Markers of phases still to do (the reviser's "incomplete phases", `.claude/agents/
reviser-agent.md`)."""
CHECK_MARKS = frozenset({"PASS"})
"""`[PASS]` written before a status word (`**Status**: [PASS] COMPLETED`): the task-based
trees replaced their check-mark emoji with it, so it is decoration, not the status."""
TASK_STATUSES = frozenset({"RESEARCHING", "RESEARCHED", "PLANNING", "PLANNED", "REVISING",
                           "REVISED", "IMPLEMENTING"})
"""A task's own statuses (`.claude/context/standards/status-markers.md`), which phase status
lines sometimes carry (`**Status**: [IMPLEMENTING]` under a `[COMPLETED]` heading)."""
STATES = COMPLETE | TERMINAL | OPEN | TASK_STATUSES | frozenset(KNOWN_STATUSES + EXTRA_STATUSES)
"""Every status a phase marker can state (`state_of` reads the one a marker starts with)."""
_STATES_BY_FIRST: dict[str, tuple[str, ...]] = {}
for _state in sorted(STATES, key=len, reverse=True):
    _STATES_BY_FIRST[_state[0]] = (*_STATES_BY_FIRST.get(_state[0], ()), _state)
del _state
"""The states by their first character, longest first: `state_of` tries them in turn where a
regular expression of them all (an alternation of literal words) cost its compiling at every
import of the module."""


def covering_index(ranges: Sequence[Range], starts: Sequence[int], line: int) -> int:
    """Index of the range holding `line` among sorted, non-overlapping `ranges` (sections),
    `starts` being their start lines; -1 when none does. A bisection, not a scan: callers
    ask once per phase, and a plan can have as many sections as phases."""
    k = bisect_right(starts, line) - 1
    return k if k >= 0 and ranges[k].contains_line(line) else -1


def status_word(phase: Phase) -> str | None:
    """The phase's status in canonical upper case (heading marker first, then body line)."""
    marker = phase.status or phase.body_status
    if marker is None:
        return None
    return " ".join(marker.text.replace("_", " ").split()).upper()


def is_complete(phase: Phase) -> bool:
    return status_word(phase) in COMPLETE


def state_of(word: str | None) -> str | None:
    """The status a marker's text states, read from its start as the plans write it:
    `DEFERRED TO FUTURE TASK`, `SKIPPED - NOT NEEDED` and `COMPLETED VIA TASK 625` state
    `DEFERRED`, `SKIPPED` and `COMPLETED`; text starting with no known status is itself."""
    if word is None:
        return None
    for state in _STATES_BY_FIRST.get(word[:1], ()):
        # A state is a whole word: no capital letter may go on after it.
        if word.startswith(state) and not "A" <= word[len(state):len(state) + 1] <= "Z":
            return state
    return word


def phase_state(phase: Phase) -> str | None:
    """`state_of` the phase's status (heading marker first, then its body line)."""
    return state_of(status_word(phase))


def is_done(phase: Phase) -> bool:
    """Finished or given up: nothing waits for it and the engine does not run it again."""
    return phase_state(phase) in DONE


class Plan(Model):
    path: str
    title: str | None = None
    title_range: Range | None = None
    generation: Generation = Generation.G2
    role: PlanRole = PlanRole.PLAN
    has_metadata_heading: bool = False
    metadata: list[MetadataEntry] = []
    metadata_range: Range | None = None
    """Where metadata lives (for inserting missing keys)."""
    phases: list[Phase] = []
    success_criteria: list[Task] = []
    sections: list[Section] = []
    links: list[Link] = []
    suppressions: list[Suppression] = []
    line_count: int = 0
    stranded_phases: list[Phase] = []
    """`Phase N` headings with a status, dependencies or tasks outside the plan's phases
    section, when it has one: tools that read the section never see them."""
    unclosed_fence: Range | None = None
    """The opening line of a code fence that is never closed (it runs to the end of file)."""
    swallowed_phases: list[Range] = []
    """`Phase N` heading lines inside that unclosed fence: invisible to every reader."""
    task_based: bool = False
    """The plan of one task of a task registry (its header names the task: `- **Task**: 219`,
    `**Project Number**: 215`): its implementer marks phase headings and leaves the task
    lists as written, so open boxes under a finished phase are no defect."""

    def meta(self, key: str) -> MetadataEntry | None:
        low = key.lower()
        for entry in self.metadata:
            if entry.key.lower() == low:
                return entry
        return None

    def phase(self, phase_id: str) -> Phase | None:
        for phase in self.phases:
            if phase.id == phase_id:
                return phase
        return None

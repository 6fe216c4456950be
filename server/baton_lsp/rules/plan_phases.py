"""BTN11x: phase headings, status markers and task checkboxes."""

from __future__ import annotations

from collections.abc import Iterator

from ..lazy_pattern import LazyPattern
from ..model.base import Convention, Finding, Kind, Related, Severity
from ..model.plan import (
    COMPLETE,
    DONE,
    EXTRA_STATUSES,
    KNOWN_STATUSES,
    STATES,
    Phase,
    Plan,
    StatusMarker,
    covering_index,
    is_complete,
    is_done,
    state_of,
    status_word,
)
from .base import RuleContext, closest, rule
from .plan_common import completion_style, hidden_marker, marker_edit_range, phase_label

PLAN = (Kind.PLAN,)
MISSPELLING = 0.8
"""difflib ratio above which an unknown marker is a misspelling of a known one: catches
`[COMPLTE]`, `[IN PROGRES]`, `[BLOKED]`; leaves words such as `[STARTED]` or `[CANCELLED]`."""


@rule("BTN110", "duplicate-phase-number", Severity.ERROR, PLAN, convention=Convention.PLAN)
def duplicate_phase_number(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """Two phases share the same number.

    Dependencies, checkpoints and the marker utilities address phases by number, so with a
    duplicate they silently act on the first one. A plan whose `##` sections (parallel
    streams, tracks) each number their own phases from 1, and declare no dependencies, is
    not reported, nor is a recap of the phases one heading level deeper (a `### Phase 1`
    checklist under `## Migration Checklist` after the `## Phase 1` sections), nor a heading
    naming a topic about the phase (`## Phase 1 Entry Blockers` and `## Phase 1 Data-Plane
    Readiness` in a checklist: no separator after the number, no marker or dependencies).
    Fix: renumber the phase (and the dependency lists that mention it).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A

        ### Phase 1: B

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A

        ### Phase 1.5: A follow-up
    """
    if _numbered_per_section(plan):
        return  # each `## Stream A` / `## Track B` section numbers its own phases from 1
    first: dict[str, Phase] = {}
    for phase in plan.phases:
        if phase.id in first:
            other = first[phase.id]
            if phase.level != other.level:
                continue  # a checklist or summary restating the phases, not a second phase
            if not (_defines(phase, ctx.lines) and _defines(other, ctx.lines)):
                continue  # `## Phase 1 Entry Blockers`: a topic about the phase
            yield ctx.finding(
                phase.number_range,
                f"Phase {phase.number} is defined twice (first on line "
                f"{other.heading_range.start_line + 1}); dependencies on it are ambiguous",
                related=[Related(path=ctx.path, range=other.heading_range,
                                 message=f"first Phase {other.number}")])
        else:
            first[phase.id] = phase


_DEFINITION_AFTER = LazyPattern(r"^\s*(?:$|[:.)\-–—(\[|*])")
"""What follows the number of a heading that defines a phase: nothing, or a separator
(`Phase 1: Setup`, `Phase 1 - Setup`, `Phase 1 (Setup)`, `Phase 1 [COMPLETE]`)."""


def _defines(phase: Phase, lines: list[str]) -> bool:
    """Whether `phase`'s heading defines a phase rather than naming a topic about one
    (`## Phase 1 Entry Blockers`, `#### Phase 4 Testing`: the number qualifies the words
    after it, and its checklist is about that topic); a status marker or dependencies make
    it a definition either way."""
    if phase.status is not None or phase.dependencies is not None:
        return True
    rng = phase.number_range
    line = lines[rng.start_line] if rng.start_line < len(lines) else ""
    return _DEFINITION_AFTER.match(line[rng.end_char:]) is not None


def _numbered_per_section(plan: Plan) -> bool:
    """True when every `##` section restarts its phases at the plan's first number with no
    repeats inside, and no phase declares dependencies (nothing refers to them by number)."""
    if any(p.dependencies is not None for p in plan.phases) or len(plan.sections) < 2:
        return False
    groups: dict[int, list[str]] = {}
    ranges = [sec.range for sec in plan.sections]
    starts = [r.start_line for r in ranges]
    for phase in plan.phases:
        owner = covering_index(ranges, starts, phase.heading_range.start_line)
        groups.setdefault(owner, []).append(phase.id)
    return len(groups) > 1 and -1 not in groups and all(
        len(set(ids)) == len(ids) and ids[0] == plan.phases[0].id for ids in groups.values())


@rule("BTN111", "complete-with-open-tasks", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.CHECKBOX_PLAN)
def complete_with_open_tasks(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase is marked complete while some of its task checkboxes are still open.

    `add_complete_marker` refuses to mark such a phase, and resume logic trusts the marker,
    so either the work is not done or the checkboxes are stale. Task-based plans (the header
    names the task: `- **Task**: 001` or a bare `**Project Number**: 215`), which mark the
    phase heading and leave their task lists as written, follow another convention and are
    not checked. Fix: tick the finished tasks, or set the phase back to
    `[IN PROGRESS]`.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [COMPLETE]
        - [x] install
        - [ ] configure

    Not reported:

        ==> specs/001_x/plans/implementation-001.md <==
        # Implementation Plan: Setup

        - **Task**: 001 - Setup
        - **Status**: [COMPLETED]
        - **Effort**: 1 hour

        ### Phase 1: Setup [COMPLETED]

        - **Tasks:**
          - [ ] install
          - [ ] configure
    """
    for phase in plan.phases:
        if not is_complete(phase):
            continue
        open_tasks = [t for t in phase.tasks if not t.checked]
        if not open_tasks:
            continue
        marker = phase.status or phase.body_status
        assert marker is not None
        edits = [ctx.edit(t.checkbox_range, "[x]") for t in open_tasks]
        yield ctx.finding(
            marker.range,
            f"{phase_label(phase)} is marked [{marker.text}] but {len(open_tasks)} of "
            f"{len(phase.tasks)} tasks are still open",
            fix=ctx.fix(f"Tick the {len(open_tasks)} open tasks of Phase {phase.number}",
                        *edits, safe=False),
            related=[Related(path=ctx.path, range=t.range, message=f"open task: {t.text[:60]}")
                     for t in open_tasks[:20]])


@rule("BTN112", "tasks-done-phase-not-marked", Severity.HINT, PLAN, fixable=True,
      convention=Convention.CHECKBOX_PLAN)
def tasks_done_phase_not_marked(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """Every task of a phase is ticked but the phase is not marked complete.

    Wave scheduling and resume read the heading marker, not the boxes, so the phase still
    looks unfinished. Plans that carry no status markers at all track progress in their
    boxes only and are not reported. Fix: mark the phase complete.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [IN PROGRESS]
        - [x] install
        - [x] configure

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup
        - [x] install
        - [x] configure

        ### Phase 2: Build
        - [ ] compile
    """
    if not any(status_word(p) is not None for p in plan.phases):
        return  # the plan tracks progress in its boxes only: no marker to forget
    style = completion_style(plan)
    for phase in plan.phases:
        if not phase.tasks or not all(t.checked for t in phase.tasks):
            continue
        word = status_word(phase)
        if state_of(word) in DONE or (
                word is not None and word not in KNOWN_STATUSES + EXTRA_STATUSES):
            continue  # done, or a misspelled marker that BTN113 already reports
        if word == "BLOCKED":
            continue  # blocked by something outside its task list: not for us to close
        if hidden_marker(phase, ctx.lines) is not None:
            continue  # marked, but text after the marker hides it: BTN143 says so
        rng, prefix = marker_edit_range(phase)
        yield ctx.finding(
            phase.heading_range,
            f"all {len(phase.tasks)} tasks of {phase_label(phase)} are done but the phase is "
            f"not marked [{style}]",
            fix=ctx.fix(f"Mark Phase {phase.number} [{style}]",
                        ctx.edit(rng, f"{prefix}[{style}]")))


def _canonical(text: str) -> str:
    return " ".join(text.replace("_", " ").replace("-", " ").split()).upper()


def _check_marker(ctx: RuleContext, marker: StatusMarker, where: str,
                  bracketed: bool, style: str | None = None) -> Finding | None:
    """`style`: the completion marker the plan's headings already use (`completion_style`),
    or None: a misspelt complete marker is corrected to it, so fix-all converges (`[COMPLETD]`
    corrected to `[COMPLETED]` in a `[COMPLETE]` plan raised BTN114 at once)."""
    known = KNOWN_STATUSES + EXTRA_STATUSES
    if marker.text in known:
        return None
    canon = _canonical(marker.text)
    if canon in known:
        suggestion = style if style is not None and canon in COMPLETE else canon
        message = (f"{where}: status marker [{marker.text}] must be written [{suggestion}]; "
                   "the marker utilities match it case-sensitively")
    else:
        close = closest(canon, KNOWN_STATUSES, MISSPELLING)
        if close is None:
            return None  # a word of the author's own vocabulary ([CANCELLED], [DEFERRED])
        suggestion = style if style is not None and close in COMPLETE else close
        message = (f"{where}: status marker [{marker.text}] looks like a misspelling of "
                   f"[{suggestion}]; the marker utilities only recognise the exact word")
    new = f"[{suggestion}]" if bracketed else suggestion
    fix = ctx.fix(f"Change to [{suggestion}]", ctx.edit(marker.range, new))
    return ctx.finding(marker.range, message, fix=fix)


@rule("BTN113", "unknown-status-marker", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def unknown_status_marker(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A status marker is a misspelling or a wrongly cased form of a known marker.

    The marker utilities (`add_complete_marker`, `remove_status_marker`) and wave
    scheduling recognise exactly `[NOT STARTED]`, `[IN PROGRESS]`, `[COMPLETE]`,
    `[COMPLETED]`, `[BLOCKED]` and `[SKIPPED]` (plus `[PENDING]` on expanded-phase summary
    lines, and `[PARTIAL]`, which newer task-based trees write), upper case. `[Complete]`,
    `[in_progress]` or `[COMPLTE]` were meant as one of them but match none, so the phase is
    invisible to those tools. The same applies to the plan's metadata `Status`. Words of an
    author's own vocabulary (`[CANCELLED]`, `[DEFERRED]`) are not misspellings and are left
    alone. Fix: use the marker meant (offered as a quick fix).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [COMPLTE]
        - [x] done

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [COMPLETE]
        - [x] done

        ### Phase 2: Old approach [CANCELLED]
        - [ ] dropped
    """
    # The plan's own spelling of "complete" (BTN114's majority), if its headings use one.
    style = completion_style(plan) if any(
        p.status is not None and status_word(p) in COMPLETE for p in plan.phases) else None
    for phase in plan.phases:
        if phase.status is not None:
            f = _check_marker(ctx, phase.status, phase_label(phase), bracketed=True,
                              style=style)
            if f:
                yield f
        body = phase.body_status
        if body is not None and (body.range.end_char - body.range.start_char) == len(
                body.text) + 2:
            f = _check_marker(ctx, body, f"{phase_label(phase)} status line", bracketed=True,
                              style=style)
            if f:
                yield f
    status = plan.meta("Status")
    if status is not None and status.value.startswith("[") and "]" in status.value:
        text = status.value[1:status.value.index("]")]
        start = status.value_range.start_char
        marker = StatusMarker(text=text, range=status.value_range.model_copy(
            update={"end_char": start + len(text) + 2}))
        f = _check_marker(ctx, marker, "plan Status", bracketed=True, style=style)
        if f:
            yield f


@rule("BTN114", "mixed-complete-markers", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def mixed_complete_markers(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A plan marks some phases `[COMPLETE]` and others `[COMPLETED]`.

    The completion check in `dependency-recalculation.sh` and `check_all_phases_complete`
    matches `\\[COMPLETE\\]` only, so `[COMPLETED]` phases look unfinished to it while other
    tools accept both. Mixing them in one plan makes progress depend on which tool reads it.
    Fix: use one spelling; the quick fix converts to the plan's majority form.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A [COMPLETE]

        ### Phase 2: B [COMPLETED]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A [COMPLETE]

        ### Phase 2: B [COMPLETE]
    """
    used = [(p, status_word(p)) for p in plan.phases
            if p.status is not None and status_word(p) in COMPLETE]
    kinds = {w for _, w in used}
    if len(kinds) < 2:
        return
    majority = completion_style(plan)
    for phase, word in used:
        if word == majority:
            continue
        assert phase.status is not None
        yield ctx.finding(
            phase.status.range,
            f"{phase_label(phase)} uses [{word}] while this plan mostly uses [{majority}]; "
            "dependency-recalculation.sh only recognises [COMPLETE]",
            fix=ctx.fix(f"Change to [{majority}]", ctx.edit(phase.status.range,
                                                            f"[{majority}]")))


@rule("BTN115", "complete-before-dependency", Severity.WARNING, PLAN, convention=Convention.PLAN)
def complete_before_dependency(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase is marked complete although a phase it depends on is not.

    Either the dependency is stale (the phase did not really need it) or the marker is
    wrong; a resumed workflow would re-run the dependency after its dependent. Fix: complete
    the dependency, or correct the marker or the dependency list.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A [IN PROGRESS]
        dependencies: []

        ### Phase 2: B [COMPLETE]
        dependencies: [1]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A [SKIPPED]
        dependencies: []

        ### Phase 2: B [COMPLETE]
        dependencies: [1]
    """
    by_id = {p.id: p for p in plan.phases}
    for phase in plan.phases:
        if not is_complete(phase) or phase.dependencies is None:
            continue
        for ref in phase.dependencies.refs:
            dep = by_id.get(ref.id or "")
            if dep is None or dep is phase or is_done(dep):
                continue
            state = status_word(dep) or "no status marker"
            yield ctx.finding(
                ref.range,
                f"{phase_label(phase)} is complete but depends on Phase {dep.number}, which is "
                f"{'marked [' + state + ']' if dep.status or dep.body_status else 'not marked'}",
                related=[Related(path=ctx.path, range=dep.heading_range,
                                 message=f"Phase {dep.number} ({state})")])


@rule("BTN116", "uppercase-checkbox", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def uppercase_checkbox(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A task checkbox is written `[X]`.

    GitHub renders `[X]` as ticked, but the repo's checkbox utilities match `- [x]` with a
    lower-case x only, so the task counts as open for `mark_phase_complete`,
    `verify_phase_complete` and progress tracking. Fix: write `[x]`.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        - [X] done

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        - [x] done
    """
    tasks = [t for p in plan.phases for t in p.tasks] + list(plan.success_criteria)
    seen: set[int] = set()
    for task in tasks:
        if task.marker == "X" and task.range.start_line not in seen:
            seen.add(task.range.start_line)
            yield ctx.finding(task.checkbox_range,
                              "checkbox [X] is not recognised by the checkbox utilities; "
                              "write [x]",
                              fix=ctx.fix("Change [X] to [x]", ctx.edit(task.checkbox_range,
                                                                        "[x]")))


@rule("BTN117", "conflicting-phase-status", Severity.WARNING, PLAN, convention=Convention.PLAN)
def conflicting_phase_status(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase's heading marker and its `**Status**:` line disagree.

    Some tools read the heading marker, others the status line written by phase expansion;
    when they disagree the phase is complete for one and pending for the other. A line that
    states the heading's status in more words agrees with it (`Deferred to future task`
    under `[DEFERRED]`, `[PASS] COMPLETED` under `[COMPLETED]`); a line that starts with
    no status at all (`**Status**: Structure added, proofs pending`) is a note. Fix: make them agree
    (expanded-phase summaries may say `[PENDING]` only while the heading says
    `[NOT STARTED]`).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A [COMPLETE]
        **Status**: IN PROGRESS

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A [COMPLETE]
        **Status**: COMPLETED

        #### Theorem 2
        **Status**: open problem
    """
    for phase in plan.phases:
        if phase.status is None or phase.body_status is None:
            continue
        head = " ".join(phase.status.text.split()).upper()
        body = " ".join(phase.body_status.text.split()).upper()
        states = {state_of(head), state_of(body)}
        if not states <= STATES:
            continue  # `**Status**: Structure added, proofs pending`: a note, not a marker
        equivalent = states <= COMPLETE or len(states) == 1 or (
            states <= {"NOT STARTED", "PENDING"})
        if not equivalent:
            yield ctx.finding(
                phase.body_status.range,
                f"{phase_label(phase)} status line says {body} but the heading says [{head}]",
                related=[Related(path=ctx.path, range=phase.status.range,
                                 message="heading marker")])

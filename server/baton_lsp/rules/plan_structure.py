"""BTN14x: plan structure that hides phases or misstates progress from every reader."""

from __future__ import annotations

from collections.abc import Iterator

from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.plan import COMPLETE, DONE, PHASES_SECTIONS, Plan, phase_state
from .base import RuleContext, rule
from .plan_common import hidden_marker, phase_label

PLAN = (Kind.PLAN,)
_NOT_STARTED = {"NOT STARTED", "PLANNED", "PENDING", "TODO", "DRAFT"}
_IN_PROGRESS = {"IN PROGRESS", "IMPLEMENTING", "PARTIAL"}


@rule("BTN140", "plan-unclosed-fence", Severity.ERROR, PLAN, fixable=True,
      convention=Convention.PLAN)
def unclosed_fence(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A code fence in the plan is never closed, so it swallows the phases after it.

    Markdown runs an unclosed fence to the end of the file: every `### Phase N` heading
    after it is code, invisible to the marker utilities, wave scheduling, the editor's
    outline and Baton itself. Fix: close the fence (the quick fix adds the closing marker
    before the first swallowed phase).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [COMPLETE]
        ```bash
        make setup

        ### Phase 2: Build [NOT STARTED]
        - [ ] build

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [COMPLETE]
        ```bash
        make setup
        ```

        ### Phase 2: Build [NOT STARTED]
        - [ ] build
    """
    if plan.unclosed_fence is None or not plan.swallowed_phases:
        return
    first = plan.swallowed_phases[0]
    fence = ctx.lines[plan.unclosed_fence.start_line].lstrip()
    marker = fence[: len(fence) - len(fence.lstrip(fence[:1]))] or "```"
    n = len(plan.swallowed_phases)
    yield ctx.finding(
        plan.unclosed_fence,
        f"this code fence is never closed: it swallows {n} phase heading"
        f"{'s' if n > 1 else ''} after it (first on line {first.start_line + 1})",
        related=[Related(path=ctx.path, range=r, message="phase hidden inside the fence")
                 for r in plan.swallowed_phases[:5]],
        fix=ctx.fix("Close the fence before the first swallowed phase",
                    ctx.edit(Range.of_line(first.start_line, 0, 0), f"{marker}\n\n")))


@rule("BTN141", "stranded-phase-heading", Severity.WARNING, PLAN,
      convention=Convention.PLAN)
def stranded_phase(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase heading sits outside the plan's phases section.

    When a plan has an `## Implementation Phases` section, readers take its phases from
    there (`extract_phase_content` stops at the next `## ` heading). A `### Phase N` with
    a status, dependencies or tasks that ended up after a later `## Testing Strategy` or
    `## Notes` is a phase nobody schedules. Headings before the section (design sketches)
    and repeats of phase numbers already in the section are not reported. Fix: move the
    phase into the phases section.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Implementation Phases

        ### Phase 1: Setup [COMPLETE]
        - [x] setup

        ## Testing Strategy

        ### Phase 2: Deploy [NOT STARTED]
        - [ ] deploy

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Implementation Phases

        ### Phase 1: Setup [COMPLETE]
        - [x] setup

        ## Testing Strategy

        ### Phase 1 Testing
        Run the unit tests.
    """
    section = next((s for s in plan.sections
                    if s.title.strip().lower() in PHASES_SECTIONS), None)
    for phase in plan.stranded_phases:
        where = f" (after `## {section.title}` ends)" if section else ""
        yield ctx.finding(
            phase.heading_range,
            f"{phase_label(phase)} is outside the phases section{where}: tools that read "
            "the section never schedule or mark it; move it into the section",
            related=[Related(path=ctx.path, range=section.heading_range,
                             message="the phases section")] if section else [])


@rule("BTN142", "plan-status-contradicts-phases", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def plan_status_contradicts(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """The plan's own `Status` contradicts its phases.

    Listings, `/implement` and resume read the plan-level Status: a plan whose phases are
    all complete but which still says `[NOT STARTED]` or `[IN PROGRESS]` (or `planned`
    with every task ticked) is offered as work to do; one that says `[COMPLETE]` while
    phases are still open is skipped. Only phases with a status (or, without markers, the
    task checkboxes) are compared; phases marked optional are left out. Fix: set the Status
    the phases show (quick fix; review it).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Status**: [NOT STARTED]

        ### Phase 1: Setup [COMPLETE]
        - [x] setup

        ### Phase 2: Build [COMPLETE]
        - [x] build

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Status**: [IN PROGRESS]

        ### Phase 1: Setup [COMPLETE]
        - [x] setup

        ### Phase 2: Build [NOT STARTED]
        - [ ] build
    """
    entry = plan.meta("Status")
    if entry is None or not plan.phases or not entry.value.strip():
        return
    declared = " ".join(entry.value.strip().strip("[]").replace("_", " ").split()).upper()
    declared = declared.split("]")[0].strip("[ ")
    phases = [p for p in plan.phases if "optional" not in p.title.lower()]
    if not phases:
        return
    words = [phase_state(p) for p in phases]
    if all(w is not None for w in words):
        all_done = all(w in DONE for w in words) and any(w in COMPLETE for w in words)
        open_ = [p for p, w in zip(phases, words, strict=True) if w not in DONE]
    elif all(w is None for w in words) and any(p.tasks for p in phases):
        tasks = [t for p in phases for t in p.tasks]
        all_done = all(t.marker in "xX" for t in tasks)
        open_ = [p for p in phases if any(t.marker not in "xX" for t in p.tasks)]
    else:
        return
    bracketed = entry.value.strip().startswith("[")
    style = "COMPLETED" if any(w == "COMPLETED" for w in words) else "COMPLETE"
    if all_done and (declared in _NOT_STARTED or declared in _IN_PROGRESS):
        new = f"[{style}]" if bracketed else style
        yield ctx.finding(
            entry.value_range,
            f"plan Status says {entry.value.strip()} but all {len(phases)} phases are "
            "done",
            fix=ctx.fix(f"Set Status to {new}", ctx.edit(entry.value_range, new), safe=False))
    elif declared in COMPLETE and open_:
        new = "[IN PROGRESS]" if bracketed else "IN PROGRESS"
        names = ", ".join(f"Phase {p.number}" for p in open_[:4])
        yield ctx.finding(
            entry.value_range,
            f"plan Status says {entry.value.strip()} but {len(open_)} phase"
            f"{'s are' if len(open_) > 1 else ' is'} not done ({names})",
            related=[Related(path=ctx.path, range=p.heading_range, message="not done")
                     for p in open_[:5]],
            fix=ctx.fix(f"Set Status to {new}", ctx.edit(entry.value_range, new), safe=False))


@rule("BTN143", "status-marker-not-last", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def marker_not_last(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase heading's status marker is followed by more text (`[COMPLETE] ✓`).

    Status markers are read from the END of the heading line (the marker utilities replace
    `\\[[^]]*\\]$`; Baton reads the trailing brackets). With a `✓`, an emoji or a note after
    it, the phase has no status for any of them: it is scheduled again and never counts as
    done. Fix: drop the trailing text (quick fix) or move it before the marker.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup [COMPLETE] ✓
        - [x] setup

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup ✓ [COMPLETE]
        - [x] setup
    """
    for phase in plan.phases:
        m = hidden_marker(phase, ctx.lines)
        if m is None:
            continue
        line_no = phase.heading_range.start_line
        line = ctx.lines[line_no]
        tail = Range.of_line(line_no, m.end(1) + 1, len(line.rstrip()))
        yield ctx.finding(
            Range.of_line(line_no, m.start(), len(line.rstrip())),
            f"{phase_label(phase)}: `{m.group(2).strip()}` after [{m.group(1)}] hides the "
            "marker: status markers must end the heading",
            fix=ctx.fix(f"Remove `{m.group(2).strip()}` after the marker",
                        ctx.edit(tail, "")))

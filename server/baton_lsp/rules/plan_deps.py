"""BTN10x: phase dependencies — unknown ids, self-dependencies, cycles."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.graph import build_graph
from ..model.plan import (
    SEQUENTIAL_FORMS,
    DependencyForm,
    DependencyRef,
    Phase,
    Plan,
    PlanRole,
)
from .base import RuleContext, rule
from .plan_common import phase_label

PLAN = (Kind.PLAN,)


def _remove_ref_edit(ctx: RuleContext, phase: Phase, ref: DependencyRef) -> Range | None:
    """Range covering `ref` plus one adjoining comma, for list forms only."""
    deps = phase.dependencies
    if deps is None or deps.form in (DependencyForm.PROSE, DependencyForm.PREREQUISITE):
        return None
    line = ctx.lines[ref.range.start_line] if ref.range.start_line < len(ctx.lines) else ""
    start, end = ref.range.start_char, ref.range.end_char
    # Eat a following ", " or else a preceding ", " so the list stays well formed.
    j = end
    while j < len(line) and line[j] in "\"' ":
        j += 1
    if j < len(line) and line[j] == ",":
        j += 1
        while j < len(line) and line[j] == " ":
            j += 1
        return Range.of_line(ref.range.start_line, start, j)
    i = start
    while i > 0 and line[i - 1] in "\"' ":
        i -= 1
    if i > 0 and line[i - 1] == ",":
        return Range.of_line(ref.range.start_line, i - 1, end)
    return Range.of_line(ref.range.start_line, start, end)


def _known_ids(plan: Plan, ctx: RuleContext) -> set[str] | None:
    """Ids a dependency may name: this plan's phases, or the parent plan's for phase files."""
    if plan.role is PlanRole.PLAN:
        return {p.id for p in plan.phases}
    parent = plan.meta("Parent Plan")
    if parent is None:
        return None
    target = parent.value.strip().strip("`")
    if target.startswith("[") and "](" in target:
        target = target.split("](", 1)[1].rstrip(")")
    resolved = ctx.resolve(target) if target.endswith(".md") else None
    if resolved is None:
        return None
    parent_plan = ctx.plan(resolved)
    if parent_plan is None:
        return None
    return {p.id for p in parent_plan.phases}


@rule("BTN101", "unknown-dependency", Severity.ERROR, PLAN, fixable=True,
      convention=Convention.PLAN)
def unknown_dependency(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase depends on a phase number that does not exist in the plan.

    Wave scheduling (`dependency-analyzer.sh`, the implementer coordinator and `baton run`)
    waits for every listed dependency. A dependency on a phase that does not exist can never
    be satisfied, so the phase would never start, or the id is a typo for another phase.

    Ids may be written `3`, `phase_3` or `Phase 3`; dotted ids such as `2.5` or `1.10` (the
    tenth phase of part 1, not `1.1`), lettered ones such as `2A` and phase `0` are valid when
    such phases exist. For expanded phase files the ids are checked against the
    parent plan. A `**Prerequisite**: Phase 1 and 2 must be complete` line of a phase with
    no dependency line is read as one. Fix: correct the id or remove it.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup
        dependencies: []

        ### Phase 2: Build
        dependencies: [3]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup
        dependencies: []

        ### Phase 2: Build
        dependencies: [phase_1]
    """
    known = _known_ids(plan, ctx)
    if known is None:
        return
    listing = _listing(sorted(known, key=_sort_key))
    for phase in plan.phases:
        if phase.dependencies is None:
            continue
        for ref in phase.dependencies.refs:
            if ref.id is None:
                yield ctx.finding(
                    ref.range,
                    f"{phase_label(phase)}: cannot read dependency '{ref.raw}'; expected a "
                    f"phase number such as 3, phase_3 or Phase 3 (phases: {listing})")
                continue
            if ref.id in known or ref.id == phase.id:
                continue
            rng = _remove_ref_edit(ctx, phase, ref)
            fix = (ctx.fix(f"Remove dependency on phase {ref.id}", ctx.edit(rng, ""))
                   if rng is not None else None)
            yield ctx.finding(
                ref.range,
                f"{phase_label(phase)} depends on phase {ref.raw}, which does not exist; "
                f"valid phase ids: {listing}", fix=fix)


@rule("BTN102", "self-dependency", Severity.ERROR, PLAN, fixable=True, convention=Convention.PLAN)
def self_dependency(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase lists itself as a dependency.

    A phase cannot start before it has finished, so a self-dependency blocks it forever
    (and every phase that depends on it). Fix: remove the id.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup
        dependencies: [1]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: Setup
        dependencies: []
    """
    for phase in plan.phases:
        if phase.dependencies is None:
            continue
        for ref in phase.dependencies.refs:
            if ref.id == phase.id:
                rng = _remove_ref_edit(ctx, phase, ref)
                fix = (ctx.fix(f"Remove self-dependency of phase {phase.id}", ctx.edit(rng, ""))
                       if rng is not None else None)
                yield ctx.finding(ref.range, f"{phase_label(phase)} depends on itself",
                                  fix=fix)


@rule("BTN103", "dependency-cycle", Severity.ERROR, PLAN, convention=Convention.PLAN)
def dependency_cycle(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """Phases depend on each other in a circle, so none of them can ever start.

    The message names the whole cycle in dependency direction (`1 → 3 → 2 → 1` reads
    "phase 1 depends on 3, which depends on 2, which depends on 1"). One finding is reported
    per cycle, on the first phase of the cycle, with the other phases' dependency lines as
    related locations. Fix: remove one of the edges so the phases form an order.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: [2]

        ### Phase 2: B
        dependencies: [1]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: []

        ### Phase 2: B
        dependencies: [1]
    """
    if plan.role is not PlanRole.PLAN:
        return
    graph = build_graph(plan)
    if not graph.cycles:
        return
    by_id: dict[str, Phase] = {}  # first phase of each id, as `plan.phase` (a scan) finds
    for p in plan.phases:
        by_id.setdefault(p.id, p)
    for cycle in graph.cycles:
        first = by_id.get(cycle[0])
        if first is None:
            continue
        ref_range = _ref_range(first, cycle[1]) or first.heading_range
        related = []
        for a, b in itertools.pairwise(cycle[1:]):
            phase = by_id.get(a)
            if phase is not None:
                related.append(Related(path=ctx.path, range=_ref_range(phase, b)
                                       or phase.heading_range,
                                       message=f"Phase {a} depends on phase {b}"))
        path = " → ".join(cycle)
        yield ctx.finding(
            ref_range,
            f"dependency cycle: {path}; none of phases {', '.join(cycle[:-1])} can ever start",
            related=related)


def _ref_range(phase: Phase, target: str) -> Range | None:
    if phase.dependencies is None:
        return None
    for ref in phase.dependencies.refs:
        if ref.id == target:
            return ref.range
    return None


@rule("BTN104", "duplicate-dependency", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def duplicate_dependency(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase lists the same dependency twice.

    Harmless for scheduling but usually a typo for another phase id. Fix: remove the copy.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: []

        ### Phase 2: B
        dependencies: [1, 1]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: []

        ### Phase 2: B
        dependencies: [1]
    """
    for phase in plan.phases:
        if phase.dependencies is None:
            continue
        seen: set[str] = set()
        for ref in phase.dependencies.refs:
            if ref.id is None:
                continue
            if ref.id in seen:
                rng = _remove_ref_edit(ctx, phase, ref)
                fix = (ctx.fix(f"Remove duplicate dependency on phase {ref.id}",
                               ctx.edit(rng, "")) if rng is not None else None)
                yield ctx.finding(ref.range,
                                  f"{phase_label(phase)} lists phase {ref.id} twice", fix=fix,
                                  tags=["unnecessary"])
            seen.add(ref.id)


@rule("BTN105", "undeclared-dependencies", Severity.INFO, PLAN, convention=Convention.PLAN)
def undeclared_dependencies(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """Most phases declare dependencies and this one does not.

    When no phase of a plan declares dependencies, phases run in document order. Once some
    do, a phase without a `dependencies:` line has no prerequisites and is scheduled in the
    first wave, in parallel with everything else. Where most phases carry a list, the one
    without is usually forgotten; where most carry none (only a final phase lists the
    others, say) the author orders by position and nothing is reported. Plans that write
    `**Depends on**:` (or a `**Prerequisite**:` naming phases) are not reported: their
    format reads a phase without the line as depending on every earlier phase, and so does
    Baton. Fix: add `dependencies: []` to say
    "none" explicitly, or list the phases it needs.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: []

        ### Phase 2: B

        ### Phase 3: C
        dependencies: [2]

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A

        ### Phase 2: B

        ### Phase 3: C
    """
    if plan.role is not PlanRole.PLAN or not any(p.dependencies for p in plan.phases):
        return
    if any(p.dependencies is not None and p.dependencies.form in SEQUENTIAL_FORMS
           for p in plan.phases):
        return  # `**Depends on**:` / `**Prerequisite**:` plans: a phase without the line
        # follows every earlier one
    later = plan.phases[1:]
    if 2 * sum(p.dependencies is None for p in later) > len(later):
        return  # most phases declare none: the author orders by position, not by lists
    for i, phase in enumerate(plan.phases):
        if phase.dependencies is None and i > 0:
            line = phase.heading_range.start_line
            fix = ctx.fix("Declare no dependencies (`dependencies: []`)",
                          ctx.edit(Range.of_line(line + 1, 0, 0), "dependencies: []\n"))
            yield ctx.finding(
                phase.heading_range,
                f"{phase_label(phase)} declares no dependencies while other phases do; it "
                "will run in the first wave", fix=fix)


@rule("BTN106", "extra-dependency-line", Severity.WARNING, PLAN, convention=Convention.PLAN)
def extra_dependency_line(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A phase has more than one dependency line; only the first one is used.

    Tools read the first `dependencies:` / `**Dependencies**:` / `depends_on:` /
    `**Depends on**:` line of a phase. A second one is ignored, which hides real ordering
    constraints. A line naming only other tasks (`- **Dependencies**: Task 956`) is the
    task's, not a phase dependency line. Fix: merge the lists into the first line.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: []

        ### Phase 2: B
        dependencies: [1]
        **Dependencies**: [1, 3]

        ### Phase 3: C

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ### Phase 1: A
        dependencies: []

        ### Phase 2: B
        dependencies: [1]

        - [ ] Write the migration
          - **Dependencies**: the schema from task 1

        #### Phase 2a: Rollout
        dependencies: []
    """
    for phase in plan.phases:
        if phase.dependencies is None:
            continue
        for rng in phase.extra_dependency_lines:
            yield ctx.finding(
                rng, f"{phase_label(phase)} has a second dependency line; only the one on line "
                     f"{phase.dependencies.range.start_line + 1} is used",
                related=[Related(path=ctx.path, range=phase.dependencies.range,
                                 message="dependency line in use")])


MAX_LISTED = 20
"""Phase ids a BTN101 message lists before it elides the middle: every message naming all
the phases made the output of a large plan quadratic in its size."""


def _listing(ids: list[str]) -> str:
    if len(ids) <= MAX_LISTED:
        return ", ".join(ids) or "none"
    return f"{', '.join(ids[:MAX_LISTED - 2])}, …, {', '.join(ids[-2:])} ({len(ids):,} phases)"


def _sort_key(pid: str) -> tuple[tuple[int, ...], str]:
    """Dotted ids part by part (`1.2` before `1.10`), lettered ones (`2A`) after their number,
    ids without a number (`A`) last."""
    digits = pid[:len(pid) - len(pid.lstrip("0123456789."))]
    parts = tuple(int(p) for p in digits.split(".") if p.isdigit() and len(p) < 20)
    return (parts or (1 << 62,), pid)



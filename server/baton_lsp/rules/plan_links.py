"""BTN13x: links from plans to reports, phase files and parent plans."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..model.base import Convention, Finding, Kind, Severity
from ..model.common import Link
from ..model.plan import Plan, PlanRole
from ..parse.plan import normalize_id
from .base import RuleContext, rule
from .links import display, missing_links

PLAN = (Kind.PLAN,)
_MD_LINK_RE = re.compile(r"\[[^\[\]]*\]\(([^)\s]+)\)")  # no `[` in the text: linear


@rule("BTN130", "broken-link", Severity.WARNING, PLAN, cross_file=True, convention=Convention.PLAN)
def broken_link(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A relative link (research report, phase-detail file, summary) points nowhere.

    Plans link their research reports and expanded phase files; agents are handed those
    paths and fail when they are missing. Links are resolved relative to the plan; absolute
    paths from another machine that contain `/.claude/` are re-rooted at this workspace.
    Web links and anchors are not checked, nor placeholder targets (a bare word such as
    `path` or `url`, with no `.` or `/`; `NNN_previous.md`, `{topic}/plan.md`, `*.md`,
    which templates and examples use). Fix: correct the path or restore the file (in an
    editor, the *Create* quick fix writes it, with a title).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Research Reports**:
          - [Analysis](../reports/001-analysis.md)

        ### Phase 1: A

    Not reported:

        ==> specs/001_x/reports/001-analysis.md <==
        # Analysis
        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Research Reports**:
          - [Analysis](../reports/001-analysis.md)
          - [Upstream docs](https://example.com/docs)

        Sections say "See [Full Doc](path) for complete details".

        ### Phase 1: A
    """
    links: list[Link] = [*plan.links, *(p.expanded_link for p in plan.phases
                                        if p.expanded_link is not None)]
    yield from missing_links(links, ctx)


@rule("BTN131", "parent-plan-missing", Severity.WARNING, PLAN, cross_file=True,
      convention=Convention.PLAN)
def parent_plan_missing(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """An expanded phase or stage file names a parent plan that cannot be found.

    Phase files record `Parent Plan` (stage files `Parent Phase`) so progress can be
    propagated upwards (`spec-updater`, checkbox propagation). The value may be a link, a
    relative path, an absolute path or a bare file name looked up next to the file and one
    directory up. Fix: point it at the existing parent file.

    Reported:

        ==> specs/001_x/plans/001-plan/phase_2_b.md <==
        # Phase 2: B

        ## Metadata
        - **Phase Number**: 2
        - **Parent Plan**: [Plan](001-old-plan.md)

    Not reported:

        ==> specs/001_x/plans/001-plan/001-plan.md <==
        # Plan

        ### Phase 2: B
        ==> specs/001_x/plans/001-plan/phase_2_b.md <==
        # Phase 2: B

        ## Metadata
        - **Phase Number**: 2
        - **Parent Plan**: [Plan](001-plan.md)
    """
    if plan.role is PlanRole.PLAN:
        return
    here = Path(plan.path).parent
    for key in ("Parent Plan", "Parent Phase"):
        entry = plan.meta(key)
        if entry is None or not entry.value.strip():
            continue
        value = entry.value.strip().strip("`")
        m = _MD_LINK_RE.search(value)
        if m:
            target = m.group(1)
        elif ".md" in value or "/" in value or " " not in value:
            target = value.split()[0]
        else:
            continue  # a title, not a path: nothing to resolve
        if here.name == target.removesuffix(".md"):
            continue  # a Level 2 stage file naming its own phase directory
        if not target.endswith(".md") and "/" not in target:
            target = f"{target}.md"
        if target.startswith(("/", ".claude/")) or "$" in target:
            resolved = ctx.resolve(target)
            candidates = [resolved] if resolved else []
        else:
            candidates = [here / target, here.parent / target]
        if not candidates or any(ctx.exists(c) for c in candidates):
            continue
        yield ctx.finding(entry.value_range,
                          f"{key} '{value}' does not resolve to a file (looked for "
                          + " and ".join(display(c, ctx) for c in candidates) + ")")


@rule("BTN132", "phase-number-mismatch", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def phase_number_mismatch(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """An expanded phase file's `Phase Number` metadata disagrees with its heading.

    Expansion writes `# Phase N: Title` and `- **Phase Number**: N`; tools that propagate
    progress to the parent plan use the metadata, readers use the heading. When they differ
    (usually after renumbering the parent plan) progress lands on the wrong phase.
    Fix: make the metadata match the heading (quick fix).

    Reported:

        ==> specs/001_x/plans/001-plan/phase_2_b.md <==
        # Phase 2: B

        ## Metadata
        - **Phase Number**: 3

    Not reported:

        ==> specs/001_x/plans/001-plan/phase_2_b.md <==
        # Phase 2: B

        ## Metadata
        - **Phase Number**: 2
    """
    if plan.role is not PlanRole.PHASE_FILE or not plan.phases:
        return
    entry = plan.meta("Phase Number")
    if entry is None:
        return
    m = re.match(r"\s*(\d+(?:\.\d+)?)", entry.value)
    if not m:
        return
    heading = plan.phases[0]

    if normalize_id(m.group(1)) == heading.id:
        return
    start = entry.value_range.start_char + m.start(1)
    rng = entry.value_range.model_copy(update={"start_char": start,
                                              "end_char": start + len(m.group(1))})
    yield ctx.finding(
        rng, f"Phase Number is {m.group(1)} but the file's heading is Phase {heading.number}",
        fix=ctx.fix(f"Set Phase Number to {heading.number}", ctx.edit(rng, heading.number)))

"""BTN12x: plan metadata — required keys, Estimated Phases, dates, structure level."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..lazy_pattern import LazyPattern
from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.plan import Generation, Plan, PlanRole
from ..parse.text import MAX_INT_DIGITS
from .base import RuleContext, rule

PLAN = (Kind.PLAN,)
_DATE_RE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})\b")
_NUMERIC_DATE_RE = LazyPattern(r"^\s*\d{4}[-/.]\d{1,2}[-/.]\d{1,2}\b")
_INT_RE = re.compile(rf"^\s*(\d{{1,{MAX_INT_DIGITS}}})\b")
_PHASE_FILE_RE = re.compile(r"^phase_(\d+(?:\.\d+)?)(?:_|\.md$)")

_PLACEHOLDERS = {
    "status": "[NOT STARTED]",
    "research reports": "none",
    "structure level": "0",
    "estimated hours": "TBD",
}


def _placeholder(key: str) -> str:
    if key.lower() in ("date",):
        return dt.date.today().isoformat()
    return _PLACEHOLDERS.get(key.lower(), "TBD")


@rule("BTN120", "missing-metadata", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN_STANDARD)
def missing_metadata(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A plan written to the seeds' plan standard lacks one of its required keys.

    The plan metadata standard (spec 010) requires Date, Feature, Status, Estimated Hours,
    Standards File and Research Reports (configurable: `required-metadata`). It applies to
    plans of a workspace that ships the standard
    (`.claude/docs/reference/standards/plan-metadata-standard.md`) and that name their
    `Standards File`; plans written before it, other authors' plans and test fixtures follow
    no such standard (turn it on anyway with `conventions = {plan-standard = "on"}`).

    Fix: the quick fix inserts the missing keys with placeholder values to fill in.

    Reported:

        ==> .claude/docs/reference/standards/plan-metadata-standard.md <==
        # Plan metadata standard
        ==> .claude/specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Date**: 2025-12-02
        - **Feature**: Login
        - **Standards File**: /repo/CLAUDE.md

        ### Phase 1: Setup [NOT STARTED]

    Not reported:

        ==> .claude/specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Date**: 2025-10-02
        - **Feature**: Login
        - **Standards File**: /repo/CLAUDE.md

        ### Phase 1: Setup [NOT STARTED]
    """
    if plan.role is not PlanRole.PLAN or plan.generation is Generation.G3:
        return
    yield from _missing(plan, ctx, ctx.config.required_metadata)


@rule("BTN124", "task-plan-missing-metadata", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.TASK_PLAN)
def task_plan_missing_metadata(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A task-based plan lacks one of the bullet metadata keys its tooling reads.

    Task-based plans keep `- **Key**: value` bullets directly under the title; the task
    commands read `Task` (the registry entry), `Status` (rewritten as phases complete) and
    `Effort` (configurable: `required-metadata-g3`). Checked on plans that name their format
    standard (`- **Standards**: plan-format.md`); archived or hand-written plans of the same
    shape follow none. Fix: the quick fix inserts the missing bullets with placeholder values.

    Reported:

        ==> specs/001_x/plans/implementation-001.md <==
        # Implementation Plan: Login

        - **Task**: 001 - Login
        - **Effort**: 2 hours
        - **Standards**: plan-format.md; status-markers.md

        ### Phase 1: Setup [NOT STARTED]

    Not reported:

        ==> specs/001_x/plans/implementation-001.md <==
        # Implementation Plan: Login

        - **Task**: 001 - Login
        - **Status**: [NOT STARTED]
        - **Effort**: 2 hours
        - **Standards**: plan-format.md; status-markers.md

        ### Phase 1: Setup [NOT STARTED]
    """
    if plan.role is not PlanRole.PLAN:
        return
    yield from _missing(plan, ctx, ctx.config.required_metadata_g3)


def _missing(plan: Plan, ctx: RuleContext, required: list[str]) -> Iterator[Finding]:
    missing = [k for k in required if plan.meta(k) is None]
    if not missing:
        return
    text = "".join(f"- **{k}**: {_placeholder(k)}\n" for k in missing)
    if any(k.lower() == "date" for k in missing):  # the fix inserts today's date
        tomorrow = dt.datetime.combine(dt.date.today() + dt.timedelta(days=1), dt.time())
        ctx.valid_until(tomorrow.timestamp())
    if plan.metadata:
        last = plan.metadata[-1].range.end_line
        anchor = Range.of_line(last + 1, 0, 0)
        where = plan.metadata_range or plan.metadata[0].range
        target = Range.of_line(where.start_line, 0, len(ctx.lines[where.start_line])
                               if where.start_line < len(ctx.lines) else 0)
    else:
        line = plan.title_range.start_line if plan.title_range else -1
        anchor = Range.of_line(line + 1, 0, 0)
        text = f"\n## Metadata\n{text}" if plan.generation is not Generation.G3 else f"\n{text}"
        target = plan.title_range or Range.of_line(0)
    names = ", ".join(missing)
    yield ctx.finding(
        target,
        f"plan metadata is missing {len(missing)} required key{'s' if len(missing) > 1 else ''}"
        f": {names}",
        fix=ctx.fix(f"Add missing metadata ({names})", ctx.edit(anchor, text)))


@rule("BTN121", "estimated-phases-mismatch", Severity.WARNING, PLAN, fixable=True,
      convention=Convention.PLAN)
def estimated_phases_mismatch(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """`Estimated Phases` does not match the number of phases in the plan.

    Complexity scoring and expansion decisions read the metadata count; after a revision
    adds or removes phases it goes stale. Fix: update the count (quick fix).

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Estimated Phases**: 3

        ### Phase 1: A

        ### Phase 2: B

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Estimated Phases**: 2

        ### Phase 1: A

        ### Phase 2: B
    """
    entry = plan.meta("Estimated Phases")
    if entry is None or plan.role is not PlanRole.PLAN or not plan.phases:
        return
    m = _INT_RE.match(entry.value)
    if not m:
        return
    declared, actual = int(m.group(1)), len({p.id for p in plan.phases})
    if declared == actual:
        return
    start = entry.value_range.start_char + m.start(1)
    rng = Range.of_line(entry.value_range.start_line, start, start + len(m.group(1)))
    yield ctx.finding(
        rng, f"Estimated Phases says {declared} but the plan has {actual} phases",
        fix=ctx.fix(f"Set Estimated Phases to {actual}", ctx.edit(rng, str(actual))))


@rule("BTN122", "invalid-date", Severity.WARNING, PLAN, convention=Convention.PLAN)
def invalid_date(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """A date in the metadata is meant as `YYYY-MM-DD` but is not a valid one.

    Dates sort plans and summaries and feed age checks on resume. A trailing note such as
    `2025-12-02 (Revised)` is accepted; `2025-13-01`, `2025-02-30`, `2025-1-5` or
    `2025/12/02` are not. Dates written for people (`26 March 2026`, `Dec 2, 2025`) are how
    their authors date documents and are left alone.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Date**: 2025-13-01

        ### Phase 1: A

    Not reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Date**: 2025-12-02 (Revised)
        - **Last Updated**: 26 March 2026

        ### Phase 1: A
    """
    for entry in plan.metadata:
        key = entry.key.lower()
        if key not in ("date", "date created", "date completed", "created", "last updated"):
            continue
        value = entry.value.strip()
        m = _DATE_RE.match(value)
        problem = None
        if not m:
            if _NUMERIC_DATE_RE.match(value):  # `2025-1-5`, `2025/12/02`: ISO meant
                problem = f"'{value}' is not a YYYY-MM-DD date"
        else:
            try:
                dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
            except ValueError as exc:
                problem = f"'{m.group(0).strip()}' is not a valid date ({exc})"
        if problem:
            yield ctx.finding(entry.value_range if value else entry.key_range,
                              f"{entry.key}: {problem}")


def _expansion_on_disk(plan_path: Path, ctx: RuleContext) -> tuple[int, dict[str, Path]]:
    """(detected level, phase id → file or dir) from the plan's directory listing."""
    directory = plan_path.parent
    ctx.depends_on.add(str(directory))
    found: dict[str, Path] = {}
    level = 0
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return 0, found
    for entry in entries:
        m = _PHASE_FILE_RE.match(entry.name)
        if not m:
            continue
        pid = m.group(1).lstrip("0") or "0"
        if entry.is_dir():
            level = 2
            found.setdefault(pid, Path(entry.path))
        elif entry.name.endswith(".md"):
            level = max(level, 1)
            found.setdefault(pid, Path(entry.path))
    return level, found


@rule("BTN123", "structure-level-mismatch", Severity.WARNING, PLAN, cross_file=True,
      convention=Convention.PLAN)
def structure_level_mismatch(plan: Plan, ctx: RuleContext) -> Iterator[Finding]:
    """`Structure Level` / `Expanded Phases` disagree with the phase files on disk.

    Level 0 is a single file, level 1 has `phase_N_*.md` files beside the plan, level 2
    has `phase_N_*/` directories with stage files (`detect_structure_level` in
    plan-core-bundle.sh). Tools that trust the metadata look for files that are not there,
    or miss expanded content that is. Fix: update the metadata or (re-)expand the phase.

    Reported:

        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Structure Level**: 1
        - **Expanded Phases**: [2]

        ### Phase 1: A

        ### Phase 2: B

    Not reported:

        ==> specs/001_x/plans/phase_2_b.md <==
        # Phase 2: B
        ==> specs/001_x/plans/001-plan.md <==
        # Plan

        ## Metadata
        - **Structure Level**: 1
        - **Expanded Phases**: [2]

        ### Phase 1: A

        ### Phase 2: B
    """
    if plan.role is not PlanRole.PLAN or not plan.path:
        return
    level_entry = plan.meta("Structure Level")
    expanded_entry = plan.meta("Expanded Phases")
    if level_entry is None and expanded_entry is None:
        return
    actual, files = _expansion_on_disk(Path(plan.path), ctx)
    if level_entry is not None:
        m = _INT_RE.match(level_entry.value)
        if m and int(m.group(1)) != actual:
            declared = int(m.group(1))
            dirs = sum(1 for p in files.values() if p.suffix != ".md")
            detail = ("no phase_N_*.md files or phase_N_*/ directories are next to the plan"
                      if actual == 0 else
                      f"{len(files) - dirs} phase files and {dirs} phase directories are next "
                      "to the plan")
            yield ctx.finding(level_entry.value_range or level_entry.key_range,
                              f"Structure Level is {declared} but {detail} (level {actual})")
    if expanded_entry is not None:
        ids = re.findall(r"\d+(?:\.\d+)?", expanded_entry.value)
        for pid in ids:
            if (pid.lstrip("0") or "0") not in files:
                yield ctx.finding(
                    expanded_entry.value_range,
                    f"Expanded Phases lists phase {pid} but no phase_{pid}_*.md file or "
                    f"phase_{pid}_*/ directory exists next to the plan")
        listed = {i.lstrip("0") or "0" for i in ids}
        for pid, path in sorted(files.items()):
            if pid not in listed:
                yield ctx.finding(
                    expanded_entry.value_range,
                    f"phase {pid} is expanded on disk ({path.name}) but not listed in "
                    "Expanded Phases",
                    related=[Related(path=str(path), range=Range.of_line(0),
                                     message="expanded phase")])

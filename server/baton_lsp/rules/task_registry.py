"""BTN60x: `specs/state.json` task registries.

The registry is what the task-based trees' commands query with `jq` to pick the next task,
route it by status and find its plan; `TODO.md` is regenerated from it. An entry whose
status, priority spelling, numbering or artifact paths disagree with the rest of the file
sends those commands to the wrong task or a missing plan, silently.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.registry import RegistryEntry, TaskRegistry
from .base import RuleContext, closest, rule

REGISTRY = (Kind.REGISTRY,)
TASKS = Convention.TASK_REGISTRY

STEPS = ("researched", "planned", "started", "completed")
"""Lifecycle steps in workflow order (`/research` → `/plan` → `/implement` → done)."""
STEP_KEYS = {"researched": ("researched", "research_completed"),
             "planned": ("planned", "planning_completed"),
             "started": ("started",),
             "completed": ("completed",)}
"""The fields each step's time is kept in. Registries of the `.opencode/` era (the
`_schema_version` 1.x file whose entries also carry a `phase`) stamp `research_completed`
and `planning_completed`; their self-healing sync (ProofChecker's
`.opencode/context/project/repo/self-healing-implementation-details.md`) copies them
beside the newer `researched`/`planned`, so either may hold the time."""
PHASE_ERA_STARTED: tuple[str, ...] = ()
"""In an entry with a `phase` field, `started` is when work on the task began (`/research`
sets it with `[RESEARCHING]`, as TODO.md's `**Started**:` line), not when `/implement`
began: it says nothing about the implementation step."""
STATUS_STEP = {"not_started": -1, "researched": 0, "planned": 1, "completed": 3}
"""Settled statuses → the index of the step that sets them. In-progress, blocked, partial,
abandoned and expanded statuses may follow any step, so they are never compared."""
LAST_UPDATED_KEYS = ("last_updated", "_last_updated")


def _registry(doc: object) -> TaskRegistry | None:
    return doc if isinstance(doc, TaskRegistry) and doc.error is None else None


def _when(value: object) -> datetime | None:
    """An ISO-8601 timestamp (`Z`, offsets, fractions or a bare date); naive ones are UTC."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        stamp = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


@rule("BTN600", "registry-unreadable", Severity.ERROR, REGISTRY, convention=TASKS)
def registry_unreadable(doc: TaskRegistry, ctx: RuleContext) -> Iterator[Finding]:
    """The task registry is not valid JSON or not the expected shape.

    Every task command starts by reading `specs/state.json` with `jq`; when the file does not
    parse, or `active_projects` is not a list of objects, those commands fail (or, worse,
    `jq` prints nothing and the command concludes there are no tasks). A half-written file
    after an interrupted update or a hand edit with a trailing comma are the usual causes.

    Fix: repair the JSON at the reported position (`jq . specs/state.json` shows the same
    error), or restore the file from git.

    Reported:

        ==> specs/state.json <==
        {
          "next_project_number": 3,
          "active_projects": [
            {"project_number": 2, "status": "planned",}
          ]
        }

    Not reported:

        ==> specs/state.json <==
        {
          "next_project_number": 3,
          "active_projects": [
            {"project_number": 2, "status": "planned"}
          ]
        }
    """
    if isinstance(doc, TaskRegistry) and doc.error is not None:
        yield ctx.finding(doc.error_range or Range.of_line(0),
                          f"task registry cannot be read: {doc.error}")


def _step_time(entry: RegistryEntry, step: str) -> tuple[datetime, str] | None:
    """When the entry records finishing `step`, with the text it is written as."""
    keys = PHASE_ERA_STARTED if step == "started" and "phase" in entry.fields \
        else STEP_KEYS[step]
    for key in keys:
        when = _when(entry.fields.get(key))
        if when is not None:
            return when, str(entry.fields[key])
    return None


def _later_steps(entry: RegistryEntry, status: str) -> tuple[str, list[str]] | None:
    """(own step description, later steps recorded after it) when the status lags."""
    own_index = STATUS_STEP[status]
    own_name = STEPS[own_index] if own_index >= 0 else None
    own = _step_time(entry, own_name) if own_name else None
    later: list[str] = []
    for name in STEPS[own_index + 1:]:
        step = _step_time(entry, name)
        if step is None:
            continue
        if own is None or step[0] > own[0]:
            later.append(f"{name} at {step[1]}")
    if not later:
        return None
    if own_name is None:
        return "", later
    said = (f"after it was {own_name} at {own[1]}" if own is not None
            else f"and it has no `{own_name}` time")
    return said, later


@rule("BTN601", "registry-status-behind-history", Severity.WARNING, REGISTRY,
      convention=TASKS)
def registry_status_behind(doc: TaskRegistry, ctx: RuleContext) -> Iterator[Finding]:
    """A task's `status` is behind the lifecycle steps its own timestamps record.

    Each task command stamps the step it finished (`researched`, `planned`, `started`,
    `completed`) and sets `status` to match; the other commands route on `status` alone. A
    task whose status says `researched` while it records being planned and started later
    was moved back without a revision, or a postflight update was lost: `/implement` refuses
    it, `/plan` plans it again and `TODO.md` shows the wrong marker. Statuses that may follow
    any step (`researching`, `implementing`, `blocked`, `partial`, `abandoned`, ...) and
    revisions (re-research after planning, which stamps `researched` again) are not reported.
    Entries of the older `.opencode/` schema (with a `phase` field) are read as that schema
    writes them: `research_completed` and `planning_completed` are the step times, and
    `started` is when work on the task began, not the implementation.

    Fix: set `status` to the latest step the task really reached, or remove the stale
    timestamp if that step was undone.

    Reported:

        ==> specs/state.json <==
        {
          "active_projects": [
            {
              "project_number": 58,
              "status": "researched",
              "researched": "2026-03-27T22:50:24Z",
              "planned": "2026-03-27T22:57:46Z",
              "started": "2026-03-27T23:01:14Z",
              "resume_phase": 6
            }
          ]
        }

    Not reported:

        ==> specs/state.json <==
        {
          "active_projects": [
            {
              "project_number": 8,
              "status": "researched",
              "planned": "2026-03-21T00:33:31Z",
              "started": "2026-03-21T00:34:44Z",
              "researched": "2026-03-21T03:23:50Z"
            }
          ]
        }
    """
    reg = _registry(doc)
    if reg is None:
        return
    for entry in reg.entries:
        status = entry.text("status")
        if status is None or status not in STATUS_STEP:
            continue
        lag = _later_steps(entry, status)
        if lag is None:
            continue
        own, later = lag
        rng = entry.value_ranges.get("status", entry.range)
        steps = " and ".join(later)
        if own:
            message = (f"{entry.label} has status `{status}`, but it was {steps} {own}: "
                       "the status is behind the task's own history")
        else:
            message = (f"{entry.label} has status `{status}`, but it records being {steps}: "
                       "the status is behind the task's own history")
        yield ctx.finding(rng, message)


@rule("BTN602", "registry-priority-case", Severity.WARNING, REGISTRY, fixable=True,
      convention=TASKS)
def registry_priority_case(doc: TaskRegistry, ctx: RuleContext) -> Iterator[Finding]:
    """Task priorities are spelled with different letter case in one registry.

    Commands select by exact string (`jq '.active_projects[] | select(.priority ==
    "high")'`), so a task written `High` beside others written `high` drops out of every
    priority filter and sorts into the wrong group of `TODO.md`. The registry documents
    lower-case values (`low`, `medium`, `high`, `critical`); `TODO.md` capitalises them,
    which is how capitalised values leak in when an entry is copied across by hand.

    Fix: use the spelling the rest of the registry uses (the quick fix does).

    Reported:

        ==> specs/state.json <==
        {
          "active_projects": [
            {"project_number": 74, "status": "not_started", "priority": "high"},
            {"project_number": 75, "status": "not_started", "priority": "High"}
          ]
        }

    Not reported:

        ==> specs/state.json <==
        {
          "active_projects": [
            {"project_number": 74, "status": "not_started", "priority": "high"},
            {"project_number": 81, "status": "planned", "priority": "critical"}
          ]
        }
    """
    reg = _registry(doc)
    if reg is None:
        return
    spelled = [(e, p) for e in reg.entries if (p := e.text("priority")) is not None]
    lower = [p for _, p in spelled if p == p.lower()]
    other = Counter(p for _, p in spelled if p != p.lower())
    if not lower or not other:
        return  # one style throughout: consistent, whichever it is
    lower_wins = len(lower) >= sum(other.values())
    by_fold = {p.lower(): p for p, _ in other.most_common()[::-1]}
    for entry, value in spelled:
        want = value.lower() if lower_wins else by_fold.get(value.lower(), value)
        if want == value:
            continue
        rng = entry.value_ranges.get("priority", entry.range)
        inner = Range.span(rng.start_line, rng.start_char + 1, rng.end_line,
                           max(rng.end_char - 1, rng.start_char + 1))
        majority = "lower-case" if lower_wins else "capitalised"
        yield ctx.finding(
            rng, f"{entry.label} has priority `{value}`, but the registry spells priorities "
                 f"{majority} (`{want}`): an exact `priority == \"{want}\"` filter misses it",
            fix=ctx.fix(f"Change to `{want}`", ctx.edit(inner, want)))


@rule("BTN603", "registry-stale-last-updated", Severity.INFO, REGISTRY, fixable=True,
      convention=TASKS)
def registry_stale_last_updated(doc: TaskRegistry, ctx: RuleContext) -> Iterator[Finding]:
    """The registry's top-level `last_updated` is older than an entry it contains.

    The top-level timestamp is what sync tooling and the TODO.md regeneration compare to
    decide which of `state.json` and `TODO.md` is newer ("use the latest version"); when
    it lags behind the newest entry's `last_updated`, the registry looks stale and a sync
    can overwrite the newer task data with older text. It lags when a command updates an
    entry without touching the file-level stamp.

    Fix: set it to the newest entry's `last_updated` (the quick fix does) and make the
    commands that write entries update it too.

    Reported:

        ==> specs/state.json <==
        {
          "active_projects": [
            {"project_number": 81, "status": "planned",
             "last_updated": "2026-04-02T00:22:47Z"}
          ],
          "last_updated": "2026-03-19T00:00:00Z"
        }

    Not reported:

        ==> specs/state.json <==
        {
          "active_projects": [
            {"project_number": 81, "status": "planned",
             "last_updated": "2026-04-02T00:22:47Z"}
          ],
          "last_updated": "2026-04-02T00:22:47Z"
        }
    """
    reg = _registry(doc)
    if reg is None:
        return
    key = next((k for k in LAST_UPDATED_KEYS if isinstance(reg.top.get(k), str)), None)
    if key is None or key not in reg.top_ranges:
        return
    raw = reg.top[key]
    top = _when(raw)
    if top is None:
        return
    # A bare date, or a date written as midnight (`2026-01-08T00:00:00Z`, how agents fill in
    # a stamp they only know the day of), says the day, not the hour: compared by day.
    date_only = ("T" not in raw and " " not in raw.strip()) or (
        top.hour == top.minute == top.second == 0 and top.microsecond == 0)
    newest: tuple[datetime, RegistryEntry, str] | None = None
    for entry in reg.entries:
        when = _when(entry.fields.get("last_updated"))
        if when is not None and (newest is None or when > newest[0]):
            newest = (when, entry, entry.fields["last_updated"])
    if newest is None:
        return
    when, entry, text = newest
    stale = when.date() > top.date() if date_only else when > top
    if not stale:
        return
    rng = reg.top_ranges[key]
    inner = Range.span(rng.start_line, rng.start_char + 1, rng.end_line,
                       max(rng.end_char - 1, rng.start_char + 1))
    new = text[:10] if "T" not in raw and " " not in raw.strip() else text
    related = [Related(path=ctx.path, range=entry.value_ranges.get("last_updated", entry.range),
                       message=f"{entry.label} was updated at {text}")]
    yield ctx.finding(
        rng, f"registry `{key}` is {raw}, older than {entry.label}'s `last_updated` "
             f"{text}: the file-level stamp was not updated with its entries",
        related=related, fix=ctx.fix(f"Set `{key}` to {new}", ctx.edit(inner, new)))


@rule("BTN604", "registry-duplicate-number", Severity.ERROR, REGISTRY, convention=TASKS)
def registry_duplicate_number(doc: TaskRegistry, ctx: RuleContext) -> Iterator[Finding]:
    """Two active tasks share one `project_number`.

    The number is the task's identity: `/research 58`, `/plan 58` and `/implement 58`
    select `.active_projects[] | select(.project_number == 58)` and update the first match,
    and the task directory `specs/058_<name>/` is derived from it. With two entries, the
    commands act on one task while `TODO.md` lists both, and the other is never updated. It
    happens when two sessions allocate `next_project_number` concurrently or an entry is
    copied to start a similar task.

    Fix: renumber the newer entry with `next_project_number` (and bump that), renaming its
    task directory to match.

    Reported:

        ==> specs/state.json <==
        {
          "next_project_number": 80,
          "active_projects": [
            {"project_number": 78, "project_name": "frame_lemma", "status": "researched"},
            {"project_number": 78, "project_name": "chain_lemma", "status": "researched"}
          ]
        }

    Not reported:

        ==> specs/state.json <==
        {
          "next_project_number": 80,
          "active_projects": [
            {"project_number": 78, "project_name": "frame_lemma", "status": "researched"},
            {"project_number": 79, "project_name": "chain_lemma", "status": "researched"}
          ]
        }
    """
    reg = _registry(doc)
    if reg is None:
        return
    first: dict[int, RegistryEntry] = {}
    for entry in reg.entries:
        number = entry.number
        if number is None:
            continue
        if number not in first:
            first[number] = entry
            continue
        earlier = first[number]
        name = entry.text("project_name")
        other = earlier.text("project_name")
        names = f" (`{name}` and `{other}`)" if name and other and name != other else ""
        yield ctx.finding(
            entry.value_ranges.get("project_number", entry.range),
            f"project number {number} is used by two active tasks{names}: commands "
            f"selecting task {number} act on the first one only",
            related=[Related(path=ctx.path,
                             range=earlier.value_ranges.get("project_number", earlier.range),
                             message=f"task {number} first defined here")])


def _resolve_artifact(ctx: RuleContext, raw: str) -> Path | None:
    """Artifact paths are relative to the project root; absolute or templated ones are
    machine-specific and not checked."""
    target = raw.strip()
    if not target or target.startswith(("/", "~")) or "$" in target or "{" in target \
            or "://" in target or ctx.root is None:
        return None
    return ctx.root / target


@rule("BTN605", "registry-missing-artifact", Severity.WARNING, REGISTRY, fixable=True,
      cross_file=True, convention=TASKS)
def registry_missing_artifact(doc: TaskRegistry, ctx: RuleContext) -> Iterator[Finding]:
    """A task's artifact (report, plan, summary) names a file that is not there.

    `/plan` reads the task's research reports from `artifacts[]`, `/implement` opens the
    latest `plan` artifact and TODO.md links each one; a path that no longer resolves makes
    them fall back to guessing or fail. Only files missing from a directory that exists are
    reported: that is a renamed or mistyped file (`implementation-001.md` written as
    `01_implementation-plan.md`), while a missing task directory usually means the task's
    files were archived or not checked out.

    Fix: correct the path to the file's real name (the quick fix offers the closest file in
    that directory), or remove the artifact entry if the file was deleted on purpose.

    Reported:

        ==> specs/081_fp_witness/plans/17_implementation-plan.md <==
        # Implementation Plan: Task #81

        ==> specs/state.json <==
        {
          "active_projects": [
            {
              "project_number": 81,
              "status": "planned",
              "artifacts": [
                {"path": "specs/081_fp_witness/plans/17_implementaton-plan.md",
                 "type": "plan", "summary": "6-phase plan"}
              ]
            }
          ]
        }

    Not reported:

        ==> specs/081_fp_witness/plans/17_implementation-plan.md <==
        # Implementation Plan: Task #81

        ==> specs/state.json <==
        {
          "active_projects": [
            {
              "project_number": 81,
              "status": "planned",
              "artifacts": [
                {"path": "specs/081_fp_witness/plans/17_implementation-plan.md",
                 "type": "plan", "summary": "6-phase plan"},
                {"path": "specs/081_fp_witness/reports/16_omega-tree.md",
                 "type": "research", "summary": "not checked out"}
              ]
            }
          ]
        }
    """
    reg = _registry(doc)
    if reg is None:
        return
    listings: dict[Path, list[str]] = {}
    for entry in reg.entries:
        for art in entry.artifacts:
            target = _resolve_artifact(ctx, art.path)
            if target is None:
                continue
            parent = target.parent
            ctx.depends_on.add(str(parent))
            if not os.path.isdir(parent) or ctx.exists(target):
                continue
            if parent not in listings:
                try:
                    listings[parent] = sorted(os.listdir(parent))
                except OSError:
                    listings[parent] = []
            close = closest(target.name, listings[parent], 0.8)
            fix = None
            if close:
                inner = Range.span(art.range.start_line, art.range.start_char + 1,
                                   art.range.end_line, max(art.range.end_char - 1,
                                                           art.range.start_char + 1))
                new = art.path[: len(art.path) - len(target.name)] + close
                fix = ctx.fix(f"Change to `{close}`", ctx.edit(inner, new), safe=False)
            hint = f" (did you mean `{close}`?)" if close else ""
            kind = f"{art.type} " if art.type else ""
            yield ctx.finding(
                art.range, f"{entry.label}'s {kind}artifact `{art.path}` does not exist: its "
                           f"directory has no file named `{target.name}`{hint}", fix=fix)

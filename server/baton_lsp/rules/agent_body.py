"""BTN220-BTN222: the body of agent files (numbered STEP headings) and agent naming."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..model.agent import AgentFile, StepHeading
from ..model.base import Convention, Finding, Fix, Kind, Range, Related, Severity, TextEdit
from ..parse.text import MAX_INT_DIGITS
from .base import RuleContext, rule

AGENT = (Kind.AGENT,)

_LABEL_RE = re.compile(rf"^STEP\s+(\d{{1,{MAX_INT_DIGITS}}})(?:\.(\d{{1,{MAX_INT_DIGITS}}}))?"
                       r"(?:-([A-Za-z][A-Za-z0-9_]*))?", re.IGNORECASE)


@dataclass(frozen=True)
class _Step:
    """A STEP heading with the parts the parser's integer `number` drops."""

    heading: StepHeading
    number: int
    sub: int | None
    """`5` for `STEP 2.5`: an intermediate step outside the main numbering."""
    suffix: str
    """`REV` for `STEP 1-REV`: a separate sequence (e.g. the revision procedure)."""

    @property
    def label(self) -> str:
        text = f"STEP {self.number}"
        if self.sub is not None:
            text += f".{self.sub}"
        return f"{text}-{self.suffix}" if self.suffix else text

    def key(self, number: int) -> str:
        return f"STEP {number}-{self.suffix}" if self.suffix else f"STEP {number}"


def _steps(doc: AgentFile) -> list[_Step]:
    out: list[_Step] = []
    for h in doc.steps:
        m = _LABEL_RE.match(h.title.strip())
        if m is None:
            out.append(_Step(h, h.number, None, ""))
            continue
        sub = int(m.group(2)) if m.group(2) is not None else None
        out.append(_Step(h, int(m.group(1)), sub, (m.group(3) or "").upper()))
    return out


def _sequences(steps: list[_Step]) -> list[list[_Step]]:
    """Main steps split into runs: one per (suffix, heading level), restarting at 0/1.

    A run restarts when STEP 0 or STEP 1 follows a higher-numbered step: agents describe
    several procedures (create mode, revise mode) each numbered from 1.
    """
    groups: dict[tuple[str, int], list[list[_Step]]] = {}
    for step in steps:
        if step.sub is not None:
            continue
        runs = groups.setdefault((step.suffix, step.heading.level), [])
        if not runs or (step.number <= 1 and runs[-1][-1].number > step.number):
            runs.append([step])
        else:
            runs[-1].append(step)
    return [run for runs in groups.values() for run in runs]


def _target_number_range(ctx: RuleContext, rb_range: Range) -> Range:
    """The digits at the end of a `REQUIRED BEFORE STEP k` range."""
    line = ctx.lines[rb_range.end_line] if rb_range.end_line < len(ctx.lines) else ""
    start = rb_range.end_char
    while start > rb_range.start_char and line[start - 1:start].isdigit():
        start -= 1
    return Range.of_line(rb_range.end_line, start, rb_range.end_char)


def _renumber_fix(ctx: RuleContext, run: list[_Step], all_steps: list[_Step]) -> Fix | None:
    """Renumber `run` consecutively, with its sub-steps and REQUIRED BEFORE references."""
    start = run[0].number if run[0].number in (0, 1) else 1
    new_of = {id(s): start + i for i, s in enumerate(run)}
    edits: list[TextEdit] = []
    members = {id(s) for s in run}
    ordered = [s for s in all_steps if s.suffix == run[0].suffix]
    last_main: _Step | None = None
    for s in ordered:
        if id(s) in members:
            last_main = s
            target = new_of[id(s)]
        elif s.sub is not None and last_main is not None and s.number == last_main.number:
            target = new_of[id(last_main)]
        else:
            continue
        if target != s.number:
            edits.append(ctx.edit(s.heading.number_range, str(target)))
    for i, s in enumerate(run):
        rb, rb_range = s.heading.required_before, s.heading.required_before_range
        if rb is None or rb_range is None:
            continue
        later = run[i + 1:]
        target_step = later[0] if later and later[0].number == rb else \
            next((x for x in later if x.number == rb), None)
        if target_step is None or new_of[id(target_step)] == rb:
            continue
        edits.append(ctx.edit(_target_number_range(ctx, rb_range), str(new_of[id(target_step)])))
    if not edits:
        return None
    return ctx.fix("Renumber the steps consecutively (check references in the text)", *edits,
                   safe=False)


def _missing(step: _Step, lo: int, hi: int) -> tuple[str, str]:
    """`STEP 3`, `STEP 3, STEP 4` or `STEP 3 to STEP 90` (never one entry per number)."""
    if lo == hi:
        return step.key(lo), "is"
    if hi - lo < 3:
        return ", ".join(step.key(k) for k in range(lo, hi + 1)), "are"
    return f"{step.key(lo)} to {step.key(hi)}", "are"


@rule("BTN220", "agent-step-numbering", Severity.WARNING, AGENT, fixable=True,
      convention=Convention.WORKFLOW_AGENTS)
def step_numbering(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """STEP headings skip or repeat a number.

    Agents are written as numbered `### STEP n` headings that the model executes in order
    and that other steps refer to (`REQUIRED BEFORE STEP 3`). A gap reads as a missing
    instruction and a repeated number makes references ambiguous, so the model may skip or
    merge steps. Numbering may start at STEP 0 or STEP 1; intermediate steps such as
    `STEP 2.5` are allowed; suffixed steps (`STEP 1-REV`) and steps at another heading level
    form their own sequences, and a new sequence starts when STEP 0/1 follows a higher step.

    Fix: renumber the headings consecutively (the quick fix does it, including
    `REQUIRED BEFORE STEP k` references in the headings; update references in prose by hand).

    Reported:

        ==> .claude/agents/planner.md <==
        # Planner

        ### STEP 1 - Read the request
        ### STEP 2 - Research
        ### STEP 4 - Write the plan

    Not reported:

        ==> .claude/agents/planner.md <==
        # Planner

        ### STEP 1 - Read the request
        ### STEP 2 - Research
        ### STEP 2.5 - Check the standards
        ### STEP 3 - Write the plan
    """
    steps = _steps(doc)
    for run in _sequences(steps):
        fix = None
        problems: list[tuple[_Step, str]] = []
        first = run[0]
        if first.number > 1:
            missing, verb = _missing(first, 1, first.number - 1)
            problems.append((first, f"steps start at {first.label}: expected "
                                    f"{first.key(1)} (or {first.key(0)}) first, {missing} "
                                    f"{verb} missing"))
        seen: dict[int, _Step] = {first.number: first}
        high = first.number
        for step in run[1:]:
            n = step.number
            if n in seen:
                line = seen[n].heading.range.start_line + 1
                problems.append((step, f"duplicate {step.label} (also on line {line}): expected "
                                       f"{step.key(high + 1)} after {step.key(high)}"))
            elif n > high + 1:
                missing, verb = _missing(step, high + 1, n - 1)
                problems.append((step, f"{missing} {verb} missing: expected "
                                       f"{step.key(high + 1)} after {step.key(high)}, found "
                                       f"{step.label}"))
            elif n < high:
                problems.append((step, f"{step.label} comes after {step.key(high)}: expected "
                                       f"{step.key(high + 1)}"))
            seen.setdefault(n, step)
            high = max(high, n)
        if problems:
            fix = _renumber_fix(ctx, run, steps)
        for step, message in problems:
            yield ctx.finding(step.heading.number_range, message, fix=fix)


@rule("BTN221", "agent-required-before-target", Severity.WARNING, AGENT, fixable=True,
      convention=Convention.WORKFLOW_AGENTS)
def required_before_target(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """`REQUIRED BEFORE STEP k` points backwards or to a step that does not exist.

    The marker tells the model that this step must finish before step k starts. It only
    makes sense for a later step that exists; a reference to an earlier or missing step is
    left over from renumbering and leaves the real ordering constraint unstated.

    Fix: point it at the step that must wait, usually the next one (the quick fix does that
    when there is a next step).

    Reported:

        ==> .claude/agents/planner.md <==
        # Planner

        ### STEP 1 (REQUIRED BEFORE STEP 1) - Read the request
        ### STEP 2 - Write the plan

    Not reported:

        ==> .claude/agents/planner.md <==
        # Planner

        ### STEP 1 (REQUIRED BEFORE STEP 2) - Read the request
        ### STEP 2 - Write the plan
    """
    steps = _steps(doc)
    for i, step in enumerate(steps):
        rb, rb_range = step.heading.required_before, step.heading.required_before_range
        if rb is None or rb_range is None:
            continue
        same = [s for s in steps if s.suffix == step.suffix and s.sub is None]
        numbers = {s.number for s in same}
        nxt = next((s for s in steps[i + 1:] if s.suffix == step.suffix and s.sub is None
                    and s.number > step.number), None)
        fix = None
        if nxt is not None:
            fix = ctx.fix(f"Point to {nxt.label}",
                          ctx.edit(_target_number_range(ctx, rb_range), str(nxt.number)))
        expected = f"expected {nxt.label}" if nxt else "expected a later step"
        if rb <= step.number:
            yield ctx.finding(
                rb_range,
                f"{step.label} is marked REQUIRED BEFORE {step.key(rb)}, which does not come "
                f"after it: {expected}", fix=fix)
        elif rb not in numbers:
            have = ", ".join(str(n) for n in sorted(numbers))
            yield ctx.finding(
                rb_range,
                f"{step.label} is marked REQUIRED BEFORE {step.key(rb)}, which does not exist "
                f"(steps: {have}): {expected}", fix=fix)


def _name_key(name: str) -> str:
    return name.replace("_", "-").lower()


@rule("BTN222", "agent-duplicate-name", Severity.WARNING, AGENT, cross_file=True,
      convention=Convention.CLAUDE_CODE)
def duplicate_agent(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Two agents have names that differ only by `-` versus `_` (or by case).

    Commands refer to agents by file name (`.claude/agents/collapse-specialist.md`); when
    `collapse-specialist.md` and `collapse_specialist.md` both exist, callers spelling the
    name differently silently get different (and usually diverging) instructions, and
    case-only differences collide on case-insensitive file systems.

    Fix: keep one file, merge any newer instructions into it, delete the other and update
    references to the deleted name.

    Reported:

        ==> .claude/agents/collapse_specialist.md <==
        ---
        name: collapse_specialist
        description: Collapses phases
        ---
        ==> .claude/agents/collapse-specialist.md <==
        ---
        name: collapse-specialist
        description: Collapses phases
        ---

    Not reported:

        ==> .claude/agents/collapse-specialist.md <==
        ---
        name: collapse-specialist
        description: Collapses phases
        ---
    """
    agents = ctx.agent_paths()
    mine = agents.get(doc.name)
    if mine is None or os.path.normpath(str(mine)) != os.path.normpath(str(Path(ctx.path))):
        return
    key = _name_key(doc.name)
    others = sorted(n for n in agents if n != doc.name and _name_key(n) == key)
    if not others:
        return
    related: list[Related] = []
    for other in others:
        other_doc = ctx.agent(other)
        rng = other_doc.title_range if other_doc is not None and other_doc.title_range \
            else Range.of_line(0)
        related.append(Related(path=str(agents[other]), range=rng,
                               message=f"the other copy: {agents[other].name}"))
    names = ", ".join(f"`{o}.md`" for o in others)
    yield ctx.finding(
        doc.title_range or ctx.line_range(0),
        f"agent `{doc.name}.md` duplicates {names}: the names differ only by `-`/`_`; "
        "expected one agent file per name, found "
        f"{len(others) + 1} copies that callers may pick by spelling",
        related=related)

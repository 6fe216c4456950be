"""A plan's size costs linear work: parse, plan rules, graph, outline, lenses and hover.

Not timed: the work is counted as the Python events (calls and lines executed) that
`sys.settrace` sees, which depend on the code and its input only, never on machine load.
Each plan shape is checked at n and 4n phases; linear code does about 4× the events, a scan
of all phases per phase about 16×. (Loops inside C, such as a list membership test, are not
seen here; `benchmarks/bench_plan_size.py` times those end to end.)
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.lsp.code_lens import MAX_PARALLEL_NAMED, parallel_phases
from baton_lsp.lsp.hover import phase_markdown
from baton_lsp.lsp.symbols import document_symbols
from baton_lsp.model import BatonConfig, Kind
from baton_lsp.model.graph import build_graph
from baton_lsp.parse.plan import parse_plan_text
from baton_lsp.rules import engine as rules_engine
from baton_lsp.workspace.index import WorkspaceIndex

HEAD = ["# Plan: size", "", "## Metadata", "- **Date**: 2026-11-28",
        "- **Status**: [IN PROGRESS]", ""]


def chain(n: int) -> list[str]:
    """Phases in a phases section, each depending on the one before, with links, nested
    tasks and a suppression comment per phase and no blank line anywhere."""
    out = [*HEAD, "## Success Criteria", *(f"- [ ] c{i}" for i in range(n)),
           "## Implementation Phases"]
    for i in range(1, n + 1):
        out += [f"### Phase {i}: T{i} [COMPLETE]",
                f"dependencies: [{i - 1}]" if i > 1 else "dependencies: []",
                f"- [x] see [r](../reports/r{i}.md#x)", f"    - [x] nested [a](a{i}.md)",
                "<!-- baton: ignore BTN116 -->"]
    return out


def h2_phases(n: int) -> list[str]:
    """`## Phase N` headings (every phase its own section), no dependency lines."""
    out = list(HEAD)
    for i in range(1, n + 1):
        out += [f"## Phase {i}: T", "- [ ] t", "**Status**: IN PROGRESS"]
    return out


def many_phase_sections(n: int) -> list[str]:
    """A `## Implementation Phases` section per phase, prose dependencies."""
    out = list(HEAD)
    for i in range(1, n + 1):
        out += ["## Implementation Phases", f"### Phase {i}: T",
                f"**Dependencies**: Phase {max(1, i - 1)} and Phase {max(1, i - 2)}"]
    return out


def one_cycle(n: int) -> list[str]:
    """Every phase in one long dependency cycle."""
    out = [*HEAD, "## Implementation Phases"]
    for i in range(1, n + 1):
        out += [f"### Phase {i}: T", f"depends_on: [phase_{i % n + 1}]", "- [ ] t"]
    return out


def one_wave(n: int) -> list[str]:
    """Every phase in the first wave: a wide wave, each lens naming its neighbours."""
    out = [*HEAD, "## Implementation Phases"]
    for i in range(1, n + 1):
        out += [f"### Phase {i}: T", "dependencies: []"]
    return out


def unknown_deps(n: int) -> list[str]:
    """Every phase depends on a phase that does not exist (BTN101 on each)."""
    out = [*HEAD, "## Implementation Phases"]
    for i in range(1, n + 1):
        out += [f"### Phase {i}: T", f"dependencies: [{i - 1}, {n + i}]"]
    return out


def count_events(fn: Callable[[], object]) -> int:
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal count
        count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def plan_work(root: Path, lines: list[str], out: list[int] | None = None
              ) -> Callable[[], object]:
    """What a check, `baton graph` and the editor do with one plan; appends to `out` the
    number of characters of the findings' messages (output is work too)."""
    path = root / ".claude/specs/001_x/plans/001_plan.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(lines) + "\n"
    path.write_text(text, encoding="utf-8")

    def work() -> object:
        plan = parse_plan_text(text, str(path))
        findings = rules_engine.check_file(WorkspaceIndex(root, BatonConfig()), path, Kind.PLAN)
        graph = build_graph(plan)
        lenses = []
        for phase in plan.phases:
            wave = graph.wave_of(phase.id)
            graph.dependents(phase.id)
            if wave is not None:
                lenses.append(parallel_phases(graph.waves[wave - 1], phase.id))
        symbols = document_symbols(plan, text.split("\n"))
        hover = phase_markdown(plan, plan.phases[len(plan.phases) // 2])
        if out is not None:
            out.append(sum(len(f.message) + sum(len(r.message) for r in f.related)
                           for f in findings))
        return findings, lenses, symbols, hover

    return work


@pytest.mark.parametrize("shape", [chain, h2_phases, many_phase_sections, one_cycle,
                                   one_wave, unknown_deps])
def test_plan_work_grows_linearly_with_phases(tmp_path: Path,
                                              shape: Callable[[int], list[str]]) -> None:
    count_events(plan_work(tmp_path / "warm", shape(20)))  # first use: registries, caches
    chars: list[int] = []
    small = count_events(plan_work(tmp_path / "small", shape(150), chars))
    large = count_events(plan_work(tmp_path / "large", shape(600), chars))
    assert chars[1] <= 4.6 * max(chars[0], 100), f"{shape.__name__}: message chars {chars}"
    assert small > 10_000  # the tracer saw the work
    print(f"{shape.__name__}: {small} → {large} events ({large / small:.2f}×)")
    assert large / small < 4.6, f"{shape.__name__}: {small} → {large} events for 4× phases"


def test_wide_wave_lens_names_a_bounded_number_of_phases() -> None:
    wave = [str(i) for i in range(1, 1001)]
    title = parallel_phases(wave, "5")
    assert title.startswith("parallel with Phase 1, 2, 3, 4, 6,")
    assert title.endswith(f" and {999 - MAX_PARALLEL_NAMED} more")
    assert parallel_phases(["1", "2"], "2") == "parallel with Phase 1"
    assert parallel_phases(["1"], "1") == "sequential"


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["", "text", "<!-- baton: ignore BTN116 -->",
                                 "<!-- baton: ignore -->", "<!-- baton: ignore BTN105 BTN116 -->",
                                 "<!-- baton: ignore-file BTN105 -->", "  "]), max_size=30),
       st.lists(st.tuples(st.integers(0, 32), st.sampled_from(["BTN105", "BTN116", "BTN101"])),
                max_size=30))
def test_suppression_sweep_keeps_what_a_comment_by_comment_test_keeps(
        lines: list[str], spots: list[tuple[int, str]]) -> None:
    """Suppression scopes from one backward pass (`parse.common`) and the sweep over lines
    (`engine._unsuppressed`) against the forward scans and the per-finding, per-comment test
    they replaced, on random comments, blank lines and findings."""
    from baton_lsp.model.base import Finding, Range, Severity
    from baton_lsp.parse.text import split_lines
    from baton_lsp.rules.engine import _unsuppressed

    text = "\n".join(lines) + "\n"
    doc = parse_plan_text(text, "p.md")
    all_lines = split_lines(text)
    for sup in doc.suppressions:  # scopes: the block after the comment, as scanned before
        if sup.file_level:
            continue
        start = sup.range.end_line + 1
        while start < len(all_lines) and not all_lines[start].strip():
            start += 1
        end = start
        while end + 1 < len(all_lines) and all_lines[end + 1].strip():
            end += 1
        assert (sup.scope_start, sup.scope_end) == (start, end)
    findings = [Finding(code=code, rule="r", severity=Severity.WARNING, message=str(i),
                        path="p.md", range=Range.of_line(line)) for i, (line, code)
                in enumerate(spots)]

    def suppressed(f: Finding) -> bool:
        return any((not s.codes or f.code in s.codes) and (
            s.file_level or s.scope_start <= f.range.start_line <= s.scope_end)
            for s in doc.suppressions)

    assert _unsuppressed(list(findings), doc) == [f for f in findings if not suppressed(f)]


def _fixed(spans: list[list[tuple[int, int, int, int]]]) -> list[Any]:
    from baton_lsp.model.base import Finding, Fix, Range, Severity, TextEdit

    return [Finding(code="BTN105", rule="r", severity=Severity.WARNING, message=str(i),
                    path="p.md", range=Range.span(*edits[0]) if edits else Range.of_line(0),
                    fix=Fix(title="t", edits=[TextEdit(path="p.md", range=Range.span(*e),
                                                       new_text="x") for e in edits]))
            for i, edits in enumerate(spans)]


_spans = st.lists(st.lists(st.tuples(st.integers(0, 6), st.integers(0, 4), st.integers(0, 6),
                                     st.integers(0, 4)).map(lambda t: (
                                         *min(t[:2], t[2:]), *max(t[:2], t[2:]))),
                           min_size=1, max_size=3), max_size=25)


@settings(max_examples=300, deadline=None)
@given(_spans)
def test_fix_all_skips_what_a_test_against_every_earlier_edit_skips(
        spans: list[list[tuple[int, int, int, int]]]) -> None:
    from baton_lsp.lsp.code_actions import _overlaps
    from baton_lsp.rules.fixes import fix_all_edits as _non_overlapping

    findings = _fixed(spans)
    taken: list[Any] = []
    expected: list[Any] = []
    for f in findings:
        if any(_overlaps(e.range, t) for e in f.fix.edits for t in taken):
            continue
        taken.extend(e.range for e in f.fix.edits)
        expected.extend(f.fix.edits)
    assert _non_overlapping(findings) == expected


def test_fix_all_work_grows_linearly_with_fixes() -> None:
    """One safe fix per phase (a large plan's BTN105 fixes): counted, not timed."""
    from baton_lsp.rules.fixes import fix_all_edits as _non_overlapping

    def fixes(n: int) -> list[Any]:
        return _fixed([[(3 * i, 0, 3 * i, 0)] for i in range(n)])

    small, large = fixes(500), fixes(2000)
    a = count_events(lambda: _non_overlapping(small))
    b = count_events(lambda: _non_overlapping(large))
    assert len(_non_overlapping(large)) == 2000
    assert b / a < 4.6, f"{a} → {b} events for 4× fixes"


def test_unknown_dependency_message_elides_a_long_list_of_phases() -> None:
    lines = unknown_deps(30)
    findings = rules_engine.check_text(Kind.PLAN, "\n".join(lines) + "\n",
                                       "/ws/.claude/specs/001_x/plans/001_plan.md")
    [first] = [f for f in findings if f.code == "BTN101" and "phase 31," in f.message]
    assert first.message.endswith(
        "valid phase ids: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, …, "
        "29, 30 (30 phases)"), first.message


class _Compared(str):
    """A phase id whose every equality test is a Python call, so `count_events` sees it."""

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def test_graph_of_a_phase_with_a_long_dependency_list_is_linear() -> None:
    """One dependency line of thousands of ids (a line may hold 200,000 characters): its
    duplicates are dropped without a scan of the list per id."""
    def lines(n: int) -> list[str]:
        return [*HEAD, "## Implementation Phases",
                *(f"### Phase {i}: T\ndependencies: []" for i in range(1, n)),
                f"### Phase {n}: T", "dependencies: [" + ", ".join(
                    str(k % (n - 1) + 1) for k in range(2 * n)) + "]"]

    plans = [parse_plan_text("\n".join(lines(n)) + "\n", "p.md") for n in (500, 2000)]
    for plan in plans:  # ids whose comparisons the tracer sees (a list scan runs in C)
        for phase in plan.phases:
            for ref in phase.dependencies.refs if phase.dependencies else []:
                ref.id = _Compared(ref.id)
    small, large = (count_events(lambda p=p: build_graph(p)) for p in plans)
    assert build_graph(plans[1]).deps["2000"] == [str(k) for k in range(1, 2000)]
    assert large / small < 4.6, f"{small} → {large} events for 4× phases"

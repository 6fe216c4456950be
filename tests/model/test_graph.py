"""Waves, cycles and critical path of the phase graph."""

from __future__ import annotations

from baton_lsp.model.graph import build_graph, mermaid, waves_after
from baton_lsp.parse.plan import parse_plan_text


def graph(text: str):
    return build_graph(parse_plan_text(text))


def test_diamond_waves_and_critical_path() -> None:
    g = graph("# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\ndependencies: [1]\n"
              "### Phase 3: C\ndependencies: [1]\n### Phase 4: D\ndependencies: [2, 3]\n")
    assert g.waves == [["1"], ["2", "3"], ["4"]]
    assert g.critical_path in (["1", "2", "4"], ["1", "3", "4"])
    assert g.wave_of("3") == 2 and g.dependents("1") == ["2", "3"]
    assert not g.implicit and g.cycles == [] and g.blocked == []


def test_waves_after_finished_phases_start_from_what_is_ready() -> None:
    g = graph("# P\n### Phase 1: A\ndependencies: []\n### Phase 2: B\ndependencies: [1]\n"
              "### Phase 3: C\ndependencies: [1, 2]\n### Phase 4: D\ndependencies: [1]\n"
              "### Phase 5: E\ndependencies: [3, 4]\n")
    assert g.waves == [["1"], ["2", "4"], ["3"], ["5"]]
    assert waves_after(g, {"1", "2"}) == [["3", "4"], ["5"]]
    assert waves_after(g, set()) == g.waves
    assert waves_after(g, {"1", "4"}) == [["2"], ["3"], ["5"]]
    assert waves_after(g, set(g.order)) == []
    cyclic = graph("# P\n### Phase 1: A\ndependencies: [2]\n### Phase 2: B\n"
                   "dependencies: [1]\n### Phase 3: C\ndependencies: []\n")
    assert waves_after(cyclic, set()) == [["3"]]


def test_implicit_sequential_order_without_declarations() -> None:
    g = graph("# P\n### Phase 1: A\n### Phase 2: B\n### Phase 3: C\n")
    assert g.implicit and g.waves == [["1"], ["2"], ["3"]]


def test_cycle_blocks_dependents_but_not_others() -> None:
    g = graph("# P\n### Phase 1: A\ndependencies: [3]\n### Phase 2: B\ndependencies: [1]\n"
              "### Phase 3: C\ndependencies: [2]\n### Phase 4: D\ndependencies: [3]\n"
              "### Phase 5: E\ndependencies: []\n")
    assert g.cycles == [["1", "3", "2", "1"]]
    assert g.blocked == ["1", "2", "3", "4"]
    assert g.waves == [["5"]]


def test_unknown_and_self_dependencies_are_dropped_from_edges() -> None:
    g = graph("# P\n### Phase 1: A\ndependencies: [1, 9]\n### Phase 2: B\ndependencies: [1]\n")
    assert g.deps == {"1": [], "2": ["1"]}


def test_large_chain_is_iterative() -> None:
    parts = ["# P\n"]
    for i in range(1, 3001):
        parts.append(f"### Phase {i}: P{i}\ndependencies: [{i - 1 if i > 1 else ''}]\n")
    g = graph("".join(parts))
    assert len(g.waves) == 3000 and len(g.critical_path) == 3000


def test_mermaid_has_nodes_edges_and_decimal_ids() -> None:
    text = mermaid(graph("# P\n### Phase 1: A\ndependencies: []\n### Phase 2.5: B\n"
                         "dependencies: [1]\n"))
    assert text.startswith("flowchart TD\n")
    assert 'P2_5["Phase 2.5: B"]' in text and "P1 --> P2_5" in text

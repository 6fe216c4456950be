"""The phase dependency graph of a plan: waves, cycles and the critical path.

Shared by the rules (cycle detection), the CLI (`baton graph`), the language server (wave
code lenses) and the workflow engine (which runs each wave's phases in parallel).
"""

from __future__ import annotations

from collections.abc import Collection

from .base import FieldRecord
from .plan import SEQUENTIAL_FORMS, Plan


class PlanGraph(FieldRecord):
    """A plan's phases as a dependency graph, with its waves, cycles and critical path.

    Written out rather than a `@dataclass` (the same `__init__`, `__eq__` and `__repr__`):
    a dataclass compiles its methods with `exec` at import, which every check paid for."""

    _FIELDS = ("order", "titles", "deps", "implicit", "waves", "cycles", "blocked",
               "critical_path", "wave_number", "users", "missing")

    def __init__(self, order: list[str], titles: dict[str, str], deps: dict[str, list[str]],
                 implicit: bool, waves: list[list[str]] | None = None,
                 cycles: list[list[str]] | None = None, blocked: list[str] | None = None,
                 critical_path: list[str] | None = None,
                 wave_number: dict[str, int] | None = None,
                 users: dict[str, list[str]] | None = None,
                 missing: dict[str, list[str]] | None = None) -> None:
        self.order = order
        """Phase ids in document order (first occurrence of duplicated numbers)."""
        self.titles = titles
        self.deps = deps
        """id → ids it depends on (known ids only, self-loops removed)."""
        self.implicit = implicit
        """True when no phase declares dependencies: phases then run in document order."""
        self.waves: list[list[str]] = [] if waves is None else waves
        self.cycles: list[list[str]] = [] if cycles is None else cycles
        """Each cycle as a closed path in dependency direction, e.g. ['1', '3', '2', '1']."""
        self.blocked: list[str] = [] if blocked is None else blocked
        """Phases that can never run because they are in, or depend on, a cycle."""
        self.critical_path: list[str] = [] if critical_path is None else critical_path
        self.wave_number: dict[str, int] = {} if wave_number is None else wave_number
        """id → its 1-based wave (phases in or behind a cycle have none): code lenses ask
        per phase, and a scan of the waves per phase is quadratic in a large plan."""
        self.users: dict[str, list[str]] = {} if users is None else users
        """id → ids that depend on it, in document order (the reverse of `deps`)."""
        self.missing: dict[str, list[str]] = {} if missing is None else missing
        """id → the ids it names that are no phase of this plan (BTN101's fact), left out
        of `deps`: a graph that dropped them silently read as if the plan were sound."""

    def wave_of(self, phase_id: str) -> int | None:
        return self.wave_number.get(phase_id)

    def dependents(self, phase_id: str) -> list[str]:
        return list(self.users.get(phase_id, ()))


def build_graph(plan: Plan) -> PlanGraph:
    order: list[str] = []
    titles: dict[str, str] = {}
    declared = False
    sequential_default = False
    raw_deps: dict[str, list[str]] = {}
    for phase in plan.phases:
        if phase.id in titles:
            continue
        order.append(phase.id)
        titles[phase.id] = phase.title
        if phase.dependencies is not None:
            declared = True
            sequential_default |= phase.dependencies.form in SEQUENTIAL_FORMS
            raw_deps[phase.id] = [r.id for r in phase.dependencies.refs if r.id is not None]
    known = set(order)
    deps: dict[str, list[str]] = {}
    if declared:
        for pid in order:  # dict.fromkeys: ordered and deduplicated without a list scan
            deps[pid] = list(dict.fromkeys(d for d in raw_deps.get(pid, [])
                                           if d in known and d != pid))
        if sequential_default:
            _after_all_earlier(order, deps, raw_deps)
    else:
        deps = {pid: ([order[i - 1]] if i else []) for i, pid in enumerate(order)}
    graph = PlanGraph(order=order, titles=titles, deps=deps, implicit=not declared)
    for pid in order:
        absent = [d for d in dict.fromkeys(raw_deps.get(pid, [])) if d not in known]
        if absent:
            graph.missing[pid] = absent
    graph.cycles = _cycles(order, deps)
    _layer(graph)
    return graph


def _after_all_earlier(order: list[str], deps: dict[str, list[str]],
                       declared: dict[str, list[str]]) -> None:
    """Plans whose phases say `**Depends on**:` read a phase without that line as depending on
    every earlier phase ("Absence means sequential", the task-based trees'
    `.claude/context/formats/plan-format.md`). It waits for the earlier phases nothing later
    waits for (the frontier): the same order as all of them, linear in the plan's size."""
    frontier: dict[str, None] = {}
    for pid in order:
        if pid in declared:
            for d in deps[pid]:
                frontier.pop(d, None)
        else:
            deps[pid] = list(frontier)
            frontier.clear()
        frontier[pid] = None


def waves_after(graph: PlanGraph, done: Collection[str]) -> list[list[str]]:
    """The waves still to run once the `done` phases are finished (marked complete in the
    plan, or landed earlier in this run): a phase whose dependencies are all done is ready
    now, so it runs in the first wave whatever wave the whole plan puts it in. The plan's
    own layering (`graph.waves`) would run phases 3 and 4 of `1 | 2, 4 | 3` one after the
    other even with 1 and 2 done. Phases in, or behind, a cycle are left out; linear in
    phases + edges, document order within a wave."""
    finished = set(done)
    left = [pid for pid in graph.order if pid not in finished]
    deps = {pid: [d for d in graph.deps.get(pid, []) if d not in finished] for pid in left}
    indegree = {pid: len(ds) for pid, ds in deps.items()}
    users: dict[str, list[str]] = {pid: [] for pid in left}
    for pid in left:
        for d in deps[pid]:
            users[d].append(pid)
    wave: dict[str, int] = {}
    ready = [pid for pid in left if indegree[pid] == 0]
    head = 0
    while head < len(ready):
        pid = ready[head]
        head += 1
        wave[pid] = 1 + max((wave[d] for d in deps[pid]), default=0)
        for user in users[pid]:
            indegree[user] -= 1
            if indegree[user] == 0:
                ready.append(user)
    waves: list[list[str]] = [[] for _ in range(max(wave.values(), default=0))]
    for pid in left:
        if pid in wave:
            waves[wave[pid] - 1].append(pid)
    return waves


def _layer(graph: PlanGraph) -> None:
    """Kahn's algorithm: a phase's wave is one more than the latest wave among its deps.

    Linear in phases + edges (a 16,000-phase chain must not take seconds); phases left
    with unmet dependencies are in, or behind, a cycle.
    """
    indegree = {pid: len(graph.deps[pid]) for pid in graph.order}
    users: dict[str, list[str]] = {pid: [] for pid in graph.order}
    for pid in graph.order:
        for d in graph.deps[pid]:
            users[d].append(pid)
    wave: dict[str, int] = {}
    best_len: dict[str, int] = {}
    best_prev: dict[str, str | None] = {}
    ready = [pid for pid in graph.order if indegree[pid] == 0]
    head = 0
    while head < len(ready):
        pid = ready[head]
        head += 1
        ds = graph.deps[pid]
        wave[pid] = 1 + max((wave[d] for d in ds), default=0)
        prev = max(ds, key=lambda d: best_len[d], default=None)
        best_prev[pid] = prev
        best_len[pid] = 1 + (best_len[prev] if prev is not None else 0)
        for user in users[pid]:
            indegree[user] -= 1
            if indegree[user] == 0:
                ready.append(user)
    graph.blocked = [pid for pid in graph.order if pid not in wave]
    graph.wave_number = wave
    graph.users = users
    if wave:
        graph.waves = [[] for _ in range(max(wave.values()))]
        for pid in graph.order:
            if pid in wave:
                graph.waves[wave[pid] - 1].append(pid)
    # Critical path: the longest chain of phases, rebuilt from predecessor links.
    end = max(graph.order, key=lambda p: best_len.get(p, 0), default=None)
    path: list[str] = []
    node = end if end is not None and end in best_len else None
    while node is not None:
        path.append(node)
        node = best_prev[node]
    graph.critical_path = path[::-1]


def _cycles(order: list[str], deps: dict[str, list[str]]) -> list[list[str]]:
    """One closed path per strongly connected component with more than one phase."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    sccs: list[list[str]] = []
    counter = 0
    for root in order:
        if root in index:
            continue
        # Iterative Tarjan to stay safe on very large plans.
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, i = work[-1]
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            succ = deps.get(node, [])
            if i < len(succ):
                work[-1] = (node, i + 1)
                nxt = succ[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp: list[str] = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                if len(comp) > 1:
                    sccs.append(comp)
    position = {pid: i for i, pid in enumerate(order)}
    cycles: list[list[str]] = []
    for comp in sorted(sccs, key=lambda c: min(position[p] for p in c)):
        members = set(comp)
        start = min(comp, key=lambda p: position[p])
        cycles.append(_closed_path(start, members, deps, position))
    return cycles


def _closed_path(start: str, members: set[str], deps: dict[str, list[str]],
                 position: dict[str, int]) -> list[str]:
    """Shortest path from `start` back to itself inside one component (BFS)."""
    prev: dict[str, str] = {}
    queue = [start]
    seen = {start}
    while queue:
        nxt_queue: list[str] = []
        for node in queue:
            for d in sorted(deps.get(node, []), key=lambda p: position[p]):
                if d not in members:
                    continue
                if d == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start] if len(path) > 1 else [
                        start, node, start]
                if d not in seen:
                    seen.add(d)
                    prev[d] = node
                    nxt_queue.append(d)
        queue = nxt_queue
    return [start, start]


def mermaid(graph: PlanGraph, statuses: dict[str, str] | None = None) -> str:
    """Mermaid flowchart: one node per phase, edges from dependency to dependent."""
    lines = ["flowchart TD"]
    for pid in graph.order:
        title = graph.titles.get(pid, "").replace('"', "'")
        label = f"Phase {pid}: {title}" if title else f"Phase {pid}"
        lines.append(f'    P{_node(pid)}["{label}"]')
    for pid in graph.order:
        for d in graph.deps.get(pid, []):
            lines.append(f"    P{_node(d)} --> P{_node(pid)}")
    for i, wave in enumerate(graph.waves, 1):
        lines.append(f"    %% wave {i}: {', '.join(wave)}")
    if statuses:
        for pid, status in statuses.items():
            lines.append(f"    class P{_node(pid)} {status}")
    return "\n".join(lines) + "\n"


def _node(pid: str) -> str:
    return pid.replace(".", "_")

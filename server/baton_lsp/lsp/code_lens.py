"""Code lenses on plans: dependency waves per phase, totals on the title."""

from __future__ import annotations

from lsprotocol import types

from .convert import path_to_uri, to_lsp_range
from .plans import plan_for
from .server import BatonServer, guard

SHOW_GRAPH = "baton.showGraph"


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))
    @guard(list)
    def code_lens(ls: BatonServer, params: types.CodeLensParams) -> list[types.CodeLens]:
        found = plan_for(ls, params.text_document.uri)
        if found is None:
            return []
        path, plan, graph = found
        if not plan.phases:
            return []
        lines = ls.lines_of(path)
        command = types.Command(title="", command=SHOW_GRAPH, arguments=[path_to_uri(path)])
        lenses: list[types.CodeLens] = []
        if plan.title_range is not None:
            cp = len(graph.critical_path)
            title = (f"{len(graph.order)} phases · {len(graph.waves)} waves · critical path "
                     f"{cp} phase{'s' if cp != 1 else ''}")
            if graph.cycles:
                title += f" · {len(graph.cycles)} cycle{'s' if len(graph.cycles) > 1 else ''}"
            lenses.append(types.CodeLens(
                range=to_lsp_range(plan.title_range, lines),
                command=types.Command(title=title, command=SHOW_GRAPH,
                                      arguments=command.arguments)))
        seen: set[str] = set()
        for phase in plan.phases:
            if phase.id in seen:
                continue
            seen.add(phase.id)
            wave = graph.wave_of(phase.id)
            if wave is None:
                title = "blocked by a dependency cycle"
            else:
                others = [p for p in graph.waves[wave - 1] if p != phase.id]
                title = f"Wave {wave} · " + (
                    f"parallel with Phase {', '.join(others)}" if others else "sequential")
            lenses.append(types.CodeLens(
                range=to_lsp_range(phase.heading_range, lines),
                command=types.Command(title=title, command=SHOW_GRAPH,
                                      arguments=command.arguments)))
        return lenses

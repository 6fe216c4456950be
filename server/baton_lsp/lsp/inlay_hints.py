"""Inlay hints after dependency ids: the title of the phase they name."""

from __future__ import annotations

from lsprotocol import types

from .convert import from_lsp_range, to_lsp_range
from .plans import plan_for
from .server import BatonServer, guard


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    @guard(list)
    def inlay_hint(ls: BatonServer, params: types.InlayHintParams) -> list[types.InlayHint]:
        found = plan_for(ls, params.text_document.uri)
        if found is None:
            return []
        path, plan, graph = found
        lines = ls.session.lines_of(path)
        window = from_lsp_range(params.range, lines)
        hints: list[types.InlayHint] = []
        for phase in plan.phases:
            if phase.dependencies is None:
                continue
            for ref in phase.dependencies.refs:
                if ref.id is None or ref.id not in graph.titles:
                    continue
                if not window.start_line <= ref.range.start_line <= window.end_line:
                    continue
                title = graph.titles[ref.id] or f"Phase {ref.id}"
                end = to_lsp_range(ref.range, lines).end
                hints.append(types.InlayHint(position=end, label=title,
                                             kind=types.InlayHintKind.Parameter,
                                             padding_left=True))
        return hints

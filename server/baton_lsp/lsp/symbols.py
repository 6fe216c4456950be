"""Document symbols (outline) and workspace symbols."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from lsprotocol import types

from .cancel import CancelToken, map_cancellable, run_cancellable
from .convert import path_to_uri, to_lsp_line_range, to_lsp_range
from .server import BatonServer, guard, guard_async, uri_path

if TYPE_CHECKING:
    from ..model.base import Kind, Range
    from ..workspace.index import WorkspaceIndex
    from ..workspace.symbols import SymbolSummary

_MAX_WORKSPACE_SYMBOLS = 1000
FRESH_SECONDS = 0.5
"""How long a search re-parses open documents edited since their last parse; after that it
uses their last symbols, so a search in the middle of an edit burst answers within ~1 s."""


def _sym(name: str, kind: types.SymbolKind, rng: Range, sel: Range, lines: list[str],
         detail: str | None = None,
         children: list[types.DocumentSymbol] | None = None) -> types.DocumentSymbol:
    return types.DocumentSymbol(name=name or "(untitled)", kind=kind, detail=detail,
                                range=to_lsp_range(rng, lines),
                                selection_range=to_lsp_range(sel, lines),
                                children=children or None)


def document_symbols(doc: object, lines: list[str]) -> list[types.DocumentSymbol]:
    # the core loads on first use
    from ..model.agent import AgentFile, CommandFile
    from ..model.base import Range
    from ..model.plan import Plan

    out: list[types.DocumentSymbol] = []
    if isinstance(doc, Plan):
        for phase in doc.phases:
            tasks = [_sym(t.text[:80], types.SymbolKind.Event, t.range, t.checkbox_range, lines,
                          "done" if t.checked else "open") for t in phase.tasks]
            status = phase.status.text if phase.status else None
            out.append(_sym(f"Phase {phase.number}: {phase.title}", types.SymbolKind.Module,
                            phase.range, phase.heading_range, lines, status, tasks))
    elif isinstance(doc, AgentFile):
        for step in doc.steps:
            out.append(_sym(step.title, types.SymbolKind.Function, step.range, step.range, lines))
        for block in getattr(doc, "task_blocks", []):
            f = block.field("description")
            out.append(_sym(f"Task {f.value.strip(chr(34)) if f else ''}".strip(),
                            types.SymbolKind.Object, block.range, block.open_range, lines))
    elif isinstance(doc, CommandFile):
        for block in doc.bash_blocks:
            out.append(_sym(f"bash block {block.index + 1}", types.SymbolKind.Function,
                            block.range, Range.of_line(block.start_line, 0,
                                                       len(lines[block.start_line])
                                                       if block.start_line < len(lines) else 0),
                            lines, f"{block.end_line - block.start_line - 1} lines"))
        for block in doc.task_blocks:
            f = block.field("description")
            out.append(_sym(f"Task {f.value.strip(chr(34)) if f else ''}".strip(),
                            types.SymbolKind.Object, block.range, block.open_range, lines))
        out.sort(key=lambda s: (s.range.start.line, s.range.start.character))
    return out


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
    @guard(list)
    def document_symbol(ls: BatonServer,
                        params: types.DocumentSymbolParams) -> list[types.DocumentSymbol]:
        path = uri_path(params.text_document.uri)
        if path is None:
            return []
        session = ls.session
        return document_symbols(session.index_for(path).document(path), session.lines_of(path))

    @server.feature(types.WORKSPACE_SYMBOL)
    @guard_async(list)
    async def workspace_symbol(
        ls: BatonServer, params: types.WorkspaceSymbolParams,
    ) -> list[types.WorkspaceSymbol]:
        fresh_until = time.monotonic() + FRESH_SECONDS
        files = await run_cancellable(ls, lambda token: _symbol_files(ls, token),
                                      what="workspace/symbol")
        query = params.query.lower()

        def search(item: _File) -> list[_Match]:
            order, idx, path, kind = item
            out = []
            fresh = time.monotonic() < fresh_until
            for n, summary in enumerate(idx.symbols(path, kind, fresh=fresh)):
                rank = match_rank(query, summary.name.lower())
                if rank is not None:
                    out.append((rank, order, n, path, summary))
            return out

        found = await map_cancellable(ls, files, search, what="workspace/symbol",
                                      label=lambda item: item[2])
        matches = sorted((m for ms in found for m in ms), key=lambda m: m[:3])
        return [types.WorkspaceSymbol(
            name=s.name, kind=_SYMBOL_KINDS[s.kind], container_name=s.container,
            location=types.Location(uri=path_to_uri(path),
                                    range=to_lsp_line_range(s.range, s.line_text)))
            for _, _, _, path, s in matches[:_MAX_WORKSPACE_SYMBOLS]]


_SYMBOL_KINDS = {"plan": types.SymbolKind.File, "phase": types.SymbolKind.Module,
                 "agent": types.SymbolKind.Class, "command": types.SymbolKind.Function}

_File = tuple[int, "WorkspaceIndex", str, "Kind"]
"""(position in path order, its index, path, kind)"""
_Match = tuple[tuple[int, int], int, int, str, "SymbolSummary"]
"""(rank, file position, symbol position in the file, path, symbol)"""


def _symbol_files(ls: BatonServer, token: CancelToken) -> list[_File]:
    """Plans, agents and commands of every workspace, in path order (runs on the pool:
    finding the workspaces walks the folders)."""
    from ..model.base import Kind  # the core loads on first use

    out: list[_File] = []
    for root in ls.session.discover_roots():
        token.check()
        idx = ls.session.index_for_root(root)
        for path, kind in sorted(idx.files().items()):
            if kind in (Kind.PLAN, Kind.AGENT, Kind.COMMAND, Kind.OPENCODE_AGENT,
                        Kind.OPENCODE_COMMAND):
                out.append((len(out), idx, path, kind))
    return out


def match_rank(query: str, name: str) -> tuple[int, int] | None:
    """How well lower-cased `name` matches lower-cased `query`, lower is better:
    substrings first (earlier is better), then names holding the query's characters in
    order (a tighter span of the leftmost such match is better); None if neither. An empty
    query matches everything."""
    at = name.find(query)
    if at >= 0:
        return (0, at)
    if len(query) < 2:
        return None
    pos = first = -1
    for ch in query:
        pos = name.find(ch, pos + 1)
        if pos < 0:
            return None
        if first < 0:
            first = pos
    return (1, pos - first)

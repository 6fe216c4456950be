"""Document symbols (outline) and workspace symbols."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from .convert import path_to_uri, to_lsp_range
from .server import BatonServer, guard, uri_path

if TYPE_CHECKING:
    from ..model.base import Range

_MAX_WORKSPACE_SYMBOLS = 1000


def _sym(name: str, kind: types.SymbolKind, rng: Range, sel: Range, lines: list[str],
         detail: str | None = None,
         children: list[types.DocumentSymbol] | None = None) -> types.DocumentSymbol:
    return types.DocumentSymbol(name=name or "(untitled)", kind=kind, detail=detail,
                                range=to_lsp_range(rng, lines),
                                selection_range=to_lsp_range(sel, lines),
                                children=children or None)


def document_symbols(doc: object, lines: list[str]) -> list[types.DocumentSymbol]:
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
        return document_symbols(ls.index_for(path).document(path), ls.lines_of(path))

    @server.feature(types.WORKSPACE_SYMBOL)
    @guard(list)
    def workspace_symbol(ls: BatonServer,
                         params: types.WorkspaceSymbolParams) -> list[types.WorkspaceSymbol]:
        from ..model.agent import AgentFile, CommandFile
        from ..model.base import Kind, Range
        from ..model.plan import Plan

        query = params.query.lower()
        out: list[types.WorkspaceSymbol] = []
        for root in ls.discover_roots():
            idx = ls.index_for_root(root)
            for path, kind in sorted(idx.files().items()):
                if kind not in (Kind.PLAN, Kind.AGENT, Kind.COMMAND):
                    continue
                doc = idx.document(path, kind)
                uri = path_to_uri(path)
                entries: list[tuple[str, types.SymbolKind, Range, str | None]] = []
                if isinstance(doc, Plan):
                    entries.append((doc.title or idx.rel(path), types.SymbolKind.File,
                                    doc.title_range or Range.of_line(0), None))
                    entries.extend((f"Phase {p.number}: {p.title}", types.SymbolKind.Module,
                                    p.heading_range, doc.title) for p in doc.phases)
                elif isinstance(doc, AgentFile):
                    entries.append((doc.name, types.SymbolKind.Class, Range.of_line(0),
                                    "agent"))
                elif isinstance(doc, CommandFile):
                    entries.append((f"/{doc.name}", types.SymbolKind.Function,
                                    Range.of_line(0), "command"))
                for name, skind, rng, container in entries:
                    if query and query not in name.lower():
                        continue
                    out.append(types.WorkspaceSymbol(
                        name=name, kind=skind, container_name=container,
                        location=types.Location(uri=uri, range=to_lsp_range(
                            rng, ls.lines_of(path)))))
                    if len(out) >= _MAX_WORKSPACE_SYMBOLS:
                        return out
        return out

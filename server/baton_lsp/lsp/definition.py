"""Go to definition and find references across plans, agents and commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from lsprotocol import types

from .convert import path_to_uri, to_lsp_range
from .server import BatonServer, guard

if TYPE_CHECKING:
    from ..model.base import Range


def _location(ls: BatonServer, path: str, rng: Range | None = None) -> types.Location:
    from ..model.base import Range

    lines = ls.lines_of(path)
    return types.Location(uri=path_to_uri(path),
                          range=to_lsp_range(rng or Range.of_line(0), lines))


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guard(None)
    def definition(ls: BatonServer,
                   params: types.DefinitionParams) -> list[types.Location] | None:
        from ..model.plan import Plan
        from .lookup import cursor_at, link_target

        cur = cursor_at(ls, params.text_document.uri, params.position)
        if cur is None or cur.element is None:
            return None
        path, idx, doc, el = cur.path, cur.index, cur.doc, cur.element
        if el.kind == "dep" and isinstance(doc, Plan) and el.value:
            target = doc.phase(el.value)
            return [_location(ls, path, target.heading_range)] if target else None
        if el.kind == "agent":
            agent_path = idx.agent_paths().get(el.value)
            return [_location(ls, str(agent_path))] if agent_path else None
        if el.kind == "link":
            target_path = link_target(idx, path, el.value)
            if target_path is not None and target_path.exists() and target_path.is_file():
                return [_location(ls, str(target_path))]
        return None

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @guard(None)
    def references(ls: BatonServer,
                   params: types.ReferenceParams) -> list[types.Location] | None:
        from ..model.agent import AgentFile, CommandFile
        from ..model.base import Kind
        from ..model.plan import Plan
        from .lookup import _agent_items, cursor_at

        cur = cursor_at(ls, params.text_document.uri, params.position)
        if cur is None:
            return None
        path, idx, doc, el = cur.path, cur.index, cur.doc, cur.element
        out: list[types.Location] = []
        if isinstance(doc, Plan):
            target = el.value if el is not None and el.kind in ("dep", "phase") else None
            if target is None:
                return None
            phase = doc.phase(target)
            if phase is not None and params.context.include_declaration:
                out.append(_location(ls, path, phase.heading_range))
            for p in doc.phases:
                for ref in (p.dependencies.refs if p.dependencies else []):
                    if ref.id == target:
                        out.append(_location(ls, path, ref.range))
            return out
        name = None
        if isinstance(doc, AgentFile) and idx.kind_of(path) is Kind.AGENT:
            name = el.value if el is not None and el.kind == "agent" else doc.name
        elif isinstance(doc, CommandFile):
            name = el.value if el is not None and el.kind == "agent" else None
        if not name:
            return None
        for other, kind in sorted(idx.files().items()):
            if kind not in (Kind.AGENT, Kind.COMMAND):
                continue
            odoc = idx.document(other, kind)
            if not isinstance(odoc, (AgentFile, CommandFile)):
                continue
            for inj in odoc.injections:
                if inj.agent_name == name:
                    out.append(_location(ls, other, inj.target_range))
            for item, rng in _agent_items(odoc.frontmatter):
                if item == name:
                    out.append(_location(ls, other, rng))
        if params.context.include_declaration and name in idx.agent_paths():
            out.insert(0, _location(ls, str(idx.agent_paths()[name])))
        return out

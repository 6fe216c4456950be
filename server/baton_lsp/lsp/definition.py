"""Go to definition and find references across plans, agents and commands."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from lsprotocol import types

from .cancel import CancelToken, map_cancellable, run_cancellable
from .convert import path_to_uri, to_lsp_range
from .server import BatonServer, guard, guard_async

if TYPE_CHECKING:
    from ..model.base import Kind, Range
    from ..workspace.index import WorkspaceIndex


def _location(ls: BatonServer, path: str, rng: Range | None = None) -> types.Location:
    from ..model.base import Range  # the core loads on first use

    lines = ls.session.lines_of(path)
    return types.Location(uri=path_to_uri(path),
                          range=to_lsp_range(rng or Range.of_line(0), lines))


def register(server: BatonServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DEFINITION)
    @guard(None)
    def definition(ls: BatonServer,
                   params: types.DefinitionParams) -> list[types.Location] | None:
        # the core loads on first use
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
        if el.kind == "oc-agent":
            oc_path = idx.opencode_agents().get(el.value)
            return [_location(ls, oc_path)] if oc_path else None
        if el.kind == "link":
            target_path = link_target(idx, path, el.value)
            if target_path is not None and os.path.isfile(target_path):  # no OSError
                return [_location(ls, str(target_path))]
        return None

    @server.feature(types.TEXT_DOCUMENT_REFERENCES)
    @guard_async(None)
    async def references(ls: BatonServer,
                         params: types.ReferenceParams) -> list[types.Location] | None:
        # the core loads on first use
        from ..model.agent import AgentFile, CommandFile
        from ..model.base import Kind
        from ..model.plan import Plan
        from .lookup import cursor_at

        cur = cursor_at(ls, params.text_document.uri, params.position)
        if cur is None:
            return None
        path, idx, doc, el = cur.path, cur.index, cur.doc, cur.element
        out: list[types.Location] = []
        if isinstance(doc, Plan):  # phases are referenced within their own plan only
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

        def files(token: CancelToken) -> list[tuple[str, Kind]]:
            return [(p, k) for p, k in sorted(idx.files().items())
                    if k in (Kind.AGENT, Kind.COMMAND)]

        found = await map_cancellable(
            ls, await run_cancellable(ls, files, what="textDocument/references"),
            lambda item: _agent_references(ls, idx, item[0], item[1], name),
            what="textDocument/references", label=lambda item: item[0])
        out.extend(loc for locs in found for loc in locs)
        if params.context.include_declaration and name in idx.agent_paths():
            out.insert(0, _location(ls, str(idx.agent_paths()[name])))
        return out


def _agent_references(ls: BatonServer, idx: WorkspaceIndex, path: str, kind: Kind,
                      name: str) -> list[types.Location]:
    """Where agent or command `path` names agent `name` (runs on the pool)."""
    # the core loads on first use
    from ..model.agent import AgentFile, CommandFile
    from .lookup import _agent_items

    doc = idx.document(path, kind)
    if not isinstance(doc, (AgentFile, CommandFile)):
        return []
    out = [_location(ls, path, inj.target_range) for inj in doc.injections
           if inj.agent_name == name]
    out.extend(_location(ls, path, rng) for item, rng in _agent_items(doc.frontmatter)
               if item == name)
    return out

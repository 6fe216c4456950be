"""Shared access to the parsed plan (and its phase graph) of an open or indexed document."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .server import BatonServer, uri_path

if TYPE_CHECKING:
    from ..model.graph import PlanGraph
    from ..model.plan import Plan


def plan_for(ls: BatonServer, uri: str) -> tuple[str, Plan, PlanGraph] | None:
    # the core loads on first use
    from ..model.graph import build_graph
    from ..model.plan import Plan

    path = uri_path(uri)
    if path is None:
        return None
    doc = ls.session.index_for(path).document(path)
    if not isinstance(doc, Plan):
        return None
    return path, doc, build_graph(doc)

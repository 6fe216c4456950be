"""Shared access to the parsed plan (and its phase graph) of an open or indexed document."""

from __future__ import annotations

from ..model.graph import PlanGraph, build_graph
from ..model.plan import Plan
from .server import BatonServer, uri_path


def plan_for(ls: BatonServer, uri: str) -> tuple[str, Plan, PlanGraph] | None:
    path = uri_path(uri)
    if path is None:
        return None
    doc = ls.index_for(path).document(path)
    if not isinstance(doc, Plan):
        return None
    return path, doc, build_graph(doc)

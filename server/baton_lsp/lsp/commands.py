"""`workspace/executeCommand` handlers of the language server."""

from __future__ import annotations

from typing import Any

from .code_lens import SHOW_GRAPH
from .plans import plan_for
from .server import BatonServer


def register(server: BatonServer) -> None:
    @server.command(SHOW_GRAPH)
    def show_graph(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Return the plan's dependency graph as Mermaid text plus waves and cycles."""
        from ..model.graph import mermaid

        uri = args[0] if args else None
        if isinstance(uri, list):
            uri = uri[0] if uri else None
        if not isinstance(uri, str):
            raise ValueError("baton.showGraph expects the plan's URI as its argument")
        found = plan_for(ls, uri)
        if found is None:
            raise ValueError(f"{uri} is not a plan")
        _, _, graph = found
        return {"mermaid": mermaid(graph), "waves": graph.waves, "cycles": graph.cycles,
                "critical_path": graph.critical_path}

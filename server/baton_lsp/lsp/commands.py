"""`workspace/executeCommand` handlers of the language server."""

from __future__ import annotations

import asyncio
import gc
import logging
import platform
import sys
from concurrent import futures
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams

from .code_lens import SHOW_GRAPH
from .lifecycle import revalidate_all
from .plans import plan_for
from .runs import follower, phase_statuses
from .server import BatonServer


def register(server: BatonServer) -> None:
    @server.command(SHOW_GRAPH)
    def show_graph(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """The plan's dependency graph as Mermaid text plus waves and cycles, each phase's
        status (`phases`: the live run's, else the plan's own marker) and the run (`run`,
        as the follower holds it; None: no workflow ran the plan)."""
        from ..model.graph import mermaid  # loaded by `plan_for` on first use

        uri = args[0] if args else None
        if isinstance(uri, list):
            uri = uri[0] if uri else None
        if not isinstance(uri, str):
            raise JsonRpcInvalidParams("baton.showGraph expects the plan's URI as its argument")
        found = plan_for(ls, uri)
        if found is None:
            raise JsonRpcInvalidParams(f"baton.showGraph: {uri} is not a plan")
        path, plan, graph = found
        state = follower(ls).for_plan(path)
        view = state.view if state is not None else None
        run = None if state is None else state.snapshot()
        return {"mermaid": mermaid(graph), "waves": graph.waves, "cycles": graph.cycles,
                "critical_path": graph.critical_path,
                "phases": phase_statuses(view, plan), "run": run}

    @server.command(VALIDATE)
    async def validate_workspace(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Re-read the configuration, re-check every file (published as usual) and return the
        totals the client shows: {files, errors, warnings, information, hints}."""
        await revalidate_all(ls)
        counts = {types.DiagnosticSeverity.Error: 0, types.DiagnosticSeverity.Warning: 0,
                  types.DiagnosticSeverity.Information: 0, types.DiagnosticSeverity.Hint: 0}
        for path, result in list(ls.session.results.items()):
            for diag in ls.diagnostics_for(path, result.findings):
                if diag.severity in counts:
                    counts[diag.severity] += 1
        return {"files": len(ls.session.results),
                "errors": counts[types.DiagnosticSeverity.Error],
                "warnings": counts[types.DiagnosticSeverity.Warning],
                "information": counts[types.DiagnosticSeverity.Information],
                "hints": counts[types.DiagnosticSeverity.Hint]}

    @server.command(DEBUG_INFO)
    def debug_info_command(ls: BatonServer, *args: Any) -> dict[str, Any]:
        """Versions, workspaces, effective settings and load, for bug reports."""
        return debug_info(ls)


DEBUG_INFO = "baton.server.debugInfo"
VALIDATE = "baton.server.validateWorkspace"


def debug_info(ls: BatonServer) -> dict[str, Any]:
    """What a bug report needs: versions, workspaces, settings and the server's own load
    (`live_futures`: a handler's future kept for good was a pygls leak, see `server`)."""
    from importlib.metadata import version  # 60 ms of imports, for this command only

    from .. import __version__
    from ..rules import load_all
    from ..rules.base import all_rules

    load_all()  # every rule module registered, so the count below is all of them
    settings = ls.session.settings
    rss_kb = 0
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss_kb = int(line.split()[1])
    except OSError:
        pass
    return {
        "baton": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "pygls": version("pygls"),
        "rules": len(all_rules()),
        "lsprotocol": version("lsprotocol"),
        "workspaces": {root: {"files": len(idx.files()), "config": idx.config.model_dump(
            by_alias=True)} for root, idx in list(ls.session.indexes.items())},
        "config_errors": {root: msg for root, (_, msg) in list(ls.session.config_errors.items())},
        "settings": {"overrides": settings.overrides, "debounce_ms": settings.debounce_ms,
                     "trusted": settings.trusted},
        "log_level": logging.getLevelName(logging.getLogger("baton_lsp").getEffectiveLevel()),
        "pull_diagnostics": ls.pull_diagnostics,
        "open_documents": len(ls.session.documents),
        "results_cached": len(ls.session.results),
        "pending_checks": len(ls.checks),
        "live_futures": sum(isinstance(o, (asyncio.Future, futures.Future))
                            for o in gc.get_objects()),
        "rss_mb": round(rss_kb / 1024, 1),
    }

"""The package structure the brief asks for, checked on every run: the domain core never
imports pygls or lsprotocol, and no two packages import each other (imports inside
functions included). The full downward order of ../shared/reference/architecture.md
needs the run-record layer first (issue "One typed run record")."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "server" / "baton_lsp"
CORE = ("model", "parse", "rules", "workspace", "workflow")


def _imports() -> dict[str, set[str]]:
    """Top-level package → the other top-level packages (and outside modules) it imports."""
    edges: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).parts
        if len(rel) < 2:
            continue
        pkg, here = rel[0], rel[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom) and node.level > 0:
                base = here[:len(here) - node.level + 1]
                target = (*base, *(node.module or "").split(".")) if node.module else base
                names = [".".join(("baton_lsp", *[p for p in target if p]))]
            else:
                continue
            for name in names:
                parts = name.split(".")
                top = parts[1] if parts[0] == "baton_lsp" and len(parts) > 1 else parts[0]
                if top != pkg:
                    edges[pkg].add(top)
    return edges


def test_the_core_never_imports_the_lsp_libraries() -> None:
    edges = _imports()
    assert {pkg: sorted(edges[pkg] & {"pygls", "lsprotocol", "lsp"}) for pkg in CORE} == {
        pkg: [] for pkg in CORE}


def test_no_two_packages_import_each_other() -> None:
    edges = _imports()
    both = sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges.get(b, ()))
    assert both == []


def test_the_walk_sees_guarded_and_local_imports() -> None:
    # rules/engine.py imports the index under TYPE_CHECKING; cli/main.py imports the server
    # inside the function that starts it: both are edges
    edges = _imports()
    assert "workspace" in edges["rules"] and "lsp" in edges["cli"]

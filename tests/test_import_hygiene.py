"""Issue 37's hygiene, held: an import inside a function is there on purpose and says why, no
worker pool is created at import time, and no one-element list stands in for a memo.

A function-level import is most often deliberate (the language server answers `initialize`
before it loads the core, a replayed `baton check` imports no parser, a command loads only
its own modules: `tests/lsp/test_startup_imports.py`, `tests/rules/test_replay.py`,
`tests/cli/test_readonly_imports.py`), and then a comment on the import or on the line
above it says why; otherwise it belongs at the top of the module."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "baton_lsp"
PENDING: set[str] = set()
"""Modules whose imports are not held yet. Empty since the one run follower of issue 37
(`lsp/workflows.py`, `lsp/runs.py`) was finished; it stays empty."""
POOLS = {"ThreadPoolExecutor", "ProcessPoolExecutor", "Pool"}


def _import_groups(tree: ast.Module) -> list[list[ast.stmt]]:
    """Runs of consecutive import statements in the body of any function."""
    groups: list[list[ast.stmt]] = []

    def visit(body: list[ast.stmt], in_function: bool) -> None:
        run: list[ast.stmt] = []
        for stmt in body:
            if in_function and isinstance(stmt, ast.Import | ast.ImportFrom):
                run.append(stmt)
                continue
            if run:
                groups.append(run)
                run = []
            inner = in_function or isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef)
            for name in ("body", "orelse", "finalbody"):
                sub = getattr(stmt, name, None)
                if isinstance(sub, list):
                    visit(sub, inner)
            for handler in getattr(stmt, "handlers", []):
                visit(handler.body, inner)
        if run:
            groups.append(run)

    visit(tree.body, False)
    return groups


def uncommented_imports(source: str) -> list[int]:
    """First lines of the function-level import groups with no comment on any of their
    lines or on the line just above."""
    lines = source.splitlines()
    found = []
    for group in _import_groups(ast.parse(source)):
        first, last = group[0].lineno, group[-1].end_lineno or group[-1].lineno
        if any("#" in line for line in lines[first - 1:last]):
            continue
        if first >= 2 and lines[first - 2].strip().startswith("#"):
            continue
        found.append(first)
    return found


def _modules() -> list[tuple[str, str]]:
    return [(path.relative_to(PACKAGE).as_posix(), path.read_text(encoding="utf-8"))
            for path in sorted(PACKAGE.rglob("*.py"))]


def test_every_import_inside_a_function_says_why() -> None:
    bare = [f"{name}:{line}" for name, source in _modules() if name not in PENDING
            for line in uncommented_imports(source)]
    assert not bare, ("imports inside a function without a comment saying why (move them "
                      f"to the top, or say why they wait): {bare}")


def module_level_pools_and_cells(name: str, source: str) -> list[str]:
    """A worker pool created, or a one-element `[None]` list made, at module level."""
    found = []
    for stmt in ast.parse(source).body:
        if not isinstance(stmt, ast.Assign | ast.AnnAssign) or stmt.value is None:
            continue
        value = stmt.value
        if isinstance(value, ast.Call):
            func = value.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in POOLS:
                found.append(f"{name}:{stmt.lineno}: a worker pool made at import time")
        if (isinstance(value, ast.List) and len(value.elts) == 1
                and isinstance(value.elts[0], ast.Constant) and value.elts[0].value is None):
            found.append(f"{name}:{stmt.lineno}: a one-element memo cell (use functools.cache)")
    return found


def test_no_worker_pool_or_memo_cell_at_module_level() -> None:
    found = [f for name, source in _modules() for f in module_level_pools_and_cells(name, source)]
    assert not found, found


def test_the_checks_see_what_they_look_for() -> None:
    """The detectors on a made-up module: bare and commented imports in functions, a pool
    and a memo cell at module level (and neither inside a function)."""
    source = ("import os\n"
              "POOL = concurrent.futures.ThreadPoolExecutor(2)\n"
              "_CELL: list[object] = [None]\n"
              "def f():\n"
              "    import json\n"
              "    x = 1\n"
              "    from . import a  # why\n"
              "    import b\n"
              "    # why\n"
              "    import re\n"
              "    if x:\n"
              "        import csv\n"
              "    local = ProcessPoolExecutor(), [None]\n")
    assert uncommented_imports(source) == [5, 12]
    assert module_level_pools_and_cells("m.py", source) == [
        "m.py:2: a worker pool made at import time",
        "m.py:3: a one-element memo cell (use functools.cache)"]

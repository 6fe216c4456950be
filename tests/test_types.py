"""mypy --strict holds every module of the package except the ones `mypy_pending.txt` lists,
and those may not get worse: new code is type-checked, and the list only shrinks."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "baton_lsp"
PENDING = Path(__file__).with_name("mypy_pending.txt")
ERROR = re.compile(r"^(server/\S+?\.py):\d+(?::\d+)?: error: ")
STRICT = ("cli", "model", "parse", "rules", "runs", "workflow", "workspace")
"""Packages held to mypy --strict with no exception: none of their modules may be pending."""


def _pending() -> dict[str, int]:
    allowed: dict[str, int] = {}
    for line in PENDING.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, count = line.split("\t")
            allowed[path] = int(count)
    return allowed


def mypy_errors(cache: Path, python: tuple[str, ...] = (sys.executable,)
                ) -> list[tuple[str, str]]:
    """(path, line) of every mypy --strict error in the package. A missing or broken mypy
    fails here: without it the ratchet would see no errors and pass with nothing checked."""
    proc = subprocess.run(
        [*python, "-m", "mypy", "--cache-dir", str(cache), "--no-error-summary", "--no-pretty"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert "No module named mypy" not in proc.stderr, (
        "mypy is not installed: install the development lock (requirements.lock.txt, as "
        f"`.ci/run` does); the type check cannot be skipped\n{proc.stderr}")
    assert proc.returncode in (0, 1), proc.stderr or proc.stdout  # 2: mypy itself failed
    errors = [(m.group(1), line) for line in proc.stdout.splitlines()
              if (m := ERROR.match(line)) is not None]
    assert proc.returncode == 0 or errors, (
        f"mypy failed without reporting an error:\n{proc.stderr or proc.stdout}")
    return errors


def test_a_missing_mypy_fails_instead_of_passing(tmp_path: Path) -> None:
    """`-S`: this interpreter without its site-packages, so without mypy."""
    with pytest.raises(AssertionError, match="mypy is not installed"):
        mypy_errors(tmp_path / "cache", (sys.executable, "-S"))


def test_mypy_strict_ratchet(tmp_path: Path) -> None:
    errors = mypy_errors(tmp_path / "cache")
    found = Counter(path for path, _ in errors)
    allowed = _pending()
    worse = {path: n for path, n in found.items() if n > allowed.get(path, 0)}
    shown = "\n".join(line for path, line in errors if path in worse)
    assert not worse, f"new mypy --strict errors (fix them; never raise a count):\n{shown}"
    better = {path: (allowed[path], found.get(path, 0)) for path in allowed
              if found.get(path, 0) < allowed[path]}
    assert not better, ("fewer errors than tests/mypy_pending.txt allows: lower the counts "
                        f"(remove a line at 0): {better}")


def test_the_strict_packages_have_nothing_pending() -> None:
    """Issue 37: `model/`, `parse/`, `runs/` and `workflow/` first, then the rest but `lsp/`,
    are clean, and stay so."""
    back = [path for path in _pending()
            if path.split("/")[2] in STRICT]
    assert not back, f"modules of {STRICT} may not be listed in {PENDING.name}: {back}"


ANY_CEILING = {
    "cli": (18, 14),
    "lsp": (56, 22),
    "model": (90, 35),
    "parse": (35, 1),
    "rules": (120, 33),
    "runs": (70, 55),
    "workflow": (159, 111),
    "workspace": (24, 9),
}
"""Package → (`Any` in annotations, of which `dict[str, Any]`): the most each may hold (issue
37: the count of `Any` only goes down). Lower a number when you cut one; never raise it."""


def _is_any(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "Any") or (
        isinstance(node, ast.Attribute) and node.attr == "Any"
        and isinstance(node.value, ast.Name) and node.value.id == "typing")


def _is_str_any_dict(node: ast.AST) -> bool:
    return (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
            and node.value.id == "dict" and isinstance(node.slice, ast.Tuple)
            and len(node.slice.elts) == 2 and isinstance(node.slice.elts[0], ast.Name)
            and node.slice.elts[0].id == "str" and _is_any(node.slice.elts[1]))


def _annotations(tree: ast.AST) -> list[ast.expr]:
    """Every parameter, return and variable annotation; a quoted one parsed as code."""
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            a = node.args
            found += [arg.annotation for arg in (*a.posonlyargs, *a.args, *a.kwonlyargs,
                                                 a.vararg, a.kwarg)
                      if arg is not None and arg.annotation is not None]
            found += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
    return [_Unquote().visit(ann) for ann in found]


class _Unquote(ast.NodeTransformer):
    """A quoted annotation or part of one (`dict[str, 'Any']`) becomes the code it quotes."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if not isinstance(node.value, str):
            return node
        try:
            return self.visit(ast.parse(node.value, mode="eval").body)
        except SyntaxError:  # `Literal["a b"]`: a string, not code
            return node


def any_counts() -> dict[str, tuple[int, int]]:
    """Package (`.` for top-level modules) → (`Any` in annotations, `dict[str, Any]`)."""
    counts: dict[str, list[int]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        count = counts.setdefault(parts[0] if len(parts) > 1 else ".", [0, 0])
        for ann in _annotations(ast.parse(path.read_text(encoding="utf-8"))):
            for node in ast.walk(ann):
                count[0] += _is_any(node)
                count[1] += _is_str_any_dict(node)
    return {pkg: (n, d) for pkg, (n, d) in counts.items() if n or d}


def test_any_only_goes_down() -> None:
    found = any_counts()
    worse = {pkg: (ANY_CEILING.get(pkg, (0, 0)), n) for pkg, n in found.items()
             if any(now > most for now, most in zip(n, ANY_CEILING.get(pkg, (0, 0)),
                                                    strict=True))}
    assert not worse, ("more `Any` in annotations than ANY_CEILING allows (ceiling, found); "
                       f"type it precisely instead: {worse}")
    better = {pkg: (most, found.get(pkg, (0, 0))) for pkg, most in ANY_CEILING.items()
              if found.get(pkg, (0, 0)) != most}
    assert not better, f"fewer `Any` than ANY_CEILING says: lower it (ceiling, found): {better}"


def test_the_any_counter_sees_every_spelling() -> None:
    """`Any`, `typing.Any`, quoted annotations and `dict[str, Any]` are all counted."""
    tree = ast.parse("import typing\n"
                     "def f(a: Any, *b: 'list[Any]', **c: typing.Any) -> dict[str, Any]:\n"
                     "    x: dict[str, 'Any'] = {}\n"
                     "    y = cast(Any, x)\n")
    nodes = [node for ann in _annotations(tree) for node in ast.walk(ann)]
    assert sum(map(_is_any, nodes)) == 5
    assert sum(map(_is_str_any_dict, nodes)) == 2

"""The layer order of docs/architecture.md's picture is a checked contract: import-linter
runs the contracts in pyproject.toml (layers cli > lsp > workflow > rules > workspace > runs
> parse > model, the core without pygls/lsprotocol, the server's session and wire format
without lsprotocol, no cycle among a package's modules),
and a planted upward import and a planted cycle show the check can fail."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "server" / "baton_lsp"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _contracts() -> str:
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    return text[text.index("[tool.importlinter]"):]


def _lint(cwd: Path, config: Path, pythonpath: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", str(config)],
                          cwd=cwd, capture_output=True, text=True, timeout=300, check=False,
                          env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"})


def test_the_contracts_hold(tmp_path: Path) -> None:
    config = tmp_path / "contracts.toml"
    config.write_text(_contracts(), encoding="utf-8")
    result = _lint(tmp_path, config, PACKAGE.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 5 kept, 0 broken." in result.stdout


def test_an_upward_import_and_a_cycle_break_the_contracts(tmp_path: Path) -> None:
    copy = tmp_path / "baton_lsp"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))

    def plant(rel: str, after: str, line: str) -> None:
        path = copy / rel
        text = path.read_text(encoding="utf-8")
        assert after in text
        path.write_text(text.replace(after, f"{after}\n{line}", 1), encoding="utf-8")

    plant("rules/conventions.py", "from __future__ import annotations",
          "from ..workflow import layout  # noqa: F401")
    plant("lsp/diagnostics.py", "from __future__ import annotations",
          "from . import preflight  # noqa: F401")
    plant("runs/store.py", "from __future__ import annotations",
          "import lsprotocol  # noqa: F401")
    plant("lsp/session.py", "from __future__ import annotations",
          "from . import server  # noqa: F401")
    plant("workflow/agent_step.py", "from __future__ import annotations",
          "import distributed  # noqa: F401")
    config = tmp_path / "contracts.toml"
    config.write_text(_contracts(), encoding="utf-8")
    result = _lint(tmp_path, config, tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "Contracts: 0 kept, 5 broken." in out
    assert "baton_lsp.workflow.agent_step -> distributed" in out
    assert "baton_lsp.lsp.session -> baton_lsp.lsp.server" in out
    assert "baton_lsp.rules.conventions -> baton_lsp.workflow.layout" in out
    assert "baton_lsp.runs.store -> lsprotocol" in out
    assert ".preflight -> .diagnostics" in out or ".diagnostics -> .preflight" in out


def _picture() -> list[str]:
    """The layer picture of docs/architecture.md: its first ```text block."""
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    return text.split("```text\n", 1)[1].split("\n```", 1)[0].split("\n")


def test_the_picture_names_the_checked_layers_in_order() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [c["layers"] for c in config["tool"]["importlinter"]["contracts"]
                 if c["id"] == "layers"]
    checked = [{name.strip().removeprefix("baton_lsp.") for name in layer.split("|")}
               for layer in layers]
    drawn = []
    for line in _picture():
        if line and not line[0].isspace():
            head = line.split("  ", 1)[0].split(" (", 1)[0]
            drawn.append({name.strip().rstrip("/") for name in head.split(",")})
    assert drawn == checked


def test_the_picture_lists_every_cli_command() -> None:
    help_text = subprocess.run([sys.executable, "-m", "baton_lsp", "--help"], capture_output=True,
                               text=True, timeout=120, check=True).stdout
    commands = set(re.findall(r"^    ([a-z]+)  ", help_text, re.MULTILINE))
    assert {"check", "run", "lsp"} <= commands, help_text
    lines = _picture()
    start = next(i for i, line in enumerate(lines) if line.startswith("cli/"))
    entry = lines[start][len("cli/"):]
    for line in lines[start + 1:]:
        if line and not line[0].isspace():
            break
        entry += " " + line
    drawn = {part.strip().removeprefix("baton ").strip() for part in entry.split("|")}
    assert drawn == commands, sorted(commands ^ drawn)

"""The language server answers `initialize` before it imports the core (issue 37): building
the server (`app.create_server`, which `app.start` runs before serving) loads pygls and the
feature modules only. The core (`model/`, `parse/`, `rules/`, `runs/`, `workflow/`,
`workspace/`, pydantic, PyYAML) loads with the first check. The fix-all import of
`lsp/code_actions.py` and the usage format of `lsp/code_lens.py` once loaded most of it there."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from baton_lsp.lsp.app import create_server
create_server()
print("IMPORTED", " ".join(sorted(sys.modules)))
"""
CORE = ("model", "parse", "rules", "runs", "workflow", "workspace")


def test_building_the_server_imports_no_core_module() -> None:
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         timeout=120, check=True)
    modules = run.stdout.split("IMPORTED", 1)[1].split()
    core = sorted(m for m in modules if m.split(".")[0] == "baton_lsp"
                  and len(m.split(".")) > 1 and m.split(".")[1] in CORE)
    assert core == [], f"imported before `initialize` could be answered: {core}"
    assert not {"pydantic", "yaml", "markdown_it"} & set(modules)
    assert "baton_lsp.lsp.code_actions" in modules  # every feature module is registered

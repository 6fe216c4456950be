"""The README's user install is true (issue 38): its command, run as written (with a
throw-away HOME), installs Baton from this clone with the runtime lock alone, and the
`baton` it installs checks the example; the package carries the MIT LICENSE."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

from tests.conftest import REPO


def _user_install_command() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)\n```", readme, re.DOTALL)
    (command,) = [b for b in blocks if "requirements.runtime.lock.txt" in b]
    return command


def test_the_readme_user_install_works_and_brings_no_test_tool(tmp_path: Path) -> None:
    command = _user_install_command()
    assert "requirements.lock.txt" not in command.replace("runtime.lock", "")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["HOME"] = str(tmp_path)
    r = subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert re.search(r"^baton \d+\.\d+", r.stdout, re.MULTILINE), r.stdout
    venv = tmp_path / ".local/share/baton"
    listed = subprocess.run([str(venv / "bin/python"), "-m", "pip", "list", "--format=freeze"],
                            capture_output=True, text=True, timeout=120, env=env).stdout
    names = {line.split("==")[0].lower() for line in listed.splitlines()}
    assert "baton-lsp" in names and "pydantic" in names
    assert not names & {"pytest", "ruff", "mypy", "hypothesis", "import-linter", "pre-commit"}
    check = subprocess.run([str(venv / "bin/baton"), "check", "--no-cache", "--no-shellcheck",
                            str(REPO / "examples/workspace")], capture_output=True, text=True,
                           timeout=300, env=env)
    assert check.returncode == 1 and "BTN101" in check.stdout, check.stderr


def test_license_is_mit_as_pyproject_says() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} Baton contributors$", text, re.MULTILINE)
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["license"] == {"text": "MIT"}

"""The VS Code extension's `$baton` problem matcher (client-vscode/package.json) reads today's
`baton check` text output: applied to a live check of the example, its regexp yields exactly
the findings `--format json` reports, and not the summary line. The extension's vitest test
applies it to a recorded output; this one catches the CLI drifting away from it."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLE, REPO


def test_the_problem_matcher_reads_live_check_output(tmp_path: Path) -> None:
    package = json.loads((REPO / "client-vscode" / "package.json").read_text(encoding="utf-8"))
    (matcher,) = package["contributes"]["problemMatchers"]
    pattern = matcher["pattern"]
    regexp = re.compile(pattern["regexp"])  # plain groups and classes: the same in JS and re
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLE, root)
    base = [sys.executable, "-m", "baton_lsp", "check", "--no-cache", "."]
    text = subprocess.run(base, cwd=root, capture_output=True, text=True, timeout=300)
    data = subprocess.run([*base, "--format", "json"], cwd=root, capture_output=True,
                          text=True, timeout=300)
    assert text.returncode == data.returncode == 1, text.stderr + data.stderr
    lines = text.stdout.rstrip("\n").split("\n")
    read = [(m[pattern["file"]], int(m[pattern["line"]]), int(m[pattern["column"]]),
             m[pattern["code"]], m[pattern["message"]])
            for m in map(regexp.match, lines) if m]
    assert read == [(f["filename"], f["location"]["line"], f["location"]["column"], f["code"],
                     f["message"]) for f in json.loads(data.stdout)]
    assert read and lines[-1].startswith("Found ") and not regexp.match(lines[-1])

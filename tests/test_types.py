"""mypy --strict holds every module of the package except the ones `mypy_pending.txt` lists,
and those may not get worse: new code is type-checked, and the list only shrinks."""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PENDING = Path(__file__).with_name("mypy_pending.txt")
ERROR = re.compile(r"^(server/\S+?\.py):\d+(?::\d+)?: error: ")
STRICT = ("model", "parse", "runs", "workflow")
"""Packages held to mypy --strict with no exception: none of their modules may be pending."""


def _pending() -> dict[str, int]:
    allowed: dict[str, int] = {}
    for line in PENDING.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            path, count = line.split("\t")
            allowed[path] = int(count)
    return allowed


def test_mypy_strict_ratchet(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "cache"),
         "--no-error-summary", "--no-pretty"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert proc.returncode in (0, 1), proc.stderr or proc.stdout  # 2: mypy itself failed
    errors = [(m.group(1), line) for line in proc.stdout.splitlines()
              if (m := ERROR.match(line)) is not None]
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
    """Issue 37: `model/`, `parse/`, `runs/` and `workflow/` are clean first, and stay so."""
    back = [path for path in _pending()
            if path.split("/")[2] in STRICT]
    assert not back, f"modules of {STRICT} may not be listed in {PENDING.name}: {back}"

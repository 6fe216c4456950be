"""A copy of the example workspace and `baton run` through one real agent CLI, for the
whole-workflow tests of tests/agents (one fixture shape for claude, codex and gemini)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "workspace"
EXAMPLE_PLAN = ".claude/specs/002_payment_retry/plans/001-payment-retry-plan.md"


@dataclass
class Box:
    """`ws` (the example, copied), an isolated `home`, and the environment of the run:
    the CLI's directory first on PATH, nothing of the user's configuration. `wrap` is an
    argv prefix for every `baton` command (e.g. `unshare --user ...` to run as another uid)."""

    ws: Path
    home: Path
    runner: str
    env: dict[str, str] = field(default_factory=dict)
    settings: tuple[str, ...] = ()
    wrap: tuple[str, ...] = ()

    @classmethod
    def create(cls, tmp: Path, runner: str, cli: str, **env: str) -> Box:
        ws, home = tmp / "ws", tmp / "home"
        shutil.copytree(EXAMPLE, ws)
        home.mkdir()
        base = {"PATH": f"{Path(cli).parent}{os.pathsep}{os.environ['PATH']}",
                "HOME": str(home), "TMPDIR": str(tmp), "LANG": "C.UTF-8",
                "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        return cls(ws, home, runner, {**base, **env})

    def baton(self, *args: str, timeout: float = 400) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.wrap, sys.executable, "-m", "baton_lsp", *args,
                               "-w", str(self.ws)],
                              capture_output=True, text=True, env=self.env, timeout=timeout,
                              check=False)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        sets = [a for s in (f"workflow.runner={self.runner}", *self.settings)
                for a in ("--set", s)]
        return self.baton("run", *args, *sets)

    def checkpoint(self) -> dict[str, Any]:
        (wid,) = [p for p in (self.ws / ".claude/data/checkpoints").iterdir() if p.is_dir()]
        return json.loads(sorted(wid.glob("[0-9]*.json"))[-1].read_text())

    def steps(self) -> dict[str, dict[str, Any]]:
        return self.checkpoint()["baton"]["steps"]

    def failed_steps(self) -> list[dict[str, Any]]:
        return [s for s in self.steps().values() if s.get("status") == "failed"]

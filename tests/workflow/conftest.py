"""A scratch workspace for engine tests: the script runner, fast retries, the scripted
agent as test command, and helpers to run `baton` as a real process."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SCRIPTED_WORKFLOW_CONFIG as CONFIG


class Run:
    """A background `baton` process and the stream of its `--events`."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.pid = proc.pid
        self.events: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with contextlib.suppress(ValueError):
                self.events.put(json.loads(line))
        self.events.put(None)

    def wait_event(self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30.0
                   ) -> dict[str, Any]:
        """Block until an event satisfying `pred` arrives (or was already seen)."""
        for event in self.seen:
            if pred(event):
                return event
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            if event is None:
                raise AssertionError(f"baton exited before the event; saw {self.seen[-5:]}")
            self.seen.append(event)
            if pred(event):
                return event

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def send_signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    @property
    def stderr(self) -> Any:
        return self.proc.stderr

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode


def agent_started(step: str) -> Callable[[dict[str, Any]], bool]:
    """The agent of `step` is running (it printed its first PROGRESS line)."""
    return lambda e: e.get("event") == "signal" and e.get("step") == step


def checkpointed(label: str) -> Callable[[dict[str, Any]], bool]:
    return lambda e: e.get("event") == "checkpoint" and e.get("label") == label


class Workspace:
    def __init__(self, root: Path) -> None:
        self.root = root

    def behave(self, table: dict[str, Any]) -> None:
        (self.root / ".claude" / "baton-script.json").write_text(json.dumps(table))

    def config(self, extra: str) -> None:
        """CONFIG with the keys of `extra` replaced."""
        keys = {line.split("=")[0].strip() for line in extra.splitlines() if "=" in line}
        base = [ln for ln in CONFIG.splitlines() if ln.split("=")[0].strip() not in keys]
        (self.root / ".claude" / "baton.toml").write_text("\n".join(base) + "\n" + extra)

    def baton(self, *args: str, timeout: float = 120, check: bool = False,
              env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([sys.executable, "-m", "baton_lsp", *args, "--workspace",
                            str(self.root)], capture_output=True, text=True, timeout=timeout,
                           cwd=self.root, env={**os.environ, **(env or {})})
        if check and r.returncode != 0:
            raise AssertionError(f"baton {args} → {r.returncode}\n{r.stdout}\n{r.stderr}")
        return r

    def popen(self, *args: str, env: dict[str, str] | None = None) -> Run:
        """`baton run|resume … --events` in the background; its JSON events are read by a
        thread so tests wait on them (with a timeout) instead of polling files."""
        proc = subprocess.Popen([sys.executable, "-m", "baton_lsp", *args, "--events",
                                 "--workspace", str(self.root)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=self.root,
                                start_new_session=True, env={**os.environ, **(env or {})})
        return Run(proc)

    def status(self, wid: str | None = None) -> Any:
        r = self.baton("status", *([wid] if wid else []), "--json", check=True)
        return json.loads(r.stdout)

    def only_workflow(self) -> str:
        rows = self.status()
        assert len(rows) == 1, rows
        return rows[0]["workflow_id"]

    def runs(self) -> list[tuple[str, str, int, float]]:
        """(start|end, step, attempt, time) lines the scripted agent journaled."""
        path = self.root / ".claude" / "tmp" / "scripted_runs.log"
        if not path.exists():
            return []
        out = []
        for line in path.read_text().splitlines():
            kind, step, attempt, at = line.split()
            out.append((kind, step, int(attempt), float(at)))
        return out

    def started(self, step_prefix: str = "") -> list[str]:
        return [s for k, s, _, _ in self.runs() if k == "start" and s.startswith(step_prefix)]

    def errors(self) -> list[dict[str, Any]]:
        path = self.root / ".claude" / "data" / "logs" / "errors.jsonl"
        if not path.exists():
            return []
        return [json.loads(x) for x in path.read_text().splitlines()]

    def write_plan(self, deps: list[list[int]], name: str = "001_feature") -> Path:
        plan = self.root / ".claude" / "specs" / name / "plans" / f"{name}_plan.md"
        plan.parent.mkdir(parents=True, exist_ok=True)
        lines = ["# Feature Plan", "", "## Metadata", "- **Date**: 2026-11-21",
                 "- **Status**: [NOT STARTED]", "", "## Implementation Phases", ""]
        for i, d in enumerate(deps, 1):
            lines += [f"### Phase {i}: Step {i} [NOT STARTED]",
                      f"dependencies: [{', '.join(map(str, d))}]", "", "Tasks:",
                      f"- [ ] task {i}", ""]
        plan.write_text("\n".join(lines))
        return plan


def make_ws(tmp_path: Path) -> Workspace:
    """An empty workspace (agents dir, the scripted workflow configuration)."""
    root = tmp_path / "ws"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "baton.toml").write_text(CONFIG)
    return Workspace(Path(os.path.realpath(root)))


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return make_ws(tmp_path)


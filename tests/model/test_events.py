"""The engine's events are one typed union (`model/events.py`): what a real run prints under
`--events` is read back by it whole, an event it does not describe fails where it is
emitted, and the extension's TypeScript types are the ones generated from it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from baton_lsp.model import events
from baton_lsp.model.events import EVENTS, StepEvent, read_event, to_json, typescript
from baton_lsp.workflow.run import Run
from tests.conftest import EXAMPLE

ROOT = Path(__file__).resolve().parents[2]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def test_a_real_runs_event_lines_are_all_read_back(tmp_path: Path) -> None:
    """A full-implementation run with parallel phases in worktrees (so merges, waves,
    supervisors and signals all occur): every line is an event of the union, and writing it
    again gives the same line."""
    ws = tmp_path / "ws"
    shutil.copytree(EXAMPLE, ws)
    env = {**os.environ, **GIT_ENV}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "x"]):
        subprocess.run(cmd, cwd=ws, check=True, env=env)
    out = subprocess.run(
        [sys.executable, "-m", "baton_lsp", "run", "Add a greeting", "--scope",
         "full-implementation", "--complexity", "2", "--runner", "script", "--events",
         "--workspace", str(ws)], cwd=ws, capture_output=True, text=True, env=env,
        timeout=600, check=True).stdout
    lines = out.splitlines()
    kinds = set()
    for line in lines:
        event = read_event(line)
        assert event is not None, line
        assert to_json(event) == line
        kinds.add(event.event)
    assert {"transition", "wave", "step", "signal", "checkpoint", "merge", "finished",
            "classification", "log"} <= kinds


def test_an_event_the_union_does_not_describe_fails_where_it_is_emitted(tmp_path: Path
                                                                         ) -> None:
    seen: list[events.Event] = []
    run = Run(tmp_path, events=seen.append)
    run.emit("step", step="research.1", state="research", status="running", attempt=1)
    assert isinstance(seen[0], StepEvent) and seen[0].attempt == 1
    with pytest.raises(ValidationError):
        run.emit("step", step="research.1", state="research", status="runing")
    with pytest.raises(ValidationError):
        run.emit("step", step="research.1", state="research", status="done", atempt=1)
    with pytest.raises(ValidationError):
        run.emit("stepp", step="research.1")


def test_only_the_fields_an_emitter_set_are_printed() -> None:
    event = EVENTS.validate_python({"event": "waiting", "what": "merging wave 1"})
    assert json.loads(to_json(event)) == {"event": "waiting", "what": "merging wave 1"}
    assert read_event(b'{"event": "nosuch"}') is None
    assert read_event(b"not json") is None
    assert read_event('{"event": "log"}') is None  # a log event has text


def test_the_extensions_event_types_are_generated_from_the_union() -> None:
    committed = (ROOT / "client-vscode" / "src" / "events.ts").read_text(encoding="utf-8")
    assert committed == typescript(), (
        "client-vscode/src/events.ts is stale: python -m baton_lsp.model.events "
        "--typescript > client-vscode/src/events.ts")
    for kind in ("transition", "wave", "step", "signal", "checkpoint", "finished", "merge",
                 "waiting", "reconciled", "log"):
        assert f'readonly event: "{kind}";' in committed

"""Scripted runs whose every checkpoint is kept as a golden record (issue 37): the engine
writing its record through typed models must write what it wrote through string keys.

Each scenario runs real `baton` processes with the scripted agents; its checkpoints are read
back as dicts and normalised — the workspace path, wall-clock times, durations and the
checksums that cover them replaced by placeholders — so two runs of the same engine give
the same dicts. `tests/workflow/data/typed_record_golden.json.gz` holds them as the engine
wrote them before the record was typed; `test_typed_record.py` compares every scenario
against it. Run this file (`python -m tests.workflow.record_scenarios`) to regenerate it
after a deliberate change of what a checkpoint holds; with `PYTHONPATH=<a worktree of another
commit>/server:.` it records that commit's engine instead (how the file was made, at
d5eed86). Parallel siblings are made to overlap and only settled checkpoints are kept, so
the machine's load does not change which checkpoints there are."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from .conftest import Workspace, make_ws

GOLDEN = Path(__file__).parent / "data" / "typed_record_golden.json.gz"

TIME_KEYS = frozenset({
    "duration_ms", "wall_ms", "api_ms", "total_duration_ms", "sequential_duration_ms",
    "time_savings_pct", "at", "started_at", "finished_at", "created_at", "updated_at",
    "timestamp", "classified_at", "plan_modification_time", "checksum", "signature",
    "mtime", "elapsed_ms", "process_ms", "mac", "sha256", "plan_sha256", "plan_progress_free",
    "base", "commit", "merged"})
"""Keys whose values are wall-clock readings, or digests and commits covering them."""
TIMED_MAPS = frozenset({"timing", "inputs"})
"""Keys whose values map names to wall-clock readings or digests."""
_PARALLEL_STEP = re.compile(r"\b(research\.|implement\.phase-|phase )\d+\b")
_ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?")
_STAMP = re.compile(r"\d{8}_\d{6}")

Json = object


def normalise(value: Json, root: str, key: str = "") -> Json:
    """`value` with the workspace path, the interpreter and the wall-clock readings
    replaced."""
    if key in TIME_KEYS and value is not None:
        return "<time>"
    if isinstance(value, dict):
        if key in TIMED_MAPS:
            return {str(normalise(str(k), root)): "<time>" for k in value}
        return {str(normalise(str(k), root)): normalise(v, root, str(k))
                for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v, root, key) for v in value]
    if isinstance(value, str):
        if value == sys.executable:  # the test command's interpreter: the clone's venv
            return "<python>"
        text = value.replace(root, "<root>")
        return _STAMP.sub("<stamp>", _ISO.sub("<time>", text))
    return value


def settled(data: dict[str, object]) -> bool:
    """Whether the checkpoint is one the scenario reaches whatever order parallel agents
    finish in: no state with two or more steps has one of them running, and no wave of
    implement phases is under way (its phases finish, are marked and merged in any order;
    the wave's result is recorded once all are)."""
    baton = data.get("baton")
    steps = baton.get("steps") if isinstance(baton, dict) else None
    by_state: dict[str, list[object]] = {}
    for step in (steps or {}).values():
        by_state.setdefault(str(step.get("state")), []).append(step.get("status"))
    if any(len(s) > 1 and "running" in s for s in by_state.values()):
        return False
    ws = data.get("workflow_state")
    if not isinstance(ws, dict) or ws.get("current_wave") is None:
        return True
    wave = str(ws["current_wave"])
    return wave not in (ws.get("wave_structure") or {}) or wave in (ws.get("wave_results") or {})


def checkpoints(ws: Workspace, wid: str) -> list[Json]:
    """Every settled checkpoint of `wid`, in order, normalised (which of parallel siblings
    finished last, as the save label names it, is left out too)."""
    folder = ws.root / ".claude" / "data" / "checkpoints" / wid
    out: list[Json] = []
    for path in sorted(folder.glob("[0-9]*.json")):
        data = json.loads(path.read_text())
        if settled(data):
            data["baton"]["event"] = _PARALLEL_STEP.sub(r"\1N", str(data["baton"].get("event")))
            out.append(normalise(data, str(ws.root)))
    return out


def _git(ws: Workspace, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=Dev", "-c", "user.email=dev@example.com", *args],
                   cwd=ws.root, check=True, capture_output=True, timeout=60)


def overlap(*steps: str) -> dict[str, dict[str, object]]:
    """Behaviour for parallel siblings: each waits until all have started (`meet`), so none
    finishes before its siblings' records exist, whatever the machine's load."""
    return {s: {"meet": list(steps)} for s in steps}


def full(ws: Workspace) -> list[Json]:
    """Research, plan, implement in waves, test, document: a whole scripted workflow."""
    ws.behave({**overlap("research.1", "research.2"),
               **overlap("implement.phase-2", "implement.phase-3")})
    ws.baton("run", "Research caching and plan the cache layer", "--scope",
             "full-implementation", "--complexity", "2", "--id", "wf-full", check=True)
    return checkpoints(ws, "wf-full")


def failed_and_resumed(ws: Workspace) -> list[Json]:
    """The plan agent fails permanently; a resume finishes the run."""
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-resumed")
    assert r.returncode == 1, r.stdout + r.stderr
    ws.behave({})
    ws.baton("resume", "wf-resumed", check=True)
    return checkpoints(ws, "wf-resumed")


def iterations(ws: Workspace) -> list[Json]:
    """The implement iteration loop halted at max-iterations, resumed with more."""
    ws.config('implement-mode = "iterations"\nmax-iterations = 2')
    ws.behave({"implement.iteration-*": {"iterations": 3}})
    plan = ws.write_plan([[]] + [[i] for i in range(1, 6)])
    r = ws.baton("run", "Implement the feature", "--scope", "implement-only", "--plan",
                 str(plan), "--id", "wf-loop")
    assert r.returncode == 1, r.stdout + r.stderr
    ws.baton("resume", "wf-loop", "--set", "workflow.max-iterations=5", check=True)
    return checkpoints(ws, "wf-loop")


def supervisors(ws: Workspace) -> list[Json]:
    """The three coordination tiers: research through the research supervisor (four
    topics), a plan of three domains through the implementation supervisor (each phase in
    its own worktree of a git repository), tests of two types through the testing one."""
    from .test_sub_supervisors import AUTH_PLAN, CODE

    ws.behave(overlap(*(f"research.{i}" for i in range(1, 5))))
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             "--id", "wf-research", check=True)
    out = checkpoints(ws, "wf-research")
    plan = ws.root / ".claude" / "specs" / "001_auth" / "plans" / "001_auth_plan.md"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(AUTH_PLAN.format(extra=""))
    meet = overlap("implement.phase-2", "implement.phase-3")
    ws.behave({k: {**v, **meet.get(k, {})} for k, v in CODE.items()})
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "base")
    ws.baton("run", "Implement auth with frontend + backend + testing", "--scope",
             "implement-only", "--plan", str(plan), "--id", "wf-impl", check=True)
    out += checkpoints(ws, "wf-impl")
    for name, count in (("tests/unit/test_login.py", 3), ("tests/integration/test_flow.py", 2)):
        path = ws.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"def test_{i}():\n    assert True\n\n" for i in range(count)))
    ws.behave({"test.*": {"tests": "pass-after-debug"}})
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "tests")
    ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan", str(plan),
             "--id", "wf-tests", check=True)
    return out + checkpoints(ws, "wf-tests")


SCENARIOS: dict[str, Callable[[Workspace], list[Json]]] = {
    "full": full, "failed_and_resumed": failed_and_resumed, "iterations": iterations,
    "supervisors": supervisors}


def run(name: str) -> list[Json]:
    """The scenario's settled checkpoints, normalised, run in a workspace whose path has
    the same length every time (what agents pass up names it, and the context accounting
    counts those characters)."""
    with tempfile.TemporaryDirectory(prefix="baton-golden-") as tmp:
        return SCENARIOS[name](make_ws(Path(tmp)))


def golden() -> dict[str, list[Json]]:
    data: dict[str, list[Json]] = json.loads(gzip.decompress(GOLDEN.read_bytes()))
    return data


def differences(want: Json, got: Json, where: str = "") -> list[str]:
    """Where `got` differs from `want` (dotted paths), for a failure message."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: only {'before' if k in want else 'after'}"
               for k in sorted(set(want) ^ set(got))]
        for k in sorted(set(want) & set(got)):
            out += differences(want[k], got[k], f"{where}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        return [d for i, (a, b) in enumerate(zip(want, got, strict=True))
                for d in differences(a, b, f"{where}[{i}]")]
    return [] if want == got and type(want) is type(got) else [
        f"{where}: {json.dumps(want)[:120]} before, {json.dumps(got)[:120]} after"]


if __name__ == "__main__":
    from baton_lsp.runs.signing import DATA_DIR_ENV

    found: dict[str, list[Json]] = {}
    for name in SCENARIOS:
        with tempfile.TemporaryDirectory() as keys:
            os.environ[DATA_DIR_ENV] = keys
            found[name] = run(name)
        print(f"{name}: {len(found[name])} checkpoints", file=sys.stderr)
    text = json.dumps(found, indent=1, sort_keys=True) + "\n"
    GOLDEN.write_bytes(gzip.compress(text.encode(), 9, mtime=0))

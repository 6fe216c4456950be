"""Workflow engine figures behind `BENCHMARKS.md`.

Run: `python benchmarks/bench_workflow.py [--steps N] [--repeat N]`.

* **Checkpoint write**: `CheckpointStore.save` of the final checkpoint of a real
  full-implementation run (≈ 9 KB): JSON dump, SHA-256, temp file, fsync, rename, fsync of
  the directory. p50 / p95 of 200 writes.
* **Load + migrate**: `parse_checkpoint` of the corpus's real schema-1.2 checkpoint (migrated
  through 1.3, 2.0 to 2.1) and of a 2.1 checkpoint; p50 of 200.
* **Engine overhead per agent step**: an implement-only workflow over a chain of N phases run
  in-process; each step's agent is `true`-like (the `command` runner with a Python one-liner
  that writes the artifact). Overhead = (wall of the run − Σ agent process durations) / N:
  prompt and contract, signal parsing, the hard barrier, hashing, errors, the 2–3 durable
  checkpoints per step and the state file.
* **Wave efficiency**: the seeds' 8-phase plan (waves 1 | 2,3,4 | 5,6 | 7 | 8), each phase a
  scripted agent sleeping 0.5 s. Critical path = the longest dependency chain of measured
  agent durations; target wall ≤ 1.05 × critical path + 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from baton_lsp.model.states import Scope
from baton_lsp.runs.checkpoint import parse_checkpoint
from baton_lsp.runs.store import CheckpointStore
from baton_lsp.workflow.engine import Engine, RunRequest
from baton_lsp.workspace.config import load_config

CORPUS_CP = Path(__file__).resolve().parents[2] / "shared/corpus/.claude/checkpoints" \
    / "test_524747/test_checkpoint.json"


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def _workspace(base: Path, config: str) -> Path:
    root = base / "ws"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "baton.toml").write_text(config)
    return Path(os.path.realpath(root))


def write_plan(root: Path, deps: list[list[int]]) -> Path:
    plan = root / ".claude/specs/001_bench/plans/001_bench_plan.md"
    plan.parent.mkdir(parents=True)
    lines = ["# Bench Plan", "", "## Implementation Phases", ""]
    for i, d in enumerate(deps, 1):
        lines += [f"### Phase {i}: Step {i}", f"dependencies: [{', '.join(map(str, d))}]",
                  "", f"- [ ] task {i}", ""]
    plan.write_text("\n".join(lines))
    return plan


def _run(root: Path, req: RunRequest) -> tuple[float, dict]:
    engine = Engine(root, load_config(root))
    t0 = time.perf_counter()
    out = asyncio.run(engine.start(req))
    wall = time.perf_counter() - t0
    assert out.status == "complete", out.message
    return wall, engine.dump()


def bench_checkpoints(base: Path) -> dict[str, float]:
    root = _workspace(base / "cp", '[workflow]\nrunner = "script"\n')
    _, data = _run(root, RunRequest("Add a login flow", Scope.RESEARCH_AND_PLAN, 2))
    size = len(json.dumps(data, indent=2))
    store = CheckpointStore(root, "bench_writes")
    writes = []
    for _ in range(200):
        t0 = time.perf_counter()
        store.save(data, "bench")
        writes.append((time.perf_counter() - t0) * 1000)
    raw21 = json.dumps(data)
    loads21 = []
    for _ in range(200):
        t0 = time.perf_counter()
        parse_checkpoint(raw21)
        loads21.append((time.perf_counter() - t0) * 1000)
    out = {"checkpoint_bytes": size, "write_p50_ms": statistics.median(writes),
           "write_p95_ms": _pct(writes, 0.95), "load21_p50_ms": statistics.median(loads21)}
    if CORPUS_CP.is_file():
        raw12 = CORPUS_CP.read_bytes()
        loads = []
        for _ in range(200):
            t0 = time.perf_counter()
            loaded = parse_checkpoint(raw12)
            loads.append((time.perf_counter() - t0) * 1000)
        assert loaded.migrated
        out["load_migrate12_p50_ms"] = statistics.median(loads)
    return out


def _chain(base: Path, steps: int) -> tuple[float, list[float]]:
    agent = ("import os,pathlib;p=pathlib.Path(os.environ['BATON_ARTIFACT_PATH']);"
             "p.write_text('done\\n');print('SUMMARY_CREATED: '+str(p))")
    argv = json.dumps([sys.executable, "-S", "-c", agent])
    root = _workspace(base / f"overhead{steps}", f'[workflow]\nrunner = "command"\n'
                      f'command = {argv}\n')
    plan = write_plan(root, [[]] + [[i] for i in range(1, steps)])
    wall, data = _run(root, RunRequest("bench", Scope.IMPLEMENT_ONLY, plan_path=str(plan)))
    procs = [s["process_ms"] for s in data["baton"]["steps"].values() if "process_ms" in s]
    assert len(procs) == steps
    return wall * 1000, procs


def bench_overhead(base: Path, steps: int) -> dict[str, float]:
    """Marginal cost of a step: two chains (N/5 and N steps) cancel the fixed costs of a run
    (imports, topic, first checkpoints) out of the difference."""
    small = max(2, steps // 5)
    wall_s, procs_s = _chain(base, small)
    wall_l, procs_l = _chain(base, steps)
    overhead = ((wall_l - sum(procs_l)) - (wall_s - sum(procs_s))) / (steps - small)
    return {"steps": steps, "wall_ms": wall_l, "agent_p50_ms": statistics.median(procs_l),
            "overhead_per_step_ms": overhead,
            "overhead_incl_fixed_ms": (wall_l - sum(procs_l)) / steps}


def bench_waves(base: Path) -> dict[str, float]:
    deps = [[], [1], [1], [1], [2, 3], [4], [5, 6], [7]]
    root = _workspace(base / "waves", '[workflow]\nrunner = "script"\nmax-parallel = 4\n')
    (root / ".claude/baton-script.json").write_text('{"implement.*": {"sleep": 0.5}}')
    plan = write_plan(root, deps)
    engine = Engine(root, load_config(root))
    out = asyncio.run(engine.start(RunRequest("bench", Scope.IMPLEMENT_ONLY,
                                              plan_path=str(plan))))
    assert out.status == "complete"
    results = engine.dump()["workflow_state"]["wave_results"]
    wall = sum(w["duration_ms"] for w in results.values())
    dur = {k.removeprefix("implement.phase-"): v["process_ms"]
           for k, v in engine.dump()["baton"]["steps"].items()}
    finish: dict[str, float] = {}
    for i, d in enumerate(deps, 1):
        finish[str(i)] = dur[str(i)] + max((finish[str(x)] for x in d), default=0.0)
    critical = max(finish.values())
    return {"implement_wall_ms": wall, "critical_path_ms": critical,
            "ratio": wall / critical, "target_ms": 1.05 * critical + 100}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--only", choices=("checkpoints", "engine overhead", "waves"),
                    help="run one part")
    args = ap.parse_args()
    print(f"# {platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · "
          f"{time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        # the checkpoint signing key of these runs: a temporary one, not the user's
        os.environ.setdefault("BATON_DATA_DIR", str(base / "baton-data"))
        for name, fn in (("checkpoints", lambda: bench_checkpoints(base)),
                         ("engine overhead", lambda: bench_overhead(base, args.steps)),
                         ("waves", lambda: bench_waves(base))):
            if args.only and name != args.only:
                continue
            figures = fn()
            print(f"\n## {name}")
            for k, v in figures.items():
                print(f"{k:>28}: {v:.2f}" if isinstance(v, float) else f"{k:>28}: {v}")


if __name__ == "__main__":
    main()

"""What isolating parallel phases in git worktrees costs (issue 16's figures).

Run: `python benchmarks/bench_worktrees.py [--repeat N]`.

* **Git work per isolated phase**: the example workspace (examples/workspace, its README
  workflow: waves 1 | 2,3 | 4) as a git repository, `baton`'s engine in-process with the
  scripted agents. Every call of the isolation layer is timed where the engine makes it:
  `open_tree` (worktree add, `.worktreeinclude`), `commit_tree` (add, commit), `merge`
  (`git merge --no-ff`) and `discard` (a wave's worktree directories, one `worktree prune`,
  one `branch -D`). Per isolated phase = their
  sum over the run / isolated phases (every phase is isolated since runs share
  repositories: single-phase waves too). Target ≤ 150 ms.
* **Whole-run cost**: the same workflow with `isolation = "worktree"` and `"none"`, run
  alternately, implement-state wall (p50).
* **Wave efficiency in git**: the seeds' 8-phase plan (waves 1 | 2,3,4 | 5,6 | 7 | 8), each
  phase a scripted agent sleeping 0.5 s, isolated and in place, run alternately; target wall
  ≤ 1.05 × critical path + 100 ms (critical path = the longest dependency chain of measured
  agent durations). The least disturbed run of each mode and the p50 ratio are shown.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_workflow import write_plan

from baton_lsp.model.states import Scope
from baton_lsp.runs.signing import DATA_DIR_ENV
from baton_lsp.workflow import isolation
from baton_lsp.workflow.engine import Engine, RunRequest
from baton_lsp.workspace.config import load_config

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "workspace"
GIT = ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.com"]
TIMED = ("open_tree", "commit_tree", "merge", "discard")
SPENT: dict[str, list[float]] = defaultdict(list)


def _timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if not (name == "discard" and not args[1]):  # a wave with nothing to remove
                SPENT[name].append((time.perf_counter() - t0) * 1000)
    return wrapper


for _name in TIMED:  # measure where the engine calls them, nothing else changes
    setattr(isolation.Isolation, _name, _timed(_name, getattr(isolation.Isolation, _name)))


def _repo(root: Path) -> None:
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run([*GIT, *args], cwd=root, check=True, capture_output=True)


def _example(base: Path, mode: str, n: int) -> Path:
    root = base / f"example-{mode}-{n}"
    shutil.copytree(EXAMPLE, root)
    (root / ".claude" / "baton-script.json").unlink(missing_ok=True)
    _repo(root)
    return Path(os.path.realpath(root))


def _run(root: Path, req: RunRequest, mode: str = "worktree") -> dict[str, Any]:
    config = load_config(root)
    config.workflow.isolation = mode  # type: ignore[assignment]
    engine = Engine(root, config)
    out = asyncio.run(engine.start(req))
    assert out.status == "complete", out.message
    return engine.dump()


def bench_example(base: Path, repeat: int) -> dict[str, float]:
    walls: dict[str, list[float]] = {"worktree": [], "none": []}
    SPENT.clear()
    isolated = 0
    for n in range(repeat):
        for mode in ("worktree", "none"):  # alternately: load on the machine hits both
            data = _run(_example(base, mode, n), RunRequest(
                "Add rate limiting to the login endpoint", Scope.FULL_IMPLEMENTATION), mode)
            walls[mode].append(data["baton"]["timing"]["implement"])
            if mode == "worktree":
                for step in data["baton"]["steps"].values():
                    git = step.get("git") or {}
                    isolated += git.get("mode") == "worktree"
    per_phase = sum(sum(SPENT[k]) for k in ("open_tree", "commit_tree", "merge", "discard"))
    out = {"runs_per_mode": float(repeat), "isolated_phases": float(isolated),
           "git_ms_per_isolated_phase": per_phase / max(1, isolated)}
    for k in ("open_tree", "commit_tree", "merge", "discard"):
        out[f"  {k}_p50_ms"] = statistics.median(SPENT[k]) if SPENT[k] else 0.0
    out["implement_wall_worktree_p50_ms"] = statistics.median(walls["worktree"])
    out["implement_wall_none_p50_ms"] = statistics.median(walls["none"])
    out["difference_per_run_ms"] = out["implement_wall_worktree_p50_ms"] - \
        out["implement_wall_none_p50_ms"]
    return out


def _waves_once(base: Path, mode: str, n: int) -> tuple[float, float, int]:
    """(implement wall, critical path, commits made) of one run of the 8-phase plan."""
    deps = [[], [1], [1], [1], [2, 3], [4], [5, 6], [7]]
    root = base / f"waves-{mode}-{n}"
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "baton.toml").write_text(
        '[workflow]\nrunner = "script"\nmax-parallel = 4\n')
    (root / ".gitignore").write_text(".claude/baton-script.json\n")
    (root / ".claude/baton-script.json").write_text('{"implement.*": {"sleep": 0.5}}')
    plan = write_plan(root, deps)
    _repo(root)
    root = Path(os.path.realpath(root))
    data = _run(root, RunRequest("bench", Scope.IMPLEMENT_ONLY, plan_path=str(plan)), mode)
    results = data["workflow_state"]["wave_results"]
    wall = sum(w["duration_ms"] for w in results.values())
    dur = {k.removeprefix("implement.phase-"): v["process_ms"]
           for k, v in data["baton"]["steps"].items()}
    finish: dict[str, float] = {}
    for i, d in enumerate(deps, 1):
        finish[str(i)] = dur[str(i)] + max((finish[str(x)] for x in d), default=0.0)
    commits = subprocess.run(["git", "log", "--first-parent", "--format=%s"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    return float(wall), max(finish.values()), len(commits) - 1


def bench_waves(base: Path, repeat: int) -> dict[str, float]:
    runs: dict[str, list[tuple[float, float, int]]] = {"worktree": [], "none": []}
    for n in range(repeat):
        for mode in ("worktree", "none"):  # alternately
            runs[mode].append(_waves_once(base, mode, n))
    out: dict[str, float] = {}
    for mode, rows in runs.items():
        wall, critical, commits = min(rows, key=lambda r: r[0] / r[1])  # least disturbed
        ratios = [w / c for w, c, _ in rows]
        out[f"{mode}: implement_wall_ms"] = wall
        out[f"{mode}: critical_path_ms"] = critical
        out[f"{mode}: target_ms (1.05x+100)"] = 1.05 * critical + 100
        out[f"{mode}: ratio best"] = min(ratios)
        out[f"{mode}:   ratio p50"] = statistics.median(ratios)
        out[f"{mode}: overhead_ms best"] = wall - critical
        out[f"{mode}: commits_on_branch"] = float(commits)
    return out


def main() -> None:
    # the checkpoint signing key of these runs: never the user's own (runs/signing.py)
    os.environ.setdefault(DATA_DIR_ENV, tempfile.mkdtemp(prefix="baton-bench-key-"))
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"# {platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()} · "
          f"{git} · {time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        for name, fn in (("example workspace, isolated vs in place",
                          lambda: bench_example(base, args.repeat)),
                         ("8-phase seed plan in git", lambda: bench_waves(base, args.repeat))):
            figures = fn()
            print(f"\n## {name}")
            for k, v in figures.items():
                print(f"{k:>34}: {v:.3f}" if k.endswith(("ratio best", "ratio p50"))
                      else f"{k:>34}: {v:.1f}")


if __name__ == "__main__":
    main()

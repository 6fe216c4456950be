"""Time of `baton check` and `baton graph` against a plan's size (issue 32, item 4).

Run: `python benchmarks/bench_plan_size.py [--phases 1000,10000,100000] [--repeat N]
[--json FILE]`.

Each size is one generated workspace holding one plan of N phases in the style of the real
plans (`### Phase N` headings under `## Implementation Phases`, `dependencies: [...]` lines
of one or two ids, status markers and task checkboxes on some phases), as dense as the
100,000-phase plan of the issue: it stays under the default `max-file-size` (4 MiB), so the
plan is really parsed and checked. Every figure is the median of `--repeat` rounds (each
runs every size once, smallest first) of a whole `baton` process (interpreter start and
imports included), cold: `baton check --no-cache` with `BATON_CACHE_DIR` pointed at an empty
directory, so no stored result is replayed.
Printed: wall and CPU seconds per size and the ratio of each size to the one before it (the
median of the rounds' ratios); the exit status is 1 when `baton check`'s ratio of 100k to
10k exceeds 12.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MAX_RATIO = 12.0
"""Most `baton check` of the 100k-phase plan may take, in multiples of the 10k-phase one."""
PLAN = ".claude/specs/001_size/plans/001_plan.md"


def plan_text(n: int) -> str:
    """A plan of `n` phases: every phase declares its dependencies (one in five two of them),
    one in eight is marked complete and has a checked task."""
    out = ["# Plan: size", "", "## Metadata", "- **Date**: 2026-11-28",
           "- **Status**: [IN PROGRESS]", f"- **Estimated Phases**: {n}", "",
           "## Implementation Phases", ""]
    for i in range(1, n + 1):
        done = i % 8 == 0
        out.append(f"### Phase {i}" + (" [COMPLETE]" if done else ""))
        if i == 1:
            out.append("dependencies: []")
        elif i % 5 == 0:
            out.append(f"dependencies: [{i - 1}, {i - 4}]")
        else:
            out.append(f"dependencies: [{i - 1}]")
        if done:
            out.append("- [x] t")
    return "\n".join(out) + "\n"


def make_workspace(root: Path, n: int) -> Path:
    plan = root / PLAN
    plan.parent.mkdir(parents=True)
    plan.write_text(plan_text(n), encoding="utf-8")
    return plan


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, exit code) of one whole process, output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, check=False, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def measure(sizes: list[int], repeat: int) -> dict[str, Any]:
    """Every size and command once per round, `repeat` rounds: load from other processes
    that comes and goes weighs on the sizes of a round alike, and each ratio is the median
    of the rounds' ratios."""
    baton = [sys.executable, "-m", "baton_lsp"]
    runs: dict[tuple[int, str], list[tuple[float, float]]] = {}
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="baton-plan-size-") as tmp:
        env = {**os.environ, "BATON_CACHE_DIR": str(Path(tmp) / "cache")}
        commands: dict[int, dict[str, list[str]]] = {}
        for n in sizes:
            root = Path(tmp) / f"ws{n}"
            plan = make_workspace(root, n)
            rows[str(n)] = {"bytes": plan.stat().st_size}
            commands[n] = {"check": [*baton, "check", "--no-cache", str(root)],
                           "graph": [*baton, "graph", str(plan)]}
        for _ in range(repeat):
            for n in sizes:
                for name, cmd in commands[n].items():
                    wall, cpu, code = timed(cmd, env)
                    if code not in (0, 1):
                        raise RuntimeError(f"baton {name} of {n} phases exited {code}")
                    runs.setdefault((n, name), []).append((wall, cpu))
    for (n, name), values in runs.items():
        rows[str(n)][name] = {"wall_s": statistics.median(v[0] for v in values),
                              "cpu_s": statistics.median(v[1] for v in values),
                              "runs": values}
    for n in sizes:
        row = rows[str(n)]
        print(f"{n:>7} phases ({row['bytes'] / 1e6:.2f} MB): "
              f"check {row['check']['wall_s']:.2f} s wall / {row['check']['cpu_s']:.2f} s "
              f"CPU · graph {row['graph']['wall_s']:.2f} s wall / "
              f"{row['graph']['cpu_s']:.2f} s CPU", flush=True)
    return rows


def ratio(rows: dict[str, Any], big: int, small: int, name: str, which: int) -> float:
    """Median over the rounds of `big`'s time over `small`'s (`which`: 0 wall, 1 CPU)."""
    pairs = zip(rows[str(big)][name]["runs"], rows[str(small)][name]["runs"], strict=True)
    return statistics.median(b[which] / s[which] for b, s in pairs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--phases", default="1000,10000,100000",
                        help="comma list of plan sizes (default: 1000,10000,100000)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    sizes = [int(s) for s in args.phases.split(",") if s.strip()]
    rows = measure(sizes, args.repeat)
    out: dict[str, Any] = {"sizes": rows}
    failed = False
    for big, small in zip(sizes[1:], sizes[:-1], strict=True):
        for name in ("check", "graph"):
            wall, cpu = ratio(rows, big, small, name, 0), ratio(rows, big, small, name, 1)
            out[f"{name} {big}/{small}"] = {"wall": wall, "cpu": cpu}
            print(f"baton {name}: {big}/{small} phases = {wall:.1f}× wall, {cpu:.1f}× CPU")
            if name == "check" and (big, small) == (100_000, 10_000) and wall > MAX_RATIO:
                print(f"  more than {MAX_RATIO:g}×: not linear", file=sys.stderr)
                failed = True
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

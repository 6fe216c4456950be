"""Read-only CLI commands beside `git status`, behind `BENCHMARKS.md`.

Run: `python benchmarks/bench_cli.py [--rounds N] [--runs K] [--json FILE]`.

A copy of the example workspace is made a git repository and given K finished scripted
workflows (`baton run --runner script`, offline). Then, in rotated rounds, each command runs
as a whole process — interpreter start and imports included, as a user or the editor's
terminal sees it: `git status`, `baton status`, `baton status --json`,
`baton checkpoints <id>` and `baton cancel <id>` of a finished run (nothing to stop: it reads
the run and says so). Each row gives the median wall and CPU (user + system of the child)
and the ratio to `git status` in the same round. `-X importtime` totals of each command
are reported too: what a read-only command imports is most of its cost.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "workspace"


def baton(*args: str) -> list[str]:
    return [sys.executable, "-m", "baton_lsp", *args]


def prepare(dest: Path, runs: int) -> list[str]:
    """The example workspace as a committed git repository with `runs` finished workflows;
    their ids."""
    shutil.copytree(EXAMPLE, dest)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@example.invalid"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"],
                ["git", "commit", "-qm", "example workspace"]):
        subprocess.run(cmd, cwd=dest, check=True, env=env)
    for i in range(runs):
        subprocess.run(baton("run", f"Research topic {i}", "--scope", "research-only",
                             "--complexity", "1", "--runner", "script", "--workspace",
                             str(dest)), cwd=dest, check=True, capture_output=True, env=env)
    out = subprocess.run(baton("status", "--json", "--workspace", str(dest)), cwd=dest,
                         check=True, capture_output=True, text=True).stdout
    return [row["workflow_id"] for row in json.loads(out)]


def timed(argv: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one whole process (its output discarded)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def import_ms(argv: list[str], cwd: Path) -> float:
    """Milliseconds the process spent importing (`-X importtime`'s top-level cumulative)."""
    run = subprocess.run([argv[0], "-X", "importtime", *argv[1:]], cwd=cwd,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    total = 0
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _self, cumulative, name = line[len("import time:"):].split("|")
        if not name.startswith("  ") and name.strip() and cumulative.strip().isdigit():
            total += int(cumulative)  # a top-level import (its nested ones are in it)
    return total / 1000


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--runs", type=int, default=5, help="finished workflows in the workspace")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        ws = Path(tmp) / "ws"
        ids = prepare(ws, args.runs)
        wid = ids[0]
        commands = {
            "git status": ["git", "status", "--short"],
            "baton status": baton("status"),
            "baton status --json": baton("status", "--json"),
            "baton checkpoints": baton("checkpoints", wid),
            "baton cancel (finished run)": baton("cancel", wid),
        }
        for argv in commands.values():  # warm the OS file cache and the bytecode
            timed(argv, ws)
        rows: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        names = list(commands)
        for r in range(args.rounds):
            for name in names[r % len(names):] + names[:r % len(names)]:
                rows[name].append(timed(commands[name], ws))
        imports = {name: import_ms(argv, ws) for name, argv in commands.items()
                   if argv[0] == sys.executable}
    git = rows["git status"]
    result: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python "
                   f"{platform.python_version()}, load {os.getloadavg()[0]:.2f}",
        "rounds": args.rounds, "runs": len(ids), "commands": {}}
    print(f"{result['date']} — {result['machine']}; {args.rounds} rounds, {len(ids)} runs")
    print(f"{'command':30} {'wall':>8} {'cpu':>8} {'× git (wall)':>13} {'imports':>9}")
    for name, samples in rows.items():
        wall = statistics.median(w for w, _ in samples)
        cpu = statistics.median(c for _, c in samples)
        ratio = statistics.median(w / g for (w, _), (g, _) in zip(samples, git, strict=True))
        result["commands"][name] = {"wall_s": wall, "cpu_s": cpu, "ratio_to_git": ratio,
                                    "import_ms": imports.get(name)}
        imp = f"{imports[name]:.0f} ms" if name in imports else ""
        print(f"{name:30} {wall:7.3f}s {cpu:7.3f}s {ratio:12.1f}× {imp:>9}")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

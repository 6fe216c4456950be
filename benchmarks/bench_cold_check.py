"""A cold `baton check` beside agnix on one tree, in alternating rounds, wall and CPU.

Run: `python benchmarks/bench_cold_check.py [--tree DIR] [--rounds N] [--baseline SERVER_DIR]`.

Issue 34's corpus target (ShellCheck off, no result cache, within 10× agnix) measured so that
a busy machine weighs on both sides alike: each round runs agnix, this checkout's `baton
check --no-shellcheck --no-cache --format json` and, with `--baseline` (another checkout's
`server/`, run through `PYTHONPATH`), the same check of that code, in an order rotated every
round. CPU is user + system of the child (`RUSAGE_CHILDREN`), which load stretches far less
than wall time. The OS file cache and the compiled `.pyc` files are warmed first. Printed:
medians of wall and CPU, the median of the per-round ratios to agnix, and the load average
before and after.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from bench_check import timed  # type: ignore[import-not-found]  # noqa: E402

AGNIX = Path.home() / ".cache" / "baton-bench-peers" / "venv" / "bin" / "agnix"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, default=REPO.parent / "shared" / "corpus")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline", type=Path, help="another checkout's server/ directory")
    parser.add_argument("--agnix", type=Path, default=AGNIX)
    args = parser.parse_args()
    if not args.tree.is_dir():
        parser.error(f"--tree {args.tree}: not a directory")
    if not args.agnix.is_file():
        parser.error(f"--agnix {args.agnix}: not found (benchmarks/peers.py installs it)")
    if args.baseline is not None and not (args.baseline / "baton_lsp").is_dir():
        parser.error(f"--baseline {args.baseline}: no baton_lsp package there")
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for server in (REPO / "server", args.baseline):
        if server is not None:
            compileall.compile_dir(str(server / "baton_lsp"), quiet=1)
    check = [sys.executable, "-m", "baton_lsp", "check", "--no-shellcheck", "--no-cache",
             "--format", "json", str(args.tree)]
    runs: dict[str, Callable[[], tuple[float, float, int]]] = {
        "agnix": lambda: timed([str(args.agnix), str(args.tree)]),
        "baton": lambda: timed(check, env={"PYTHONPATH": str(REPO / "server")}),
    }
    if args.baseline is not None:
        runs["baseline"] = lambda: timed(check, env={"PYTHONPATH": str(args.baseline)})
    order = list(runs.items())
    for _, run in order:  # warm the OS file cache and the interpreter's files
        run()
    load_before = os.getloadavg()
    rows: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in range(args.rounds):
        for name, run in order[r % len(order):] + order[:r % len(order)]:
            wall, cpu, _ = run()
            rows[name].append((wall, cpu))
    load_after = os.getloadavg()
    print(f"{args.tree}: {args.rounds} rounds; load average before {load_before[0]:.1f} "
          f"(5 min {load_before[1]:.1f}), after {load_after[0]:.1f} (5 min {load_after[1]:.1f})")
    agnix = rows["agnix"]
    for name, values in rows.items():
        wall = statistics.median(v[0] for v in values)
        cpu = statistics.median(v[1] for v in values)
        ratio_wall = statistics.median(v[0] / a[0] for v, a in zip(values, agnix, strict=True))
        ratio_cpu = statistics.median(v[1] / a[1] for v, a in zip(values, agnix, strict=True))
        best = min(v[0] for v in values)
        print(f"  {name:<9} wall {wall * 1000:7.1f} ms (best {best * 1000:6.1f})  "
              f"cpu {cpu * 1000:7.1f} ms   ×{ratio_wall:5.1f} agnix's wall, "
              f"×{ratio_cpu:5.1f} its CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())

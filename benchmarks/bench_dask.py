"""Agent steps on Dask: what the executor costs over running them here.

    python benchmarks/bench_dask.py [--quick]

1. Dispatch overhead per step: the same trivial attempt (`python -c pass`, through the real
   `run_process`, gate and process group included) run one after another by the local
   executor and by the Dask executor on a `local:2` cluster (scheduler in this process, two
   `baton worker` processes on 127.0.0.1); the overhead is the difference of the medians.
2. An 8-phase wave on 2 and 4 workers: eight independent attempts that each sleep `--phase`
   seconds, submitted at once; each worker runs one at a time (`command=1`), so the
   critical path is ceil(8 / workers) × phase. Reported: wall time / critical path, and the
   cluster's start-up (scheduler + workers ready) apart.
3. Memory: the resident set (VmRSS) of each `baton worker` process after the wave.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "server"))

from baton_lsp.model.config import DaskSettings  # noqa: E402
from baton_lsp.workflow.executors import Executor, StepLaunch  # noqa: E402
from baton_lsp.workflow.executors.dask import DaskExecutor  # noqa: E402
from baton_lsp.workflow.executors.local import LocalExecutor  # noqa: E402


def launch(root: Path, n: int, code: str) -> StepLaunch:
    sid = f"research.{n}"
    contract = {"BATON_WORKFLOW_ID": "bench_dask", "BATON_STEP_ID": sid,
                "BATON_WORKSPACE": str(root), "BATON_ATTEMPT": "1"}
    return StepLaunch(workflow_id="bench_dask", sid=sid, state="research", attempt=1,
                      runner="command", root=root, cwd=root,
                      artifact=root / "specs" / f"{n}.md",
                      argv=[sys.executable, "-c", code], env={**os.environ, **contract},
                      stdin=None, contract=contract, timeout=600, stall_timeout=None,
                      grace=1.0, remote=True)


async def one(executor: Executor, step: StepLaunch) -> float:
    t0 = time.perf_counter()
    out = await executor.execute(step, on_line=lambda line: None, on_start=lambda pid: None,
                                 cancel=asyncio.Event(), stop=asyncio.Event())
    assert out.outcome.exit_code == 0, out.outcome
    return time.perf_counter() - t0


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def cluster(root: Path, workers: int) -> tuple[DaskExecutor, float]:
    executor = DaskExecutor(DaskSettings(scheduler=f"local:{workers}"), root, lambda s: None)
    t0 = time.perf_counter()
    await executor.client()
    return executor, time.perf_counter() - t0


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-dask-") as tmp:
        root = Path(os.path.realpath(tmp))
        os.environ.setdefault("BATON_WORKER_DIR", str(root / "worker-dir"))
        steps = 10 if args.quick else 40
        local = LocalExecutor()
        here = [await one(local, launch(root, i, "pass")) for i in range(steps)]
        executor, start = await cluster(root, 2)
        try:
            await one(executor, launch(root, 0, "pass"))  # warm: the workers' first import
            there = [await one(executor, launch(root, i, "pass")) for i in range(steps)]
        finally:
            await executor.close()
        print(f"dispatch, {steps} trivial steps one after another: local p50 "
              f"{statistics.median(here) * 1000:.1f} ms, dask p50 "
              f"{statistics.median(there) * 1000:.1f} ms -> overhead "
              f"{(statistics.median(there) - statistics.median(here)) * 1000:.1f} ms per step "
              f"(local:2 ready in {start:.2f} s)")
        for workers in (2, 4):
            executor, start = await cluster(root, workers)
            try:
                await asyncio.gather(*(one(executor, launch(root, 100 + i, "pass"))
                                       for i in range(workers)))  # warm every worker
                code = f"import time; time.sleep({args.phase})"
                t0 = time.perf_counter()
                await asyncio.gather(*(one(executor, launch(root, i, code)) for i in range(8)))
                wall = time.perf_counter() - t0
                rss = [rss_mb(pid) for pid in executor.worker_pids]
            finally:
                await executor.close()
            critical = math.ceil(8 / workers) * args.phase
            print(f"8-phase wave of {args.phase:g} s phases on {workers} workers: wall "
                  f"{wall:.2f} s, critical path {critical:g} s -> x{wall / critical:.3f} "
                  f"(+ cluster start-up {start:.2f} s); RSS per worker "
                  f"{statistics.mean(rss):.0f} MB (max {max(rss):.0f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer dispatch samples")
    parser.add_argument("--phase", type=float, default=3.0, help="seconds each phase sleeps")
    asyncio.run(main(parser.parse_args()))

"""Following workflows from the language server: latency and idle cost.

    python benchmarks/bench_lsp_runs.py [--quick]

1. Checkpoint write → `workspace/codeLens/refresh`: this process holds a workflow's engine
   lock and writes checkpoints exactly as the engine does (`CheckpointStore.save`: temp
   file, fsync, rename, fsync of the directory); the clock runs from just before the save
   until the server's refresh request arrives on the client's pipe (p50 / p95 / max).
2. Server CPU while following 10 running workflows: ten `baton run` processes launched by
   the server (`baton.server.workflow.start`), each with its research agent asleep, then the
   server's own user+system CPU time over an idle window, as % of one core.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

from bench_lsp import Client, pct  # noqa: E402

from baton_lsp.runs.signing import DATA_DIR_ENV  # noqa: E402
from baton_lsp.runs.store import CheckpointStore  # noqa: E402

CAPS = {"textDocument": {"publishDiagnostics": {"versionSupport": True}},
        "workspace": {"configuration": True, "codeLens": {"refreshSupport": True}},
        "window": {"workDoneProgress": True}}


class RunClient(Client):
    """Answers progress-token creation and records when each message arrived."""

    def initialize(self, trusted: bool = False) -> float:  # type: ignore[override]
        self.request("initialize", {
            "processId": None, "rootUri": self.root.as_uri(), "capabilities": CAPS,
            "workspaceFolders": [{"uri": self.root.as_uri(), "name": "ws"}],
            "initializationOptions": {"trusted": trusted}})
        self.notify("initialized", {})
        return time.perf_counter() - self.t0

    def wait_for(self, method: str, timeout: float = 30.0) -> float:
        """Time at which the next `method` message is taken off the pipe."""
        end = time.perf_counter() + timeout
        while True:
            msg = self.wait(timeout=max(0.01, end - time.perf_counter()))
            if msg.get("method") == method:
                return time.perf_counter()

    def drain(self, seconds: float) -> None:
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            try:
                self.wait(timeout=max(0.01, end - time.perf_counter()))
            except Exception:
                return

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def workspace(tmp: Path, behaviour: dict[str, Any] | None = None) -> Path:
    root = tmp / "ws"
    shutil.copytree(REPO / "examples" / "workspace", root)
    if behaviour is not None:
        (root / ".claude" / "baton-script.json").write_text(json.dumps(behaviour))
    return root


def lens_latency(samples: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = workspace(Path(tmp))
        store = CheckpointStore(root, "bench_wf_1")
        store.acquire()  # a live engine, as far as the server can tell
        data = {"schema_version": "2.1", "status": "in_progress",
                "workflow_description": "bench", "updated_at": "2026-11-21T00:00:00Z",
                "state_machine": {"current_state": "implement"},
                "baton": {"steps": {}, "paths": {}}}
        store.save(data, "created")
        client = RunClient(root)
        client.initialize()
        client.drain(2.0)  # indexing, the first scan
        out = []
        for i in range(samples):
            data["baton"]["steps"][f"implement.phase-{i}"] = {"state": "implement",
                                                              "status": "done"}
            t0 = time.perf_counter()
            store.save(data, f"step {i}")
            out.append((client.wait_for("workspace/codeLens/refresh") - t0) * 1000)
            client.drain(0.05)
        client.close()
        store.release()
        return out


def idle_cpu(workflows: int, window: float) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        root = workspace(Path(tmp), {"research.1": {"sleep": window + 60}})
        client = RunClient(root)
        client.initialize(trusted=True)
        client.drain(1.0)
        started = []
        for i in range(workflows):
            res = client.request("workspace/executeCommand", {
                "command": "baton.server.workflow.start",
                "arguments": [{"description": f"bench {i}", "scope": "research-only",
                               "complexity": 1}]})
            started.append(res["workflow_id"])
        client.drain(5.0)  # every engine reaches its sleeping research agent
        before = client.cpu_seconds()
        t0 = time.perf_counter()
        client.drain(window)
        cpu = client.cpu_seconds() - before
        elapsed = time.perf_counter() - t0
        for wid in started:
            client.request("workspace/executeCommand", {
                "command": "baton.server.workflow.cancel", "arguments": [{"id": wid}]})
        client.close()
        return 100 * cpu / elapsed, len(started)


def main() -> None:
    # the checkpoint signing key of these runs: never the user's own (runs/signing.py)
    os.environ.setdefault(DATA_DIR_ENV, tempfile.mkdtemp(prefix="baton-bench-key-"))
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    samples = 20 if args.quick else 100
    lat = lens_latency(samples)
    print(f"checkpoint write -> codeLens/refresh ({samples} writes): "
          f"p50 {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms, "
          f"max {max(lat):.1f} ms  (target p95 <= 200 ms)")
    window = 5.0 if args.quick else 20.0
    cpu, n = idle_cpu(10, window)
    print(f"server CPU following {n} running workflows, idle {window:.0f} s: "
          f"{cpu:.2f} % of one core  (target < 5 %)")


if __name__ == "__main__":
    main()

"""Language-server benchmarks: start-up, edit→diagnostics latency, hover/lens latency, RSS.

Runs the real server (`python -m baton_lsp lsp`) as a subprocess and talks JSON-RPC over its
pipes, so every figure includes serialisation and process boundaries, as an editor sees it.

    python benchmarks/bench_lsp.py [--quick] [--startup [--runs N] [--baseline DIR] | …]

Figures printed: spawn→initialize response and spawn→first diagnostics (median of 10);
didChange→publishDiagnostics p50/p95 with the debounce set to 0 (largest corpus plan and a
generated 5,000-line plan); hover and code-lens p95; RSS after indexing 2,000 plans; RSS
drift over a 10,000-random-edit session. `--startup`: spawn → initialize and → first
diagnostics next to the pygls floor and yaml-language-server (npm, via `peers.py`),
alternately, with an empty and a warm result cache. `--indexing`: spawn → "indexed" for
2,000 plans, cold then warm. `--load`: 2,000 open plans and a burst of 5,000 edits, with
diagnostics, hover, definition, code-lens and workspace-symbol latencies probed during the
burst (see `load`). `--huge`: a 55 MB plan opened in the editor.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
CORPUS = REPO.parent / "shared" / "corpus"
sys.path.insert(0, str(REPO / "benchmarks"))


class Client:
    """A minimal blocking LSP client: enough to time requests and notifications."""

    def __init__(self, root: Path, settings: dict[str, Any] | None = None,
                 log_level: str = "WARNING", env: dict[str, str] | None = None,
                 command: list[str] | None = None) -> None:
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            command or [sys.executable, *PROFILE, "-m", "baton_lsp", "lsp",
                        "--log-level", log_level],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, **(env or {})})
        self.inbox: queue.Queue[dict[str, Any]] = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.root = root
        self.settings = settings or {}
        self.only_uris: set[str] | None = None
        """When set, diagnostics of other documents are dropped unread (see `load`)."""

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while True:
                line = out.readline()
                if not line:
                    return
                if line in (b"\r\n", b"\n"):
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = out.read(length)
            if self.only_uris is not None and b'"textDocument/publishDiagnostics"' in body:
                found = re.search(rb'"uri": ?"([^"]*)"', body)
                if found and found.group(1).decode() not in self.only_uris:
                    continue  # not timed: left undecoded, so the client keeps up
            self.inbox.put(json.loads(body))

    def send(self, msg: dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()

    def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        rid = self.next_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            msg = self.wait()
            if msg.get("id") == rid and "method" not in msg:
                return msg.get("result")

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, timeout: float = 120.0) -> dict[str, Any]:
        msg = self.inbox.get(timeout=timeout)
        if "method" in msg and "id" in msg:  # a server→client request: answer it
            result: Any = None
            if msg["method"] == "workspace/configuration":
                result = [self.settings for _ in msg["params"]["items"]]
            self.send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
        return msg

    def wait_diagnostics(self, uri: str, version: int | None = None) -> dict[str, Any]:
        while True:
            msg = self.wait()
            if msg.get("method") == "textDocument/publishDiagnostics":
                p = msg["params"]
                if p["uri"] == uri and (version is None or p.get("version") == version):
                    return p

    def initialize(self) -> float:
        caps = {"textDocument": {"publishDiagnostics": {"versionSupport": True},
                                 "hover": {"contentFormat": ["markdown"]}},
                "workspace": {"configuration": True}, "window": {"workDoneProgress": False}}
        self.request("initialize", {"processId": None, "rootUri": self.root.as_uri(),
                                    "capabilities": caps,
                                    "workspaceFolders": [{"uri": self.root.as_uri(),
                                                          "name": "ws"}],
                                    "initializationOptions": {"settings": self.settings}})
        elapsed = time.perf_counter() - self.t0
        self.notify("initialized", {})
        return elapsed

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def close(self) -> None:
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            self.proc.wait(timeout=10)
        except Exception:
            self.proc.kill()


ENV: dict[str, str] = {}
PROFILE: list[str] = (["-m", "cProfile", "-o", os.environ["BENCH_LSP_PROFILE"]]
                      if os.environ.get("BENCH_LSP_PROFILE") else [])
"""BENCH_LSP_PROFILE=FILE: profile the server's event-loop thread into FILE (cProfile)."""


def use_bytecode() -> None:
    """Servers start from compiled bytecode, as after `pip install`: Baton's modules are
    compiled once here and `PYTHONDONTWRITEBYTECODE` is dropped for the servers started
    (otherwise every start would compile Baton from source while pygls, installed
    compiled, would not)."""
    import compileall

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(str(REPO / "server" / "baton_lsp"), quiet=1)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def make_workspace(root: Path, plans: int = 1) -> Path:
    from bench_check import make_workspace as write  # type: ignore[import-not-found]

    write(root, plans)
    return root


def open_doc(c: Client, path: Path) -> str:
    uri = path.as_uri()
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "markdown", "version": 1,
        "text": path.read_text(encoding="utf-8")}})
    return uri


def startup(root: Path, plan: Path, runs: int) -> tuple[list[float], list[float]]:
    init, first = [], []
    for _ in range(runs):
        c = Client(root, {"debounce": 0})
        init.append(c.initialize() * 1000)
        uri = open_doc(c, plan)
        c.wait_diagnostics(uri, 1)
        first.append((time.perf_counter() - c.t0) * 1000)
        c.close()
    return init, first


YAML_SAMPLE = "name: sample\nitems: [1, 2\nother: 3\n"
"""One syntax error (an unclosed `[`): yaml-language-server's first diagnostic."""


def first_diagnostics(command: list[str] | None, root: Path, doc: Path, language: str,
                      settings: dict[str, Any], env: dict[str, str] | None = None
                      ) -> tuple[float, float, int]:
    """(spawn → initialize response, spawn → first publishDiagnostics of `doc`, how many
    diagnostics it had), in ms, for one fresh server process."""
    c = Client(root, settings, env=env, command=command)
    init = c.initialize() * 1000
    uri = doc.as_uri()
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": language, "version": 1,
        "text": doc.read_text(encoding="utf-8")}})
    params = c.wait_diagnostics(uri)
    first = (time.perf_counter() - c.t0) * 1000
    c.close()
    return init, first, len(params["diagnostics"])


def startup_compare(root: Path, plan: Path, runs: int,
                    baseline: Path | None = None) -> dict[str, Any]:
    """Baton's start-up next to the pygls floor and yaml-language-server, measured
    alternately (floor, Baton with an empty cache, Baton with a warm cache, yaml-ls, …) so
    that load from other processes hits every server alike; medians and ratios. With
    `baseline` (the `server/` directory of another Baton checkout) that Baton starts in the
    same rounds too, so a before/after comparison shares the machine's load."""
    import peers  # type: ignore[import-not-found]

    yaml_doc = root / "sample.yaml"
    yaml_doc.write_text(YAML_SAMPLE, encoding="utf-8")
    floor_cmd = [sys.executable, str(peers.FLOOR_SERVER)]
    yaml_cmd = peers.yaml_language_server()
    warm_cache = Path(tempfile.mkdtemp(prefix="baton-bench-cache-"))
    settings = {"debounce": 0}
    old = {} if baseline is None else {"PYTHONPATH": str(baseline)}
    old_warm = Path(tempfile.mkdtemp(prefix="baton-bench-cache-"))
    for cache, extra in [(warm_cache, {}), (old_warm, old)][:2 if baseline else 1]:
        first_diagnostics(None, root, plan, "markdown", settings,
                          {"BATON_CACHE_DIR": str(cache), **extra})  # fills the warm cache
        # … and waits until indexing saved it: a second server sees every file cached.
        c = Client(root, settings, log_level="INFO",
                   env={"BATON_CACHE_DIR": str(cache), **extra})
        c.initialize()
        while True:
            msg = c.wait(timeout=600)
            if msg.get("method") == "window/logMessage" and "indexed" in msg["params"]["message"]:
                break
        c.close()

    def empty(extra: dict[str, str]) -> tuple[float, float, int]:
        cold = Path(tempfile.mkdtemp(prefix="baton-bench-cold-"))
        try:
            return first_diagnostics(None, root, plan, "markdown", settings,
                                     {"BATON_CACHE_DIR": str(cold), **extra})
        finally:
            shutil.rmtree(cold, ignore_errors=True)

    runners = {
        "pygls floor": lambda: first_diagnostics(floor_cmd, root, plan, "markdown", {}),
        "baton (empty cache)": lambda: empty({}),
        "baton (warm cache)": lambda: first_diagnostics(
            None, root, plan, "markdown", settings, {"BATON_CACHE_DIR": str(warm_cache)}),
        "yaml-language-server": lambda: first_diagnostics(yaml_cmd, root, yaml_doc, "yaml", {}),
    }
    if baseline is not None:
        runners["baseline (empty cache)"] = lambda: empty(old)
        runners["baseline (warm cache)"] = lambda: first_diagnostics(
            None, root, plan, "markdown", settings, {"BATON_CACHE_DIR": str(old_warm), **old})
    figures: dict[str, list[tuple[float, float, int]]] = {name: [] for name in runners}
    names = list(runners)
    for round_no in range(runs):  # each round in another order: no server always goes first
        turn = round_no % len(names)
        for name in names[turn:] + names[:turn]:
            figures[name].append(runners[name]())
    shutil.rmtree(warm_cache, ignore_errors=True)
    shutil.rmtree(old_warm, ignore_errors=True)
    out: dict[str, Any] = {}
    for name, rows in figures.items():
        out[name] = {"initialize_ms": statistics.median(r[0] for r in rows),
                     "first_diagnostics_ms": statistics.median(r[1] for r in rows),
                     "diagnostics": rows[0][2]}
    floor, yaml_rows = figures["pygls floor"], figures["yaml-language-server"]
    for name in [n for n in figures if n.startswith(("baton", "baseline"))]:
        rows = figures[name]  # paired: each Baton run with the floor and yaml-ls of its round
        out[name]["initialize_minus_floor_ms"] = statistics.median(
            r[0] - f[0] for r, f in zip(rows, floor, strict=True))
        out[name]["first_diagnostics_ratio"] = statistics.median(
            r[1] / y[1] for r, y in zip(rows, yaml_rows, strict=True))
    return out


def edit_latency(root: Path, plan: Path, edits: int) -> tuple[list[float], list[float],
                                                              list[float]]:
    c = Client(root, {"debounce": 0})
    c.initialize()
    uri = open_doc(c, plan)
    c.wait_diagnostics(uri, 1)
    lines = plan.read_text(encoding="utf-8").split("\n")
    change, hover, lens = [], [], []
    for version in range(2, edits + 2):
        line = random.randrange(len(lines))
        t = time.perf_counter()
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": line, "character": 0},
                                          "end": {"line": line, "character": 0}},
                                "text": "x"}]})
        c.wait_diagnostics(uri, version)
        change.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        c.request("textDocument/hover", {"textDocument": {"uri": uri},
                                         "position": {"line": line, "character": 1}})
        hover.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        c.request("textDocument/codeLens", {"textDocument": {"uri": uri}})
        lens.append((time.perf_counter() - t) * 1000)
    c.close()
    return change, hover, lens


def rss_after_indexing(tmp: Path, plans: int) -> tuple[float, float]:
    root = make_workspace(tmp / f"ws{plans}", plans)
    c = Client(root, {"shellcheck": "off"}, log_level="INFO")
    t = time.perf_counter()
    c.initialize()
    while True:  # the server logs one line when indexing is done
        msg = c.wait(timeout=600)
        if msg.get("method") == "window/logMessage" and "indexed" in msg["params"]["message"]:
            break
    elapsed = time.perf_counter() - t
    rss = c.rss_mb()
    c.close()
    return rss, elapsed


def indexing_time(root: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Spawn → the server's "indexed" log line (every file of `root` checked or taken from
    the result cache) and initialize response → that line, in seconds, and the line."""
    c = Client(root, {"shellcheck": "auto"}, log_level="INFO", env=env)
    init = c.initialize()
    while True:
        msg = c.wait(timeout=600)
        if msg.get("method") == "window/logMessage" and "indexed" in msg["params"]["message"]:
            break
    elapsed = time.perf_counter() - c.t0
    c.close()
    return elapsed, elapsed - init, msg["params"]["message"]


def indexing_compare(tmp: Path, plans: int, runs: int) -> dict[str, Any]:
    """Start-up indexing of a generated workspace: once with an empty result cache (which
    fills it), then `runs` times warm; whole server processes from spawn."""
    root = make_workspace(tmp / f"ws{plans}-indexing", plans)
    cache = Path(tempfile.mkdtemp(prefix="baton-bench-cache-"))
    env = {"BATON_CACHE_DIR": str(cache)}
    try:
        cold = indexing_time(root, env)[0]
        warm = [indexing_time(root, env) for _ in range(runs)]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {"cold_s": cold, "warm_s": statistics.median(w[0] for w in warm),
            "warm_max_s": max(w[0] for w in warm),
            "warm_after_initialize_s": statistics.median(w[1] for w in warm),
            "log": warm[-1][2]}


def edit_session(root: Path, plan: Path, edits: int) -> tuple[float, float, bool]:
    """Random edits that keep the document near its original size.

    Each edit inserts a snippet at the start of a random line or removes a snippet inserted
    earlier (at most 20 live), so memory growth measures the server, not a growing file.
    """
    c = Client(root, {"debounce": 0}, env=ENV)
    c.initialize()
    uri = open_doc(c, plan)
    c.wait_diagnostics(uri, 1)
    n_lines = len(plan.read_text(encoding="utf-8").split("\n"))
    rng = random.Random(7)
    live: list[tuple[int, int]] = []  # (line, length) of inserted snippets, newest last
    snippets = ["x", "- [ ] t ", "[", "dependencies: [1, 9] ", "### Phase 99 ", "**Status**: "]
    settled = 0.0
    for version in range(2, edits + 2):
        if live and (len(live) >= 20 or rng.random() < 0.5):
            line, length = live.pop()
            change = {"range": {"start": {"line": line, "character": 0},
                                "end": {"line": line, "character": length}}, "text": ""}
        else:
            line = rng.randrange(n_lines)
            if any(ln == line for ln, _ in live):
                line = (line + 1) % n_lines
            if any(ln == line for ln, _ in live):
                continue
            text = rng.choice(snippets)
            live.append((line, len(text)))
            change = {"range": {"start": {"line": line, "character": 0},
                                "end": {"line": line, "character": 0}}, "text": text}
        c.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                            "contentChanges": [change]})
        if version % 50 == 0 or version == edits + 1:
            c.wait_diagnostics(uri, version)
        if version == 1001:
            settled = c.rss_mb()
    final = c.rss_mb()
    alive = c.proc.poll() is None
    c.close()
    return settled, final, alive


def load(tmp: Path, n_files: int, n_edits: int, probe_every: int = 100,
         debounce: int = 0) -> dict[str, Any]:
    """2,000 open files (plans, commands checked by ShellCheck, agents) and a burst of 5,000
    edits (issue 18): probe latencies while the server is busy with the burst.

    The burst goes out without waiting (as a search-and-replace over open files or a
    `git checkout` sends it); every `probe_every` edits the client times, while the rest of
    the burst is still being worked through: an edit to one focused plan until its
    diagnostics for that version arrive, then hover, definition and code lens on a random
    open plan; `workspace/symbol` is timed during and after the burst."""
    from bench_check import make_workspace as write  # type: ignore[import-not-found]

    # 70 % plans, 20 % commands whose bash blocks ShellCheck checks, 10 % agents.
    root = tmp / f"load{n_files}"
    write(root, n_files * 7 // 10, n_agents=n_files // 10,
          n_commands=n_files - n_files * 7 // 10 - n_files // 10)
    plans = sorted([*root.glob(".claude/specs/*/plans/*.md"),
                    *root.glob(".claude/commands/*.md"), *root.glob(".claude/agents/*.md")])
    c = Client(root, {"debounce": debounce}, log_level="INFO")
    c.initialize()
    while True:
        msg = c.wait(timeout=1800)
        if msg.get("method") == "window/logMessage" and "indexed" in msg["params"]["message"]:
            break
    out: dict[str, Any] = {}
    texts = {p: p.read_text(encoding="utf-8") for p in plans}
    t = time.perf_counter()
    uris = [open_doc(c, p) for p in plans]
    c.request("workspace/symbol", {"query": "zz-none"})  # answered after every didOpen
    out["open"] = time.perf_counter() - t
    versions = dict.fromkeys(uris, 1)
    lines = {u: texts[p].count("\n") for u, p in zip(uris, plans, strict=True)}
    plan_uris = [u for u in uris if "/plans/" in u]
    focus = plan_uris[0]
    # A Python client that decodes thousands of publications would time itself: only the
    # focused plan's are read (VS Code reads them all, in a process of its own).
    c.only_uris = {focus}
    rng = random.Random(18)
    probes: dict[str, list[float]] = {"diagnostics": [], "hover": [], "definition": [],
                                      "codeLens": [], "symbol": []}

    def edit(uri: str) -> None:
        versions[uri] += 1
        line = rng.randrange(1, lines[uri])
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": versions[uri]},
            "contentChanges": [{"range": {"start": {"line": line, "character": 0},
                                          "end": {"line": line, "character": 0}},
                                "text": rng.choice(["x", "- [ ] t ", "["])}]})

    def timed(name: str, method: str, params: Any) -> None:
        t = time.perf_counter()
        c.request(method, params)
        probes[name].append((time.perf_counter() - t) * 1000)

    t_burst = time.perf_counter()
    for i in range(1, n_edits + 1):
        edit(rng.choice(uris))
        if i % probe_every == 0:
            edit(focus)
            t = time.perf_counter()
            c.wait_diagnostics(focus, versions[focus])
            probes["diagnostics"].append((time.perf_counter() - t) * 1000)
            uri = rng.choice(plan_uris)
            dep = {"textDocument": {"uri": uri}, "position": {"line": 40, "character": 17}}
            timed("hover", "textDocument/hover", dep)
            timed("definition", "textDocument/definition", dep)
            timed("codeLens", "textDocument/codeLens", {"textDocument": {"uri": uri}})
            if i % (probe_every * 10) == 0:
                timed("symbol", "workspace/symbol", {"query": "phase 3"})
    c.request("workspace/symbol", {"query": "zz-none"})  # every edit has been read
    out["burst"] = time.perf_counter() - t_burst
    t = time.perf_counter()
    timed("symbol", "workspace/symbol", {"query": "phase 3"})
    out["symbol_after"] = (time.perf_counter() - t) * 1000
    out["probes"] = probes
    out["rss"] = c.rss_mb()
    out["alive"] = c.proc.poll() is None
    c.close()
    return out


def huge_document(tmp: Path, megabytes: int = 55) -> None:
    """A plan of `megabytes` MB opened in the editor (over the 4 MiB limit): time to its
    one diagnostic, RSS, and the latency of edits and requests on it afterwards."""
    root = make_workspace(tmp / "huge", 3)
    uri = (root / ".claude/specs/0001_feature/plans/001_plan.md").as_uri()
    chunk = "### Phase 1: again\ndependencies: [9]\n- [ ] x\n"
    text = "# Big\n\n" + chunk * (megabytes * 1_000_000 // len(chunk))
    c = Client(root, {"debounce": 0})
    c.initialize()
    t = time.perf_counter()
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": "markdown", "version": 1, "text": text}})
    first = c.wait_diagnostics(uri, 1)
    opened = time.perf_counter() - t
    edits, requests = [], []
    for version in range(2, 12):
        t = time.perf_counter()
        c.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": {"line": 2, "character": 0},
                                          "end": {"line": 2, "character": 0}}, "text": "x"}]})
        c.wait_diagnostics(uri, version)
        edits.append((time.perf_counter() - t) * 1000)
        for method in ("textDocument/codeLens", "textDocument/documentSymbol",
                       "textDocument/foldingRange"):
            t = time.perf_counter()
            c.request(method, {"textDocument": {"uri": uri}})
            requests.append((time.perf_counter() - t) * 1000)
    print(f"{len(text) / 1e6:.0f} MB plan opened in the editor: "
          f"{[d['code'] for d in first['diagnostics']]} after {opened:.1f} s, RSS "
          f"{c.rss_mb():.0f} MB; edit → diagnostics p50 {pct(edits, .5):.0f} ms; lens, "
          f"symbols and folding p95 {pct(requests, .95):.0f} ms")
    c.close()


def print_load(n_files: int, n_edits: int, res: dict[str, Any]) -> None:
    probes = res["probes"]
    print(f"load: {n_files} files open (70 % plans, 20 % commands, 10 % agents), burst of "
          f"{n_edits} edits (probes every 100 edits), debounce 0")
    print(f"  {n_files} didOpen read and answered behind: {res['open']:.1f} s; burst sent and "
          f"read, probes included: {res['burst']:.1f} s; RSS {res['rss']:.0f} MB, "
          f"alive={res['alive']}")
    for name, target in (("diagnostics", 50), ("hover", 100), ("definition", 100),
                         ("codeLens", 100), ("symbol", 1000)):
        values = probes[name]
        if values:
            print(f"  {name:<11} n={len(values):<3} p50 {pct(values, .5):7.1f} ms  p95 "
                  f"{pct(values, .95):7.1f} ms  max {max(values):7.1f} ms  (target p95 "
                  f"<= {target} ms)")
    print(f"  workspace/symbol after the burst: {res['symbol_after']:.1f} ms (target <= 1000)")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--only-latency", action="store_true",
                        help="run only the edit/hover/lens latency figures")
    parser.add_argument("--arena-max", type=int, help="MALLOC_ARENA_MAX for the server")
    parser.add_argument("--only-session", action="store_true",
                        help="run only the random-edit session")
    parser.add_argument("--startup", action="store_true",
                        help="run only the start-up comparison with the pygls floor and "
                        "yaml-language-server (installed from npm into a cache directory)")
    parser.add_argument("--runs", type=int, help="rounds of the start-up comparison")
    parser.add_argument("--baseline", type=Path,
                        help="with --startup: the server/ directory of another Baton checkout, "
                        "started in the same rounds (through PYTHONPATH)")
    parser.add_argument("--indexing", action="store_true",
                        help="run only the start-up indexing of 2,000 plans, cold then warm")
    parser.add_argument("--load", action="store_true",
                        help="run only the load figures: 2,000 open plans, 5,000 edits")
    parser.add_argument("--load-files", type=int, default=2000)
    parser.add_argument("--load-edits", type=int, default=5000)
    parser.add_argument("--huge", action="store_true",
                        help="run only the 55 MB document figures")
    args = parser.parse_args()
    if args.baseline is not None and not (args.baseline / "baton_lsp").is_dir():
        parser.error(f"--baseline {args.baseline}: no baton_lsp package there")
    use_bytecode()
    if args.baseline is not None:
        import compileall

        compileall.compile_dir(str(args.baseline / "baton_lsp"), quiet=1)
    # Servers share a result cache of this run's own (figures that need it empty or warm
    # set their own), never the user's.
    os.environ["BATON_CACHE_DIR"] = tempfile.mkdtemp(prefix="baton-bench-cache-")
    try:
        measure(args)
    finally:
        shutil.rmtree(os.environ.pop("BATON_CACHE_DIR"), ignore_errors=True)


def measure(args: argparse.Namespace) -> None:
    if args.huge:
        with tempfile.TemporaryDirectory() as tmpdir:
            huge_document(Path(tmpdir))
        return
    if args.load:
        with tempfile.TemporaryDirectory() as tmpdir:
            res = load(Path(tmpdir), args.load_files, args.load_edits)
        print_load(args.load_files, args.load_edits, res)
        return
    runs = 3 if args.quick else 10
    random.seed(1)
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        from bench_check import plan_text  # type: ignore[import-not-found]

        root = make_workspace(tmp / "small", 1)
        big = root / ".claude/specs/900_big/plans/001-big-plan.md"
        big.parent.mkdir(parents=True, exist_ok=True)
        big.write_text(plan_text(200), encoding="utf-8")
        corpus_plans = sorted((CORPUS / ".claude").rglob("*.md"), key=lambda p: p.stat().st_size)
        largest = None
        if corpus_plans:
            src = next(p for p in reversed(corpus_plans) if "/specs/" in str(p))
            largest = root / ".claude/specs/901_corpus/plans" / src.name
            largest.parent.mkdir(parents=True, exist_ok=True)
            largest.write_text(src.read_text(encoding="utf-8"), encoding="utf-8")

        if args.arena_max:
            ENV["MALLOC_ARENA_MAX"] = str(args.arena_max)
        if args.only_session:
            settled, final, alive = edit_session(root, largest or big,
                                                 2000 if args.quick else 10000)
            print(f"random-edit session: alive={alive}, RSS after 1,000 edits {settled:.0f} MB, "
                  f"at the end {final:.0f} MB ({(final - settled) / settled * 100:+.1f} %)")
            return
        if args.indexing:
            got = indexing_compare(tmp, 500 if args.quick else 2000, args.runs or 5)
            print(f"start-up indexing, spawn → indexed, {500 if args.quick else 2000} plans: "
                  f"empty cache {got['cold_s']:.2f} s, warm {got['warm_s']:.2f} s (max "
                  f"{got['warm_max_s']:.2f}; target ≤ 1 s: "
                  f"{'met' if got['warm_s'] <= 1 else 'MISSED'}; after the initialize response "
                  f"{got['warm_after_initialize_s']:.2f} s) — {got['log']}")
            return
        if args.startup:
            plan = largest or big
            got = startup_compare(root, plan, args.runs or runs, args.baseline)
            print(f"start-up, medians of {args.runs or runs} alternating rounds "
                  f"(opened: {plan.name}; yaml-language-server: a YAML file with one error)")
            for name, row in got.items():
                print(f"  {name:<22} initialize {row['initialize_ms']:6.0f} ms   first "
                      f"diagnostics {row['first_diagnostics_ms']:6.0f} ms "
                      f"({row['diagnostics']} diagnostics)")
            for name in [n for n in got if n.startswith(("baton", "baseline"))]:
                row = got[name]
                print(f"  {name}, median of the rounds: initialize − floor = "
                      f"{row['initialize_minus_floor_ms']:+.0f} ms (target ≤ +30); first "
                      f"diagnostics / yaml-language-server = {row['first_diagnostics_ratio']:.2f}"
                      " (target ≤ 1.00)")
            return
        if args.only_latency:
            for label, path in [("5,000-line plan", big), ("largest corpus plan", largest)]:
                if path is None:
                    continue
                change, hover, lens = edit_latency(root, path, 100)
                print(f"{label}: didChange p50 {pct(change, .5):.1f} p95 {pct(change, .95):.1f}"
                      f" ms; hover p95 {pct(hover, .95):.1f}; lens p95 {pct(lens, .95):.1f}")
            return
        init, first = startup(root, big if largest is None else largest, runs)
        print(f"spawn → initialize response: median {statistics.median(init):.0f} ms")
        print(f"spawn → first diagnostics of an opened plan: median "
              f"{statistics.median(first):.0f} ms")
        targets = [("5,000-line plan", big)] + ([("largest corpus plan", largest)]
                                               if largest else [])
        for label, path in targets:
            n = 50 if args.quick else 200
            change, hover, lens = edit_latency(root, path, n)
            print(f"didChange → publishDiagnostics ({label}, {n} edits): p50 "
                  f"{pct(change, .5):.1f} ms, p95 {pct(change, .95):.1f} ms")
            print(f"hover ({label}): p95 {pct(hover, .95):.1f} ms; code lens p95 "
                  f"{pct(lens, .95):.1f} ms")
        rss, elapsed = rss_after_indexing(tmp, 500 if args.quick else 2000)
        print(f"RSS after indexing {500 if args.quick else 2000} plans: {rss:.0f} MB "
              f"(indexing took {elapsed:.1f} s)")
        huge_document(tmp)
        settled, final, alive = edit_session(root, largest or big,
                                             2000 if args.quick else 10000)
        drift = (final - settled) / settled * 100 if settled else float("nan")
        print(f"random-edit session: alive={alive}, RSS after 1,000 edits {settled:.0f} MB, "
              f"at the end {final:.0f} MB ({drift:+.1f} %)")


if __name__ == "__main__":
    main()

"""Parse + check timings behind `BENCHMARKS.md`.

Run: `python benchmarks/bench_check.py [--corpus DIR] [--repeat N] [--json FILE]`.

Figures (every one the median of `--repeat` runs, timed with `time.perf_counter`):

* the largest plan of the shared corpus (skipped when the corpus is absent) and a generated
  5,000-line / 200-phase plan, each parsed and checked in-process through a new
  `WorkspaceIndex` per run, so no parsed document is reused (imports and the OS file cache
  are warm);
* generated workspaces of 500 / 1,000 / 2,000 plans plus 20 agents and 10 commands, each
  checked by `check_paths` in a fresh `python -c` process: the check time measured inside
  that process and the wall time of the whole process (interpreter start and imports
  included) are both reported;
* the 10 commands alone with ShellCheck off and on, and the 2,000-plan workspace with
  ShellCheck on.

Plan sizes in the generated workspaces follow the line counts of the corpus plans (mean
542 lines), so "2,000 plans" means about a million lines of realistic markdown.

`--peers` runs only the comparison with markdownlint-cli2 (whole processes, alternately:
`baton check` of the corpus with an empty and with a warm result cache, each right after
`markdownlint-cli2 '**/*.md'`, wall and CPU ratios per pair) and the warm 2,000-plan
workspace; the peer is installed from npm by `peers.py`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from baton_lsp.model import BatonConfig, Kind
from baton_lsp.parse.text import split_lines
from baton_lsp.rules import command_shellcheck
from baton_lsp.rules import engine as rules_engine
from baton_lsp.workspace.discovery import find_workspaces, walk
from baton_lsp.workspace.index import WorkspaceIndex

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))  # peers.py beside this file
DEFAULT_CORPUS = REPO.parent / "shared" / "corpus"
# Line counts of the 44 plans under `plans/` directories of the shared corpus (2026-11-21).
CORPUS_PLAN_LINES = (
    78, 98, 118, 118, 123, 139, 161, 171, 194, 195, 216, 230, 253, 281, 291, 299, 308, 316,
    337, 345, 372, 380, 438, 442, 458, 458, 461, 478, 529, 541, 557, 602, 603, 651, 726, 802,
    828, 836, 1004, 1132, 1499, 1530, 2080, 2168,
)
LINES_PER_PHASE = 25  # the 5,000-line / 200-phase plan
CORPUS_LINES_PER_PHASE = 135  # 24,253 lines / 179 phases in the corpus plans
TARGET_MS_PER_KLINE = 5.0
TARGET_WORKSPACE_S = 3.0

# -- generated content ------------------------------------------------------------------


def _deps(i: int) -> str:
    """Phase `i`'s dependency line, cycling through every form real plans use."""
    if i == 1:
        return "dependencies: []"
    form = i % 4
    if form == 0:
        return f"dependencies: [{i - 1}]"
    if form == 1:
        return f"**Dependencies**: [{max(1, i - 2)}, {i - 1}]"
    if form == 2:
        return f"depends_on: [phase_{i - 1}]"
    return f"**Dependencies**: Phase {i - 1} (schema ready)"


def phase_text(i: int, n_phases: int, n_lines: int = LINES_PER_PHASE) -> list[str]:
    """`n_lines` (at least 25) lines: heading, metadata, tasks, a bash block, prose.

    Every phase declares dependencies and has a bash block; padding beyond 25 lines is
    tasks, prose and more bash blocks so that corpus-sized phases (135 lines) come out near
    the corpus densities per 1,000 lines: 7 phases, 69 tasks, 22 fences, 3 links.
    """
    done = i <= n_phases // 3
    status = "[COMPLETE]" if done else ("[IN PROGRESS]" if i == n_phases // 3 + 1 else "")
    box = "x" if done else " "
    extra = max(0, n_lines - LINES_PER_PHASE)
    tasks = [f"- [{box}] Handle case {k} of component {i} in `module_{i}.py`"
             for k in range(extra * 4 // 100)]
    code: list[str] = []
    for block in range(2 if extra >= 20 else 0):  # corpus: ~3 fences per phase
        code += ["", "```bash"] + [f'echo "step {block}.{k}" && ./scripts/check_{i}.sh'
                                   for k in range(extra * 15 // 100)] + ["```"]
    prose = [f"Component {i} keeps its state in memory; note {k} explains why this is safe."
             for k in range(extra - len(code) - len(tasks))]
    link = (f"- [{box}] Update [the design notes](../reports/001_research.md#component-{i})"
            if i % 8 == 0 else f"- [{box}] Update the design notes for component {i}")
    return [
        f"### Phase {i}: Build component {i} {status}".rstrip(),
        _deps(i),
        "",
        f"**Objective**: Implement component {i} and wire it into `module_{i}.py`.",
        "**Complexity**: Medium",
        "",
        "Tasks:",
        f"- [{box}] Create `server/pkg/module_{i}.py` with the `Component{i}` class",
        f"- [{box}] Add unit tests in `tests/test_module_{i}.py` (happy path, errors)",
        f"  - [{box}] Cover the empty input and the oversized input",
        link,
        f"- [{box}] Document the public API in `docs/api.md`",
        *tasks,
        "",
        *prose,
        *code,
        "Testing:",
        "```bash",
        f"pytest tests/test_module_{i}.py -q",
        f'ruff check "server/pkg/module_{i}.py"',
        "```",
        "",
        f"**Expected Duration**: {1 + i % 4} hours",
        f"**Files**: `server/pkg/module_{i}.py`, `tests/test_module_{i}.py`",
        "",
        "<!-- baton: ignore BTN116 -->" if i % 10 == 0 else "",
        "---",
        "",
    ]


def plan_text(n_phases: int, number: int = 1, lines_per_phase: int = LINES_PER_PHASE) -> str:
    """A G2 plan: metadata, overview, success criteria, `n_phases` phases."""
    head = [
        f"# Implementation Plan: Feature {number}",
        "",
        "## Metadata",
        "- **Date**: 2026-11-21",
        f"- **Feature**: Feature {number}: a realistic generated workload",
        "- **Scope**: server, tests, documentation",
        f"- **Estimated Phases**: {n_phases}",
        f"- **Estimated Hours**: {n_phases * 2}-{n_phases * 3}",
        "- **Standards File**: /ws/CLAUDE.md",
        "- **Status**: [IN PROGRESS]",
        "- **Structure Level**: 0",
        "- **Research Reports**:",
        "  - [Research](../reports/001_research.md)",
        "",
        "## Overview",
        "",
        f"Feature {number} adds {n_phases} components. See the "
        "[research report](../reports/001_research.md) and `CLAUDE.md`.",
        "",
        "## Success Criteria",
        "- [ ] All phases complete and tested",
        "- [ ] Documentation updated",
        "",
        "## Implementation Phases",
        "",
    ]
    body = [line for i in range(1, n_phases + 1)
            for line in phase_text(i, n_phases, lines_per_phase)]
    return "\n".join(head + body) + "\n"


def agent_text(i: int) -> str:
    return "\n".join([
        "---",
        f"name: worker-{i}",
        f"description: Implements one phase of a plan (worker {i})",
        "tools: Read, Write, Edit, Bash, Grep, Glob",
        "model: sonnet",
        "---",
        "",
        f"# Worker {i}",
        "",
        "### STEP 1: Read the plan",
        "Read the plan file given in the prompt and find the phase to implement.",
        "",
        "### STEP 2 (REQUIRED BEFORE STEP 3): Implement",
        "- Follow the tasks in order",
        "- Run the tests after each task",
        "",
        "### STEP 3: Report",
        "Return exactly one line:",
        "```",
        "IMPLEMENTATION_COMPLETE: /absolute/path/to/summary.md",
        "```",
        "On failure return `TASK_ERROR: <reason>`.",
        "",
    ] * 3)


def command_text(i: int, n_agents: int) -> str:
    blocks = []
    for b in range(4):
        blocks += [
            f"## Part {b + 1}",
            "",
            "```bash",
            "set -euo pipefail",
            'STATE_FILE="${HOME}/.claude/tmp/workflow_state.sh"',
            'if [ -f "$STATE_FILE" ]; then source "$STATE_FILE"; fi',
            f'PLAN_PATH="${{CLAUDE_PROJECT_DIR}}/.claude/specs/{i:03d}_x/plans/001_plan.md"',
            'for f in "$PLAN_PATH"/*.md; do echo "$f"; done',
            'echo "export PLAN_PATH=\\"$PLAN_PATH\\"" >> "$STATE_FILE"',
            "```",
            "",
            "Task {",
            '  subagent_type: "general-purpose"',
            f'  description: "Run worker {b}"',
            "  prompt: \"",
            f"    Read and follow ALL behavioral guidelines from: "
            f".claude/agents/worker-{(i + b) % n_agents}.md",
            "    Return IMPLEMENTATION_COMPLETE: path",
            '  "',
            "}",
            "",
        ]
    return "\n".join([
        "---",
        "allowed-tools: Task, Bash, Read, Write",
        "argument-hint: <plan-path>",
        f"description: Implement a plan with wave-based workers ({i})",
        "---",
        "",
        f"# /implement-{i}",
        "",
        *blocks,
    ])


def make_workspace(root: Path, n_plans: int, n_agents: int = 20,
                   n_commands: int = 10) -> int:
    """Write a workspace; returns the number of plan lines."""
    claude = root / ".claude"
    (claude / "agents").mkdir(parents=True)
    (claude / "commands").mkdir()
    for i in range(n_agents):
        (claude / "agents" / f"worker-{i}.md").write_text(agent_text(i), encoding="utf-8")
    for i in range(n_commands):
        (claude / "commands" / f"implement-{i}.md").write_text(command_text(i, n_agents),
                                                               encoding="utf-8")
    total = 0
    for k in range(n_plans):
        spec = claude / "specs" / f"{k + 1:04d}_feature"
        (spec / "plans").mkdir(parents=True)
        (spec / "reports").mkdir()
        (spec / "reports" / "001_research.md").write_text("# Research\n", encoding="utf-8")
        target = CORPUS_PLAN_LINES[(k * 7) % len(CORPUS_PLAN_LINES)]
        n_phases = max(1, round(target / CORPUS_LINES_PER_PHASE))
        per_phase = max(LINES_PER_PHASE, (target - 25) // n_phases)
        text = plan_text(n_phases, k + 1, per_phase)
        (spec / "plans" / "001_plan.md").write_text(text, encoding="utf-8")
        total += len(split_lines(text))
    return total


# -- measuring --------------------------------------------------------------------------


def median_of(repeat: int, fn: Callable[[], Any]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def check_file(root: Path, path: Path, kind: Kind, config: BatonConfig) -> int:
    """Parse and check one file through a new index: nothing cached from an earlier run."""
    return len(rules_engine.check_file(WorkspaceIndex(root, config), path, kind))


_CHILD = """
import json, sys, time
from pathlib import Path
t0 = time.perf_counter()
from baton_lsp.rules.checker import check_paths
t1 = time.perf_counter()
result = check_paths([Path(sys.argv[1])], {"shellcheck": "all" if sys.argv[2] == "1" else "off"})
t2 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "check": t2 - t1, "files": result.files,
                  "findings": len(result.findings)}))
"""


def check_in_fresh_process(root: Path, shellcheck: bool, repeat: int) -> dict[str, float]:
    """`check_paths` on `root` in a new interpreter: (check time inside, wall time of all)."""
    checks, walls, last = [], [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(root), "1" if shellcheck else "0"],
                              capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - start)
        last = json.loads(proc.stdout)
        checks.append(last["check"])
    return {"check_s": statistics.median(checks), "wall_s": statistics.median(walls),
            "files": last["files"], "findings": last["findings"]}


def largest_corpus_plan(corpus: Path) -> tuple[Path, Path] | None:
    if not corpus.is_dir():
        return None
    plans = [(p.stat().st_size, p, root) for root in find_workspaces(corpus)
             for p, kind in walk(root) if kind is Kind.PLAN and p.is_file()]
    if not plans:
        return None
    _, path, root = max(plans)
    return root, path


def machine() -> dict[str, str]:
    cpu, ram = platform.processor() or "unknown", "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                ram = f"{int(line.split()[1]) / 1_048_576:.1f} GiB"
                break
    except OSError:
        pass
    return {"nproc": str(os.cpu_count()), "cpu": cpu, "ram": ram,
            "python": platform.python_version(), "platform": platform.platform()}


# -- side by side with markdownlint-cli2 (whole processes, alternately) ---------------------


def timed(cmd: list[str], cwd: Path | None = None,
          env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds of the process and the children it waited for, exit code)
    of one run of `cmd`, its output discarded."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env={**os.environ, **(env or {})}, check=False,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.returncode


def compare_with_markdownlint(corpus: Path, rounds: int) -> dict[str, Any]:
    """`baton check CORPUS` with an empty result cache, with a warm one (the whole check
    replayed: nothing changed) and with a warm one but no stored whole check (every file from
    the per-file cache, as after an edit), each run right after `markdownlint-cli2 '**/*.md'`
    in the corpus (mdl, cold, mdl, warm, mdl, per-file, …): the ratio of each pair, so load
    from other processes weighs on both sides of it alike."""
    import shutil as _shutil

    import peers  # type: ignore[import-not-found]

    mdl = [*peers.markdownlint(), "**/*.md"]
    cache = Path(tempfile.mkdtemp(prefix="baton-bench-cache-"))
    env = {"BATON_CACHE_DIR": str(cache)}
    baton = [sys.executable, "-m", "baton_lsp", "check", str(corpus)]
    modes = ("cold", "warm", "per-file")
    rows: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    pairs: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    try:
        timed(baton, env=env)  # imports and the OS file cache warm; results dropped below
        for _ in range(rounds):
            for mode in modes:
                if mode == "cold":
                    _shutil.rmtree(cache, ignore_errors=True)
                elif mode == "per-file":
                    _shutil.rmtree(cache / "v1" / "runs", ignore_errors=True)
                peer_wall, peer_cpu, _ = timed(mdl, cwd=corpus)
                wall, cpu, code = timed(baton, env=env)
                if code not in (0, 1):
                    raise RuntimeError(f"baton check exited {code}")
                rows[mode].append((wall, cpu))
                pairs[mode].append((wall / peer_wall, cpu / peer_cpu))
                rows.setdefault("markdownlint-cli2", []).append((peer_wall, peer_cpu))
    finally:
        _shutil.rmtree(cache, ignore_errors=True)
    out: dict[str, Any] = {"versions": peers.versions()}
    for mode, values in rows.items():
        out[mode] = {"wall_s": statistics.median(v[0] for v in values),
                     "cpu_s": statistics.median(v[1] for v in values)}
    for mode, ratios in pairs.items():
        out[mode]["ratio_wall"] = statistics.median(r[0] for r in ratios)
        out[mode]["ratio_cpu"] = statistics.median(r[1] for r in ratios)
    return out


def warm_workspace(root: Path, runs: int) -> dict[str, float]:
    """`baton check ROOT` with the result cache filled by a first run: median wall time of
    the warm check (replayed whole: nothing changed), of the check right after one plan was
    edited (only it checked again) and of the per-file path (no stored whole check: every
    file looked up in the cache)."""
    import shutil as _shutil

    cache = Path(tempfile.mkdtemp(prefix="baton-bench-cache-"))
    env = {"BATON_CACHE_DIR": str(cache)}
    baton = [sys.executable, "-m", "baton_lsp", "check", str(root)]
    plan = next((root / ".claude" / "specs").glob("*/plans/*.md"))
    walls: list[float] = []
    edited: list[float] = []
    per_file: list[float] = []
    try:
        cold = timed(baton, env=env)[0]
        timed(baton, env=env)  # stores the whole check if the first run found files too new
        for i in range(runs):
            walls.append(timed(baton, env=env)[0])
            with plan.open("a", encoding="utf-8") as fh:
                fh.write(f"- [ ] Task added by the benchmark, round {i}\n")
            time.sleep(0.1)  # older than the check's start by more than the racy margin
            edited.append(timed(baton, env=env)[0])
            _shutil.rmtree(cache / "v1" / "runs", ignore_errors=True)
            per_file.append(timed(baton, env=env)[0])
    finally:
        _shutil.rmtree(cache, ignore_errors=True)
    return {"cold_s": cold, "warm_s": statistics.median(walls), "warm_max_s": max(walls),
            "edited_s": statistics.median(edited), "per_file_s": statistics.median(per_file)}


def use_bytecode() -> None:
    """Measured processes start from compiled bytecode, as after `pip install` (with
    `PYTHONDONTWRITEBYTECODE` set, every run would compile Baton from source)."""
    import compileall

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    compileall.compile_dir(str(REPO / "server" / "baton_lsp"), quiet=1)


def peers_main(args: argparse.Namespace) -> int:
    use_bytecode()
    info = machine()
    print(" · ".join(f"{k}: {v}" for k, v in info.items()), flush=True)
    results: dict[str, Any] = {"machine": info}
    if args.corpus.is_dir():
        got = compare_with_markdownlint(args.corpus, args.rounds)
        results["corpus"] = got
        print(f"corpus {args.corpus} ({args.rounds} alternating rounds; "
              f"{', '.join(f'{k} {v}' for k, v in got['versions'].items())}):")
        peer = got["markdownlint-cli2"]
        print(f"  markdownlint-cli2 '**/*.md'        wall {peer['wall_s']:.2f} s  "
              f"cpu {peer['cpu_s']:.2f} s")
        for mode, target in (("cold", 0.4), ("warm", 0.1), ("per-file", None)):
            row = got[mode]
            verdict = "" if target is None else (
                f" (target ≤ {target}: {'met' if row['ratio_wall'] <= target else 'MISSED'})")
            print(f"  baton check, {mode + ' cache':<15}      wall {row['wall_s']:.2f} s  "
                  f"cpu {row['cpu_s']:.2f} s  ratio wall {row['ratio_wall']:.2f}"
                  f"{verdict}, cpu {row['ratio_cpu']:.2f}", flush=True)
    else:
        print(f"corpus not found at {args.corpus}: skipping the markdownlint comparison")
    with tempfile.TemporaryDirectory(prefix="baton-bench-") as tmp:
        root = Path(tmp) / "ws2000"
        make_workspace(root, 2000)
        got = warm_workspace(root, args.process_repeat)
        results["ws2000"] = got
        verdict = "met" if got["warm_s"] <= 0.5 else "MISSED"
        print(f"2,000-plan workspace: cold {got['cold_s']:.2f} s, warm {got['warm_s']:.3f} s "
              f"(max {got['warm_max_s']:.3f}; target ≤ 0.5 s: {verdict}); one plan edited "
              f"{got['edited_s']:.3f} s; every file from the per-file cache "
              f"{got['per_file_s']:.3f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--repeat", type=int, default=7, help="runs per in-process figure")
    parser.add_argument("--process-repeat", type=int, default=3,
                        help="runs per fresh-process figure")
    parser.add_argument("--sizes", default="500,1000,2000", help="workspace sizes (plans)")
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--peers", action="store_true",
                        help="only the whole-process comparison with markdownlint-cli2 "
                        "(cold and warm result cache, alternately) and the warm 2,000-plan "
                        "workspace; the peers are installed from npm into a cache directory")
    parser.add_argument("--rounds", type=int, default=5,
                        help="alternating rounds of the markdownlint comparison")
    args = parser.parse_args(argv)
    if args.peers:
        return peers_main(args)
    off, on = BatonConfig(shellcheck="off"), BatonConfig(shellcheck="all")
    rows: list[dict[str, Any]] = []

    def row(name: str, seconds: float, lines: int | None = None, note: str = "") -> None:
        per_k = seconds * 1000 / (lines / 1000) if lines else None
        rows.append({"figure": name, "ms": seconds * 1000, "lines": lines,
                     "ms_per_kline": per_k, "note": note})
        per = f"{per_k:6.2f} ms/1k lines" if per_k is not None else ""
        print(f"{name:<58} {seconds * 1000:9.1f} ms  {per}  {note}", flush=True)

    info = machine()
    print(" · ".join(f"{k}: {v}" for k, v in info.items()), flush=True)

    found = largest_corpus_plan(args.corpus)
    if found is None:
        print(f"corpus not found at {args.corpus}: skipping the corpus figure", flush=True)
    else:
        root, path = found
        lines = len(split_lines(path.read_text(encoding="utf-8")))
        check_file(root, path, Kind.PLAN, off)  # warm imports and the rule registry
        row(f"largest corpus plan ({path.name})",
            median_of(args.repeat, lambda: check_file(root, path, Kind.PLAN, off)), lines)

    with tempfile.TemporaryDirectory(prefix="baton-bench-") as tmp:
        base = Path(tmp)
        big = base / "big"
        plan_path = big / ".claude" / "specs" / "001_big" / "plans" / "001_plan.md"
        plan_path.parent.mkdir(parents=True)
        (plan_path.parent.parent / "reports").mkdir()
        (plan_path.parent.parent / "reports" / "001_research.md").write_text("# R\n")
        text = plan_text(200)
        plan_path.write_text(text, encoding="utf-8")
        lines = len(split_lines(text))
        check_file(big, plan_path, Kind.PLAN, off)
        row("generated plan, 200 phases",
            median_of(args.repeat, lambda: check_file(big, plan_path, Kind.PLAN, off)), lines)

        sizes = [int(s) for s in args.sizes.split(",")]
        workspaces: dict[int, tuple[Path, int]] = {}
        cold: dict[int, float] = {}
        for size in sizes:
            root = base / f"ws{size}"
            workspaces[size] = (root, make_workspace(root, size))
        for size in sizes:
            root, plan_lines = workspaces[size]
            got = check_in_fresh_process(root, False, args.process_repeat)
            cold[size] = got["check_s"]
            note = f"{got['files']} files, wall {got['wall_s'] * 1000:.0f} ms incl. startup"
            row(f"workspace, {size} plans + 20 agents + 10 commands, cold",
                got["check_s"], plan_lines, note)

        root = workspaces[sizes[0]][0]
        commands = sorted((root / ".claude" / "commands").glob("*.md"))

        def check_commands(config: BatonConfig) -> None:
            command_shellcheck.reset()  # no cached ShellCheck results between runs
            for path in commands:
                check_file(root, path, Kind.COMMAND, config)

        check_commands(on)
        for label, config in (("off", off), ("on", on)):
            row(f"10 commands (40 bash blocks), ShellCheck {label}",
                median_of(args.repeat, lambda config=config: check_commands(config)))
        largest = sizes[-1]
        root, plan_lines = workspaces[largest]
        got = check_in_fresh_process(root, True, args.process_repeat)
        row(f"workspace, {largest} plans, cold, ShellCheck on", got["check_s"], plan_lines,
            f"wall {got['wall_s'] * 1000:.0f} ms incl. startup")

    per_plan = {size: seconds * 1000 / size for size, seconds in cold.items()}
    spread = max(per_plan.values()) / min(per_plan.values())
    print("per plan, cold: " + ", ".join(f"{size}: {ms:.2f} ms" for size, ms in per_plan.items())
          + f" (max/min {spread:.2f}; 1.00 is perfectly linear)")
    kline = [r["ms_per_kline"] for r in rows if r["figure"].startswith(("largest", "generated"))]
    largest = max(cold)
    print(f"target <= {TARGET_MS_PER_KLINE} ms per 1,000 plan lines: "
          f"{'met' if max(kline) <= TARGET_MS_PER_KLINE else 'MISSED'} "
          f"(worst {max(kline):.2f})")
    print(f"target {largest} plans <= {TARGET_WORKSPACE_S} s cold: "
          f"{'met' if cold[largest] <= TARGET_WORKSPACE_S else 'MISSED'} "
          f"({cold[largest]:.2f} s)")
    if args.json:
        args.json.write_text(json.dumps({"machine": info, "rows": rows}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

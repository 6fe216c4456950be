"""Baton's overhead per agent step on top of the real agent CLIs (BENCHMARKS.md).

Run: `python benchmarks/bench_agent_clis.py [--steps N] [--cli claude,codex,gemini,opencode]`
(the CLIs from scripts/install-agent-clis.sh; the model is tests/agents' fake API on
127.0.0.1, answering at once).

Method: an implement-only workflow over a chain of N phases run in-process, every step a
real CLI session (a tool call that writes the summary, then the signal). The CLI's time is
what the engine measures around each process (spawn to exit noticed and pipes drained), so
its variance does not enter the figures:

- overhead per step = (the implement state's wall time − Σ CLI process durations) / N, the
  figure BENCHMARKS.md gives for the scripted runner: the hard barrier, hashing, the durable
  checkpoint, the prompt and argv, plus the state's one-time set-up (the plan parsed and
  validated, the waves) spread over the N steps;
- gap per step (median): from one CLI process's end to the next one's start — what each
  further step costs, without the one-time set-up (reported as `setup_ms`).

Only the implement state is counted, so the run's fixed costs (preflight's `--version` of
the CLI, the topic, the first checkpoints) stay out.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.agents import fake_anthropic, fake_gemini, fake_openai  # noqa: E402
from tests.agents.clis import AGENTS_DIR  # noqa: E402
from tests.agents.model import (  # noqa: E402
    anthropic_agent,
    gemini_agent,
    openai_agent,
    opencode_agent,
)

from baton_lsp.model.states import Scope  # noqa: E402
from baton_lsp.runs.signing import DATA_DIR_ENV  # noqa: E402
from baton_lsp.workflow import agent_step, process  # noqa: E402
from baton_lsp.workflow.engine import Engine, RunRequest  # noqa: E402
from baton_lsp.workspace.config import load_config  # noqa: E402

BIN = AGENTS_DIR / "node_modules" / ".bin"


def _plan(root: Path, steps: int) -> Path:
    lines = ["# Plan: chain", "", "## Implementation Phases", ""]
    for i in range(1, steps + 1):
        deps = f"[{i - 1}]" if i > 1 else "[]"
        lines += [f"### Phase {i}: Step {i} [NOT STARTED]", f"dependencies: {deps}", "",
                  f"- [ ] task {i}", ""]
    plan = root / "specs" / "001_chain" / "plans" / "001_chain_plan.md"
    plan.parent.mkdir(parents=True)
    plan.write_text("\n".join(lines), encoding="utf-8")
    return plan


def _server(cli: str, home: Path) -> tuple[Any, dict[str, str], str]:
    """The fake API for `cli`, the environment pointing the CLI at it, the runner config."""
    if cli == "claude":
        api = fake_anthropic.FakeAnthropic(anthropic_agent())  # type: ignore[arg-type]
        env = {"ANTHROPIC_API_KEY": "k", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
               "DISABLE_AUTOUPDATER": "1"}
        return api, env, ""
    if cli == "codex":
        api = fake_openai.FakeOpenAI(openai_agent())  # type: ignore[arg-type]
        (home / ".codex").mkdir()
        return api, {"CODEX_HOME": str(home / ".codex"), "FAKE_OPENAI_KEY": "k"}, ""
    if cli == "opencode":
        api = fake_anthropic.FakeAnthropic(opencode_agent())  # type: ignore[arg-type]
        (home / ".config" / "opencode").mkdir(parents=True)
        return api, {"OPENCODE_DISABLE_MODELS_FETCH": "1"}, ""
    api = fake_gemini.FakeGemini(gemini_agent())  # type: ignore[arg-type]
    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text(json.dumps(
        {"security": {"auth": {"selectedType": "gemini-api-key"}},
         "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
         "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False}}))
    return api, {"GEMINI_API_KEY": "k"}, '[workflow.gemini]\nmodel = "gemini-2.5-flash"\n'


_SPANS: list[tuple[float, float]] = []
_run_process = process.run_process


async def _timed_run_process(*args: Any, **kwargs: Any) -> Any:
    """The engine's run_process, with its start and end times kept for the gaps."""
    start = time.perf_counter()
    try:
        return await _run_process(*args, **kwargs)
    finally:
        _SPANS.append((start, time.perf_counter()))


# agent_step binds run_process by name at import: patch the name it calls
process.run_process = _timed_run_process  # type: ignore[assignment]
agent_step.run_process = _timed_run_process  # type: ignore[assignment]


def _chain(base: Path, cli: str, steps: int) -> tuple[float, list[float], float]:
    root = base / f"{cli}{steps}"
    (root / ".claude").mkdir(parents=True)
    home = root.parent / f"home-{cli}{steps}"
    home.mkdir()
    api, env, extra = _server(cli, home)
    (root / ".claude" / "baton.toml").write_text(
        f'[workflow]\nrunner = "{cli}"\ntimeout = 120\n{extra}')
    plan = _plan(root, steps)
    saved = dict(os.environ)
    with api:
        os.environ.update(env, HOME=str(home), PATH=f"{BIN}{os.pathsep}{saved['PATH']}")
        if cli == "claude":
            os.environ["ANTHROPIC_BASE_URL"] = api.url
        elif cli == "codex":
            (home / ".codex" / "config.toml").write_text(
                fake_openai.codex_config(api.base_url, model="gpt-5.5"))
        elif cli == "opencode":
            (home / ".config" / "opencode" / "opencode.json").write_text(
                fake_anthropic.opencode_config(api.url))
        else:
            os.environ["GOOGLE_GEMINI_BASE_URL"] = api.url
        try:
            engine = Engine(root, load_config(root), say=lambda _: None)
            start = time.perf_counter()
            outcome = asyncio.run(engine.start(RunRequest("bench", Scope.IMPLEMENT_ONLY,
                                                          plan_path=str(plan))))
            wall = time.perf_counter() - start
        finally:
            os.environ.clear()
            os.environ.update(saved)
    assert outcome.status == "complete", outcome
    steps_data = engine.dump()["baton"]["steps"].values()
    procs = [s["process_ms"] for s in steps_data if "process_ms" in s]
    assert len(procs) == steps, procs
    implement_ms = float(engine.dump()["baton"]["timing"]["implement"])
    return wall * 1000, procs, implement_ms


def bench(base: Path, cli: str, steps: int) -> dict[str, float]:
    _SPANS.clear()
    wall, procs, implement_ms = _chain(base, cli, steps)
    gaps = [(b[0] - a[1]) * 1000 for a, b in itertools.pairwise(_SPANS)]
    overhead = implement_ms - sum(procs)
    return {"steps": steps, "cli_step_p50_ms": statistics.median(procs),
            "overhead_per_step_ms": overhead / steps,
            "gap_per_step_p50_ms": statistics.median(gaps),
            "setup_ms": overhead - sum(gaps), "run_wall_s": wall / 1000}


def main() -> None:
    # the checkpoint signing key of these runs: never the user's own (runs/signing.py)
    os.environ.setdefault(DATA_DIR_ENV, tempfile.mkdtemp(prefix="baton-bench-key-"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=15)
    ap.add_argument("--cli", default="claude,codex,gemini,opencode")
    args = ap.parse_args()
    print(f"# {platform.node()} · {os.cpu_count()} CPUs · Python {platform.python_version()}"
          f" · {time.strftime('%Y-%m-%d')}")
    runs: dict[str, Callable[[Path], dict[str, float]]] = {
        cli: (lambda base, cli=cli: bench(base, cli, args.steps))
        for cli in args.cli.split(",") if (BIN / cli).exists()}
    with tempfile.TemporaryDirectory() as tmp:
        for cli, run in runs.items():
            figures = run(Path(tmp))
            print(f"{cli}: " + ", ".join(f"{k} {v:.1f}" if isinstance(v, float) else f"{k} {v}"
                                         for k, v in figures.items()))


if __name__ == "__main__":
    main()

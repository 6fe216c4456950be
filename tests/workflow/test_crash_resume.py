"""Bounded crash test: `kill -9` of `baton run` at random instants over the example workflow,
then `baton resume` (the harness is tests/workflow/crash_harness.py; benchmarks/bench_crash.py
runs the same loop 1,000 times).

Reproduce a failure with the printed seed: `BATON_CRASH_SEED=<seed> pytest -q
tests/workflow/test_crash_resume.py` (the kill offsets and variants come from the seed; the
engine's own timing still varies from run to run). BATON_CRASH_KILLS changes the count.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.workflow.crash_harness import new_seed, parallel, run_kills

KILLS = int(os.environ.get("BATON_CRASH_KILLS", "50"))
# Three kills at a time keep two cores busy through the agents' sleeps: 50 kill + resume
# cycles (~110 CPU-seconds, almost all of it `baton` start-up and engine) take ~63 s on an idle
# 2-core VM, 75 s with two at a time.
JOBS = 3


def test_random_kill_9_then_resume_never_reruns_a_finished_step(tmp_path: Path) -> None:
    seed = new_seed()
    print(f"crash test seed {seed} (reproduce: BATON_CRASH_SEED={seed})")
    summary = run_kills(tmp_path / "crash", KILLS, seed, jobs=JOBS)
    report = summary.report()
    print(report)
    failures = summary.failures()
    assert not failures, "\n".join([report, "", *failures])
    assert len(summary.kills) == KILLS
    assert summary.count(lambda k: k.resumed) == KILLS, report
    assert summary.count(lambda k: k.load_failures) == 0, report
    assert sum(len(k.rerun_finished) for k in summary.kills) == 0, report
    if KILLS >= 50:  # the kills were spread over the run, parallel steps in flight included
        assert len({k.state for k in summary.kills}) >= 4, report
        assert summary.count(lambda k: parallel(k, "research.")) >= 1, report
        assert summary.count(lambda k: parallel(k, "implement.phase-")) >= 1, report

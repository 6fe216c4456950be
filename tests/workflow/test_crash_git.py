"""Bounded git crash test: a few rounds of the git mode of benchmarks/bench_crash.py (the
harness is tests/workflow/crash_git.py; the benchmark runs 200+ rounds).

Reproduce a failure with the printed seed: `BATON_CRASH_SEED=<seed> pytest -q
tests/workflow/test_crash_git.py` (the kill instants come from the seed; git's and the
engine's own timing still vary). BATON_CRASH_GIT_ROUNDS changes the count.
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.workflow.crash_git import run_rounds
from tests.workflow.crash_harness import new_seed

ROUNDS = int(os.environ.get("BATON_CRASH_GIT_ROUNDS", "4"))


def test_random_kills_in_a_repository_leave_it_whole(tmp_path: Path) -> None:
    """Each round runs to completion (a genuine conflict after a resolution by hand), no
    phase agent that finished ran again, and nothing Baton made is left in the repository."""
    seed = new_seed()
    print(f"git crash test seed {seed} (reproduce: BATON_CRASH_SEED={seed})")
    rounds = run_rounds(ROUNDS, seed, tmp_path)
    report = [f"round {r.index}: {r.phases} phases, kills {r.kills}, {r.resumes} resumes; "
              f"completed {r.completed}, twice {r.twice}, left {r.leftovers}, "
              f"commits {r.wrong_commits}, missing {r.missing}, markers {r.marker_commits}"
              + (f"\n  last output: {r.last_output[-400:]}" if not r.completed else "")
              for r in rounds]
    assert len(rounds) == ROUNDS
    assert not [r for r in rounds if r.bad], "\n".join(report)
    assert sum(sum(r.kills.values()) for r in rounds) >= 1, "\n".join(report)

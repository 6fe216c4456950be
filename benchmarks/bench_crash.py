"""Random `kill -9` of `baton run` over the bundled example workflow, each followed by
`baton resume`: the crash-safety figures behind `BENCHMARKS.md`.

Run: `python benchmarks/bench_crash.py [--kills 1000] [--jobs 2] [--seed N]`, or in a git
repository: `python benchmarks/bench_crash.py --git --rounds 200 [--seed N]` (issue 31: kills
aimed at the engine, its group or everything while git adds worktrees, agents commit and
phases merge; tests/workflow/crash_git.py describes a round).

The loop is tests/workflow/crash_harness.py (the suite's test runs it 50 times): a fresh copy
of examples/workspace per kill, SIGKILL to `baton run`'s process group at an instant drawn
uniformly over an uninterrupted run's life after its first checkpoint, every history file
verified and parsed, `baton resume` to completion, and the launches of the resume compared
with the steps recorded `done` in the newest checkpoint before it. Exit status 1 when a
history file failed to load, a resume did not complete or a finished step ran again.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.workflow.crash_harness import KillResult, new_seed, run_kills

from baton_lsp.runs.signing import DATA_DIR_ENV


def main() -> int:
    # the checkpoint signing key of these runs: never the user's own (runs/signing.py)
    os.environ.setdefault(DATA_DIR_ENV, tempfile.mkdtemp(prefix="baton-bench-key-"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=1000, help="kills (default 1000)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="kill + resume cycles at a time (default 2)")
    parser.add_argument("--seed", type=int, default=None,
                        help="RNG seed (default: BATON_CRASH_SEED, else a fresh one)")
    parser.add_argument("--dir", type=Path, default=None,
                        help="where the work directory is made (default: the system's "
                             "temporary directory); failed kills are kept in it")
    parser.add_argument("--git", action="store_true",
                        help="the git mode: rounds of kill/resume cycles in a repository")
    parser.add_argument("--rounds", type=int, default=200, help="rounds of the git mode")
    args = parser.parse_args()
    if args.git:
        return git_mode(args)
    if args.kills < 1 or args.jobs < 1:
        parser.error("--kills and --jobs must be at least 1")
    seed = args.seed if args.seed is not None else new_seed()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="baton-crash-", dir=args.dir))
    print(f"seed {seed}; {args.kills} kills, {args.jobs} at a time; work in {base}", flush=True)
    started = time.monotonic()
    every = max(1, args.kills // 20)

    def progress(k: KillResult) -> None:
        done = k.index + 1
        if k.failed:
            print(f"FAILED: {k.where(seed)}", flush=True)
        if done % every == 0:
            print(f"  {done}/{args.kills} kills, {time.monotonic() - started:.0f} s",
                  flush=True)

    summary = run_kills(base / "crash", args.kills, seed, jobs=args.jobs, progress=progress)
    print(summary.report())
    failures = summary.failures()
    for line in failures:
        print(f"FAILURE {line}")
    return 1 if failures else 0


def git_mode(args: argparse.Namespace) -> int:
    """Rounds of up to three kill/resume cycles in a git repository (crash_git.py)."""
    from tests.workflow.crash_git import KINDS, Round, run_rounds

    seed = args.seed if args.seed is not None else new_seed()
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="baton-crash-git-", dir=args.dir))
    print(f"seed {seed}; {args.rounds} rounds in git; work in {base}", flush=True)

    def progress(r: Round) -> None:
        kills = ", ".join(f"{k} {v}" for k, v in sorted(r.kills.items())) or "no kill landed"
        print(f"round {r.index + 1:>4}: {r.phases} phases{' (conflict)' if r.conflict else ''}"
              f", kills: {kills}, {r.resumes} resumes, {r.seconds:.1f} s"
              + (", resolved by hand" if r.resolved_by_hand else "")
              + ("  FAILED" if r.bad else ""), flush=True)
        for what, items in (("not complete", [] if r.completed else [r.last_output[-300:]]),
                            ("ran twice", r.twice), ("left", r.leftovers),
                            ("commits", r.wrong_commits), ("missing", r.missing)):
            for item in items:
                print(f"    {what}: {item}", flush=True)

    rounds = run_rounds(args.rounds, seed, base, progress)
    kills = {k: sum(r.kills.get(k, 0) for r in rounds) for k in KINDS}
    print(f"\nsummary: {len(rounds)} rounds, {sum(kills.values())} kills "
          f"({', '.join(f'{k} {v}' for k, v in kills.items())}), "
          f"{sum(r.resumes for r in rounds)} resumes")
    print(f"  completed: {sum(r.completed for r in rounds)} (genuine conflicts resolved by "
          f"hand: {sum(r.resolved_by_hand for r in rounds)} of {sum(r.conflict for r in rounds)})")
    print(f"  phase agents that ran to completion twice: {sum(len(r.twice) for r in rounds)}")
    print(f"  rounds with leftovers (worktrees, branches, locks, changes, processes): "
          f"{sum(bool(r.leftovers) for r in rounds)}")
    print(f"  commits with conflict markers: {sum(r.marker_commits for r in rounds)}")
    print(f"  phases without one first-parent commit: "
          f"{sum(len(r.wrong_commits) for r in rounds)}; lost work: "
          f"{sum(len(r.missing) for r in rounds)}")
    return 1 if any(r.bad for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Many workflows on one repository at once, with random cancels and `kill -9`s: the
figures behind BENCHMARKS.md's "Several runs on one repository".

Run: `python benchmarks/bench_concurrency.py [--rounds 20] [--runs 8] [--seed N]`.

Each round makes a fresh git repository holding a shared module (`src/shared.py`, one
numbered slot line per phase of every run, three filler lines apart) and one plan per run
(phases 1 and 2 in parallel, then 3 after both). All runs start at once (`baton run
--scope implement-only`, the scripted agents sleeping 0.2-1.0 s): each phase writes its own
module `src/<run>_p<N>.py` and edits its own slot line of the shared module in place, so
the parallel phases of every run overlap on one file. While they run, some are cancelled
(`baton cancel`) and some lose their whole process group to SIGKILL, at random instants.
Then every unfinished run is resumed (all at once, up to three times); one killed before its
first checkpoint has nothing to resume (nothing of it ran) and is started again.

Checked after each round, on the user's branch and in every commit reachable from it:
conflict-marker lines (none allowed), files a merge commit brings that are not its own
phase's (another run's, Baton's own under `.claude/` or a topic directory; its own plan's
marker edit is the phase's), first-parent
commits per phase per completed run (exactly one), lost edits (every completed run's slot
lines done in the final `src/shared.py`), and runs neither complete nor resumable. Exit
status 1 when any of those is not zero.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.conftest import SCRIPTED_WORKFLOW_CONFIG

from baton_lsp.runs.signing import DATA_DIR_ENV

PHASES = ("1", "2", "3")
DEPS = ([], [], [1, 2])
MARKER = re.compile(r"^(<<<<<<<|>>>>>>>)( |$)", re.M)
GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


@dataclass
class Round:
    index: int
    completed: int = 0
    unresumable: list[str] = field(default_factory=list)
    cancels: int = 0
    kills: int = 0
    resumes: int = 0
    restarts: int = 0
    marker_commits: int = 0
    foreign_files: list[str] = field(default_factory=list)
    wrong_counts: list[str] = field(default_factory=list)
    lost_edits: list[str] = field(default_factory=list)
    waits: int = 0
    seconds: float = 0.0

    @property
    def bad(self) -> bool:
        return bool(self.unresumable or self.marker_commits or self.foreign_files
                    or self.wrong_counts or self.lost_edits)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def slot(run: str, pid: str) -> str:
    return f"slot_{run}_{pid} = 'todo'"


def plan_of(name: str) -> str:
    """A run's plan, relative to the repository (`make_repo` writes it there)."""
    index = int(name.rsplit("x", 1)[1]) + 1
    return f".claude/specs/{index:03d}_{name}/plans/{name}_plan.md"


def make_repo(root: Path, names: list[str]) -> dict[str, Path]:
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "baton.toml").write_text(SCRIPTED_WORKFLOW_CONFIG)
    lines = []
    for name in names:
        for pid in PHASES:
            lines += [slot(name, pid), "# -", "# -", "# -"]
    (root / "src").mkdir()
    (root / "src" / "shared.py").write_text("\n".join(lines) + "\n")
    plans = {}
    for name in names:
        plan = root / plan_of(name)
        plan.parent.mkdir(parents=True)
        text = ["# Plan", "", "## Metadata", "- **Date**: 2026-11-28",
                "- **Status**: [NOT STARTED]", "", "## Implementation Phases", ""]
        for pid, deps in zip(PHASES, DEPS, strict=True):
            text += [f"### Phase {pid}: Step {pid} [NOT STARTED]",
                     f"dependencies: [{', '.join(map(str, deps))}]", "", "Tasks:",
                     f"- [ ] task {pid}", ""]
        plan.write_text("\n".join(text))
        plans[name] = plan
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    return plans


def behaviour(root: Path, name: str, rng: random.Random) -> Path:
    path = root / ".claude" / f"behave-{name}.json"
    path.write_text(json.dumps({f"implement.phase-{pid}": {
        "sleep": round(rng.uniform(0.2, 1.0), 2),
        "files": {f"src/{name}_p{pid}.py": f"{name}_{pid} = True\n"},
        "replace": {"src/shared.py": [slot(name, pid), slot(name, pid).replace("todo", "done")]},
    } for pid in PHASES}))
    return path


def baton(root: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "baton_lsp", *args, "--workspace",
                             str(root)], cwd=root, env={**os.environ, **env}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def status_of(root: Path) -> dict[str, str]:
    out = subprocess.run([sys.executable, "-m", "baton_lsp", "status", "--json",
                          "--workspace", str(root)], capture_output=True, text=True,
                         check=True).stdout
    return {r["workflow_id"]: r.get("status") for r in json.loads(out)
            if r.get("origin") != "bash"}


def run_round(index: int, base: Path, runs: int, rng: random.Random) -> Round:
    result = Round(index)
    root = base / f"round-{index:03d}"
    root.mkdir()
    names = [f"r{index}x{k}" for k in range(runs)]
    plans = make_repo(root, names)
    envs = {n: {"BATON_SCRIPT_BEHAVIOUR": str(behaviour(root, n, rng))} for n in names}
    started = time.monotonic()
    procs = {n: baton(root, ["run", "Implement the plan", "--scope", "implement-only",
                             "--plan", str(plans[n]), "--id", n], envs[n]) for n in names}
    # a quarter of the runs are cancelled, a quarter killed, at random instants
    victims = rng.sample(names, k=max(1, runs // 2))
    when = sorted((rng.uniform(0.5, 6.0), n) for n in victims)
    for at, name in when:
        time.sleep(max(0.0, at - (time.monotonic() - started)))
        if procs[name].poll() is not None:
            continue
        if victims.index(name) % 2 == 0:
            subprocess.run([sys.executable, "-m", "baton_lsp", "cancel", name, "--grace", "5",
                            "--workspace", str(root)], capture_output=True, check=False)
            result.cancels += 1
        else:
            try:
                os.killpg(procs[name].pid, signal.SIGKILL)
                result.kills += 1
            except ProcessLookupError:
                pass
    outputs = {n: p.communicate(timeout=600)[0] for n, p in procs.items()}
    for attempt in range(3):
        statuses = status_of(root)
        todo = [n for n in names if statuses.get(n) != "complete"]
        if not todo:
            break
        # killed before its first checkpoint: nothing of it ran, so it is started again
        fresh = [n for n in todo if not any(
            (root / ".claude" / "data" / "checkpoints" / n).glob("[0-9]*.json"))]
        result.restarts += len(fresh)
        resumed = {n: baton(root, ["run", "Implement the plan", "--scope", "implement-only",
                                   "--plan", str(plans[n]), "--id", n] if n in fresh
                            else ["resume", n], envs[n]) for n in todo}
        for n, p in resumed.items():
            outputs[n] += f"\n-- resume {attempt + 1}\n" + p.communicate(timeout=600)[0]
        result.resumes += len(todo) - len(fresh)
    result.seconds = time.monotonic() - started
    result.waits = sum(text.count(": waiting for ") for text in outputs.values())
    statuses = status_of(root)
    done = [n for n in names if statuses.get(n) == "complete"]
    result.completed = len(done)
    for n in names:
        if statuses.get(n) != "complete":
            dry = subprocess.run([sys.executable, "-m", "baton_lsp", "resume", n, "--dry-run",
                                  "--workspace", str(root)], capture_output=True, text=True,
                                 check=False)
            if dry.returncode != 0:
                result.unresumable.append(f"{n}: {dry.stderr.strip()[:200]}")
            else:
                result.unresumable.append(f"{n}: still {statuses.get(n)} after 3 resumes: "
                                          + outputs[n].strip().splitlines()[-1][:200])
    check_history(root, names, done, result)
    if result.bad:
        (root / "outputs.json").write_text(json.dumps(outputs, indent=1))
    return result


def check_history(root: Path, names: list[str], done: list[str], result: Round) -> None:
    for sha in git(root, "rev-list", "main").split():
        found = subprocess.run(["git", "grep", "-l", "-E", MARKER.pattern, sha], cwd=root,
                               capture_output=True, text=True, check=False).stdout
        result.marker_commits += bool(found.strip())
    counts: dict[tuple[str, str], int] = {}
    for line in git(root, "log", "--first-parent", "--format=%H %s").splitlines():
        sha, subject = line.split(" ", 1)
        if subject == "base":
            continue
        m = re.match(r"Merge phase (\S+): .* \((\S+)\)$", subject)
        if not m:
            result.foreign_files.append(f"{sha[:10]}: not a phase merge: {subject}")
            continue
        pid, name = m.group(1), m.group(2)
        counts[(name, pid)] = counts.get((name, pid), 0) + 1
        files = set(git(root, "diff", "--name-only", f"{sha}^1", sha).split())
        # the phase's module, its slot of the shared module and its own plan's markers
        own = {f"src/{name}_p{pid}.py", "src/shared.py", plan_of(name)}
        for extra in sorted(files - own):
            result.foreign_files.append(f"{sha[:10]} ({name} phase {pid}): {extra}")
        if "src/shared.py" in files:
            diff = git(root, "diff", "-U0", f"{sha}^1", sha, "--", "src/shared.py")
            changed = [ln[1:] for ln in diff.splitlines()
                       if ln[:1] in "+-" and not ln.startswith(("+++", "---"))]
            if any(slot(name, pid)[:-7] not in ln for ln in changed):
                result.foreign_files.append(f"{sha[:10]} ({name} phase {pid}): another "
                                            "slot of src/shared.py")
    for name in done:
        for pid in PHASES:
            if counts.get((name, pid), 0) != 1:
                result.wrong_counts.append(f"{name} phase {pid}: "
                                           f"{counts.get((name, pid), 0)} commits")
    shared = (root / "src" / "shared.py").read_text()
    for name in done:
        for pid in PHASES:
            if slot(name, pid).replace("todo", "done") not in shared:
                result.lost_edits.append(f"{name} phase {pid}")


def main() -> int:
    os.environ.setdefault(DATA_DIR_ENV, tempfile.mkdtemp(prefix="baton-bench-key-"))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--runs", type=int, default=8, help="runs at once per round")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--dir", type=Path, default=None, help="where rounds are made "
                        "(kept when a round fails)")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**9)
    rng = random.Random(seed)
    base = Path(tempfile.mkdtemp(prefix="baton-concurrency-", dir=args.dir))
    print(f"seed {seed}; {args.rounds} rounds of {args.runs} runs; work in {base}", flush=True)
    rounds = []
    for i in range(args.rounds):
        r = run_round(i, base, args.runs, rng)
        rounds.append(r)
        print(f"round {i + 1:>2}: {r.completed}/{args.runs} complete, {r.cancels} cancelled, "
              f"{r.kills} killed, {r.resumes} resumes, {r.restarts} restarts, {r.waits} waits, "
              f"{r.seconds:.1f} s"
              + ("  FAILED" if r.bad else ""), flush=True)
        for label, items in (("not resumable", r.unresumable), ("foreign", r.foreign_files),
                             ("commit count", r.wrong_counts), ("lost edit", r.lost_edits)):
            for item in items[:5]:
                print(f"    {label}: {item}", flush=True)
        if r.marker_commits:
            print(f"    commits with conflict markers: {r.marker_commits}", flush=True)
    total = args.rounds * args.runs
    print("\nsummary")
    print(f"  runs: {total}; complete {sum(r.completed for r in rounds)}; cancelled "
          f"{sum(r.cancels for r in rounds)}, killed {sum(r.kills for r in rounds)}, resumes "
          f"{sum(r.resumes for r in rounds)}, restarted (killed before their first "
          f"checkpoint) {sum(r.restarts for r in rounds)}; merges that waited "
          f"{sum(r.waits for r in rounds)}")
    print(f"  commits with conflict markers: {sum(r.marker_commits for r in rounds)}")
    print(f"  foreign files in commits: {sum(len(r.foreign_files) for r in rounds)}")
    print(f"  phases without exactly one first-parent commit: "
          f"{sum(len(r.wrong_counts) for r in rounds)}")
    print(f"  lost edits: {sum(len(r.lost_edits) for r in rounds)}")
    print(f"  runs neither complete nor resumable: {sum(len(r.unresumable) for r in rounds)}")
    print(f"  round wall time p50 {sorted(r.seconds for r in rounds)[len(rounds) // 2]:.1f} s")
    return 1 if any(r.bad for r in rounds) else 0


if __name__ == "__main__":
    sys.exit(main())

"""Random `kill -9` of `baton run` in a git repository, then `baton resume`: the git mode of
benchmarks/bench_crash.py (issue 31).

Each round: a fresh repository of ~800 files (so git takes real time) with a shared module
whose numbered slot lines the phases edit three lines apart, a plan of 3-7 phases with
parallel waves, each phase a scripted agent that writes its own files and edits its own slot
in place; some phases commit their work themselves, some outlive their engine (they finish in
their own session after it died), and some rounds hold a genuine conflict (two parallel
phases editing one slot). A smudge filter on a few files and a merge driver on the shared
module keep git busy inside `worktree add` and merges, where the kills are aimed as often as
anywhere. Up to three cycles of: run or resume, SIGKILL at a random instant — of the engine
alone, of its process group, or of everything the round started (agents and git included) —
then a final resume; a genuine conflict is resolved by hand (both edits kept) and resumed.

Checked after each round: the workflow completed; no phase agent ran to completion twice
(the scripted agents' journal); no worktree, `baton/*` branch, git lock file or uncommitted
change to a tracked file left; no conflict-marker line in any commit of the branch; one
first-parent commit per phase; every phase's slot edit and files in the final tree.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import SCRIPTED_WORKFLOW_CONFIG

TAG = "BATON_CRASH_GIT_TAG"
GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]
KINDS = ("engine", "group", "everything")
MARKER = r"^(<<<<<<<|>>>>>>>)( |$)"
RUN_TIMEOUT = 300.0


@dataclass
class Round:
    index: int
    phases: int = 0
    conflict: bool = False
    unedited: int | None = None
    """The slot no phase edits (a conflict round's second phase edits its sibling's)."""
    kills: dict[str, int] = field(default_factory=dict)
    resumes: int = 0
    completed: bool = False
    resolved_by_hand: bool = False
    twice: list[str] = field(default_factory=list)
    leftovers: list[str] = field(default_factory=list)
    marker_commits: int = 0
    wrong_commits: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    last_output: str = ""
    seconds: float = 0.0

    @property
    def bad(self) -> bool:
        return bool(not self.completed or self.twice or self.leftovers or self.marker_commits
                    or self.wrong_commits or self.missing)


def git(root: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=root, check=check,
                          capture_output=True, text=True).stdout


def slot(pid: int) -> str:
    return f"slot_{pid} = 'todo'"


def make_round(root: Path, rng: random.Random
               ) -> tuple[Path, dict[str, Any], int, int | None]:
    """The repository, its plan, the behaviour of its agents, and the slot no phase edits
    (None unless the round holds a genuine conflict)."""
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "baton.toml").write_text(SCRIPTED_WORKFLOW_CONFIG)
    for i in range(40):
        pkg = root / "lib" / f"pkg{i}"
        pkg.mkdir(parents=True)
        for j in range(20):
            (pkg / f"mod{j}.py").write_text(f"VALUE = {i * 20 + j}\n")
    (root / "slow").mkdir()
    for k in range(3):
        (root / "slow" / f"data{k}.txt").write_text(f"data {k}\n")
    n = rng.randint(3, 7)
    lines = []
    for pid in range(1, n + 1):
        lines += [slot(pid), "# -", "# -", "# -"]
    (root / "src").mkdir()
    (root / "src" / "shared.py").write_text("\n".join(lines) + "\n")
    (root / ".gitattributes").write_text("src/shared.py merge=slowish\nslow/*.txt filter=slowish\n")
    deps: list[list[int]] = [[]]
    for pid in range(2, n + 1):
        earlier = list(range(1, pid))
        deps.append(sorted(rng.sample(earlier, k=min(len(earlier), rng.choice((0, 1, 1, 2))))))
    plan = root / ".claude" / "specs" / "001_crash" / "plans" / "001_crash_plan.md"
    plan.parent.mkdir(parents=True)
    text = ["# Crash Plan", "", "## Metadata", "- **Date**: 2026-11-28",
            "- **Status**: [NOT STARTED]", "", "## Implementation Phases", ""]
    for pid, d in enumerate(deps, 1):
        text += [f"### Phase {pid}: Step {pid} [NOT STARTED]",
                 f"dependencies: [{', '.join(map(str, d))}]", "", "Tasks:", f"- [ ] task {pid}", ""]
    plan.write_text("\n".join(text))
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "filter.slowish.smudge", "sleep 0.05; cat")
    git(root, "config", "filter.slowish.clean", "cat")
    git(root, "config", "merge.slowish.driver", "sleep 0.1; git merge-file %A %O %B")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "base")
    behaviour: dict[str, Any] = {}
    for pid in range(1, n + 1):
        spec: dict[str, Any] = {
            "sleep": round(rng.uniform(0.1, 0.8), 2),
            "files": {f"src/p{pid}/code.py": f"PHASE = {pid}\n",
                      f"src/p{pid}/more.py": f"MORE = {pid}\n"},
            "replace": {"src/shared.py": [slot(pid), slot(pid).replace("todo", "done")]}}
        if rng.random() < 0.2:
            spec["commit"] = f"agent's own commit of phase {pid}"
        if rng.random() < 0.2:
            spec.update(sleep=round(rng.uniform(1.0, 2.5), 2), outlive=True)
        behaviour[f"implement.phase-{pid}"] = spec
    conflict: int | None = None
    siblings = [(a, b) for a in range(1, n + 1) for b in range(a + 1, n + 1)
                if deps[a - 1] == deps[b - 1]]
    if siblings and rng.random() < 0.15:  # two phases of one wave edit one slot apiece
        a, b = rng.choice(siblings)
        behaviour[f"implement.phase-{b}"]["replace"] = {
            "src/shared.py": [slot(a), slot(a).replace("todo", f"phase {b} says so")]}
        conflict = b
    return plan, behaviour, n, conflict


def tagged(tag: str) -> list[int]:
    """Live processes carrying the round's tag in their environment."""
    marker = f"{TAG}={tag}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                found.append(int(name))
    return found


def kill(proc: subprocess.Popen[str], kind: str, tag: str) -> None:
    with contextlib.suppress(ProcessLookupError):
        if kind == "engine":
            os.kill(proc.pid, signal.SIGKILL)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
    if kind == "everything":
        for pid in tagged(tag):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def baton(root: Path, args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "baton_lsp", *args, "--workspace",
                             str(root)], cwd=root, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)


def status(root: Path) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "baton_lsp", "status", "crash", "--json",
                          "--workspace", str(root)], capture_output=True, text=True)
    try:
        found = json.loads(out.stdout)
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def resolve_by_hand(root: Path) -> bool:
    """Resolve a genuine conflict as a person would: keep both edits, commit."""
    conflicted = git(root, "diff", "--name-only", "--diff-filter=U").split()
    if not conflicted:
        return False
    for rel in conflicted:
        path = root / rel
        kept = [ln for ln in path.read_text().splitlines()
                if not re.match(r"^(<<<<<<<|=======|>>>>>>>)", ln)]
        path.write_text("\n".join(kept) + "\n")
        git(root, "add", rel)
    git(root, "commit", "-q", "--no-edit")
    return True


def run_round(index: int, base: Path, rng: random.Random) -> Round:
    result = Round(index)
    root = base / f"round-{index:04d}"
    root.mkdir(parents=True)
    plan, table, n, unedited = make_round(root, rng)
    result.phases, result.conflict, result.unedited = n, unedited is not None, unedited
    behave = root / ".claude" / "crash-behaviour.json"
    behave.write_text(json.dumps(table))
    tag = f"{os.getpid()}-{index}"
    env = {**os.environ, "BATON_SCRIPT_BEHAVIOUR": str(behave), TAG: tag}
    started = time.monotonic()
    args = ["run", "Implement the crash plan", "--scope", "implement-only", "--plan",
            str(plan), "--id", "crash"]
    for _ in range(rng.randint(1, 3)):
        proc = baton(root, args, env)
        with contextlib.suppress(subprocess.TimeoutExpired):  # the kill instant, or its end
            proc.wait(rng.uniform(0.3, 6.0))
        if proc.poll() is None:
            kind = rng.choice(KINDS)
            kill(proc, kind, tag)
            result.kills[kind] = result.kills.get(kind, 0) + 1
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.communicate(timeout=60)
        have = any((root / ".claude/data/checkpoints/crash").glob("[0-9]*.json"))
        args = ["resume", "crash"] if have else args
        result.resumes += args[0] == "resume"
        if status(root).get("status") == "complete":
            break
    for _ in range(3):  # the resumes that are let finish
        if status(root).get("status") == "complete":
            break
        have = any((root / ".claude/data/checkpoints/crash").glob("[0-9]*.json"))
        args = ["resume", "crash"] if have else args
        proc = baton(root, args, env)
        try:
            result.last_output = proc.communicate(timeout=RUN_TIMEOUT)[0]
        except subprocess.TimeoutExpired:
            kill(proc, "everything", tag)
            result.last_output = "timed out"
        result.resumes += args[0] == "resume"
        if status(root).get("status") != "complete" and resolve_by_hand(root):
            result.resolved_by_hand = True
    result.completed = status(root).get("status") == "complete"
    result.seconds = time.monotonic() - started
    check(root, n, result, tag)
    if result.bad:
        (root / "last-output.txt").write_text(result.last_output)
    return result


def check(root: Path, n: int, result: Round, tag: str) -> None:
    ends: dict[str, int] = {}
    journal = root / ".claude" / "tmp" / "scripted_runs.log"
    with contextlib.suppress(OSError):
        for line in journal.read_text().splitlines():
            kind, step, *_ = line.split()
            if kind == "end":
                ends[step] = ends.get(step, 0) + 1
    result.twice = sorted(s for s, k in ends.items() if k > 1)
    if tagged(tag):
        result.leftovers.append("processes of the round still alive")
    trees = [ln for ln in git(root, "worktree", "list", "--porcelain").splitlines()
             if ln.startswith("worktree ")]
    if len(trees) != 1:
        result.leftovers.append(f"{len(trees) - 1} worktree(s)")
    branches = git(root, "branch", "--list", "baton/*").split()
    if branches:
        result.leftovers.append(f"branches {branches}")
    locks = [str(p.relative_to(root)) for p in (root / ".git").rglob("*.lock")
             if p.name not in ("baton-integrate.lock", "baton-worktrees.lock")]
    if locks:
        result.leftovers.append(f"git locks {locks}")
    dirty = git(root, "status", "--porcelain", "--untracked-files=no").strip()
    if dirty:
        result.leftovers.append(f"uncommitted: {dirty.splitlines()[:5]}")
    for sha in git(root, "rev-list", "main").split():
        found = subprocess.run(["git", "grep", "-l", "-E", MARKER, sha], cwd=root,
                               capture_output=True, text=True).stdout
        result.marker_commits += bool(found.strip())
    if not result.completed:
        return
    subjects = git(root, "log", "--first-parent", "--format=%s").splitlines()
    for pid in range(1, n + 1):
        count = sum(1 for s in subjects if re.match(rf"(Merge phase|Phase) {pid}: ", s))
        if count != 1:
            result.wrong_commits.append(f"phase {pid}: {count} first-parent commits")
        for rel in (f"src/p{pid}/code.py", f"src/p{pid}/more.py"):
            if not (root / rel).is_file():
                result.missing.append(rel)
    shared = (root / "src" / "shared.py").read_text()
    for pid in range(1, n + 1):
        if pid != result.unedited and slot(pid) in shared:  # 'todo': the phase's edit lost
            result.missing.append(f"slot {pid}")


def run_rounds(rounds: int, seed: int, base: Path,
               progress: Any = None) -> list[Round]:
    rng = random.Random(seed)
    out = []
    for i in range(rounds):
        r = run_round(i, base, random.Random(rng.randrange(1 << 30)))
        out.append(r)
        if progress is not None:
            progress(r)
    return out

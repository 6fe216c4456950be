"""Random `kill -9` of `baton run` over the bundled example workflow, then `baton resume`.

Shared by tests/workflow/test_crash_resume.py (50 kills) and benchmarks/bench_crash.py (1,000).
Each kill: a fresh copy of examples/workspace (the README's first command), `baton run` in its
own process group, SIGKILL to that group at an instant drawn from a seeded RNG over the span
from the first checkpoint to the last of an uninterrupted run; then every history file must
verify and parse, `baton resume <id>` must finish the workflow (and stop the killed run's
orphaned agents itself), and no step recorded `done` in the newest checkpoint before the
resume may be launched again. Launches are counted by tests/workflow/crash_agent.py, which
the workspace's `script` runner and test command run in front of the scripted agent; the
scripted agent's own journal says which steps were in flight at the kill. Three shapes of the
workflow are drawn from: the README's (three research workers, phases 2 and 3 in parallel), the
supervisor tier (four workers) and the implement-coordinator's iteration loop.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import random
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton_lsp.runs.checkpoint import CheckpointError, parse_checkpoint
from baton_lsp.runs.follow import DirWatcher
from baton_lsp.runs.record import RecordError, read_record
from baton_lsp.runs.store import CheckpointStore, checkpoints_root, list_workflows, verify_file

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "workspace"
AGENT = Path(__file__).resolve().parent / "crash_agent.py"
README_DESCRIPTION = "Add rate limiting to the login endpoint"
GEN_ENV = "CRASH_HARNESS_GEN"
TAG_ENV = "CRASH_HARNESS_TAG"
LAUNCHES = Path(".claude") / "tmp" / "crash_launches.tsv"
JOURNAL = Path(".claude") / "tmp" / "scripted_runs.log"
MAX_DRAWS = 12
RESUME_TIMEOUT = 120.0
_SEQ = re.compile(r"^\d{6}\.json$")

# Short sleeps so the parallel steps are really in flight together when a kill lands.
OVERLAP = {"research.*": {"sleep": 0.05}, "implement.phase-[23]": {"sleep": 0.05}}
# In the killed run only: long enough that agents orphaned by the kill are still running when
# the resume starts (so the resume itself must stop them) and that parallel steps are in
# flight for a good share of the run. The resume's agents are fast.
SLOW = 0.8
RUN_BEHAVIOUR = Path(".claude") / "crash-run-behaviour.json"


@dataclass(frozen=True)
class Variant:
    """One shape of the example workflow: the README's, or the same workspace through the
    supervisor tier (four topics) or the implement-coordinator's iteration loop."""

    name: str
    description: str
    workflow: dict[str, str] = field(default_factory=dict)
    behaviour: dict[str, dict[str, Any]] = field(default_factory=dict)
    killed_run: dict[str, dict[str, Any]] = field(default_factory=dict)


VARIANTS = (
    Variant("flat", README_DESCRIPTION, killed_run={"implement.phase-[23]": {"sleep": SLOW}}),
    Variant("supervisor", "Add comprehensive rate limiting to the login endpoint",
            killed_run={"research.*": {"sleep": SLOW}}),
    Variant("iterations", README_DESCRIPTION, {"implement-mode": '"iterations"'},
            {"implement.iteration-*": {"iterations": 2, "sleep": 0.05}}),
)


@dataclass(frozen=True)
class Launch:
    step: str
    generation: str
    pid: int
    at: float
    artifact: str


@dataclass(frozen=True)
class Calibration:
    """An uninterrupted run: when each checkpoint was written and when the run ended, in
    seconds after its first checkpoint, and the steps it recorded `done`."""

    marks: tuple[float, ...]
    span: float
    steps: frozenset[str]

    def schedule(self, at: float) -> tuple[int, float]:
        """A kill instant `at` seconds into the run as (the checkpoint written last before it,
        the time past that checkpoint): the kill clock follows the live run's own progress,
        so a loaded machine does not bunch the kills at the start."""
        k = max(0, bisect.bisect_right(self.marks, at) - 1)
        return k + 1, at - self.marks[k]


@dataclass
class KillResult:
    index: int
    variant: str
    offset: float = 0.0
    draws: int = 0
    redraws: Counter[str] = field(default_factory=Counter)
    seq: int = 0
    event: str = ""
    state: str = ""
    in_flight: tuple[str, ...] = ()
    done_before: tuple[str, ...] = ()
    load_failures: list[str] = field(default_factory=list)
    resumed: bool = False
    resume_seconds: float = 0.0
    rerun_finished: list[str] = field(default_factory=list)
    rerun_unrecorded: list[str] = field(default_factory=list)
    rerun_interrupted: list[str] = field(default_factory=list)
    orphans_at_resume: int = 0
    orphans_stopped: int = 0
    orphans_left: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    kept: Path | None = None

    @property
    def failed(self) -> bool:
        return bool(self.load_failures or self.rerun_finished or self.orphans_left
                    or self.problems or not self.resumed)

    def where(self, seed: int) -> str:
        return (f"seed {seed} kill #{self.index} ({self.variant}): SIGKILL "
                f"{self.offset * 1000:.0f} ms after the first checkpoint, newest checkpoint "
                f"{self.seq:06d} '{self.event}' (state {self.state}); in flight: "
                f"{', '.join(self.in_flight) or 'none'}")


@dataclass
class Summary:
    seed: int
    kills: list[KillResult]
    wall: float
    calibration: dict[str, Calibration]

    def count(self, pred: Callable[[KillResult], Any]) -> int:
        return sum(1 for k in self.kills if pred(k))

    def total(self, size: Callable[[KillResult], int]) -> int:
        return sum(size(k) for k in self.kills)

    @property
    def resume_times(self) -> list[float]:
        return sorted(k.resume_seconds for k in self.kills if k.resumed)

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile of the resume times (NaN when none completed)."""
        t = self.resume_times
        return t[min(len(t) - 1, int(q * len(t)))] if t else float("nan")

    def failures(self) -> list[str]:
        out = []
        for k in self.kills:
            if not k.failed:
                continue
            what = k.load_failures + [f"finished step re-run: {s}" for s in k.rerun_finished]
            what += [f"orphaned agent pid {p} still alive after resume" for p in k.orphans_left]
            what += k.problems + ([] if k.resumed else ["resume did not complete"])
            kept = f" [kept: {k.kept}]" if k.kept else ""
            out.append(f"{k.where(self.seed)}: {'; '.join(what)}{kept}")
        return out

    def report(self) -> str:
        redraws: Counter[str] = Counter()
        for k in self.kills:
            redraws.update(k.redraws)
        variants = Counter(k.variant for k in self.kills)
        states = Counter(k.state for k in self.kills)
        times = self.resume_times
        median = statistics.median(times) if times else float("nan")
        return "\n".join([
            f"seed: {self.seed}",
            f"kills: {len(self.kills)} ({_counts(variants)})",
            f"resumes completed: {self.count(lambda k: k.resumed)}",
            f"history load failures: {self.count(lambda k: k.load_failures)}",
            f"finished steps re-run: {self.total(lambda k: len(k.rerun_finished))} (target 0)",
            f"unrecorded-artifact re-runs: {self.total(lambda k: len(k.rerun_unrecorded))} "
            "(artifact written, not yet recorded done: may run again)",
            f"interrupted steps re-run: {self.total(lambda k: len(k.rerun_interrupted))} "
            "(in flight, no artifact yet: expected)",
            f"orphaned agents alive when the resume started: "
            f"{self.total(lambda k: k.orphans_at_resume)}; process groups the resume stopped: "
            f"{self.total(lambda k: k.orphans_stopped)}; alive after the resume: "
            f"{self.total(lambda k: len(k.orphans_left))}",
            f"kills with >= 2 research workers in flight: "
            f"{self.count(lambda k: parallel(k, 'research.'))}",
            f"kills with >= 2 implement phases in flight: "
            f"{self.count(lambda k: parallel(k, 'implement.phase-'))}",
            f"kills by state: {_counts(states)}",
            f"re-drawn kill instants: {_counts(redraws) or 'none'}",
            f"resume time: median {median:.3f} s, p95 {self.percentile(0.95):.3f} s, "
            f"max {max(times, default=float('nan')):.3f} s",
            "uninterrupted run, first checkpoint to exit: " + ", ".join(
                f"{name} {cal.span:.2f} s ({len(cal.marks)} checkpoints)"
                for name, cal in self.calibration.items()),
            f"wall time: {self.wall:.1f} s",
        ])


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counter.items()))


def parallel(kill: KillResult, prefix: str) -> bool:
    return sum(1 for s in kill.in_flight if s.startswith(prefix)) >= 2


# -- workspace --------------------------------------------------------------------------------


def prepare(dest: Path, variant: Variant) -> Path:
    """A copy of the example workspace whose agents and test command go through the launch
    counter; the variant's settings are written to its baton.toml so the resume reads them too."""
    shutil.copytree(EXAMPLE, dest)
    root = Path(os.path.realpath(dest))
    shutil.copy(AGENT, root / ".claude" / AGENT.name)
    keys = {"script": f'".claude/{AGENT.name}"',
            "test-command": f'["{{python}}", "{root / ".claude" / AGENT.name}"]',
            **variant.workflow}
    toml = root / ".claude" / "baton.toml"
    lines = toml.read_text(encoding="utf-8").splitlines()
    header = lines.index("[workflow]")
    end = next((i for i in range(header + 1, len(lines)) if lines[i].startswith("[")),
               len(lines))
    kept = [ln for ln in lines[header + 1:end] if ln.split("=")[0].strip() not in keys]
    lines[header + 1:end] = [f"{k} = {v}" for k, v in keys.items()] + kept
    toml.write_text("\n".join(lines) + "\n", encoding="utf-8")
    settings = tomllib.loads(toml.read_text(encoding="utf-8"))["workflow"]
    assert settings["script"] == f".claude/{AGENT.name}", settings
    common = {**OVERLAP, **variant.behaviour}
    (root / ".claude" / "baton-script.json").write_text(json.dumps(common), encoding="utf-8")
    (root / RUN_BEHAVIOUR).write_text(json.dumps({**common, **variant.killed_run}),
                                      encoding="utf-8")
    return root


def baton_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "baton_lsp", *args]


def environment(generation: str, tag: str) -> dict[str, str]:
    """Which `baton` process launched an agent, and which kill it belongs to, travel in the
    environment the engine hands its agents."""
    env = {k: v for k, v in os.environ.items() if k != "BATON_SCRIPT_BEHAVIOUR"}
    return {**env, GEN_ENV: generation, TAG_ENV: tag}


def spawn_run(root: Path, variant: Variant, tag: str, out: Path) -> subprocess.Popen[bytes]:
    with open(out, "wb") as fh:
        env = {**environment("run", tag), "BATON_SCRIPT_BEHAVIOUR": str(root / RUN_BEHAVIOUR)}
        return subprocess.Popen(baton_argv("run", variant.description, "-w", str(root)),
                                stdin=subprocess.DEVNULL, stdout=fh, stderr=subprocess.STDOUT,
                                cwd=root, env=env, start_new_session=True)


def launches(root: Path) -> list[Launch]:
    path = root / LAUNCHES
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 5:
            out.append(Launch(parts[0], parts[1], int(parts[2]), float(parts[3]), parts[4]))
    return out


def journal_ends(root: Path) -> dict[str, list[float]]:
    """When each step's scripted agent finished (its own journal), to tell what was in
    flight at the kill."""
    out: dict[str, list[float]] = {}
    try:
        text = (root / JOURNAL).read_text(encoding="utf-8")
    except FileNotFoundError:
        return out
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "end":
            out.setdefault(parts[1], []).append(float(parts[3]))
    return out


def check_history(root: Path, workflow_id: str) -> list[str]:
    """Every history file verifies (checksum), parses as a checkpoint and reads as a typed
    run record, and the store finds a newest sound one; returns what failed."""
    store = CheckpointStore(root, workflow_id)
    problems = []
    for name in sorted(os.listdir(store.dir)):
        if not _SEQ.match(name):
            continue
        path = store.dir / name
        data, problem = verify_file(path)
        if problem is not None:
            problems.append(f"history {name}: {problem}")
            continue
        try:
            parse_checkpoint(path.read_bytes(), str(path), path)
            read_record(data or {}, str(path))
        except (CheckpointError, RecordError) as exc:
            problems.append(f"history {name}: {exc}")
    try:
        store.latest()
    except CheckpointError as exc:
        problems.append(f"CheckpointStore.latest: {exc}")
    return problems


WAKE_SECONDS = 1.0
"""Longest wait between two looks at the file while nothing is heard (a safety net: every
checkpoint written makes the watcher's descriptor readable at once)."""


def wait_for(root: Path, path: Callable[[], Path | None], proc: subprocess.Popen[bytes]
             ) -> float | None:
    """The monotonic time at which the file `path()` names exists, or None when the run
    exits first. Woken by inotify on the checkpoint directories (`DirWatcher`, created
    before the first look, so no write is missed) and by the run's exit (a pidfd)."""
    watcher = DirWatcher(root)
    exited = os.pidfd_open(proc.pid)
    try:
        while True:
            with contextlib.suppress(OSError):
                found = path()
                if found is not None and found.exists():
                    return time.monotonic()
            if proc.poll() is not None:
                return None
            fds = [exited] + ([watcher.fileno()] if watcher.native else [])  # type: ignore[list-item]
            select.select(fds, [], [], WAKE_SECONDS if watcher.native else 0.002)
            if watcher.native:
                watcher.read()  # drains the events and watches new workflow directories
    finally:
        os.close(exited)
        watcher.close()


def first_checkpoint(root: Path) -> Path | None:
    base = checkpoints_root(root)
    return next((base / d / "000001.json" for d in os.listdir(base)
                 if (base / d / "000001.json").exists()), None)


def kill_at(root: Path, proc: subprocess.Popen[bytes], cal: Calibration, at: float
            ) -> float:
    """SIGKILL the run's process group `at` seconds (of the calibrated run) after its first
    checkpoint; the wall-clock time of the kill (0 when the run exited before it)."""
    created = wait_for(root, lambda: first_checkpoint(root), proc)
    first = first_checkpoint(root) if created is not None else None
    if created is None or first is None:
        return 0.0
    seq, extra = cal.schedule(at)
    reached = created if seq == 1 else wait_for(root, lambda: first.parent / f"{seq:06d}.json",
                                                proc)
    if reached is None:
        return 0.0
    expected = cal.marks[seq - 1]
    pace = min(4.0, max(0.5, (reached - created) / expected)) if expected > 0.05 else 1.0
    try:  # the kill instant, unless the run ends before it
        proc.wait(timeout=max(0.0, reached + extra * pace - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    else:
        return 0.0
    killed = time.time()
    os.killpg(proc.pid, signal.SIGKILL)  # the engine: agents run in their own groups
    return killed


def alive_with_tag(pid: int, tag: str) -> bool:
    """A process of the killed run still running (not a zombie, not a reused pid)."""
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"{TAG_ENV}={tag}".encode() in env


# -- calibration --------------------------------------------------------------------------------


def calibrate(base: Path, variant: Variant) -> Calibration:
    """One uninterrupted run: its timing bounds the kill instants, and it must launch every
    step exactly once and finish."""
    root = prepare(base / f"calibrate-{variant.name}", variant)
    out = base / f"calibrate-{variant.name}.out"
    proc = spawn_run(root, variant, f"calibrate-{variant.name}-{os.getpid()}", out)
    code = proc.wait(RESUME_TIMEOUT)
    ended = time.time()
    if code != 0:
        raise AssertionError(f"calibration run of {variant.name} exited {code}: "
                             + out.read_text(errors="replace")[-2000:])
    (wid,) = list_workflows(root)
    store = CheckpointStore(root, wid)
    written = [e.path.stat().st_mtime for e in store.entries()]
    data = store.latest().data or {}
    steps = data.get("baton", {}).get("steps", {})
    counts = Counter(launch.step for launch in launches(root))
    twice = [s for s, c in counts.items() if c != 1]
    if data.get("status") != "complete" or twice or set(counts) != set(steps):
        raise AssertionError(f"calibration run of {variant.name}: status {data.get('status')},"
                             f" launched {dict(counts)}, recorded {sorted(steps)}")
    shutil.rmtree(root, ignore_errors=True)
    return Calibration(tuple(t - written[0] for t in written), ended - written[0],
                       frozenset(steps))


# -- one kill -----------------------------------------------------------------------------------


def one_kill(base: Path, seed: int, index: int, variants: tuple[Variant, ...],
             calibration: dict[str, Calibration], keep_failed: bool) -> KillResult:
    """Draw a kill instant until one lands in a resumable run (the workflow exists and is not
    complete), then check the history, resume and count launches."""
    rng = random.Random(f"{seed}:{index}")
    variant = rng.choice(variants)
    cal = calibration[variant.name]
    result = KillResult(index, variant.name)
    tag = f"{seed}-{index}-{os.getpid()}"
    for draw in range(MAX_DRAWS):
        result.draws = draw + 1
        offset = rng.uniform(0.0, cal.marks[-1])  # up to the final checkpoint's write
        work = base / f"kill-{index:04d}-{draw}"
        work.mkdir(parents=True)
        root = prepare(work / "ws", variant)
        proc = spawn_run(root, variant, tag, work / "run.out")
        t_kill = kill_at(root, proc, cal, offset)
        code = proc.wait(30)
        result.offset = offset
        ids = list_workflows(root)
        if code == 0:
            result.redraws["run finished before the kill"] += 1
        elif code != -signal.SIGKILL:
            tail = (work / "run.out").read_text(errors="replace")[-800:].strip()
            result.problems.append(f"baton run exited {code} on its own: {tail}")
            break
        elif not ids:
            result.redraws["killed before the workflow existed"] += 1
        else:
            (wid,) = ids
            result.load_failures = check_history(root, wid)
            try:
                latest = CheckpointStore(root, wid).latest()
            except CheckpointError:
                break  # already a load failure: nothing sound to resume from
            if (latest.data or {}).get("status") == "complete" and not result.load_failures:
                result.redraws["killed after the final checkpoint"] += 1
            else:
                _resume_and_count(result, root, wid, latest.sequence, latest.data or {},
                                  t_kill, tag, cal)
                break
        # not resumed: this run's agents finish on their own before the directory goes
        left_alive([launch.pid for launch in launches(root)], tag, grace=10.0)
        shutil.rmtree(work, ignore_errors=True)
    else:
        result.problems.append(f"no kill landed in a resumable run in {MAX_DRAWS} draws")
    if result.failed and keep_failed:
        result.kept = work
    else:
        shutil.rmtree(work, ignore_errors=True)
    return result


def left_alive(pids: list[int], tag: str, grace: float = 3.0) -> list[int]:
    """The killed run's agents still running `grace` seconds from now at the latest (a group
    stopped a moment ago may take a few milliseconds to go): each exit is waited on through
    a pidfd."""
    fds: dict[int, int] = {}
    try:
        for pid in pids:
            if alive_with_tag(pid, tag):
                with contextlib.suppress(OSError):  # gone in between
                    fds[pid] = os.pidfd_open(pid)
        deadline = time.monotonic() + grace
        while fds and (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select(list(fds.values()), [], [], left)
            for pid, fd in list(fds.items()):
                if fd in ready:
                    os.close(fds.pop(pid))
        return [pid for pid in fds if alive_with_tag(pid, tag)]
    finally:
        for fd in fds.values():
            os.close(fd)


def _resume_and_count(result: KillResult, root: Path, wid: str, seq: int, data: dict[str, Any],
                      t_kill: float, tag: str, cal: Calibration) -> None:
    baton = data.get("baton") or {}
    steps = baton.get("steps") or {}
    result.seq, result.event = seq, str(baton.get("event", ""))
    result.state = str((data.get("state_machine") or {}).get("current_state", ""))
    done = {sid for sid, s in steps.items() if isinstance(s, dict) and s.get("status") == "done"}
    result.done_before = tuple(sorted(done))
    ends = journal_ends(root)
    before = [launch for launch in launches(root) if launch.generation == "run"]
    result.in_flight = tuple(sorted(  # (the test command journals no end: `done` says it)
        launch.step for launch in before
        if launch.at <= t_kill and launch.step not in done
        and not any(launch.at < e <= t_kill for e in ends.get(launch.step, []))))
    with_artifact = {launch.step for launch in before if launch.step not in done
                     and launch.artifact and _nonempty(launch.artifact)}

    result.orphans_at_resume = sum(alive_with_tag(launch.pid, tag) for launch in before)
    start = time.monotonic()
    try:
        r = subprocess.run(baton_argv("resume", wid, "-w", str(root)), capture_output=True,
                           text=True, timeout=RESUME_TIMEOUT, cwd=root,
                           env=environment("resume", tag), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        result.problems.append(f"baton resume timed out after {RESUME_TIMEOUT:.0f} s")
        return
    result.resume_seconds = time.monotonic() - start
    result.orphans_stopped = r.stdout.count("stopping agent process group")
    final = None
    try:
        final = CheckpointStore(root, wid).latest().data or {}
    except CheckpointError as exc:
        result.problems.append(f"after resume: {exc}")
    status = (final or {}).get("status")
    recorded = {sid: (s or {}).get("status")
                for sid, s in ((final or {}).get("baton") or {}).get("steps", {}).items()}
    # the iteration loop may need fewer iterations after a resume (an orphan finished one)
    unfinished = sorted({sid for sid, st in recorded.items() if st != "done"}
                        | {sid for sid in cal.steps if sid not in recorded
                           and not sid.startswith("implement.iteration-")})
    if r.returncode == 0 and status == "complete" and not unfinished:
        result.resumed = True
    else:
        result.problems.append(f"baton resume exited {r.returncode}, status {status}, steps not "
                               f"done: {unfinished}; {(r.stderr or r.stdout)[-800:].strip()}")
    result.load_failures += [f"after resume: {p}" for p in check_history(root, wid)]

    for launch in launches(root):
        if launch.generation != "resume":
            continue
        if launch.step in done:
            result.rerun_finished.append(
                f"{launch.step} (done in checkpoint {seq:06d}, launched again by resume)")
        elif launch.step in with_artifact:
            result.rerun_unrecorded.append(launch.step)
        elif any(b.step == launch.step for b in before):
            result.rerun_interrupted.append(launch.step)
    result.orphans_left = left_alive([launch.pid for launch in before], tag)
    # An orphan of the killed run must not still be working on a step the resume runs again:
    # more agents of that step finishing after the resume launched it than the resume launched.
    ends = journal_ends(root)
    resumed = [launch for launch in launches(root) if launch.generation == "resume"]
    for step, n in sorted(Counter(launch.step for launch in resumed).items()):
        first = min(launch.at for launch in resumed if launch.step == step)
        if sum(e > first for e in ends.get(step, [])) > n:
            result.problems.append(f"{step}: an agent of the killed run was still running when "
                                   "the resume launched the step again")


def _nonempty(path: str) -> bool:
    try:
        return os.path.getsize(path) > 0
    except OSError:
        return False


# -- the loop -----------------------------------------------------------------------------------


def run_kills(base: Path, kills: int, seed: int, jobs: int = 1,
              variants: Iterable[Variant] = VARIANTS, keep_failed: bool = True,
              progress: Callable[[KillResult], None] | None = None) -> Summary:
    """`kills` random kills (`jobs` at a time), each followed by a resume."""
    chosen = tuple(variants)
    start = time.monotonic()
    base.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max(1, jobs)) as pool:  # calibrate under the loop's own load
        cal = dict(zip((v.name for v in chosen),
                       pool.map(lambda v: calibrate(base, v), chosen), strict=True))
        results = []
        for res in pool.map(lambda i: one_kill(base, seed, i, chosen, cal, keep_failed),
                            range(kills)):
            results.append(res)
            if progress is not None:
                progress(res)
    return Summary(seed, results, time.monotonic() - start, cal)


def new_seed() -> int:
    """The seed from BATON_CRASH_SEED, else a fresh one (printed with every report)."""
    given = os.environ.get("BATON_CRASH_SEED", "").strip()
    return int(given) if given else random.SystemRandom().randrange(1, 2**31)

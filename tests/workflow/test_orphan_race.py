"""`kill -9` of `baton run` in the instants around an agent's spawn, then `baton resume`: the
resume must find the killed engine's agent in `run.json` and stop it before launching its
own, so no step ever runs twice at once.

The killed run's research agent outlives its engine (`outlive`: it keeps working with its
stdout gone) and is slow; the resume's is fast. The scripted agent journals `start`, `end`
and — when a resume stops it with SIGTERM — `stop` with timestamps in
`.claude/tmp/scripted_runs.log`; sweeping those lines in time order, two agents of one step
may never be running together. The kill instant is drawn uniformly from the first
milliseconds after the engine announces the step (its `step running` event comes right
before the spawn), where the spawn and the owner record are. BATON_RACE_TRIES changes the
count; BATON_RACE_SEED reproduces a draw.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from .conftest import Run, Workspace, make_ws

TRIES = int(os.environ.get("BATON_RACE_TRIES", "16"))
WINDOW = 0.05
"""Seconds after the `running` event over which kill instants are drawn: before the spawn,
while the agent is held, and after it started work (then the resume must stop it)."""
TAG = "BATON_RACE_TAG"
SLOW = {"research.*": {"sleep": 1.5, "outlive": True}}


def tagged(tag: str) -> list[int]:
    """Live processes (not zombies) carrying `tag` in their environment."""
    out = []
    marker = f"{TAG}={tag}".encode()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            env = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in env and state not in (b"Z", b"X"):
            out.append(int(name))
    return out


def most_at_once(ws: Workspace, step: str) -> int:
    """The largest number of agents of `step` running at one time, from the journal: a
    start with no end or stop yet counts as still running."""
    marks = sorted((at, 1 if kind == "start" else -1) for kind, s, _, at in ws.runs()
                   if s == step)
    running = peak = 0
    for _, delta in marks:
        running += delta
        peak = max(peak, running)
    return peak


def spin_until(deadline: float) -> None:
    """A busy wait to a precise instant (the kill offset is the experiment, not a wait for
    something to happen; `sleep` overshoots by more than the window on a loaded VM)."""
    while time.perf_counter() < deadline:
        pass


def one_try(ws: Workspace, rng: random.Random, tag: str) -> dict[str, object]:
    slow = ws.root / ".claude" / "race-killed.json"
    slow.write_text(json.dumps(SLOW))
    ws.behave({"research.*": {"sleep": 0.05}})
    env = {**os.environ, "BATON_SCRIPT_BEHAVIOUR": str(slow), TAG: tag}
    proc = subprocess.Popen(
        [sys.executable, "-m", "baton_lsp", "run", "Look at logging", "--scope",
         "research-only", "--complexity", "1", "--id", "race", "--events", "--workspace",
         str(ws.root)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=ws.root, env=env, start_new_session=True)
    run = Run(proc)
    run.wait_event(lambda e: e.get("event") == "step" and e.get("status") == "running")
    offset = rng.uniform(0.0, WINDOW)
    spin_until(time.perf_counter() + offset)
    os.kill(proc.pid, signal.SIGKILL)  # the engine only: its agents have their own groups
    proc.wait(30)
    r = ws.baton("resume", "race")
    assert r.returncode == 0, r.stdout + r.stderr
    runs = [x for x in ws.runs() if x[1] == "research.1"]
    left = tagged(tag)
    for pid in left:  # a leftover must not run into the next try
        os.kill(pid, signal.SIGKILL)
    return {"offset_ms": round(offset * 1000, 2),
            "starts": sum(1 for k, *_ in runs if k == "start"),
            "stopped": sum(1 for k, *_ in runs if k == "stop"),
            "peak": most_at_once(ws, "research.1"), "left_running": len(left),
            "stopped_by_resume": "stopping agent process group" in r.stdout}


def test_kill_9_around_agent_spawn_never_runs_a_step_twice_at_once(tmp_path: Path) -> None:
    seed = int(os.environ.get("BATON_RACE_SEED") or random.randrange(1 << 30))
    rng = random.Random(seed)
    results = []
    for i in range(TRIES):
        ws = make_ws(tmp_path / f"try-{i}")
        results.append(one_try(ws, rng, f"{seed}-{i}-{os.getpid()}"))
    twice = [r for r in results if r["peak"] > 1]
    counts = Counter("stopped by the resume" if r["stopped_by_resume"] else "nothing to stop"
                     for r in results)
    report = (f"seed {seed}: {TRIES} kills within {WINDOW * 1000:.0f} ms of the spawn; "
              f"{len(twice)} ran the step twice at once; {dict(counts)}; "
              f"agents left running after the resume: {sum(r['left_running'] for r in results)}"
              f"\n" + "\n".join(str(r) for r in results))
    print(report)
    assert not twice, report
    assert not any(r["left_running"] for r in results), report
    # the draw reached agents that had started work, and the resume stopped them
    assert counts["stopped by the resume"] >= 1, report

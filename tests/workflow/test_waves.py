"""Wave scheduling with real agent processes: the seeds' 8-phase example runs as five
waves (1 | 2,3,4 | 5,6 | 7 | 8), phases of a wave overlap, `max_parallel` bounds them."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

from .conftest import Workspace

SEED_PLAN = [[], [1], [1], [1], [2, 3], [4], [5, 6], [7]]


def _intervals(ws: Workspace) -> dict[str, tuple[float, float]]:
    starts = {s: t for k, s, _, t in ws.runs() if k == "start"}
    ends = {s: t for k, s, _, t in ws.runs() if k == "end"}
    return {s.removeprefix("implement.phase-"): (starts[s], ends[s]) for s in ends
            if s.startswith("implement.")}


def test_the_seed_example_runs_in_five_waves(ws: Workspace) -> None:
    plan = ws.write_plan(SEED_PLAN)
    # each phase of a wave waits until its siblings have started (a phase left waiting fails
    # the run): the waves' phases overlap however slow the machine, and no timing is read
    waves = (("2", "3", "4"), ("5", "6"))
    ws.behave({f"implement.phase-{p}": {"meet": [f"implement.phase-{q}" for q in wave]}
               for wave in waves for p in wave})
    ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan),
             "--max-parallel", "4", check=True)
    cp = json.loads(sorted((ws.root / ".claude/data/checkpoints").glob("*/0*.json"))[-1]
                    .read_text())
    assert cp["workflow_state"]["wave_structure"] == {
        "1": [1], "2": [2, 3, 4], "3": [5, 6], "4": [7], "5": [8]}
    iv = _intervals(ws)
    # a wave starts only after every phase of the one before it ended (journal order); how
    # much time the waves save is a benchmark's figure, not a test's
    order = [["1"], ["2", "3", "4"], ["5", "6"], ["7"], ["8"]]
    for earlier, later in itertools.pairwise(order):
        for before in earlier:
            for after in later:
                assert iv[after][0] >= iv[before][1], (before, after, iv)


def test_phases_run_one_after_another_never_meet(ws: Workspace) -> None:
    """The check above can fail: with one phase at a time, a phase waiting for its sibling
    to start waits in vain and fails the run."""
    plan = ws.write_plan([[], [], []])
    ws.behave({"implement.phase-1": {"meet": ["implement.phase-2"], "meet_within": 3}})
    r = ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan),
                 "--max-parallel", "1")
    assert r.returncode != 0
    assert "implement.phase-2 never started while implement.phase-1 ran" in \
        r.stdout + r.stderr + json.dumps(ws.errors())


def test_max_parallel_bounds_a_wave(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1], [1], [1], [1]])
    ws.behave({"implement.*": {"sleep": 0.3}})
    ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan),
             "--max-parallel", "2", check=True)
    iv = _intervals(ws)
    events = sorted([(s, 1) for s, _ in iv.values()] + [(e, -1) for _, e in iv.values()])
    running = peak = 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 2


DEPENDS_ON_PLAN = """# Implementation Plan: Task #792 — Right-size slash-command `model:`

- **Task**: 792 - right_size_command_model_tiers
- **Status**: [NOT STARTED]

## Implementation Phases

### Phase 1: OMIT-FIELD edits (remove `model: opus`) [NOT STARTED]

- **Tasks:**
  - [ ] omit

**Depends on**: none

### Phase 2: DOWNGRADE-TO-SONNET edits (`opus` -> `sonnet`) [NOT STARTED]

**Depends on**: none

### Phase 3: Root-cause template fix [NOT APPLICABLE]

**Depends on**: none

### Phase 4: Verification greps [NOT STARTED]

**Depends on**: 1, 2, 3

### Phase 5: Flag the resync step [NOT STARTED]

- **Depends on:** 4
"""
"""The dialect of nvim/specs/792_right_size_command_model_tiers/plans/ (its phases 1, 2 and 4,
with phase 3 marked as ProofChecker's 202 plan marks its phases), plus a phase 5 in the bullet
spelling of nvim/.claude/context/formats/plan-format.md."""


def test_a_depends_on_plan_runs_the_waves_baton_graph_draws(ws: Workspace) -> None:
    plan = ws.root / ".claude/specs/792_right_size/plans/01_right-size.md"
    plan.parent.mkdir(parents=True)
    plan.write_text(DEPENDS_ON_PLAN)
    def graph(*args: str) -> str:  # `baton graph` takes no --workspace: a real process
        return subprocess.run([sys.executable, "-m", "baton_lsp", "graph", str(plan), *args],
                              capture_output=True, text=True, timeout=120, check=True).stdout

    assert json.loads(graph("--format", "json"))["waves"] == [["1", "2", "3"], ["4"], ["5"]]
    drawn = graph()
    assert "Wave 1 [parallel]: Phase 1" in drawn and "No phase declares" not in drawn
    ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan), check=True)
    cp = json.loads(sorted((ws.root / ".claude/data/checkpoints").glob("*/0*.json"))[-1]
                    .read_text())
    # the engine's reading: phase 3 is [NOT APPLICABLE], terminal, so it is not run
    assert cp["workflow_state"]["wave_structure"] == {"1": [1, 2], "2": [4], "3": [5]}
    assert "implement.phase-3" not in ws.started("implement.")
    assert sorted(ws.started("implement.")) == [f"implement.phase-{i}" for i in (1, 2, 4, 5)]

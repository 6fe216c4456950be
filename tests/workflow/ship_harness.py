"""The engine's own objects for shipped-phase tests (issue 36), in this process: a real
workflow record, store and lock (`initialize` pre-calculates the paths), its `Isolation`,
and the worker's side played by `shipping` in a directory outside the workspace. Run as
`python -m tests.workflow.ship_harness ROOT WID WORKER MARK`, it is a caller that lands a
shipped phase's bundle and is SIGKILLed once the bundle is kept (`MARK` appears), before
anything is imported or recorded.
"""

from __future__ import annotations

import asyncio
import copy
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

from baton_lsp.model.states import Scope, StepStatus
from baton_lsp.runs import confine
from baton_lsp.runs.record import PhaseGit, StepRecord
from baton_lsp.runs.store import CheckpointStore
from baton_lsp.workflow import resume, shipping
from baton_lsp.workflow.isolation import Isolation
from baton_lsp.workflow.request import RunRequest, new_record
from baton_lsp.workflow.run import Run
from baton_lsp.workflow.state_machine import WorkflowStateMachine
from baton_lsp.workflow.states.implement import landing, ship
from baton_lsp.workflow.states.initialize import initialize
from baton_lsp.workspace.config import load_config
from tests.conftest import SCRIPTED_WORKFLOW_CONFIG

GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=root, check=True,
                          capture_output=True, text=True).stdout


PLAN = ".claude/specs/001_feature/plans/001_feature_plan.md"


def make_repo(root: Path, deps: list[list[int]], files: dict[str, str] | None = None,
              plan_at: str = PLAN, top: Path | None = None) -> Path:
    """A workspace that is a git repository with one commit (or lies in one whose top is
    `top`): the scripted configuration, a plan of `deps` (in its topic directory, or
    `plan_at`) and `files`. Returns the plan."""
    (root / ".claude" / "agents").mkdir(parents=True)
    (root / ".claude" / "baton.toml").write_text(SCRIPTED_WORKFLOW_CONFIG)
    plan = root / plan_at
    plan.parent.mkdir(parents=True)
    lines = ["# Feature Plan", "", "## Metadata", "- **Status**: [NOT STARTED]", "",
             "## Implementation Phases", ""]
    for i, d in enumerate(deps, 1):
        lines += [f"### Phase {i}: Step {i} [NOT STARTED]",
                  f"dependencies: [{', '.join(map(str, d))}]", "", "Tasks:", f"- [ ] task {i}",
                  ""]
    plan.write_text("\n".join(lines))
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(top or root, "init", "-q", "-b", "main")
    git(top or root, "add", "-A")
    git(top or root, "commit", "-qm", "base")
    return plan


def open_run(root: Path, wid: str, plan: Path) -> tuple[Run, Isolation]:
    """A new implement-only workflow `wid` of `plan`, initialized (its record saved, its
    lock held) as `baton run` makes it, and its isolation."""
    run = Run(root, load_config(root))
    run.store = CheckpointStore(run.root, wid)
    run.store.acquire()
    req = RunRequest("Implement the plan", scope=Scope.IMPLEMENT_ONLY, plan_path=str(plan))
    run.hold(new_record(wid, req, project=root.name, settings=run.settings, command="test"))
    run.sm = WorkflowStateMachine(Scope.IMPLEMENT_ONLY)
    run.save("created")
    asyncio.run(initialize(run))
    iso = Isolation.of(run)
    assert iso is not None
    return run, iso


def resume_run(root: Path, wid: str) -> tuple[Run, Isolation]:
    """Workflow `wid` from its newest checkpoint and the owner record a killed engine left,
    as `baton resume` reads them (`Engine.resume`)."""
    run = Run(root, load_config(root))
    run.store = CheckpointStore(run.root, wid)
    run.store.acquire()
    entry = run.store.latest(None)
    run.hold(resume.baton_record(copy.deepcopy(entry.data) or {}, str(entry.path)))
    run.sm = resume.restore_machine(run.record)
    run.topic = resume.topic_of(run.paths)
    run.launched = resume.launched_before(run)
    iso = Isolation.of(run)
    assert iso is not None
    return run, iso


def phase_inputs(run: Run, plan: Path, pid: str) -> dict[str, str | None]:
    """A phase without dependencies' inputs, as the implement state computes them."""
    return {f"{plan}#phase-{pid}": run.plans.phase_hashes(plan).get(pid)}


def summary_of(run: Run, pid: str) -> Path:
    return Path(str(run.paths.summaries_dir)) / f"phase_{pid}_summary.md"


def work(tree: Path, pid: str, files: dict[str, str] | None = None) -> None:
    """What a scripted phase agent does in its tree: its own module, the given files, and
    the files Baton's staging leaves out (the state file's copy, a checkpoint-like file)."""
    for rel, text in {f"src/phase_{pid}.py": f"PHASE = {pid!r}\n", **(files or {})}.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    (tree / ".claude" / "tmp").mkdir(parents=True, exist_ok=True)
    (tree / ".claude" / "tmp" / "workflow_copy.sh").write_text("export X=1\n")
    (tree / ".claude" / "data").mkdir(parents=True, exist_ok=True)
    (tree / ".claude" / "data" / "scratch.json").write_text("{}\n")


def shipped_worker(shipment: shipping.Shipment, into: Path, pid: str,
                   files: dict[str, str] | None = None) -> bytes:
    """The worker's side of a shipped phase, from what a task carries (pickled, as Dask
    sends it): check the base out in `into`, the scripted change, commit and bundle."""
    task = pickle.loads(pickle.dumps(shipment.for_worker()))
    work(task.checkout(into), pid, files)
    return task.bring_back(into)


def done_step(record: PhaseGit) -> StepRecord:
    return StepRecord(state="implement", role="implement", status=StepStatus.DONE, git=record)


def land_record(iso: Isolation, pid: str, shipment: shipping.Shipment) -> PhaseGit:
    """The git record `landing` sets on a phase's step (its returned bundle landed)."""
    step = StepRecord()
    landing(iso, pid, shipment)(step)
    assert step.git is not None
    return step.git


def main(argv: list[str]) -> None:
    """The caller killed after it kept the worker's bundle: phase 1 launched (as an
    executor records a remote attempt: `launched`, the attempt's log, the summary the
    worker returned), its bundle received and kept, then it blocks until SIGKILL."""
    root, wid, worker, mark = Path(argv[0]), argv[1], Path(argv[2]), Path(argv[3])
    plan = root / PLAN
    run, iso = open_run(root, wid, plan)
    assert iso.repo.head() is not None
    sid = "implement.phase-1"
    shipment = ship(run, iso, "1", "Step 1", iso.repo.head() or "",
                    phase_inputs(run, plan, "1"))
    run.launched[sid] = {"attempt": 1, "at": time.time()}
    run.write_owner(durable=True)
    assert run.store is not None
    confine.write_new(run.root, run.store.dir / "logs" / f"{sid}.attempt-1.log",
                      b"PROGRESS: shipped\nIMPLEMENTATION_COMPLETE: 1\n")
    confine.makedirs(run.root, summary_of(run, "1").parent)
    confine.write_atomic(run.root, summary_of(run, "1"),
                         b"# Phase 1 summary\n\nShipped to a worker.\n")
    shipment.receive(shipped_worker(shipment, worker, "1"))
    mark.write_text("kept\n")
    print("kept", flush=True)  # the test waits on this line, not on a poll
    signal.pause()  # killed here: nothing imported, nothing recorded


if __name__ == "__main__":
    main(sys.argv[1:])

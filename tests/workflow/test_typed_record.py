"""The engine holds its record typed (issue 37): sections and steps it reads and writes
through `runs.record` models are folded back into every checkpoint with the fields this
Baton does not know — the seeds', a newer Baton's — kept, never dropped by the typing."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from baton_lsp.model.states import PhaseStatus, RunStatus
from baton_lsp.runs.record import (
    PathsRecord,
    PhaseGit,
    RecordError,
    RunRecord,
    StepRecord,
    read_record,
    unset,
)
from baton_lsp.runs.store import CheckpointStore
from baton_lsp.workflow import resume
from baton_lsp.workflow.run import Run
from tests.workflow.conftest import Workspace
from tests.workflow.record_scenarios import SCENARIOS, differences, golden, run

ROOT = Path(__file__).resolve().parents[2]
GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]


def _newest(ws: Workspace, wid: str) -> dict[str, object]:
    files = sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))
    data: dict[str, object] = json.loads(files[-1].read_text())
    return data


def test_foreign_fields_survive_a_resume_of_the_typed_record(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-typed")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-typed")
    data = store.latest().data
    assert data is not None
    # what the bash side or a newer Baton may have added beside Baton's own fields
    data["baton"]["paths"]["seed_scratch_dir"] = ".claude/tmp/scratch"
    data["baton"]["paths"]["notes"] = {"by": "seed", "n": 2}
    data["seed_top_level"] = ["kept", 1]
    data["baton"]["request"]["seed_origin"] = "/coordinate"
    assert data["baton"]["failure"]["class"] == "permanent"
    data["baton"]["failure"]["seed_retry_hint"] = "Retry 1/2 available"
    store.save(data, "foreign fields added")
    ws.behave({})
    r = ws.baton("resume", "wf-typed")
    assert r.returncode == 0, r.stdout + r.stderr
    last = _newest(ws, "wf-typed")
    assert last["status"] == "complete"
    baton = last["baton"]
    assert isinstance(baton, dict)
    paths = baton["paths"]
    assert paths["seed_scratch_dir"] == ".claude/tmp/scratch"
    assert paths["notes"] == {"by": "seed", "n": 2}
    assert last["seed_top_level"] == ["kept", 1]
    assert baton["request"]["seed_origin"] == "/coordinate"
    assert baton["request"]["topics"] and baton["request"]["description"] == "Plan auth"
    # the failure the resume continued from stays recorded, in the seeds' field names
    assert baton["failure"]["class"] == "permanent" and baton["failure"]["step"] == "plan"
    assert baton["failure"]["seed_retry_hint"] == "Retry 1/2 available"
    # Baton's own paths are all there, as the typed section reads them
    typed = PathsRecord.model_validate(paths)
    assert typed.plan and Path(typed.plan).is_file() and typed.specs_dir
    assert typed.reports and all(Path(p).is_file() for p in typed.reports)
    assert set(paths) == {"topic_dir", "topic_number", "reports", "plan", "reports_dir",
                          "plans_dir", "summaries_dir", "debug_dir", "specs_dir",
                          "seed_scratch_dir", "notes"}


def test_a_fresh_run_records_every_path_and_no_unset_one(ws: Workspace) -> None:
    ws.baton("run", "Research the greeting", "--scope", "research-only", "--complexity", "1",
             "--id", "wf-fresh", check=True)
    first = json.loads(sorted((ws.root / ".claude/data/checkpoints/wf-fresh").glob(
        "[0-9]*.json"))[0].read_text())
    assert set(first["baton"]["paths"]) <= {"specs_dir"}  # before initialize fixed the rest
    paths = _newest(ws, "wf-fresh")["baton"]
    assert isinstance(paths, dict)
    assert None not in paths["paths"].values()
    state = (ws.root / ".claude/tmp/workflow_wf-fresh.sh").read_text()
    assert f'export PLAN_PATH="{paths["paths"]["plan"]}"' in state
    assert f'export REPORT_PATH_0="{paths["paths"]["reports"][0]}"' in state


def test_an_iteration_loop_resumed_keeps_its_typed_section_and_foreign_fields(
        ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"\nmax-iterations = 2')
    ws.behave({"implement.iteration-*": {"iterations": 3}})
    plan = ws.write_plan([[]] + [[i] for i in range(1, 6)])
    r = ws.baton("run", "Implement the feature", "--scope", "implement-only", "--plan",
                 str(plan), "--id", "wf-loop")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-loop")
    data = store.latest().data
    assert data is not None
    it = data["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"], it["max_iterations"]) == (2, "max_iterations", 2)
    it["seed_note"] = "kept"
    store.save(data, "foreign field added")
    r = ws.baton("resume", "wf-loop", "--set", "workflow.max-iterations=5")
    assert r.returncode == 0, r.stdout + r.stderr
    baton = _newest(ws, "wf-loop")["baton"]
    assert isinstance(baton, dict)
    it = baton["iteration"]
    assert (it["iteration"], it["halt_reason"], it["max_iterations"]) == (3, "completion", 5)
    assert it["seed_note"] == "kept"
    assert [h["iteration"] for h in it["history"]] == [1, 2, 3]
    assert list(it)[:9] == ["iteration", "continuation_context", "work_remaining",
                            "last_work_remaining", "unchanged", "halt_reason",
                            "context_tokens", "history", "max_iterations"]
    state = (ws.root / ".claude/tmp/workflow_wf-loop.sh").read_text()
    assert 'export ITERATION="3"' in state and 'export HALT_REASON="completion"' in state


def test_the_top_level_run_fields_are_typed_and_written_in_place(ws: Workspace) -> None:
    """`status`, `last_error`, `tests_passing`, `debug_iteration_count` and
    `debug_report_path` read typed from every checkpoint of a real test-and-debug loop, and
    writing them keeps each key where the record has it (no key moves, none is added by a
    read) — what the plain assignments did, so checkpoints stay byte-identical."""
    plan = ws.write_plan([[]])
    ws.behave({"test.*": {"tests": "pass-after-debug"}})
    ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan", str(plan),
             check=True)
    wid = ws.only_workflow()
    seen: set[tuple[object, object]] = set()
    for path in sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json")):
        data = json.loads(path.read_text())
        run = Run(ws.root)
        run.hold(read_record(data))
        assert type(run.status) is RunStatus and run.status == data["status"]
        assert run.tests_passing is data["tests_passing"]
        assert run.debug_iteration_count == data["debug_iteration_count"]
        assert run.debug_report_path == data["debug_report_path"]
        assert run.last_error == data["last_error"]
        seen.add((run.tests_passing, run.debug_iteration_count))
    assert {(None, 0), (False, 0), (False, 1), (True, 1)} <= seen
    assert run.status is RunStatus.COMPLETE and run.debug_report_path is not None
    assert Path(run.debug_report_path).is_file()
    order = list(run.dump())
    run.status, run.last_error = RunStatus.FAILED, "tests failed (exit 1)"
    run.tests_passing, run.debug_iteration_count = False, 2
    dumped = run.dump()
    assert list(dumped) == order
    assert json.loads(json.dumps(dumped))["status"] == "failed"
    assert (dumped["last_error"], dumped["tests_passing"],
            dumped["debug_iteration_count"]) == ("tests failed (exit 1)", False, 2)
    # a seed record without Baton's debug fields reads as "not there yet" and gains none
    seed = {k: v for k, v in data.items()
            if k not in ("tests_passing", "debug_iteration_count", "debug_report_path")}
    run = Run(ws.root)
    run.hold(read_record(seed))
    assert (run.tests_passing, run.debug_iteration_count, run.debug_report_path) == (
        None, 0, None)
    assert set(run.dump()) == set(seed)


def test_timing_state_failures_and_resume_bookkeeping_are_typed(ws: Workspace) -> None:
    """`baton.timing`, `state_failures`, `resumed_from` and `agent_clis` read typed through
    the run, and are changed by assignment: a failure counted on top of a count another
    run (or the seeds) recorded, the state's wall time added to the time it already had."""
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-books")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-books")
    data = store.latest().data
    assert data is not None
    run = Run(ws.root)
    run.hold(read_record(data))
    assert run.state_failures == {"plan": 1} and run.resumed_from is None
    assert set(run.timing) == {"initialize", "research", "plan"}
    assert all(type(ms) is int and ms >= 0 for ms in run.timing.values())
    copy = run.timing
    copy["plan"] = -1  # a read is a copy: nothing changes behind the record's back
    assert data["baton"]["timing"]["plan"] >= 0
    data["baton"]["state_failures"] = {"plan": 1, "research": 2}  # an earlier run's count
    data["baton"]["timing"]["plan"] = 10**9  # so the resume's own time is seen added
    store.save(data, "counts of an earlier run")
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("resume", "wf-books")
    assert r.returncode == 1, r.stdout + r.stderr
    last = _newest(ws, "wf-books")
    baton = last["baton"]
    assert isinstance(baton, dict)
    assert baton["state_failures"] == {"plan": 2, "research": 2}
    assert baton["timing"]["plan"] > 10**9 and type(baton["timing"]["plan"]) is int
    assert type(baton["resumed_from"]) is int and baton["resumed_from"] >= 1
    assert list(baton).index("timing") < list(baton).index("state_failures")


def test_phase_data_is_refilled_on_resume_and_keeps_foreign_entries(ws: Workspace) -> None:
    """`phase_data` read and written through the run: a record whose states have timing
    but no phase entry (written before phase_data was filled) gets them back on resume;
    an entry the seeds' side wrote is kept beside Baton's."""
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-phases")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-phases")
    data = store.latest().data
    assert data is not None
    run = Run(ws.root)
    run.hold(read_record(data))
    assert run.description == "Plan auth"
    assert set(run.phase_data) == {"initialize", "research", "plan"}
    data["phase_data"] = {"seed_phase": {"by": "bash", "n": 1}}
    store.save(data, "phase data of an older Baton")
    ws.behave({})
    r = ws.baton("resume", "wf-phases")
    assert r.returncode == 0, r.stdout + r.stderr
    phases = _newest(ws, "wf-phases")["phase_data"]
    assert isinstance(phases, dict)
    assert phases["seed_phase"] == {"by": "bash", "n": 1}
    assert {"initialize", "research", "plan"} <= set(phases)
    assert isinstance(phases["research"], dict) and phases["research"]


@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_checkpoints_are_what_the_untyped_engine_wrote(scenario: str) -> None:
    """A scripted run, a failed-and-resumed one, an iteration loop and one through the
    research, implementation and testing supervisors write, checkpoint by checkpoint, the
    record the engine wrote through string keys before it held its record typed (the golden
    file, made by that engine; see `record_scenarios`): equal as dicts, times, digests and
    the workspace path aside."""
    want = golden()[scenario]
    got = run(scenario)
    labels = [[str(cp["baton"]["event"]) for cp in cps if isinstance(cp, dict)
               and isinstance(cp.get("baton"), dict)] for cps in (want, got)]
    assert labels[0] == labels[1], "the checkpoints saved differ (before, after)"
    found = [f"checkpoint {i}{d}" for i, (a, b) in enumerate(zip(want, got, strict=True))
             for d in differences(a, b)]
    assert not found, "\n".join(found[:20])


def test_foreign_keys_in_the_typed_seed_sections_survive_a_resume(ws: Workspace) -> None:
    """What the bash side or a newer Baton put inside `workflow_state`, `supervisor_state`
    (in a tier, its workers and aggregate, and a tier this Baton does not know),
    `state_machine`, its classification and `metadata` is in every checkpoint of the resume,
    beside the fields Baton writes there, and in the tier's `.claude/tmp` file."""
    ws.behave({"plan": {"exit": 3}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "4",
                 "--id", "wf-seed")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-seed")
    data = store.latest().data
    assert data is not None
    data["workflow_state"]["seed_context"] = {"by": "coordinate.md", "n": 1}
    research = data["supervisor_state"]["research_supervisor"]
    research["seed_retry_budget"] = 2
    research["workers"][0]["seed_worker_note"] = "kept"
    research["aggregated_metadata"]["seed_digest"] = ["a", "b"]
    data["supervisor_state"]["debug_supervisor"] = {"supervisor_id": "debug_1", "n": 3}
    data["state_machine"]["seed_machine_note"] = "kept"
    data["state_machine"]["classification"]["seed_model"] = "haiku"
    data["metadata"]["seed_host"] = "ci-7"
    usage = {"states": {"research": {"cost_usd": 0.5, "input_tokens": 10, "turns": 2}},
             "total": {"cost_usd": 0.5, "input_tokens": 10, "turns": 2}, "seed_currency": "USD"}
    data["baton"]["usage"] = usage
    store.save(data, "foreign keys added")
    ws.behave({})
    r = ws.baton("resume", "wf-seed")
    assert r.returncode == 0, r.stdout + r.stderr
    files = sorted((ws.root / ".claude/data/checkpoints/wf-seed").glob("[0-9]*.json"))
    every = [json.loads(p.read_text()) for p in files]
    edited = [i for i, cp in enumerate(every) if cp["baton"]["event"] == "foreign keys added"]
    resumed = every[edited[0] + 1:]
    assert len(resumed) >= 3
    assert resumed[-1]["status"] == "complete"
    for cp in resumed:
        ws_ = cp["workflow_state"]
        assert ws_["seed_context"] == {"by": "coordinate.md", "n": 1}
        assert ws_["plan_path"] and ws_["topic_directory"]
        sup = cp["supervisor_state"]
        assert sup["debug_supervisor"] == {"supervisor_id": "debug_1", "n": 3}
        research = sup["research_supervisor"]
        assert research["seed_retry_budget"] == 2
        assert research["workers"][0]["seed_worker_note"] == "kept"
        assert research["aggregated_metadata"]["seed_digest"] == ["a", "b"]
        assert research["aggregated_metadata"]["topics_researched"] == 4
        assert cp["state_machine"]["seed_machine_note"] == "kept"
        assert cp["state_machine"]["classification"]["seed_model"] == "haiku"
        assert cp["metadata"]["seed_host"] == "ci-7" and cp["metadata"]["updated_at"]
        assert cp["baton"]["usage"] == usage  # the scripted agents report none of their own
    assert resumed[-1]["state_machine"]["current_state"] == "complete"
    tmp = ws.root / ".claude" / "tmp"
    assert json.loads((tmp / "research_supervisor.json").read_text()) == research
    assert json.loads((tmp / "debug_supervisor.json").read_text())["n"] == 3
    run = Run(ws.root)
    run.hold(read_record(resumed[-1]))
    held = run.supervisor_state.research_supervisor
    assert held is not None and held.aggregated_metadata.topics_researched == 4
    assert run.workflow_state.plan_path == resumed[-1]["workflow_state"]["plan_path"]
    assert run.usage is not None and run.usage.total == {"cost_usd": 0.5, "input_tokens": 10,
                                                         "turns": 2}
    assert type(run.usage.total["turns"]) is int


def test_an_old_flat_supervisor_section_resumes_nested_and_typed(ws: Workspace) -> None:
    """Baton's flat research section of before the seeds' nesting, with a key of its own,
    is resumed into `supervisor_state.research_supervisor`, read typed there, the key kept."""
    ws.behave({"plan": {"exit": 3}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "4",
                 "--id", "wf-flat")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-flat")
    data = store.latest().data
    assert data is not None
    flat = data["supervisor_state"]["research_supervisor"]
    for key in ("worker_status", "topics_researched"):
        flat.pop(key)
    flat["aggregated_metadata"].pop("topics_researched")
    flat["seed_flat_note"] = "kept"
    data["supervisor_state"] = flat
    store.save(data, "written by an older baton")
    ws.behave({})
    r = ws.baton("resume", "wf-flat")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "moved under research_supervisor" in r.stdout
    last = _newest(ws, "wf-flat")
    state = last["supervisor_state"]
    assert isinstance(state, dict) and set(state) == {"research_supervisor"}
    assert state["research_supervisor"]["seed_flat_note"] == "kept"
    run = Run(ws.root)
    run.hold(read_record(last))
    held = run.supervisor_state.research_supervisor
    assert held is not None and held.worker_status == ["completed"] * 4
    assert held.topics_researched == held.aggregated_metadata.topics_researched == 4
    assert [w.status for w in held.workers] == ["completed"] * 4


def test_a_malformed_supervisor_tier_is_refused_by_name(ws: Workspace) -> None:
    """The engine holds `supervisor_state` typed, so a tier that does not read as one is
    refused when the record is read — the field named, nothing written — never an internal
    error when the run takes the record."""
    ws.behave({"plan": {"exit": 3}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-bad")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-bad")
    data = store.latest().data
    assert data is not None
    data["supervisor_state"]["research_supervisor"] = {"worker_count": "many"}
    store.save(data, "a tier of another tool")
    before = sorted(store.dir.glob("[0-9]*.json"))
    r = ws.baton("resume", "wf-bad")
    assert r.returncode == 2, r.stdout + r.stderr
    assert "supervisor_state.research_supervisor.worker_count: Input should be a valid " \
        "integer" in r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert sorted(store.dir.glob("[0-9]*.json")) == before


def _checkpoints(ws: Workspace, wid: str) -> list[dict[str, object]]:
    files = sorted((ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json"))
    return [json.loads(p.read_text()) for p in files]


def _git(ws: Workspace, *args: str) -> None:
    subprocess.run(["git", *GIT_ID, *args], cwd=ws.root, check=True, capture_output=True)


AGENT_STEP = {"state", "role", "status", "attempts", "artifact", "inputs", "started_at",
              "duration_ms", "process_ms", "finished_at", "sha256", "size", "signals",
              "context"}
"""The keys an agent step's record had when the engine wrote steps as dicts (the record
of the same scripted run before `Run.steps` was typed): a field never set stays absent."""
GIT = {"mode", "branch", "worktree", "base", "target", "top", "status", "commit", "merged",
       "conflicts"}
TEST_STEP = {"state", "role", "status", "attempts", "artifact", "exit_code", "duration_ms",
             "passed", "command"}


def test_every_checkpoint_of_a_run_folds_back_from_the_typed_steps_unchanged(
        ws: Workspace) -> None:
    """A full scripted run in a git repository — a research step retried after a transient
    failure, parallel phases in worktrees merged back, tests failing then passing after a
    debug agent, the document step: every checkpoint's steps read into `StepRecord`s and
    fold back into the same record (as dicts: key order is the model's), every key the
    engine writes is a typed field, and each kind of step has exactly the keys the
    dict-writing engine gave it."""
    ws.write_plan([[], [1], [1]])
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "base")
    ws.behave({"research.1": {"fail_attempts": 1}, "test.*": {"tests": "pass-after-debug"}})
    ws.baton("run", "Build the feature", "--scope", "full-implementation", "--complexity", "2",
             "--id", "wf-steps", check=True)
    records = _checkpoints(ws, "wf-steps")
    kinds: set[str] = set()
    for data in records:
        run = Run(ws.root)
        run.hold(read_record(copy.deepcopy(data)))
        assert all(type(step) is StepRecord for step in run.steps.values())
        for sid, step in run.steps.items():
            assert not step.model_extra, (sid, step.model_extra)  # no key left untyped
            assert step.git is None or not step.git.model_extra
            kinds.add(sid.split(".")[0])
        assert run.dump() == data
    assert kinds == {"research", "plan", "implement", "test", "debug", "document"}
    last = records[-1]["baton"]
    assert isinstance(last, dict)
    steps = last["steps"]
    phases = sorted(sid for sid in steps if sid.startswith("implement.phase-"))
    assert len(phases) >= 2  # the plan agent's plan: parallel phases in worktrees
    assert set(steps) == {"research.1", "research.2", "plan", *phases, "test.1", "debug.1",
                          "test.2", "document"}
    for sid in ("research.1", "research.2"):
        assert set(steps[sid]) == AGENT_STEP | {"metadata"}
    for sid in ("plan", "debug.1", "document"):
        assert set(steps[sid]) == AGENT_STEP
    for sid in phases:
        phase = steps[sid]
        assert set(phase) == AGENT_STEP | {"git"}
        assert set(phase["git"]) == GIT and phase["git"]["status"] == PhaseStatus.MERGED
    for sid in ("test.1", "test.2"):
        assert set(steps[sid]) == TEST_STEP
    assert (steps["test.1"]["passed"], steps["test.2"]["passed"]) == (False, True)
    # `baton status --json` shows what a step has: no empty list for a field never written
    shown = ws.status("wf-steps")["steps"]
    assert set(shown["plan"]) == {"state", "status", "attempts", "artifact", "duration_ms"}
    assert set(shown[phases[0]]) == set(shown["plan"]) | {"git"}


def test_a_retried_step_that_succeeds_keeps_no_failure_of_its_first_attempt(
        ws: Workspace) -> None:
    """The transient failure is on the step in the checkpoint that records it; the attempt
    that succeeds takes `failure` and `message` off again (`unset`), so the record does
    not say "done" and "failed" at once."""
    ws.behave({"research.1": {"fail_attempts": 1}})
    ws.baton("run", "Research the greeting", "--scope", "research-only", "--complexity", "1",
             "--id", "wf-retry", check=True)
    records = _checkpoints(ws, "wf-retry")
    failed = [r["baton"]["steps"]["research.1"] for r in records  # type: ignore[index]
              if r["baton"]["event"] == "step research.1 failed (transient)"]  # type: ignore[index]
    assert len(failed) == 1
    assert failed[0]["failure"] == "transient" and "429" in failed[0]["message"]
    done = _newest(ws, "wf-retry")["baton"]["steps"]["research.1"]  # type: ignore[index]
    assert done["status"] == "done" and done["attempts"] == 2
    assert not {"failure", "message", "barrier"} & set(done)


def test_unset_takes_a_field_off_as_pop_took_a_key() -> None:
    """`unset` restores the default, forgets the field was set (an `exclude_unset` dump
    leaves it out), drops a foreign key, ignores a name the step does not hold — and a
    mutable default is the step's own, not shared."""
    step = StepRecord.model_validate({"state": "plan", "status": "failed", "failure": "fatal",
                                      "message": "no", "x_foreign": 1,
                                      "barrier": {"error": "missing"}})
    step.signals = ["PROGRESS: a signal"]
    unset(step, "failure", "message", "barrier", "x_foreign", "signals", "never_there")
    assert (step.failure, step.message, step.barrier, step.signals) == (None, None, None, [])
    assert step.model_dump(mode="json", exclude_unset=True) == {"state": "plan",
                                                                "status": "failed"}
    step.signals.append("in place")  # the default it got back is a copy
    assert StepRecord().signals == []
    git = PhaseGit(status=PhaseStatus.CONFLICT, conflicts=["a.py"])
    unset(git, "conflicts")
    assert git.model_dump(mode="json", exclude_unset=True) == {"status": "conflict"}


def test_a_foreign_key_inside_a_step_survives_a_resume(ws: Workspace) -> None:
    """A key this Baton does not write, on a step the resume skips as done (a newer Baton's
    or the bash side's), is in every checkpoint the resumed run writes; the re-run step is
    recorded afresh, as the dicts were."""
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-foreign")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-foreign")
    data = store.latest().data
    assert data is not None
    data["baton"]["steps"]["research.1"]["x_foreign"] = 1
    data["baton"]["steps"]["research.1"]["x_newer"] = {"by": "a newer Baton", "n": [1, 2]}
    store.save(data, "foreign step fields added")
    ws.behave({})
    r = ws.baton("resume", "wf-foreign")
    assert r.returncode == 0, r.stdout + r.stderr
    records = _checkpoints(ws, "wf-foreign")
    resumed = [c["baton"] for c in records
               if isinstance(c["baton"], dict) and c["baton"].get("resumed_from")]
    assert len(resumed) >= 3 and records[-1]["status"] == "complete"
    for baton in resumed:
        step = baton["steps"]["research.1"]
        assert step["x_foreign"] == 1
        assert step["x_newer"] == {"by": "a newer Baton", "n": [1, 2]}
        assert step["status"] == "done"
    assert resumed[-1]["steps"]["plan"]["status"] == "done"
    assert not {"x_foreign", "failure", "message"} & set(resumed[-1]["steps"]["plan"])


@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning")
def test_a_step_field_of_the_wrong_type_fails_at_the_write_and_at_the_save(
        ws: Workspace, tmp_path: Path) -> None:
    """Statically where it is written: mypy rejects a wrong type on a step's field and
    the old string-key write (the dicts took anything). At run time the save's
    `read_record` still refuses the record, naming the field (assignment is not
    validated: the type checker covers the engine's own writes)."""
    ws.baton("run", "Research the greeting", "--scope", "research-only", "--complexity", "1",
             "--id", "wf-types", check=True)
    run = Run(ws.root)
    run.hold(read_record(_newest(ws, "wf-types")))
    run.steps["research.1"].attempts = "two"  # type: ignore[assignment]
    with pytest.raises(RecordError, match=r"baton\.steps\.research\.1\.attempts"):
        read_record(run.dump(), "the record saved")
    snippet = tmp_path / "wrong_step_types.py"
    snippet.write_text(
        "from baton_lsp.runs.record import StepRecord\n"
        "from baton_lsp.workflow.run import Run\n\n\n"
        "def write(run: Run, step: StepRecord) -> None:\n"
        "    step.attempts = \"two\"\n"
        "    step.status = \"finished\"\n"
        "    run.steps[\"plan\"][\"attempts\"] = 2\n")
    proc = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-error-summary",
                           "--cache-dir", str(tmp_path / "cache"), "--follow-imports=silent",
                           str(snippet)], cwd=ROOT, capture_output=True, text=True,
                          timeout=900)
    lines = {int(line.split(":")[1]) for line in proc.stdout.splitlines()
             if line.startswith(str(snippet)) and ": error:" in line}
    assert lines == {6, 7, 8}, proc.stdout + proc.stderr


def test_the_run_holds_one_run_record_and_a_save_writes_its_dump(ws: Workspace) -> None:
    """The engine holds the record as one `RunRecord` (no dict beside typed copies): its
    sections are the record's own objects, and a save writes exactly what the record's
    `model_dump` gives, with only the store's stamps (sequence, event, mac, checksum) added."""
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-held")
    assert r.returncode == 1, r.stdout + r.stderr
    run = Run(ws.root)
    assert not hasattr(run, "data") and not run.holds_record
    run.store = CheckpointStore(run.root, "wf-held")
    run.store.acquire()
    try:
        entry = run.store.latest()
        run.hold(resume.baton_record(copy.deepcopy(entry.data) or {}, str(entry.path)))
        run.sm = resume.restore_machine(run.record)
        assert type(run.record) is RunRecord
        assert not any(isinstance(v, dict) and "baton" in v for v in vars(run).values())
        record = run.record
        assert run.steps is record.baton.steps and run.paths is record.baton.paths
        assert run.workflow_state is record.workflow_state
        assert run.supervisor_state is record.supervisor_state
        assert run.failure is record.baton.failure and run.failure is not None
        run.failure = None  # a section cleared is absent, not null
        run.debug_iteration_count = 3
        path = run.save("probe")
    finally:
        run.store.release()
    written = json.loads(path.read_text())
    want = record.model_dump(mode="json", by_alias=True, exclude_unset=True)
    stamps = {"sequence", "event", "mac", "checksum"}
    assert {k: v for k, v in written["baton"].items() if k not in stamps} == \
        {k: v for k, v in want.pop("baton").items() if k not in stamps}
    assert written["baton"]["event"] == "probe"
    assert written["baton"]["sequence"] == entry.sequence + 1
    del written["baton"]
    assert written == want
    assert "failure" not in want and written["debug_iteration_count"] == 3


def test_foreign_top_level_and_baton_keys_survive_a_resume(ws: Workspace) -> None:
    """A key this Baton does not know at the top of the record and one directly in `baton`
    are held by the record (its extras) and written into every checkpoint of the resume."""
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1",
                 "--id", "wf-extra")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-extra")
    data = store.latest().data
    assert data is not None
    data["seed_top_level"] = {"by": "coordinate.md", "n": [1, 2]}
    data["baton"]["newer_baton_section"] = {"kept": True, "list": ["a"]}
    store.save(data, "foreign keys added")
    ws.behave({})
    r = ws.baton("resume", "wf-extra")
    assert r.returncode == 0, r.stdout + r.stderr
    every = _checkpoints(ws, "wf-extra")
    edited = [i for i, cp in enumerate(every)
              if cp["baton"]["event"] == "foreign keys added"]  # type: ignore[index]
    resumed = every[edited[0] + 1:]
    assert len(resumed) >= 3 and resumed[-1]["status"] == "complete"
    for cp in resumed:
        assert cp["seed_top_level"] == {"by": "coordinate.md", "n": [1, 2]}
        assert cp["baton"]["newer_baton_section"] == {  # type: ignore[index]
            "kept": True, "list": ["a"]}
    run = Run(ws.root)
    run.hold(read_record(resumed[-1]))
    assert run.record.model_extra == {"seed_top_level": {"by": "coordinate.md", "n": [1, 2]}}
    extra = run.record.baton.model_extra or {}
    assert extra["newer_baton_section"] == {"kept": True, "list": ["a"]}


@pytest.mark.parametrize("aggregate", [[1, 2], "many", 7])
def test_a_flat_supervisor_section_with_a_malformed_aggregate_is_refused_by_name(
        ws: Workspace, aggregate: object) -> None:
    """An old flat research section (read nested, seed 001's fields filled in) whose
    `aggregated_metadata` is not an object — a hostile or corrupt checkpoint — is refused
    naming the field, by `baton resume` and `baton status`, never with a traceback."""
    ws.behave({"plan": {"exit": 3}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "4",
                 "--id", "wf-flatbad")
    assert r.returncode == 1, r.stdout + r.stderr
    store = CheckpointStore(ws.root, "wf-flatbad")
    data = store.latest().data
    assert data is not None
    flat = data["supervisor_state"]["research_supervisor"]
    flat["aggregated_metadata"] = aggregate
    flat["workers"] = 5  # not a list either
    data["supervisor_state"] = flat
    store.save(data, "a corrupt flat section")
    before = sorted(store.dir.glob("[0-9]*.json"))
    r = ws.baton("resume", "wf-flatbad")
    assert r.returncode == 2, r.stdout + r.stderr
    # named where it is in the file (flat), not where it is read (nested)
    assert "supervisor_state.aggregated_metadata: Input should be a valid dictionary" \
        in r.stderr
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr
    assert sorted(store.dir.glob("[0-9]*.json")) == before
    r = ws.baton("status", "wf-flatbad", "--json")
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    with pytest.raises(RecordError,
                       match=r"supervisor_state\.workers: Input should be a valid list"):
        read_record(data, "the checkpoint")

"""The engine end to end through `baton run/resume/cancel/status`, with the deterministic
scripted agents as real subprocesses and failures injected through their behaviour file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import Workspace, agent_started, checkpointed


def _checkpoint(ws: Workspace, wid: str) -> dict:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


# -- every scope -------------------------------------------------------------------------------


def test_full_implementation_runs_every_state(ws: Workspace) -> None:
    r = ws.baton("run", "Add a login flow and rate limiting", "--complexity", "2", check=True)
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "complete", r.stdout
    assert cp["state_machine"]["current_state"] == "complete"
    assert cp["state_machine"]["completed_states"] == [
        "research", "plan", "implement", "test", "document", "complete"]
    steps = cp["baton"]["steps"]
    assert {s for s in steps} >= {"research.1", "research.2", "plan", "implement.phase-1",
                                  "implement.phase-4", "test.1", "document"}
    topic = Path(cp["baton"]["paths"]["topic_dir"])
    assert topic.parent == ws.root / "specs" and topic.name.startswith("001_")
    for sid, step in steps.items():
        if step.get("artifact"):
            assert Path(step["artifact"]).is_file(), sid
            assert Path(step["artifact"]).is_relative_to(topic)
    # waves of the default plan: 1 | 2,3 | 4
    assert cp["workflow_state"]["wave_structure"] == {"1": [1], "2": [2, 3], "3": [4]}
    assert cp["workflow_state"]["wave_results"]["2"]["parallel"] is True
    assert cp["tests_passing"] is True
    # a checkpoint before and after every transition, and after every phase
    events = [e["event"] for e in (json.loads(p.read_text())["baton"] for p in sorted(
        (ws.root / ".claude/data/checkpoints" / wid).glob("[0-9]*.json")))]
    assert "before research -> plan" in events and "after research -> plan" in events
    assert sum(e.startswith("phase ") for e in events) == 4
    # the state file is kept in step with the real format
    state = (ws.root / ".claude" / "tmp" / f"workflow_{wid}.sh").read_text()
    assert f'export WORKFLOW_ID="{wid}"' in state and 'export CURRENT_STATE="complete"' in state
    assert "PHASE_COMPLETE: 2" in r.stdout and "wave 2/3: phases 2, 3 in parallel" in r.stdout


@pytest.mark.parametrize(("scope", "states"), [
    ("research-only", ["research", "complete"]),
    ("research-and-plan", ["research", "plan", "complete"]),
    ("debug-only", ["research", "plan", "debug", "complete"]),
])
def test_scopes_without_a_plan(ws: Workspace, scope: str, states: list[str]) -> None:
    ws.baton("run", "Investigate the flaky payment retry", "--scope", scope, "--complexity",
             "1", check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "complete"
    assert cp["state_machine"]["completed_states"] == states
    assert cp["state_machine"]["classification"]["workflow_type"] == scope


def test_implement_only_on_an_existing_plan_skips_completed_phases(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1], [1]])
    plan.write_text(plan.read_text().replace("Step 1 [NOT STARTED]", "Step 1 [COMPLETE]"))
    ws.baton("run", "Implement the plan", "--scope", "implement-only", "--plan", str(plan),
             check=True)
    assert sorted(ws.started("implement")) == ["implement.phase-2", "implement.phase-3"]
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["state_machine"]["completed_states"] == ["implement", "complete"]
    assert (plan.parent.parent / "summaries" / "phase_2_summary.md").is_file()


def test_research_and_revise_changes_the_plan_and_keeps_a_backup(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1]])
    before = plan.read_text()
    ws.baton("run", "Revise the plan for OAuth", "--scope", "research-and-revise", "--plan",
             str(plan), "--complexity", "1", check=True)
    assert plan.read_text() != before and "Revised for" in plan.read_text()
    backups = list((plan.parent / "backups").glob("*.md"))
    assert len(backups) == 1 and backups[0].read_text() == before


def test_test_and_debug_loops_until_tests_pass(ws: Workspace) -> None:
    plan = ws.write_plan([[]])
    ws.behave({"test.*": {"tests": "pass-after-debug"}})
    ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan", str(plan),
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "complete" and cp["tests_passing"] is True
    assert cp["debug_iteration_count"] == 1
    hist = [(h["from"], h["to"]) for h in cp["baton"]["history"]]
    assert ("test", "debug") in hist and ("debug", "test") in hist
    assert Path(cp["debug_report_path"]).is_file()


def test_tests_that_never_pass_fail_after_the_debug_budget(ws: Workspace) -> None:
    plan = ws.write_plan([[]])
    ws.behave({"test.*": {"tests": "fail"}, "debug.*": {"fix": False}})
    r = ws.baton("run", "Fix it", "--scope", "test-and-debug", "--plan", str(plan))
    assert r.returncode == 1
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "failed" and "tests still failing after 2 debug" in cp["last_error"]


# -- failures ----------------------------------------------------------------------------------


def test_agent_exit_is_recorded_and_resumable(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 3, "task_error": "validation_error - Empty user prompt"}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "1")
    assert r.returncode == 1 and "FAILED in plan" in r.stdout
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "failed"
    assert cp["error_state"]["failed_state"] == "plan"
    assert "Empty user prompt" in cp["last_error"]
    errs = ws.errors()
    assert errs and errs[-1]["workflow_id"] == wid and errs[-1]["source"] == "plan"
    assert errs[-1]["error_type"] == "validation_error"
    assert errs[-1]["context"]["failure_class"] == "permanent"
    assert ws.started("plan") == ["plan"]  # permanent: not retried
    ws.behave({})
    r = ws.baton("resume", wid, check=True)
    assert ws.started("research") == ["research.1"]  # research not redone
    assert _checkpoint(ws, wid)["status"] == "complete"


@pytest.mark.parametrize(("mode", "expect"), [
    ("nothing", "not found at"),
    ("empty", "is empty"),
    ("elsewhere", "wrong location"),
])
def test_hard_barrier_failures_say_which(ws: Workspace, mode: str, expect: str) -> None:
    ws.behave({"research.1": {"write": mode}})
    r = ws.baton("run", "Research caching", "--scope", "research-only", "--complexity", "1")
    assert r.returncode == 1
    cp = _checkpoint(ws, ws.only_workflow())
    msg = cp["baton"]["steps"]["research.1"]["message"]
    assert expect in msg and "HARD BARRIER FAILED" in msg
    if mode == "elsewhere":
        assert "misplaced_001_" in msg  # names the path the agent reported
    err = next(e for e in ws.errors() if e["source"] == "research.1")
    assert err["error_type"] == "validation_error"
    assert err["context"]["artifact_path"].endswith(".md")
    final = ws.errors()[-1]  # the state's own failure follows the step's
    assert final["source"] == "research" and "0/1 research reports" in final["error_message"]


def test_partial_research_success_at_half_the_reports(ws: Workspace) -> None:
    ws.behave({"research.2": {"exit": 1}})
    ws.baton("run", "Research a and b", "--scope", "research-and-plan", "--complexity", "2",
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["baton"]["research"] | {"wall_ms": 0} == {
        "reports_ok": 1, "reports_total": 2, "partial": True, "failed_topics": ["research.2"],
        "mode": "flat", "wall_ms": 0}
    plan = Path(cp["baton"]["paths"]["plan"]).read_text()
    assert "001_" in plan and "002_" not in plan  # only the good report was handed on


def test_less_than_half_the_reports_fails(ws: Workspace) -> None:
    ws.behave({"research.[23]": {"exit": 1}})
    r = ws.baton("run", "Research", "--scope", "research-only", "--complexity", "3")
    assert r.returncode == 1
    assert "only 1/3 research reports" in _checkpoint(ws, ws.only_workflow())["last_error"]


def test_transient_failure_is_retried(ws: Workspace) -> None:
    ws.behave({"research.1": {"fail_attempts": 1}})
    ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1", check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["baton"]["steps"]["research.1"]["attempts"] == 2
    assert cp["status"] == "complete"
    assert ws.errors()[-1]["context"]["failure_class"] == "transient"
    assert len(ws.errors()) == 1


def test_hang_hits_the_timeout_and_stall_the_watchdog(ws: Workspace) -> None:
    ws.config("timeout = 1.0\nattempts = 1\nstate-retries = 0\n")
    ws.behave({"research.1": {"hang": True}})
    t0 = time.monotonic()
    r = ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1")
    assert r.returncode == 1 and time.monotonic() - t0 < 20
    cp = _checkpoint(ws, ws.only_workflow())
    assert "timed out" in cp["baton"]["steps"]["research.1"]["message"]
    assert any(e["error_type"] == "timeout_error" for e in ws.errors())

    ws.config("stall-timeout = 0.5\nattempts = 2\nstate-retries = 0\n")
    ws.behave({"research.1": {"stall": True}})
    r = ws.baton("run", "Research again", "--scope", "research-only", "--complexity", "1")
    assert r.returncode == 1
    rows = [row for row in ws.status() if row["description"] == "Research again"]
    cp = _checkpoint(ws, rows[0]["workflow_id"])
    step = cp["baton"]["steps"]["research.1"]
    assert "stalled" in step["message"] and step["attempts"] == 2  # transient: retried


# -- resume ------------------------------------------------------------------------------------


def test_kill_9_mid_wave_then_resume_does_not_redo_finished_phases(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1], [1], [1], [2, 3]])
    ws.behave({"implement.phase-[234]": {"sleep": 0.3}, "implement.phase-4": {"sleep": 30}})
    proc = ws.popen("run", "Implement", "--scope", "implement-only", "--plan", str(plan))
    proc.wait_event(agent_started("implement.phase-4"))
    proc.wait_event(checkpointed("phase 2 complete"))
    proc.wait_event(checkpointed("phase 3 complete"))
    os.killpg(proc.pid, signal.SIGKILL)  # the engine and nothing else: agents have own groups
    proc.wait(10)
    wid = ws.only_workflow()
    assert ws.status(wid)["status"] == "interrupted"
    ws.behave({})
    r = ws.baton("resume", wid, check=True)
    assert "stopping agent process group" in r.stdout  # the orphaned phase-4 agent
    started = ws.started("implement")
    assert started.count("implement.phase-1") == 1
    assert started.count("implement.phase-2") == 1 and started.count("implement.phase-3") == 1
    assert started.count("implement.phase-4") == 2 and started.count("implement.phase-5") == 1
    assert _checkpoint(ws, wid)["status"] == "complete"


def test_kill_9_after_two_of_three_research_reports_reruns_only_the_third(
        ws: Workspace) -> None:
    ws.behave({"research.3": {"sleep": 30}})
    proc = ws.popen("run", "Research a, b and c", "--scope", "research-only",
                    "--complexity", "3")
    proc.wait_event(agent_started("research.3"))
    proc.wait_event(checkpointed("step research.1 done"))
    proc.wait_event(checkpointed("step research.2 done"))
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    wid = ws.only_workflow()
    ws.behave({})
    r = ws.baton("resume", wid, check=True)
    assert "[research.1] already done; skipped" in r.stdout
    started = ws.started("research")
    assert (started.count("research.1"), started.count("research.2"),
            started.count("research.3")) == (1, 1, 2)
    assert _checkpoint(ws, wid)["status"] == "complete"


def test_deleted_artifact_is_redone_with_what_depends_on_it(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 1}})
    ws.baton("run", "Research a and b", "--scope", "research-and-plan", "--complexity", "2")
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    Path(cp["baton"]["steps"]["research.1"]["artifact"]).unlink()
    ws.behave({})
    r = ws.baton("resume", wid, check=True)
    assert "research.1: its artifact" in r.stdout
    started = ws.started("research")
    assert (started.count("research.1"), started.count("research.2")) == (2, 1)
    assert started[-1] == "research.1"
    assert _checkpoint(ws, wid)["status"] == "complete"


def test_edited_phase_reruns_only_itself_and_its_dependents(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1], [1], [2]])
    ws.behave({"implement.phase-4": {"exit": 1}})
    ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan))
    wid = ws.only_workflow()
    # the engine ticked phase 2's box when it finished: a reworded task is still an edit
    plan.write_text(plan.read_text().replace("- [x] task 2", "- [x] task 2 (reworded)"))
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 2 and "modified since the checkpoint" in r.stderr
    ws.baton("resume", wid, "--force", check=True)
    started = ws.started("implement")
    assert started.count("implement.phase-1") == 1 and started.count("implement.phase-3") == 1
    assert started.count("implement.phase-2") == 2 and started.count("implement.phase-4") == 2


def test_resume_at_an_earlier_checkpoint(ws: Workspace) -> None:
    ws.baton("run", "Research", "--scope", "research-and-plan", "--complexity", "1",
             check=True)
    wid = ws.only_workflow()
    hist = json.loads(ws.baton("checkpoints", wid, "--json", check=True).stdout)
    at = next(h["n"] for h in hist if h["event"] == "after research -> plan")
    plan = Path(_checkpoint(ws, wid)["baton"]["paths"]["plan"])
    plan.unlink()
    r = ws.baton("resume", wid, "--at", str(at), check=True)
    assert plan.is_file() and "resuming" in r.stdout
    assert ws.started("plan") == ["plan", "plan"]


def test_a_complete_workflow_needs_force(ws: Workspace) -> None:
    ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1", check=True)
    r = ws.baton("resume", ws.only_workflow())
    assert r.returncode == 2 and "already complete" in r.stderr


def test_a_run_whose_given_plan_is_gone_needs_force(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1]])
    ws.behave({"implement.phase-2": {"exit": 1}})
    r = ws.baton("run", "Implement the plan", "--scope", "implement-only", "--plan", str(plan))
    assert r.returncode == 1, r.stdout + r.stderr
    plan.unlink()
    r = ws.baton("resume", ws.only_workflow())
    assert r.returncode == 2
    assert f"the plan {plan} given to the run no longer exists" in r.stderr
    assert "--force" in r.stderr


def test_iteration_records_past_their_limit_or_halted_oddly_need_force(ws: Workspace) -> None:
    from baton_lsp.runs.record import read_record
    from baton_lsp.workflow.resume import resume_problems

    ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1", check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    cp["status"] = "failed"
    assert resume_problems(read_record(cp)) == []
    cp["baton"]["iteration"] = {"iteration": 7, "max_iterations": 5, "halt_reason": "bored"}
    problems = resume_problems(read_record(cp))
    assert "the record is at iteration 7, past max_iterations 5" in problems
    assert any("unknown reason 'bored'" in p and "max_iterations" in p for p in problems)


# -- cancel, locks, concurrency ----------------------------------------------------------------


def test_cancel_stops_agents_and_leaves_a_resumable_checkpoint(ws: Workspace) -> None:
    ws.behave({"research.1": {"hang": True}})
    proc = ws.popen("run", "Research", "--scope", "research-only", "--complexity", "1")
    proc.wait_event(agent_started("research.1"))
    wid = ws.only_workflow()
    owner = json.loads((ws.root / f".claude/data/checkpoints/{wid}/run.json").read_text())
    agent = owner["pgids"][0]
    r = ws.baton("cancel", wid, check=True)
    assert "cancelled" in r.stdout
    assert proc.wait(15) == 130
    with pytest.raises(ProcessLookupError):
        os.killpg(agent, 0)
    assert _checkpoint(ws, wid)["status"] == "cancelled"
    ws.behave({})
    ws.baton("resume", wid, check=True)
    assert _checkpoint(ws, wid)["status"] == "complete"


def test_sigterm_to_baton_run_cancels(ws: Workspace) -> None:
    ws.behave({"research.1": {"hang": True}})
    proc = ws.popen("run", "Research", "--scope", "research-only", "--complexity", "1")
    proc.wait_event(agent_started("research.1"))
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 130
    assert _checkpoint(ws, ws.only_workflow())["status"] == "cancelled"


def test_two_concurrent_resumes_one_is_refused(ws: Workspace) -> None:
    ws.behave({"research.1": {"exit": 1}})
    ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1")
    wid = ws.only_workflow()
    ws.behave({"research.1": {"sleep": 2}})
    first = ws.popen("resume", wid)
    first.wait_event(agent_started("research.1"))
    second = ws.baton("resume", wid)
    assert second.returncode == 3 and "already running" in second.stderr
    assert first.wait(30) == 0


def test_twenty_concurrent_workflows_do_not_cross_talk(ws: Workspace) -> None:
    procs = [ws.popen("run", f"Research topic {i}", "--scope", "research-only",
                      "--complexity", "1", "--quiet") for i in range(20)]
    codes = [p.wait(120) for p in procs]
    assert codes == [0] * 20, [p.stderr.read() for p in procs if p.returncode]
    rows = ws.status()
    assert len(rows) == 20 and all(r["status"] == "complete" for r in rows)
    topics = {r["topic_dir"] for r in rows}
    assert len(topics) == 20
    for r in rows:
        cp = _checkpoint(ws, r["workflow_id"])
        report = Path(cp["baton"]["steps"]["research.1"]["artifact"])
        assert report.is_relative_to(Path(r["topic_dir"]))
        assert cp["workflow_description"] in report.read_text()


# -- hostile input -----------------------------------------------------------------------------


def test_hostile_description_creates_no_file(ws: Workspace) -> None:
    desc = "Research $(touch pwned) and `touch pwned2`; rm -rf ~ && echo $HOME > x"
    ws.baton("run", desc, "--scope", "research-and-plan", "--complexity", "2", check=True)
    for name in ("pwned", "pwned2", "x"):
        assert not list(ws.root.rglob(name)) and not (Path.cwd() / name).exists()
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["workflow_description"] == desc
    state = ws.root / ".claude" / "tmp" / f"workflow_{cp['checkpoint_id']}.sh"
    out = subprocess.run(["bash", "-c", f'source "{state}"; printf %s "$WORKFLOW_DESCRIPTION"'],
                         capture_output=True, text=True, timeout=30, cwd=ws.root)
    assert out.stdout == desc and not (ws.root / "pwned").exists()


def test_paths_escaping_the_workspace_are_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside_plan.md"
    outside.write_text("# P\n\n### Phase 1: X\n")
    r = ws.baton("run", "x", "--scope", "implement-only", "--plan", str(outside))
    assert r.returncode == 2 and "outside the workspace" in r.stderr
    r = ws.baton("run", "x", "--scope", "implement-only", "--plan", "../outside_plan.md")
    assert r.returncode == 2 and "outside the workspace" in r.stderr
    ws.config('script = "../evil.py"\n')
    r = ws.baton("run", "x", "--scope", "research-only", "--complexity", "1")
    assert r.returncode in (1, 2) and "outside the workspace" in (r.stderr + r.stdout)
    assert not (tmp_path / "evil.py").exists()


@pytest.mark.parametrize("args", [
    ["", "--scope", "research-only"],
    ["x", "--complexity", "9"],
    ["x", "--scope", "implement-only"],
    ["x" * 20_001],
])
def test_bad_requests_get_a_message(ws: Workspace, args: list[str]) -> None:
    r = ws.baton("run", *args)
    assert r.returncode == 2 and r.stderr.startswith("baton: error:") and "Traceback" not in \
        r.stderr


def test_plan_with_a_cycle_is_refused_by_the_plan_barrier(ws: Workspace) -> None:
    ws.behave({"plan": {"phases": [[3], [1], [2]]}})
    r = ws.baton("run", "Plan", "--scope", "research-and-plan", "--complexity", "1")
    assert r.returncode == 1
    assert "dependency cycle" in _checkpoint(ws, ws.only_workflow())["last_error"]


def test_a_missing_agent_program_is_fatal_and_not_retried(ws: Workspace) -> None:
    ws.config('runner = "command"\ncommand = ["no-such-agent-cli-xyz", "{artifact}"]\n')
    r = ws.baton("run", "Research", "--scope", "research-only", "--complexity", "1")
    assert r.returncode == 1
    cp = _checkpoint(ws, ws.only_workflow())
    step = cp["baton"]["steps"]["research.1"]
    assert step["attempts"] == 1 and step["failure"] == "fatal"
    assert "no-such-agent-cli-xyz" in step["message"] and "not found" in step["message"]


def test_status_and_checkpoints_in_text(ws: Workspace) -> None:
    ws.behave({"plan": {"exit": 1}})
    ws.baton("run", "Plan it", "--scope", "research-and-plan", "--complexity", "1")
    wid = ws.only_workflow()
    out = ws.baton("status", check=True).stdout
    assert wid in out and "failed" in out and "Plan it" in out
    out = ws.baton("status", wid, check=True).stdout
    assert "state=plan" in out and "research.1" in out and "plan" in out
    newest = sorted((ws.root / f".claude/data/checkpoints/{wid}").glob("[0-9]*.json"))[-1]
    newest.write_text(newest.read_text()[:40])
    out = ws.baton("checkpoints", wid, check=True).stdout
    assert "UNUSABLE" in out and "after research -> plan" in out
    # resume uses the newest sound checkpoint
    ws.behave({})
    ws.baton("resume", wid, check=True)
    assert _checkpoint(ws, wid)["status"] == "complete"
    assert ws.baton("status", "no-such-id").returncode == 2


def test_resume_dry_run_says_what_is_skipped_and_what_runs_again(ws: Workspace) -> None:
    plan = ws.write_plan([[], [1], [1], [2]])
    ws.behave({"implement.phase-4": {"exit": 1}})
    ws.baton("run", "Implement", "--scope", "implement-only", "--plan", str(plan))
    wid = ws.only_workflow()
    # the engine ticked phase 3's box when it finished: a reworded task is still an edit
    assert "- [x] task 3\n" in plan.read_text()
    plan.write_text(plan.read_text().replace("- [x] task 3", "- [x] task 3 (reworded)"))
    preview = json.loads(ws.baton("resume", wid, "--dry-run", "--json", check=True).stdout)
    assert preview["resume_state"] == "implement" and preview["failed_state"] == "implement"
    assert sorted(i["step"] for i in preview["skip"]) == ["implement.phase-1",
                                                          "implement.phase-2"]
    rerun = {i["step"]: i["reason"] for i in preview["rerun"]}
    assert "changed" in rerun["implement.phase-3"] and "exited with code 1" in \
        rerun["implement.phase-4"]
    assert any("modified since" in p for p in preview["problems"])
    text = ws.baton("resume", wid, "--dry-run", check=True).stdout
    assert "skip    implement.phase-1" in text and "needs --force" in text
    assert ws.started("implement").count("implement.phase-1") == 1  # nothing ran


def test_events_are_json_lines_for_editors(ws: Workspace) -> None:
    ws.behave({"plan": {"write": "nothing"}})
    r = ws.baton("run", "Plan", "--scope", "research-and-plan", "--complexity", "1",
                 "--events")
    events = [json.loads(line) for line in r.stdout.splitlines()]
    kinds = [e["event"] for e in events]
    assert "transition" in kinds and "signal" in kinds and "log" in kinds
    wid = ws.only_workflow()
    assert all(e["workflow_id"] == wid for e in events if e["event"] != "log")
    failed = [e for e in events if e["event"] == "step" and e["status"] == "failed"]
    assert failed[0]["step"] == "plan" and failed[0]["context"]["error"] == "missing"
    last = [e for e in events if e["event"] != "log"][-1]
    assert last["event"] == "finished" and last["status"] == "failed"


def test_a_non_utf8_description_is_kept_readable(ws: Workspace) -> None:
    import sys

    r = subprocess.run([sys.executable, "-m", "baton_lsp", "run",
                        b"Research \xff\xfe caching".decode("utf-8", "surrogateescape"),
                        "--scope", "research-only", "--complexity", "1", "--workspace",
                        str(ws.root)], capture_output=True, timeout=60, cwd=ws.root)
    assert r.returncode == 0, r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["workflow_description"] == "Research \ufffd\ufffd caching"
    assert ws.baton("status", check=True).returncode == 0


def test_a_failed_step_is_checkpointed_before_its_state_fails(ws: Workspace) -> None:
    """A step's failure is saved as it happens (its own checkpoint, before the state's
    failure): a merge once left the save unreachable after a `return`, and a kill between
    the two lost the step's failure."""
    ws.behave({"research.*": {"exit": 1}})
    r = ws.baton("run", "Look at logging", "--scope", "research-only", "--complexity", "1")
    assert r.returncode == 1
    cps = sorted((ws.root / ".claude" / "data" / "checkpoints" / ws.only_workflow())
                 .glob("0*.json"))
    events = [json.loads(p.read_text())["baton"]["event"] for p in cps]
    assert "step research.1 failed (permanent)" in events, events
    assert events.index("step research.1 failed (permanent)") < len(events) - 1

"""Three-tier coordination end to end: classification at initialize, the research supervisor
for four or more topics, the implement iteration loop and context accounting — real `baton`
processes, the scripted agents, real files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.model.checkpoint import IterationCheckpoint, SupervisorCheckpoint
from baton_lsp.runs.record import read_record
from baton_lsp.workflow.run import Run

from .conftest import Workspace, checkpointed

CLASSIFIER = '[workflow.agents]\nclassifier = "workflow-classifier"\n'


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def _history(ws: Workspace, wid: str) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(
        (ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))]


def _with_classifier(ws: Workspace, extra: str = "") -> None:
    (ws.root / ".claude" / "agents" / "workflow-classifier.md").write_text(
        "---\nname: workflow-classifier\ndescription: classifies workflows\n---\nClassify.\n")
    ws.config(extra + "\n" + CLASSIFIER)


# -- classification ----------------------------------------------------------------------------


def test_classifier_agent_result_is_saved_before_any_research(ws: Workspace) -> None:
    _with_classifier(ws)
    r = ws.baton("run", "Research caching and plan the cache layer", check=True)
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    cls = cp["state_machine"]["classification"]
    assert cls["source"] == "agent" and cls["workflow_type"] == "research-and-plan"
    assert cls["research_complexity"] == 3 and len(cls["research_topics"]) == 3
    assert cp["state_machine"]["workflow_config"]["scope"] == "research-and-plan"
    assert cp["state_machine"]["completed_states"] == ["research", "plan", "complete"]
    slugs = [t["filename_slug"] for t in cls["research_topics"]]
    assert [Path(p).name for p in cp["baton"]["paths"]["reports"]] == [
        f"{i:03d}_{s}.md" for i, s in enumerate(slugs, 1)]
    # the "classified" checkpoint precedes every research step
    hist = _history(ws, wid)
    at = next(i for i, h in enumerate(hist) if h["baton"]["event"] == "classified")
    assert hist[at]["state_machine"]["classification"] == cls
    assert not any(s.startswith("research.") for s in hist[at]["baton"]["steps"])
    assert "classified (agent): research-and-plan, 3 research topic(s)" in r.stdout
    state = (ws.root / ".claude" / "tmp" / f"workflow_{wid}.sh").read_text()
    assert 'export RESEARCH_COMPLEXITY="3"' in state and "existing_implementation" in state


def test_the_classify_section_is_held_typed_and_saved_as_it_changes(ws: Workspace) -> None:
    """`baton.classify` is the run's `ClassifyRecord` (issue 37): a classifier run's
    checkpoints say not-done while the agent works, then done and announced, written in the
    order the plain dict had (agent, done, explicit, announced)."""
    _with_classifier(ws)
    ws.baton("run", "Research caching and plan the cache layer", check=True)
    sections = []
    for data in _history(ws, ws.only_workflow()):
        run = Run(ws.root)
        run.hold(read_record(data))
        assert run.classify is not None and run.classify.agent
        assert run.classify.explicit == {"scope": False, "complexity": False, "topics": False}
        sections.append((data["baton"]["event"], list(data["baton"]["classify"]),
                         run.classify.done, run.classify.announced))
    assert sections[0] == ("created", ["agent", "done", "explicit"], False, False)
    at = next(i for i, s in enumerate(sections) if s[0] == "classified")
    assert all(not done for _, _, done, _ in sections[:at])
    assert all(s[1:] == (["agent", "done", "explicit", "announced"], True, True)
               for s in sections[at:])


@pytest.mark.parametrize(("mode", "expected"), [
    ("invalid_slug", "research_topics.0.filename_slug: String should match pattern "
                     "'^[a-z0-9_]{1,50}$'"),
    ("wrong_count", "must equal the complexity"),
    ("short_description", "research_topics.2.detailed_description: String should have at "
                          "least 50 characters"),
    ("missing", "printed no CLASSIFICATION_COMPLETE: {json} signal"),
])
def test_invalid_classifier_output_falls_back_to_keywords(ws: Workspace, mode: str,
                                                          expected: str) -> None:
    _with_classifier(ws)
    ws.behave({"classify": {"classification": mode}})
    r = ws.baton("run", "Add a login flow")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "using the keyword classification" in r.stdout
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "complete"
    cls = cp["state_machine"]["classification"]
    assert cls["source"] == "keyword, after the classifier agent failed"
    assert expected in cls["reasoning"]
    step = cp["baton"]["steps"]["classify"]
    assert step["status"] == "failed" and step["failure"] == "permanent"
    assert step["attempts"] == 1  # not retried
    assert ws.started("research")  # the workflow went on
    record = [e for e in ws.errors() if e["source"] == "classify"]
    assert record and expected in record[0]["error_message"]
    assert "classification (keyword, after the classifier agent failed)" in r.stdout


def test_classifier_that_writes_nothing_is_reported_and_keywords_decide(ws: Workspace) -> None:
    _with_classifier(ws)
    ws.behave({"classify": {"write": "nothing", "classification": "missing"}})
    assert ws.baton("run", "Add a login flow").returncode == 0
    cp = _checkpoint(ws, ws.only_workflow())
    msg = cp["baton"]["steps"]["classify"]["message"]
    assert "HARD BARRIER FAILED: artifact not found" in msg and "classification_" in msg
    assert cp["state_machine"]["classification"]["source"].startswith("keyword")


def test_user_flags_win_over_the_classifier(ws: Workspace) -> None:
    _with_classifier(ws)
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "2",
             check=True)
    cls = _checkpoint(ws, ws.only_workflow())["state_machine"]["classification"]
    assert (cls["workflow_type"], cls["research_complexity"], cls["source"]) == (
        "research-only", 2, "agent")


def test_scope_and_topics_given_skip_the_classifier(ws: Workspace) -> None:
    _with_classifier(ws)
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--topic", "sessions",
             "--topic", "password hashing", check=True)
    cls = _checkpoint(ws, ws.only_workflow())["state_machine"]["classification"]
    assert cls["source"] == "flags" and cls["confidence"] == 1.0
    assert [t["short_name"] for t in cls["research_topics"]] == ["sessions", "password hashing"]
    assert all(50 <= len(t["detailed_description"]) <= 500 for t in cls["research_topics"])
    assert ws.started("classify") == []


@pytest.mark.parametrize(("description", "scope", "complexity"), [
    ("Research caching options", "research-only", 2),
    ("Research auth patterns and plan the login flow", "research-and-plan", 2),
    ("Fix the flaky upload test", "debug-only", 2),
    ("A comprehensive rework of the storage layer", "full-implementation", 4),
    ("Quick rename of the config key", "full-implementation", 1),
])
def test_keyword_fallback_without_a_classifier(ws: Workspace, description: str, scope: str,
                                               complexity: int) -> None:
    ws.behave({"research.*": {"exit": 0}, "*": {"exit": 0}})  # classification only matters
    ws.baton("run", description)
    cls = _checkpoint(ws, ws.only_workflow())["state_machine"]["classification"]
    assert (cls["workflow_type"], cls["research_complexity"], cls["source"]) == (
        scope, complexity, "keyword")


def test_kill_after_initialize_then_resume_keeps_the_classification(ws: Workspace) -> None:
    _with_classifier(ws)
    ws.behave({"research.*": {"hang": True}})
    run = ws.popen("run", "Add a login flow")
    event = run.wait_event(lambda e: e.get("event") == "transition"
                           and e.get("source") == "initialize")
    wid = event["workflow_id"]
    os.kill(run.pid, signal.SIGKILL)
    run.wait(10)
    before = _checkpoint(ws, wid)["state_machine"]["classification"]
    assert before["source"] == "agent" and before["research_complexity"] == 3
    ws.behave({})
    ws.baton("resume", wid, check=True)
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "complete"
    assert cp["state_machine"]["classification"] == before
    assert ws.started("classify") == ["classify"]  # not classified again


def test_cleaning_tmp_does_not_reclassify_on_resume(ws: Workspace) -> None:
    _with_classifier(ws)
    ws.behave({"research.*": {"exit": 1}})
    ws.baton("run", "Add a login flow")
    wid = ws.only_workflow()
    before = _checkpoint(ws, wid)["state_machine"]["classification"]
    Path(_checkpoint(ws, wid)["baton"]["steps"]["classify"]["artifact"]).unlink()
    ws.behave({})
    preview = ws.baton("resume", wid, "--dry-run", check=True).stdout
    assert "skip    classify" in preview and "restart in research" in preview
    ws.baton("resume", wid, check=True)
    assert _checkpoint(ws, wid)["state_machine"]["classification"] == before
    assert ws.started("classify") == ["classify"]


def test_state_file_mismatch_is_reported_and_the_checkpoint_wins(ws: Workspace) -> None:
    ws.behave({"research.*": {"exit": 1}})
    ws.baton("run", "Add a login flow", "--scope", "research-only")
    wid = ws.only_workflow()
    state = ws.root / ".claude" / "tmp" / f"workflow_{wid}.sh"
    text = state.read_text()
    assert 'export RESEARCH_COMPLEXITY="2"' in text
    state.write_text(text.replace('export RESEARCH_COMPLEXITY="2"',
                                  'export RESEARCH_COMPLEXITY="4"'))
    ws.behave({})
    r = ws.baton("resume", wid, check=True)
    assert "classification mismatch" in r.stdout and "RESEARCH_COMPLEXITY" in r.stdout
    records = [e for e in ws.errors() if e["source"] == "validate_classification_consistency"]
    assert records and records[0]["error_type"] == "state_error"
    assert records[0]["context"]["differences"]["RESEARCH_COMPLEXITY"] == {
        "state_file": "4", "checkpoint": "2"}
    cp = _checkpoint(ws, wid)
    assert cp["state_machine"]["classification"]["research_complexity"] == 2
    assert len(cp["baton"]["paths"]["reports"]) == 2
    assert 'export RESEARCH_COMPLEXITY="2"' in state.read_text()  # rewritten


# -- research through the supervisor -------------------------------------------------------------


def test_two_topics_run_flat(ws: Workspace) -> None:
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "2",
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["baton"]["research"]["mode"] == "flat"
    assert cp["supervisor_state"] == {}
    assert not (Path(cp["baton"]["paths"]["reports_dir"]) / "SUPERVISOR_CHECKPOINT.json").exists()


def test_four_topics_go_through_the_supervisor(ws: Workspace) -> None:
    ws.behave({"research.*": {"sleep": 0.3}})
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    research = cp["supervisor_state"]["research_supervisor"]  # seed 001's nesting
    sup = SupervisorCheckpoint.model_validate(research)
    assert research["mode"] == "supervisor"
    assert sup.worker_count == 4 and [w.status for w in sup.workers] == ["completed"] * 4
    reports = cp["baton"]["paths"]["reports"]
    for w, report in zip(sup.workers, reports, strict=True):
        assert w.output_path == report and w.duration_ms and w.duration_ms >= 300
        assert w.metadata is not None and w.metadata.title and w.metadata.summary
        assert len(w.metadata.key_findings) == 5
        text = Path(report).read_text()
        assert "findings_count: 5" in text
        meta = json.dumps(research["workers"][0]["metadata"])
        assert len(meta) < len(text) / 2  # metadata, not the report
    agg = sup.aggregated_metadata
    assert agg is not None and agg.reports_count == 4 and agg.reports_created == reports
    assert agg.context_tokens == sum(cp["baton"]["steps"][f"research.{i}"]["context"][
        "passed_tokens"] for i in range(1, 5))
    assert research["aggregated_metadata"]["total_findings"] == 20
    on_disk = json.loads((Path(cp["baton"]["paths"]["reports_dir"]) /
                          "SUPERVISOR_CHECKPOINT.json").read_text())
    assert on_disk == research
    # the four workers overlapped: parallel, not one after another
    runs = ws.runs()
    starts = [t for k, s, _, t in runs if k == "start" and s.startswith("research.")]
    ends = [t for k, s, _, t in runs if k == "end" and s.startswith("research.")]
    assert max(starts) < min(ends)


@pytest.mark.parametrize("failing", [1, 2])
def test_supervisor_partial_success_is_recorded(ws: Workspace, failing: int) -> None:
    ws.behave({f"research.{i}": {"exit": 1} for i in range(1, failing + 1)})
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    sup = cp["supervisor_state"]["research_supervisor"]
    statuses = [w["status"] for w in sup["workers"]]
    assert statuses == ["failed"] * failing + ["completed"] * (4 - failing)
    assert all("exited with code 1" in w["error"] for w in sup["workers"][:failing])
    agg = sup["aggregated_metadata"]
    assert agg["reports_count"] == 4 - failing and len(agg["reports_failed"]) == failing
    assert cp["baton"]["research"]["partial"] is True


def test_supervisor_with_three_of_four_failing_is_an_error(ws: Workspace) -> None:
    ws.behave({f"research.{i}": {"exit": 1} for i in range(1, 4)})
    r = ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4")
    assert r.returncode == 1
    cp = _checkpoint(ws, ws.only_workflow())
    assert "only 1/4 research reports were created" in cp["last_error"]
    assert [w["status"] for w in cp["supervisor_state"]["research_supervisor"]["workers"]] == [
        "failed", "failed", "failed", "completed"]


def test_planning_mode_runs_the_coordinators_invocation_plan(ws: Workspace) -> None:
    ws.config('research-mode = "planning"')
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    steps = cp["baton"]["steps"]
    reports = cp["baton"]["paths"]["reports"]
    assert [i["report_path"] for i in steps["research.coordinator"]["invocations"]] == reports
    assert Path(steps["research.coordinator"]["artifact"]).name == ".invocation-plan.txt"
    assert ws.started()[0] == "research.coordinator"  # the plan before any worker
    assert ws.started("research.coordinator") == ["research.coordinator"]
    assert cp["supervisor_state"]["research_supervisor"]["mode"] == "planning"
    assert all(Path(r).is_file() for r in reports)


def test_planning_mode_hands_only_reports_to_the_planner(ws: Workspace) -> None:
    ws.config('research-mode = "planning"')
    ws.baton("run", "Add a login flow", "--scope", "research-and-plan", "--complexity", "4",
             check=True)
    cp = _checkpoint(ws, ws.only_workflow())
    plan = Path(cp["baton"]["paths"]["plan"]).read_text()
    assert all(Path(r).stem in plan for r in cp["baton"]["paths"]["reports"])
    assert ".invocation-plan" not in plan


def test_complexity_and_topic_count_must_agree(ws: Workspace) -> None:
    r = ws.baton("run", "x", "--complexity", "3", "--topic", "a", "--topic", "b")
    assert r.returncode == 2 and "--complexity 3 but 2 --topic given" in r.stderr
    r = ws.baton("run", "x", *[a for i in range(5) for a in ("--topic", f"t{i}")])
    assert r.returncode == 2 and "at most 4 research topics, got 5" in r.stderr


def test_planning_mode_refuses_a_path_the_orchestrator_did_not_give(ws: Workspace) -> None:
    ws.config('research-mode = "planning"')
    ws.behave({"research.coordinator": {"plan": "wrong_path"}})
    r = ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4")
    assert r.returncode == 1
    msg = _checkpoint(ws, ws.only_workflow())["last_error"]
    assert "not one of the pre-calculated report paths" in msg and "elsewhere.md" in msg
    assert ws.started("research.1") == []


# -- the implement iteration loop --------------------------------------------------------------


def _iterations(ws: Workspace, phases: int, behaviour: dict[str, Any], *extra: str
                ) -> tuple[Any, str, dict[str, Any]]:
    ws.config('implement-mode = "iterations"')
    ws.behave({"implement.iteration-*": behaviour})
    plan = ws.write_plan([[]] + [[i] for i in range(1, phases)])
    r = ws.baton("run", "Implement the feature", "--scope", "implement-only", "--plan",
                 str(plan), *extra)
    wid = ws.only_workflow()
    return r, wid, _checkpoint(ws, wid)


def test_iteration_loop_completes_in_three_iterations(ws: Workspace) -> None:
    r, wid, cp = _iterations(ws, 6, {"iterations": 3})
    assert r.returncode == 0, r.stdout + r.stderr
    it = cp["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"]) == (3, "completion")
    assert [h["work_remaining"] for h in it["history"]] == [
        "Phase_3 Phase_4 Phase_5 Phase_6", "Phase_5 Phase_6", ""]
    assert ws.started("implement.") == [f"implement.iteration-{i}" for i in (1, 2, 3)]
    summaries = Path(cp["baton"]["paths"]["summaries_dir"])
    assert sorted(p.name for p in summaries.glob("phase_*_summary.md")) == [
        f"phase_{i}_summary.md" for i in range(1, 7)]
    flat = ws.root / ".claude" / "data" / "checkpoints" / f"build_{wid}_iteration_3.json"
    doc = IterationCheckpoint.model_validate_json(flat.read_text())
    assert (doc.iteration, doc.halt_reason, doc.work_remaining) == (3, "completion", None)
    assert doc.last_work_remaining == "Phase_5 Phase_6"
    assert doc.continuation_context == str(summaries / "iteration_3_summary.md")


def test_iteration_loop_halts_when_stuck(ws: Workspace) -> None:
    r, wid, cp = _iterations(ws, 4, {"stuck": True})
    assert r.returncode == 1
    it = cp["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"], it["unchanged"]) == (2, "stuck", 2)
    assert "halted (stuck)" in cp["last_error"]
    assert "unchanged for 2 iterations" in cp["last_error"]
    assert ws.started("implement.") == ["implement.iteration-1", "implement.iteration-2"]
    assert status_iteration(ws, wid)["halt_reason"] == "stuck"


def status_iteration(ws: Workspace, wid: str) -> dict[str, Any]:
    return ws.status(wid)["iteration"]


def test_max_iterations_then_resume_continues_at_the_next_iteration(ws: Workspace) -> None:
    r, wid, cp = _iterations(ws, 5, {"phases_per_iteration": 1}, "--set",
                             "workflow.max-iterations=3")
    assert r.returncode == 1
    it = cp["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"]) == (3, "max_iterations")
    assert it["work_remaining"] == "Phase_4 Phase_5"
    assert "max-iterations" in r.stdout  # the next-steps hint
    preview = ws.baton("resume", wid, "--dry-run", "--set", "workflow.max-iterations=3",
                       check=True).stdout
    assert "implement continues at iteration 4/3 (remaining Phase_4 Phase_5, halted: " \
        "max_iterations); that is past max-iterations" in preview
    preview = ws.baton("resume", wid, "--dry-run", "--set", "workflow.max-iterations=10",
                       check=True).stdout
    assert "implement continues at iteration 4/10 (remaining Phase_4 Phase_5" in preview
    r = ws.baton("resume", wid, "--set", "workflow.max-iterations=10", check=True)
    cp = _checkpoint(ws, wid)
    assert (cp["baton"]["iteration"]["iteration"], cp["baton"]["iteration"]["halt_reason"]) \
        == (5, "completion")
    assert ws.started("implement.") == [f"implement.iteration-{i}" for i in range(1, 6)]


def test_kill_during_an_iteration_then_resume_reruns_only_that_one(ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"')
    ws.behave({"implement.iteration-*": {"phases_per_iteration": 1},
               "implement.iteration-2": {"phases_per_iteration": 1, "hang": True}})
    plan = ws.write_plan([[], [1], [2]])
    run = ws.popen("run", "Implement it", "--scope", "implement-only", "--plan", str(plan))
    wid = run.wait_event(checkpointed("iteration 1 complete"))["workflow_id"]
    run.wait_event(lambda e: e.get("event") == "signal" and e.get("step") ==
                   "implement.iteration-2")
    os.kill(run.pid, signal.SIGKILL)
    run.wait(10)
    ws.behave({"implement.iteration-*": {"phases_per_iteration": 1}})
    ws.baton("resume", wid, check=True)
    cp = _checkpoint(ws, wid)
    assert cp["baton"]["iteration"]["iteration"] == 3
    assert ws.started("implement.") == ["implement.iteration-1", "implement.iteration-2",
                                        "implement.iteration-2", "implement.iteration-3"]


def test_invariant_violation_is_overridden_and_logged(ws: Workspace) -> None:
    r, _, cp = _iterations(ws, 6, {"phases_per_iteration": 2, "no_continuation": True})
    assert r.returncode == 0, r.stdout
    it = cp["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"]) == (3, "completion")
    assert [h["invariant_override"] for h in it["history"]] == [True, True, False]
    records = [e for e in ws.errors() if e["error_type"] == "validation_error"]
    assert [e["source"] for e in records] == ["implement.iteration-1", "implement.iteration-2"]
    assert "requires_continuation=false" in records[0]["error_message"]
    assert records[0]["context"]["work_remaining"] == "Phase_3 Phase_4 Phase_5 Phase_6"
    assert "WARNING" in r.stdout


# -- context accounting and the console summary -------------------------------------------------


def test_context_numbers_equal_the_files_the_agents_wrote(ws: Workspace) -> None:
    ws.baton("run", "Add a login flow", "--scope", "research-and-plan", "--complexity", "4",
             check=True)
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    logs = ws.root / ".claude" / "data" / "checkpoints" / wid / "logs"
    totals = {"passed_chars": 0, "artifact_chars": 0}
    by_state: dict[str, int] = {}
    for sid, step in cp["baton"]["steps"].items():
        ctx = step["context"]
        text = Path(step["artifact"]).read_text()
        assert ctx["artifact_chars"] == len(text), sid
        assert ctx["artifact_tokens"] == -(-len(text) // 4)
        lines = (logs / f"{sid}.attempt-1.log").read_text().splitlines()
        meta = step.get("metadata")
        expected = len("\n".join(lines)) + (len(json.dumps(
            meta, ensure_ascii=False, separators=(",", ":"))) if meta else 0)
        assert ctx["passed_chars"] == expected, sid
        totals["passed_chars"] += ctx["passed_chars"]
        totals["artifact_chars"] += ctx["artifact_chars"]
        by_state[step["state"]] = by_state.get(step["state"], 0) + ctx["artifact_chars"]
    context = cp["baton"]["context"]
    assert {k: context["total"][k] for k in totals} == totals
    assert {s: v["artifact_chars"] for s, v in context["states"].items()} == by_state
    research = context["states"]["research"]
    assert research["reduction_pct"] == round(
        100 * (1 - research["passed_chars"] / research["artifact_chars"]), 1)
    assert research["reduction_pct"] > 50
    out = ws.baton("status", wid, check=True).stdout
    assert f"reduction {research['reduction_pct']} %" in out
    assert ws.status(wid)["context"] == context


def test_console_summary_has_the_four_sections(ws: Workspace) -> None:
    r = ws.baton("run", "Add a login flow", "--complexity", "2", check=True)
    out = r.stdout
    positions = [out.index(f"━━ {name} ") for name in ("Summary", "Phases", "Artifacts",
                                                      "Next steps")]
    assert positions == sorted(positions)
    phases = out[positions[1]:positions[2]]
    for state in ("initialize", "research", "plan", "implement", "test", "document"):
        assert f"  {state} " in phases
    assert "parallel steps took" in out and "one after another" in out
    assert "    wave 2: phases 2, 3 complete in" in phases and "(parallel)" in phases
    assert "context passed up" in out
    assert "report    specs/" in out and "plan      specs/" in out
    quiet = ws.baton("run", "Add a login flow", "--quiet", check=True).stdout
    assert "━━ Summary" not in quiet


def test_context_budget_halts_with_context_threshold(ws: Workspace) -> None:
    r, _, cp = _iterations(ws, 4, {"phases_per_iteration": 1}, "--set",
                           "workflow.context-budget=1")
    assert r.returncode == 1
    it = cp["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"]) == (1, "context_threshold")
    assert "context budget of 1" in cp["last_error"]


def test_cancel_during_an_iteration_records_user_abort(ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"')
    ws.behave({"implement.iteration-1": {"hang": True}})
    plan = ws.write_plan([[], [1]])
    run = ws.popen("run", "Implement it", "--scope", "implement-only", "--plan", str(plan))
    wid = run.wait_event(lambda e: e.get("event") == "signal" and e.get("step") ==
                         "implement.iteration-1")["workflow_id"]
    run.send_signal(signal.SIGTERM)
    assert run.wait(30) == 130
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "cancelled" and cp["baton"]["iteration"]["halt_reason"] == "user_abort"
    flat = ws.root / ".claude" / "data" / "checkpoints" / f"build_{wid}_iteration_0.json"
    assert IterationCheckpoint.model_validate_json(flat.read_text()).halt_reason == "user_abort"
    ws.behave({})
    ws.baton("resume", wid, check=True)
    assert _checkpoint(ws, wid)["baton"]["iteration"]["halt_reason"] == "completion"


def test_status_and_summary_show_iterations_and_supervisor(ws: Workspace) -> None:
    r, wid, _ = _iterations(ws, 4, {"phases_per_iteration": 2})
    assert "    iteration 1: phases 1, 2 done, remaining Phase_3 Phase_4" in r.stdout
    out = ws.baton("status", wid, check=True).stdout
    assert "iteration: 2/5  work_remaining=0  halt_reason=completion" in out
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             check=True)
    rows = [w for w in ws.status() if w["workflow_id"] != wid]
    out = ws.baton("status", rows[0]["workflow_id"], check=True).stdout
    assert "research supervisor (supervisor): 4/4 workers completed" in out


def test_events_stream_carries_the_coordination_events(ws: Workspace) -> None:
    _with_classifier(ws, 'implement-mode = "iterations"')
    ws.behave({"classify": {"complexity": 4}})
    run = ws.popen("run", "Add a login flow", "--scope", "full-implementation")
    finished = run.wait_event(lambda e: e.get("event") == "finished", timeout=60)
    assert run.wait(30) == 0 and finished["status"] == "complete"
    kinds = [e["event"] for e in run.seen]
    cls = next(e for e in run.seen if e["event"] == "classification")
    assert (cls["source"], cls["scope"], cls["complexity"], len(cls["topics"])) == (
        "agent", "full-implementation", 4, 4)
    assert kinds.index("classification") < kinds.index("transition")  # before research
    sup = [e for e in run.seen if e["event"] == "supervisor"]
    assert [e["status"] for e in sup] == ["running", "done"]
    assert sup[1]["completed"] == 4 and sup[1]["context_tokens"] > 0
    its = [(e["iteration"], e["status"]) for e in run.seen if e["event"] == "iteration"]
    assert its == [(1, "running"), (1, "halted")]
    assert next(e for e in run.seen if e["event"] == "iteration" and e["status"] ==
                "halted")["halt_reason"] == "completion"
    # the kinds the language server already follows keep their fields
    step = next(e for e in run.seen if e["event"] == "step" and e["status"] == "done")
    assert {"step", "state", "status", "attempt", "artifact", "checkpoint"} <= set(step)
    tr = next(e for e in run.seen if e["event"] == "transition")
    assert {"source", "target", "reason", "checkpoint"} <= set(tr)


def test_classifier_scope_that_needs_a_plan_is_refused_for_keywords(ws: Workspace) -> None:
    _with_classifier(ws)
    ws.behave({"classify": {"scope": "implement-only"}})
    r = ws.baton("run", "Add a login flow")
    assert r.returncode == 0, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    msg = cp["baton"]["steps"]["classify"]["message"]
    assert "scope implement-only works on an existing plan, and no --plan was given" in msg
    assert "pass --scope" in msg
    assert cp["state_machine"]["classification"]["workflow_type"] != "implement-only"


def test_agent_mode_supervisor_runs_the_workers_and_baton_checks_them(ws: Workspace) -> None:
    ws.config('research-mode = "agent"')
    # each worker waits until all four have started (a worker left waiting fails): the
    # supervisor runs them at once however slow the machine
    workers = [f"research.{i}" for i in range(1, 5)]
    ws.behave({"research.[0-9]*": {"meet": workers}, "research.2": {"exit": 1}})
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             check=True)
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    steps = cp["baton"]["steps"]
    assert steps["research.supervisor"]["role"] == "research-supervisor"
    assert [steps[f"research.{i}"]["status"] for i in range(1, 5)] == [
        "done", "failed", "done", "done"]
    assert "HARD BARRIER FAILED" in steps["research.2"]["message"]
    sup = SupervisorCheckpoint.model_validate(cp["supervisor_state"]["research_supervisor"])
    assert cp["supervisor_state"]["research_supervisor"]["mode"] == "agent"
    assert [w.status for w in sup.workers] == ["completed", "failed", "completed", "completed"]
    assert sup.aggregated_metadata is not None and sup.aggregated_metadata.reports_count == 3
    for i in (1, 3, 4):  # metadata extracted by Baton from the files, not taken from the agent
        step = steps[f"research.{i}"]
        text = Path(step["artifact"]).read_text()
        assert step["metadata"]["findings_count"] == 5
        assert step["context"]["artifact_chars"] == len(text)
    # the supervisor ran its workers in parallel: all four met (see above)
    starts = [s for k, s, _, _ in ws.runs() if k == "start" and s[-1].isdigit()]
    assert sorted(starts) == workers


SEED_SUPERVISOR = r"""#!/usr/bin/env bash
# The seeds' research-sub-supervisor (seed 001, "Hierarchical Supervisor Checkpoint
# Coordination"): its workers write the reports; it returns SUPERVISOR_COMPLETE with the
# aggregated metadata and writes no summary file of its own.
set -euo pipefail
cat >/dev/null
[ "$BATON_ROLE" = "research-supervisor" ] || {
  echo "TASK_ERROR: validation_error - $BATON_ROLE"; exit 2; }
python3 - <<'PY'
import json, os
for i, path in enumerate(json.loads(os.environ["BATON_REPORT_PATHS"]), 1):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(f"# Report {i}\n\n## Findings\n\n- finding {i}\n")
PY
cat <<END
SUPERVISOR_COMPLETE: {
  "supervisor_id": "research_sub_supervisor_$$",
  "worker_count": 4,
  "reports_created": $BATON_REPORT_PATHS,
  "summary": "four topics researched"
}
END
"""


def test_a_seed_supervisor_that_only_returns_its_metadata_completes(ws: Workspace,
                                                                     tmp_path: Path) -> None:
    """The seeds' supervisor returns `SUPERVISOR_COMPLETE: {…}` and writes no summary file:
    its step is done (Baton writes the returned payload as its artifact), not failed with a
    HARD BARRIER and a `validation_error` in errors.jsonl as before."""
    agent = tmp_path / "seed_supervisor.sh"
    agent.write_text(SEED_SUPERVISOR)
    ws.config(f'research-mode = "agent"\nrunner = "command"\ncommand = ["bash", "{agent}"]')
    r = ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    step = cp["baton"]["steps"]["research.supervisor"]
    assert step["status"] == "done", step
    summary = Path(step["artifact"]).read_text()
    assert "SUPERVISOR_COMPLETE" in summary and '"summary": "four topics researched"' in summary
    assert [cp["baton"]["steps"][f"research.{i}"]["status"] for i in range(1, 5)] == ["done"] * 4
    assert ws.errors() == []


def test_agent_mode_three_failures_then_resume_asks_only_for_the_missing(ws: Workspace
                                                                          ) -> None:
    ws.config('research-mode = "agent"')
    ws.behave({f"research.{i}": {"exit": 1} for i in (1, 2, 3)})
    r = ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4")
    assert r.returncode == 1
    wid = ws.only_workflow()
    assert "only 1/4 research reports were created" in _checkpoint(ws, wid)["last_error"]
    ws.behave({})
    ws.baton("resume", wid, check=True)
    assert ws.started("research.supervisor") == ["research.supervisor"] * 2
    workers = [s for s in ws.started("research.") if s[-1].isdigit()]
    assert len(workers) == 7  # 4 in the first run, then the 3 missing (in parallel: any order)
    assert sorted(workers[:4]) == [f"research.{i}" for i in (1, 2, 3, 4)]
    assert sorted(workers[4:]) == [f"research.{i}" for i in (1, 2, 3)]
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "complete"
    agg = cp["supervisor_state"]["research_supervisor"]["aggregated_metadata"]
    assert agg["reports_count"] == 4


def test_iterations_follow_the_plan_dependencies(ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"')
    ws.behave({"implement.iteration-*": {"phases_per_iteration": 3}})
    plan = ws.write_plan([[2], [], [1], [1, 3]])
    r = ws.baton("run", "Implement it", "--scope", "implement-only", "--plan", str(plan))
    assert r.returncode == 0, r.stdout
    it = _checkpoint(ws, ws.only_workflow())["baton"]["iteration"]
    assert [h["phases_completed"] for h in it["history"]] == [["2", "1", "3"], ["4"]]
    assert "PROGRESS: wave 1: phase 2" in r.stdout and "wave 2: phase 1" in r.stdout


FAKE_CLAUDE_CLASSIFIER = """#!{python}
import json, os, sys
if sys.argv[1:] == ["--version"]:
    print("2.1.331 (Claude Code)")
    sys.exit(0)
prompt = sys.stdin.read()
if sys.argv[1:5] != ["-p", "--output-format", "stream-json", "--verbose"] or \\
        "CLASSIFICATION_COMPLETE" not in prompt or "Classify." not in prompt:
    sys.stderr.write("error: unexpected invocation\\n")
    sys.exit(64)
topic = {"short_name": "Session storage", "filename_slug": "session_storage",
         "detailed_description": "Where and how login sessions are stored today, and what a "
                                 "rate limiter needs from them.",
         "research_focus": "Key questions: storage, expiry, concurrency"}
data = {"workflow_type": "research-only", "research_complexity": 1,
        "research_topics": [topic], "confidence": 0.8, "reasoning": "one focused question"}
with open(os.environ["BATON_ARTIFACT_PATH"], "w", encoding="utf-8") as f:
    json.dump(data, f)
def emit(obj):
    print(json.dumps(obj), flush=True)
emit({"type": "system", "subtype": "init", "session_id": "s1"})
text = "PROGRESS: classifying\\nCLASSIFICATION_COMPLETE: " + json.dumps(data, indent=2)
emit({"type": "assistant", "message": {"role": "assistant", "content": [
    {"type": "text", "text": text}]}, "session_id": "s1"})
emit({"type": "result", "subtype": "success", "is_error": False, "result": "ok",
      "session_id": "s1"})
"""


def test_classifier_through_the_claude_runner(ws: Workspace, tmp_path: Path) -> None:
    """A classifier configured with its own runner: the (fake) claude CLI's stream-json,
    a pretty-printed multi-line CLASSIFICATION_COMPLETE, validated and used."""
    (ws.root / ".claude" / "agents" / "workflow-classifier.md").write_text(
        "---\nname: workflow-classifier\ndescription: classifies\n---\nClassify.\n")
    ws.config('\n[workflow.agents]\nclassifier = { agent = "workflow-classifier", '
              'runner = "claude" }\n')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "claude"
    fake.write_text(FAKE_CLAUDE_CLASSIFIER.replace("{python}", sys.executable))
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "ANTHROPIC_API_KEY": "test-key"}  # preflight wants some credentials
    r = subprocess.run([sys.executable, "-m", "baton_lsp", "run", "Add rate limiting to login",
                        "--workspace", str(ws.root)], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    cls = cp["state_machine"]["classification"]
    assert (cls["source"], cls["workflow_type"], cls["research_complexity"]) == (
        "agent", "research-only", 1)
    assert cls["research_topics"][0]["filename_slug"] == "session_storage"
    assert cp["state_machine"]["completed_states"] == ["research", "complete"]
    assert [Path(p).name for p in cp["baton"]["paths"]["reports"]] == ["001_session_storage.md"]
    assert ws.started("classify") == []  # the scripted agent never played the classifier


def test_iteration_loop_with_every_phase_complete_runs_no_coordinator(ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"')
    plan = ws.write_plan([[], [1]])
    plan.write_text(plan.read_text().replace("[NOT STARTED]", "[COMPLETE]"))
    r = ws.baton("run", "Implement it", "--scope", "implement-only", "--plan", str(plan),
                 check=True)
    assert "every phase of the plan is already complete" in r.stdout
    assert ws.started("implement.") == []
    it = _checkpoint(ws, ws.only_workflow())["baton"]["iteration"]
    assert (it["iteration"], it["halt_reason"]) == (0, "completion")


def test_iteration_loop_skips_phases_the_plan_marks_complete(ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"')
    plan = ws.write_plan([[], [1], [2]])
    plan.write_text(plan.read_text().replace("### Phase 1: Step 1 [NOT STARTED]",
                                             "### Phase 1: Step 1 [COMPLETE]"))
    ws.baton("run", "Implement it", "--scope", "implement-only", "--plan", str(plan),
             check=True)
    it = _checkpoint(ws, ws.only_workflow())["baton"]["iteration"]
    assert it["history"][0]["phases_completed"] == ["2", "3"]
    assert it["last_work_remaining"] == "Phase_2 Phase_3"


def test_a_brief_summary_without_its_fields_fails_and_resume_reruns_it(ws: Workspace) -> None:
    ws.config('implement-mode = "iterations"')
    ws.behave({"implement.iteration-*": {"exit": 0}})  # writes nothing, prints nothing
    plan = ws.write_plan([[], [1]])
    r = ws.baton("run", "Implement it", "--scope", "implement-only", "--plan", str(plan))
    assert r.returncode == 1
    wid = ws.only_workflow()
    summary = Path(_checkpoint(ws, wid)["baton"]["paths"]["summaries_dir"]) / \
        "iteration_1_summary.md"
    summary.write_text("# An iteration summary without the brief fields\n")
    r = ws.baton("resume", wid)
    cp = _checkpoint(ws, wid)
    assert "brief summary lacks work_remaining, requires_continuation" in cp["last_error"]
    assert cp["baton"]["steps"]["implement.iteration-1"]["status"] == "failed"
    assert cp["baton"]["iteration"]["halt_reason"] == "error"
    ws.behave({})
    ws.baton("resume", wid, check=True)
    cp = _checkpoint(ws, wid)
    assert cp["status"] == "complete" and cp["baton"]["iteration"]["iteration"] == 1


def test_resume_right_after_the_classifier_step_keeps_its_answer(ws: Workspace) -> None:
    """Killed between "step classify done" and "classified": the step is skipped on resume,
    so its parsed answer must be in the same checkpoint (the crash benchmark found resumes
    dying on KeyError 'classification' there)."""
    _with_classifier(ws)
    ws.baton("run", "Research caching and plan the cache layer", check=True)
    wid = ws.only_workflow()
    hist = _history(ws, wid)
    at = next(i for i, h in enumerate(hist) if h["baton"]["event"] == "step classify done")
    assert "classification" in hist[at]["baton"]["steps"]["classify"]
    r = ws.baton("resume", wid, "--at", str(at + 1), "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[classify] already done; skipped" in r.stdout
    assert _checkpoint(ws, wid)["state_machine"]["classification"]["source"] == "agent"


def test_resume_after_passing_tests_does_not_run_them_again(ws: Workspace) -> None:
    """Killed after the tests passed but before the transition out of test: the passing
    result is recorded the moment the command exits and a resume does not test again."""
    ws.baton("run", "Add a login flow and rate limiting", "--complexity", "1", check=True)
    wid = ws.only_workflow()
    hist = _history(ws, wid)
    at = next(i for i, h in enumerate(hist) if h["baton"]["event"] == "step test.1 done")
    assert hist[at]["baton"]["steps"]["test.1"]["passed"] is True
    assert hist[at]["state_machine"]["current_state"] == "test"
    r = ws.baton("resume", wid, "--at", str(at + 1), "--force")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "[test.1] tests already passed; skipped" in r.stdout
    assert "test: running" not in r.stdout
    assert _checkpoint(ws, wid)["status"] == "complete"


def test_a_link_planted_at_the_supervisor_summary_is_not_written_through(
        ws: Workspace, tmp_path: Path) -> None:
    """Baton writes a returned SUPERVISOR_COMPLETE payload at the step's artifact path only
    when nothing is there: a link planted at that name is neither followed nor replaced,
    and the step fails its barrier."""
    outside = tmp_path / "outside.md"
    outside.write_text("not Baton's\n")
    agent = tmp_path / "seed_supervisor.sh"  # it plants the link at its own artifact path
    agent.write_text(SEED_SUPERVISOR.replace(
        "cat <<END", f'ln -s "{outside}" "$BATON_ARTIFACT_PATH"\ncat <<END'))
    ws.config(f'research-mode = "agent"\nrunner = "command"\ncommand = ["bash", "{agent}"]')
    r = ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4")
    assert "Traceback" not in r.stdout + r.stderr
    assert outside.read_text() == "not Baton's\n"
    cp = _checkpoint(ws, ws.only_workflow())
    step = cp["baton"]["steps"]["research.supervisor"]
    assert step["status"] == "failed" and Path(step["artifact"]).is_symlink(), step


def test_a_supervisor_that_writes_its_summary_and_returns_keeps_its_own(
        ws: Workspace, tmp_path: Path) -> None:
    """The returned payload stands in only for a summary the agent did not write: one it
    wrote itself is its artifact, never replaced by Baton's."""
    agent = tmp_path / "seed_supervisor.sh"
    agent.write_text(SEED_SUPERVISOR.replace(
        "cat <<END", 'printf "# My own summary\\n" > "$BATON_ARTIFACT_PATH"\ncat <<END'))
    ws.config(f'research-mode = "agent"\nrunner = "command"\ncommand = ["bash", "{agent}"]')
    r = ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4")
    assert r.returncode == 0, r.stdout + r.stderr
    step = _checkpoint(ws, ws.only_workflow())["baton"]["steps"]["research.supervisor"]
    assert step["status"] == "done"
    assert Path(step["artifact"]).read_text() == "# My own summary\n"

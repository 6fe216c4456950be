"""How a run whose tests keep failing ends (issue 35, item 1): the seeds' report-and-end
(`debug-mode = "report"`) and Baton's debug ↔ test loop (`"loop"`, the default), through the
real engine with the scripted agents and the scripted test suite as real subprocesses.

Seed 000 (000_74d69530aa70a5ea.txt, "6. Debug Phase (Conditional)", Terminal State):

    sm_transition "$STATE_COMPLETE"
    echo "Debug report: $DEBUG_REPORT"
    echo "NOTE: Please review debug report and fix issues manually"
    echo "Then re-run: /coordinate \"$WORKFLOW_DESCRIPTION\""

    - Does not retry automatically (user intervention required)
    - Transitions to terminal state after debug report created
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

from .conftest import Workspace

FAILING = {"test.*": {"tests": "fail"}, "debug.*": {"fix": False}}
"""Tests that fail, and a debug agent whose fix does not make them pass."""


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def test_report_mode_ends_complete_needing_attention_as_seed_000(ws: Workspace) -> None:
    ws.config('debug-mode = "report"\n')
    ws.behave(FAILING)
    desc = "Add a login flow and rate limiting"
    r = ws.baton("run", desc, "--complexity", "1")
    assert r.returncode == 4, r.stdout + r.stderr  # neither success nor a failure to resume
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    # test fails → one debug report → complete (no second test, no document)
    assert cp["status"] == "complete" and cp["state_machine"]["current_state"] == "complete"
    assert cp["state_machine"]["completed_states"] == [
        "research", "plan", "implement", "test", "debug", "complete"]
    assert ws.started("debug") == ["debug.1"] and ws.started("document") == []
    assert [s for s in cp["baton"]["steps"] if s.startswith("test.")] == ["test.1"]
    report = Path(cp["debug_report_path"])
    assert report.is_file() and report.parent.name == "debug"
    outcome = cp["baton"]["outcome"]
    assert outcome["status"] == "needs_attention" and outcome["debug_report"] == str(report)
    assert shlex.split(outcome["rerun"]) == ["baton", "run", desc, "--scope",
                                             "full-implementation"]
    assert cp["last_error"] is None and cp["tests_passing"] is False
    # the summary: marked as needing attention, the report under Artifacts, the re-run hint
    out = r.stdout
    assert "⚠" in out and "NEEDS ATTENTION" in out and "✓ " + wid not in out
    artifacts = out.split("━━ Artifacts")[1].split("━━ Next steps")[0]
    assert f"debug     {report.relative_to(ws.root)}" in artifacts
    nxt = out.split("━━ Next steps")[1]
    assert f"NOTE: review the debug report {report.relative_to(ws.root)} and fix the " \
           "issues manually" in nxt
    assert f"then re-run: {outcome['rerun']}" in nxt
    assert f"{wid}: complete, needs attention (complete)" in out
    # baton status agrees, in JSON and text
    info = ws.status(wid)
    assert info["status"] == "complete" and info["outcome"]["status"] == "needs_attention"
    assert info["outcome"]["debug_report"] == str(report)
    text = ws.baton("status", wid, check=True).stdout
    assert "outcome: needs_attention" in text and f"then re-run: {outcome['rerun']}" in text
    listing = ws.baton("status", check=True).stdout
    assert "needs-attention" in listing.split(wid)[1].splitlines()[0]
    # nothing to resume: a bare resume finds nothing; an explicit one says what to do, and
    # forced it ends the same way without running an agent or the tests again
    bare = ws.baton("resume")
    assert bare.returncode == 2 and "nothing to resume" in bare.stderr
    refused = ws.baton("resume", wid)
    assert refused.returncode == 2 and "complete but needs attention" in refused.stderr
    assert f"then re-run: {outcome['rerun']}" in refused.stderr
    before = ws.runs()
    again = ws.baton("resume", wid, "--force")
    assert again.returncode == 4 and ws.runs() == before, again.stdout
    assert _checkpoint(ws, wid)["baton"]["outcome"] == outcome


def test_report_mode_with_no_debug_iterations_lists_the_test_output(ws: Workspace) -> None:
    ws.config('debug-mode = "report"\nmax-debug-iterations = 0\n')
    ws.behave(FAILING)
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan",
                 str(plan))
    assert r.returncode == 4, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "complete"
    assert cp["state_machine"]["completed_states"] == ["implement", "test", "complete"]
    assert ws.started("debug") == []
    outcome = cp["baton"]["outcome"]
    assert outcome["debug_report"] is None and Path(outcome["test_output"]).is_file()
    assert "--plan" in shlex.split(outcome["rerun"])
    assert "tests     " in r.stdout.split("━━ Artifacts")[1]
    assert "NOTE: review the test output" in r.stdout


@pytest.mark.parametrize(("iterations", "debugs"), [(1, ["debug.1"]), (0, [])])
def test_loop_mode_still_fails_in_test_after_the_budget(ws: Workspace, iterations: int,
                                                        debugs: list[str]) -> None:
    ws.config(f'debug-mode = "loop"\nmax-debug-iterations = {iterations}\n')
    ws.behave(FAILING)
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Fix it", "--scope", "test-and-debug", "--plan", str(plan))
    assert r.returncode == 1, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "failed" and cp["state_machine"]["current_state"] == "test"
    assert f"tests still failing after {iterations} debug" in cp["last_error"]
    assert ws.started("debug") == debugs and "outcome" not in cp["baton"]


def test_report_mode_with_passing_tests_is_a_plain_success(ws: Workspace) -> None:
    ws.config('debug-mode = "report"\n')
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Fix it", "--scope", "test-and-debug", "--plan", str(plan))
    assert r.returncode == 0, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "complete" and "outcome" not in cp["baton"]


def test_the_editor_lens_says_needs_attention(ws: Workspace) -> None:
    from baton_lsp.lsp.code_lens import _run_lenses
    from baton_lsp.lsp.runs import describe
    from baton_lsp.parse.plan import parse_plan_text
    from baton_lsp.runs.follow import read_view

    ws.config('debug-mode = "report"\n')
    ws.behave(FAILING)
    plan_path = ws.write_plan([[]])
    ws.baton("run", "Fix it", "--scope", "test-and-debug", "--plan", str(plan_path))
    view = read_view(ws.root, ws.only_workflow())
    assert view.status == "complete" and view.outcome is not None
    text = plan_path.read_text()
    lenses = _run_lenses(view, describe(view), parse_plan_text(text, str(plan_path)),
                         text.splitlines())
    titles = [lens.command.title for lens in lenses if lens.command]
    assert titles[0].startswith("⚠ complete — needs attention"), titles
    assert lenses[0].command and lenses[0].command.arguments == [
        {"path": view.outcome["debug_report"]}]
    assert any(t.startswith("then re-run: baton run") for t in titles)
    assert not any(t.startswith("✓") for t in titles)


SEED_AGENT = '''\
import os, pathlib, sys
role, artifact = sys.argv[1], pathlib.Path(sys.argv[2])
sys.stdin.read()
artifact.parent.mkdir(parents=True, exist_ok=True)
if role == "debug":  # seed 000's /debug: a report, then its one signal
    artifact.write_text("# Debug Analysis\\n\\nRoot cause: the login test expects 200.\\n")
    print(f"DEBUG_REPORT_CREATED: {artifact}")
else:
    artifact.write_text("# Phase summary\\n\\nDone.\\n")
    print(f"PHASE_COMPLETE: {os.environ.get('BATON_PHASE', '1')}")
    print(f"SUMMARY_CREATED: {artifact}")
'''
"""A `--runner command` agent that behaves as the seeds' agents do: it writes its artifact
at the path it is given and prints the seed's signal (`DEBUG_REPORT_CREATED: [absolute
path to debug report]` for the debug agent)."""


def test_a_seed_shaped_command_agent_ends_the_seeds_way(ws: Workspace) -> None:
    agent = ws.root / ".claude" / "seed_agent.py"
    agent.write_text(SEED_AGENT)
    ws.config('runner = "command"\n'
              f'command = ["{sys.executable}", "{agent}", "{{role}}", "{{artifact}}"]\n'
              'test-command = ["{python}", "-c", "import sys; print(\'1 failed\'); '
              'sys.exit(1)"]\n'
              'debug-mode = "report"\n')
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan",
                 str(plan))
    assert r.returncode == 4, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["status"] == "complete"
    assert cp["state_machine"]["completed_states"] == ["implement", "test", "debug",
                                                       "complete"]
    report = Path(cp["baton"]["outcome"]["debug_report"])
    assert "Root cause" in report.read_text()
    assert cp["baton"]["steps"]["debug.1"]["signals"] and "DEBUG_REPORT_CREATED" in r.stdout


def test_a_loop_that_ran_out_can_end_the_seeds_way_on_resume(ws: Workspace) -> None:
    ws.config('max-debug-iterations = 1\n')
    ws.behave(FAILING)
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Fix it", "--scope", "test-and-debug", "--plan", str(plan))
    assert r.returncode == 1
    wid = ws.only_workflow()
    again = ws.baton("resume", wid, "--set", "workflow.debug-mode=report")
    assert again.returncode == 4, again.stdout + again.stderr
    cp = _checkpoint(ws, wid)
    assert ws.started("debug") == ["debug.1", "debug.2"]
    assert cp["status"] == "complete" and cp["baton"]["outcome"]["debug_report"].endswith(
        "002_debug_report.md")

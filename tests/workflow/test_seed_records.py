"""Seed-shaped run data (issue 35, item 4): what the seeds' own `jq` paths and bash blocks
look for is where they look — `supervisor_state.research_supervisor`,
`.claude/tmp/research_supervisor.json`, SUPERVISOR_METADATA_PATH, `phase_data.<state>`,
and TEST_EXIT_CODE / TESTS_PASSING / DEBUG_REPORT in the state file. Real `baton`
processes, the scripted agents, real `jq` and `bash`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.runs.store import CheckpointStore

from .conftest import Workspace

JQ = shutil.which("jq")
needs_jq = pytest.mark.skipif(JQ is None, reason="jq is not installed")

LOAD_JSON_CHECKPOINT = """\
# state-persistence.sh's reader (seed 000 §3): graceful degradation to {}
load_json_checkpoint() {
  local f="${CLAUDE_PROJECT_DIR}/.claude/tmp/$1.json"
  if [ -f "$f" ]; then cat "$f"; else echo '{}'; fi
}
"""

SEED_VERIFICATION_BLOCK = LOAD_JSON_CHECKPOINT + """\
OUT="${CLAUDE_PROJECT_DIR}/seed_block.out"
echo "env_metadata_path=${SUPERVISOR_METADATA_PATH:-}" > "$OUT"
unset SUPERVISOR_METADATA_PATH
source "$BATON_STATE_FILE"   # load_workflow_state: the state file, not the environment
# seed 000, research phase, hierarchical verification (lines 414-447), verbatim:
SUPERVISOR_CHECKPOINT=$(load_json_checkpoint "research_supervisor")
SUPERVISOR_REPORTS=$(echo "$SUPERVISOR_CHECKPOINT" | jq -r '.aggregated_metadata.reports_created[]')
for REPORT_PATH in $SUPERVISOR_REPORTS; do
  if [ -f "$REPORT_PATH" ]; then echo "verified=$REPORT_PATH" >> "$OUT"; fi
done
# seed 001: append_workflow_state "SUPERVISOR_METADATA_PATH" …/supervisor_metadata.json
echo "state_metadata_path=$SUPERVISOR_METADATA_PATH" >> "$OUT"
echo "topics_researched=$(jq -r '.topics_researched' "$SUPERVISOR_METADATA_PATH")" >> "$OUT"
"""


def _checkpoint_file(ws: Workspace, wid: str) -> Path:
    return sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))[-1]


def _jq(expr: str, path: Path | None = None, text: str | None = None) -> str:
    assert JQ is not None
    r = subprocess.run([JQ, "-r", expr, *([str(path)] if path else [])], input=text,
                       capture_output=True, text=True, timeout=60, check=True)
    return r.stdout.strip()


@needs_jq
def test_seed_jq_paths_and_bash_blocks_find_the_research_supervisor(ws: Workspace) -> None:
    """Four topics through the supervisor, then a seed bash block as the test command: the
    seeds' `load_json_checkpoint "research_supervisor"` + `jq .aggregated_metadata.
    reports_created[]` verification, and SUPERVISOR_METADATA_PATH from the state file and
    the environment; then the checkpoint and `baton status --json` under the seeds' paths."""
    test_cmd = json.dumps(["bash", "-c", SEED_VERIFICATION_BLOCK])
    ws.config(f"test-command = {test_cmd}")
    ws.baton("run", "Add a login flow", "--scope", "full-implementation", "--complexity", "4",
             check=True)
    wid = ws.only_workflow()
    cp_file = _checkpoint_file(ws, wid)
    cp = json.loads(cp_file.read_text())
    reports = cp["baton"]["paths"]["reports"]
    # seed 001 schema v2.0: supervisor_state.research_supervisor.{worker_status, aggregated_…}
    assert _jq(".supervisor_state.research_supervisor.topics_researched", cp_file) == "4"
    assert _jq(".supervisor_state.research_supervisor.aggregated_metadata.topics_researched",
               cp_file) == "4"
    assert _jq(".supervisor_state.research_supervisor.worker_status | join(\",\")",
               cp_file) == "completed,completed,completed,completed"
    assert _jq(".supervisor_state.research_supervisor.supervisor_name", cp_file)
    # Baton's richer record stays beside the seeds' fields
    sup = cp["supervisor_state"]["research_supervisor"]
    assert sup["mode"] == "supervisor" and sup["aggregated_metadata"]["reports_count"] == 4
    assert len(sup["workers"]) == 4
    # phase_data.<state> from what the engine measured
    assert _jq(".phase_data.research.reports_created[]", cp_file).splitlines() == reports
    research = cp["phase_data"]["research"]
    assert research["context_usage_tokens"] == sum(
        cp["baton"]["steps"][f"research.{i}"]["context"]["passed_tokens"] for i in range(1, 5))
    assert research["context_usage_tokens"] > 0
    assert research["duration_ms"] == cp["baton"]["timing"]["research"]
    assert cp["phase_data"]["plan"]["reports_created"] == [cp["baton"]["paths"]["plan"]]
    assert set(cp["phase_data"]) >= {"research", "plan", "implement", "test", "document"}
    # .claude/tmp/research_supervisor.json: what load_json_checkpoint reads
    tmp = ws.root / ".claude" / "tmp"
    assert json.loads((tmp / "research_supervisor.json").read_text()) == sup
    meta = json.loads((tmp / "supervisor_metadata.json").read_text())
    assert meta["topics_researched"] == 4 and meta["reports_created"] == reports
    assert meta["supervisor_id"] == sup["supervisor_id"]
    # the seed block ran as the test command: every path verified, both routes to the metadata
    out = (ws.root / "seed_block.out").read_text().splitlines()
    assert f"env_metadata_path={tmp / 'supervisor_metadata.json'}" in out
    assert f"state_metadata_path={tmp / 'supervisor_metadata.json'}" in out
    assert [line.removeprefix("verified=") for line in out if line.startswith("verified=")] \
        == reports
    assert "topics_researched=4" in out
    # baton status --json exposes the same paths
    status = ws.baton("status", wid, "--json", check=True).stdout
    assert _jq(".supervisor_state.research_supervisor.topics_researched", text=status) == "4"
    assert _jq(".phase_data.research.reports_created[]", text=status).splitlines() == reports


def test_flat_research_fills_phase_data_without_a_supervisor(ws: Workspace) -> None:
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "2",
             check=True)
    wid = ws.only_workflow()
    cp = json.loads(_checkpoint_file(ws, wid).read_text())
    assert cp["supervisor_state"] == {}
    assert cp["phase_data"]["research"]["reports_created"] == cp["baton"]["paths"]["reports"]
    status = ws.status(wid)
    assert "supervisor_state" not in status
    assert status["phase_data"]["research"]["reports_created"] == cp["baton"]["paths"]["reports"]
    state = (ws.root / ".claude" / "tmp" / f"workflow_{wid}.sh").read_text()
    assert "SUPERVISOR_METADATA_PATH" not in state


def _bash(script: str) -> dict[str, str]:
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60,
                       check=True)
    return dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)


def test_state_file_carries_test_exit_code_tests_passing_and_debug_report(ws: Workspace
                                                                          ) -> None:
    """Seed 000's test and debug states: TEST_EXIT_CODE, then seed 001's
    `if [ "$TESTS_PASSING" == "true" ]` transition, and DEBUG_REPORT, read by sourcing."""
    plan = ws.write_plan([[]])
    ws.behave({"test.*": {"tests": "pass-after-debug"}})
    ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan", str(plan),
             check=True)
    wid = ws.only_workflow()
    cp = json.loads(_checkpoint_file(ws, wid).read_text())
    state = ws.root / ".claude" / "tmp" / f"workflow_{wid}.sh"
    got = _bash(f"""source "{state}"
echo "TEST_EXIT_CODE=$TEST_EXIT_CODE"
echo "DEBUG_REPORT=$DEBUG_REPORT"
if [ "$TESTS_PASSING" == "true" ]; then echo "next=document"; else echo "next=debug"; fi
if [ $TEST_EXIT_CODE -eq 0 ]; then echo "tests=passed"; fi
""")
    assert got == {"TEST_EXIT_CODE": "0", "DEBUG_REPORT": cp["debug_report_path"],
                   "next": "document", "tests": "passed"}
    assert Path(got["DEBUG_REPORT"]).is_file()


def test_failing_tests_leave_their_exit_code_for_the_debug_block(ws: Workspace) -> None:
    plan = ws.write_plan([[]])
    ws.behave({"test.*": {"tests": "fail"}, "debug.*": {"fix": False}})
    ws.config("max-debug-iterations = 0")
    r = ws.baton("run", "Fix it", "--scope", "test-and-debug", "--plan", str(plan))
    assert r.returncode == 1
    state = ws.root / ".claude" / "tmp" / f"workflow_{ws.only_workflow()}.sh"
    got = _bash(f'source "{state}"; echo "code=$TEST_EXIT_CODE"; echo "ok=$TESTS_PASSING"')
    assert got["code"] not in ("", "0") and got["ok"] == "false"


def test_an_old_flat_supervisor_section_is_read_and_resumed_in_the_seeds_shape(
        ws: Workspace) -> None:
    """A record written by Baton before the nesting (the research section flat at
    `supervisor_state`, `reports_count` only) shows under the seeds' path in `baton status`
    and is resumed — its section nested, seed fields filled — to completion."""
    ws.behave({"plan": {"exit": 3}})
    r = ws.baton("run", "Plan auth", "--scope", "research-and-plan", "--complexity", "4")
    assert r.returncode == 1
    wid = ws.only_workflow()
    data: dict[str, Any] = json.loads(_checkpoint_file(ws, wid).read_text())
    sup = data["supervisor_state"]["research_supervisor"]
    for key in ("worker_status", "topics_researched"):
        sup.pop(key)
    sup["aggregated_metadata"].pop("topics_researched")
    data["supervisor_state"] = sup  # the old flat shape
    data.pop("phase_data")
    CheckpointStore(ws.root, wid).save(data, "written by an older baton")
    status = ws.status(wid)
    assert status["supervisor_state"]["research_supervisor"]["topics_researched"] == 4
    assert status["supervisor"]["reports_count"] == 4
    # another workflow of the workspace wrote the seeds' one-per-workspace files since
    tmp = ws.root / ".claude" / "tmp"
    (tmp / "supervisor_metadata.json").write_text('{"topics_researched": 99}')
    (tmp / "research_supervisor.json").unlink()
    ws.behave({})
    r = ws.baton("resume", wid)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "moved under research_supervisor" in r.stdout
    cp = json.loads(_checkpoint_file(ws, wid).read_text())
    nested = cp["supervisor_state"]["research_supervisor"]
    assert set(cp["supervisor_state"]) == {"research_supervisor"}
    assert nested["worker_status"] == ["completed"] * 4 and nested["topics_researched"] == 4
    assert json.loads((tmp / "research_supervisor.json").read_text()) == nested
    assert json.loads((tmp / "supervisor_metadata.json").read_text())["topics_researched"] == 4
    assert cp["phase_data"]["plan"]["reports_created"] == [cp["baton"]["paths"]["plan"]]
    # research did not run again: its phase_data is filled from the old record's steps
    assert cp["phase_data"]["research"]["reports_created"] == cp["baton"]["paths"]["reports"]


def test_a_planted_link_at_the_supervisor_file_is_replaced_not_followed(
        ws: Workspace, tmp_path: Path) -> None:
    """`.claude/tmp/research_supervisor.json` is written through `confine`: a link a
    repository planted there is renamed over, its target outside the workspace untouched."""
    outside = tmp_path / "outside.json"
    outside.write_text("keep\n")
    tmp = ws.root / ".claude" / "tmp"
    tmp.mkdir(parents=True)
    (tmp / "research_supervisor.json").symlink_to(outside)
    (tmp / "supervisor_metadata.json").symlink_to(outside)
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "4",
             check=True)
    assert outside.read_text() == "keep\n"
    for name in ("research_supervisor.json", "supervisor_metadata.json"):
        assert not (tmp / name).is_symlink()
        assert json.loads((tmp / name).read_text())["topics_researched"] == 4


def test_state_file_carries_the_research_outcome(ws: Workspace) -> None:
    """Seed 000's research state leaves RESEARCH_COMPLETE, REPORTS_CREATED and the verified
    reports (`SUCCESSFUL_REPORT_PATHS`, exported as count + `_i` as the seed exports
    REPORT_PATHS) for the blocks after it; a failed report is not among them."""
    ws.behave({"research.2": {"exit": 1}})
    ws.baton("run", "Add a login flow", "--scope", "research-only", "--complexity", "3",
             check=True)  # 2 of 3 reports: the seeds' >= 50 % partial success
    wid = ws.only_workflow()
    cp = json.loads(_checkpoint_file(ws, wid).read_text())
    steps = cp["baton"]["steps"]
    ok = [steps[f"research.{i}"]["artifact"] for i in (1, 3)]
    state = ws.root / ".claude" / "tmp" / f"workflow_{wid}.sh"
    got = _bash(f"""source "{state}"
echo "RESEARCH_COMPLETE=$RESEARCH_COMPLETE"
echo "REPORTS_CREATED=$REPORTS_CREATED"
SUCCESSFUL_REPORT_PATHS=()
for i in $(seq 0 $((SUCCESSFUL_REPORT_PATHS_COUNT - 1))); do
  var_name="SUCCESSFUL_REPORT_PATH_$i"
  SUCCESSFUL_REPORT_PATHS+=("${{!var_name}}")
done
echo "paths=${{SUCCESSFUL_REPORT_PATHS[*]}}"
""")
    assert got == {"RESEARCH_COMPLETE": "true", "REPORTS_CREATED": "2", "paths": " ".join(ok)}

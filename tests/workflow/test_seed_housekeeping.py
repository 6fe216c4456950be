"""Housekeeping the seeds plan for (issue 35, item 9): the test phase's fallback to
`.claude/tests/run_all_tests.sh`, retention of finished workflows' checkpoints (`baton clean
--runs`) and the context-reduction figure. Real `baton` processes with the scripted agents."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.workflow.conftest import Workspace

# Seed 000, "5. Testing Phase":
#     # Fallback: use /test-all
#     bash "${CLAUDE_PROJECT_DIR}/.claude/tests/run_all_tests.sh"
#     TEST_EXIT_CODE=$?
RUN_ALL_TESTS = """\
#!/usr/bin/env bash
# Runs every test_*.sh beside it, as the seeds' suite does.
cd "$(dirname "$0")" || exit 2
failed=0
for t in test_*.sh; do
  bash "$t" || failed=1
done
echo "project=${CLAUDE_PROJECT_DIR}" > "${CLAUDE_PROJECT_DIR}/.claude/tests/ran.txt"
exit $failed
"""


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def _seed_suite(ws: Workspace, test_body: str) -> Path:
    tests = ws.root / ".claude" / "tests"
    tests.mkdir(parents=True)
    (tests / "run_all_tests.sh").write_text(RUN_ALL_TESTS)
    (tests / "test_state_machine.sh").write_text(test_body)
    return tests


def test_no_test_command_runs_the_seeds_run_all_tests(ws: Workspace) -> None:
    ws.config("test-command = []")
    tests = _seed_suite(ws, "echo 'PASS: sm_init'\nexit 0\n")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1", check=True)
    assert ("test: running bash .claude/tests/run_all_tests.sh (no test-command configured: "
            "the seeds' fallback)") in r.stdout
    assert "test: passed (exit 0)" in r.stdout
    assert "skipped" not in r.stdout.split("test: running", 1)[1]
    assert (tests / "ran.txt").read_text() == f"project={ws.root}\n"
    cp = _checkpoint(ws, ws.only_workflow())
    step = cp["baton"]["steps"]["test.1"]
    assert step["status"] == "done" and step["passed"] is True
    assert step["command"] == ["bash", str(tests / "run_all_tests.sh")]
    assert "PASS: sm_init" in Path(step["artifact"]).read_text()


def test_the_seeds_suite_failing_goes_to_debug(ws: Workspace) -> None:
    ws.config("test-command = []\nmax-debug-iterations = 1")
    _seed_suite(ws, "echo 'FAIL: sm_transition'\nexit 1\n")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1")
    assert "test: FAILED (exit 1)" in r.stdout, r.stdout + r.stderr
    cp = _checkpoint(ws, ws.only_workflow())
    assert cp["baton"]["steps"]["test.1"]["passed"] is False
    assert "debug.1" in cp["baton"]["steps"], r.stdout  # the seeds: test fails → debug


def test_a_seeds_script_linked_out_of_the_workspace_is_not_run(ws: Workspace,
                                                             tmp_path: Path) -> None:
    ws.config("test-command = []")
    outside = tmp_path / "elsewhere.sh"
    marker = tmp_path / "ran-outside"
    outside.write_text(f"#!/usr/bin/env bash\ntouch {marker}\n")
    (ws.root / ".claude" / "tests").mkdir(parents=True)
    os.symlink(outside, ws.root / ".claude" / "tests" / "run_all_tests.sh")
    r = ws.baton("run", "Add a health endpoint", "--scope", "full-implementation",
                 "--complexity", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert not marker.exists()
    out = r.stdout + r.stderr
    assert "not running the seeds' test script" in out
    assert "run_all_tests.sh" in out and "Traceback" not in out


# -- context reduction: a report smaller than what is passed up ---------------------------------

TINY_AGENT = """\
import os, sys
path = sys.argv[1]
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    f.write("# Auth\\nOK.\\n")
print(f"REPORT_CREATED: {path}", flush=True)
"""


def test_metadata_larger_than_the_report_is_not_a_negative_reduction(ws: Workspace) -> None:
    """A research-specialist as the seeds write it (`REPORT_CREATED: [absolute path]`) whose
    report is two lines: the signal and metadata passed up are larger than the report."""
    agent = ws.root / "tiny_agent.py"
    agent.write_text(TINY_AGENT)
    ws.config(f'runner = "command"\ncommand = ["{sys.executable}", "{agent}", "{{artifact}}"]\n')
    r = ws.baton("run", "Research auth patterns", "--scope", "research-only", "--topic",
                 "auth", check=True)
    wid = ws.only_workflow()
    total = _checkpoint(ws, wid)["baton"]["context"]["total"]
    assert total["passed_tokens"] > total["artifact_tokens"]  # the case at hand
    assert total["reduction_pct"] < 0  # the JSON keeps the measured figure
    status = ws.baton("status", wid, check=True).stdout
    for out in (r.stdout, status):
        assert "reduction -" not in out, out
    expected = (f"no reduction: the {total['passed_tokens']} tokens passed up are more than "
                f"the {total['artifact_tokens']} tokens of the artifacts")
    assert f"context passed up: {total['passed_tokens']} of {total['artifact_tokens']} tokens " \
           f"in the artifacts ({expected})" in r.stdout
    assert "no context reduction: the" in r.stdout  # the research state's line
    assert expected in status

"""The implementation and testing sub-supervisors (issue 35, item 7; seed 001, Phase 6:
"Add implementation supervisor logic (domain_count ≥3 OR complexity ≥10 → hierarchical)",
"Add testing supervisor logic (test_count ≥20 OR test_types ≥2 → hierarchical)", "Implement
track detection (frontend, backend, testing via file path patterns)", "Implement sequential
stages (generation → execution → validation)"). Real `baton` processes, the scripted agents,
a real git repository for the tracks' files."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from baton_lsp.model.base import Kind
from baton_lsp.model.plan import Plan
from baton_lsp.parse import parse_bytes
from baton_lsp.workflow import tiers

from .conftest import Workspace

GIT_ID = ["-c", "user.name=Dev", "-c", "user.email=dev@example.com"]

# seed 001: /coordinate "Implement auth with frontend + backend + testing"
#           → "Expected: Uses implementation-sub-supervisor"
AUTH_PLAN = """\
# Auth Plan

## Metadata
- **Date**: 2026-11-29
- **Status**: [NOT STARTED]
{extra}
## Implementation Phases

### Phase 1: Login API [NOT STARTED]
dependencies: []

Tasks:
- [ ] Add the login endpoint in `server/api/auth.py`

### Phase 2: Login page [NOT STARTED]
dependencies: [1]

Tasks:
- [ ] Build the form in `client/components/Login.tsx`

### Phase 3: Auth tests [NOT STARTED]
dependencies: [1]

Tasks:
- [ ] Cover the endpoint in `tests/test_auth.py`
"""

CODE = {"implement.phase-1": {"files": {"server/api/auth.py": "def login():\n    return 1\n"}},
        "implement.phase-2": {"files": {"client/components/Login.tsx":
                                        "export const Login = () => null;\n"}},
        "implement.phase-3": {"files": {"tests/test_auth.py":
                                        "def test_login():\n    assert True\n"}}}


def _checkpoint(ws: Workspace, wid: str) -> dict[str, Any]:
    files = sorted((ws.root / ".claude" / "data" / "checkpoints" / wid).glob("[0-9]*.json"))
    return json.loads(files[-1].read_text())


def _plan(ws: Workspace, text: str) -> Path:
    plan = ws.root / ".claude" / "specs" / "001_auth" / "plans" / "001_auth_plan.md"
    plan.parent.mkdir(parents=True, exist_ok=True)
    plan.write_text(text)
    return plan


def _git(ws: Workspace, *args: str) -> str:
    return subprocess.run(["git", *GIT_ID, *args], cwd=ws.root, check=True,
                          capture_output=True, text=True, timeout=60).stdout


def test_three_domains_go_through_the_implementation_supervisor(ws: Workspace) -> None:
    """Three tracks by file path; each phase in its own worktree, so the files each track
    changed come from its commits."""
    plan = _plan(ws, AUTH_PLAN.format(extra=""))
    _git(ws, "init", "-q", "-b", "main")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "base")
    ws.behave(CODE)
    r = ws.baton("run", "Implement auth with frontend + backend + testing", "--scope",
                 "implement-only", "--plan", str(plan), check=True)
    assert "3 domain(s) (frontend, backend, testing)" in r.stdout
    assert "through the implementation supervisor" in r.stdout
    wid = ws.only_workflow()
    cp = _checkpoint(ws, wid)
    sup = cp["supervisor_state"]["implementation_supervisor"]
    assert sup["supervisor_name"] == "implementation-sub-supervisor"
    assert sup["trigger"]["domain_count"] == 3
    assert sup["worker_status"] == ["completed"] * 3
    tracks = sup["tracks"]
    assert {d: t["phases"] for d, t in tracks.items()} == {
        "frontend": ["2"], "backend": ["1"], "testing": ["3"]}
    assert {d: t["files_modified"] for d, t in tracks.items()} == {
        "frontend": ["client/components/Login.tsx"], "backend": ["server/api/auth.py"],
        "testing": ["tests/test_auth.py"]}
    assert all(t["status"] == "completed" and t["duration_ms"] > 0 for t in tracks.values())
    # metadata-only passing: each phase's summary reduced to its metadata, accounted
    steps = cp["baton"]["steps"]
    for w in sup["workers"]:
        step = steps[w["worker_id"]]
        assert w["metadata"] == step["metadata"] and w["metadata"]["title"]
        assert w["context_tokens"] == step["context"]["passed_tokens"] > 0
    agg = sup["aggregated_metadata"]
    assert agg["phases_completed"] == ["1", "2", "3"]
    assert agg["context_tokens"] == sum(w["context_tokens"] for w in sup["workers"])
    assert agg["sequential_duration_ms"] == sum(steps[w]["duration_ms"] for w in (
        "implement.phase-1", "implement.phase-2", "implement.phase-3"))
    assert agg["total_duration_ms"] == sum(r["duration_ms"] for r in cp["workflow_state"][
        "wave_results"].values())
    on_disk = json.loads((ws.root / ".claude" / "tmp" /
                          "implementation_supervisor.json").read_text())
    assert on_disk == sup
    status = ws.status(wid)
    assert status["supervisor_state"]["implementation_supervisor"]["tracks"] == tracks
    text = ws.baton("status", wid, check=True).stdout
    assert "implementation supervisor: frontend completed (1 phase(s)), backend completed" \
        in text


def test_complexity_ten_triggers_it_with_fewer_domains(ws: Workspace) -> None:
    """Two domains, but the plan's own `Complexity Score` is 12 (≥ 10)."""
    plan = _plan(ws, AUTH_PLAN.format(extra="- **Complexity Score**: 12\n").replace(
        "`client/components/Login.tsx`", "the login form"))
    r = ws.baton("run", "Implement auth", "--scope", "implement-only", "--plan", str(plan),
                 check=True)
    assert "complexity 12 (metadata Complexity Score)" in r.stdout
    sup = _checkpoint(ws, ws.only_workflow())["supervisor_state"]["implementation_supervisor"]
    assert sup["trigger"] == {"domain_count": 2, "complexity": 12,
                              "complexity_source": "metadata Complexity Score",
                              "thresholds": {"domain_count": 3, "complexity": 10}}
    assert set(sup["tracks"]) == {"backend", "testing"}
    # no git here: the files a phase changed are the ones its section names
    assert sup["tracks"]["backend"]["files_modified"] == ["server/api/auth.py"]


def test_below_both_thresholds_stays_flat(ws: Workspace) -> None:
    plan = _plan(ws, AUTH_PLAN.format(extra="").replace(
        "`client/components/Login.tsx`", "the login form"))
    r = ws.baton("run", "Implement auth", "--scope", "implement-only", "--plan", str(plan),
                 check=True)
    assert "implementation supervisor" not in r.stdout
    cp = _checkpoint(ws, ws.only_workflow())
    assert "implementation_supervisor" not in cp["supervisor_state"]
    assert "metadata" not in cp["baton"]["steps"]["implement.phase-1"]


def _tests(ws: Workspace, rel: str, count: int) -> None:
    path = ws.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"def test_case_{i}():\n    assert True\n\n" for i in range(count)))


def test_two_test_types_go_through_the_testing_supervisor(ws: Workspace) -> None:
    """Unit and integration tests (two types): generation → execution → validation, the
    execution's counts passed up instead of its log."""
    _tests(ws, "tests/unit/test_login.py", 3)
    _tests(ws, "tests/integration/test_flow.py", 2)
    plan = ws.write_plan([[]])
    ws.behave({"test.*": {"tests": "pass-after-debug"}})
    r = ws.baton("run", "Fix the login tests", "--scope", "test-and-debug", "--plan",
                 str(plan), check=True)
    assert "5 test(s) of 2 type(s) (unit, integration): through the testing supervisor" \
        in r.stdout
    cp = _checkpoint(ws, ws.only_workflow())
    sup = cp["supervisor_state"]["testing_supervisor"]
    assert [s["stage"] for s in sup["stages"]] == ["generation", "execution", "validation"]
    assert sup["worker_status"] == ["completed"] * 3
    assert sup["stages"][0]["by_type"] == {"unit": {"files": 1, "tests": 3},
                                           "integration": {"files": 1, "tests": 2}}
    assert sup["stages"][1]["worker_id"] == "test.2"  # the run after the debug fix
    assert sup["stages"][2]["verdict"] == "passed"
    agg = sup["aggregated_metadata"]
    assert (agg["passed"], agg["failed"], agg["total_tests"]) == (4, 0, 4)  # "4 passed"
    assert agg["tests_found"] == 5 and agg["test_types"] == ["unit", "integration"]
    step = cp["baton"]["steps"]["test.2"]
    assert step["context"]["passed_tokens"] == agg["context_tokens"] > 0
    assert cp["baton"]["steps"]["test.1"]["metadata"]["failures"] == [
        "tests/test_feature.py::test_login - AssertionError: 401 != 200"]
    assert json.loads((ws.root / ".claude" / "tmp" / "testing_supervisor.json").read_text()) \
        == sup
    text = ws.baton("status", ws.only_workflow(), check=True).stdout
    assert "testing supervisor: 4 test(s), 4 passed, 0 failed" in text


def test_twenty_tests_of_one_type_trigger_it_and_nineteen_do_not(ws: Workspace) -> None:
    _tests(ws, "tests/test_many.py", 19)
    plan = ws.write_plan([[]])
    r = ws.baton("run", "Run the tests", "--scope", "test-and-debug", "--plan", str(plan),
                 check=True)
    assert "testing supervisor" not in r.stdout
    cp = _checkpoint(ws, ws.only_workflow())
    assert "testing_supervisor" not in cp["supervisor_state"]
    _tests(ws, "tests/test_many.py", 20)
    r = ws.baton("run", "Run the tests", "--scope", "test-and-debug", "--plan", str(plan),
                 check=True)
    assert "20 test(s) of 1 type(s) (unit): through the testing supervisor" in r.stdout


def test_track_and_metrics_readers() -> None:
    """The pure parts on the seeds' own words: domains by path, pytest's and jest's
    summaries, a coverage total."""
    assert [tiers.domain_of(p) for p in ("src/components/Nav.vue", "api/routes/user.go",
                                         "tests/api/test_user.py", "README.md")] == [
        "frontend", "backend", "testing", None]
    assert tiers.paths_in("- [ ] Edit `server/api/auth.py` (see https://x.io/a/b.py), e.g. "
                          "Login.tsx and tests/. `src/components`, src/app/ui, and/or the "
                          "frontend/backend split") == [
        "server/api/auth.py", "Login.tsx", "tests/", "src/components", "src/app/ui"]
    m = tiers.test_metrics("== 3 failed, 17 passed, 2 skipped in 1.2s ==\n"
                           "TOTAL      120     12    90%\nFAILED tests/a.py::t - boom\n")
    assert (m["passed"], m["failed"], m["skipped"], m["total_tests"], m["coverage_pct"]) == (
        17, 3, 2, 22, 90.0)
    assert m["failures"] == ["tests/a.py::t - boom"]
    jest = tiers.test_metrics("Tests:       1 failed, 9 passed, 10 total\n")
    assert (jest["passed"], jest["failed"], jest["total_tests"]) == (9, 1, 10)


def test_ten_tasks_are_complexity_ten_without_a_score() -> None:
    """No numeric `Complexity` in the metadata (`Medium` is a word): the tasks count."""
    text = AUTH_PLAN.format(extra="- **Complexity**: Medium\n").replace(
        "- [ ] Build the form", "- [ ] a\n- [ ] b\n- [ ] c\n- [ ] d\n- [ ] e\n- [ ] f\n"
        "- [ ] g\n- [ ] Build the form")
    plan = parse_bytes(Kind.PLAN, text.encode(), "plan.md")
    assert isinstance(plan, Plan)
    sections = {"1": "`server/api/auth.py`", "2": "", "3": ""}
    decision = tiers.implementation_decision(plan, sections, ["1", "2", "3"])
    assert (decision["complexity"], decision["complexity_source"]) == (10, "tasks")
    assert decision["domain_count"] == 1 and decision["hierarchical"] is True
    fewer = tiers.implementation_decision(plan, sections, ["1", "3"])
    assert fewer["complexity"] == 2 and fewer["hierarchical"] is False

"""BTN60x: `specs/state.json` task registries, on data shaped like the real registry of
benbrastmckie/ProofChecker (the corpus copy is checked too, when present)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from baton_lsp.model.base import Kind
from baton_lsp.parse import parse_text
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix, only

PATH = "/ws/specs/state.json"


def task(number: int, status: str, **fields: Any) -> dict[str, Any]:
    return {"project_number": number, "project_name": f"task_{number}", "status": status,
            "language": "lean4", **fields}


def registry(*tasks: dict[str, Any], **top: Any) -> str:
    data = {"metadata": {"generated_at": "2026-01-20T20:55:08.000000", "total_tasks": 24},
            "active_projects": list(tasks), "next_project_number": 82, **top}
    return json.dumps(data, indent=2) + "\n"


def check(text: str) -> list:
    return check_text(Kind.REGISTRY, text, PATH)


# -- BTN600 -------------------------------------------------------------------------------


def test_malformed_json_is_one_finding_at_the_break() -> None:
    text = '{\n  "active_projects": [\n    {"project_number": 2, "status": "planned",}\n  ]\n}\n'
    fs = check(text)
    assert [f.code for f in fs] == ["BTN600"]
    assert fs[0].range.start_line == 2 and "invalid JSON" in fs[0].message


def test_wrong_shapes_are_reported_not_raised() -> None:
    for text, words in (("[]\n", "not list"), ('{"active_projects": {}}\n', "list of task"),
                        ('{"active_projects": [3]}\n', "task object"), ("", "empty")):
        (f,) = check(text)
        assert f.code == "BTN600" and words in f.message


def test_a_registry_without_tasks_is_fine() -> None:
    assert check('{"next_project_number": 1, "active_projects": []}\n') == []
    assert check('{"next_project_number": 1}\n') == []


def test_positions_of_entries_and_fields() -> None:
    text = registry(task(60, "not_started"), task(58, "researched", priority="high"))
    doc = parse_text(Kind.REGISTRY, text, PATH)
    assert doc is not None and doc.error is None
    second = doc.entries[1]
    assert second.number == 58 and second.label == "task 58"
    line = text.splitlines()[second.value_ranges["priority"].start_line]
    assert '"priority": "high"' in line


# -- BTN601 -------------------------------------------------------------------------------


def test_status_behind_later_steps_task_58() -> None:
    """The corpus entry: researched 22:50, planned 22:57, started 23:01, status researched,
    and an implementation summary among its artifacts."""
    text = registry(task(58, "researched", researched="2026-03-27T22:50:24Z",
                         planned="2026-03-27T22:57:46Z", started="2026-03-27T23:01:14Z",
                         resume_phase=6))
    (f,) = only(check(text), "BTN601")
    assert "task 58" in f.message and "planned at 2026-03-27T22:57:46Z" in f.message
    assert '"researched"' in text.splitlines()[f.range.start_line][f.range.start_char:]


def test_revisions_and_unsettled_statuses_are_not_reported() -> None:
    text = registry(
        # task 8: planned and started, then researched again (a revision)
        task(8, "researched", planned="2026-03-21T00:33:31Z", started="2026-03-21T00:34:44Z",
             researched="2026-03-21T03:23:50Z"),
        # task 81: re-planned after an implementation attempt
        task(81, "planned", researched="2026-04-02T00:12:38Z", planned="2026-04-02T00:22:47Z",
             started="2026-04-01T22:25:56Z", resume_phase=1),
        task(18, "blocked", researched="2026-03-21T19:07:01Z", planned="2026-03-21T20:44:03Z",
             started="2026-03-21T17:15:15Z"),
        task(998, "researching", created="2026-03-19T17:05:39Z"),
        task(60, "not_started", created="2026-03-24T19:43:21Z"),
    )
    assert only(check(text), "BTN601") == []


def test_not_started_with_a_recorded_step() -> None:
    (f,) = only(check(registry(task(19, "not_started", researched="2026-03-21T19:07:01Z"))),
                "BTN601")
    assert "records being researched" in f.message


def test_the_opencode_era_schema_task_291() -> None:
    """ProofChecker's `.opencode/specs/state.json` (schema 1.1.0): `started` is when the task's
    work began (research), `research_completed` is the research time; status `researched`
    agrees with that history."""
    text = registry(task(291, "researched", phase="research_completed",
                         created="2026-01-04T17:19:31Z", last_updated="2026-01-04T17:50:00Z",
                         started="2026-01-04", research_completed="2026-01-04"),
                    task(342, "in_progress", phase="researching", started="2026-01-08"))
    assert only(check(text), "BTN601") == []


def test_the_opencode_era_schema_still_lags() -> None:
    """The same schema's planning stamp after a `researched` status is a lag."""
    text = registry(task(323, "researched", phase="research_completed",
                         research_completed="2026-01-05", planning_completed="2026-01-07"))
    (f,) = only(check(text), "BTN601")
    assert "planned at 2026-01-07" in f.message and "researched at 2026-01-05" in f.message


# -- BTN602 -------------------------------------------------------------------------------


def test_mixed_priority_case_is_fixed_to_the_majority() -> None:
    text = registry(task(74, "not_started", priority="high"),
                    task(75, "not_started", priority="High"),
                    task(953, "researched", priority="medium"))
    (f,) = only(check(text), "BTN602")
    assert "`High`" in f.message
    fixed = apply_fix(text, f.fix)
    assert '"priority": "high"' in fixed and "High" not in fixed
    assert only(check(fixed), "BTN602") == []


def test_one_style_throughout_is_consistent() -> None:
    assert only(check(registry(task(74, "planned", priority="High"),
                               task(75, "planned", priority="Medium"))), "BTN602") == []
    assert only(check(registry(task(74, "planned", priority="high"),
                               task(81, "planned", priority="critical"))), "BTN602") == []


# -- BTN603 -------------------------------------------------------------------------------


def test_stale_registry_stamp_is_fixed_to_the_newest_entry() -> None:
    text = registry(task(81, "planned", last_updated="2026-04-02T00:22:47Z"),
                    task(60, "not_started", last_updated="2026-03-24T19:43:21Z"),
                    last_updated="2026-03-19T00:00:00Z")
    (f,) = only(check(text), "BTN603")
    assert "task 81" in f.message and f.related
    fixed = apply_fix(text, f.fix)
    assert json.loads(fixed)["last_updated"] == "2026-04-02T00:22:47Z"
    assert only(check(fixed), "BTN603") == []


def test_underscore_stamp_and_dates() -> None:
    stale = registry(task(1, "planned", last_updated="2026-07-20T09:00:00Z"),
                     _last_updated="2026-07-19")
    (f,) = only(check(stale), "BTN603")
    assert json.loads(apply_fix(stale, f.fix))["_last_updated"] == "2026-07-20"
    same_day = registry(task(1, "planned", last_updated="2026-07-19T09:00:00Z"),
                        _last_updated="2026-07-19")
    assert only(check(same_day), "BTN603") == []
    assert only(check(registry(task(1, "planned", last_updated="2026-03-01T00:00:00Z"),
                               last_updated="2026-03-19T00:00:00Z")), "BTN603") == []


def test_a_midnight_stamp_is_a_day() -> None:
    """ProofChecker's `.opencode/specs/state.json`: `_last_updated` 2026-01-08T00:00:00Z beside
    task 343 updated 2026-01-08T20:45:00Z. The midnight stamp records the day, which is right;
    a later day is still stale and the fix keeps the stamp's form."""
    text = registry(task(343, "planned", last_updated="2026-01-08T20:45:00Z"),
                    _last_updated="2026-01-08T00:00:00Z")
    assert only(check(text), "BTN603") == []
    later = registry(task(343, "planned", last_updated="2026-01-09T20:45:00Z"),
                     _last_updated="2026-01-08T00:00:00Z")
    (f,) = only(check(later), "BTN603")
    assert json.loads(apply_fix(later, f.fix))["_last_updated"] == "2026-01-09T20:45:00Z"


# -- BTN604 -------------------------------------------------------------------------------


def test_duplicate_project_numbers() -> None:
    text = registry(task(78, "researched"), task(79, "researched"), task(78, "planned"))
    (f,) = only(check(text), "BTN604")
    assert "project number 78" in f.message
    assert f.related and f.related[0].range.start_line < f.range.start_line


# -- BTN605 -------------------------------------------------------------------------------


def _workspace(root: Path, files: dict[str, str]) -> WorkspaceIndex:
    (root / ".claude").mkdir(parents=True, exist_ok=True)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return WorkspaceIndex(root)


def test_missing_artifact_in_an_existing_directory(tmp_path: Path) -> None:
    plan = "specs/081_fp/plans/17_implementation-plan.md"
    text = registry(task(81, "planned", artifacts=[
        {"path": "specs/081_fp/plans/17_implementaton-plan.md", "type": "plan",
         "summary": "plan"},
        {"path": "specs/081_fp/reports/16_omega-tree-konig.md", "type": "research",
         "summary": "not checked out"},
        {"path": plan, "type": "plan", "summary": "plan"},
        {"path": "/home/u/elsewhere/x.md", "type": "research", "summary": "absolute"},
    ]))
    idx = _workspace(tmp_path, {plan: "# Plan\n", "specs/state.json": text})
    fs = only(check_file(idx, tmp_path / "specs/state.json"), "BTN605")
    assert len(fs) == 1 and "17_implementaton-plan.md" in fs[0].message
    assert fs[0].fix is not None and not fs[0].fix.safe
    assert plan in apply_fix(text, fs[0].fix)
    # the finding depends on the artifact's directory: creating the file re-checks it
    assert str(tmp_path / "specs/state.json") in idx.dependents(tmp_path / "specs/081_fp/plans")


def test_claude_specs_registry_resolves_from_the_root(tmp_path: Path) -> None:
    text = registry(task(10, "planned", artifacts=[
        {"path": ".claude/specs/10_x/plans/implementation-002.md", "type": "plan"}]))
    idx = _workspace(tmp_path, {".claude/specs/10_x/plans/implementation-001.md": "# P\n",
                                ".claude/specs/state.json": text})
    (f,) = only(check_file(idx, tmp_path / ".claude/specs/state.json"), "BTN605")
    assert "implementation-002.md" in f.message


# -- the real registry ---------------------------------------------------------------------


def test_corpus_registry(corpus: Path) -> None:
    """The only real registry in the corpus: task 58's status lags its history and the
    file-level stamp is two weeks behind its newest entry; nothing else is reported."""
    root = corpus / "other/benbrastmckie__ProofChecker"
    path = root / "specs/state.json"
    if not path.is_file():
        return
    fs = [f for f in check_file(WorkspaceIndex(root), path) if f.code.startswith("BTN6")]
    assert sorted((f.code, f.message.split(" has ")[0].split(" is ")[0]) for f in fs) == [
        ("BTN601", "task 58"), ("BTN603", "registry `last_updated`")]

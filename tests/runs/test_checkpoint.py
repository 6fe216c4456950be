"""Checkpoint loading, the migration chain to 2.1, atomic migration on disk, safe resume."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.model.checkpoint import (
    Checkpoint,
    IterationCheckpoint,
    SupervisorCheckpoint,
)
from baton_lsp.model.states import MIGRATION_TRANSITIONS, STORED_TRANSITIONS, Scope, State
from baton_lsp.runs.checkpoint import (
    MIGRATED_REASONING,
    CheckpointError,
    dump_checkpoint,
    guess_scope,
    iteration_problems,
    load_checkpoint,
    migrate_file,
    parse_checkpoint,
    phase_to_state,
    safe_resume_problems,
)

VERSIONS = ["1.0", "1.1", "1.2", "1.3", "2.0", "2.1"]
CHAIN_STEPS = ["1.0->1.1", "1.1->1.2", "1.2->1.3", "1.3->2.0", "2.0->2.1"]
REQUIRED = {"checkpoint_id": "implement_auth_20251107_143022", "workflow_type": "implement",
            "project_name": "auth", "created_at": "2025-11-07T14:30:22Z",
            "status": "in_progress"}


def minimal_doc(version: str) -> dict[str, Any]:
    """Only what `validate_checkpoint` and the version's own sections require."""
    doc: dict[str, Any] = dict(REQUIRED)
    if version != "1.0":
        doc["schema_version"] = version
    if version in ("2.0", "2.1"):
        doc["state_machine"] = {"current_state": "research",
                                "workflow_config": {"scope": "research-and-plan"}}
    if version == "2.1":
        doc["state_machine"]["classification"] = {"workflow_type": "research-and-plan"}
    return doc


def full_doc(version: str) -> dict[str, Any]:
    """Every documented field of the version, non-default values, plus unknown keys."""
    doc: dict[str, Any] = {
        **REQUIRED,
        "workflow_description": "Add user authentication with sessions",
        "updated_at": "2025-11-07T15:00:00Z",
        "current_phase": 3,
        "total_phases": 6,
        "completed_phases": [1, 2],
        "workflow_state": {
            "plan_path": "specs/042_auth/plans/001_auth.md", "current_phase": 3,
            "topic_directory": "specs/042_auth", "topic_number": 42,
            "current_wave": 2, "total_waves": 3, "wave_structure": {"1": [1], "2": [2, 3]},
            "parallel_execution_enabled": True, "max_wave_parallelism": 3,
            "wave_results": {"1": {"phases": [1], "status": "completed", "duration_ms": 185000}},
            "caller_extra": {"kept": [1, {"deep": True}]},
        },
        "last_error": None,
        "x_unknown_top_level": "survives migration",
    }
    if version == "1.0":
        return doc
    doc["schema_version"] = version
    doc.update(replanning_count=2, last_replan_reason="phase too complex",
               replan_phase_counts={"phase_2": 2},
               replan_history=[{"phase": 2, "timestamp": "2025-11-07T14:40:00Z",
                                "reason": "phase too complex"}])
    if version == "1.1":
        return doc
    doc.update(debug_report_path="specs/042_auth/debug/001.md", user_last_choice="continue",
               debug_iteration_count=1, tests_passing=True, plan_modification_time=1760394749)
    if version == "1.2":
        return doc
    doc.update(topic_directory="specs/042_auth", topic_number=42,
               context_preservation={"pruning_log": [{"phase": 1}],
                                     "artifact_metadata_cache": {"r1": {"title": "T"}},
                                     "subagent_output_references": ["ref"]},
               template_source="crud", template_variables={"entity": "user"},
               spec_maintenance={"parent_plan_path": "p.md", "grandparent_plan_path": None,
                                 "spec_updater_invocations": [{"at": "x"}],
                                 "checkbox_propagation_log": []})
    if version == "1.3":
        return doc
    doc.update(
        state_machine={"current_state": "implement", "completed_states": ["initialize", "research",
                                                                          "plan"],
                       "transition_table": dict(STORED_TRANSITIONS),
                       "workflow_config": {"scope": "full-implementation",
                                           "description": "Add user authentication with sessions",
                                           "command": "coordinate",
                                           "topic_path": "specs/042_auth"}},
        phase_data={"research": {"reports_created": ["r1.md"], "duration_ms": 45000}},
        supervisor_state={"research_supervisor": {"worker_count": 2}},
        error_state={"last_error": None, "retry_count": 1, "failed_state": "test"},
        metadata={"checkpoint_id": REQUIRED["checkpoint_id"], "project_name": "auth",
                  "created_at": REQUIRED["created_at"], "updated_at": "2025-11-07T15:00:00Z"},
    )
    if version == "2.0":
        return doc
    doc["state_machine"]["classification"] = {
        "workflow_type": "full-implementation", "research_complexity": 3,
        "research_topics": [{"short_name": "Sessions", "filename_slug": "sessions",
                             "detailed_description": "d", "research_focus": "f"}, "Tokens"],
        "confidence": 0.95, "reasoning": "needs research then code",
        "classified_at": "2025-11-07T14:30:00Z"}
    return doc


def assert_preserved(original: Any, migrated: Any, where: str = "") -> None:
    """Every value of the original is in the migrated form (which may only add keys)."""
    if isinstance(original, dict):
        assert isinstance(migrated, dict), where
        for key, value in original.items():
            if key != "schema_version":
                assert key in migrated, f"{where}.{key}"
                assert_preserved(value, migrated[key], f"{where}.{key}")
    else:
        assert migrated == original, where


def parse(doc: dict[str, Any]):
    return parse_checkpoint(json.dumps(doc), "cp.json")


def write(tmp_path: Path, doc: dict[str, Any] | str | bytes, name: str = "cp.json") -> Path:
    p = tmp_path / name
    if isinstance(doc, bytes):
        p.write_bytes(doc)
    else:
        p.write_text(doc if isinstance(doc, str) else json.dumps(doc, indent=2), encoding="utf-8")
    return p


# --- the chain ------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("builder", [minimal_doc, full_doc], ids=["minimal", "full"])
def test_every_version_migrates_to_a_valid_2_1(version: str, builder) -> None:
    doc = builder(version)
    loaded = parse(doc)
    assert loaded.kind == "checkpoint"
    assert loaded.source_version == version == loaded.effective_version
    assert loaded.steps == CHAIN_STEPS[VERSIONS.index(version):]
    assert isinstance(loaded.checkpoint, Checkpoint)
    assert loaded.data["schema_version"] == "2.1"
    Checkpoint.model_validate(loaded.data)  # the written form is valid on its own
    assert loaded.original == doc  # the input is never mutated


@pytest.mark.parametrize("version", VERSIONS)
def test_full_documents_keep_every_value(version: str) -> None:
    doc = full_doc(version)
    data = parse(doc).data
    assert_preserved(doc, data)
    assert data["x_unknown_top_level"] == "survives migration"
    assert data["workflow_state"]["caller_extra"] == {"kept": [1, {"deep": True}]}


@pytest.mark.parametrize("version", ["1.0", "1.1", "1.2", "1.3"])
def test_1x_phase_numbers_become_state_names(version: str) -> None:
    loaded = parse(full_doc(version))
    sm = loaded.checkpoint.state_machine
    assert sm.current_state is State.IMPLEMENT  # current_phase 3
    assert sm.completed_states == [State.RESEARCH, State.PLAN]  # phases 1, 2
    assert sm.transition_table == MIGRATION_TRANSITIONS  # the older table of the 2.0 step
    assert sm.workflow_config.command == "implement"
    assert sm.workflow_config.description == "Add user authentication with sessions"
    assert loaded.data["error_state"] == {"last_error": None, "retry_count": 0,
                                          "failed_state": None}
    assert loaded.data["metadata"] == {"checkpoint_id": REQUIRED["checkpoint_id"],
                                       "project_name": "auth",
                                       "created_at": REQUIRED["created_at"],
                                       "updated_at": "2025-11-07T15:00:00Z"}
    # 1.2 -> 1.3 copies the topic from workflow_state.
    assert loaded.data["topic_directory"] == "specs/042_auth"
    assert loaded.data["topic_number"] == 42


def test_minimal_1_0_gets_every_default_and_initialize_state() -> None:
    loaded = parse(minimal_doc("1.0"))
    data = loaded.data
    assert "no schema_version" in loaded.notes[0]
    assert data["replanning_count"] == 0 and data["replan_history"] == []
    assert data["debug_iteration_count"] == 0 and data["user_last_choice"] is None
    assert data["context_preservation"] == {"pruning_log": [], "artifact_metadata_cache": {},
                                            "subagent_output_references": []}
    assert data["topic_directory"] is None
    sm = data["state_machine"]
    assert sm["current_state"] == "initialize" and sm["completed_states"] == []
    assert sm["workflow_config"] == {"scope": "full-implementation", "description": "",
                                     "command": "implement"}
    assert data["phase_data"] == {} and data["supervisor_state"] == {}


def test_2x_sections_are_kept_as_written() -> None:
    doc = full_doc("2.0")
    sm = parse(doc).checkpoint.state_machine
    assert sm.transition_table == STORED_TRANSITIONS
    assert sm.workflow_config.topic_path == "specs/042_auth"  # type: ignore[attr-defined]
    full = parse(full_doc("2.1")).checkpoint.state_machine.classification
    assert full.research_complexity == 3 and full.confidence == 0.95
    assert full.research_topics[1] == "Tokens"


def test_classification_fallback_is_deterministic() -> None:
    first = parse(full_doc("2.0")).data
    second = parse(full_doc("2.0")).data
    assert first == second
    assert first["state_machine"]["classification"] == {
        "workflow_type": "full-implementation", "research_complexity": 2,
        "research_topics": [], "confidence": 0.0, "reasoning": MIGRATED_REASONING,
        "classified_at": None}


def test_partial_classification_in_a_2_0_file_is_completed_not_replaced() -> None:
    doc = full_doc("2.0")
    doc["state_machine"]["classification"] = {"research_complexity": 4}
    c = parse(doc).checkpoint.state_machine.classification
    assert c.research_complexity == 4 and c.workflow_type is Scope.FULL_IMPLEMENTATION


def test_quirk_2_1_without_classification_is_migrated_as_2_0() -> None:
    doc = full_doc("2.0")
    doc["schema_version"] = "2.1"  # what the 1.3 -> 2.0 step writes
    loaded = parse(doc)
    assert (loaded.source_version, loaded.effective_version) == ("2.1", "2.0")
    assert loaded.steps == ["2.0->2.1"]
    assert any("without state_machine.classification" in n for n in loaded.notes)
    assert loaded.checkpoint.state_machine.classification.reasoning == MIGRATED_REASONING


@pytest.mark.parametrize("declared", ["2.0", "2.1"])
def test_2x_with_null_state_machine_is_rebuilt_from_phases(declared: str) -> None:
    doc = full_doc("1.3")
    doc.update(schema_version=declared, state_machine=None,
               error_state={"last_error": None, "retry_count": 3, "failed_state": None})
    loaded = parse(doc)
    assert loaded.effective_version == "1.3"
    assert loaded.steps == ["1.3->2.0", "2.0->2.1"]
    assert loaded.checkpoint.state_machine.current_state is State.IMPLEMENT
    assert loaded.checkpoint.error_state.retry_count == 3  # existing section kept


def test_phase_numbers_outside_0_7_become_initialize_once_with_a_note() -> None:
    doc = full_doc("1.2")
    doc.update(current_phase=9, completed_phases=[1, 2, 8, 9, 1])
    loaded = parse(doc)
    sm = loaded.checkpoint.state_machine
    assert sm.current_state is State.INITIALIZE
    assert sm.completed_states == [State.RESEARCH, State.PLAN, State.INITIALIZE]
    assert any("current_phase 9" in n for n in loaded.notes)
    assert any("(8, 9)" in n for n in loaded.notes)


@pytest.mark.parametrize(("value", "state"), [
    (0, "initialize"), (1, "research"), (2, "plan"), (3, "implement"), (4, "test"),
    (5, "debug"), (6, "document"), (7, "complete"), (8, "initialize"), (-1, "initialize"),
    ("5", "debug"), (2.0, "plan"), (2.5, "initialize"), (True, "initialize"),
    (None, "initialize"), ("two", "initialize"),
])
def test_phase_to_state(value: Any, state: str) -> None:
    assert phase_to_state(value) is State(state)


@pytest.mark.parametrize(("description", "scope"), [
    ("Research authentication patterns in the codebase", "research-only"),
    ("research caching\nsecond line", "research-only"),
    ("Research auth patterns and create an implementation plan", "research-and-plan"),
    ("Analyze the cache layer to plan a rewrite", "research-and-plan"),
    ("analyze options for planning", "research-and-plan"),
    ("Fix the login redirect", "debug-only"),
    ("Troubleshoot flaky CI", "debug-only"),
    ("DEBUG the parser", "debug-only"),
    ("Add user authentication", "full-implementation"),
    ("Research X and implement Y", "full-implementation"),  # not research-only: implement
    ("research\nand\nplan", "full-implementation"),  # grep matches line by line
    ("Add prefix support", "debug-only"),  # substring match, as grep does
    ("", "full-implementation"),
    (None, "full-implementation"),
])
def test_scope_guess(description: str | None, scope: str) -> None:
    assert guess_scope(description) is Scope(scope)


def _grep_scope(description: str) -> str:
    """The original `grep -Ei` chain, for comparison with the linear implementation."""
    lines = description.split("\n")

    def grep(pattern: str) -> bool:
        return any(re.search(pattern, line, re.I) for line in lines)

    if not description:
        return "full-implementation"
    if grep("^research") and not grep("plan|implement"):
        return "research-only"
    if grep("(research|analyze).*(to |and |for ).*(plan|planning)"):
        return "research-and-plan"
    if grep("(fix|debug|troubleshoot)"):
        return "debug-only"
    return "full-implementation"


TOKENS = ["research", "Analyze", "to ", "and ", "for ", "plan", "implement", "fix", "x", " ",
          "\n", "tO ", "PLAN"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(TOKENS), max_size=12).map("".join))
def test_scope_guess_matches_the_grep_chain(description: str) -> None:
    assert guess_scope(description).value == _grep_scope(description)


def test_scope_guess_is_linear_on_hostile_descriptions() -> None:
    hostile = "research " + "to and for " * 30000  # cubic for the original regex
    assert guess_scope(hostile) is Scope.RESEARCH_ONLY
    assert guess_scope("x" + hostile) is Scope.FULL_IMPLEMENTATION


def test_iteration_flavour_is_detected_and_not_migrated() -> None:
    doc = {"version": "2.1", "plan_path": "p.md", "iteration": 2, "max_iterations": 5,
           "work_remaining": ["phase 3"], "halt_reason": "context_threshold",
           "workflow_id": "build_1", "extra": 1}
    loaded = parse(doc)
    assert loaded.kind == "iteration" and loaded.steps == [] and loaded.data == doc
    assert isinstance(loaded.checkpoint, IterationCheckpoint)


# --- the real corpus ------------------------------------------------------------------------


def test_corpus_1_2_checkpoints_migrate_with_values_preserved(corpus: Path,
                                                             tmp_path: Path) -> None:
    files = sorted((corpus / ".claude" / "checkpoints").glob("test_*/test_checkpoint.json"))
    assert files
    for i, path in enumerate(files):
        original = json.loads(path.read_text(encoding="utf-8"))
        loaded = load_checkpoint(path)
        assert loaded.source_version == "1.2"
        assert loaded.steps == ["1.2->1.3", "1.3->2.0", "2.0->2.1"]
        assert_preserved(original, loaded.data, str(path))
        cp = loaded.checkpoint
        assert isinstance(cp, Checkpoint)
        assert cp.state_machine.current_state is State.PLAN  # current_phase 2
        assert cp.state_machine.completed_states == [State.RESEARCH]
        assert cp.state_machine.workflow_config.scope is Scope.FULL_IMPLEMENTATION
        assert cp.state_machine.workflow_config.command == "implement"
        assert cp.metadata.checkpoint_id == original["checkpoint_id"]
        assert cp.plan_modification_time == original["plan_modification_time"]
        copy = tmp_path / f"{i}.json"
        copy.write_bytes(path.read_bytes())
        result = migrate_file(copy)
        assert result.written
        assert (tmp_path / f"{i}.json.backup").read_bytes() == path.read_bytes()
        again = load_checkpoint(copy)
        assert again.steps == [] and again.data == loaded.data


def test_corpus_supervisor_checkpoint_loads(corpus: Path) -> None:
    path = next((corpus / ".claude" / "specs").glob("726_*/reports/SUPERVISOR_CHECKPOINT.json"))
    loaded = load_checkpoint(path)
    assert loaded.kind == "supervisor" and loaded.steps == [] and loaded.source_version is None
    sup = loaded.checkpoint
    assert isinstance(sup, SupervisorCheckpoint)
    assert sup.worker_count == len(sup.workers) == 4
    assert sup.aggregated_metadata is not None and sup.aggregated_metadata.reports_count == 4
    assert "/specs/725_" in (sup.workers[0].output_path or "")  # points at another topic
    assert sup.model_dump(mode="json", exclude_unset=True) == loaded.data


# --- corrupt input --------------------------------------------------------------------------

BAD_INPUTS: list[tuple[str, bytes, str]] = [
    ("truncated", b'{"schema_version": "1.2", "checkpoint_id": "a"', "invalid JSON at line 1"),
    ("list", b"[1, 2, 3]", "not a JSON object (found an array)"),
    ("string", b'"hello"', "not a JSON object (found a string)"),
    ("binary", bytes(range(256)) * 4, "not UTF-8 text"),
    ("deep", b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    ("empty", b"", "file is empty"),
    ("nan", b'{"x": NaN}', "NaN is not valid JSON"),
    ("huge-int", b'{"x": 1' + b"0" * 5000 + b"}", "invalid JSON"),
    ("unknown-version", json.dumps({**REQUIRED, "schema_version": "3.0"}).encode(),
     "unknown checkpoint schema_version '3.0'"),
    ("numeric-version", json.dumps({**REQUIRED, "schema_version": 1.2}).encode(),
     "schema_version must be a string"),
    ("missing-required", json.dumps({"schema_version": "1.2", "checkpoint_id": "a"}).encode(),
     "invalid 1.2 checkpoint: workflow_type: Field required"),
    ("wrong-types", json.dumps({**REQUIRED, "schema_version": "1.1", "current_phase": "three",
                                "completed_phases": "1,2", "replan_history": [5]}).encode(),
     "current_phase: Input should be a valid integer"),
    ("bad-state", json.dumps({**minimal_doc("2.1"), "state_machine": {
        "current_state": "flying", "workflow_config": {"scope": "research-only"},
        "classification": {"workflow_type": "research-only"}}}).encode(),
     "state_machine.current_state: Input should be 'initialize'"),
    ("bad-scope", json.dumps({**minimal_doc("2.0"), "state_machine": {
        "current_state": "plan", "workflow_config": {"scope": "everything"}}}).encode(),
     "state_machine.workflow_config.scope: Input should be"),
    ("state-machine-not-object", json.dumps({**REQUIRED, "schema_version": "2.1",
                                             "state_machine": "plan"}).encode(),
     "state_machine: Input should be a valid dictionary"),
    ("iteration-wrong-type", json.dumps({"version": "2.1", "iteration": "two", "plan_path": "p",
                                         "work_remaining": 5}).encode(),
     "work_remaining: Input should be a valid string, or Input should be a valid list"),
]


@pytest.mark.parametrize(("raw", "message"), [(b, m) for _, b, m in BAD_INPUTS],
                         ids=[n for n, _, _ in BAD_INPUTS])
def test_corrupt_input_gives_a_clear_checkpoint_error(raw: bytes, message: str,
                                                      tmp_path: Path) -> None:
    path = write(tmp_path, raw)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    text = str(info.value)
    assert text.startswith(str(path)) and message in text
    assert "\n" not in text and len(text) < 2000


def test_wrong_types_report_every_field() -> None:
    doc = {**REQUIRED, "schema_version": "1.1", "current_phase": "three",
           "completed_phases": "1,2", "replan_history": [5]}
    with pytest.raises(CheckpointError) as info:
        parse(doc)
    text = str(info.value)
    for part in ("current_phase:", "completed_phases:", "replan_history[0]:"):
        assert part in text


def test_missing_and_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no such file"):
        load_checkpoint(tmp_path / "absent.json")
    with pytest.raises(CheckpointError, match="not a regular file"):
        load_checkpoint(tmp_path)


def test_utf8_bom_is_accepted() -> None:
    raw = b"\xef\xbb\xbf" + json.dumps(minimal_doc("1.2")).encode()
    assert parse_checkpoint(raw).source_version == "1.2"


# --- migrate_file ---------------------------------------------------------------------------


def test_migrate_file_keeps_a_byte_identical_backup_and_round_trips(tmp_path: Path) -> None:
    # Odd formatting and non-ASCII text: the backup must be the exact original bytes.
    doc = full_doc("1.1")
    doc["workflow_description"] = "Ajouter l’authentification — ✓"
    raw = ("{\t" + json.dumps(doc, ensure_ascii=False)[1:]).encode("utf-8")
    path = write(tmp_path, raw)
    os.chmod(path, 0o640)
    result = migrate_file(path)
    assert result.written and result.backup == tmp_path / "cp.json.backup"
    assert result.backup.read_bytes() == raw
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cp.json", "cp.json.backup"]
    assert (path.stat().st_mode & 0o777) == 0o640
    text = path.read_text(encoding="utf-8")
    assert "Ajouter l’authentification — ✓" in text  # written as UTF-8, not escaped
    again = load_checkpoint(path)
    assert again.steps == [] and again.source_version == "2.1"
    assert again.data == result.loaded.data
    assert again.checkpoint.model_dump(mode="json", exclude_unset=True) == again.data
    assert dump_checkpoint(again.data) == text


def test_migrate_file_leaves_current_files_alone(tmp_path: Path) -> None:
    path = write(tmp_path, full_doc("2.1"))
    before = path.read_bytes()
    result = migrate_file(path)
    assert not result.written and result.backup is None
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["cp.json"]


def test_migrate_file_refuses_symlinks(tmp_path: Path) -> None:
    real = write(tmp_path, minimal_doc("1.0"), "real.json")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    with pytest.raises(CheckpointError, match="symbolic link"):
        migrate_file(link)


def test_backup_symlink_is_replaced_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = write(outside, "do not touch", "victim.txt")
    inner = tmp_path / "inner"
    inner.mkdir()
    path = write(inner, minimal_doc("1.0"))
    (inner / "cp.json.backup").symlink_to(victim)
    migrate_file(path)
    assert victim.read_text(encoding="utf-8") == "do not touch"
    assert not (inner / "cp.json.backup").is_symlink()


def test_failed_write_leaves_the_original_intact(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, minimal_doc("1.2"))
    before = path.read_bytes()
    real_replace = os.replace

    def failing_replace(src: Any, dst: Any, **dir_fds: Any) -> None:
        if Path(dst).name == path.name:  # names relative to the directory's descriptor
            raise OSError(28, "No space left on device")
        real_replace(src, dst, **dir_fds)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(CheckpointError, match="cannot write: No space left on device"):
        migrate_file(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cp.json", "cp.json.backup"]


# --- safe resume ----------------------------------------------------------------------------

NOW = datetime(2025, 11, 10, 12, 0, tzinfo=UTC)


def resumable(tmp_path: Path, **changes: Any) -> Checkpoint:
    plan = tmp_path / "plan.md"
    plan.write_text("# Plan\n", encoding="utf-8")
    os.utime(plan, (1_700_000_000, 1_700_000_000))
    doc = full_doc("2.1")
    doc.update(created_at="2025-11-09T12:00:00Z", plan_modification_time=1_700_000_000)
    doc["workflow_state"]["plan_path"] = str(plan)
    doc.update(changes)
    cp = parse(doc).checkpoint
    assert isinstance(cp, Checkpoint)
    return cp


def test_safe_resume_passes_when_every_condition_holds(tmp_path: Path) -> None:
    assert safe_resume_problems(resumable(tmp_path), now=NOW) == []
    assert safe_resume_problems(resumable(tmp_path, tests_passing=None), now=NOW) == []


def test_safe_resume_reports_every_failing_condition(tmp_path: Path) -> None:
    cp = resumable(tmp_path, tests_passing=False, last_error="build failed", status="failed",
                   created_at="2025-10-01T00:00:00Z", plan_modification_time=1_600_000_000)
    problems = safe_resume_problems(cp, now=NOW)
    assert len(problems) == 5
    assert problems[0].startswith("Tests failing in last run")
    assert problems[1] == "Last run had errors: build failed"
    assert problems[2] == "Checkpoint status: failed (expected: in_progress)"
    assert problems[3] == "Checkpoint 40 days old (max: 7 days)"
    assert problems[4].startswith("Plan file modified since checkpoint")


def test_safe_resume_age_limit_has_the_one_hour_buffer(tmp_path: Path) -> None:
    inside = (NOW - timedelta(days=7, minutes=30)).strftime("%Y-%m-%dT%H:%M:%SZ")
    outside = (NOW - timedelta(days=7, hours=2)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert safe_resume_problems(resumable(tmp_path, created_at=inside), now=NOW) == []
    assert safe_resume_problems(resumable(tmp_path, created_at=outside), now=NOW) == [
        "Checkpoint 7 days old (max: 7 days)"]
    assert "not a timestamp" in safe_resume_problems(
        resumable(tmp_path, created_at="yesterday"), now=NOW)[0]


def test_safe_resume_error_state_and_plan_override(tmp_path: Path) -> None:
    cp = resumable(tmp_path, error_state={"last_error": {"type": "timeout"}, "retry_count": 1})
    assert safe_resume_problems(cp, now=NOW) == ['Last run had errors: {"type": "timeout"}']
    other = tmp_path / "other.md"
    other.write_text("x", encoding="utf-8")
    os.utime(other, (1_800_000_000, 1_800_000_000))
    problems = safe_resume_problems(resumable(tmp_path), plan_path=other, now=NOW)
    assert len(problems) == 1 and "mtime 1800000000" in problems[0]
    # A plan that no longer exists skips the mtime check, as the original does.
    assert safe_resume_problems(resumable(tmp_path), plan_path=tmp_path / "gone.md",
                                now=NOW) == []


def test_safe_resume_works_on_migrated_1_2_checkpoints(tmp_path: Path) -> None:
    doc = full_doc("1.2")
    doc.update(tests_passing=False, created_at="2025-11-10T00:00:00Z")
    cp = parse(doc).checkpoint
    assert isinstance(cp, Checkpoint)
    assert safe_resume_problems(cp, now=NOW) == [
        "Tests failing in last run (tests_passing is false)"]


def test_iteration_problems(tmp_path: Path) -> None:
    plan = write(tmp_path, "# P\n", "plan.md")
    ok = IterationCheckpoint(version="2.1", plan_path=str(plan), iteration=2,
                             halt_reason="stuck")
    assert iteration_problems(ok) == ([], [])
    bad = IterationCheckpoint(version="2.1", plan_path="missing.md", iteration=6,
                              max_iterations=5, continuation_context="ctx.md",
                              halt_reason="bored")
    errors, warnings = iteration_problems(bad, base=tmp_path)
    assert errors == ["iteration 6 exceeds max_iterations 5",
                      "plan_path does not exist: missing.md"]
    assert warnings[0] == "continuation file missing: ctx.md"
    assert warnings[1].startswith("unknown halt_reason 'bored'")


# -- the design documents' own examples -------------------------------------------------------

SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"


def _seed_json(prefix: str, marker: str) -> str:
    """The first ```json block after `marker` in the seed document `prefix`_*.txt."""
    found = sorted(SEEDS.glob(f"{prefix}_*.txt")) if SEEDS.is_dir() else []
    if not found:
        pytest.skip("shared seeds not present")
    text = found[0].read_text(encoding="utf-8")
    start = text.index("```json\n", text.index(marker)) + len("```json\n")
    return text[start:text.index("```", start)]


def test_seed_001s_v2_example_loads_as_2_0(tmp_path: Path) -> None:
    # `version` instead of schema_version; checkpoint_id, project_name and dates under
    # `metadata`; no workflow_type or status.
    path = tmp_path / "coordinate_claude-config_20251107_143022.json"
    path.write_text(_seed_json("001", "### Checkpoint Schema v2.0"), encoding="utf-8")
    loaded = load_checkpoint(path)
    assert (loaded.source_version, loaded.effective_version) == ("2.0", "2.0")
    cp = loaded.checkpoint
    assert isinstance(cp, Checkpoint)
    assert (cp.checkpoint_id, cp.project_name, cp.created_at) == (
        "coordinate_20251107_143022", "claude-config", "2025-11-07T14:30:22Z")
    assert (cp.workflow_type, cp.status) == ("coordinate", "in_progress")
    assert cp.state_machine is not None and cp.state_machine.current_state is State.RESEARCH
    assert any("read from `metadata`" in n for n in loaded.notes)
    assert any("derived: workflow_type = 'coordinate'" in n for n in loaded.notes)
    assert "schema_version" not in loaded.original  # the file is read, never changed


def test_seed_003s_v2_1_example_loads_with_derived_identity(tmp_path: Path) -> None:
    # Only the 2.x sections: no checkpoint_id, project_name, created_at or status at all.
    path = tmp_path / "coordinate_auth.json"
    path.write_text(_seed_json("003", "Extend Checkpoint Schema to v2.1 with Classification"),
                    encoding="utf-8")
    loaded = load_checkpoint(path)
    cp = loaded.checkpoint
    assert isinstance(cp, Checkpoint) and loaded.effective_version == "2.1"
    assert (cp.checkpoint_id, cp.status) == ("coordinate_auth", "in_progress")
    derived = next(n for n in loaded.notes if n.startswith("not in the file, derived"))
    assert "project_name" in derived and "created_at" in derived


def test_a_1_x_checkpoint_without_its_identity_is_still_invalid() -> None:
    # Lifting and deriving is for the 2.x design shape only: validate_checkpoint's five
    # fields stay required on 1.x files.
    doc = full_doc("1.2")
    del doc["project_name"]
    with pytest.raises(CheckpointError, match="project_name"):
        parse(doc)

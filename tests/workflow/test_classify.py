"""Classifier output validation, the keyword fallback, report metadata and the state-file
reader used for the classification consistency check."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_lsp.model.checkpoint import Classification
from baton_lsp.runs.records import write_state_file
from baton_lsp.workflow.classify import (
    ClassificationError,
    keyword_complexity,
    keyword_scope,
    mismatches,
    parse_classifier_output,
    read_state_file,
    topic_spec,
)
from baton_lsp.workflow.signals import SignalReader
from baton_lsp.workflow.supervisor import check_invocation_plan, extract_metadata

TOPIC = {"short_name": "Auth", "detailed_description": "x" * 60, "filename_slug": "auth",
         "research_focus": "how"}


def _output(**changes: object) -> str:
    data = {"workflow_type": "research-and-plan", "research_complexity": 1,
            "research_topics": [TOPIC], "confidence": 0.9, "reasoning": "r", **changes}
    return json.dumps(data)


def test_valid_output() -> None:
    out = parse_classifier_output(_output())
    assert out.workflow_type.value == "research-and-plan" and out.research_topics[0].filename_slug \
        == "auth"


@pytest.mark.parametrize(("value", "message"), [
    (None, "printed no CLASSIFICATION_COMPLETE"),
    ("{not json", "not valid JSON"),
    ("[1]", "must carry a JSON object"),
    (_output(research_complexity=2), "research_topics has 1 topic(s) but research_complexity "
                                     "is 2"),
    (_output(research_topics=[{**TOPIC, "filename_slug": "Auth-Slug"}]), "filename_slug"),
    (_output(research_topics=[{**TOPIC, "detailed_description": "short"}]),
     "at least 50 characters"),
    (_output(research_topics=[{**TOPIC, "detailed_description": "y" * 501}]),
     "at most 500 characters"),
    (_output(workflow_type="everything"), "workflow_type"),
    (_output(confidence=2), "confidence"),
])
def test_invalid_output_names_the_rule(value: str | None, message: str) -> None:
    with pytest.raises(ClassificationError, match=message.replace("(", r"\(").replace(
            ")", r"\)")):
        parse_classifier_output(value)


def test_keyword_fallback() -> None:
    assert keyword_scope("Revise the plan for caching", has_plan=True).value == \
        "research-and-revise"
    assert keyword_scope("Do it", has_plan=True).value == "implement-only"
    assert keyword_complexity("a thorough audit") == 4
    assert keyword_complexity("fix a typo") == 1
    spec = topic_spec("x", "y")
    assert 50 <= len(spec["detailed_description"]) <= 500 and spec["filename_slug"] == "x"


def test_state_file_round_trip_and_mismatches(tmp_path: Path) -> None:
    topics = [TOPIC]
    path = write_state_file(tmp_path, "wf_1", {
        "WORKFLOW_SCOPE": "research-only", "RESEARCH_COMPLEXITY": 1,
        "RESEARCH_TOPICS_JSON": topics, "WORKFLOW_DESCRIPTION": 'say "$(hi)" `x` \\ ok'})
    values = read_state_file(tmp_path, path)
    assert values["WORKFLOW_DESCRIPTION"] == 'say "$(hi)" `x` \\ ok'
    assert json.loads(values["RESEARCH_TOPICS_JSON"]) == topics
    raw = {"workflow_type": "research-only", "research_complexity": 1, "research_topics": topics}
    assert mismatches(Classification.model_validate(raw), values) == []
    other = Classification.model_validate({
        **raw, "workflow_type": "research-and-plan",
        "research_topics": [{**TOPIC, "filename_slug": "other"}]})
    assert [k for k, _, _ in mismatches(other, values)] == ["WORKFLOW_SCOPE",
                                                            "RESEARCH_TOPICS_JSON"]
    assert read_state_file(tmp_path, tmp_path / "missing.sh") == {}


def test_metadata_is_extracted_not_copied(tmp_path: Path) -> None:
    report = tmp_path / "r.md"
    report.write_text("---\nfindings_count: 3\nreport_type: analysis\n---\n\n# Report: Caching\n\n"
                      "## Metadata\n- **Date**: 2026-01-01\n- **Agent**: a\n\n"
                      "## Executive Summary\n\nFirst paragraph\ncontinues here.\n\nSecond.\n\n"
                      "## Findings\n\n1. **One**: alpha\n2. Two\n   - nested detail\n- Three\n\n"
                      "## Details\n\n- not a finding\n" + "filler\n" * 500)
    meta = extract_metadata(report)
    assert meta == {"report_type": "analysis", "findings_count": 3, "title": "Caching",
                    "date": "2026-01-01", "agent": "a",
                    "summary": "First paragraph continues here.",
                    "key_findings": ["One: alpha", "Two", "Three"]}
    assert extract_metadata(tmp_path / "missing.md") == {}


def test_multiline_signal_values_and_brief_fields() -> None:
    r = SignalReader()
    for line in ["INVOCATION_PLAN_READY: 2", "invocations: [", '  {"topic": "a", '
                 '"report_path": "/r/1.md"},', '  {"topic": "b", "report_path": "/r/2.md"}',
                 "]", "note: ignored", "CLASSIFICATION_COMPLETE: {", '"x": 1', "}",
                 "work_remaining: Phase_2"]:
        r.feed(line)
    assert r.first("INVOCATION_PLAN_READY").value == "2"  # type: ignore[union-attr]
    assert json.loads(r.fields["invocations"])[1]["topic"] == "b"
    assert json.loads(r.first("CLASSIFICATION_COMPLETE").value) == {"x": 1}  # type: ignore[union-attr]
    assert r.fields["work_remaining"] == "Phase_2" and "note" not in r.fields
    assert "note: ignored" not in r.passed_text()
    order, problem = check_invocation_plan("2", r.fields["invocations"], ["a", "b"],
                                           ["/r/1.md", "/r/2.md"])
    assert problem is None and order == [("a", "/r/1.md"), ("b", "/r/2.md")]
    _, problem = check_invocation_plan("3", r.fields["invocations"], ["a", "b"],
                                       ["/r/1.md", "/r/2.md"])
    assert problem and "2 invocations were expected" in problem


def test_an_unclosed_json_value_does_not_swallow_later_signals() -> None:
    r = SignalReader()
    for line in ["PROGRESS: [step 1", "CLASSIFICATION_COMPLETE: {\"a\": [", "oops",
                 "TASK_ERROR: parse_error - gave up", "REPORT_CREATED: /r.md"]:
        r.feed(line)
    assert r.progress == ["[step 1"]
    assert r.first("CLASSIFICATION_COMPLETE").value == '{"a": [\noops'  # type: ignore[union-attr]
    assert r.errors[0].error_type == "parse_error" and r.reported_paths() == ["/r.md"]

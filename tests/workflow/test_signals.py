"""Signal parsing and the hard barrier."""

from __future__ import annotations

from pathlib import Path

from baton_lsp.workflow.barrier import check_artifact
from baton_lsp.workflow.signals import SignalReader


def test_signals_in_order_with_errors_and_multiline_context() -> None:
    r = SignalReader()
    for line in ["PROGRESS: Starting research", "REPORT_CREATED: /ws/r.md", "noise",
                 "TASK_ERROR: file_error - Cannot access codebase directory: /invalid/path",
                 "ERROR_CONTEXT: {", '  "path": "/invalid/path",', '  "nested": {"a": 1}',
                 "}", "PHASE_COMPLETE: 3"]:
        r.feed(line)
    assert [s.name for s in r.signals] == ["PROGRESS", "REPORT_CREATED", "TASK_ERROR",
                                           "ERROR_CONTEXT", "PHASE_COMPLETE"]
    assert r.progress == ["Starting research"]
    err = r.errors[0]
    assert (err.error_type, err.message) == ("file_error",
                                             "Cannot access codebase directory: /invalid/path")
    assert err.context == {"path": "/invalid/path", "nested": {"a": 1}}
    assert r.reported_paths() == ["/ws/r.md"]


def test_runaway_context_is_bounded() -> None:
    r = SignalReader()
    r.feed("ERROR_CONTEXT: {")
    for _ in range(1000):
        r.feed('"x": 1,')
    r.feed("PLAN_CREATED: /p.md")
    assert r.errors and "raw" in r.errors[0].context
    assert r.first("PLAN_CREATED") is not None


def test_barrier_says_which_failure(tmp_path: Path) -> None:
    expected = tmp_path / "reports" / "001.md"
    expected.parent.mkdir()
    f = check_artifact(tmp_path, expected, [])
    assert f and f.kind == "missing" and str(expected) in f.message
    elsewhere = tmp_path / "tmp" / "other.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("x")
    f = check_artifact(tmp_path, expected, [str(elsewhere)])
    assert f and f.kind == "elsewhere" and str(elsewhere) in f.message and \
        "wrong location" in f.message
    expected.write_text("")
    f = check_artifact(tmp_path, expected, [])
    assert f and f.kind == "empty"
    expected.write_text("# Report\n")
    assert check_artifact(tmp_path, expected, [str(expected)]) is None
    outside = tmp_path.parent / "outside.md"
    f = check_artifact(tmp_path, outside, [])
    assert f and f.kind == "outside"

"""BTN401-BTN406: errors.jsonl records and workflow state files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.engine import check_text
from tests.helpers import apply_fix as apply

LOG = "/ws/.claude/data/logs/errors.jsonl"
STATE = "/ws/.claude/tmp/workflow_test_1.sh"
DATA_CODES = {f"BTN40{i}" for i in range(1, 7)}


def check(kind: Kind, text: str, path: str) -> list[Finding]:
    return [f for f in check_text(kind, text, path) if f.code in DATA_CODES | {"BTN000"}]




def record(**overrides: object) -> str:
    rec: dict[str, object] = {
        "timestamp": "2025-11-20T10:00:00Z", "environment": "production", "command": "/build",
        "workflow_id": "build_1", "user_args": "", "error_type": "state_error",
        "error_message": "boom", "source": "bash_block_2", "stack": ["12 main x.sh"],
        "context": {}, "status": "ERROR", "status_updated_at": None, "repair_plan_path": None,
    }
    rec.update(overrides)
    return json.dumps({k: v for k, v in rec.items() if v is not ...}, separators=(",", ":"))


def log(*lines: str) -> str:
    return "\n".join(lines) + "\n"


def test_rules_are_registered() -> None:
    for code in sorted(DATA_CODES):
        r = get_rule(code)
        assert r is not None and "\n\n" in r.doc, code
    assert get_rule("BTN401").severity == "error"  # type: ignore[union-attr]
    assert get_rule("BTN400") is not None


# -- errors.jsonl -----------------------------------------------------------------------


def test_valid_log_with_both_record_shapes_is_clean() -> None:
    old = record(status=..., status_updated_at=..., repair_plan_path=...)
    text = log(old, record(), "", record(error_type="llm_timeout", status="RESOLVED"))
    assert check(Kind.ERRORS_LOG, text, LOG) == []


def test_malformed_lines_are_errors() -> None:
    text = log(record(), '{"timestamp": "2025-11-20T10:00:00Z", "error_type', "[1, 2]",
               record())
    found = check(Kind.ERRORS_LOG, text, LOG)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN401", 1), ("BTN401", 2)]
    assert found[0].severity == "error"
    assert "not valid JSON" in found[0].message
    assert "expected a JSON object, found list" in found[1].message


def test_missing_required_fields_are_named() -> None:
    text = log(record(), record(timestamp=..., error_message=""), record(error_type=None))
    found = check(Kind.ERRORS_LOG, text, LOG)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN402", 1), ("BTN402", 2)]
    assert "`timestamp`, `error_message`" in found[0].message
    assert "`error_type`" in found[1].message and "`timestamp`" not in found[1].message


def test_unknown_error_type_points_at_the_value_and_fix_replaces_it() -> None:
    text = log(record(), record(error_type="stat_error"))
    found = check(Kind.ERRORS_LOG, text, LOG)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN403", 1)]
    f = found[0]
    line = text.split("\n")[1]
    assert line[f.range.start_char:f.range.end_char] == "stat_error"
    assert "did you mean `state_error`" in f.message
    fixed = apply(text, f.fix)
    assert json.loads(fixed.split("\n")[1])["error_type"] == "state_error"
    assert check(Kind.ERRORS_LOG, fixed, LOG) == []


@pytest.mark.parametrize("etype", [
    "state_error", "validation_error", "agent_error", "parse_error", "file_error",
    "timeout_error", "execution_error", "dependency_error", "transient", "permanent", "fatal",
    "llm_rate_limit",
])
def test_known_error_types(etype: str) -> None:
    assert check(Kind.ERRORS_LOG, log(record(error_type=etype)), LOG) == []


def test_unknown_error_type_without_close_match_has_no_fix() -> None:
    found = check(Kind.ERRORS_LOG, log(record(error_type="kaboom")), LOG)
    assert [f.code for f in found] == ["BTN403"] and found[0].fix is None


def test_unknown_status_with_case_fix() -> None:
    text = log(record(status="resolved"), record(status="FIX_PLANED"), record(status="ERROR"))
    found = check(Kind.ERRORS_LOG, text, LOG)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN404", 0), ("BTN404", 1)]
    assert "unknown status `resolved`" in found[0].message
    assert "ERROR, FIX_PLANNED, RESOLVED" in found[0].message
    fixed = apply(text, found[0].fix)
    assert json.loads(fixed.split("\n")[0])["status"] == "RESOLVED"
    assert found[1].fix is not None and "FIX_PLANNED" in found[1].message


# -- state files ------------------------------------------------------------------------


def test_clean_state_file() -> None:
    text = ('export CLAUDE_PROJECT_DIR="/home/u/.config"\nexport WORKFLOW_ID="t_1"\n'
            'export REPORT_PATHS_JSON="[\\"/a.md\\", \\"/b.md\\"]"\n'
            "WORK_REMAINING='[1, 2]'\nexport PHASE_STATUS_JSON='{\"1\": \"done\"}'\n"
            'export CURRENT_STATE="plan"\n')
    assert check(Kind.STATE, text, STATE) == []


def test_unclosed_quote_is_reported() -> None:
    text = 'export WORKFLOW_ID="t_1"\nexport X="y"\nexport PLAN_PATH="/a/b.md\n'
    found = check(Kind.STATE, text, STATE)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN405", 2)]
    assert "PLAN_PATH" in found[0].message and "never closed" in found[0].message


def test_unclosed_quote_swallowing_the_next_line_is_reported() -> None:
    # bash reads `"/a/b.md<newline>export X="` as the value, then trips over `y"`.
    text = 'export WORKFLOW_ID="t_1"\nexport PLAN_PATH="/a/b.md\nexport X="y"\n'
    found = check(Kind.STATE, text, STATE)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN405", 1)]
    assert "PLAN_PATH" in found[0].message


def test_unescaped_inner_quotes_are_reported() -> None:
    text = 'export WORKFLOW_ID="t_1"\nexport MSG="say "hi" now"x"\n'
    found = check(Kind.STATE, text, STATE)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN405", 1)]
    assert "MSG" in found[0].message


def test_json_value_under_plain_key() -> None:
    text = ('export WORKFLOW_ID="t_1"\nexport REPORT_PATHS="[\\"/a.md\\"]"\n'
            "export TOPICS='{\"a\": 1}'\nexport NOTE=\"[draft] notes\"\n")
    found = check(Kind.STATE, text, STATE)
    assert [(f.code, f.range.start_line) for f in found] == [("BTN406", 1), ("BTN406", 2)]
    assert "`REPORT_PATHS` holds a JSON value" in found[0].message
    assert "_JSON" in found[0].message


# -- the real corpus --------------------------------------------------------------------


def test_corpus_data_files(corpus: Path) -> None:
    logs = [corpus / ".claude/tests/logs/test-errors.jsonl",
            corpus / "other/benbrastmckie__ProofChecker/.claude/data/logs/errors.jsonl"]
    for path in logs:
        text = path.read_text(encoding="utf-8")
        # Both real logs are well-formed v2 records with known types and statuses.
        assert check(Kind.ERRORS_LOG, text, str(path)) == [], path
    results: dict[str, list[tuple[str, int]]] = {}
    for path in sorted(corpus.rglob(".claude/tmp/*.sh")):
        findings = check(Kind.STATE, path.read_text(encoding="utf-8"), str(path))
        assert not [f for f in findings if f.code == "BTN000"], path
        results[path.name] = [(f.code, f.range.start_line) for f in findings]
    # The multi-line REPORT_PATHS_JSON="[ "..." ]" value (line 27) has unescaped quotes;
    # its key may hold JSON, so only the quoting is reported.
    assert results["workflow_coordinate_1762902471.sh"] == [("BTN405", 26)]
    assert results["workflow_4167160.sh"] == []
    assert results["workflow_coordinate_docs_refactor.sh"] == []


def test_single_line_json_with_unescaped_inner_quotes_is_flagged() -> None:
    from baton_lsp.model.base import Kind as _Kind
    from baton_lsp.rules.engine import check_text as _check

    bad = 'export A="1"\nexport REPORT_PATHS_JSON="["/p/a.md","/p/b.md"]"\n'
    found = [f for f in _check(_Kind.STATE, bad, "/ws/.claude/tmp/workflow_x.sh")
             if f.code == "BTN405"]
    assert len(found) == 1 and found[0].range.start_line == 1
    good = 'export REPORT_PATHS_JSON="[\\"/p/a.md\\"]"\nexport B="x" # note "quoted"\n'
    assert [f for f in _check(_Kind.STATE, good, "/ws/.claude/tmp/workflow_x.sh")
            if f.code == "BTN405"] == []


# -- BTN407: state values that run a command when sourced ---------------------------------------


def state_findings(text: str) -> list[Finding]:
    return [f for f in check_text(Kind.STATE, text, STATE) if f.code == "BTN407"]


def test_backticks_in_a_double_quoted_value_run_when_sourced() -> None:
    text = ('export WORKFLOW_ID="plan_1"\n'
            'export WORKFLOW_DESCRIPTION="fix `load_state` and $(whoami) in\n'
            'the `x` parser"\n')
    (f,) = state_findings(text)
    assert (f.range.start_line, f.range.start_char, f.range.end_char) == (1, 33, 34)
    assert "WORKFLOW_DESCRIPTION" in f.message and "(and 4 more)" in f.message
    assert f.fix is not None and f.fix.safe
    fixed = apply(text, f.fix)
    assert "\\`load_state\\` and \\$(whoami) in\nthe \\`x\\` parser" in fixed
    assert state_findings(fixed) == []


@pytest.mark.parametrize("line", [
    "export STARTED='$(date)'",                       # single quotes keep it literal
    'export CMD="run \\`x\\` \\$(y)"',                 # escaped
    'export N="$((1 + 2))"',                          # arithmetic, no command
    'export STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_1.sh"',
])
def test_literal_or_harmless_values(line: str) -> None:
    assert state_findings(line + "\n") == []


def test_unquoted_value_with_command_substitution() -> None:
    (f,) = state_findings("export NOW=$(date)\n")
    assert f.range.start_char == 11


def test_state_rules_follow_the_workflow_bash_convention() -> None:
    from baton_lsp.model.base import Convention

    for code in ("BTN405", "BTN406", "BTN407"):
        assert get_rule(code).convention is Convention.WORKFLOW_BASH  # type: ignore[union-attr]
    for code in ("BTN400", "BTN401", "BTN402", "BTN403", "BTN404"):
        assert get_rule(code).convention is Convention.BATON  # type: ignore[union-attr]


def test_a_record_written_across_lines_is_one_finding() -> None:
    # miles990/multi-agent-workflow: a hook wrote `jq -n` output (pretty-printed) to a log.
    pretty = '{\n  "timestamp": "2025-11-20T10:00:00Z",\n  "error_type": "x",\n  "n": 1\n}'
    text = log(record(), pretty, pretty, record())
    found = check(Kind.ERRORS_LOG, text, LOG)
    [one] = [f for f in found if f.code == "BTN401"]
    assert (one.range.start_line, one.range.end_line) == (1, 10)
    assert "lines 2-11 (10 lines)" in one.message and "across lines" in one.message

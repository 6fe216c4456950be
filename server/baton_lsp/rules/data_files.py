"""BTN4xx: data files (state files, errors.jsonl) and input that cannot be read at all.

State files belong to the seeds' bash-block orchestration (workflow-bash); errors.jsonl and
unreadable input are Baton's own concern (baton)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ..lazy_pattern import LazyPattern
from ..model.base import Convention, Finding, Kind, Range, Severity
from ..model.data import ERROR_TYPES, BadLine, ErrorsLog, LoggedError, StateFile, Unreadable
from .base import RuleContext, closest, rule

ALL_KINDS = tuple(Kind)
BATON = Convention.BATON
WORKFLOW = Convention.WORKFLOW_BASH


@rule("BTN400", "unreadable-file", Severity.ERROR, ALL_KINDS,
      convention=BATON)
def unreadable_file(doc: Unreadable, ctx: RuleContext) -> Iterator[Finding]:
    """File cannot be read as text (binary, invalid UTF-8, too large) or is not read at all.

    Baton reads workspace files as UTF-8 text. A file that contains NUL bytes, is not valid
    UTF-8 or exceeds `max-file-size` is reported once here instead of being parsed, so a
    stray binary or a runaway log never slows down or crashes checking. So is a FIFO or
    device (opening it would wait for a writer) and a symbolic link leaving the workspace:
    its target is not read, so nothing of a file elsewhere on the machine (a CI runner's)
    reaches a report.

    Fix: re-save the file as UTF-8, move binaries out of `.claude/`, or exclude the path with
    `exclude = ["..."]` in `[tool.baton]`.

    Reported:

        ==> .claude/commands/logo.md <==
        PNG\x00\x00\x00IHDR

    Not reported:

        ==> .claude/commands/logo.md <==
        ---
        description: Show the logo
        ---
        Print `docs/logo.txt`.
    """
    if isinstance(doc, Unreadable):
        yield ctx.finding(Range.of_line(0), f"{doc.reason}")


# -- errors.jsonl ---------------------------------------------------------------------

ERRORS_LOG = (Kind.ERRORS_LOG,)
STATE = (Kind.STATE,)

REQUIRED_ERROR_FIELDS = ("timestamp", "error_type", "error_message")
KNOWN_STATUSES = ("ERROR", "FIX_PLANNED", "RESOLVED")
JSON_STATE_KEYS = frozenset({
    "WORK_REMAINING", "ERROR_FILTERS", "COMPLETED_STATES_JSON", "REPORT_PATHS_JSON",
    "RESEARCH_TOPICS_JSON", "PHASE_DEPENDENCIES_JSON",
})


def _string_field_range(ctx: RuleContext, line: int, key: str) -> Range | None:
    """Range of the JSON string value of `key` on `line` (inside the quotes), if found."""
    text = ctx.lines[line] if 0 <= line < len(ctx.lines) else ""
    m = re.search(rf'"{re.escape(key)}"\s*:\s*"((?:[^"\\]|\\.)*)"', text)
    return Range.of_line(line, m.start(1), m.end(1)) if m else None


_FRAGMENT_RE = LazyPattern(r'^\s*(?:[{}\[\]],?|"[^"]+"\s*:.*)$')
"""A line of pretty-printed JSON: a lone brace or bracket, or an indented `"key": value`."""


def _pretty_printed(run: list[BadLine], lines: list[str]) -> bool:
    """Consecutive broken lines that are one record written across lines (`jq` without
    `-c`), not separate broken records: at least two of them look like JSON fragments."""
    return sum(1 for b in run if b.line < len(lines) and _FRAGMENT_RE.match(lines[b.line])) >= 2


@rule("BTN401", "errors-log-malformed-line", Severity.ERROR, ERRORS_LOG,
      convention=BATON)
def errors_log_malformed(doc: ErrorsLog, ctx: RuleContext) -> Iterator[Finding]:
    """A line of `errors.jsonl` is not one JSON object.

    The error log is JSON Lines: every non-empty line is a complete JSON object written by
    `log_command_error`. Tools that read it (`/errors`, `/repair`, `jq`) stop at or skip a
    broken line, so the errors recorded there are lost. Broken lines usually come from two
    writers interleaving, a crash mid-write, or a hand edit that split a record.

    Broken lines in a row that look like pretty-printed JSON (lone braces, `"key": value`
    lines) are one record written across lines (`jq` without `-c`) and are reported once.

    Fix: repair or remove the line; each record must stay on a single line.

    Reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error", "error_message": "no state"}
        {"timestamp": "2025-11-12T09:15Z", "error_type": "agent_error",
        "error_message": "gone"}

    Not reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error", "error_message": "no state"}

        {"timestamp": "2025-11-12T09:14Z", "error_type": "agent_error", "error_message": "gone"}
    """
    runs: list[list[BadLine]] = []
    for bad in doc.bad_lines:  # a pretty-printed record is one defect, not one per line
        if runs and bad.line == runs[-1][-1].line + 1:
            runs[-1].append(bad)
        else:
            runs.append([bad])
    for run in runs:
        bad = run[0]
        if _pretty_printed(run, ctx.lines):
            last = run[-1]
            yield ctx.finding(
                Range.span(bad.range.start_line, bad.range.start_char, last.range.end_line,
                           last.range.end_char),
                f"errors log lines {bad.line + 1}-{last.line + 1} ({len(run)} lines) are not "
                f"JSON objects (line {bad.line + 1}: {bad.message}): a record written across "
                "lines or an interrupted write; expected one JSON object per line")
            continue
        for bad in run:
            if bad.message.startswith("expected"):
                message = (f"errors log line {bad.line + 1}: {bad.message} "
                           "(one record per line)")
            else:
                message = (f"errors log line {bad.line + 1} is {bad.message}: expected one "
                           "JSON object per line")
            yield ctx.finding(bad.range, message)


@rule("BTN402", "errors-log-missing-field", Severity.WARNING, ERRORS_LOG,
      convention=BATON)
def errors_log_missing_field(doc: ErrorsLog, ctx: RuleContext) -> Iterator[Finding]:
    """An `errors.jsonl` record lacks `timestamp`, `error_type` or `error_message`.

    Every reader of the log sorts by `timestamp`, filters by `error_type` and shows
    `error_message`; a record without them cannot be listed, filtered or repaired by
    `/errors` and `/repair`. Both record shapes (with and without `status`) carry these.

    Fix: add the missing fields (`timestamp` is UTC ISO-8601 ending in `Z`).

    Reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error"}

    Not reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error", "error_message": "no state"}
    """
    for entry in doc.records:
        missing = [f for f in REQUIRED_ERROR_FIELDS
                   if not (getattr(entry.record, f) or "").strip()]
        if missing:
            names = ", ".join(f"`{f}`" for f in missing)
            yield ctx.finding(entry.range,
                              f"error record on line {entry.line + 1} has no {names}: expected "
                              f"{', '.join(REQUIRED_ERROR_FIELDS)} in every record")


@rule("BTN403", "errors-log-unknown-error-type", Severity.WARNING, ERRORS_LOG, fixable=True,
      convention=BATON)
def errors_log_unknown_type(doc: ErrorsLog, ctx: RuleContext) -> Iterator[Finding]:
    """An `errors.jsonl` record has an `error_type` the error library does not define.

    `/errors --type X` and the repair tooling group records by `error_type`; the library
    defines state_error, validation_error, agent_error, parse_error, file_error,
    timeout_error, execution_error and dependency_error, the classifier types transient,
    permanent and fatal, and `llm_*` types. Any other value is a typo or a writer that
    bypassed the library, and its records fall out of every filter.

    Fix: use one of the known types (the quick fix offers the nearest).

    Reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "stat_error", "error_message": "no state"}

    Not reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "llm_timeout", "error_message": "no state"}
    """
    for entry in doc.records:
        value = entry.record.error_type
        if value and value not in ERROR_TYPES and not value.startswith("llm_"):
            yield _unknown_value(ctx, entry, "error_type", value, ERROR_TYPES,
                                 f"one of {', '.join(ERROR_TYPES)} or `llm_*`")


@rule("BTN404", "errors-log-unknown-status", Severity.WARNING, ERRORS_LOG, fixable=True,
      convention=BATON)
def errors_log_unknown_status(doc: ErrorsLog, ctx: RuleContext) -> Iterator[Finding]:
    """An `errors.jsonl` record has a `status` other than ERROR, FIX_PLANNED or RESOLVED.

    Later records track their lifecycle in `status`: `ERROR` when logged, `FIX_PLANNED` once
    `/repair` wrote a plan, `RESOLVED` when fixed. The tooling compares these exact
    upper-case strings, so `resolved` or `FIXED` leaves the error looking open forever.
    Records without `status` (the older shape) are fine.

    Fix: use one of the three values (the quick fix offers the nearest).

    Reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error", "status": "resolved"}

    Not reported:

        ==> .claude/data/logs/errors.jsonl <==
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error", "error_message": "no state"}
        {"timestamp": "2025-11-12T09:14Z", "error_type": "state_error", "status": "FIX_PLANNED"}
    """
    for entry in doc.records:
        value = entry.record.status
        if value is not None and value not in KNOWN_STATUSES:
            yield _unknown_value(ctx, entry, "status", value, KNOWN_STATUSES,
                                 ", ".join(KNOWN_STATUSES))


def _unknown_value(ctx: RuleContext, entry: LoggedError, key: str, value: str,
                   known: Sequence[str], expected: str) -> Finding:
    """A finding on a record's string field, with the nearest known value as the fix."""
    rng = _string_field_range(ctx, entry.line, key) or entry.range
    suggestion = closest(value, known)
    fix = ctx.fix(f"Change to `{suggestion}`", ctx.edit(rng, suggestion)) \
        if suggestion and rng is not entry.range else None
    hint = f"; did you mean `{suggestion}`?" if suggestion else ""
    return ctx.finding(rng, f"unknown {key} `{value}` on line {entry.line + 1}: expected "
                            f"{expected}{hint}", fix=fix)


# -- workflow state files -------------------------------------------------------------


@rule("BTN405", "state-unbalanced-quote", Severity.WARNING, STATE,
      convention=WORKFLOW)
def state_unbalanced_quote(doc: StateFile, ctx: RuleContext) -> Iterator[Finding]:
    """A workflow state file has a value with unbalanced or unescaped quotes.

    State files are `source`d by every bash block of a workflow. An opening quote that is
    never closed swallows the rest of the file, and unescaped inner double quotes (as in a
    multi-line `REPORT_PATHS_JSON="[ "a", "b" ]"` written by an older code path) split the
    value, so later blocks see a truncated value or a syntax error and the workflow fails
    far from the write that caused it.

    Fix: write values through `append_workflow_state`, which escapes backslashes and double
    quotes, or escape the inner quotes (`\\"`) by hand.

    Reported:

        ==> .claude/tmp/workflow_coordinate_1762902471.sh <==
        export WORKFLOW_ID="coordinate_1762902471"
        export REPORT_PATHS_JSON="[
          "/specs/672_auth/reports/001_patterns.md"
        ]"

    Not reported:

        ==> .claude/tmp/workflow_coordinate_1762902471.sh <==
        export WORKFLOW_ID="coordinate_1762902471"
        export REPORT_PATHS_JSON="[
          \\"/specs/672_auth/reports/001_patterns.md\\"
        ]"
    """
    for problem in doc.problems:
        yield ctx.finding(problem.range, f"{problem.message}: expected every value to be one "
                                         "quoted string with inner quotes escaped")


def _looks_json(value: str) -> bool:
    text = value.strip()
    return len(text) >= 2 and ((text[0] == "[" and text[-1] == "]")
                               or (text[0] == "{" and text[-1] == "}"))


@rule("BTN406", "state-json-value", Severity.WARNING, STATE,
      convention=WORKFLOW)
def state_json_value(doc: StateFile, ctx: RuleContext) -> Iterator[Finding]:
    """A state file stores a JSON-looking value under a key not meant to hold JSON.

    `append_workflow_state` refuses JSON values unless the key ends in `_JSON` or is one of
    WORK_REMAINING, ERROR_FILTERS, COMPLETED_STATES_JSON, REPORT_PATHS_JSON,
    RESEARCH_TOPICS_JSON, PHASE_DEPENDENCIES_JSON: readers of other keys expect a plain
    string, and JSON stored there was written around the library (with its quoting
    problems) or by mistake.

    Fix: store the value under a `*_JSON` key, or store a plain string.

    Reported:

        ==> .claude/tmp/workflow_coordinate_1762902471.sh <==
        export WORKFLOW_ID="coordinate_1762902471"
        export REPORT_PATHS="[\\"/specs/672_auth/reports/001_patterns.md\\"]"

    Not reported:

        ==> .claude/tmp/workflow_coordinate_1762902471.sh <==
        export WORKFLOW_ID="coordinate_1762902471"
        export REPORT_PATHS_JSON="[\\"/specs/672_auth/reports/001_patterns.md\\"]"
        export WORK_REMAINING="[2, 3]"
    """
    for entry in doc.entries:
        if entry.key.endswith("_JSON") or entry.key in JSON_STATE_KEYS:
            continue
        if _looks_json(entry.value):
            yield ctx.finding(
                entry.value_range,
                f"`{entry.key}` holds a JSON value: expected JSON only under keys ending in "
                f"`_JSON`, WORK_REMAINING or ERROR_FILTERS, found `{entry.value.strip()[:60]}`")


def _command_substitutions(ctx: RuleContext, rng: Range) -> list[tuple[int, int, str]]:
    """(line, column, text) of each unescaped `$(` or backtick in a double-quoted or unquoted
    value: bash runs those when the state file is sourced. Single quotes keep them literal."""
    first = ctx.lines[rng.start_line] if rng.start_line < len(ctx.lines) else ""
    quote = first[rng.start_char:rng.start_char + 1]
    if quote == "'":
        return []
    hits: list[tuple[int, int, str]] = []
    for no in range(rng.start_line, min(rng.end_line, len(ctx.lines) - 1) + 1):
        text = ctx.lines[no]
        start = rng.start_char + (1 if quote == '"' else 0) if no == rng.start_line else 0
        end = rng.end_char if no == rng.end_line else len(text)
        i = start
        while i < end:
            ch = text[i]
            if ch == "\\":
                i += 2
                continue
            if ch == "`":
                hits.append((no, i, "`"))
            elif text.startswith("$(", i) and not text.startswith("$((", i):
                hits.append((no, i, "$("))
            i += 1
    return hits


@rule("BTN407", "state-value-runs-command", Severity.WARNING, STATE, fixable=True,
      convention=WORKFLOW)
def state_value_runs_command(doc: StateFile, ctx: RuleContext) -> Iterator[Finding]:
    """A state file value holds a backtick or `$(` inside double quotes: sourcing runs it.

    Every bash block of a workflow `source`s its state file. `append_workflow_state` writes
    `export KEY="value"` and escapes only backslashes and double quotes, so a stored value
    with `` `...` `` or `$(...)` - typically a workflow description or report title that
    quotes code in markdown backticks - is executed as a command by every later block,
    with whatever that text happens to name, and the value read back is its output.

    Fix: escape them (`\\``, `\\$(`; the quick fix does it for this value) and make the
    writer escape `$` and backticks too, or store free text in a file and keep its path in
    the state file.

    Reported:

        ==> .claude/tmp/workflow_plan_1762902471.sh <==
        export WORKFLOW_ID="plan_1762902471"
        export WORKFLOW_DESCRIPTION="fix the `load_state` race in /implement"

    Not reported:

        ==> .claude/tmp/workflow_plan_1762902471.sh <==
        export WORKFLOW_ID="plan_1762902471"
        export WORKFLOW_DESCRIPTION="fix the \\`load_state\\` race in /implement"
        export STARTED='$(date)'
        export STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_plan_1762902471.sh"
    """
    for entry in doc.entries:
        hits = _command_substitutions(ctx, entry.value_range)
        if not hits:
            continue
        no, col, what = hits[0]
        fix = ctx.fix(f"Escape the command substitution{'s' if len(hits) > 1 else ''} in "
                      f"{entry.key}",
                      *(ctx.edit(Range.of_line(n, c, c), "\\") for n, c, _ in hits))
        more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
        yield ctx.finding(
            Range.of_line(no, col, col + len(what)),
            f"`{entry.key}` holds an unescaped `{what}`{more}: sourcing the state file runs it "
            f"as a command; expected `\\{what}` (or the text stored outside the state file)",
            fix=fix)

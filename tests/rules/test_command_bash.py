"""BTN320-BTN325: bash-block pitfalls of command files, plus a run over the real corpus."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from baton_lsp.model.base import Finding, Kind, Severity
from baton_lsp.model.config import BatonConfig
from baton_lsp.rules.base import get_rule
from baton_lsp.rules.command_bash import (
    CODE,
    COMMENT,
    DQ,
    HEREDOC,
    HEREDOC_QUOTED,
    SQ,
    history_bangs,
    lex_bash,
)
from baton_lsp.rules.engine import check_file, check_text
from baton_lsp.workspace.index import WorkspaceIndex
from tests.helpers import apply_fix as apply

CMD = "/ws/.claude/commands/deploy.md"
CODES = {"BTN320", "BTN321", "BTN322", "BTN323", "BTN324", "BTN325"}
HEAD = "---\ndescription: d\n---\n\n# /deploy\n\n"  # 6 lines: the body starts on line 6


WORKFLOW_ON = BatonConfig(conventions={"workflow-bash": "on"})
"""The rule logic is tested on small blocks that need not load the state library."""


def check(text: str, config: BatonConfig | None = None) -> list[Finding]:
    return [f for f in check_text(Kind.COMMAND, text, CMD, config=config or WORKFLOW_ON)
            if f.code in CODES | {"BTN000"}]


def codes(findings: list[Finding]) -> list[tuple[str, int]]:
    return [(f.code, f.range.start_line) for f in findings]


def blocks(*bodies: str) -> str:
    """HEAD plus one ```bash block per body, separated by a prose line."""
    return HEAD + "Next:\n\n".join(f"```bash\n{b}\n```\n\n" for b in bodies)


def line_of(text: str, needle: str, nth: int = 0) -> int:
    hits = [i for i, line in enumerate(text.split("\n")) if needle in line]
    return hits[nth]




def test_rules_are_registered() -> None:
    for code in sorted(CODES):
        r = get_rule(code)
        assert r is not None, code
        assert r.kinds == frozenset({Kind.COMMAND}) and "\n\n" in r.doc
    assert get_rule("BTN325").severity is Severity.ERROR  # type: ignore[union-attr]
    assert get_rule("BTN321").fixable and get_rule("BTN323").fixable  # type: ignore[union-attr]


# -- the lexer ------------------------------------------------------------------------------


def test_lexer_classes() -> None:
    lines = lex_bash("a='x' \"y\" # c\ncat <<'EOF'\n$X\nEOF\ncat <<EOF\n$Y\nEOF\necho $((1<<2))")
    assert lines[0].classes == CODE * 2 + SQ * 3 + CODE + DQ * 3 + CODE + COMMENT * 3
    assert lines[2].classes == HEREDOC_QUOTED * 2
    assert lines[5].classes == HEREDOC * 2
    assert set(lines[7].classes) == {CODE}  # `1<<2` is a shift, not a here-document


def test_lexer_nesting_and_multiline_quotes() -> None:
    lines = lex_bash("x=\"$(echo 'a')\"\ny='one\ntwo'\nz=1")
    text, classes = lines[0].text, lines[0].classes
    assert classes[text.index("'a'")] == SQ
    assert lines[2].classes == SQ * 4
    assert lines[3].classes == CODE * 3


# -- BTN321: history expansion -------------------------------------------------------------

# (line, does bash's history expansion rewrite it?) - verified against bash 5.2 below.
HISTORY_CASES = [
    ('echo "a!b"', True),
    ('echo "bang!!"', True),
    ("echo hi!there", True),
    ('echo "a !b"', True),
    ('echo "$(echo "a!b")"', True),
    ('echo "${x:-a!b}"', True),
    ("echo a#!b", True),
    ('echo "a"!b', True),
    ("echo ${x//!/y}", True),
    ('test "$x" = "!b"', True),
    ("v=!x", True),
    ("echo '$x'\"!b\"", True),
    ('echo "!$"', True),
    ('echo "y!/z"', True),
    ("echo \"it's !x\"", True),
    ("[ ! -f x ]", False),
    ("if ! true; then :; fi", False),
    ('[ "$a" != "$b" ]', False),
    ('echo "done!"', False),
    ("echo 'a!b'", False),
    ("# comment!x", False),
    ("x=1 # a!b", False),
    ("echo $!", False),
    ('echo "${!var}"', False),
    ("echo ${!x}", False),
    ("case x in [!a]*) ;; esac", False),
    ('echo "x\\!y"', False),
    ("echo x!", False),
    ("echo !(foo)", False),
    ("echo \"$(echo 'a!b')\"", False),
    ("echo `echo 'a!b'`", False),
    ("echo \"`echo 'a!b'`\"", False),
    ('echo "x" # "a!b', False),
    ("echo $((1 != 2))", False),
    ('echo "!"', False),
    ("awk '!seen[$0]++'", False),
    ('echo "a!"b', False),
]


@pytest.mark.parametrize(("line", "expands"), HISTORY_CASES)
def test_history_bangs(line: str, expands: bool) -> None:
    assert bool(history_bangs(lex_bash(line)[0])) is expands


@pytest.mark.skipif(shutil.which("bash") is None, reason="bash not available")
def test_history_cases_match_real_bash() -> None:
    """The table above is what bash itself does (`history -p` applies history expansion)."""
    script = 'shopt -s extglob; set -o history -H; history -p "$1"'
    wrong = []
    for line, expands in HISTORY_CASES:
        proc = subprocess.run(["bash", "--norc", "-c", script, "_", line],
                              capture_output=True, text=True, timeout=10, check=False)
        really = not (proc.returncode == 0 and proc.stdout.rstrip("\n") == line)
        if really is not expands:
            wrong.append(line)
    assert wrong == []


def test_history_expansion_finding_and_fix() -> None:
    text = blocks('echo "Failed!retry"\necho "again!x"', 'set +H\necho "fine!x"')
    found = check(text)
    assert codes(found) == [("BTN321", 7)]
    f = found[0]
    assert (f.range.start_char, f.range.end_char) == (12, 18)
    assert "`!retry`" in f.message and "bash block 1" in f.message
    assert "(and 1 more in this block)" in f.message
    assert [r.range.start_line for r in f.related] == [8]
    fixed = apply(text, f.fix)  # type: ignore[arg-type]
    assert fixed.split("\n")[7] == "set +H  # disable history expansion"
    assert check(fixed) == []


def test_history_expansion_after_set_plus_h_is_fine_but_before_is_not() -> None:
    text = blocks('echo "early!x"\nset +H\necho "late!x"')
    assert codes(check(text)) == [("BTN321", 7)]
    assert check(blocks("set -e +H\necho \"a!b\"")) == []
    assert check(blocks("set +o histexpand\necho \"a!b\"")) == []
    # `set +H` written in a comment or a string does not count.
    assert codes(check(blocks('# set +H\necho "a!b"'))) == [("BTN321", 8)]


def test_history_fix_goes_after_shebang_and_keeps_fence_indent() -> None:
    text = HEAD + '1. Step\n\n   ```bash\n   #!/usr/bin/env bash\n   echo "a!b"\n   ```\n'
    found = check(text)
    assert codes(found) == [("BTN321", 10)]
    assert found[0].range.start_char == 10
    fixed = apply(text, found[0].fix)  # type: ignore[arg-type]
    assert fixed.split("\n")[9:12] == [
        "   #!/usr/bin/env bash", "   set +H  # disable history expansion", '   echo "a!b"']
    assert check(fixed) == []


def test_common_bangs_are_not_flagged() -> None:
    body = ('#!/bin/bash\nif [ ! -f "$F" ]; then echo "missing!"; fi\n'
            'if ! command -v jq; then exit 1; fi\n[ "$A" != "$B" ] && echo ${!REF}\n'
            "sleep 1 & echo $!\ncat <<EOF\nHello!world\nEOF\n")
    assert check(blocks(body)) == []


# -- BTN320: $$ across blocks --------------------------------------------------------------


def test_pid_value_used_in_later_block() -> None:
    text = blocks(
        'WORKFLOW_ID="wf_$$"\n'
        'STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/wf_${WORKFLOW_ID}.sh"\n'
        'echo "x" > "$STATE_FILE"',
        'source "$STATE_FILE"\necho "$WORKFLOW_ID"',
    )
    found = check(text)
    # STATE_FILE (derived from WORKFLOW_ID) is used in block 2 before anything restores it;
    # WORKFLOW_ID is only used after `source`, which may restore it.
    assert codes(found) == [("BTN320", 8)]
    f = found[0]
    assert (f.range.start_char, f.range.end_char) == (0, 10)
    assert "`STATE_FILE`" in f.message and "block 2" in f.message
    assert f"line {line_of(text, 'source')+1}" in f.message
    assert [(r.range.start_line, r.range.start_char) for r in f.related] == [
        (line_of(text, "source"), 8)]


def test_pid_values_of_two_equal_blocks_are_reported_apart() -> None:
    """Equal blocks share their analysis (BTN318 and BTN320 read it once per content), so
    the same assignment object stands for both: each is still reported on its own block."""
    text = blocks('WORKFLOW_ID="wf_$$"', 'echo "$WORKFLOW_ID"', 'WORKFLOW_ID="wf_$$"',
                  'echo "$WORKFLOW_ID" >&2')
    found = check(text)
    assert codes(found) == [("BTN320", 7), ("BTN320", line_of(text, "WORKFLOW_ID=", 1))]
    assert [[r.range.start_line for r in f.related] for f in found] == [
        [line_of(text, 'echo "$WORKFLOW_ID"')], [line_of(text, "echo", 1)]]


def test_a_block_is_analysed_once_for_both_rules() -> None:
    from baton_lsp.rules.command_bash import _vars_of

    # Both blocks export, so both rules read both (BTN318 skips a block it cannot use).
    text = blocks('RUN_ID="r_$$"\nexport RUN_ID', 'echo "$RUN_ID" once\nexport RUN_MODE=fast')
    before = _vars_of.cache_info()
    check_text(Kind.COMMAND, text, CMD, config=WORKFLOW_ON)
    after = _vars_of.cache_info()
    assert after.misses - before.misses == 2 and after.hits - before.hits >= 2


def test_blocks_that_cannot_matter_are_neither_classified_nor_analysed() -> None:
    """BTN315, BTN317, BTN318 and BTN320 classify or analyse a block only where it can hold
    what they report: a literal `.claude/` path, `$$`, `export`, or (for the two that follow
    a variable) a block after one that exported it (and naming it) or built it from `$$`.
    Classifying every block of every command cost a cold corpus check a few milliseconds
    for nothing."""
    from baton_lsp.parse.shell import classify
    from baton_lsp.rules.command_bash import _vars_of

    config = BatonConfig(conventions={"workflow-bash": "on"}, shellcheck="off")
    quiet = blocks('echo "nothing to see in 4f1c"', 'ls -la /srv/4f1c\nwc -l notes.txt')
    before, vars_before = classify.cache_info(), _vars_of.cache_info()
    assert check_text(Kind.COMMAND, quiet, CMD, config=config) == []
    assert classify.cache_info().misses == before.misses
    assert _vars_of.cache_info().misses == vars_before.misses

    text = blocks('export BUILD_9e2a="out/9e2a"', 'echo "no state 9e2a"', 'ls "$BUILD_9e2a"')
    found = [f for f in check_text(Kind.COMMAND, text, CMD, config=config)
             if f.code == "BTN318"]
    assert codes(found) == [("BTN318", line_of(text, 'ls "$BUILD_9e2a"'))]
    # the exporting block and the one using it; the block between names no exported variable
    assert classify.cache_info().misses == before.misses + 2
    assert _vars_of.cache_info().misses == vars_before.misses + 2


def test_an_export_of_the_users_own_environment_is_not_followed() -> None:
    """BTN318 leaves `PATH`, `HOME`, `CLAUDE_*` and the like alone (the Bash tool's shell
    has them anyway), so a block whose only exports are those changes nothing for it: it
    is neither classified nor analysed, and the rule's findings are as before."""
    from baton_lsp.parse.shell import classify
    from baton_lsp.rules.command_bash import _vars_of

    config = BatonConfig(shellcheck="off")
    text = blocks('export CLAUDE_PROJECT_DIR="${CLAUDE_PROJECT_DIR:-$(pwd)}"\n'
                  'export PATH="$PATH:/opt/61d2/bin"', 'echo "$PATH 61d2"')
    before, vars_before = classify.cache_info(), _vars_of.cache_info()
    assert [f for f in check_text(Kind.COMMAND, text, CMD, config=config)
            if f.code == "BTN318"] == []
    assert classify.cache_info().misses == before.misses
    assert _vars_of.cache_info().misses == vars_before.misses


def test_library_rules_read_only_the_lines_that_can_matter() -> None:
    """BTN328 reads the words of a line for the 25 library functions only on a line that
    names one, and its function-definition pattern only on a line with `(` or `function`;
    BTN329 reads an assigned value only when a `source` path names the variable
    (`$LIB/x.sh`), not for every assignment (`MODE` here is used, but in no path).
    Watched with `sys.setprofile` (calls and C calls); the findings are the usual ones."""
    import sys
    from typing import Any

    from baton_lsp.rules import command_bash

    text = blocks('MODE_4b7d=fast\nLIB_4b7d=".claude/lib"\nload_workflow_state "$ID"\n'
                  'source "$LIB_4b7d/state-persistence.sh"\necho "$MODE_4b7d done"')
    seen: dict[str, int] = {"call": 0, "def": 0, "value": 0}
    reset = {f.__code__ for f in (command_bash.variable_reset_by_source,
                                  getattr(command_bash, "_literal", None)) if f is not None}

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "c_call" and getattr(arg, "__self__", None) is command_bash._WORD_RE:
            seen["call"] += 1
        elif event == "c_call" and getattr(arg, "__self__", None) is \
                command_bash._FUNC_DEF_RE:
            seen["def"] += 1
        elif event == "call" and frame.f_code is command_bash._value_end.__code__ \
                and frame.f_back is not None and frame.f_back.f_code in reset:
            seen["value"] += 1

    sys.setprofile(profile)
    try:
        found = check_text(Kind.COMMAND, text, CMD, config=BatonConfig(
            conventions={"workflow-bash": "on"}, shellcheck="off", select=["BTN328"]))
        check_text(Kind.COMMAND, text, CMD, config=BatonConfig(
            conventions={"workflow-bash": "on"}, shellcheck="off", select=["BTN329"]))
    finally:
        sys.setprofile(None)
    assert [f.code for f in found] == ["BTN328"]  # called before its library is sourced
    assert seen == {"call": 1, "def": 0, "value": 1}


def test_pid_library_source_does_not_restore() -> None:
    text = blocks(
        'WORKFLOW_ID="coordinate_$$"',
        'source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"\n'
        'load_workflow_state "$WORKFLOW_ID"',
        'echo "$WORKFLOW_ID"',
    )
    found = check(text)
    assert codes(found) == [("BTN320", 7)]
    assert [r.range.start_line for r in found[0].related] == [
        line_of(text, "load_workflow_state"), line_of(text, 'echo "$WORKFLOW_ID"')]


@pytest.mark.parametrize("later", [
    'WORKFLOW_ID=$(cat "${CLAUDE_PROJECT_DIR}/.claude/tmp/id.txt")\necho "$WORKFLOW_ID"',
    'read -r WORKFLOW_ID < "${CLAUDE_PROJECT_DIR}/.claude/tmp/id.txt"\necho "$WORKFLOW_ID"',
    '[ -z "$WORKFLOW_ID" ] && WORKFLOW_ID=$(cat id.txt)\necho "$WORKFLOW_ID"',
    'source "${CLAUDE_PROJECT_DIR}/.claude/tmp/state.sh"\necho "$WORKFLOW_ID"',
    "echo 'literal $WORKFLOW_ID in single quotes'",
    "echo done",
])
def test_pid_value_recomputed_or_unused(later: str) -> None:
    assert check(blocks('WORKFLOW_ID="wf_$$"\necho "$WORKFLOW_ID" > id.txt', later)) == []


@pytest.mark.parametrize("first", [
    "WORKFLOW_ID='wf_$$'",             # single quotes: no expansion
    'eval "WORKFLOW_ID=\\$$name"',     # `\$` then `$name`, not `$$`
    'WORKFLOW_ID="wf_$(date +%s)"',
    'echo "WORKFLOW_ID=$$"',           # an argument, not an assignment
])
def test_not_a_pid_assignment(first: str) -> None:
    assert check(blocks(first, 'echo "$WORKFLOW_ID"')) == []


# -- BTN322: EXIT traps ------------------------------------------------------------------


def test_exit_trap_deleting_state_before_a_later_block() -> None:
    text = blocks(
        'STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/s.sh"\n'
        "trap 'rm -f \"$STATE_FILE\"' EXIT",
        'source "$STATE_FILE"',
    )
    found = check(text)
    assert codes(found) == [("BTN322", 8)]
    assert found[0].range.start_char == 0
    assert "`$STATE_FILE`" in found[0].message and "block 2" in found[0].message


def test_exit_trap_via_function() -> None:
    text = blocks(
        'cleanup() {\n  rm -f "${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_x.sh"\n}\n'
        "trap cleanup EXIT INT",
        "echo next",
    )
    assert codes(check(text)) == [("BTN322", 10)]


@pytest.mark.parametrize("body", [
    "trap 'rm -f \"$STATE_FILE\"' ERR",        # not an EXIT trap
    "trap 'echo bye' EXIT",                    # deletes nothing
    'TMP=$(mktemp)\ntrap \'rm -f "$TMP"\' EXIT',  # block-local temp file, unused later
])
def test_exit_trap_negatives(body: str) -> None:
    assert check(blocks(body, "echo next")) == []


def test_exit_trap_in_last_block_is_fine() -> None:
    assert check(blocks("echo first", "trap 'rm -f \"$STATE_FILE\"' EXIT")) == []


# -- BTN323: state under $HOME ---------------------------------------------------------------


def test_home_state_path_with_fix() -> None:
    text = blocks('F="${HOME}/.claude/tmp/topic_${ID}.txt"\nD=$HOME/.claude/data/x\n'
                  "ls ~/.claude/tmp")
    found = check(text)
    assert codes(found) == [("BTN323", 7), ("BTN323", 8), ("BTN323", 9)]
    assert [(f.range.start_char, f.range.end_char) for f in found] == [(3, 10), (2, 7), (3, 4)]
    assert "`${HOME}/.claude/tmp`" in found[0].message
    assert [(f.code, f.range.start_line) for f in check(text, BatonConfig())] == []
    fixed = text
    for f in reversed(found):
        fixed = apply(fixed, f.fix)  # type: ignore[arg-type]
    assert 'F="${CLAUDE_PROJECT_DIR}/.claude/tmp/topic_${ID}.txt"' in fixed
    assert "D=${CLAUDE_PROJECT_DIR}/.claude/data/x" in fixed
    assert check(fixed) == []


@pytest.mark.parametrize("body", [
    "# state lives in ${HOME}/.claude/tmp",
    "echo '${HOME}/.claude/tmp'",
    'cat "${HOME}/.claude/settings.json"',
    'ls "$HOME/.claude/commands"',
    'echo "~/.claude/tmp"',
    'S="${CLAUDE_PROJECT_DIR}/.claude/tmp/s.sh"',
])
def test_home_state_path_negatives(body: str) -> None:
    assert check(blocks(body)) == []


# -- BTN324 / BTN325 --------------------------------------------------------------------


def test_block_too_long() -> None:
    config = BatonConfig(bash_block_max_lines=3)
    text = blocks("a=1\nb=2\nc=3", "a=1\nb=2\nc=3\nd=4")
    found = check(text, config)
    assert codes(found) == [("BTN324", 14)]
    assert "4 lines" in found[0].message and "at most 3" in found[0].message
    assert check(text) == []  # default limit: 400


def test_unclosed_fence() -> None:
    text = HEAD + "```bash\necho hi\n\n## Later heading\n"
    found = check(text)
    assert codes(found) == [("BTN325", 6)]
    assert found[0].severity is Severity.ERROR and "line 7" in found[0].message
    assert check(HEAD + "```bash\necho hi\n```\n") == []


# -- the real corpus -------------------------------------------------------------------------


def test_corpus_commands(corpus: Path) -> None:
    roots = [corpus, *sorted(p for p in (corpus / "other").glob("*") if p.is_dir())]
    results: dict[str, list[Finding]] = {}
    for root in roots:
        index = WorkspaceIndex(root)
        for path in sorted((root / ".claude" / "commands").glob("*.md")):
            results[path.relative_to(root).as_posix()] = check_file(index, path)
    assert len(results) >= 10
    internal = [(p, f.message) for p, fs in results.items() for f in fs if f.code == "BTN000"]
    assert internal == []

    errors = results[".claude/commands/errors.md"]
    home = [f for f in errors if f.code == "BTN323"]
    # errors.md keeps its temp state under ${HOME}/.claude/tmp (formats.md §3.3): written in
    # block 1 (line 273), recovered with `ls -t` in block 2, state file at line 453. One
    # finding per path, the other lines as related locations.
    assert len(home) == 1 and home[0].range.start_line + 1 == 273
    others = {r.range.start_line + 1 for r in home[0].related}
    assert {339, 453} <= others
    # Every executable block of errors.md starts with `set +H`; its `!` uses are all safe.
    assert not [f for f in errors if f.code == "BTN321"]
    # The topic-naming agent injected through ${CLAUDE_PROJECT_DIR} exists in the corpus.
    assert not [f for f in errors if f.code == "BTN313"]
    # migrate-specs.md and refresh.md have no front matter at all: fine for Claude Code
    # (BTN302 reports only an explicit empty description since d6bc174).
    for name in ("migrate-specs", "refresh"):
        assert not [f for f in results[f".claude/commands/{name}.md"] if f.code == "BTN302"]
    # coordinate.md injects plan-architect and revision-specialist, absent from this corpus.
    coord = results[".claude/commands/coordinate.md"]
    missing = sorted(f.message.split("`")[1].rsplit("/", 1)[1] for f in coord
                     if f.code == "BTN313")
    assert missing == ["plan-architect.md", "revision-specialist.md"]


# -- conventions, BTN326 / BTN327 ---------------------------------------------------------------


def test_workflow_rules_need_the_state_library() -> None:
    from baton_lsp.model.base import Convention

    for code, conv in [("BTN320", "WORKFLOW_BASH"), ("BTN321", "WORKFLOW_BASH"),
                       ("BTN322", "WORKFLOW_BASH"), ("BTN323", "WORKFLOW_BASH"),
                       ("BTN324", "CLAUDE_CODE"), ("BTN325", "CLAUDE_CODE"),
                       ("BTN326", "WORKFLOW_BASH"), ("BTN327", "WORKFLOW_BASH"),
                       ("BTN330", "SCRIPT_BLOCKS")]:
        assert get_rule(code).convention is Convention[conv], code  # type: ignore[union-attr]
    home = 'F="${HOME}/.claude/tmp/x.txt"'
    assert check(blocks(home), BatonConfig()) == []  # a plain command: not the seeds' state
    found = check(blocks(home + '\nappend_workflow_state "F" "$F"'), BatonConfig())
    assert codes(found) == [("BTN323", 7)]


def test_home_state_path_once_per_path_with_related_lines() -> None:
    text = blocks('A="${HOME}/.claude/tmp/a"\nB="${HOME}/.claude/tmp/b"',
                  'ls "${HOME}/.claude/tmp"\nD=$HOME/.claude/data/x')
    found = check(text)
    assert codes(found) == [("BTN323", 7), ("BTN323", 15)]
    first = found[0]
    assert "(and 2 more lines)" in first.message
    assert [r.range.start_line for r in first.related] == [8, 14]
    assert first.fix is not None and len(first.fix.edits) == 3
    fixed = apply(text, first.fix)
    assert fixed.count("${CLAUDE_PROJECT_DIR}/.claude/tmp") == 3
    assert codes(check(fixed)) == [("BTN323", 15)]


APPEND = "append_workflow_state"


def append_findings(text: str, code: str = "BTN326") -> list[Finding]:
    return [f for f in check_text(Kind.COMMAND, text, CMD, config=WORKFLOW_ON)
            if f.code == code]


@pytest.mark.parametrize(("call", "fixed"), [
    (f'{APPEND} "PHASE_0_DETECTED=true"', f'{APPEND} "PHASE_0_DETECTED" "true"'),
    (f'{APPEND} "J=$J"  # persist', f'{APPEND} "J" "$J"  # persist'),
    (f"{APPEND} 'K=v w'", f"{APPEND} 'K' 'v w'"),
    (f"{APPEND} K=$V", f'{APPEND} K "$V"'),
    (f"if x; then {APPEND} \"A=1\"; fi", f'if x; then {APPEND} "A" "1"; fi'),
])
def test_append_with_one_argument_and_fix(call: str, fixed: str) -> None:
    text = blocks(call)
    (f,) = append_findings(text)
    assert f.range.start_line == 7 and "one argument" in f.message
    assert f.fix is not None
    assert fixed in apply(text, f.fix)
    assert append_findings(apply(text, f.fix)) == []


def test_append_multiline_single_argument_has_no_fix() -> None:
    text = blocks(f'{APPEND} "META<<EOF\n$META\nEOF"')
    (f,) = append_findings(text)
    assert "META<<EOF ..." in f.message and f.fix is None
    assert append_findings(blocks(f"{APPEND}")) != []


@pytest.mark.parametrize("call", [
    f'{APPEND} "A" "1"',
    f'{APPEND} "JSON" "$(jq -c . f)"',
    f'{APPEND} "REPORTS" \\\n  "$X"',              # continued: not counted
    f'{APPEND} "TEXT" "line one\nline two"',        # second argument spans lines
    f'echo "{APPEND} X"',                           # quoted mention
    f'# {APPEND} "A=1"',
    f'type {APPEND}',
    f'command -v {APPEND} >/dev/null',
])
def test_append_negatives(call: str) -> None:
    assert append_findings(blocks(call)) == []


@pytest.mark.parametrize("body", [
    f"{APPEND} \"CLEANUP\" 'rm -rf $(dirname \"$F\")'",
    f'{APPEND} "WHEN" "\\$(date)"',
    f'{APPEND} "NOTE" "see \\`x\\`"',
    'echo "export WHEN=\\"\\$(date)\\"" >> "$STATE_FILE"',
    "echo 'export WHEN=\"`date`\"' >> \"${STATE_FILE}\"",
])
def test_state_value_runs_command(body: str) -> None:
    (f,) = append_findings(blocks(body), "BTN327")
    assert f.range.start_line == 7 and "runs it as a command" in f.message


@pytest.mark.parametrize("body", [
    f'{APPEND} "WHEN" "$(date)"',
    'echo "export WHEN=\\"$(date)\\"" >> "$STATE_FILE"',
    "echo 'price: $(x)' >> report.md",
    "sed -i 's/^export OLD=.*$//' \"$STATE_FILE\"",
])
def test_state_value_negatives(body: str) -> None:
    assert append_findings(blocks(body), "BTN327") == []

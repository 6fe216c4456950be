"""parse.shell.classify: a ```bash block is a script unless there is positive evidence that
bash could not run it as written (the gate in front of BTN330)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from baton_lsp.parse.shell import (
    FRAGMENT,
    PATH_LIST,
    PSEUDO_CODE,
    SCRIPT,
    TEMPLATE,
    TRANSCRIPT,
    BashLine,
    classify,
    cron_line,
    lexed,
)


@pytest.mark.parametrize("body", [
    'echo "Usage: /plan [OPTIONS] <feature> {topic}"',          # usage text is quoted
    "awk '{print $1}' file | sort",                             # braces in single quotes
    "cat > \"$F\" <<'EOF'\n## {title}\n<summary>\ndef f():\nEOF",  # template written by a heredoc
    'find . -name "*.md" -exec grep -l TODO {} \\;',            # {} of find
    "mkdir -p specs/{reports,plans}\necho {1..3}",              # brace expansion
    'case "$a" in\n  [Yy]*) echo yes ;;\nesac',                 # glob classes
    '[[ $x == [abc] ]] && echo ok',
    "if [ -f x ]; then\n  echo found\nelse\n  echo missing\nfi",
    "> \"$LOG\"\nrun >> \"$LOG\" 2>&1",                         # truncation, not a prompt
    "./.claude/tests/test-plan-command.sh",                     # one path: a script being run
    "# Input: \"auth patterns\"\n# Output:\nSUBTOPICS=(\n  \"jwt\"\n)",
    "set +H\nfor f in specs/*/plans/*.md; do\n  echo \"$f\"\ndone",
])
def test_scripts_stay_scripts(body: str) -> None:
    assert classify(body).kind == SCRIPT, classify(body).describe()


@pytest.mark.parametrize(("body", "kind", "line"), [
    ("# Pseudo-code\nfor phase in plan.phases:\n    run(phase)", PSEUDO_CODE, 0),
    ("set -e\nrun  # pseudocode below\nwait", PSEUDO_CODE, 1),
    ("# Example: how the orchestrator passes input\nTOPICS=(a b)", PSEUDO_CODE, 0),
    ("x=1\ndef select(reports):\n    return reports", PSEUDO_CODE, 1),
    ("if mode == 'revise':\n    plan = load()\nelse:\n    plan = new()", PSEUDO_CODE, 0),
    ("for i in 1 2; do\n  Task {\n    prompt: go\n  }\ndone", PSEUDO_CODE, 1),
    ("$ baton check .\nAll checks passed", TRANSCRIPT, 0),
    ("user@host:~/proj$ make\nok", TRANSCRIPT, 0),
    ("/migrate-specs [OPTIONS]", TEMPLATE, 0),
    ("# run it\n/refresh --dry-run", TEMPLATE, 1),
    ("mkdir -p specs/{NNN_topic}/reports", TEMPLATE, 0),
    ('bash -c "{test_command}"', TEMPLATE, 0),
    ("cat {{REPORT_PATH}}", TEMPLATE, 0),
    ("git revert <commit-hash>", TEMPLATE, 0),
    ("deploy [--dry-run] target", TEMPLATE, 0),
    ("step_one\n...\nstep_two", TEMPLATE, 1),
    ("src/*.py\ndocs/**/*.md", PATH_LIST, 0),
    (".claude/\n├── commands/\n└── agents/", PATH_LIST, 0),
])
def test_non_scripts(body: str, kind: str, line: int) -> None:
    got = classify(body)
    assert (got.kind, got.line) == (kind, line), got.describe()
    assert not got.is_script and got.describe().startswith(f"{kind}: ")


def test_empty() -> None:
    assert classify("\n  \n").kind == "empty"


# -- hold-out shapes: printed output, upper-case pseudo-code, loop bodies shown alone ---------

JEST_FAIL = """npm test lib/liquidity.test.ts

FAIL lib/liquidity.test.ts
  ✕ should return high score for liquid market (2 ms)
    Error: Not implemented

1 test failed, 0 passed"""
"""707/workflows tdd.md: a command followed by what the test runner printed."""

JEST_PASS = """npm test lib/liquidity.test.ts

PASS lib/liquidity.test.ts
  ✓ should return high score for liquid market (3 ms)
  ✓ should return low score for illiquid market (2 ms)
  ✓ should handle edge case: zero volume (1 ms)

3 tests passed"""

COVERAGE = """npm test -- --coverage lib/liquidity.test.ts

File           | % Stmts | % Branch | % Funcs | % Lines
---------------|---------|----------|---------|--------
liquidity.ts   |   100   |   100    |   100   |   100

Coverage: 100% ✅ (Target: 80%)"""

BRANCH_CHECK = """git branch
IF on main/master → IMMEDIATELY create feature branch:
git switch -c feat/[feature-name]"""
"""0xd0e/claude-workflow code.md: an instruction to the model written as a bash block."""

LOOP_BODY = r"""# Skip if already has completion or abandonment annotation
if echo "$line_content" | grep -qE '\*(Completed:|\*(Abandoned:|\*(Task [0-9]+ abandoned:'; then
  echo "Skipped: Line $line_num already annotated"
  ((roadmap_skipped++))
  continue
fi"""
"""KToroman/nvim_latex todo.md: the body of a loop over roadmap matches shown alone."""


@pytest.mark.parametrize(("body", "kind", "line", "evidence"), [
    (JEST_FAIL, TRANSCRIPT, 2, "FAIL lib/liquidity.test.ts"),
    (JEST_PASS, TRANSCRIPT, 2, "PASS lib/liquidity.test.ts"),
    (COVERAGE, TRANSCRIPT, 3, "---------------|"),
    ("pytest -q\n  ✓ parses a plan", TRANSCRIPT, 1, "✓ parses a plan"),
    ("npm test\nTests: 3 passed, 3 total", TRANSCRIPT, 1, "Tests: 3 passed"),
    ("make report\n==========\nall good", TRANSCRIPT, 1, "=========="),
    (BRANCH_CHECK, PSEUDO_CODE, 1, "IF on main/master"),
    ("git status\nOTHERWISE: ask the user", PSEUDO_CODE, 1, "OTHERWISE: ask"),
    # Hive-Academy/ptah-extension plugin command: lines to type in Claude Code's bash mode
    ('!cat .ptah/specs/registry.md | grep "x"', TRANSCRIPT, 0, "`!` bash-mode line"),
    ("npm run build → npm run deploy", PSEUDO_CODE, 0, "an arrow outside quotes"),
    (LOOP_BODY, FRAGMENT, 4, "`continue` outside any loop"),
    ('[ -f "$f" ] || break', FRAGMENT, 0, "`break` outside any loop"),
])
def test_holdout_non_scripts(body: str, kind: str, line: int, evidence: str) -> None:
    got = classify(body)
    assert (got.kind, got.line) == (kind, line), got.describe()
    assert evidence in got.describe()


@pytest.mark.parametrize("body", [
    # Output glyphs, rules and pipes inside quotes or as real pipelines stay a script.
    "echo \"✓ all tests passed\"\nprintf '%s\\n' \"-----\"\nnpm test | tee log | grep -c PASS",
    "echo ✓ done\necho → next",                                 # unquoted, but echoed
    'git log --format="%h → %s" -5',
    "cat <<'EOF'\nPASS src/a.test.ts\n  ✓ works\n---|---\nEOF",   # a here-document
    # Upper-case IF with shell syntax is a script's typo (SC1081), not pseudo-code.
    'IF [ -f "$x" ]; then\n  echo found\nfi',
    'PASS=1\nFAIL=0\necho "$PASS $FAIL"',                       # assignments, not output
    # continue/break inside a loop, or in a function run from a caller's loop.
    'for f in specs/*.md; do\n  [ -s "$f" ] || continue\n  echo "$f"\ndone',
    'while read -r l\ndo\n  if [ -z "$l" ]; then continue; fi\ndone < list',
    "for i in 1 2; do echo $i; [ $i = 2 ] && break; done",
    'skip() {\n  [ -z "$1" ] && continue\n}',
    "echo continue\necho 'break here'",
])
def test_holdout_near_misses_stay_scripts(body: str) -> None:
    assert classify(body).kind == SCRIPT, classify(body).describe()


@pytest.mark.parametrize(("body", "kind", "evidence"), [
    # 0motionguy/gICM commands: request examples and an API log under "Example Output".
    ("GET /users?email=john@example.com&status=active\nGET /users?sort=-created_at",
     TRANSCRIPT, "an HTTP request"),
    ("GET /api/users (200)\nPOST /api/users (201)", TRANSCRIPT, "an HTTP request"),
    # AaronCarney/collabboard implement.md: a fill-in written as words.
    ("git add <specific files — never git add .>\ngit commit -m \"fix\"", TEMPLATE,
     "the placeholder `<specific files"),
    # Third holdout: Ninety2UA/claude-code-blueprint health.md, 360AYA25/ClaudeN8N pm.md.
    ("[test command from CONVENTIONS.md]", TEMPLATE, "the fill-in `[test command"),
    # Fourth holdout: EtroxTaran/conductor debug.md, Beaulewis1977/master-workflow.
    ("(rr) reverse-continue  # Run backwards!\n(rr) bt", TRANSCRIPT, "a shell prompt `(rr)"),
    # Fifth holdout: ankurv2k6/claude-code-workflow start-debug-server.md.
    ("[package_mgr] run dev >> [log_dir]/monorepo.log 2>&1", TEMPLATE,
     "the fill-in `[package_mgr]"),
    ("--validate   # Validate configuration only\n--preview    # Preview agent", TEMPLATE,
     "a list of options"),
    ("proposal = `\nPhase ${current_phase}\n`\n\nAskUserQuestion({\n  question: proposal\n})",
     PSEUDO_CODE, "a function call with parentheses `AskUserQuestion({`"),
])
def test_second_holdout_non_scripts(body: str, kind: str, evidence: str) -> None:
    got = classify(body)
    assert got.kind == kind and evidence in got.describe(), got.describe()


@pytest.mark.parametrize("body", [
    "curl -X GET https://api.example.com/users",                # a real request command
    "sort <input.txt >sorted.txt",                               # redirections, not a fill-in
    '[ -f "$x" ] && echo y\n[[ -n "$y" ]]',                     # the test command
    'cleanup() {\n  rm -f "$T"\n}\ncleanup',                     # a function, no parentheses
    "$(command -v jq) --version\necho $(date)",
    'wc -l < "$F" > count.txt',
])
def test_second_holdout_near_misses_stay_scripts(body: str) -> None:
    assert classify(body).kind == SCRIPT, classify(body).describe()


def test_a_line_listing_paths_is_a_description() -> None:
    from baton_lsp.parse.shell import path_list_line

    # Roberdan/MyConvergio optimize-instructions.md: under `# Scan patterns (Claude)`.
    assert path_list_line("CLAUDE.md .claude/{rules,agents,reference,commands}/**/*.md")
    assert path_list_line(".github/{copilot-instructions.md,instructions,agents}/**/*.md")
    assert not path_list_line("./build.sh --release")
    assert not path_list_line("cp a.txt b.txt")
    assert not path_list_line(".claude/tests/run.sh")  # one path: a script being run


# Holdout 6 (Dallionking/Vibe-Workflow-commands `.claude/commands/`): markdown written in a
# ```bash fence. Bash has no command `-`, `1.` or `Step 1 (Init):`.
@pytest.mark.parametrize(("body", "line", "evidence"), [
    ("# Phase 1: Project Structure Discovery\n- Scan root directory for project type "
     "indicators (package.json, requirements.txt, etc.)\n", 1, "- Scan root directory"),
    ("# Created automatically before:\n- Phase implementation start\n- Major deployments\n",
     1, "- Phase implementation start"),
    ("Step 1 (Init): Target < 30 seconds\nStep 2 (Spec): Target < 2 minutes\n", 0,
     "Step 1 (Init): Target"),
    ("# Fetch validation best practices\nUse Context7 MCP to research:\n"
     "- Testing framework documentation\n", 1, "Use Context7 MCP to research:"),
    ("1. Install the hooks\n2. Run the suite\n", 0, "1. Install the hooks"),
])
def test_markdown_prose_in_a_bash_fence_is_not_a_script(body: str, line: int,
                                                        evidence: str) -> None:
    got = classify(body)
    assert (got.kind, got.line) == (PSEUDO_CODE, line), got.describe()
    assert f"markdown prose `{evidence}" in got.describe()


@pytest.mark.parametrize("body", [
    "set -euo pipefail\nnpm test -- --watch=false\nls -la dist/\n",
    "CONFIG=prod\nfoo --label: bar\n",  # a flag ending in a colon is not a heading
    'echo "Status: ok"\nprintf "%s\\n" "- item"\n',  # prose inside quotes
    "cat <<'EOF' > notes.md\n- Scan the root\nStep 1: do it\nEOF\n",  # heredoc text
    "rm -f -- *.tmp\n",
    "if ! grep -q x f; then exit 1; fi\n! test -f lock\n",  # bash's own `!` takes a space
])
def test_near_miss_scripts_with_colons_and_dashes_stay_scripts(body: str) -> None:
    assert classify(body).kind == SCRIPT, classify(body).describe()


@pytest.mark.parametrize(("line", "cron"), [
    ("*/5 * * * * /path/to/your/project/scripts/health-check.sh", True),
    ("0 2 * * 1 /usr/local/bin/backup", True),
    ("@daily /usr/local/bin/rotate-logs", True),
    ("rm -rf build/*", False),
    ("echo */5 * * * *", False),
])
def test_crontab_entries(line: str, cron: bool) -> None:
    assert cron_line(line) is cron


WHILE_THEN = """\
source .claude/lib/util.sh
ATTEMPT=0
while [ "$ATTEMPT" -lt 5 ]; then
  ATTEMPT=$((ATTEMPT + 1))
  if [ -f build.done ]; then
    break
  fi
  sleep 1
done"""
"""A loop header mistyped with `then`: its `break` is inside the loop, so the block is a
script with one syntax error, not a loop body shown alone."""


@pytest.mark.parametrize("body", [
    WHILE_THEN,
    WHILE_THEN.replace("while [ \"$ATTEMPT\" -lt 5 ]; then", "until [ -f build.done ]; then"),
    "for f in a b\nthen\n  [ -f \"$f\" ] || continue\ndone",
    "while read -r line\ndo\n  [ -n \"$line\" ] || break\ndone < list.txt",
])
def test_a_mistyped_loop_header_is_still_a_loop(body: str) -> None:
    assert classify(body).kind == SCRIPT, classify(body).describe()


def test_the_syntax_error_a_fragment_hid_is_reported(tmp_path) -> None:
    """Old code: the block was skipped as a fragment and nothing was reported."""
    from baton_lsp.rules.engine import check_file
    from baton_lsp.workspace.index import WorkspaceIndex
    from tests.helpers import only

    (tmp_path / ".claude/lib").mkdir(parents=True)
    (tmp_path / ".claude/lib/util.sh").write_text("x() { :; }\n")
    cmd = tmp_path / ".claude/commands/wait.md"
    cmd.parent.mkdir(parents=True)
    cmd.write_text(f"---\ndescription: Wait\n---\n```bash\n{WHILE_THEN}\n```\n")
    found = only(check_file(WorkspaceIndex(tmp_path), cmd), "BTN330")
    assert any("SC1058" in f.message and f.range.start_line == 6 for f in found), found


_LOOP_PIECES = ["while true; do", "for f in *; do", "do", "done", "continue", "break",
                "  continue 2", "echo break", "# continue", "'break'", "f() {", "}",
                "if x; then break; fi", "until y", "select s in a b", "x=continue",
                "echo \"$(break)\"", "cat <<EOF", "EOF", "time break", "! continue", "",
                "echo breakfast", "a;break", "x=\"continue\" break"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_LOOP_PIECES), max_size=12))
def test_loose_loop_word_skips_only_blocks_it_cannot_report(pieces: list[str]) -> None:
    """`_loose_loop_word` skips the scan of a block with no `continue` or `break` in it: the
    answer is the full scan's for every block."""
    from baton_lsp.parse.shell import _loose_loop_word, _scan_loop_words

    lines = lexed("\n".join(pieces))
    assert _loose_loop_word(lines) == _scan_loop_words(lines)


def _placeholder_unguarded(line: BashLine) -> str | None:
    """`shell._placeholder` as it was before its patterns were guarded by the brackets they
    need (every pattern tried on every line)."""
    from baton_lsp.parse.shell import (
        _ANGLE_RE,
        _BRACE_RE,
        _ECHO_RE,
        _OPTION_RE,
        _PROSE_ANGLE_RE,
        CODE,
        DQ,
    )

    text = line.text
    in_message = bool(_ECHO_RE.match(text))
    for m in _BRACE_RE.finditer(text):
        cls = line.classes[m.start()]
        if cls == CODE or (cls == DQ and not in_message):
            return m.group(0)
    if "[[" not in text and "=~" not in text:
        for m in _OPTION_RE.finditer(text):
            if line.classes[m.start()] == CODE:
                return m.group(0)
    for pattern in (_ANGLE_RE, _PROSE_ANGLE_RE):
        for m in pattern.finditer(text):
            if line.classes[m.start()] == CODE:
                return m.group(0)
    return None


_PLACEHOLDER_PIECES = ["echo ", "printf ", "cat ", "{name}", "{{ x }}", "${x}", "[OPTIONS]",
                       "[--flag]", "[[ a ]]", "=~", "<file>", "<a b c>", " <specific files>",
                       "\"", "'", "#", " ", "x", "[", "]", "{", "}", "<", ">", "$(", ")",
                       "cmd", "<<EOF", "a=1;", "\\"]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_PLACEHOLDER_PIECES), max_size=10),
       st.lists(st.sampled_from(_PLACEHOLDER_PIECES), max_size=6))
def test_placeholder_guards_change_no_answer(first: list[str], second: list[str]) -> None:
    """`_placeholder` tries a pattern only on lines holding its brackets, and reads whether
    the line prints a message only for a match inside double quotes: the same answers as
    trying everything (the second line sees quoting carried over from the first)."""
    from baton_lsp.parse.shell import _placeholder

    for line in lexed("".join(first) + "\n" + "".join(second)):
        assert _placeholder(line) == _placeholder_unguarded(line), line

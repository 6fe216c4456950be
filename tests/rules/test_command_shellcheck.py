"""BTN330: ShellCheck on command bash blocks, mapped back to markdown positions."""

from __future__ import annotations

import logging
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.model.base import Finding, Kind, Severity
from baton_lsp.model.config import BatonConfig
from baton_lsp.rules import command_shellcheck as sc
from baton_lsp.rules import shellcheck_run, shellcheck_tool
from baton_lsp.rules.base import SKIPPED_LOG, get_rule
from baton_lsp.rules.engine import check_text
from tests.helpers import ShellcheckRuns
from tests.helpers import apply_fix as apply

CMD = "/ws/.claude/commands/deploy.md"
HEAD = "---\ndescription: d\n---\n\n# /deploy\n\n"  # 6 lines: the body starts on line 6


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    sc.reset()
    yield
    sc.reset()


@pytest.fixture
def binary() -> str:
    found = sc.find_shellcheck()
    if found is None:
        pytest.skip("shellcheck binary not available")
    return found


EVERY = BatonConfig(shellcheck="all")
"""Every command, not only the seeds' orchestration: these tests are about ShellCheck."""
ALL = BatonConfig(shellcheck="all", shellcheck_checks=["all"])
"""Every ShellCheck code: the mapping tests use style codes the default set leaves out."""


def check(text: str, config: BatonConfig | None = None) -> list[Finding]:
    return [f for f in check_text(Kind.COMMAND, text, CMD, config=config or EVERY)
            if f.code in {"BTN330", "BTN000"}]


def sc_codes(findings: list[Finding]) -> list[tuple[str, int, int]]:
    return [(f.message.split(":", 1)[0], f.range.start_line, f.range.start_char)
            for f in findings]


def blocks(*bodies: str) -> str:
    return HEAD + "Next:\n\n".join(f"```bash\n{b}\n```\n\n" for b in bodies)




def test_rule_is_registered() -> None:
    r = get_rule("BTN330")
    assert r is not None and r.name == "bash-shellcheck" and r.fixable
    assert r.kinds == frozenset({Kind.COMMAND, Kind.OPENCODE_COMMAND})
    assert "shellcheck-exclude" in r.doc


def test_findings_are_mapped_to_markdown(binary: str) -> None:
    text = blocks("for f in $(ls *.txt); do\n  echo $f\ndone")
    assert check(text) == []  # style and robustness codes are opt-in
    found = check(text, ALL)
    assert sc_codes(found) == [("SC2045", 7, 9), ("SC2035", 7, 14), ("SC2086", 8, 7)]
    by_code = {f.message.split(":")[0]: f for f in found}
    assert by_code["SC2045"].severity is Severity.ERROR
    assert by_code["SC2035"].severity is Severity.INFO
    sc2086 = by_code["SC2086"]
    assert sc2086.message.startswith("SC2086: Double quote")
    assert (sc2086.range.end_line, sc2086.range.end_char) == (8, 9)
    assert sc2086.tags == ["SC2086"]
    assert sc2086.fix is not None
    fixed = apply(text, sc2086.fix)
    assert '  echo "$f"' in fixed.split("\n")
    assert "SC2086" not in [c for c, _, _ in sc_codes(check(fixed, ALL))]


def test_tabs_and_wide_characters_count_as_one_column(binary: str) -> None:
    text = blocks('f() {\n\t\techo "━━é" $1\n}\nf a')
    found = [f for f in check(text, ALL) if f.message.startswith("SC2086")]
    assert len(found) == 1
    line = text.split("\n")[found[0].range.start_line]
    assert found[0].range.start_line == 8
    assert line[found[0].range.start_char:found[0].range.end_char] == "$1"


def test_second_block_lines_and_indented_fence(binary: str) -> None:
    text = HEAD + "1. Step\n\n   ```bash\n   cd /tmp\n   echo $1\n   ```\n"
    found = check(text, ALL)
    assert sc_codes(found) == [("SC2164", 9, 3), ("SC2086", 10, 8)]


def test_parse_errors_are_errors(binary: str) -> None:
    found = check(blocks("if true; then\n  echo hi"))
    assert found and all(f.severity is Severity.ERROR for f in found)
    assert ("SC1073", 7, 0) in sc_codes(found)
    # SC1072 ("fix any mentioned problems and try again") repeats the parse error above it.
    assert "SC1072" not in [c for c, _, _ in sc_codes(found)]


def test_exclude_from_config(binary: str) -> None:
    text = blocks("cd /tmp\necho $1")
    assert [c for c, _, _ in sc_codes(check(text, ALL))] == ["SC2164", "SC2086"]
    config = BatonConfig(shellcheck="all", shellcheck_checks=["all"],
                         shellcheck_exclude=["SC2086", "SC1091"])
    assert [c for c, _, _ in sc_codes(check(text, config))] == ["SC2164"]
    config = BatonConfig(shellcheck="all", shellcheck_checks=["default", "SC2086"])
    assert [c for c, _, _ in sc_codes(check(text, config))] == ["SC2086"]


def test_disabled_by_config(binary: str) -> None:
    assert check(blocks("echo $1"), BatonConfig(shellcheck="off")) == []
    assert check(blocks("echo $1"), BatonConfig(shellcheck="off")) == []


BROKEN = 'COUNT=3\nif [ "$COUNT" > 100 ]; then echo many; fi'
"""SC2071 (`>` in `[ ]` compares strings and writes a file): in the default check set."""
STATEFUL = 'source "$CLAUDE_PROJECT_DIR/.claude/lib/core/state-persistence.sh"\n' \
    'append_workflow_state "COUNT" "3"'


def test_auto_checks_only_commands_of_the_seeds_orchestration(binary: str) -> None:
    auto = BatonConfig()
    assert auto.shellcheck == "auto"
    assert check(blocks(BROKEN), auto) == []  # an ordinary command's fence: not checked
    found = check(blocks(STATEFUL, BROKEN), auto)  # the state library makes it a script
    assert [c for c, _, _ in sc_codes(found)] == ["SC2071"]
    library = blocks('. "${CLAUDE_PROJECT_DIR}/.claude/lib/topic-utils.sh"', BROKEN)
    assert [c for c, _, _ in sc_codes(check(library, auto))] == ["SC2071"]
    assert check(blocks("source ~/.bashrc", BROKEN), auto) == []  # not the project's library
    assert [c for c, _, _ in sc_codes(check(blocks(BROKEN)))] == ["SC2071"]  # "all"
    # Turning the whole convention on also turns the rule on for every command.
    on = BatonConfig(conventions={"script-blocks": "on"})
    assert [c for c, _, _ in sc_codes(check(blocks(BROKEN), on))] == ["SC2071"]


def test_boolean_setting_of_earlier_releases_still_reads() -> None:
    assert BatonConfig.model_validate({"shellcheck": True}).shellcheck == "all"
    assert BatonConfig.model_validate({"shellcheck": False}).shellcheck == "off"
    with pytest.raises(ValueError, match="auto"):
        BatonConfig.model_validate({"shellcheck": "sometimes"})


def test_unused_variable_used_by_a_later_block_or_prompt_is_dropped(binary: str) -> None:
    text = blocks("USED_LATER=1\nIN_PROMPT=2\nREALLY_UNUSED=3", 'echo "$USED_LATER"') + (
        "Task {\n  prompt: \"use ${IN_PROMPT}\"\n}\n")
    found = check(text, BatonConfig(shellcheck="all", shellcheck_checks=["SC2034"]))
    assert [f.message.split(" ")[1] for f in found] == ["REALLY_UNUSED"]
    assert sc_codes(found) == [("SC2034", 9, 0)]


def test_zsh_and_empty_blocks_are_skipped(binary: str) -> None:
    assert check(HEAD + "```zsh\necho $1\n```\n\n```bash\n```\n") == []


def test_results_are_cached_by_content(binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = ShellcheckRuns(monkeypatch)
    text = blocks("echo $1", "echo $2", "echo $1")
    first = check(text, ALL)
    assert sorted(runs.blocks) == ["echo $1\n", "echo $2\n"]  # the repeated block ran once
    assert runs.argvs[0][:4] == [binary, "--norc", "--format=json1", "--shell=bash"]
    second = check(text, ALL)
    assert len(runs.blocks) == 2 and sc_codes(second) == sc_codes(first)
    assert [f.range.start_line for f in first] == [7, 13, 19]


def test_a_file_s_blocks_share_processes(binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks go to ShellCheck in at most one process per core (as `/dev/fd/N` files), and
    each block's comments come back to it: the same findings as one process per block."""
    bodies = [f'if [ "$N{i}" > {i} ]; then echo "$N{i}"; fi' for i in range(7)]
    monkeypatch.setattr(shellcheck_run, "PROCESSES", 2)
    alone = ShellcheckRuns(monkeypatch)
    monkeypatch.setattr(shellcheck_run, "_memfd_failed", True)  # the fallback: one each
    one_each = sc_codes(check(blocks(*bodies)))
    assert len(alone.processes) == 7
    sc.reset()
    monkeypatch.setattr(shellcheck_run, "_memfd_failed", False)
    shared = ShellcheckRuns(monkeypatch)
    together = sc_codes(check(blocks(*bodies)))
    assert together == one_each and [c for c, _, _ in together] == ["SC2071"] * 7
    assert len(shared.processes) == 2
    assert sorted(shared.blocks) == sorted(b + "\n" for b in bodies)


def test_a_batch_that_fails_is_run_block_by_block(binary: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """ShellCheck that cannot read `/dev/fd` (no /proc, another OS) fails the batch: the
    blocks are piped one by one instead and nothing is lost."""
    real = shellcheck_run._execute

    def no_dev_fd(argv: list[str], stdin: bytes | None, fds: Any, timeout: float) -> Any:
        argv = [a.replace("/dev/fd/", "/nonexistent/fd/") for a in argv]
        return real(argv, stdin, fds, timeout)

    monkeypatch.setattr(shellcheck_run, "_execute", no_dev_fd)
    monkeypatch.setattr(shellcheck_run, "_memfd_failed", False)
    monkeypatch.setattr(shellcheck_run, "PROCESSES", 1)
    found = check(blocks('if [ "$A" > 1 ]; then :; fi', 'if [ "$B" > 2 ]; then :; fi'))
    assert [c for c, _, _ in sc_codes(found)] == ["SC2071", "SC2071"]
    assert shellcheck_run._memfd_failed


def test_missing_binary_is_skipped_and_logged_once(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)  # imported where it runs
    monkeypatch.setattr(shellcheck_tool.sys, "executable", "/nonexistent/python")
    caplog.set_level(logging.INFO, logger=sc.__name__)
    assert check(blocks("echo $1")) == []
    assert check(blocks("echo $2")) == []
    messages = [r.getMessage() for r in caplog.records if "shellcheck not found" in r.message]
    assert len(messages) == 1


def test_binary_found_next_to_python(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    exe = tmp_path / "shellcheck"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setattr(shutil, "which", lambda name: None)  # imported where it runs
    monkeypatch.setattr(shellcheck_tool.sys, "executable", str(tmp_path / "python"))
    assert sc.find_shellcheck() == str(exe)


def test_timeout_gives_a_reason_and_bad_output_no_findings(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def timing_out(argv: list[str], stdin: Any, fds: Any, timeout: float) -> Any:
        raise shellcheck_run.OverLimit("killed")

    monkeypatch.setattr(shellcheck_run, "_execute", timing_out)
    options = shellcheck_run.Options("/bin/shellcheck")
    block = (options, "echo $1\n")
    assert shellcheck_run.run_many([block], None)[block] == shellcheck_run.OVER_LIMIT

    def garbage(argv: list[str], stdin: Any, fds: Any, timeout: float) -> Any:
        return shellcheck_run.Outcome(3, b"not json", b"boom")

    monkeypatch.setattr(shellcheck_run, "_execute", garbage)
    block = (options, "echo $2\n")
    assert shellcheck_run.run_many([block], None)[block] == []

def test_corpus_commands_timing(binary: str, corpus: Path) -> None:
    files = sorted(corpus.glob("**/.claude/commands/*.md"))
    assert files
    start = time.perf_counter()
    total = 0
    for path in files:
        found = [f for f in check_text(Kind.COMMAND, path.read_text(), str(path))
                 if f.code in {"BTN330", "BTN000"}]
        assert not [f for f in found if f.code == "BTN000"]
        total += len(found)
    elapsed = time.perf_counter() - start
    assert total > 0
    assert elapsed < 60, f"ShellCheck over {len(files)} corpus commands took {elapsed:.1f}s"
    # debug.md holds a `Task {` pseudo-call inside a bash loop (line 194): pseudo-code, not
    # checked. Its block at line 384 swallowed markdown prose (`**STEP B (REQUIRED) ...**`,
    # line 397) where a fence was not closed and reopened: bash stops there, a real defect.
    debug = [f for f in check_text(Kind.COMMAND, (corpus / ".claude/commands/debug.md")
                                   .read_text(), str(corpus / ".claude/commands/debug.md"))
             if f.code == "BTN330"]
    assert {f.range.start_line + 1 for f in debug} == {397}
    assert ("SC1088", 396) in [(f.message.split(":")[0], f.range.start_line) for f in debug]


# -- only scripts, only broken-script checks by default ----------------------------------------


@pytest.mark.parametrize(("body", "code"), [
    ('COUNT=$(wc -l < f)\nif [ "$COUNT" > 5 ]; then echo many; fi', "SC2071"),
    ("local name=x\necho \"$name\"", "SC2168"),
    ('cat "~/.claude/settings.json"', "SC2088"),
    ("make build 2>&1 > build.log", "SC2069"),
    ('greet\ngreet() { echo hi; }', "SC2218"),
    ("exit -1", "SC2242"),
    ('if [[ "$a" =~ "^v[0-9]+" ]]; then echo v; fi', "SC2076"),
    ('x = 1', "SC2283"),
    ("if true; then\n  echo hi", "SC1073"),
])
def test_curated_default_codes_are_reported(binary: str, body: str, code: str) -> None:
    assert code in [c for c, _, _ in sc_codes(check(blocks(body)))]


@pytest.mark.parametrize("body", [
    'cd "$REPORTS_DIR"\necho $COUNT',                           # SC2164, SC2086: style
    'source "$LIB/state.sh"\necho "$TOPIC_NUM $TOPIC_NAME"',    # SC1090, SC2153/SC2154
    "run_tests\nif [ $? -ne 0 ]; then echo failed; fi",         # SC2181: run, then read $?
    "sed -i 's/^export X=.*$//' \"$STATE_FILE\"",               # SC2016-like: $ in sed quotes
    "UNUSED_LATER=1",                                           # SC2034
    "ls -t specs/*.md | head -1",                               # SC2012
    "echo $(date)",                                             # SC2005, SC2046
    "find . -name '*.md' | while read f; do echo \"$f\"; done",  # SC2162
])
def test_style_codes_are_opt_in(binary: str, body: str) -> None:
    assert check(blocks(body)) == []


@pytest.mark.parametrize(("body", "kind"), [
    ("# Pseudo-code\nfor phase in plan.phases:\n    run(phase)", "pseudo-code"),
    ("def select(reports):\n    return [r for r in reports if r.ok]", "pseudo-code"),
    ("for i in 1 2; do\n  Task {\n    prompt: \"go\"\n  }\ndone", "pseudo-code"),
    ("$ baton check .\n.claude/commands/x.md:3:1: BTN302 no front matter", "transcript"),
    ("/plan [OPTIONS] <feature-description>", "template"),
    ("mkdir -p specs/{topic}/reports\ncp <file> specs/{topic}/", "template"),
    ("git show <commit-hash>", "template"),
    ("source lib.sh\n...\nfinish", "template"),
    (".claude/commands/*.md\n.claude/agents/**/*.md", "path list"),
])
def test_non_scripts_are_skipped_and_say_why(binary: str, body: str, kind: str,
                                             caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=SKIPPED_LOG)
    assert check(blocks(body), ALL) == []
    (record,) = [r for r in caplog.records if r.name == SKIPPED_LOG]
    assert record.getMessage().startswith(f"{CMD}:7: BTN330 skipped bash block 1")
    assert f"not a script: {kind}:" in record.getMessage()


def test_check_verbose_prints_skip_reasons(binary: str, tmp_path: Path) -> None:
    import sys

    cmd = tmp_path / ".claude" / "commands" / "plan.md"
    cmd.parent.mkdir(parents=True)
    cmd.write_text(blocks("/plan [OPTIONS] <feature>"))

    def run(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "baton_lsp", "check", *flags,
                               str(tmp_path)], capture_output=True, text=True, timeout=120,
                              check=False)

    quiet = run("--shellcheck", "all")
    assert quiet.returncode == 0 and "skipped" not in quiet.stderr
    loud = run("--shellcheck", "all", "--verbose")
    assert loud.returncode == 0
    assert "plan.md:7: BTN330 skipped bash block 1, not a script: template:" in loud.stderr
    auto = run("--verbose")  # the default: not a command of the script-blocks convention
    assert auto.returncode == 0
    assert "plan.md: BTN330 not run: the file does not follow the script-blocks" in auto.stderr


def test_shellcheck_checks_config_is_validated() -> None:
    assert BatonConfig.model_validate({"shellcheck-checks": ["Default", "sc2086"]}) \
        .shellcheck_checks == ["default", "SC2086"]
    with pytest.raises(ValueError, match="unknown ShellCheck check"):
        BatonConfig.model_validate({"shellcheck-checks": ["quoting"]})


def test_selected_rules() -> None:
    assert sc.selected(1073, "error", ["default"], [])
    assert not sc.selected(1091, "info", ["default"], [])
    assert not sc.selected(1003, "info", ["default"], [])  # SC1xxx style notes
    assert sc.selected(2071, "warning", ["default"], [])
    assert not sc.selected(2086, "info", ["default"], [])
    assert sc.selected(2086, "info", ["default", "SC2086"], [])
    assert not sc.selected(2086, "info", ["all"], ["SC2086"])
    assert not sc.selected(2071, "warning", [], [])


# -- hold-out shapes: output after a command, pseudo-code, loop bodies, list-item fences -------

TDD_FAIL = ("npm test lib/liquidity.test.ts\n\nFAIL lib/liquidity.test.ts\n"
            "  ✕ should return high score for liquid market (2 ms)\n"
            "    Error: Not implemented\n\n1 test failed, 0 passed")
TDD_COVERAGE = ("npm test -- --coverage lib/liquidity.test.ts\n\n"
                "File           | % Stmts | % Branch | % Funcs | % Lines\n"
                "---------------|---------|----------|---------|--------\n"
                "liquidity.ts   |   100   |   100    |   100   |   100\n\n"
                "Coverage: 100% ✅ (Target: 80%)")
ROADMAP_LOOP_BODY = (
    "# Skip if already has completion or abandonment annotation\n"
    "if echo \"$line_content\" | grep -qE '\\*(Completed:|\\*(Abandoned:'; then\n"
    "  echo \"Skipped: Line $line_num already annotated\"\n"
    "  ((roadmap_skipped++))\n"
    "  continue\nfi")


@pytest.mark.parametrize(("body", "kind"), [
    (TDD_FAIL, "transcript: printed output `FAIL lib/liquidity.test.ts`"),
    (TDD_COVERAGE, "transcript: printed output `---------------|"),
    ("git branch\nIF on main/master → IMMEDIATELY create feature branch:\n"
     "git switch -c feat/[feature-name]", "pseudo-code: the upper-case keyword line"),
    (ROADMAP_LOOP_BODY, "fragment: `continue` outside any loop"),
])
def test_holdout_non_scripts_are_skipped(binary: str, body: str, kind: str,
                                         caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=SKIPPED_LOG)
    assert check(blocks(body)) == []
    (record,) = [r for r in caplog.records if r.name == SKIPPED_LOG]
    assert f"not a script: {kind}" in record.getMessage()


@pytest.mark.parametrize("body", [
    # Prints test-style output from quotes, and has a real bug.
    'echo "✓ tests passed"\nCOUNT=$(wc -l < f)\nif [ "$COUNT" > 5 ]; then echo "---|---"; fi',
    # Upper-case IF with shell syntax: a typo bash cannot run.
    'IF [ -f "$x" ]; then\n  echo found\nfi',
    # A whole loop whose `continue` is fine; the comparison is not.
    'for f in specs/*.md; do\n  [ -s "$f" ] || continue\n  if [ "$n" > 5 ]; then echo "$f"; fi\n'
    "done",
], ids=["quoted-output", "upper-case-IF", "loop-with-continue"])
def test_holdout_near_misses_are_still_checked(binary: str, body: str) -> None:
    found = check(blocks(body))
    assert found, "a real script must still be checked"
    assert {"SC2071", "SC1081"} & {c for c, _, _ in sc_codes(found)}


LIST_ITEM_HEREDOC = (
    "1. **File-based filters** for `!=` operators:\n"
    "   ```bash\n"
    "   # Instead of: jq 'select(.language != \"meta\")' file\n"
    "   cat > /tmp/filter_$$.jq << 'EOF'\n"
    "   select(.language != \"meta\")\n"
    "   EOF\n"
    "   jq -f /tmp/filter_$$.jq file && rm -f /tmp/filter_$$.jq\n"
    "   ```\n")
"""KToroman/nvim_latex todo.md: CommonMark strips the fence's 3 spaces from every line, so
the here-document ends at `EOF`; ShellCheck must see the block as rendered."""


def test_list_item_fence_is_dedented(binary: str) -> None:
    assert check(HEAD + LIST_ITEM_HEREDOC) == []
    # Near miss: an `EOF` indented past the fence is still indented once rendered.
    broken = LIST_ITEM_HEREDOC.replace("   EOF\n", "     EOF\n")
    assert ("SC1039", 11, 3) in sc_codes(check(HEAD + broken))  # column past the 3 spaces
    # Near miss: an unindented fence whose `EOF` is indented is a broken script.
    unindented = "\n".join(line[3:] if line.startswith("   ") else line
                           for line in LIST_ITEM_HEREDOC.split("\n"))
    found = check(HEAD + unindented.replace("\nEOF\n", "\n  EOF\n"))
    assert ("SC1039", 11, 0) in sc_codes(found)


def test_dedented_columns_map_back_to_markdown(binary: str) -> None:
    body = 'COUNT=3\nif [ "$COUNT" > 5 ]; then\n      echo many\nfi'
    flat = check(blocks(body))
    indented = HEAD + "1. Step\n   ```bash\n" + "".join(
        f"   {line}\n" for line in body.split("\n")) + "   ```\n"
    nested = check(indented)
    assert [c for c, _, _ in sc_codes(flat)] == [c for c, _, _ in sc_codes(nested)] == ["SC2071"]
    assert nested[0].range.start_char == flat[0].range.start_char + 3
    assert nested[0].range.end_char == flat[0].range.end_char + 3
    line = indented.split("\n")[nested[0].range.start_line]
    assert line[nested[0].range.start_char:nested[0].range.end_char] == ">"


def test_overlap_inside_one_case_branch_and_block_line_numbers(binary: str) -> None:
    # miethe/MeatyMusic github-create-issue.md: `*"API"*` covers `*"FastAPI"*` in the same
    # branch, which changes nothing; a pattern shadowing a later branch is still reported,
    # and ShellCheck's block-relative "line N" is given as the file's line.
    same = blocks('case "$t" in\n  *"API"*|*"FastAPI"*) echo api ;;\n  *) echo other ;;\nesac')
    assert [c for c, _, _ in sc_codes(check(same, ALL)) if c in ("SC2221", "SC2222")] == []
    across = blocks('case "$t" in\n  *"React"*) echo web ;;\n  *"React Native"*) echo m ;;\n'
                    '  *) echo other ;;\nesac')
    found = [f for f in check(across, ALL) if f.tags and f.tags[0] in ("SC2221", "SC2222")]
    assert found
    lines = {f.range.start_line + 1 for f in found}
    assert any(f"line {n}" in f.message for f in found for n in lines)


def test_a_first_line_comment_is_not_a_shebang(binary: str) -> None:
    # Everyone-Needs-A-Copilot/claude-copilot pause.md: `# /continue enhancement ...`.
    assert check(blocks("# /continue enhancement (implemented separately)\necho ok")) == []


def test_a_crontab_line_shown_in_a_script_is_not_a_command(binary: str) -> None:
    # Dallionking/Vibe-Workflow-commands vibe-setup-monitoring.md: SC2211 on the cron line.
    cron = "crontab -e\n# Add this line:\n*/5 * * * * /path/to/your/project/scripts/health-check.sh"
    assert check(blocks(cron)) == []
    # the rest of such a block is still checked
    found = check(blocks(cron + '\nif [ "$n" > 5 ]; then echo hi; fi'))
    assert [c for c, _, _ in sc_codes(found)] == ["SC2071"]


# -- bounded work on any input ----------------------------------------------------------------


@pytest.mark.parametrize("body", ["[[" + "[" * 10_000, "echo " + "$((" * 10,
                                  "f " + "(" * 400])
def test_a_block_that_nests_too_deep_is_reported_not_checked(binary: str, body: str) -> None:
    """ShellCheck's parser backtracks on unclosed nesting: ten `$((` took 13 s, a
    10,000-character `[[[…` line ran into the 20 s timeout, and a code action waited for
    it. Such a block is not handed to ShellCheck; the fence says why."""
    [finding] = check(blocks(body))
    assert finding.severity is Severity.INFO and finding.range.start_line == 6
    assert "not checked" in finding.message and "deep" in finding.message, finding.message


def test_the_wall_clock_safety_net_is_reported_as_the_cpu_limit(
        binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shellcheck_run, "WALL_SECONDS", 0.001)
    [finding] = check(blocks("echo $1"))
    assert finding.severity is Severity.INFO and "not checked" in finding.message
    assert finding.message.endswith(shellcheck_run.OVER_LIMIT), finding.message


def test_a_block_over_its_cpu_time_limit_is_reported_not_checked(
        binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real ShellCheck killed by its own RLIMIT_CPU (1 s here) on a block its parser
    backtracks on (let through by a raised nesting limit): information on the fence."""
    monkeypatch.setattr(shellcheck_run, "CPU_SECONDS", 1)
    monkeypatch.setattr(shellcheck_run, "MAX_NESTING", 10_000)
    started = time.process_time()
    [finding] = check(blocks("echo " + "$((" * 12 + "1"))
    assert finding.severity is Severity.INFO and "not checked" in finding.message
    assert finding.message.endswith(shellcheck_run.OVER_LIMIT), finding.message
    assert time.process_time() - started < 30  # our own CPU: the child's was the one limited


def test_blocks_past_the_file_limits_are_information_in_document_order(
        binary: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shellcheck_run, "MAX_FILE_BLOCKS", 3)
    bodies = [f'if [ "$A" > {i} ]; then echo {i}; fi' for i in range(5)]
    found = check(blocks(*bodies, bodies[0]), BatonConfig(shellcheck="all",
                                                          severity={"BTN330": "error"}))
    checked = [f for f in found if f.message.startswith("SC2071")]
    skipped = [f for f in found if "not checked" in f.message]
    assert len(checked) == 4  # the first three blocks, and the sixth: a repeat of the first
    assert [f.message.split(" was")[0] for f in skipped] == ["bash block 4", "bash block 5"]
    assert all(f.severity is Severity.INFO for f in skipped)  # never raised to BTN330's error
    assert all(f.severity is Severity.ERROR for f in checked)


def test_lone_surrogates_in_editor_text_do_not_break_the_rule(binary: str) -> None:
    """JSON-RPC can carry lone surrogates (`\\udcff`); encoding the block for ShellCheck
    raised UnicodeEncodeError, reported as BTN000."""
    found = check(blocks("echo '\udcff' \"$1\"", "if [ \"$A\" > 5 ]; then echo \ud800; fi"))
    assert not [f for f in found if f.code == "BTN000"], found
    assert "SC2071" in [c for c, _, _ in sc_codes(found)]


# -- started ahead of the check ---------------------------------------------------------------


def test_a_bulk_check_starts_shellcheck_before_it_checks_anything(
        binary: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`baton check` hands every command's blocks to ShellCheck first (largest command
    first), checks the other files while it runs, and the commands last; the findings are
    the ones a check of each command alone gives."""
    from baton_lsp.rules import checker

    script = 'source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"\n'
    root = tmp_path / "ws"
    (root / ".claude/commands").mkdir(parents=True)
    (root / ".claude/specs/001_x/plans").mkdir(parents=True)
    for i, extra in enumerate(["", "echo more\n" * 40]):
        (root / f".claude/commands/c{i}.md").write_text(
            HEAD + f"```bash\n{script}if [ \"$N{i}\" > {i} ]; then :; fi\n{extra}```\n")
    (root / ".claude/specs/001_x/plans/p.md").write_text("# P\n### Phase 1: A\n- [ ] t\n")
    events: list[str] = []
    # BTN330 imports the runner where ShellCheck runs: its `submit` is watched there.
    submit, check_file = shellcheck_run.submit, checker.check_file
    monkeypatch.setattr(shellcheck_run, "submit", lambda runs, *a, **k: (
        events.append("shellcheck " + ",".join(s.split("\n")[1][6:9] for _, s in runs)),
        submit(runs, *a, **k))[1])
    monkeypatch.setattr(checker, "check_file", lambda idx, file, *a, **k: (
        events.append("check " + Path(file).name), check_file(idx, file, *a, **k))[1])
    found = checker.check_paths([root], jobs=1)
    assert events[:2] == ["shellcheck $N1", "shellcheck $N0"]
    # (The rule's own `run_many` hands the same blocks over again: already running, they
    # are not started twice, `test_a_block_already_running_is_not_run_again`.)
    assert [e for e in events[2:] if e.startswith("check")] == \
        ["check p.md", "check c1.md", "check c0.md"]
    assert sorted(f.message.split(":")[0] for f in found.findings if f.code == "BTN330") == \
        ["SC2071", "SC2071"]


def test_a_block_already_running_is_not_run_again(binary: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    runs = ShellcheckRuns(monkeypatch)
    options = shellcheck_run.Options(binary)
    blocks = [(options, f"echo {i} $x\n") for i in range(3)]
    started = shellcheck_run.submit(blocks, None)
    again = shellcheck_run.run_many(blocks, None)  # while (or after) the first run
    assert [started[b].result() for b in blocks] == [again[b] for b in blocks]
    assert sorted(runs.blocks) == sorted(s for _, s in blocks)  # each handed over once


def test_exiting_kills_shellcheck_runs_nobody_will_read(binary: str, tmp_path: Path) -> None:
    """A process that exits (the editor closed the server, Ctrl-C) while a batch runs
    neither waits for it nor leaves ShellCheck running."""
    import os
    import select
    import sys

    child = tmp_path / "child.py"
    child.write_text(CHILD)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(child), binary], capture_output=True,
                          text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    pid = int(proc.stdout.split()[0])
    assert time.monotonic() - start < 2.5  # the batch alone takes longer than that
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # killed and reaped already
    try:  # readable once the process has ended; the batch alone would take seconds
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        assert poller.poll(1000), f"ShellCheck {pid} still runs after its parent exited"
    finally:
        os.close(pidfd)


CHILD = """
import subprocess, sys, threading
from baton_lsp.rules import shellcheck_run as r
started = threading.Event()
pids = []
real = subprocess.Popen
class Recording(real):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        pids.append(self.pid)
        started.set()
r.subprocess.Popen = Recording
opts = r.Options(sys.argv[1])
slow = "".join('f%d() { if [ "$x" = %d ]; then echo %d; fi; }\\n' % (i, i, i)
               for i in range(1500))
r.submit([(opts, slow), (opts, slow + "# b\\n")], None, spread=1)
assert started.wait(10), "no ShellCheck process started"
print(pids[0], flush=True)
sys.exit(0)
"""


def test_a_quoted_membership_test_is_no_quoted_regex(binary: str) -> None:
    """issue 34: `[[ " $DONE " =~ " $1 " ]]` asks whether $1 is a word of the list; the quotes
    make the match literal on purpose. A quoted regex, or a quoted pattern variable, is still
    SC2076."""
    member = ('DONE="research plan"\nphase_done() { [[ " $DONE " =~ " $1 " ]]; }\n'
              'phase_done plan && echo "skip plan"')
    assert "SC2076" not in [c for c, _, _ in sc_codes(check(blocks(member)))]
    for rhs in ('"^v[0-9]+"', '" ${NAME}.* "', '"$PATTERN"'):
        body = f'if [[ "$TAG" =~ {rhs} ]]; then echo match; fi'
        assert "SC2076" in [c for c, _, _ in sc_codes(check(blocks(body)))], rhs


def test_blocks_of_a_markdown_template_are_not_scripts_of_this_file(binary: str) -> None:
    """issue 34: documentation of a copy-paste template (from a public tree, shortened):
    ```bash blocks inside ```markdown examples, with `[COMMAND_NAME]` placeholders and a
    step's logic left out (`[Original Step 1 logic...]`), split where the example's reader
    fills it in. Its `STATE_FILE` made it look like the seeds' state library; the blocks are
    the template's, never run by this file (BTN003 reports how the short outer fences
    render)."""
    text = (Path(__file__).parent / "data" / "resumption_template.md").read_text(
        encoding="utf-8")
    found = check_text(Kind.COMMAND, text, CMD, config=BatonConfig())
    assert [f for f in found if f.code == "BTN330"] == []
    assert [f.range.start_line + 1 for f in found if f.code == "BTN003"] == [52, 75, 108]
    # the same blocks outside an example are this file's scripts, and checked
    bare = text.replace("```markdown\n", "").replace("\n```\n\n## ", "\n\n## ")
    assert [f for f in check_text(Kind.COMMAND, bare, CMD, config=BatonConfig())
            if f.code == "BTN330"]


def test_own_workers_run_the_batches_and_end_when_closed(binary: str) -> None:
    """The threads that run ShellCheck belong to a `Workers` with a lifetime: they start
    with its first batch, run it for real, and end when it is closed."""
    workers = shellcheck_run.Workers(threads=2)
    assert workers.threads() == []
    options = shellcheck_run.Options(binary)
    blocks = [(options, f"echo $unset_{i}\n") for i in range(3)]
    futures = shellcheck_run.submit(blocks, None, workers=workers)
    results = {block: future.result(timeout=300) for block, future in futures.items()}
    assert all(isinstance(found, list) and 2154 in {c["code"] for c in found}
               for found in results.values()), results  # "referenced but not assigned"
    threads = workers.threads()
    assert len(threads) == 2 and all(t.is_alive() for t in threads)
    workers.close(timeout=300)
    assert not any(t.is_alive() for t in threads)
    with pytest.raises(RuntimeError, match="closed"):
        workers.put((options, ["echo\n"], ["k"], [], None))

"""parse.shell.classify: a ```bash block is a script unless there is positive evidence that
bash could not run it as written (the gate in front of BTN330)."""

from __future__ import annotations

import pytest

from baton_lsp.parse.shell import PATH_LIST, PSEUDO_CODE, SCRIPT, TEMPLATE, TRANSCRIPT, classify


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

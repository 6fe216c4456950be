"""Blocks run without ShellCheck's control-flow graph give the same default findings.

The property checked against the real ShellCheck: whenever a block's default-selected
comments differ between the full analysis and `--extended-analysis=false`, `needs_graph`
said the block needs the graph. Checked on constructs each graph-reading check of ShellCheck
0.11 fires on, on look-alikes, and on every bash block of the shared corpus's commands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton_lsp.model.config import BatonConfig
from baton_lsp.rules import command_shellcheck, shellcheck_run
from baton_lsp.rules.command_shellcheck import selected
from baton_lsp.rules.shellcheck_cfg import gated, needs_graph
from baton_lsp.rules.shellcheck_tool import find_shellcheck, shellcheck_version

EXCLUDE = tuple(BatonConfig().shellcheck_exclude)

GRAPH_CASES = [
    # SC2071 / SC2122 / SC2072 / SC2073: whether `$x` holds a number comes from the graph.
    'x=10; [[ $x > $z ]]',
    'x=$RANDOM; [ $x > $z ]',
    'x=0; if [[ -n $def ]]; then x=$def; fi; while [ $x > $z ]; do :; done',
    'n=3\nif [ "$m" -lt 2 ] && [ ${n} > 1 ]; then echo big; fi',
    '[[ $((n++)) > $x ]]',
    'v=1\n[[ $a &&\n   $v >= $b ]]',
    'x=1; [ "$x" \\> 0 ]',
    # SC2324: `+=` of a number.
    'x+=1',
    'n=4; x+=n',
    'n=4; x+=$n',
    'count=0\nfor f in *; do count+=1; done',
    # SC2318: a declaration reading what it assigns.
    'declare x=1 y=foo$x',
    'readonly x=1 y=$((1+x))',
    'local x=1 y=$(echo $x)',
    'f() { local x=1 y[$x]=z; }',
    'declare x=var $x=1',
    'export a=1 b=$a',
    'declare a=1 \\\n  b=$a',
    'f() {\n  local x=1 y="$(\n    echo "$x"\n  )"\n}',
    # SC2218: a function called before its definition.
    'greet\ngreet() { echo hi; }',
    'false || mycmd; mycmd() { f; }',
    '"greet" world\ngreet() { echo "$1"; }',
    'g\\reet\ngreet() { :; }',
    'run-all\nrun-all() { :; }',
    'a.b\nfunction a.b { :; }',
    'main "$@"\nmain() {\n  echo "$@"\n}',
    'if ok; then setup; fi\nsetup() { :; }',
    'while read -r l; do handle "$l"; done < f\nhandle() { echo "$1"; }',
]

LOOKALIKE_CASES = [
    # Redirections and process substitution inside `[ ]` are not comparisons.
    'if [ -z "$(find . -name x 2>/dev/null)" ]; then :; fi',
    '[ -f "$f" ] && cat "$f" >&2',
    'diff <(sort a) <(sort b) > out',
    # Appends that are never numbers, declarations that read nothing they set.
    'arr+=("x")\nmsg+="done"\nlist+=\'a\'',
    'local_x=1\nlocal y=$(date)',
    'declare -A MAP=()\nexport PATH="$HOME/bin:$PATH"',
    'local report_path="$1"',
    # Functions defined before they are used; words in strings and comments.
    'greet() { echo hi; }\ngreet',
    'log() { echo "$*" >&2; }\nlog "function log is ready"',
    'verify_state() { :; }\necho "ERROR: function not available"',
    'export PATH="$HOME/bin:$PATH"\nlocal dir="${1:-$PWD}" name=x',
    'for ((i = 0; i < 3; i++)); do echo "$i"; done',
    '# calls cleanup later\ntrap cleanup EXIT\n',
]


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    command_shellcheck.reset()
    yield
    command_shellcheck.reset()


@pytest.fixture(scope="module")
def binary() -> str:
    found = find_shellcheck()
    if found is None:
        pytest.skip("shellcheck binary not available")
    if not gated(shellcheck_version(found), ["default"]):
        pytest.skip(f"ShellCheck {shellcheck_version(found)} is not gated")
    return found


def _reported(result: Any) -> list[tuple[int, int, int, str]]:
    assert isinstance(result, list), result
    return sorted((c["code"], c["line"], c["column"], c["level"]) for c in result
                  if selected(c["code"], c["level"], ["default"], list(EXCLUDE)))


def _both_ways(binary: str, scripts: list[str]) -> list[tuple[str, bool]]:
    """(script, whether its default findings differ without the graph)."""
    full = shellcheck_run.Options(binary, EXCLUDE, graph=True)
    plain = shellcheck_run.Options(binary, EXCLUDE, graph=False)
    runs = [(o, s) for s in scripts for o in (full, plain)]
    found = shellcheck_run.run_many(runs, None)
    return [(s, _reported(found[(full, s)]) != _reported(found[(plain, s)])) for s in scripts]


def test_the_gate_opens_on_every_construct_that_reads_the_graph(binary: str) -> None:
    results = _both_ways(binary, [case + "\n" for case in GRAPH_CASES])
    missed = [s for s, differs in results if differs and not needs_graph(s)]
    assert missed == []
    assert all(needs_graph(s) for s, _ in results)
    # Not vacuous: most of these cases really report something else without the graph.
    assert sum(differs for _, differs in results) >= len(GRAPH_CASES) // 2, results


def test_look_alikes_run_without_the_graph(binary: str) -> None:
    results = _both_ways(binary, [case + "\n" for case in LOOKALIKE_CASES])
    assert [s for s, differs in results if differs] == []
    assert [s for s, _ in results if needs_graph(s)] == []


def test_corpus_blocks_same_findings_and_most_skip_the_graph(binary: str, corpus: Path) -> None:
    scripts = [m.group(1) for path in sorted(corpus.glob("**/.claude/commands/**/*.md"))
               for m in re.finditer(r"```(?:bash|sh)\n(.*?)```", path.read_text(errors="replace"),
                                    re.DOTALL)]
    assert len(scripts) > 50
    results = _both_ways(binary, scripts)
    assert [s[:80] for s, differs in results if differs and not needs_graph(s)] == []
    plain = sum(len(s) for s in scripts if not needs_graph(s))
    assert plain > 0.8 * sum(len(s) for s in scripts)


@pytest.mark.parametrize(("version", "checks", "expected"), [
    ("0.11.0", ["default"], True),
    ("0.10.0", ["default", "SC2034"], True),
    ("0.11.0", ["all"], False),
    ("0.11.0", ["default", "SC2086"], False),  # SC2086 vs SC2248 reads the graph
    ("0.11.0", ["SC2317"], False),
    ("0.9.0", ["default"], False),  # no --extended-analysis option
    ("0.12.0", ["default"], False),  # not read yet
    ("unknown (1, 2)", ["default"], False),
])
def test_which_selections_and_versions_are_gated(version: str, checks: list[str],
                                                 expected: bool) -> None:
    assert gated(version, checks) is expected


def test_a_directive_in_the_block_keeps_shellcheck_s_default() -> None:
    assert needs_graph("# shellcheck extended-analysis=true\necho hi\n")
    assert not needs_graph("echo hi\n")

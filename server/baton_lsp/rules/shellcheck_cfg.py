"""Whether a bash block needs ShellCheck's control-flow ("extended") analysis for the checks
Baton reports.

ShellCheck 0.10 and 0.11 build a control-flow graph of every script unless told
`--extended-analysis=false`; on command blocks that is a third of their ShellCheck time. In
0.11.0 the graph is read by only a few checks (`cfgAnalysis` in `Analytics.hs` and
`Checks/Commands.hs`): the numeric-comparison check (SC2071, SC2072, SC2073, SC2122), SC2218,
SC2318, SC2324, SC2086/SC2248, SC2317/SC2329 and SC2319/SC2320. Of those the default
selection reports SC2071, SC2072, SC2073, SC2122, SC2218, SC2318 and SC2324, and each of them
can only fire on a construct this module looks for: a `<`/`>` inside `[ ]`, a function called
before (textually) its definition, a `+=` of something unquoted, a declaring command that
reads a name it assigns. A block with none of them gives the same default findings without
the graph (`tests/rules/test_shellcheck_cfg.py` compares both ways on ShellCheck's own test
snippets and the corpus). Any other selection, an unknown ShellCheck version, or an
`extended-analysis` directive in the block keeps ShellCheck's default.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from ..lazy_pattern import LazyPattern

GATED_VERSIONS = ("0.10.", "0.11.")
"""ShellCheck releases whose control-flow users were read for this module (0.9 and older
have no `--extended-analysis` option; a newer one may read the graph in more checks)."""

UNGATED_CODES = frozenset({2086, 2248, 2317, 2329, 2319, 2320})
"""Codes that read the graph on constructs this module does not look for: selecting any of
them keeps the full analysis."""

FUNCTION_CHARS = r"[\w#:+?\-./^@,]"
"""ShellCheck's `functionChars` (Parser.hs): what a function's name may consist of."""
_COMMAND_START = r"(?:^|[;&|(){}`!]|\b(?:then|do|else|elif|if|while|until|time))[ \t]*"
"""Where a command (so a function definition) may begin: over-approximated on purpose,
matching inside strings too only means the analysis stays on."""
_DEFINITION = LazyPattern(
    _COMMAND_START + r"(?:function[ \t]+([^\s(){};&|<>]+)|([^\s(){};&|<>'\"`\\$=]+)[ \t]*\()",
    re.MULTILINE)
_RESERVED = frozenset({"for", "while", "until", "if", "select", "case", "coproc", "time",
                       "then", "do", "else", "elif", "fi", "done", "esac", "in", "function"})
_COMPARISON = LazyPattern(r"\[[^\]]*(?<![\d&<>])[<>](?![&(<>])")
"""A `<` or `>` between `[` and the next `]` that is not `2>`, `&>`, `>&`, `<(` or `>>`."""
_APPEND = LazyPattern(r"\+=(?![('\"\s]|$)", re.MULTILINE)
"""`x+=1`, `x+=$n`: an unquoted append SC2324 may take for a number."""
_DECLARING = LazyPattern(_COMMAND_START + r"(?:local|declare|export|readonly|typeset|let)[ \t]",
                        re.MULTILINE)
"""ShellCheck's `declaringCommands` (Data.hs), where SC2318 looks."""
_ASSIGNED = LazyPattern(r"([A-Za-z_]\w*)(?:\[[^\]\n]*\])?\+?=")
_ESCAPED = LazyPattern(r"\\.")
_QUOTES = LazyPattern(r"[\\'\"]")


def gated(version: str, checks: Iterable[str]) -> bool:
    """Whether blocks may be checked without the graph at all: a known ShellCheck and a
    selection whose graph readers this module covers."""
    if not version.startswith(GATED_VERSIONS):
        return False
    for name in checks:
        if name == "all":
            return False
        if name.startswith("SC") and name[2:].isdigit() and int(name[2:]) in UNGATED_CODES:
            return False
    return True


@lru_cache(maxsize=1024)
def needs_graph(script: str) -> bool:
    """Whether a reported check could read ShellCheck's control-flow graph on `script`."""
    return ("extended-analysis" in script or _COMPARISON.search(script) is not None
            or _APPEND.search(script) is not None or _declaration_reads_itself(script)
            or _called_before_defined(script))


def _declaration_reads_itself(script: str) -> bool:
    """SC2318: `local x=1 y=$x` reads `x` before this `local` has set it."""
    logical = script.replace("\\\n", "  ")
    for match in _DECLARING.finditer(logical):
        end = logical.find("\n", match.end())
        line = logical[match.end():end if end >= 0 else len(logical)]
        bare = _ESCAPED.sub("", line)
        if (bare.count('"') % 2 or bare.count("'") % 2 or bare.count("`") % 2
                or bare.count("(") != bare.count(")")):
            return True  # the command goes on past this line: assume the worst
        for assigned in _ASSIGNED.finditer(line):
            later = line[_word_end(line, assigned.end()):]
            if re.search(rf"(?<!\w){assigned.group(1)}(?!\w)", later):
                return True
    return False


def _word_end(line: str, at: int) -> int:
    """Where the shell word going on at `at` ends (quotes and `$( )` kept together): a
    declaration's own value may read the name (`PATH="$HOME/bin:$PATH"`), a later one not."""
    depth = 0
    quote = ""
    i = at
    while i < len(line):
        ch = line[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            i += 1
        elif ch in "\"`" and (not quote or quote == ch):
            quote = "" if quote else ch
        elif ch == "'" and not quote:
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif ch in " \t;&|" and not quote and not depth:
            return i
        i += 1
    return i


def _called_before_defined(script: str) -> bool:
    """SC2218: a function's name appears (unquoted, as ShellCheck reads a literal command
    name) somewhere before its last definition."""
    last: dict[str, int] = {}
    for match in _DEFINITION.finditer(script):
        group = 1 if match.group(1) else 2
        name = match.group(group)
        if name not in _RESERVED:
            last[name] = match.start(group)
    for name, at in last.items():
        before = _QUOTES.sub("", script[:at])
        if re.search(rf"(?<!{FUNCTION_CHARS}){re.escape(name)}(?!{FUNCTION_CHARS})", before):
            return True
    return False

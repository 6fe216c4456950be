"""BTN330: ShellCheck on the bash blocks of a command that are scripts, mapped back to
markdown positions, reporting by default only the checks that mean a script is broken."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from ..lazy_pattern import LazyPattern
from ..lazylog import LazyLogger
from ..model.agent import BashBlock, CommandFile
from ..model.base import Convention, Finding, Fix, Kind, Range, Severity, TextEdit
from ..parse.markdown import AuthoredFence, authored_fences
from ..parse.shell import classify, cron_line, path_list_line
from .base import NOT_CHECKED, SKIPPED_LOG, RuleContext, registered, rule
from .cache import ShellcheckResults
from .engine import will_run
from .shellcheck_cfg import gated, needs_graph
from .shellcheck_tool import (
    find_shellcheck,
    forget,
    shellcheck_version,
)

if TYPE_CHECKING:  # the runner (threads, processes, `concurrent.futures`) is imported only
    from .shellcheck_run import Options, Result  # where ShellCheck runs: not with it off

log = LazyLogger(__name__)  # not `logging`: a check that logs nothing never loads it
skipped_log = LazyLogger(SKIPPED_LOG)

LEVELS = {"error": Severity.ERROR, "warning": Severity.WARNING,
          "info": Severity.INFO, "style": Severity.INFO}

_missing_logged = False
PARSE_SUMMARIES = frozenset({1072})
"""ShellCheck's "Fix any mentioned problems and try again": a second finding for one error."""
_UNUSED_RE = LazyPattern(r"^(\w+) appears unused")

DEFAULT_CHECKS = frozenset({
    # Conditions that are constant, never match or compare the wrong way.
    2050, 2055, 2056, 2057, 2058, 2070, 2071, 2072, 2074, 2075, 2076, 2077, 2078, 2079, 2080,
    2081, 2107, 2108, 2109, 2110, 2122, 2130, 2144, 2157, 2158, 2159, 2170, 2171, 2193, 2194,
    2195, 2198, 2199, 2200, 2201, 2202, 2203, 2204, 2205, 2252, 2266,
    # Redirections and pipes that do something else than written.
    2024, 2065, 2069, 2073, 2094, 2189, 2210, 2216, 2217, 2227, 2238, 2259, 2260, 2261,
    2327, 2328,
    # Assignments, expansions and words bash reads differently.
    2036, 2037, 2041, 2049, 2051, 2054, 2066, 2068, 2082, 2083, 2084, 2085, 2088, 2097, 2098,
    2099, 2100, 2101, 2121, 2123, 2125, 2141, 2147, 2190, 2191, 2192, 2229, 2247, 2257,
    2269, 2270, 2276, 2281, 2282, 2283, 2284, 2285, 2286, 2287, 2288, 2289, 2290, 2318, 2324,
    # Commands that cannot work: misplaced builtins, bad arguments, lost control flow.
    2033, 2067, 2091, 2092, 2093, 2104, 2105, 2114, 2115, 2142, 2146, 2150, 2151, 2152,
    2165, 2167, 2168, 2182, 2183, 2211, 2213, 2214, 2215, 2218, 2221, 2222, 2224, 2225, 2226,
    2241, 2242, 2245, 2262, 2263, 2264,
})
"""SC2xxx codes reported by default: each means the script does not do what it says."""
NEVER_DEFAULT = frozenset({1090, 1091, 1008, 1071, 1104, 1113, 1114, 1115, 1128})
"""Parse-stage codes about what ShellCheck cannot follow (`source "$VAR"`), and about the
shebang: a block is handed to the Bash tool, never run as a file, so its first line is not
one (`# /continue …` is a comment)."""
_EXAMPLE_LANGS = frozenset({"markdown", "md", "mdx"})
_BLOCK_LINE_RE = LazyPattern(r"\bline (\d+)\b")
_EXPANSION_RE = LazyPattern(r"\$(?:\{[^}]*\}|[A-Za-z_]\w*|[0-9@*#?$!-])")
_REGEX_CHARS = frozenset(".[]()*+?{}|^$\\")


def _literal_membership(quoted: str) -> bool:
    """SC2076 on a quoted right-hand side of `=~` with no regex operator in its literal text
    but some literal text around its expansions (`" $1 "`): a deliberate literal substring
    test (`[[ " $DONE " =~ " $1 " ]]`, is $1 a word of the list), not a regex quoted by
    mistake. A lone `"$re"` stays reported: a quoted pattern variable is the mistake."""
    literal = _EXPANSION_RE.sub("", quoted.strip()[1:-1] if len(quoted.strip()) > 1 else "")
    return bool(literal) and not any(ch in _REGEX_CHARS for ch in literal)


def _file_lines(message: str, fence_line: int) -> str:
    """ShellCheck counts "line N" from the block's top; say the file's line instead."""
    return _BLOCK_LINE_RE.sub(lambda m: f"line {fence_line + int(m.group(1)) + 1}", message)


def selected(code: int, level: str, checks: list[str], exclude: list[str]) -> bool:
    """Whether `shellcheck-checks` / `shellcheck-exclude` report SC`code` at `level`."""
    name = f"SC{code}"
    if name in exclude:
        return False
    if "all" in checks or name in checks:
        return True
    if "default" not in checks:
        return False
    if 1000 <= code < 2000:
        return code not in NEVER_DEFAULT and level in ("error", "warning")
    return code in DEFAULT_CHECKS


def reset() -> None:
    """Forget the binary lookup and results held in memory (tests, configuration changes)."""
    global _missing_logged
    from .shellcheck_run import forget as forget_results  # only when ShellCheck runs

    forget()
    forget_results()
    _missing_logged = False


def _md_range(block: BashBlock, line: int, col: int, end_line: int, end_col: int,
              lines: list[str], removed: list[int] | None = None) -> Range:
    """json1 positions (1-based line/column, tabs count as one) → markdown Range.

    `removed[i]` is the indentation taken off content line i (see `_dedent`); it is added
    back so columns point into the markdown line.
    """
    def shift(no: int) -> int:
        return removed[no - 1] if removed and 0 < no <= len(removed) else 0

    col, end_col = col + shift(line), end_col + shift(end_line)
    start = block.start_line + line
    end = block.start_line + end_line
    if end < start or (end == start and end_col < col):
        end, end_col = start, col
    width = len(lines[start]) if start < len(lines) else col
    return Range.span(start, max(0, min(col - 1, width)), end, max(0, end_col - 1))


def _dedent(block: BashBlock, lines: list[str]) -> tuple[str, list[int]]:
    """The block as bash sees it, with the removed indentation per line.

    A fence indented inside a list item keeps that indentation on every content line, but
    CommonMark strips up to the fence's indentation from each; without that a here-document
    terminator looks indented (SC1039) when the rendered block is fine.
    """
    fence = lines[block.start_line] if block.start_line < len(lines) else ""
    indent = len(fence) - len(fence.lstrip(" "))
    content = block.content.split("\n")
    if not indent:
        return block.content, [0] * len(content)
    removed = [min(indent, len(text) - len(text.lstrip(" "))) for text in content]
    return "\n".join(t[n:] for t, n in zip(content, removed, strict=True)), removed


def _fix(comment: dict[str, Any], block: BashBlock, ctx: RuleContext,
         removed: list[int]) -> Fix | None:
    fix = comment.get("fix") or {}
    reps = fix.get("replacements") or []
    if not reps:
        return None
    edits = [
        TextEdit(path=ctx.path,
                 range=_md_range(block, r["line"], r["column"], r["endLine"], r["endColumn"],
                                 ctx.lines, removed),
                 new_text=r.get("replacement", ""))
        for r in sorted(reps, key=lambda r: (r["line"], r["column"]))
    ]
    return Fix(title=f"Apply ShellCheck's fix for SC{comment.get('code')}", edits=edits,
               safe=False)


def _used_elsewhere(var: str, doc: CommandFile, block: BashBlock, ctx: RuleContext) -> bool:
    """True when `$var` appears in the file outside `block` (a later block or a prompt)."""
    pattern = re.compile(rf"\$\{{?{re.escape(var)}\b")
    for no, line in enumerate(ctx.lines):
        if block.start_line <= no <= block.end_line:
            continue
        if pattern.search(line):
            return True
    return False


def _binary() -> str | None:
    """ShellCheck's path; its absence is logged once per process."""
    global _missing_logged
    binary = find_shellcheck()
    if binary is None and not _missing_logged:
        _missing_logged = True
        log.info("shellcheck not found on PATH or next to %s; BTN330 is skipped", sys.executable)
    return binary


def _examples(ctx: RuleContext) -> list[AuthoredFence]:
    """```markdown fences as their author nested them: a template to copy into another
    file, whose ```bash blocks this file never runs (even where a too-short outer fence lets
    CommonMark end the example early, BTN003). A bare fence is no proof: it may be a stray
    closing line."""
    outers: list[AuthoredFence] = []
    for fence in authored_fences(ctx.markdown()):
        if fence.depth == 0 and fence.end_line is not None and not fence.by_opener \
                and fence.lang in _EXAMPLE_LANGS:
            outers.append(fence)
    return outers


def _script_blocks(doc: CommandFile, ctx: RuleContext) -> list[tuple[BashBlock, str, list[int]]]:
    """The blocks BTN330 hands to ShellCheck: (block, text as bash sees it, indentation
    removed per line); zsh, empty and non-script blocks are left out (the reason logged)."""
    blocks: list[tuple[BashBlock, str, list[int]]] = []
    examples = _examples(ctx)
    for block in doc.bash_blocks:
        fence = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
        info = fence.strip().lstrip("`~").strip().split(" ", 1)[0].lower()
        if info == "zsh" or not block.content.strip():
            continue
        outer = next((e for e in examples if e.start_line < block.start_line < (
            e.end_line or 0)), None)
        if outer is not None:
            skipped_log.debug("%s:%d: BTN330 skipped bash block %d, part of the example in "
                              "the fence of line %d", ctx.path, block.start_line + 1,
                              block.index + 1, outer.start_line + 1)
            continue
        content, removed = _dedent(block, ctx.lines)
        kind = classify(content)
        if not kind.is_script:
            skipped_log.debug("%s:%d: BTN330 skipped bash block %d, not a script: %s",
                              ctx.path, block.start_line + 1, block.index + 1, kind.describe())
            continue
        blocks.append((block, content, removed))
    return blocks


def _runs(binary: str, version: str, ctx: RuleContext, scripts: list[str]
          ) -> list[tuple[Options, str]]:
    """How each script runs: a block none of the selected checks could read the control-flow
    graph on runs without it (`shellcheck_cfg`): a third less ShellCheck time, the same
    findings."""
    from .shellcheck_run import Options  # only when ShellCheck runs

    exclude = tuple(ctx.config.shellcheck_exclude)
    gate = gated(version, ctx.config.shellcheck_checks)
    return [(Options(binary, exclude, graph=not gate or needs_graph(s)), s) for s in scripts]


def _work(doc: CommandFile, ctx: RuleContext
          ) -> tuple[list[tuple[BashBlock, str, list[int]]], list[tuple[Options, str]],
                     ShellcheckResults | None, set[str]]:
    """What BTN330 hands to ShellCheck in `doc`: the blocks (see `_script_blocks`), how each
    distinct script runs, the persistent store of this ShellCheck's results, and the scripts
    past the file's limits (`shellcheck_run.file_limits`), not run; nothing when ShellCheck
    is off or not installed."""
    if ctx.config.shellcheck == "off" or not doc.bash_blocks:
        return [], [], None, set()
    binary = _binary()
    if binary is None:
        return [], [], None, set()
    from .shellcheck_run import file_limits  # only when ShellCheck runs

    blocks = _script_blocks(doc, ctx)
    scripts = list(dict.fromkeys(content + "\n" for _, content, _ in blocks))  # once each
    over = file_limits(scripts)
    scripts = [s for s in scripts if s not in over]
    if not scripts:
        return blocks, [], None, over
    version = shellcheck_version(binary)
    store = ctx.results.shellcheck(version) if ctx.results is not None else None
    return blocks, _runs(binary, version, ctx, scripts), store, over


def prefetch(files: Iterable[tuple[Any, RuleContext]]) -> None:
    """Start ShellCheck now, in the background, on every block BTN330 will ask for in
    `files` (parsed documents and the contexts their rules will run in; give the largest
    first): each file's blocks go to one process as soon as they are known (more for a
    file past `shellcheck_run.BATCH_CHARS`), so the first run while the next file is read,
    and the rule then finds the results ready or running."""
    this = registered("BTN330")  # defined below: no need to load every rule module first
    binary = _binary()
    if binary is not None:  # its `--version` (a process start) runs while the first is read
        threading.Thread(target=shellcheck_version, args=(binary,), daemon=True,
                         name="baton-shellcheck-version").start()
    for doc, ctx in files:
        if isinstance(doc, CommandFile) and doc.bash_blocks and this is not None \
                and will_run(this, doc, ctx):
            _, runs, store, _ = _work(doc, ctx)
            if runs:
                from .shellcheck_run import submit  # only when ShellCheck runs

                submit(runs, store, spread=1)


@rule("BTN330", "bash-shellcheck", Severity.WARNING, (Kind.COMMAND, Kind.OPENCODE_COMMAND),
      fixable=True,
      convention=Convention.SCRIPT_BLOCKS, everywhere=lambda config: config.shellcheck == "all")
def shellcheck(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """ShellCheck finds a bug in a bash block that is a script (`SCxxxx: ...`).

    Claude Code runs a command's ```bash blocks through its Bash tool (OpenCode, an OpenCode
    command's, through its `bash` tool), so a block that cannot parse or that tests the
    wrong thing fails in the middle of a workflow. Each block is
    checked alone with `--shell=bash`; severities follow ShellCheck (error → error, warning →
    warning, info/style → info).

    By default (`shellcheck = "auto"`) only commands whose blocks are scripts run as written
    are checked: blocks that call the seeds' state library (`append_workflow_state`,
    `STATE_FILE`) or `source` a library of the project (`source .claude/lib/x.sh`, in an
    OpenCode command `source .opencode/…`). In other
    trees a ```bash fence is as often an example, a template or instructions as a script,
    and ShellCheck's findings there were mostly wrong; `shellcheck = "all"` (or
    `baton check --shellcheck all`) checks every command, `shellcheck = "off"` none.

    Only scripts are checked. A block is skipped (the reason is logged; `baton check -v`
    prints it) when it is a template (`{placeholder}`, `<file>` or `[OPTIONS]` in unquoted
    code, a `/slash-command` usage line, an `...` line), pseudo-code (a `# Pseudo-code` or
    leading `# Example` comment, `def f():` / `if x:` lines, a `Task {` tool call, an
    upper-case `IF ... :` line, an `→` outside quotes), a terminal transcript (`$ cmd` prompt
    lines, or printed output such as `PASS src/a.test.ts`, `✓ works (2 ms)` or a `---|---`
    table rule), a list of paths and globs, or a loop body shown alone (`continue`/`break`
    outside any loop), or part of a ```markdown example its author nested it in (a template
    for another file, even where the example's outer fence is too short and BTN003 says
    so). `zsh` fences are not checked. A fence indented inside a list item is
    checked as rendered: CommonMark strips the fence's indentation from each line.

    Only checks that mean a script is broken are reported by default
    (`shellcheck-checks = ["default"]`): parse errors and parse warnings (SC1xxx, except
    SC1090/SC1091 about `source` paths ShellCheck cannot follow), and a curated set of
    SC2xxx bugs, e.g. constant or wrong comparisons (SC2071 `>` in `[ ]`, SC2076 a quoted
    regex, but not a quoted literal such as the membership test `" $1 "`, SC2078,
    SC2157, SC2193-SC2195, SC2199), redirections that do something else (SC2069, SC2210,
    SC2024), words bash reads differently (SC2068, SC2088 `"~/x"`, SC2247, SC2283 `a = b`)
    and commands that cannot work (SC2168 `local` outside a function, SC2218 a function
    called before it is defined, SC2242 `exit -1`, SC2115 `rm -rf "$dir/"*`); the full list
    is `DEFAULT_CHECKS` in `rules/command_shellcheck.py`. Style and robustness advice is
    opt-in because on command blocks it was mostly wrong: SC2086/SC2046 quoting, SC2012
    `ls`, SC2162 `read -r`, SC2034 unused (values persisted for later blocks), SC2153/SC2154
    (variables from a sourced library or the state file), SC2181 (the deliberate "run, then
    read `$?`" idiom), SC2016 (`$` in a single-quoted sed pattern), SC2005, SC2102, SC2145.
    Turn them on with `shellcheck-checks = ["default", "SC2086"]` or `["all"]`; codes in
    `shellcheck-exclude` (default SC1090, SC1091, SC2154) are never reported. SC2034 is still
    dropped when the variable is used elsewhere in the file (a later block, a Task prompt).

    Work is bounded on any input, by limits that count work, not wall time, so the same file
    gives the same findings on an idle and on a busy machine: a block over 100,000
    characters, or one that nests unclosed `(`/`[` more than 16 deep (ShellCheck's parser
    backtracks on those for minutes), is not handed to ShellCheck; only the first 64 script
    blocks and 256,000 characters of script of a file are; and each ShellCheck process may
    use 5 s of CPU time (a real block takes 10-50 ms). Such a block is reported on its fence,
    "bash block N was not checked by ShellCheck", with the reason, as information whatever
    severity BTN330 is given: it never fails a check.

    Fix: follow the ShellCheck wiki page (https://www.shellcheck.net/wiki/SCxxxx); where
    ShellCheck proposes an edit it is offered as a quick fix. Mark an illustrative block
    `# Pseudo-code`, or disable the rule with `shellcheck = "off"`.

    Reported:

        ==> .claude/commands/prune.md <==
        ---
        description: Prune old reports
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        COUNT=$(find specs -name '*.md' | wc -l)
        if [ "$COUNT" > 100 ]; then
          echo "too many reports: $COUNT"
        fi
        append_workflow_state "REPORT_COUNT" "$COUNT"
        ```

    Not reported (no block calls a project library, and `shellcheck` is the default `auto`):

        ==> .claude/commands/prune.md <==
        ---
        description: Prune old reports
        ---
        ```bash
        COUNT=$(find specs -name '*.md' | wc -l)
        if [ "$COUNT" > 100 ]; then
          echo "too many reports: $COUNT"
        fi
        ```

    Not reported (blocks of such a command that are not scripts):

        ==> .claude/commands/prune.md <==
        ---
        description: Prune old reports
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        append_workflow_state "PRUNE_STARTED" "true"
        ```

        ```bash
        # Pseudo-code: the agent decides how to prune
        for report in reports:
            if report.age > 30:
                archive(report)
        ```

        Usage:

        ```bash
        /prune [OPTIONS] <topic-dir>
        ```

        ```bash
        $ ls specs/reports
        001_auth.md  002_cache.md
        ```

        ```bash
        npm test

        PASS src/plan.test.ts
          ✓ parses a plan (3 ms)
        ```

        ```bash
        cd "$REPORTS_DIR"
        echo $COUNT
        ```
    """
    blocks, runs, store, over = _work(doc, ctx)
    results: dict[str, Result] = {}
    if runs or over:  # ShellCheck ran, or would have
        from .shellcheck_run import FILE_LIMIT, run_many  # only when ShellCheck runs

        found = run_many(runs, store) if runs else {}
        results = {script: found[(options, script)] for options, script in runs}
        results.update(dict.fromkeys(over, FILE_LIMIT))
    checks = list(ctx.config.shellcheck_checks)
    exclude = list(ctx.config.shellcheck_exclude)
    for block, content, removed in blocks:
        comments = results[content + "\n"]
        if isinstance(comments, str):
            fence = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
            finding = ctx.finding(
                Range.of_line(block.start_line, 0, len(fence)),
                f"bash block {block.index + 1} was not checked by ShellCheck: {comments}",
                tags=[NOT_CHECKED])
            finding.severity = Severity.INFO  # never more, whatever BTN330's severity
            yield finding
            continue
        block_lines = content.split("\n") if comments else []
        parse_errors = any(isinstance(c.get("code"), int) and 1000 <= c["code"] < 2000
                           and c["code"] not in PARSE_SUMMARIES for c in comments)
        # SC2221 + SC2222 on one line: two patterns of the same `case` branch overlap, which
        # changes nothing (`*"API"*|*"FastAPI"*)`); across branches it is a real shadowing.
        overlap_lines = {c.get("line") for c in comments if c.get("code") == 2221} & \
            {c.get("line") for c in comments if c.get("code") == 2222}
        for c in comments:
            code = c.get("code")
            if code in PARSE_SUMMARIES and parse_errors:
                continue  # "fix any mentioned problems": the parse error itself is reported
            if code in (2221, 2222) and c.get("line") in overlap_lines:
                continue
            at = int(c.get("line", 1)) - 1
            if 0 <= at < len(block_lines) and (path_list_line(block_lines[at])
                                               or cron_line(block_lines[at])):
                continue  # `CLAUDE.md .claude/**/*.md` under `# Scan patterns`; a crontab line
            level = str(c.get("level"))
            if not isinstance(code, int) or not selected(code, level, checks, exclude):
                continue
            if code == 2076 and 0 <= at < len(block_lines) and _literal_membership(
                    block_lines[at][int(c.get("column", 1)) - 1:int(c.get("endColumn", 1)) - 1]):
                continue
            message = _file_lines(str(c.get("message", "")).strip(), block.start_line)
            if code == 2034:
                m = _UNUSED_RE.match(message)
                if m and _used_elsewhere(m.group(1), doc, block, ctx):
                    continue
            rng = _md_range(block, int(c.get("line", 1)), int(c.get("column", 1)),
                            int(c["endLine"] if "endLine" in c else c.get("line", 1)),
                            int(c["endColumn"] if "endColumn" in c else c.get("column", 1)),
                            ctx.lines, removed)
            finding = ctx.finding(rng, f"SC{code}: {message}", fix=_fix(c, block, ctx, removed),
                                  tags=[f"SC{code}"])
            finding.severity = LEVELS.get(level, Severity.WARNING)
            yield finding

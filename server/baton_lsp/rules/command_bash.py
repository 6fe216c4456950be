"""BTN32x: the bash-block pitfalls of command files (formats.md §3.3).

Every ```bash fence of a command runs in a new bash process, so anything a block computes
from its own process (`$$`, traps, unexported variables) is gone in the next one. The rules
here read each block with the small lexer of `parse.shell` that knows quoting, comments and
here-documents; that is enough to be precise without a full bash parser. Rules about the
seeds' multi-block state conventions (state files, `append_workflow_state`) run only on
commands that use the state library (workflow-bash); the others apply to every command.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath

from ..lazy_pattern import LazyPattern
from ..model.agent import BashBlock, CommandFile
from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..parse.shell import (
    CODE,
    COMMENT,
    DQ,
    ESC,
    HEREDOC,
    HEREDOC_QUOTED,
    SQ,
    BashLine,
    classify,
    lex_bash,
    lexed,
)
from ..runs import confine
from .base import RuleContext, rule

__all__ = ["CODE", "COMMENT", "DQ", "ESC", "HEREDOC", "HEREDOC_QUOTED", "SQ", "BashLine",
           "history_bangs", "lex_bash"]

COMMAND = (Kind.COMMAND,)
WORKFLOW = Convention.WORKFLOW_BASH
GENERIC = Convention.CLAUDE_CODE

def _md_line(block: BashBlock, i: int) -> int:
    """Markdown line of the block's i-th content line."""
    return block.start_line + 1 + i


def _fence_lang(ctx: RuleContext, block: BashBlock) -> str:
    line = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
    info = line.strip().lstrip("`~").strip()
    return info.split(" ", 1)[0].lower() if info else ""


def _lexed(ctx: RuleContext, doc: CommandFile) -> list[tuple[BashBlock, list[BashLine]]]:
    """Lexed bash blocks (zsh fences are skipped: zsh quoting and expansion differ).

    Several rules read the same blocks, so lexing is cached by block content.
    """
    return [(b, list(lexed(b.content))) for b in doc.bash_blocks
            if _fence_lang(ctx, b) != "zsh"]


# -- BTN320: $$ across blocks ----------------------------------------------------------------

_ASSIGN_RE = re.compile(
    r"(?<![^\s;&|(`{])"
    r"(?:(?:export|local|declare|typeset|readonly)\s+(?:-[A-Za-z]+\s+)*)?"
    r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]=]*\])?\+?="
)
_READ_RE = re.compile(r"(?<![^\s;&|(])(?:read|mapfile|readarray)\b([^;&|#]*)")
_FOR_RE = re.compile(r"(?<![^\s;&|(])for\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b")
_RESTORE_RE = re.compile(
    r"(?<![^\s;&|(])(?:(?:source|\.)\s+(\S+)|load_workflow_state\b|eval\s)"
)
_RESTORE_WORD_RE = re.compile(r"source|\.\s|load_workflow_state|eval")
"""What `_RESTORE_RE` must find at its match: a line without it needs no try of that
pattern, whose look-behind start is tried at every character (most lines restore nothing)."""
_PREV_ASSIGN_RE = re.compile(r"(?:^|\s)[A-Za-z_]\w*=\S*$")
_COMMAND_WORDS = ("then", "do", "else", "!", "time")


def _command_position(text: str, start: int) -> bool:
    """True when `start` begins a command word (so `X=1` is an assignment, not an argument)."""
    prefix = text[:start].rstrip()
    if not prefix or prefix[-1] in ";&|({`":
        return True
    if prefix.endswith(_COMMAND_WORDS) and (
            len(prefix.split()[-1]) == len(prefix) or prefix.split()[-1] in _COMMAND_WORDS):
        return True
    return bool(_PREV_ASSIGN_RE.search(prefix))


_USE_RE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)|([A-Za-z_][A-Za-z0-9_]*))")


@dataclass(slots=True)
class _Assign:
    var: str
    line: int
    col: int
    end: int
    value: str
    pid: bool


@dataclass(slots=True)
class _BlockVars:
    assigns: list[_Assign] = field(default_factory=list)
    defines: dict[str, int] = field(default_factory=dict)
    """Variable → first block line where it gets a value (assignment, read, for)."""
    restore_line: int | None = None
    """First line that may restore saved state (`source <state file>`, load_workflow_state)."""
    uses: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    """Variable → (line, start col, end col) of its first expansion in the block."""


_VALUE_STOP_RE = re.compile(r"[ \t;&|(){}]")
"""The characters that can end an assignment's value or nest in it (besides a comment)."""


def _value_end(line: BashLine, start: int) -> int:
    """End of an assignment's value: the first unquoted blank or operator outside $( ) / ${ }.

    Only the characters that can end or nest are visited, up to the comment if any: a value
    is mostly characters that do neither."""
    depth = 0
    text, classes = line.text, line.classes
    stop = classes.find(COMMENT, start)
    if stop < 0:
        stop = max(len(text), start)
    for m in _VALUE_STOP_RE.finditer(text, start, stop):
        i = m.start()
        if classes[i] != CODE:
            continue
        ch = text[i]
        if ch in "({":
            depth += 1
        elif ch in ")}":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0:
            return i
    return stop


def _has_pid(line: BashLine, start: int, end: int) -> bool:
    text = line.text
    i = text.find("$$", start, end)
    while i >= 0:
        if line.expands(i) and (i + 2 >= len(text) or text[i + 2] != "$"):
            return True
        i = text.find("$$", i + 2, end)
    return False


def _block_vars(lines: list[BashLine]) -> _BlockVars:
    info = _BlockVars()
    pid_vars: set[str] = set()
    for no, line in enumerate(lines):
        text = line.text
        if not text.strip() or line.classes[:1] in (HEREDOC, HEREDOC_QUOTED):
            if line.classes[:1] == HEREDOC:
                _record_uses(info, no, line)
            continue
        for m in _ASSIGN_RE.finditer(text) if "=" in text else ():
            if not line.is_code(m.start()) or not _command_position(text, m.start()):
                continue
            end = _value_end(line, m.end())
            value = text[m.end():end]
            derived = _has_pid(line, m.end(), end) or any(
                (u.group(1) or u.group(2)) in pid_vars for u in _USE_RE.finditer(value))
            var = m.group(1)
            info.assigns.append(_Assign(var, no, m.start(1), m.end(1), value, derived))
            info.defines.setdefault(var, no)
            if derived:
                pid_vars.add(var)
            else:
                pid_vars.discard(var)
        for m in _READ_RE.finditer(text) if "read" in text or "mapfile" in text else ():
            if line.is_code(m.start()) and _command_position(text, m.start()):
                for word in re.findall(r"(?<![-\w$])([A-Za-z_][A-Za-z0-9_]*)", m.group(1)):
                    info.defines.setdefault(word, no)
        for m in _FOR_RE.finditer(text) if "for" in text else ():
            if line.is_code(m.start()) and _command_position(text, m.start()):
                info.defines.setdefault(m.group(1), no)
        if info.restore_line is None and _RESTORE_WORD_RE.search(text):
            for m in _RESTORE_RE.finditer(text):
                if not line.is_code(m.start()) or not _command_position(text, m.start()):
                    continue
                if m.group(1) is not None and "/lib/" in m.group(1):
                    continue  # a library load, not a state restore
                info.restore_line = no
                break
        if "$" in text:
            _record_uses(info, no, line)
    return info


@lru_cache(maxsize=1024)
def _vars_of(content: str) -> _BlockVars:
    """`_block_vars` of a block, remembered by content like `lexed`: BTN318 and BTN320 read
    the same blocks. Shared by both, so read only."""
    return _block_vars(list(lexed(content)))


_EXPANDS = (CODE, DQ, HEREDOC)
"""The classes `BashLine.expands` is true of, read inline where every `$` of a block is."""


def _record_uses(info: _BlockVars, no: int, line: BashLine) -> None:
    text, classes, uses = line.text, line.classes, info.uses
    for m in _USE_RE.finditer(text):
        start = m.start()
        if classes[start] not in _EXPANDS or (start > 0 and text[start - 1] == "\\"):
            continue
        var = m.group(1) or m.group(2)
        if var not in uses:
            uses[var] = (no, start, m.end())


@rule("BTN320", "bash-pid-across-blocks", Severity.WARNING, COMMAND, convention=WORKFLOW)
def pid_across_blocks(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A value built from `$$` in one bash block is used in a later block.

    Each bash fence of a command runs in a new shell process, so `$$` differs from block to
    block and variables do not survive between them. A workflow id or state-file path built
    as `coordinate_$$` in block 1 is empty in block 2 (and recomputing it there gives another
    number), so block 2 reads or writes the wrong state file. The repository's own
    `state-persistence.sh` documents this `coordinate_$$` pattern as an example, and it is
    unsafe across blocks (formats.md §3.3).

    A later block counts as recomputing the variable when it assigns it (`VAR=...`, `read`,
    `for`) before the use, or first restores saved state (`source` of a non-library file,
    `load_workflow_state`, `eval`).

    Fix: build the id once from something stable (`date +%s%N`, the arguments), persist it to
    a state-ID file such as `${CLAUDE_PROJECT_DIR}/.claude/tmp/<command>_state_id.txt`, and
    read it back at the top of every later block.

    Reported:

        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        WORKFLOW_ID="build_$$"
        STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_${WORKFLOW_ID}.sh"
        ```

        Then:

        ```bash
        source "$STATE_FILE"
        append_workflow_state "PHASE" "2"
        ```

    Not reported:

        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        WORKFLOW_ID="build_$(date +%s%N)"
        echo "$WORKFLOW_ID" > "${CLAUDE_PROJECT_DIR}/.claude/tmp/build_state_id.txt"
        ```

        Then:

        ```bash
        WORKFLOW_ID=$(cat "${CLAUDE_PROJECT_DIR}/.claude/tmp/build_state_id.txt")
        STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_${WORKFLOW_ID}.sh"
        source "$STATE_FILE"
        ```
    """
    origins: dict[str, tuple[BashBlock, _Assign]] = {}
    later: dict[tuple[int, int],
               tuple[str, BashBlock, _Assign, list[tuple[BashBlock, tuple[int, int, int]]]]]
    later = {}
    for block, _lines in _lexed(ctx, doc):
        if not origins and "$$" not in block.content:
            continue  # nothing to follow yet, and no value built from `$$` here
        info = _vars_of(block.content)
        for var, (origin_block, origin) in origins.items():
            use = info.uses.get(var)
            if use is None:
                continue
            line = use[0]
            defined = info.defines.get(var)
            if defined is not None and defined <= line:
                continue
            if info.restore_line is not None and info.restore_line < line:
                continue
            entry = later.setdefault((id(origin_block), id(origin)),  # two equal blocks
                                  (var, origin_block, origin, []))  # share an origin
            entry[3].append((block, use))
        for a in info.assigns:
            if a.pid:
                origins[a.var] = (block, a)
            else:
                origins.pop(a.var, None)
    for var, block, a, uses in later.values():
        first_block, first_use = uses[0]
        use_line = _md_line(first_block, first_use[0])
        related = [
            Related(path=ctx.path,
                    range=Range.of_line(_md_line(b, u[0]), u[1], u[2]),
                    message=f"`{var}` used here in bash block {b.index + 1} without being "
                            f"recomputed")
            for b, u in uses
        ]
        yield ctx.finding(
            Range.of_line(_md_line(block, a.line), a.col, a.end),
            f"`{var}` is built from `$$` in bash block {block.index + 1} and used in block "
            f"{first_block.index + 1} (line {use_line + 1}) without being recomputed: each block "
            f"is a new shell, so it is empty there and `$$` differs; expected the value to be "
            f"persisted (e.g. a state-ID file) and read back",
            related=related,
        )


# -- BTN321: history expansion ----------------------------------------------------------------

_SET_PLUS_H_RE = re.compile(
    r"(?:^|[\s;&|(])set\s+(?:[-+][A-Za-z]*\s+)*?(?:\+[A-Za-z]*H[A-Za-z]*\b|\+o\s+histexpand\b)"
)
_NO_EXPAND_NEXT = frozenset(" \t\r=")


def history_bangs(line: BashLine) -> list[int]:
    """Columns of `!` characters bash history expansion would act on (bash 5 rules).

    Not expanded: inside single quotes, after a backslash, in comments and here-documents,
    before a blank, `=` or end of line, before the closing `"` of a double-quoted string,
    `$!`, `${!name}`, `[!...]` and `!(...)` patterns.
    """
    text, classes = line.text, line.classes
    out: list[int] = []
    start = text.find("!")
    while start >= 0:
        i = start
        start = text.find("!", i + 1)
        cls = classes[i]
        if cls not in (CODE, DQ):
            continue
        nxt = text[i + 1] if i + 1 < len(text) else ""
        prev = text[i - 1] if i > 0 else ""
        if not nxt or nxt in _NO_EXPAND_NEXT:
            continue
        if cls == DQ and nxt == '"':
            continue
        if prev == "$":
            continue
        if prev == "{" and i > 1 and text[i - 2] == "$" and "}" in text[i + 1:]:
            continue
        if prev == "[" and "]" in text[i + 1:]:
            continue
        if nxt == "(" and ")" in text[i + 2:]:
            continue
        out.append(i)
    return out


def _set_plus_h_line(lines: list[BashLine]) -> int | None:
    for no, line in enumerate(lines):
        if "set" not in line.text:
            continue
        for m in _SET_PLUS_H_RE.finditer(line.text):
            pos = line.text.index("set", m.start())
            if line.is_code(pos):
                return no
    return None


@rule("BTN321", "bash-history-expansion", Severity.WARNING, COMMAND, fixable=True,
      convention=Convention.WORKFLOW_BASH)
def history_expansion(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A `!` that bash history expansion would rewrite, in a block without `set +H`.

    When history expansion is on, bash replaces `!word`, `!!`, `!$`, `!/`… before the line
    runs, even inside double quotes: `echo "Failed!retry"` becomes `event not found` and the
    block stops. The seeds' orchestration tree met this in Claude Code's Bash tool
    preprocessing and made `set +H` at the top of every block its convention (formats.md
    §3.3, `.claude/commands/errors.md`); it applies to commands that use that tree's state
    library. Elsewhere bash runs non-interactively, with history expansion off, and nothing
    is reported.

    Only positions bash would really expand are reported. `[ ! -f x ]`, `if ! cmd`, `!=`,
    `"done!"`, `$!`, `${!var}`, `#!`, `[!a]`, `!(glob)` and `!` inside single quotes,
    comments or here-documents are left alone: bash never expands a `!` followed by a blank,
    `=`, end of line or a closing double quote. (Claude Code's Bash tool has had a separate
    bug that backslash-escapes `!` itself; `set +H` does not help against that one.)

    Fix: put `set +H` on the first line of the block (quick fix), or single-quote the text.

    Reported:

        ==> .claude/commands/deploy.md <==
        ---
        description: Deploy
        ---
        ```bash
        load_workflow_state "$WORKFLOW_ID"
        echo "Deploy failed!retry with --force"
        ```

    Not reported:

        ==> .claude/commands/deploy.md <==
        ---
        description: Deploy
        ---
        ```bash
        load_workflow_state "$WORKFLOW_ID"
        if [ ! -f build.log ]; then
          echo "Deploy done!"
        fi
        ```
    """
    for block, lines in _lexed(ctx, doc):
        guard = _set_plus_h_line(lines)
        hits: list[tuple[int, int]] = []
        for no, line in enumerate(lines):
            if guard is not None and no > guard:
                break
            if "!" in line.text:
                hits.extend((no, col) for col in history_bangs(line))
        if not hits:
            continue
        no, col = hits[0]
        line_text = lines[no].text
        word = re.match(r"![^\s\"'`;|&)]*", line_text[col:])
        shown = word.group(0) if word else "!"
        first = block.first_content_line
        insert_at = first
        indent = ""
        if lines:
            if lines[0].text.lstrip().startswith("#!"):
                insert_at += 1
            fence = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
            indent = fence[: len(fence) - len(fence.lstrip())]
        fix = ctx.fix("Add `set +H` at the top of the bash block",
                      ctx.edit(Range.of_line(insert_at),
                               f"{indent}set +H  # disable history expansion\n"))
        more = f" (and {len(hits) - 1} more in this block)" if len(hits) > 1 else ""
        related = [Related(path=ctx.path, range=Range.of_line(_md_line(block, n), c, c + 1),
                           message="another `!` history expansion would rewrite")
                   for n, c in hits[1:]]
        where = "before it" if guard is None else f"before line {_md_line(block, guard) + 1}"
        yield ctx.finding(
            Range.of_line(_md_line(block, no), col, col + len(shown)),
            f"`{shown}` in bash block {block.index + 1} would be rewritten by history expansion"
            f"{more}: expected `set +H` at the top of the block, found none {where}",
            fix=fix, related=related,
        )


# -- BTN322: EXIT traps deleting state -------------------------------------------------------

_TRAP_RE = re.compile(
    r"(?:^|[\s;&|(])trap\s+(?:--\s+)?(?:'([^']*)'|\"((?:[^\"\\]|\\.)*)\"|([A-Za-z_][\w:-]*))"
    r"((?:\s+[A-Za-z0-9_+-]+)+)"
)
_DELETE_RE = LazyPattern(r"(?:^|[\s;&|({`])(?:rm|unlink|shred)\b|-delete\b")
_STATEISH_RE = LazyPattern(r"state|workflow|checkpoint|\.claude/tmp|_id\b", re.IGNORECASE)


def _function_body(lines: list[BashLine], name: str) -> str | None:
    head = re.compile(rf"^\s*(?:function\s+)?{re.escape(name)}\s*(?:\(\s*\))?\s*\{{?\s*$"
                      rf"|^\s*(?:function\s+)?{re.escape(name)}\s*\(\s*\)\s*\{{(.*)\}}\s*;?\s*$")
    for no, line in enumerate(lines):
        m = head.match(line.text)
        if not m:
            continue
        if m.group(1) is not None:
            return m.group(1)
        body: list[str] = []
        for later in lines[no + 1:]:
            if later.text.strip() in ("}", "};"):
                return "\n".join(body)
            body.append(later.text)
        return "\n".join(body)
    return None


@rule("BTN322", "bash-exit-trap-deletes-state", Severity.WARNING, COMMAND, convention=WORKFLOW)
def exit_trap_deletes_state(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """An EXIT trap deletes state or temp files that a later bash block still needs.

    A block's EXIT trap fires when that block's shell ends, not when the command ends. A
    `trap 'rm -f "$STATE_FILE"' EXIT` in block 1 therefore deletes the state file before block
    2 can load it; `state-persistence.sh` deliberately sets no cleanup trap for this reason
    (formats.md §3.3). Reported when a later block exists and the trap removes something that
    looks like workflow state (state, workflow, checkpoint, `.claude/tmp`, `*_ID` names) or a
    variable/path a later block also refers to. Traps in the last block are fine.

    Fix: drop the trap and delete state files explicitly at the end of the last block.

    Reported:

        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_build.sh"
        trap 'rm -f "$STATE_FILE"' EXIT
        ```

        Then:

        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_build.sh"
        ```

    Not reported:

        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_build.sh"
        TMP=$(mktemp)
        trap 'rm -f "$TMP"' EXIT
        ```

        Then:

        ```bash
        source "$STATE_FILE"
        rm -f "$STATE_FILE"
        ```
    """
    blocks = _lexed(ctx, doc)
    for pos, (block, lines) in enumerate(blocks):
        rest = blocks[pos + 1:]
        if not rest:
            break
        later_text = "\n".join(b.content for b, _ in rest)
        for no, line in enumerate(lines):
            if "trap" not in line.text:
                continue
            for m in _TRAP_RE.finditer(line.text):
                start = line.text.index("trap", m.start())
                if not line.is_code(start):
                    continue
                signals = {s.upper().removeprefix("SIG") for s in m.group(4).split()}
                if not signals & {"EXIT", "0"}:
                    continue
                handler = m.group(1) if m.group(1) is not None else m.group(2)
                if handler is None:
                    handler = _function_body(lines, m.group(3)) or ""
                if not _DELETE_RE.search(handler):
                    continue
                shared = sorted({v for v in re.findall(r"\$\{?([A-Za-z_]\w*)", handler)
                                 if re.search(rf"\$\{{?{v}\b", later_text)})
                if not shared and not _STATEISH_RE.search(handler):
                    continue
                what = (", ".join(f"`${v}`" for v in shared) if shared
                        else "workflow state/temp files")
                yield ctx.finding(
                    Range.of_line(_md_line(block, no), start, m.end()),
                    f"EXIT trap in bash block {block.index + 1} deletes {what}, but the trap "
                    f"fires when this block's shell exits, before block {rest[0][0].index + 1} "
                    f"runs: expected no cleanup trap before the last block",
                )


# -- BTN323: state under $HOME ---------------------------------------------------------------

_HOME_STATE_RE = re.compile(
    r"(\$\{HOME\}|\$HOME\b|~)(?=/\.claude/(?:tmp|data|state|specs|checkpoints|logs)\b)"
)


@rule("BTN323", "bash-home-state-path", Severity.WARNING, COMMAND, fixable=True,
      convention=WORKFLOW)
def home_state_path(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """State or temp files are written under `$HOME/.claude/` instead of the project.

    Workflow state belongs to the project: `state-persistence.sh` builds state paths from
    `CLAUDE_PROJECT_DIR` and rejects a `HOME`-based path with "PATH MISMATCH"
    (`validate_state_file_path`). Files under `~/.claude/tmp` are shared by every project on
    the machine, so two projects running the same command overwrite or pick up each other's
    state (`ls -t` recovery picks the newest file of any project). `.claude/commands/errors.md`
    still writes its temp state there (formats.md §3.3).

    The seeds and this rule: seed 000 fixes the `$$` pitfall (its issue 1) with fixed-name
    files such as `${HOME}/.claude/tmp/coordinate_workflow_desc.txt` and
    `coordinate_state_id.txt`, while its state file stays at
    `${CLAUDE_PROJECT_DIR}/.claude/tmp/workflow_<id>.sh`. The rule keeps the seeds' fix - a
    fixed semantic name, written once and read back in every block - and differs only in
    the folder: under `$HOME` one project's `/coordinate` overwrites another's id file, and
    the seeds' own clean-up (`rm -f ~/.claude/tmp/coordinate_*`, seed 000 risk 5) removes
    every project's. The message says so for `.claude/tmp` files.

    Fix: use `${CLAUDE_PROJECT_DIR}/.claude/tmp/...` with the same file name (quick fix);
    make sure the block detects `CLAUDE_PROJECT_DIR` first, and update prompts that pass the
    same path to agents.

    Reported:

        ==> .claude/commands/errors.md <==
        ---
        description: Show errors
        ---
        ```bash
        STATE_FILE="${HOME}/.claude/tmp/errors_state.sh"
        echo "export QUERY=\"$1\"" > "$STATE_FILE"
        ```

    Not reported:

        ==> .claude/commands/errors.md <==
        ---
        description: Show errors
        ---
        ```bash
        STATE_FILE="${CLAUDE_PROJECT_DIR}/.claude/tmp/errors_state.sh"
        cp "${HOME}/.claude/settings.json" "${CLAUDE_PROJECT_DIR}/.claude/tmp/"
        echo "export QUERY=\"$1\"" > "$STATE_FILE"
        ```
    """
    seen: dict[str, list[Range]] = {}
    for _block, lines in _lexed(ctx, doc):
        for no, line in enumerate(lines):
            text = line.text
            if ".claude/" not in text:
                continue
            for m in _HOME_STATE_RE.finditer(text):
                cls = line.classes[m.start()]
                if m.group(1) == "~":
                    if cls != CODE or (m.start() > 0 and text[m.start() - 1] not in " \t=:("):
                        continue
                elif cls not in (CODE, DQ, HEREDOC):
                    continue
                tail = re.match(r"/\.claude/[\w.-]+", text[m.end():])
                path = m.group(1) + (tail.group(0) if tail else "/.claude")
                seen.setdefault(path, []).append(
                    Range.of_line(_md_line(_block, no), m.start(), m.end()))
    for path, ranges in seen.items():
        fix = ctx.fix("Use ${CLAUDE_PROJECT_DIR} instead of $HOME"
                      + (f" ({len(ranges)} places)" if len(ranges) > 1 else ""),
                      *(ctx.edit(r, "${CLAUDE_PROJECT_DIR}") for r in ranges), safe=False)
        related = [Related(path=ctx.path, range=r, message=f"`{path}` used here too")
                   for r in ranges[1:]]
        more = f" (and {len(ranges) - 1} more lines)" if len(ranges) > 1 else ""
        if path.endswith("/.claude/tmp"):
            yield ctx.finding(
                ranges[0],
                f"state path `{path}` is under the user's home directory{more}: seed 000 "
                f"keeps its fixed-name files there (its fix for `$$`), but every project on "
                f"the machine shares them, so two projects running this command overwrite "
                f"each other's; expected the same fixed names under "
                f"`${{CLAUDE_PROJECT_DIR}}/.claude/tmp/`, where the seeds keep the state file "
                f"itself (`workflow_<id>.sh`)",
                fix=fix, related=related,
            )
            continue
        yield ctx.finding(
            ranges[0],
            f"state path `{path}` is under the user's home directory{more}: expected "
            f"`${{CLAUDE_PROJECT_DIR}}/.claude/...` so state stays with the project",
            fix=fix, related=related,
        )


# -- BTN324 / BTN325: block size and fences ---------------------------------------------------


@rule("BTN324", "bash-block-too-long", Severity.WARNING, COMMAND, convention=GENERIC)
def block_too_long(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A bash block is longer than `bash-block-max-lines` (default 400).

    The model copies each block into one Bash tool call. Very long blocks are where the
    repository saw blocks mis-transformed (quotes or lines dropped) and they are hard to
    resume after a failure; the repository targets fewer than 300 lines per block
    (formats.md §3.3).

    Fix: split the block at a natural step boundary, persisting the variables the next block
    needs, or raise `bash-block-max-lines` in `[tool.baton]`.

    Reported:

        ==> .claude/baton.toml <==
        bash-block-max-lines = 3

        ==> .claude/commands/setup.md <==
        ---
        description: Setup
        ---
        ```bash
        mkdir -p build
        cd build
        cmake ..
        make
        ```

    Not reported:

        ==> .claude/baton.toml <==
        bash-block-max-lines = 3

        ==> .claude/commands/setup.md <==
        ---
        description: Setup
        ---
        ```bash
        mkdir -p build
        cmake -S . -B build
        ```

        Then:

        ```bash
        make -C build
        ```
    """
    limit = ctx.config.bash_block_max_lines
    for block in doc.bash_blocks:
        count = len(block.content.split("\n")) if block.content else 0
        if count <= limit:
            continue
        line = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
        yield ctx.finding(Range.of_line(block.start_line, 0, len(line)),
                          f"bash block {block.index + 1} has {count} lines: expected at most "
                          f"{limit} (bash-block-max-lines)")


@rule("BTN325", "bash-unclosed-fence", Severity.ERROR, COMMAND, convention=GENERIC)
def unclosed_fence(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A ```bash fence is never closed.

    Everything after an unclosed fence, to the end of the file, is part of the code block:
    the following prose, `Task {` calls and headings are hidden from the model as
    instructions and would be run as shell code.

    Fix: add the closing fence (the same number of backticks) after the block's last line.

    Reported:

        ==> .claude/commands/setup.md <==
        ---
        description: Setup
        ---
        ```bash
        make build

        ## Next step

        Report the result.

    Not reported:

        ==> .claude/commands/setup.md <==
        ---
        description: Setup
        ---
        ````bash
        cat <<'EOF'
        ```
        EOF
        ````

        ## Next step
    """
    for block in doc.bash_blocks:
        if block.closed:
            continue
        line = ctx.lines[block.start_line] if block.start_line < len(ctx.lines) else ""
        yield ctx.finding(Range.of_line(block.start_line, 0, len(line)),
                          f"bash block {block.index + 1} opened on line {block.start_line + 1} "
                          f"is never closed: expected a closing fence, found end of file")


# -- BTN326 / BTN327: writing the state file -------------------------------------------------

_APPEND_RE = re.compile(r"(?<![^\s;&|(`{])append_workflow_state\b")
_STATE_TARGET_RE = re.compile(r">>?\s*\"?(?:\$\{?STATE_FILE\}?|[^\s\"]*workflow_[^\s\"]*\.sh)")
_PAIR_RE = re.compile(r"^([\"']?)([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.DOTALL)


_Span = tuple[int, int, int, int]
"""(start line, start column, end line, end column) of a shell word within a block."""


def _words(lines: list[BashLine], no: int, start: int) -> list[_Span] | None:
    """Spans of the shell words from (`no`, `start`) to the end of the simple command.

    A quoted word may run over several lines. None when the command continues after a
    trailing backslash, since its arguments are then not worth counting by hand."""
    words: list[_Span] = []
    depth = 0
    begin: tuple[int, int] | None = None
    cur, i = no, start
    while cur < len(lines):
        line = lines[cur]
        text, classes = line.text, line.classes
        while i < len(text):
            ch, cls = text[i], classes[i]
            if cls == COMMENT:
                break
            if cls == CODE:
                if ch in "({":
                    depth += 1
                elif ch in ")}" and depth:
                    depth -= 1
                elif depth == 0 and (ch in ";&|)" or ch.isspace()):
                    if begin is not None:
                        words.append((*begin, cur, i))
                        begin = None
                    if not ch.isspace():
                        return words
                    i += 1
                    continue
            if begin is None:
                begin = (cur, i)
            i += 1
        if text.endswith("\\") and classes[-1:] == CODE:
            return None
        if begin is None or not _quote_open(lines, no, cur):
            if begin is not None:
                words.append((*begin, cur, len(text)))
            return words
        cur, i = cur + 1, 0
    return words


def _quote_open(lines: list[BashLine], first: int, last: int) -> bool:
    """True when a quoted string opened on lines first..last is still open after `last`."""
    if last + 1 >= len(lines):
        return False
    probe = "\n".join(line.text for line in lines[first:last + 1]) + "\nX"
    return lexed(probe)[-1].classes[:1] in (DQ, SQ)


def _append_calls(lines: list[BashLine]) -> Iterator[tuple[int, int, list[_Span]]]:
    """(line, column of the call, argument spans) of every `append_workflow_state` call."""
    for no, line in enumerate(lines):
        if "append_workflow_state" not in line.text:
            continue
        for m in _APPEND_RE.finditer(line.text):
            if not line.is_code(m.start()) or not _command_position(line.text, m.start()):
                continue
            words = _words(lines, no, m.end())
            if words is not None:
                yield no, m.start(), words


def _split_pair(word: str) -> str | None:
    """`"KEY=value"` → `"KEY" "value"` (likewise unquoted and single-quoted), else None."""
    m = _PAIR_RE.match(word)
    if m is None:
        return None
    quote, key, rest = m.groups()
    if quote:
        if not rest.endswith(quote):
            return None
        return f"{quote}{key}{quote} {quote}{rest}"
    if '"' in rest or "'" in rest:
        return None
    return f'{key} "{rest}"'


@rule("BTN326", "bash-append-state-one-argument", Severity.WARNING, COMMAND, fixable=True,
      convention=WORKFLOW)
def append_state_one_argument(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`append_workflow_state` is called with one argument instead of KEY VALUE.

    The state library's `append_workflow_state KEY VALUE` writes `export KEY="VALUE"` to the
    state file. Called as `append_workflow_state "PHASE_0_DETECTED=true"` (seen in a real
    `create-plan.md`), KEY is the whole `NAME=value` text and VALUE is empty, so the state
    file gets a line that is not a valid assignment (or an empty one), and the next block that
    loads state does not see the value it expects.

    Fix: pass the key and the value as two words, `append_workflow_state "KEY" "value"` (the
    quick fix splits `KEY=value` at the first `=`).

    Reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Plan a feature
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        load_workflow_state "$WORKFLOW_ID"
        append_workflow_state "PHASE_0_DETECTED=true"
        ```

    Not reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Plan a feature
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        load_workflow_state "$WORKFLOW_ID"
        append_workflow_state "PHASE_0_DETECTED" "true"
        append_workflow_state "REPORT_PATHS_JSON" \\
          "$(printf '%s\\n' "${REPORTS[@]}" | jq -R . | jq -s -c .)"
        ```
    """
    for block, lines in _lexed(ctx, doc):
        for no, col, words in _append_calls(lines):
            if len(words) >= 2:
                continue
            md_line = _md_line(block, no)
            end = col + len("append_workflow_state")
            fix = None
            found = "no arguments"
            if words:
                l0, c0, l1, c1 = words[0]
                text = lines[l0].text[c0:c1] if l0 == l1 else lines[l0].text[c0:] + " ..."
                found = f"one argument `{text}`"
                if l0 == l1 == no:
                    end = c1
                    split = _split_pair(text)
                    if split is not None:
                        fix = ctx.fix("Pass KEY and VALUE as two arguments", ctx.edit(
                            Range.of_line(md_line, c0, c1), split))
            yield ctx.finding(
                Range.of_line(md_line, col, end),
                f"`append_workflow_state` called with {found}: expected KEY VALUE, e.g. "
                f"`append_workflow_state \"KEY\" \"value\"`; the value is lost otherwise",
                fix=fix,
            )


def _literal_substitution(line: BashLine, start: int, end: int) -> int | None:
    """Column of a `$(` or backtick in [start, end) that stays literal text when written
    (single-quoted, or escaped inside double quotes), so it runs when the file is sourced."""
    text, classes = line.text, line.classes
    for i in range(start, min(end, len(text))):
        ch = text[i]
        command = ch == "`" or (text.startswith("$(", i) and not text.startswith("$((", i))
        if command and classes[i] in (SQ, ESC):
            return i
    return None


@rule("BTN327", "bash-state-value-runs-command", Severity.WARNING, COMMAND,
      convention=WORKFLOW)
def state_value_runs_command(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A bash block writes a literal `$(...)` or backtick into the workflow state file.

    Every later block `source`s the state file, and the library writes values inside double
    quotes (`export KEY="value"`), escaping only backslashes and double quotes. A value that
    holds `$(cmd)` or `` `cmd` `` as text - single-quoted, or escaped as `\\$(` / `` \\` ``
    when written - is therefore run as a command each time state is loaded, instead of being
    read back as the text that was stored.

    Fix: store the result, not the command (`append_workflow_state "KEY" "$(cmd)"` runs it
    once, now), or store the text without `$(`/backticks.

    Reported:

        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        append_workflow_state "CLEANUP" 'rm -rf $(dirname "$STATE_FILE")/build'
        ```

    Not reported:

        ==> .claude/commands/build.md <==
        ---
        description: Build
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/core/state-persistence.sh"
        append_workflow_state "STARTED_AT" "$(date +%s)"
        echo "export BRANCH=\\"$(git branch --show-current)\\"" >> "$STATE_FILE"
        sed -i 's/^export OLD=.*$//' "$STATE_FILE"
        ```
    """
    for block, lines in _lexed(ctx, doc):
        for _no, _col, words in _append_calls(lines):
            if len(words) < 2:
                continue
            for l0, c0, l1, c1 in words[1:]:
                for n in range(l0, l1 + 1):
                    hit = _literal_substitution(lines[n], c0 if n == l0 else 0,
                                                c1 if n == l1 else len(lines[n].text))
                    if hit is not None:
                        yield _runs_command(ctx, block, n, hit, "the value passed to "
                                            "`append_workflow_state`")
                        break
                else:
                    continue
                break
        for no, line in enumerate(lines):
            text = line.text
            if ">" not in text or not re.search(r"\b(?:echo|printf)\b", text):
                continue
            target = _STATE_TARGET_RE.search(text)
            if target is None or not line.is_code(target.start()):
                continue
            hit = _literal_substitution(line, 0, target.start())
            if hit is not None:
                yield _runs_command(ctx, block, no, hit, "the line written to the state file")


def _runs_command(ctx: RuleContext, block: BashBlock, no: int, col: int, what: str) -> Finding:
    text = lexed(block.content)[no].text
    width = 1 if text[col] == "`" else 2
    return ctx.finding(
        Range.of_line(_md_line(block, no), col, col + width),
        f"{what} holds a literal `{text[col:col + width]}`: expected a value without command "
        f"substitution, since sourcing the state file in a later block runs it as a command",
    )


# -- BTN317: a literal `$$` path in a later block ---------------------------------------------

_PID_PATH_RE = re.compile(r"[\w.~/{}$-]*\$\$[\w.{}/-]*")
_WRITE_BEFORE_RE = LazyPattern(r"(?:>>?\s*|\btee\s+(?:-a\s+)?|\btouch\s+|\bmktemp\s+)[\"']?$")
_REMOVE_BEFORE_RE = LazyPattern(r"\brm\s+(?:-\w+\s+)*(?:\S+\s+)*[\"']?$")
"""`rm -f /tmp/x_$$.txt`: a cleanup that removes nothing leaves a stray file, no wrong read."""
_ASSIGNED_BEFORE_RE = LazyPattern(r"(?:^|[\s;&|(])(?:export\s+|local\s+)?([A-Za-z_]\w*)=[\"']?$")
_STATE_ID_BEFORE_RE = LazyPattern(
    r"(?<![^\s;&|(`{])(init_workflow_state|load_workflow_state)\s+[\"']?$")
"""The state library's id argument: `init_workflow_state "coordinate_$$"` writes the state
file `.claude/tmp/workflow_coordinate_<pid>.sh`, `load_workflow_state` reads it (seed 001)."""


def _pid_paths(lines: list[BashLine]) -> list[tuple[int, int, int, str, str]]:
    """(line, start, end, path, how) of each literal path built from `$$` in a block; `how` is
    `write` (redirected into, touched), `assign` (`VAR=path`) or `read`."""
    out: list[tuple[int, int, int, str, str]] = []
    for no, line in enumerate(lines):
        if "$$" not in line.text or line.classes[:1] in (HEREDOC, HEREDOC_QUOTED):
            continue
        for m in _PID_PATH_RE.finditer(line.text):
            path = m.group(0)
            pid = line.text.find("$$", m.start())
            if not _has_pid(line, pid, m.end()):
                continue
            before = line.text[:m.start()]
            if "/" not in path:
                state = _STATE_ID_BEFORE_RE.search(before)
                if state is None or not line.is_code(state.start(1)):
                    continue
                how = "write" if state.group(1) == "init_workflow_state" else "read"
                out.append((no, m.start(), m.end(), path, how))
                continue
            how = ("write" if _WRITE_BEFORE_RE.search(before)
                   else "cleanup" if _REMOVE_BEFORE_RE.search(before)
                   else "assign" if _ASSIGNED_BEFORE_RE.search(before) else "read")
            out.append((no, m.start(), m.end(), path, how))
    return out


@rule("BTN317", "bash-pid-path-across-blocks", Severity.WARNING, COMMAND, convention=GENERIC)
def pid_path_across_blocks(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A literal path built from `$$` (`/tmp/plan_$$.md`), or a state id built from it
    (`load_workflow_state "coordinate_$$"`), is used in one bash block and spelt the same
    way again in a later one.

    Each bash fence runs in a new shell ("Shell state does not persist", Claude Code's Bash
    tool), so `$$` is another process id in the later block and the path names a file that
    was never written: the block reads nothing, or an old run's file. The seeds document
    this pitfall with their own example (seed 000, issue 1: `echo "description" >
    /tmp/coordinate_workflow_$$.txt`, then `cat` of the same path in the next block), and
    seed 001 passes `"coordinate_$$"` to `init_workflow_state` in block 1 and to
    `load_workflow_state` in block 2: the id names the state file
    (`.claude/tmp/workflow_<id>.sh`), so block 2 finds none and the library silently starts
    a fresh one, losing every appended value. BTN320 follows a variable built from `$$`,
    this rule the same path or id written out again. Not reported when the later block
    writes the file (or `init_workflow_state`s the id) before reading it, nor for a later
    `rm` of it (a stray temp file, not a wrong read). Fix: build the name once from
    something stable (`date +%s%N`, the workflow id), persist it to a fixed-name state-ID
    file, and read it back in each block.

    Reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Plan
        ---
        ```bash
        echo "$FEATURE" > /tmp/plan_feature_$$.txt
        ```

        Then:

        ```bash
        FEATURE=$(cat /tmp/plan_feature_$$.txt)
        ```

    Reported (the state id of seed 001's orchestrator):

        ==> .claude/commands/coordinate.md <==
        ---
        description: Coordinate
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        STATE_FILE=$(init_workflow_state "coordinate_$$")
        ```

        Then:

        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        load_workflow_state "coordinate_$$"
        ```

    Not reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Plan
        ---
        ```bash
        echo "$FEATURE" > /tmp/plan_feature_$$.txt
        wc -c /tmp/plan_feature_$$.txt
        ```

        Then:

        ```bash
        echo "done" > /tmp/plan_feature_$$.txt
        cat /tmp/plan_feature_$$.txt
        ```
    """
    seen: dict[str, BashBlock] = {}
    for block, lines in _lexed(ctx, doc):
        if "$$" not in block.content:
            continue  # no path built from `$$`: classifying the block would be wasted
        if not classify(block.content).is_script and classify(block.content).kind != "fragment":
            continue
        here = _pid_paths(lines)
        aliases = {}
        for no, _s, _e, path, how in here:
            if how == "assign":
                m = _ASSIGNED_BEFORE_RE.search(lines[no].text[:_s])
                if m:
                    aliases[m.group(1)] = path
        written: set[str] = set()
        reported: set[str] = set()
        for no, start, end, path, how in here:
            if how == "write":
                written.add(path)
            elif how == "cleanup":
                continue
            elif path in seen and path not in written and path not in reported:
                if how == "assign":
                    var = next((v for v, p in aliases.items() if p == path), None)
                    if var is None or _var_written_first(lines, no, var):
                        continue
                reported.add(path)
                first = seen[path]
                what = ("a file" if "/" in path else
                        "a state file (`load_workflow_state` then silently starts a new one)")
                yield ctx.finding(
                    Range.of_line(_md_line(block, no), start, end),
                    f"`{path}` is built from `$$` again in bash block {block.index + 1}, "
                    f"after block {first.index + 1} used it: each block is a new shell with "
                    f"another `$$`, so this names {what} that block never wrote; expected a "
                    f"name persisted once and read back")
        for _no, _s, _e, path, _how in here:
            seen.setdefault(path, block)


def _var_written_first(lines: list[BashLine], after: int, var: str) -> bool:
    """Whether the block writes `$var` (redirect, touch, tee) before it reads it again."""
    ref = re.compile(rf"\$\{{?{re.escape(var)}\b")
    for line in lines[after + 1:]:
        m = ref.search(line.text)
        if m is None:
            continue
        return bool(_WRITE_BEFORE_RE.search(line.text[:m.start()]))
    return True  # never used again: nothing is read


# -- BTN328: a state-library function called before its library is sourced --------------------

LIBRARY_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "state-persistence.sh": ("init_workflow_state", "load_workflow_state",
                             "append_workflow_state", "save_json_checkpoint",
                             "load_json_checkpoint", "append_jsonl_log"),
    "workflow-state-machine.sh": ("sm_init", "sm_transition", "sm_load", "sm_save",
                                  "sm_execute", "sm_is_terminal", "sm_current_state",
                                  "sm_save_with_classification",
                                  "sm_load_with_classification"),
    "workflow-initialization.sh": ("initialize_workflow_paths",
                                   "reconstruct_report_paths_array"),
    "error-handling.sh": ("classify_error", "retry_with_backoff", "handle_state_error"),
    "verification-helpers.sh": ("verify_file_created",),
    "library-sourcing.sh": ("source_required_libraries",),
}
"""The seeds' libraries and the functions each defines (seed 000, "Library Dependencies")."""
_OWNER = {fn: lib for lib, fns in LIBRARY_FUNCTIONS.items() for fn in fns}
_WORD_RE = re.compile(r"\w+")
_CALL_AFTER = frozenset(";&|(`{!")
"""What may stand before a call besides a blank (or the start of the line)."""


def _library_calls(text: str) -> Iterator[tuple[int, int, str]]:
    """(start, end, name) of each library function name in `text` standing as a word after
    a blank, a separator or the line start and not followed by `(` (a definition): every
    name is one whole word, so a scan of the words with a set lookup finds what a pattern
    alternating the 25 names found, without compiling that alternation."""
    for m in _WORD_RE.finditer(text):
        name = m.group()
        if name not in _OWNER:
            continue
        start, end = m.span()
        if start and not (text[start - 1].isspace() or text[start - 1] in _CALL_AFTER):
            continue
        if text[end:].lstrip()[:1] == "(":
            continue
        yield start, end, name


def _lines_naming(content: str, names: list[str]) -> list[int]:
    """The lines of `content` (a block) that hold one of `names`, in order: found by the
    names' occurrences in the whole block rather than by testing each line for each name."""
    found: set[int] = set()
    for name in names:
        i = content.find(name)
        while i >= 0:
            found.add(content.count("\n", 0, i))
            i = content.find(name, i + len(name))
    return sorted(found)


_SOURCE_ANY_RE = re.compile(r"(?<![^\s;&|(])(?:source|\.)\s+[\"']?([^\s\"';|&)]+)")
_FUNC_DEF_RE = re.compile(r"^\s*(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\s*\)|"
                          r"^\s*function\s+([A-Za-z_][\w-]*)\b")
_STATE_SOURCE_RE = re.compile(r"/tmp/|^\$\{?(?:STATE_FILE|state_file)\b|\.env$")
"""A `source` of saved state (the state file), which defines no function."""


def _block_sources(lines: list[BashLine]) -> tuple[list[tuple[int, str]], set[str]]:
    """(line, sourced path) of every `source`/`.` in command position, and the functions the
    block defines itself."""
    sources: list[tuple[int, str]] = []
    defined: set[str] = set()
    for no, line in enumerate(lines):
        text = line.text
        d = _FUNC_DEF_RE.match(text) if "(" in text or "function" in text else None
        if d and line.is_code(d.start(1) if d.group(1) else d.start(2)):
            defined.add(d.group(1) or d.group(2))
        if "source" not in text and ". " not in text:
            continue
        for m in _SOURCE_ANY_RE.finditer(text):
            if line.is_code(m.start()) and _command_position(text, m.start()):
                sources.append((no, m.group(1)))
    return sources, defined


@rule("BTN328", "bash-library-function-before-source", Severity.WARNING, COMMAND,
      convention=WORKFLOW)
def library_function_before_source(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A bash block calls a function of the seeds' state libraries before it `source`s the
    library that defines it, or without sourcing any library at all.

    Each bash fence runs in a new shell, so the functions an earlier block loaded are gone:
    seed 000 says "Functions don't persist (must re-source libraries)" and re-sources its five
    libraries (`workflow-state-machine.sh`, `state-persistence.sh`,
    `workflow-initialization.sh`, `error-handling.sh`, `verification-helpers.sh`) at the top
    of every block; its risk 2 warns that the sourcing order is "easy to forget when adding
    new libraries" with "no compile-time checks". A call that comes first fails with
    `command not found` (and under `set -e` stops the block), or in an `if` quietly takes the
    failure branch. Reported when the call precedes the block's `source` of the defining
    library (by file name, any folder), or when the block sources no library at all before
    the call; not when the block defines the function itself, nor when it sources a library
    whose functions Baton does not know (through a variable, or one that may load the others,
    such as `library-sourcing.sh`). Fix: move the `source` lines to the top of the block.

    Reported:

        ==> .claude/commands/coordinate.md <==
        ---
        description: Coordinate
        ---
        ```bash
        load_workflow_state "$WORKFLOW_ID"
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        ```

    Not reported:

        ==> .claude/commands/coordinate.md <==
        ---
        description: Coordinate
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        load_workflow_state "$WORKFLOW_ID"
        ```
    """
    for block, lines in _lexed(ctx, doc):
        named = [fn for fn in _OWNER if fn in block.content]
        if not named:
            continue
        sources, defined = _block_sources(lines)
        named_sources = [(n, p, PurePosixPath(p).name) for n, p in sources]  # once a block
        for no in _lines_naming(block.content, named):  # the other lines call none
            line = lines[no]
            text = line.text
            found = None
            for start, end, fn in _library_calls(text):
                if line.is_code(start) and _command_position(text, start):
                    found = (start, end, fn)
                    break
            if found is None:
                continue
            start, end, fn = found
            lib = _OWNER[fn]
            if fn in defined:
                continue
            before = [p for n, p in sources if n < no]
            if any(name == lib for n, _p, name in named_sources if n < no):
                continue
            later = next((n for n, _p, name in named_sources if n > no and name == lib), None)
            if later is None and any(not _STATE_SOURCE_RE.search(p) for p in before):
                continue  # another library (or one through a variable) may define it
            if later is None and any(name == lib for _n, _p, name in named_sources):
                continue
            where = (f"the block sources `{lib}` only on line {_md_line(block, later) + 1}"
                     if later is not None else "the block sources no library before it")
            yield ctx.finding(
                Range.of_line(_md_line(block, no), start, end),
                f"`{fn}` (from `{lib}`) is called in bash block {block.index + 1} but {where}: "
                f"each block is a new shell, so the function is not defined yet (`command not "
                f"found`); expected `source .../{lib}` at the top of the block")
            break


# -- BTN329: a variable set before `source` of a library that resets it ------------------------

_LIB_GLOBAL_RE = LazyPattern(
    r"^(?:export\s+|readonly\s+|declare\s+(?:-[A-Za-z]+\s+)*)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")
_LIB_FUNC_START_RE = LazyPattern(r"^(?:function\s+)?[A-Za-z_][\w:-]*\s*\(\s*\)\s*\{?\s*$|"
                                r"^function\s+[A-Za-z_][\w:-]*\s*\{?\s*$")


def library_globals(text: str) -> dict[str, tuple[int, str]]:
    """Variables a library assigns unconditionally when it is sourced: `NAME=value` at the
    top level (column 0, outside function bodies) whose value does not read the variable
    itself (`${NAME:-default}` keeps a caller's value), with (line, the line's text)."""
    out: dict[str, tuple[int, str]] = {}
    in_function = False
    for no, line in enumerate(lexed(text)):
        raw = line.text
        if in_function:
            if raw.startswith("}"):
                in_function = False
            continue
        if _LIB_FUNC_START_RE.match(raw):
            in_function = not raw.rstrip().endswith("}")
            continue
        m = _LIB_GLOBAL_RE.match(raw)
        if m is None or not line.is_code(0):
            continue
        var, value = m.group(1), m.group(2)
        if re.search(rf"\$\{{?{var}\b", value):
            continue
        out.setdefault(var, (no, raw.split("#", 1)[0].rstrip() if "#" in raw else raw))
    return out


def _literal(assignments: list[tuple[BashLine, int]]) -> str | None:
    """The value of the last of a variable's assignments (line, where its value starts)
    that gives it a literal: one with a command substitution keeps the one before.
    Read only when a `source` path names the variable (a value is a character scan)."""
    for line, start in reversed(assignments):
        value = line.text[start:_value_end(line, start)].strip("\"'")
        if "$(" not in value and "`" not in value:
            return value
    return None


def _spelled(path: str, assignments: dict[str, list[tuple[BashLine, int]]]) -> str:
    """`path` with each `${VAR}` the block gave a literal value replaced by it."""
    if "$" not in path:
        return path

    def fill(m: re.Match[str]) -> str:
        value = _literal(assignments.get(m.group(1), []))
        return m.group(0) if value is None else value

    return re.sub(r"\$\{?([A-Za-z_]\w*)\}?", fill, path)


def _lib_folders(ctx: RuleContext) -> list[str]:
    """The folders of the workspace's `.claude/lib/`, sorted, listed as the run side lists
    (never through a link out of the workspace); listed once per check (`ctx.shared`)."""
    assert ctx.root is not None
    try:
        dirs, _ = confine.subdirectories(ctx.root, ctx.root / ".claude" / "lib")
    except OSError:
        return []
    return sorted(dirs)


def _library_file(ctx: RuleContext, path: str, spelled: str) -> Path | None:
    """The workspace file a `source` of `path` loads: `spelled` (`path` with the block's
    literal values filled in, `_spelled`), else a file of that name in `.claude/lib/` or one
    folder below."""
    found = ctx.resolve(spelled)
    if found is not None and ctx.exists(found):
        return found
    if ctx.root is None:
        return None
    name = PurePosixPath(path).name
    lib = ctx.root / ".claude" / "lib"
    candidates = [lib / name]
    if ctx.exists(lib):
        candidates += [lib / d / name for d in ctx.shared(f"lib-folders:{lib}", _lib_folders)]
    hits = [c for c in candidates if ctx.exists(c)]
    return hits[0] if len(hits) == 1 else None


@rule("BTN329", "bash-variable-reset-by-source", Severity.WARNING, COMMAND, cross_file=True,
      convention=WORKFLOW)
def variable_reset_by_source(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A bash block sets a variable, then `source`s a library that assigns the same
    variable when it loads, then uses the variable: it holds the library's value by then.

    Seed 000's issue 2: `workflow-state-machine.sh` starts with `WORKFLOW_DESCRIPTION=""`,
    so `WORKFLOW_DESCRIPTION=$(cat "$COORDINATE_DESC_FILE")`, then `source
    "${LIB_DIR}/workflow-state-machine.sh"`, then `sm_init "$WORKFLOW_DESCRIPTION"` passes an
    empty description. The seed's fix is the save-before-source pattern (copy the value to
    `SAVED_WORKFLOW_DESC` before sourcing, use the copy after), and its risk 2 asks for a
    linter check because the pattern is "easy to forget when adding new libraries". The
    library is read from the workspace (the `source` path, `${VAR}`s the block set to a
    literal filled in, else a file of that name in `.claude/lib/` or one folder below);
    only its top-level assignments count, and not those that keep a caller's value
    (`NAME="${NAME:-default}"`). Not reported when the block assigns the variable again
    after the `source`, nor when the library cannot be found.

    Fix: save the value before sourcing and use the saved copy, or source the libraries
    first and set the variable after; better, make the library keep a caller's value
    (`NAME="${NAME:-}"`).

    Reported:

        ==> .claude/lib/workflow-state-machine.sh <==
        WORKFLOW_DESCRIPTION=""
        sm_init() { :; }
        ==> .claude/commands/coordinate.md <==
        ---
        description: Coordinate
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        WORKFLOW_DESCRIPTION=$(cat "$COORDINATE_DESC_FILE")
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/workflow-state-machine.sh"
        sm_init "$WORKFLOW_DESCRIPTION" "coordinate"
        ```

    Not reported:

        ==> .claude/lib/workflow-state-machine.sh <==
        WORKFLOW_DESCRIPTION=""
        CURRENT_STATE="${CURRENT_STATE:-initialize}"
        ==> .claude/commands/coordinate.md <==
        ---
        description: Coordinate
        ---
        ```bash
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/state-persistence.sh"
        WORKFLOW_DESCRIPTION=$(cat "$COORDINATE_DESC_FILE")
        SAVED_WORKFLOW_DESC="$WORKFLOW_DESCRIPTION"
        CURRENT_STATE="research"
        source "${CLAUDE_PROJECT_DIR}/.claude/lib/workflow-state-machine.sh"
        sm_init "$SAVED_WORKFLOW_DESC" "$CURRENT_STATE"
        ```
    """
    libraries: dict[Path, dict[str, tuple[int, str]]] = {}
    # `_library_file` by (path as written, path with the literals filled in): blocks source
    # the same libraries again and again, and each lookup lists `.claude/lib/`.
    found: dict[tuple[str, str], Path | None] = {}
    for block, lines in _lexed(ctx, doc):
        if "source" not in block.content and ". " not in block.content:
            continue
        assigned: dict[str, int] = {}
        assignments: dict[str, list[tuple[BashLine, int]]] = {}
        lost: dict[str, tuple[int, int, Path, str]] = {}
        reported: set[str] = set()
        for no, line in enumerate(lines):
            text = line.text
            if lost and line.classes[:1] not in (HEREDOC, HEREDOC_QUOTED):
                for var in _used_vars(line):
                    if var in lost and var not in reported:
                        reported.add(var)
                        set_at, src_at, lib, shown = lost.pop(var)
                        col = _use_col(line, var)
                        yield ctx.finding(
                            Range.of_line(_md_line(block, no), col, col + len(var) + 1),
                            f"`${var}` is used after bash block {block.index + 1} sources "
                            f"`{lib.name}` (line {_md_line(block, src_at) + 1}), which sets "
                            f"`{shown}` when it loads: the value assigned on line "
                            f"{_md_line(block, set_at) + 1} is gone; expected it saved before "
                            f"the `source` (`SAVED_{var}=\"${var}\"`) and the copy used, "
                            f"as seed 000 does")
            for m in _ASSIGN_RE.finditer(text) if "=" in text else ():
                if line.is_code(m.start()) and _command_position(text, m.start()):
                    var = m.group(1)
                    assigned[var] = no
                    lost.pop(var, None)
                    assignments.setdefault(var, []).append((line, m.end()))
            for m in _SOURCE_ANY_RE.finditer(text) if "source" in text or ". " in text else ():
                if not (line.is_code(m.start()) and _command_position(text, m.start())):
                    continue
                path = m.group(1)
                key = (path, _spelled(path, assignments))
                if key not in found:
                    found[key] = _library_file(ctx, path, key[1])
                lib_or_none = found[key]
                if lib_or_none is None:
                    continue
                lib = lib_or_none
                if lib not in libraries:
                    ctx.depends_on.add(str(lib))
                    body = ctx.index.text_of(lib) if ctx.index is not None else None
                    libraries[lib] = library_globals(body or "")
                for var, (_lno, shown) in libraries[lib].items():
                    if var in assigned:
                        lost[var] = (assigned[var], no, lib, shown)


def _used_vars(line: BashLine) -> Iterator[str]:
    for m in _USE_RE.finditer(line.text):
        if line.expands(m.start()) and not (m.start() > 0 and line.text[m.start() - 1] == "\\"):
            yield m.group(1) or m.group(2)


def _use_col(line: BashLine, var: str) -> int:
    m = re.search(rf"\$\{{?{re.escape(var)}\b", line.text)
    return m.start() if m else 0


# -- BTN318: `export VAR` expected in a later block -------------------------------------------

_EXPORT_RE = re.compile(r"(?<![^\s;&|(])export\s+((?:-\w+\s+)*)((?:[A-Za-z_]\w*(?:=\S*)?"
                        r"\s*)+)")
_ENVIRONMENT = frozenset({"PATH", "HOME", "USER", "SHELL", "PWD", "LANG", "LC_ALL", "TERM",
                          "TMPDIR", "TZ", "EDITOR", "PYTHONPATH", "NODE_OPTIONS"})
"""Variables the Bash tool's shell has anyway (from the user's profile)."""


def _exports(lines: list[BashLine]) -> list[tuple[str, int]]:
    """(variable, line) of each `export` of a block in order, less the user's own
    environment (`_ENVIRONMENT`, `CLAUDE_*`), `export -n` and `export -f`."""
    found: list[tuple[str, int]] = []
    for no, line in enumerate(lines):
        if "export" not in line.text:
            continue
        for m in _EXPORT_RE.finditer(line.text):
            if not line.is_code(m.start()) or not _command_position(line.text, m.start()):
                continue
            if "n" in m.group(1) or "f" in m.group(1):
                continue  # `export -n` un-exports, `export -f` exports functions
            for word in m.group(2).split():
                var = word.split("=", 1)[0]
                if var not in _ENVIRONMENT and not var.startswith("CLAUDE_"):
                    found.append((var, no))
    return found


@rule("BTN318", "bash-export-across-blocks", Severity.WARNING, COMMAND, convention=GENERIC)
def export_across_blocks(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A variable `export`ed in one bash block is used in a later block that never sets it.

    `export` passes a variable to the block's child processes, not to the next block: each
    fence runs in a new shell ("Shell state does not persist", Claude Code's Bash tool), so
    the later block sees it empty. Not reported when the later block sets the variable
    anywhere, restores saved state before the use (`source` of a state file,
    `load_workflow_state`, `eval`), uses a default (`${VAR:-x}`), or the file persists the
    variable (`append_workflow_state "VAR"`, `CLAUDE_ENV_FILE`); nor for the user's own
    environment (`PATH`, `HOME`, `CLAUDE_*`), nor a value built from `$$` (BTN320). Fix:
    persist the value (a state file) and read it back, or compute it again in the later
    block.

    Reported:

        ==> .claude/commands/release.md <==
        ---
        description: Release
        ---
        ```bash
        export VERSION=$(git describe --tags --abbrev=0)
        ```

        Then:

        ```bash
        gh release create "$VERSION" --generate-notes
        ```

    Not reported:

        ==> .claude/commands/release.md <==
        ---
        description: Release
        ---
        ```bash
        export VERSION=$(git describe --tags --abbrev=0)
        echo "VERSION=$VERSION" > .claude/tmp/release.env
        ```

        Then:

        ```bash
        source .claude/tmp/release.env
        gh release create "$VERSION" --generate-notes
        ```
    """
    whole = "\n".join(b.content for b in doc.bash_blocks)
    if "CLAUDE_ENV_FILE" in whole:
        return
    exported: dict[str, tuple[BashBlock, int]] = {}
    for block, lines in _lexed(ctx, doc):
        exports = _exports(lines) if "export" in block.content else []
        if not exports and not any(v in block.content for v in exported):
            continue  # it exports nothing and names no exported variable: it changes nothing
        kind = classify(block.content).kind
        if kind not in ("script", "fragment"):
            continue
        info = _vars_of(block.content)
        from_pid = {a.var for a in info.assigns if a.pid}
        for var, (origin, _line) in list(exported.items()):
            use = info.uses.get(var)
            if use is None or var in info.defines:
                continue
            no, start, end = use
            if info.restore_line is not None and info.restore_line < no:
                continue
            text = lines[no].text
            if re.match(rf"\$\{{{re.escape(var)}:?[-=+]", text[start:]):
                continue  # `${VAR:-default}`: the block does without it
            if re.search(rf"(?:append_workflow_state|save_\w+)\s+[\"']?{re.escape(var)}\b",
                         whole) or re.search(rf"\b{re.escape(var)}=[^\n]*>>?", whole):
                continue  # persisted to a file the later block may read back
            del exported[var]
            yield ctx.finding(
                Range.of_line(_md_line(block, no), start, end),
                f"`${var}` is exported in bash block {origin.index + 1} and used in block "
                f"{block.index + 1} (line {_md_line(block, no) + 1}), which never sets it: "
                f"`export` does not reach the next block (each is a new shell), so it is "
                f"empty here; expected it persisted and read back, or computed again",
                related=[Related(path=ctx.path, range=Range.of_line(_md_line(origin, _line)),
                                 message=f"`{var}` exported here")])
        for var, no in exports:
            if var not in from_pid:  # a value built from `$$` is BTN320's finding
                exported.setdefault(var, (block, no))
        for var in list(exported):
            if var in info.defines and exported[var][0] is not block:
                del exported[var]  # set again here: later blocks are this block's business

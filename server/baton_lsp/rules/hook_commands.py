"""BTN809-BTN811: what a command hook's shell text does, read against how Claude Code runs it.

Claude Code 2.1.331 runs a command hook with the event as JSON on stdin and a small
environment: the session's own plus `CLAUDE_PROJECT_DIR`, `CLAUDE_PLUGIN_ROOT` /
`CLAUDE_PLUGIN_DATA` (plugin hooks), `CLAUDE_ENV_FILE` (SessionStart, Setup, CwdChanged,
FileChanged), `CLAUDECODE`, `CLAUDE_CODE_SESSION_ID` and a few more (the bundle's hook
runner builds it). It reads the exit status: 2 is a blocking error whose message is the
hook's stderr ("No stderr output" when it wrote none); any other non-zero status is a
non-blocking error and the action goes ahead. The text looked at is the hook's inline
`command` and the project scripts it runs (`bash .claude/hooks/x.sh`), read confined to the
workspace.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..lazy_pattern import LazyPattern
from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.claude_settings import ClaudeSettings
from ..runs.confine import read_head
from .base import RuleContext, rule
from .claude_settings import Hooks, command_hooks, hook_scripts, hooks_of, plugin_hooks_file

CC = Convention.CLAUDE_CODE
HOOKED = (Kind.SETTINGS, Kind.AGENT, Kind.SKILL)
_SCRIPT_LIMIT = 1 << 18
"""Bytes of a hook script read (a hook script is a page or two)."""
LOOK_BACK = 12
"""Lines before an `exit` searched for the message it ends."""

NEVER_SET = LazyPattern(
    r"(?<!\\)\$\{?(?P<name>CLAUDE_TOOL(?:_[A-Z0-9_]+)?|CLAUDE_FILE_PATHS?|CLAUDE_USER_PROMPT"
    r"|CLAUDE_NOTIFICATION(?:_[A-Z0-9_]+)?|CLAUDE_HOOK_[A-Z0-9_]+|CLAUDE_EVENT(?:_[A-Z0-9_]+)?"
    r"|TOOL_INPUT|TOOL_NAME|TOOL_OUTPUT|TOOL_RESPONSE|TOOL_RESULT|TOOL_ARGS)\b")
"""Variables guides say a hook receives but Claude Code never sets: the event's data (tool
name and input, file paths, the prompt) reach a hook only as JSON on stdin. None of these
names is in the 2.1.331 bundle (`CLAUDE_TOOL_INPUT`, `CLAUDE_FILE_PATHS`: 0 occurrences)."""
_ASSIGNED = r"(?:^|[\s;&|(`]|\bexport\s+|\blocal\s+|\bdeclare\s+(?:-\w+\s+)*){name}=" \
            r"|\bread\s+(?:-\w+\s+)*(?:\w+\s+)*{name}\b|\bfor\s+{name}\s+in\b"
"""The script sets the variable itself (`TOOL_NAME=$(jq …)`, `read -r TOOL_INPUT`)."""
_READS_STDIN = LazyPattern(r"\$\(\s*cat\s*\)|\bcat\s*(?:-\s*)?\)|/dev/stdin|sys\.stdin"
                          r"|\bread\s+(?:-\w+\s+)*\w+|process\.stdin")
"""A script that reads its stdin (the event JSON): an env var read there is a fallback."""

BLOCKING_EVENTS = frozenset({"PreToolUse", "PermissionRequest", "UserPromptSubmit", "Stop",
                             "SubagentStop"})
"""Events whose action a hook stops by exiting 2 (the hooks reference's exit-code table)."""
_EXIT = LazyPattern(r"(?:^|[\s;&|{(])exit\s+(?P<code>\d+)\b|\bsys\.exit\(\s*(?P<py>\d+)\s*\)"
                   r"|\bprocess\.exit\(\s*(?P<js>\d+)\s*\)")
_OUTPUT = LazyPattern(r"(?:^|[\s;&|{(])(?:echo|printf)\b|\bcat\s*<<|\bprint\(|console\."
                     r"(?:log|error)\(|sys\.std(?:out|err)\.write\(")
_TO_STDERR = LazyPattern(r"[0-9]?>&\s*2\b|>\s*/dev/stderr|file\s*=\s*sys\.stderr|sys\.stderr|"
                        r"console\.error")
_ELSEWHERE = LazyPattern(r"(?<![0-9&])>{1,2}\s*(?!&)[\"'$\w./-]|\|")
"""Output written to a file or piped on: not the hook's stdout."""
_ALL_TO_STDERR = LazyPattern(r"^\s*exec\s+(?:1?>&\s*2|1?>\s*/dev/stderr)", re.MULTILINE)
_BLOCK_WORDS = LazyPattern(r"\b(?:block(?:ed|ing)?|denied|deny(?:ing)?|not allowed|forbidden|"
                          r"refus(?:e|ed|ing)|prohibited|rejected)\b", re.IGNORECASE)
_DECISION = LazyPattern(r"\b(?:decision|permissionDecision)\b")
"""A hook answering in JSON (`"decision": "block"`): its exit status is not its verdict."""
_STOP_LOOKING = LazyPattern(r"^\s*(?:fi|done|esac|return\b|exit\b|\}|;;)|\bthen\s*$|^\s*else\b"
                           r"|^\s*(?:def|function)\s|\(\)\s*\{\s*$")
"""A line that ends the statements an `exit` belongs to, looking back from it."""


@dataclass(frozen=True)
class HookText:
    """One shell or script text a hook runs: its inline command, or a script file."""

    event: str
    where: tuple[str | int, ...]
    """Path of the hook's `command` below `hooks`."""
    command: str
    script: str | None
    """The script's project-relative path, or None for the inline command."""
    path: str | None
    lines: list[str]


def _read_script(ctx: RuleContext, rel: str) -> list[str] | None:
    if ctx.root is None:
        return None
    path = os.path.normpath(os.path.join(ctx.root, rel))
    if not path.startswith(os.path.normpath(ctx.root) + os.sep):
        return None
    ctx.depends_on.add(path)
    try:  # confined: no link out of the workspace, no FIFO
        data = read_head(ctx.root, path, _SCRIPT_LIMIT)[0]
    except OSError:
        return None  # missing: BTN804; a link out or a FIFO: not read
    return data.decode("utf-8", errors="replace").splitlines()


def hook_texts(doc: Any, ctx: RuleContext) -> list[HookText]:
    """Every command hook's inline text and the project scripts it runs, read once."""
    cached: list[HookText] | None = ctx.memo.get("hook-texts")
    if cached is not None:
        return cached
    found: list[HookText] = []
    hooks = hooks_of(doc, ctx)
    if hooks is not None:
        for event, where, command in command_hooks(hooks):
            found.append(HookText(event, where, command, None, None, command.splitlines()))
            for rel in hook_scripts(command, plugin_hooks_file(ctx)):
                lines = _read_script(ctx, rel)
                if lines is not None and ctx.root is not None:
                    found.append(HookText(event, where, command, rel,
                                          os.path.join(ctx.root, rel), lines))
    ctx.memo["hook-texts"] = found
    return found


def _code_lines(lines: list[str]) -> list[str]:
    """The lines with comments blanked (a `#` line in shell or Python), numbering kept."""
    return ["" if line.lstrip().startswith("#") else line for line in lines]


def _at(hooks: Hooks, text: HookText, needle: str) -> Range:
    return hooks.part(text.where, text.script or needle)


def _related(text: HookText, line: int, message: str) -> list[Related]:
    if text.path is None:
        return []
    width = len(text.lines[line]) if line < len(text.lines) else 0
    return [Related(path=text.path, range=Range.of_line(line, 0, width), message=message)]


def _shown(text: HookText) -> str:
    return f"runs `{text.script}`, which" if text.script else ""


@rule("BTN809", "hook-env-never-set", Severity.WARNING, HOOKED, cross_file=True,
      convention=CC)
def hook_env_never_set(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A hook reads an environment variable Claude Code never sets (`$CLAUDE_TOOL_INPUT`).

    Claude Code passes a hook the event — tool name, tool input, file path, prompt — as JSON
    on stdin; the only variables it adds are `CLAUDE_PROJECT_DIR`, the plugin ones,
    `CLAUDE_ENV_FILE` on a few events and the session's ids (the 2.1.331 bundle's hook runner;
    `CLAUDE_TOOL_INPUT`, `CLAUDE_FILE_PATHS` and `TOOL_INPUT` occur nowhere in it). So
    `$CLAUDE_TOOL_INPUT`, `$CLAUDE_TOOL_NAME`, `$CLAUDE_FILE_PATHS`, `$TOOL_INPUT` are
    empty and the hook's test never matches. Reported in an inline command, and in a script
    the hook runs that does not read stdin; not when the command or script sets the variable
    itself or the settings' `env` defines it.

    Fix: read the event from stdin (`jq -r '.tool_input.file_path'`).

    Reported:

        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
          "command": "echo \\"$CLAUDE_TOOL_INPUT\\" | grep -qE 'rm -rf' && exit 2 || exit 0"}]}]}}

    Not reported:

        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
          "command": "jq -r .tool_input.command | grep -qE 'rm -rf' && exit 2 || exit 0"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    env = doc.data.get("env") if isinstance(doc, ClaudeSettings) and doc.data else None
    defined = set(env) if isinstance(env, dict) else set()
    reported: set[tuple[tuple[str | int, ...], str | None]] = set()
    for text in hook_texts(doc, ctx):
        body = "\n".join(_code_lines(text.lines))
        if text.script is not None and _READS_STDIN.search(body):
            continue  # the variable is a fallback beside the real input
        for no, line in enumerate(_code_lines(text.lines)):
            m = NEVER_SET.search(line)
            if m is None or m["name"] in defined or re.search(
                    _ASSIGNED.format(name=m["name"]), body, re.MULTILINE):
                continue
            key = (text.where, text.script)
            if key in reported:
                break
            reported.add(key)
            name = m["name"]
            where = f"runs `{text.script}`, which reads" if text.script else "reads"
            yield ctx.finding(_at(hooks, text, f"${name}" if f"${name}" in text.command
                                  else "${" + name),
                              f"`{text.event}` hook {where} `${name}`, which Claude Code never "
                              "sets: it is empty; the event (tool input, file path) comes as "
                              "JSON on stdin",
                              related=_related(text, no, f"reads ${name}"))
            break


def _exits(lines: list[str], code: str) -> Iterator[tuple[int, int]]:
    """(line, column) of each `exit <code>` / `sys.exit(<code>)` in `lines`."""
    for no, line in enumerate(lines):
        for m in _EXIT.finditer(line):
            if (m["code"] or m["py"] or m["js"]) == code:
                yield no, m.start()


def _before(lines: list[str], no: int, col: int) -> list[str]:
    """The statements an exit at (`no`, `col`) ends: its own line up to it, then the lines
    above back to the start of its block."""
    found = [lines[no][:col]]
    for back in range(no - 1, max(-1, no - 1 - LOOK_BACK), -1):
        line = lines[back]
        if _STOP_LOOKING.search(line):
            if re.search(r"\bthen\s*$", line):
                found.append(line)
            break
        found.append(line)
    return found


def _printed(statement: str) -> bool:
    """A statement that prints (not one inside `$(…)`, whose output is captured)."""
    m = _OUTPUT.search(statement)
    return m is not None and "$(" not in statement[:m.start() + 1] \
        and "`" not in statement[:m.start() + 1]


def _statements(line: str) -> list[str]:
    return [s for s in re.split(r"&&|\|\||;", line) if s.strip()]


@rule("BTN810", "hook-exit-1-does-not-block", Severity.WARNING, HOOKED, cross_file=True,
      convention=CC)
def hook_exit_one(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A hook says it blocks, then exits 1: Claude Code blocks only on exit 2.

    For `PreToolUse`, `PermissionRequest`, `UserPromptSubmit`, `Stop` and `SubagentStop`
    hooks, exit status 2 blocks the action and feeds stderr to Claude; any other non-zero
    status is a "non-blocking error": the tool call, prompt or stop goes ahead (the hooks
    reference's exit-code table; the 2.1.331 bundle blocks on `status===2` only). Reported
    when the hook prints a block message ("BLOCKED", "denied", "not allowed") right before
    `exit 1` and never exits 2 or answers with a JSON `decision`.

    Fix: `echo "reason" >&2; exit 2`.

    Reported:

        ==> .claude/hooks/check-gates.sh <==
        #!/bin/bash
        if ! grep -q "$STORY_ID" .gates/passed; then
            echo "  GATE ENFORCEMENT: Push Blocked"
            exit 1
        fi
        exit 0
        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
          "command": "bash .claude/hooks/check-gates.sh"}]}]}}

    Not reported:

        ==> .claude/hooks/check-gates.sh <==
        #!/bin/bash
        if ! grep -q "$STORY_ID" .gates/passed; then
            echo "  GATE ENFORCEMENT: Push Blocked" >&2
            exit 2
        fi
        exit 0
        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
          "command": "bash .claude/hooks/check-gates.sh"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    reported: set[tuple[tuple[str | int, ...], str | None]] = set()
    for text in hook_texts(doc, ctx):
        if text.event not in BLOCKING_EVENTS or (text.where, text.script) in reported:
            continue
        lines = _code_lines(text.lines)
        body = "\n".join(lines)
        if any(True for _ in _exits(lines, "2")) or _DECISION.search(body):
            continue
        for no, col in _exits(lines, "1"):
            said = [s for line in _before(lines, no, col) for s in _statements(line)
                    if _printed(s) and _BLOCK_WORDS.search(s)]
            if not said:
                continue
            reported.add((text.where, text.script))
            what = f"`{text.script}`" if text.script else "its command"
            words = _BLOCK_WORDS.search(said[0])
            assert words is not None
            yield ctx.finding(_at(hooks, text, "exit 1"),
                              f"`{text.event}` hook: {what} says \"{words.group(0)}\" and exits "
                              f"1 (line {no + 1}), but Claude Code blocks only on exit 2; exit 1 "
                              "is a non-blocking error and the action goes ahead",
                              related=_related(text, no, "exit 1"))
            break


@rule("BTN811", "hook-block-reason-on-stdout", Severity.WARNING, HOOKED, cross_file=True,
      convention=CC)
def hook_reason_on_stdout(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A hook exits 2 after printing its reason to stdout: Claude gets "No stderr output".

    On exit 2 Claude Code takes the blocking message from the hook's stderr only and shows
    Claude "No stderr output" when there is none (the 2.1.331 bundle:
    `Ri.stderr||"No stderr output"`); stdout is not read on exit 2. A hook that echoes
    "BLOCKED: eval wrapping detected" without `>&2` blocks, but Claude never learns why and
    retries blindly. Reported when every message printed before an `exit 2` goes to stdout
    and the script does not `exec >&2`.

    Fix: print the reason with `>&2` (`print(..., file=sys.stderr)` in Python).

    Reported:

        ==> .claude/hooks/pre-tool-use-bash-firewall.sh <==
        #!/bin/bash
        COMMAND=$(jq -r '.tool_input.command')
        if echo "$COMMAND" | grep -qE '(^|\\s)eval\\s'; then
          echo "BLOCKED: eval wrapping detected: $COMMAND"
          exit 2
        fi
        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
          "command": "bash .claude/hooks/pre-tool-use-bash-firewall.sh"}]}]}}

    Not reported:

        ==> .claude/hooks/pre-tool-use-bash-firewall.sh <==
        #!/bin/bash
        COMMAND=$(jq -r '.tool_input.command')
        if echo "$COMMAND" | grep -qE '(^|\\s)eval\\s'; then
          echo "BLOCKED: eval wrapping detected: $COMMAND" >&2
          exit 2
        fi
        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
          "command": "bash .claude/hooks/pre-tool-use-bash-firewall.sh"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    reported: set[tuple[tuple[str | int, ...], str | None]] = set()
    for text in hook_texts(doc, ctx):
        if (text.where, text.script) in reported:
            continue
        lines = _code_lines(text.lines)
        if _ALL_TO_STDERR.search("\n".join(lines)):
            continue
        for no, col in _exits(lines, "2"):
            printed = [s for line in _before(lines, no, col) for s in _statements(line)
                       if _printed(s)]
            if any(_TO_STDERR.search(s) for s in printed) or not any(
                    not _ELSEWHERE.search(s.split("<<")[0]) for s in printed):
                continue
            reported.add((text.where, text.script))
            what = f"`{text.script}` prints" if text.script else "its command prints"
            yield ctx.finding(_at(hooks, text, "exit 2"),
                              f"`{text.event}` hook: {what} its reason to stdout, then exits 2 "
                              f"(line {no + 1}): Claude Code reads the reason from stderr only, "
                              "so Claude is told \"No stderr output\"; print it with `>&2`",
                              related=_related(text, no, "exit 2"))
            break

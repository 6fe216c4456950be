"""BTN230-BTN231: text of a skill (`.claude/skills/<name>/SKILL.md`) that Claude Code rewrites when
the skill is invoked.

Claude Code 2.1 fills a skill's arguments into its text before the model reads it (its
argument substitution, which runs when the skill is invoked with arguments, by `/name args`
or by the Skill tool's `args`): `$ARGUMENTS` becomes the whole string, `$ARGUMENTS[N]` and
`$N` the N-th word counted from 0 when there is one, and `\\$` keeps a dollar. It does this in
code blocks too, where `$1` is usually the shell's own positional parameter. `${1}` is left
alone. Verified with the pinned `claude` (a Skill tool call against the fake API): `local
task_number="$1"` reached the model as `local task_number="specs/plan.md"`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from ..model.agent import CommandFile
from ..model.base import Convention, Finding, Kind, Range, Severity
from ..parse.markdown import parse_markdown
from ..parse.text import Source
from ..runs.confine import read_head
from .base import RuleContext, rule

CC = Convention.CLAUDE_CODE
SKILL = (Kind.SKILL,)

POSITIONAL = re.compile(r"(?<!\\)\$(\d+)(?!\w)")
"""What Claude Code replaces: `$` and digits not followed by a word character."""
_FUNCTION = re.compile(r"^(\s*)(?:function\s+[A-Za-z_][\w:.-]*(?:\s*\(\))?|[A-Za-z_][\w:.-]*"
                       r"\s*\(\))\s*\{?\s*(?:#.*)?$")
_AWK = re.compile(r"\b[gm]?awk\b[^'\n]*'([^'\n]*)'")


_TAKES_ARGUMENTS = re.compile(r"\$ARGUMENTS\b")
_ARGS_LINE = re.compile(r"^\W*(?:-\s*)?[\"']?args[\"']?\s*[:=]\s*\S")
_READ_LIMIT = 1 << 20


def takes_arguments(doc: CommandFile, ctx: RuleContext) -> bool:
    """Whether the skill is invoked with arguments: it reads `$ARGUMENTS`, declares an
    `argument-hint` or `arguments`, or a command, agent or skill of the workspace passes it
    `args` (`skill: "x"` with an `args:` line within the next three lines)."""
    fm = doc.frontmatter
    if fm is not None and any(e.key in ("argument-hint", "arguments") and e.value
                              for e in fm.entries):
        return True
    if any(_TAKES_ARGUMENTS.search(line) for line in ctx.lines):
        return True
    if ctx.index is None or ctx.root is None:
        return False
    name = Path(ctx.path).parent.name  # Claude Code registers a skill by its folder
    mention = re.compile(r"\bskill\W{0,4}[:=(]\s*[\"'`]?" + re.escape(name) + r"\b")
    for path, kind in ctx.index.files().items():
        if kind not in (Kind.COMMAND, Kind.AGENT, Kind.SKILL) or path == ctx.path:
            continue
        ctx.depends_on.add(path)
        try:
            text = read_head(ctx.root, path, _READ_LIMIT)[0].decode("utf-8", "replace")
        except OSError:
            continue
        if name not in text:
            continue
        lines = text.splitlines()
        for i, line in enumerate(lines):
            if mention.search(line) and (
                    "args" in line or any(_ARGS_LINE.match(x) for x in lines[i + 1:i + 4])):
                return True
    return False


def _ordinal(n: int) -> str:
    return {1: "first", 2: "second", 3: "third", 4: "fourth"}.get(n, f"{n}th")


def _shell_uses(lines: list[str], start: int, end: int) -> Iterator[tuple[int, re.Match[str],
                                                                           str]]:
    """(line, `$N` match, where) for positional parameters the shell owns inside the fence
    body [start, end): in a function's body or an awk program."""
    i = start
    while i < end:
        line = lines[i]
        fn = _FUNCTION.match(line)
        if fn:
            indent = len(fn.group(1))
            name = line.strip().split("(")[0].replace("function", "").strip()
            j = i + 1
            while j < end:
                body = lines[j]
                if body.strip() == "}" and len(body) - len(body.lstrip()) == indent:
                    break
                for m in POSITIONAL.finditer(body):
                    yield j, m, f"function `{name}`"
                j += 1
            i = j + 1
            continue
        for awk in _AWK.finditer(line):
            for m in POSITIONAL.finditer(line, awk.start(1), awk.end(1)):
                yield i, m, "the awk program"
        i += 1


@rule("BTN230", "skill-positional-parameter-substituted", Severity.WARNING, SKILL,
      convention=CC)
def positional_substituted(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A shell function or awk program in a skill uses `$1`, which Claude Code replaces with
    the skill's arguments.

    When a skill is invoked with arguments (`/name a b`, or the Skill tool's `args`), Claude
    Code replaces every `$N` of its text with the N-th word of the arguments, counted from
    0 — inside code blocks too. A function's `local x="$1"` then reaches the model as
    `local x="b"`, and `awk '{print $1}'` as `awk '{print b}'`: the code the model runs is
    not the code in the file. Only `$N` inside a function body or an awk program is reported,
    where it is certainly the shell's; `$1` meant as the skill's argument is not; and only in
    a skill that is given arguments: it reads `$ARGUMENTS`, declares an `argument-hint`, or a
    command of the workspace invokes it with `args:` (without arguments nothing is replaced).

    Fix: write `${1}` in shell and `$(1)` in awk (Claude Code leaves both alone; the shell
    and awk read them as `$1`).

    Reported:

        ==> .claude/skills/skill-orchestrate/SKILL.md <==
        ---
        name: skill-orchestrate
        description: Orchestrate a task's phases
        argument-hint: TASK_NUMBER [SESSION_ID]
        ---

        ```bash
        invoke_drift_inspection() {
          local task_number="$1"
          local plan_path="$2"
        }
        ```

    Not reported (braced parameters are left alone):

        ==> .claude/skills/skill-orchestrate/SKILL.md <==
        ---
        name: skill-orchestrate
        description: Orchestrate a task's phases
        ---

        Task: $ARGUMENTS

        ```bash
        invoke_drift_inspection() {
          local task_number="${1}"
          local plan_path="${2}"
        }
        awk '{print $(1)}' list.txt
        ```
    """
    if not any(POSITIONAL.search(line) for line in ctx.lines):
        return
    md = parse_markdown(Source.from_text("\n".join(ctx.lines)))
    lines = md.lines
    found = [(no, m, where) for fence in md.fences
             for no, m, where in _shell_uses(lines, fence.body.start,
                                             min(fence.body.stop, len(lines)))]
    if not found or not takes_arguments(doc, ctx):
        return
    for fence in md.fences:
        body = fence.body
        seen: set[str] = set()
        for no, m, where in _shell_uses(lines, body.start, min(body.stop, len(lines))):
            key = where if where != "the awk program" else f"awk{no}"
            if key in seen:
                continue  # one finding per function or awk line is enough to fix them all
            seen.add(key)
            n = int(m.group(1))
            fix = f"$({n})" if where == "the awk program" else f"${{{n}}}"
            yield ctx.finding(
                Range.of_line(no, m.start(), m.end()),
                f"`{m.group(0)}` in {where}: when the skill is invoked with arguments, "
                f"Claude Code replaces it with the {_ordinal(n + 1)} word of the arguments "
                f"before the model reads it; write `{fix}`")


@rule("BTN231", "skill-agent-without-fork", Severity.WARNING, SKILL, fixable=True,
      convention=CC)
def agent_without_fork(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """A skill names an `agent` to run in but not `context: fork`: it runs inline instead.

    Claude Code starts a skill in a subagent only when its front matter says `context: fork`
    (claude 2.1.331 keeps `context` only as `e.context==="fork"?"fork":void 0`, and a
    skill without it is expanded into the main conversation); `agent` picks which subagent
    type that fork uses and is read for nothing else. So `agent: security-reviewer` alone
    leaves the skill running in the main conversation, with its tools and context, not in
    the agent it names. Not reported when the skill's own text names that agent (it spawns
    it itself, `subagent_type: "…"`, and keeps `agent` as a note of its target).

    Fix: add `context: fork` (a quick fix), or remove `agent`.

    Reported:

        ==> .claude/skills/patent-fetch/SKILL.md <==
        ---
        name: patent-fetch
        description: "Fetch complete patent details from Google Patents."
        agent: general-purpose
        ---

        # Patent Fetch

        Fetch detailed patent information by patent ID from Google Patents.

    Not reported:

        ==> .claude/skills/skill-meta/SKILL.md <==
        ---
        name: skill-meta
        description: Interactive system builder.
        allowed-tools: Agent, Bash, Edit, Read, Write
        agent: meta-builder-agent
        ---

        # Meta Skill

        Thin wrapper that delegates system building to `meta-builder-agent` subagent.
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None:
        return
    entry = fm.get("agent")
    if entry is None or not isinstance(entry.value, str) or not entry.value.strip():
        return
    context = fm.get("context")
    if context is not None and context.value == "fork":
        return
    agent = entry.value.strip()
    named = re.compile(r"(?<![\w-])" + re.escape(agent) + r"(?![\w-])", re.IGNORECASE)
    if any(named.search(line) for line in ctx.lines[fm.range.end_line + 1:]):
        return  # the skill spawns the agent itself
    if context is None:
        said = "has no `context: fork`"
        line = entry.range.end_line
        fix = ctx.fix("Add `context: fork`",
                      ctx.edit(Range.of_line(line + 1), "context: fork\n")) \
            if entry.range.start_line == line else None
    else:
        said = f"has `context: {context.value}`, and only `fork` means a subagent"
        fix = None
    yield ctx.finding(
        entry.key_range,
        f"`agent: {agent}` applies only with `context: fork`, and this skill {said}: Claude "
        f"Code runs it inline in the main conversation, not in `{agent}`", fix=fix)

"""BTN30x: front matter of slash-command files (`.claude/commands/*.md`)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import PurePath
from typing import Any

from ..model.agent import CommandFile
from ..model.base import Convention, Finding, Fix, Kind, Range, Related, Severity
from ..model.claude_models import CLI_FRONTMATTER_KEYS, MISTAKEN_KEYS, SKILL_KEYS
from ..model.common import Frontmatter, FrontmatterEntry, ListItem
from ..parse.markdown import blank_code_spans
from .base import RuleContext, closest, rule

COMMAND = (Kind.COMMAND,)
COMMAND_OR_SKILL = (Kind.COMMAND, Kind.SKILL)
CC = Convention.CLAUDE_CODE
WORKFLOW = Convention.WORKFLOW_AGENTS

CLAUDE_CODE_KEYS = tuple(k.name for k in SKILL_KEYS)
"""What Claude Code reads in command and skill front matter (one table: claude_models)."""
WORKFLOW_KEYS = ("command-type", "dependent-agents", "dependent-commands", "parent-commands",
                 "library-requirements", "documentation")
"""The seeds' own command keys, read by their registry and documentation tooling."""
KNOWN_KEYS = (*CLAUDE_CODE_KEYS, *WORKFLOW_KEYS)
RECOGNISED = frozenset((*KNOWN_KEYS, *CLI_FRONTMATTER_KEYS))
TYPO = 0.9
"""difflib ratio above which a long unknown key is a misspelling of a Claude Code key."""
TYPO_MIN_LENGTH = 7
"""Shorter keys (`mode`, `tool`) are too close to everything to call misspellings."""


def _normal(key: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "-", key).lower().replace("_", "-")


def _misspelling_of(key: str) -> str | None:
    """The Claude Code key `key` misspells: the same word in another case or separator
    (`allowed_tools`, `argumentHint`), or one edit away from a long key (`descripton`)."""
    normal = _normal(key)
    for known in CLAUDE_CODE_KEYS:
        if _normal(known) == normal:
            return known
    if len(key) < TYPO_MIN_LENGTH:
        return None
    return closest(key, CLAUDE_CODE_KEYS, TYPO)


COMMAND_TYPES = ("primary", "utility", "workflow", "dependent", "example")


def _title_text(doc: CommandFile) -> str:
    title = (doc.title or "").strip().lstrip("/")
    return title.replace('"', "'")


def _own_argument_schema(key: str, value: Any, lines: list[str]) -> bool:
    """`args:` as a list of `{name, description, required}` records is a project's own
    argument schema (its tooling reads it), unless the body expects Claude Code to fill in
    one of them (`{{name}}`, `{{{ args.name }}}`); a bare `args: "<file>"` is a hint put
    under the wrong key."""
    if key.lower() != "args" or not isinstance(value, list) or not value \
            or not all(isinstance(v, dict) for v in value):
        return False
    names = [re.escape(str(v["name"])) for v in value if v.get("name")]
    if not names:
        return True
    filled = re.compile(r"\{\{\{?\s*(?:args\.)?(?:" + "|".join(names) + r")\s*\}\}")
    return not any(filled.search(line) for line in lines)


_USER_ONLY_KEYS = frozenset({"user-only", "user_only", "useronly"})


def _user_only_fix(entry: FrontmatterEntry, fm: Frontmatter, ctx: RuleContext) -> Fix | None:
    """`user-only: true` means `disable-model-invocation: true`; certain only for a true value
    and when the real key is not set already."""
    if entry.key.lower() not in _USER_ONLY_KEYS or entry.value is not True \
            or fm.get("disable-model-invocation") is not None:
        return None
    return ctx.fix(f"Rename `{entry.key}` to `disable-model-invocation`",
                   ctx.edit(entry.key_range, "disable-model-invocation"))


@rule("BTN301", "command-unknown-frontmatter-key", Severity.WARNING, COMMAND_OR_SKILL,
      fixable=True, convention=CC)
def unknown_key(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command front matter has a misspelled key, or one Claude Code is believed to read but
    does not.

    Claude Code reads the keys of its skills frontmatter reference (commands take the same keys
    since commands and skills merged in 2.1.3): `name`, `description`, `when_to_use`,
    `argument-hint`, `arguments`, `disable-model-invocation`, `user-invocable`, `allowed-tools`,
    `disallowed-tools`, `model`, `effort`, `context`, `agent`, `hooks`, `paths`, `shell`, … (and
    the undocumented keys its binary recognises); the seeds' tooling adds `command-type`,
    `dependent-agents`, `dependent-commands`, `parent-commands`, `library-requirements` and
    `documentation`. Reported are misspellings of those (`allowed_tools`, `argument_hint`,
    `descripton`: the setting silently never applies) and settings of other tools people expect
    Claude Code to honour (`thinking`, `temperature`, `args` as a string, `user-only: true`
    where `disable-model-invocation: true` was meant: the model can still invoke the skill). Any
    other key is the project's own metadata, read by its own scripts, and is left alone; so is
    `args` as a list of `{name, description}` records (a project's argument schema) unless the
    body uses one of them as `{{name}}`, which Claude Code never fills in.

    Fix: rename the key to the suggested spelling (a quick fix), or drop the setting.

    Reported:

        ==> .claude/commands/prime.md <==
        ---
        description: Load the project context
        allowed_tools: Read, Bash(git ls-files:*)
        ---

    Not reported:

        ==> .claude/commands/prime.md <==
        ---
        description: Load the project context
        allowed-tools: Read, Bash(git ls-files:*)
        when_to_use: at the start of a session
        cost-profile: light
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.error:
        return
    extra = ctx.config.extra_frontmatter_keys
    for entry in fm.entries:
        if entry.key in RECOGNISED or entry.key in extra or \
                entry.key.replace("_", "-") in WORKFLOW_KEYS:
            continue
        mistaken = MISTAKEN_KEYS.get(entry.key.lower())
        if mistaken is not None:
            if not _own_argument_schema(entry.key, entry.value, ctx.lines):
                yield ctx.finding(entry.key_range,
                                  f"Claude Code does not read `{entry.key}`: {mistaken}",
                                  fix=_user_only_fix(entry, fm, ctx))
            continue
        guess = _misspelling_of(entry.key)
        if guess is None:
            continue  # the project's own metadata (`cost-profile`, `mode`, `command_type`)
        yield ctx.finding(
            entry.key_range,
            f"front matter key `{entry.key}` looks like a misspelling of `{guess}`: Claude Code "
            "does not read it, so the setting never applies",
            fix=ctx.fix(f"Rename `{entry.key}` to `{guess}`", ctx.edit(entry.key_range, guess)))


@rule("BTN302", "command-missing-description", Severity.INFO, COMMAND_OR_SKILL, fixable=True,
      convention=CC)
def missing_description(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command or skill front matter has an empty `description:`.

    A missing description is fine: Claude Code then uses the first line of a command's body
    (the first paragraph of a skill's), per its slash-command and skills docs, so files
    without front matter or without the key are not reported. An explicit empty
    `description:` is what this reports: it is almost always an unfinished edit, and the
    menu and the model see an empty description instead of the body's first line.

    Fix: write one line saying what the command does (the quick fix starts it from the
    file's `# Title`), or delete the empty key.

    Reported:

        ==> .claude/commands/refresh.md <==
        ---
        description:
        allowed-tools: Read
        ---
        # Refresh the index

    Not reported:

        ==> .claude/commands/refresh.md <==
        # Refresh the index

        Re-read every plan and rebuild specs/index.md.
    """
    fm = doc.frontmatter
    if fm is None or fm.error:
        return
    entry = fm.get("description")
    if entry is None or (isinstance(entry.value, str) and entry.value.strip()) \
            or isinstance(entry.value, (list, dict, int, float)):
        return
    title = _title_text(doc)
    fix = None
    if title and entry.range.start_line == entry.range.end_line:
        fix = ctx.fix("Use the title as description",
                      ctx.edit(entry.range, f"description: {json.dumps(title)}"), safe=False)
    yield ctx.finding(entry.range, "command `description` is empty: expected one line saying "
                                   "what the command does (or no key, so Claude Code uses the "
                                   "first line of the body)", fix=fix)


@rule("BTN303", "command-invalid-frontmatter", Severity.ERROR, COMMAND_OR_SKILL, convention=CC)
def invalid_frontmatter(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command front matter cannot be read as YAML, even leniently.

    Claude Code parses the block between the first two `---` lines; when that fails it drops
    every setting in it, including `allowed-tools` and `description`. Baton first tries strict
    YAML and then the flat `key: value` reading Claude Code tolerates (so `argument-hint:
    [--flag] TEXT` is fine); this rule fires only when both fail.

    Fix: correct the YAML at the reported position. Quote values that start with `[`, `{`,
    `*`, `&`, `!`, `%`, `@` or a backtick, and values containing `: `.

    Reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Make a plan
        allowed-tools: [Read
        not a key line
        ---

    Not reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Make a plan
        argument-hint: [--flag] TEXT
        ---
    """
    fm = doc.frontmatter
    if fm is None or not fm.error:
        return
    yield ctx.finding(fm.error_range or Range.of_line(0, 0, 3), fm.error)


@rule("BTN304", "command-unknown-type", Severity.INFO, COMMAND, fixable=True,
      convention=WORKFLOW)
def unknown_command_type(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`command-type` has a value the workflow tooling does not know.

    The command registry and documentation generators group commands by `command-type`:
    `primary`, `utility`, `workflow`, `dependent` (invoked by a parent command, see
    `parent-commands`) and `example`. Another value puts the command in no group.

    Fix: use one of the known types (a quick fix is offered for near misses).

    Reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Make a plan
        command-type: primry
        ---

    Not reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Make a plan
        command-type: primary
        ---
    """
    fm = doc.frontmatter
    entry = fm.get("command-type") if fm is not None and not fm.error else None
    if entry is None:
        return
    value = entry.value
    if isinstance(value, str) and value.strip() in COMMAND_TYPES:
        return
    shown = value if isinstance(value, str) else repr(value)
    guess = closest(shown, COMMAND_TYPES, 0.6) if isinstance(value, str) else None
    fix = ctx.fix(f"Change to `{guess}`", ctx.edit(entry.value_range, guess)) if guess else None
    hint = f"; did you mean `{guess}`?" if guess else ""
    yield ctx.finding(entry.value_range,
                      f"unknown command-type `{shown}`: expected one of "
                      f"{', '.join(COMMAND_TYPES)}{hint}", fix=fix)


def _agent_items(entry: FrontmatterEntry) -> list[ListItem]:
    if entry.items:
        return entry.items
    if isinstance(entry.value, str) and entry.value.strip():
        return [ListItem(value=entry.value, range=entry.value_range)]
    return []


def _agent_ref(value: str) -> str:
    """`research-specialist`, `research-specialist.md` or a path → the agent's file stem."""
    value = value.strip().strip("\"'")
    if value.endswith(".md"):
        return PurePath(value).stem
    return value


@rule("BTN305", "command-unknown-dependent-agent", Severity.ERROR, COMMAND, fixable=True,
      cross_file=True, convention=WORKFLOW)
def unknown_dependent_agent(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`dependent-agents` names an agent that has no file in `.claude/agents/`.

    `dependent-agents` is the command's declared contract: the agents it invokes through
    behavioural injection. Dependency checks and documentation are built from it, so an entry
    without a matching `.claude/agents/<name>.md` means the agent was renamed, deleted or
    misspelt (the repository has both `-` and `_` spellings of some agents).

    Fix: correct the name (a quick fix is offered when one agent name is close), add the
    agent file, or remove the entry. Not checked when the workspace has no `.claude/agents/`
    directory (agents may then live at user level).

    Reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist
        ==> .claude/commands/research.md <==
        ---
        description: Research a topic
        dependent-agents: research-specialst
        ---

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        # Research Specialist
        ==> .claude/commands/research.md <==
        ---
        description: Research a topic
        dependent-agents: research-specialist
        ---
    """
    fm = doc.frontmatter
    entry = fm.get("dependent-agents") if fm is not None and not fm.error else None
    if entry is None or ctx.index is None:
        return
    agents = ctx.agent_paths()
    if not agents and not ctx.exists(ctx.index.agents_dir):
        return
    names = sorted(agents)
    for item in _agent_items(entry):
        if not isinstance(item.value, str):
            continue
        name = _agent_ref(item.value)
        if not name or name in agents or "{{" in name:
            continue
        guess = closest(name, names, 0.8)
        fix = None
        if guess:
            fix = ctx.fix(f"Change to `{guess}`", ctx.edit(item.range, guess))
        hint = f"; did you mean `{guess}`?" if guess else ""
        related = []
        if guess:
            related = [Related(path=str(agents[guess]), range=Range.of_line(0),
                               message=f"agent `{guess}`")]
        yield ctx.finding(item.range,
                          f"dependent agent `{name}` does not exist: expected "
                          f"{ctx.index.rel(ctx.index.agents_dir / f'{name}.md')}{hint}",
                          fix=fix, related=related)


@rule("BTN306", "command-duplicate-frontmatter-key", Severity.WARNING, COMMAND_OR_SKILL,
      convention=CC)
def duplicate_key(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command front matter repeats a key.

    YAML readers keep only one of the values (usually the last), so the other is silently
    lost; which one wins differs between tools.

    Fix: merge the two entries into one.

    Reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Make a plan
        model: sonnet
        model: opus
        ---

    Not reported:

        ==> .claude/commands/plan.md <==
        ---
        description: Make a plan
        model: opus
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.error:
        return
    for dup in fm.duplicates:
        first = fm.get(dup.key)
        related = ([Related(path=ctx.path, range=first.key_range, message="first definition")]
                   if first else [])
        yield ctx.finding(dup.key_range,
                          f"front matter key `{dup.key}` is defined more than once",
                          related=related)


# -- the body as Claude Code expands it ------------------------------------------------------

_INLINE_BASH_RE = re.compile(r"(?:^|(?<=\s))!`([^`\n]+)`")
_READ_ONLY = frozenset({"ls", "cat", "echo", "pwd", "head", "tail", "grep", "find", "wc",
                        "which", "diff", "stat", "du", "cd", "date", "whoami", "uname"})
"""Bash commands Claude Code runs without a permission prompt (permissions docs,
"Read-only commands"), plus read-only `git` forms below."""
_READ_ONLY_GIT = frozenset({"status", "diff", "log", "show", "branch", "rev-parse", "remote",
                            "ls-files", "blame"})


def _prose_lines(ctx: RuleContext, word: str, *more: str) -> Iterator[tuple[int, str, bool]]:
    """(index, text, inside a fenced block) for every line after the front matter that
    holds `word` or one of `more` (no line break in them), fences paired as CommonMark
    pairs them (`parse.markdown`): a ````markdown example holding ```bash blocks is one
    block, however its inner fences are labelled. The lines are found in the file's text
    (`RuleContext.lines_with`): the words are on few of them."""
    md = ctx.markdown()
    fenced = [False] * len(ctx.lines)
    for fence in md.fences:
        fenced[fence.start_line:fence.end_line + 1] = [True] * (
            fence.end_line + 1 - fence.start_line)
    found = sorted({no for w in (word, *more) for no in ctx.lines_with(w)}) if more else \
        ctx.lines_with(word)
    for i in found:
        if i > md.frontmatter_end:
            yield i, ctx.lines[i], fenced[i]


def _read_only(command: str) -> bool:
    """Every simple command is one Claude Code runs without asking (so no rule is needed)."""
    for part in re.split(r"\|\||&&|[|;]", command):
        try:
            words = shlex.split(part)
        except ValueError:
            return False
        if not words:
            continue
        if words[0] == "git":
            if len(words) < 2 or words[1] not in _READ_ONLY_GIT:
                return False
        elif words[0] not in _READ_ONLY or any(c in part for c in "<>"):
            return False
    return True


def _shell_tools(doc: CommandFile) -> tuple[str, ...]:
    fm = doc.frontmatter
    shell = fm.get("shell") if fm is not None else None
    if shell is not None and str(shell.value).strip().lower() == "powershell":
        return ("PowerShell", "Bash")
    return ("Bash",)


@rule("BTN307", "command-inline-bash-not-allowed", Severity.WARNING, COMMAND_OR_SKILL,
      convention=CC)
def inline_bash_not_allowed(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`` !`command` `` runs before the prompt, but `allowed-tools` has no Bash rule for it.

    Claude Code runs every `` !`cmd` `` (at the start of a line or after whitespace) when
    the command or skill is invoked, and injected commands never prompt: when the permission
    check is not "allow", Claude Code aborts the whole invocation with `Shell command
    permission check failed` (skills docs, "How injected commands run"). The command's
    `allowed-tools` is where that allow comes from; when the file has `allowed-tools` but no
    `Bash` entry, only Claude Code's read-only commands (`ls`, `cat`, `git status`, ...) and
    rules in the user's own settings can run. Files without `allowed-tools` are not checked
    (their author relies on settings), nor are read-only commands.

    Fix: add `Bash(<command prefix>:*)` (or `Bash`) to `allowed-tools`.

    Reported:

        ==> .claude/commands/test.md <==
        ---
        description: Run the tests and summarise failures
        allowed-tools: Read, Grep
        ---
        Test output: !`npm test`

    Not reported:

        ==> .claude/commands/test.md <==
        ---
        description: Run the tests and summarise failures
        allowed-tools: Read, Grep, Bash(npm test:*)
        ---
        Branch: !`git branch --show-current`
        Test output: !`npm test`
    """
    fm = doc.frontmatter
    entry = fm.get("allowed-tools") if fm is not None and not fm.error else None
    if entry is None:
        return
    shells = _shell_tools(doc)
    for item in _agent_items(entry):
        name = str(item.value).strip()
        if any(name == t or name.startswith(f"{t}(") for t in shells):
            return
    for i, line, fenced in _prose_lines(ctx, "!`"):  # what the pattern needs
        if fenced:
            continue
        for m in _INLINE_BASH_RE.finditer(line):
            command = m.group(1).strip()
            if _read_only(command):
                continue
            first = command.split()[0] if command.split() else command
            yield ctx.finding(
                Range.of_line(i, m.start(), m.end()),
                f"inline bash `!`{command}`` runs when the command is invoked, but "
                f"`allowed-tools` has no Bash rule: Claude Code aborts the invocation unless "
                f"your settings allow it; expected e.g. `Bash({first}:*)` in `allowed-tools`")


_MUSTACHE_ARGS_RE = re.compile(r"\{\{\s*(ARGUMENTS|[Aa]rguments|ARGS?|[Aa]rgs?|INPUT|[Ii]nput|"
                               r"\d)\s*\}\}")
_DOLLAR_RE = re.compile(r"(?<![\\$\w])\$(?:\{(ARGUMENTS|\d+)\}|(ARGS?|ARGUMENT|ARGV)\b)")


@rule("BTN308", "command-unexpanded-template", Severity.WARNING, COMMAND_OR_SKILL,
      fixable=True, convention=CC)
def unexpanded_template(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """The prose uses argument syntax Claude Code does not expand.

    Claude Code substitutes `$ARGUMENTS`, `$ARGUMENTS[N]`, `$N`, names declared in
    `arguments`, and `${CLAUDE_SESSION_ID}`, `${CLAUDE_EFFORT}`, `${CLAUDE_SKILL_DIR}`,
    `${CLAUDE_PROJECT_DIR}`, `${CLAUDE_PLUGIN_ROOT}`, `${CLAUDE_PLUGIN_DATA}` (skills docs,
    "Available string substitutions"). Other spellings, such as `{{ARGUMENTS}}`,
    `{{input}}`, `${1}`, `${ARGUMENTS}`, `$ARGS` or `$ARGUMENT`, reach the model literally,
    so the command runs without the user's input. Only prose is checked: code blocks and
    code spans are bash the model runs, where `${1}` is a shell variable.

    Fix: use `$ARGUMENTS` or `$N` (the quick fix rewrites the spelling; `$N` counts from 0
    in current Claude Code).

    Reported:

        ==> .claude/commands/fix-issue.md <==
        ---
        description: Fix a GitHub issue
        ---
        Fix issue {{ARGUMENTS}} following our standards.

    Not reported:

        ==> .claude/commands/fix-issue.md <==
        ---
        description: Fix a GitHub issue
        ---
        Fix issue $ARGUMENTS following our standards.

        ```bash
        ISSUE="${1}"
        ```
    """
    fm = doc.frontmatter
    declared: set[str] = set()
    args = fm.get("arguments") if fm is not None and not fm.error else None
    if args is not None:
        values = args.value if isinstance(args.value, list) else str(args.value or "").split()
        declared = {str(v).strip() for v in values}
    for i, line, fenced in _prose_lines(ctx, "$", "{{"):
        if fenced:  # (each pattern needs one of the words; blanking code spans only removes text)
            continue
        masked = blank_code_spans(line)  # linear: the backreference regex it replaces was
        # cubic on a line of backticks (3,000 of them: over 30 s)
        for m in [*_MUSTACHE_ARGS_RE.finditer(masked), *_DOLLAR_RE.finditer(masked)]:
            text = m.group(0)
            inner = m.group(1) or (m.group(2) if m.re is _DOLLAR_RE else None) or ""
            if inner in declared:
                continue
            wanted = f"${inner}" if inner.isdigit() else "$ARGUMENTS"
            yield ctx.finding(
                Range.of_line(i, m.start(), m.end()),
                f"`{text}` is not a substitution Claude Code performs: the model receives it "
                f"literally; expected `{wanted}`",
                fix=ctx.fix(f"Change to `{wanted}`",
                            ctx.edit(Range.of_line(i, m.start(), m.end()), wanted)))

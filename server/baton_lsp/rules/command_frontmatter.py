"""BTN30x: front matter of slash-command files (`.claude/commands/*.md`)."""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from pathlib import PurePath

from ..model.agent import CommandFile
from ..model.base import Finding, Kind, Range, Related, Severity
from ..model.common import FrontmatterEntry, ListItem
from .base import RuleContext, rule

COMMAND = (Kind.COMMAND,)

KNOWN_KEYS = (
    "allowed-tools", "argument-hint", "description", "command-type", "dependent-agents",
    "dependent-commands", "parent-commands", "library-requirements", "documentation", "model",
    "disable-model-invocation", "name",
)
COMMAND_TYPES = ("primary", "utility", "workflow", "dependent", "example")


def nearest(word: str, choices: list[str] | tuple[str, ...], cutoff: float = 0.75) -> str | None:
    """The closest spelling in `choices` (case-insensitive), or None when nothing is close."""
    lowered = {c.lower(): c for c in choices}
    match = difflib.get_close_matches(word.lower().replace("_", "-"), list(lowered), 1, cutoff)
    return lowered[match[0]] if match else None


def _title_text(doc: CommandFile) -> str:
    title = (doc.title or "").strip().lstrip("/")
    return title.replace('"', "'")


@rule("BTN301", "command-unknown-frontmatter-key", Severity.WARNING, COMMAND, fixable=True)
def unknown_key(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command front matter has a key Claude Code and the workflow tooling do not read.

    Claude Code reads `description`, `allowed-tools`, `argument-hint`, `model`,
    `disable-model-invocation` and `name`; this repository's tooling adds `command-type`,
    `dependent-agents`, `dependent-commands`, `parent-commands`, `library-requirements` and
    `documentation`. Any other key is silently ignored, which almost always means a typo
    (`allowed_tools`, `argument_hint`, `descripton`) and a setting that never took effect.

    Fix: rename the key to the suggested spelling (a quick fix is offered when one is close),
    or accept project-specific keys with `extra-frontmatter-keys = ["..."]` in `[tool.baton]`.
    """
    fm = doc.frontmatter
    if fm is None or fm.error:
        return
    known = list(KNOWN_KEYS) + list(ctx.config.extra_frontmatter_keys)
    for entry in fm.entries:
        if entry.key in known:
            continue
        guess = nearest(entry.key, known)
        hint = f"; did you mean `{guess}`?" if guess else ""
        fix = None
        if guess:
            fix = ctx.fix(f"Rename `{entry.key}` to `{guess}`", ctx.edit(entry.key_range, guess))
        yield ctx.finding(
            entry.key_range,
            f"unknown command front matter key `{entry.key}`: expected one of "
            f"{', '.join(known)}{hint}",
            fix=fix,
        )


@rule("BTN302", "command-missing-description", Severity.WARNING, COMMAND, fixable=True)
def missing_description(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command has no `description` in its front matter.

    The description is what `/help` and the slash-command menu show, and what the model reads
    to decide whether the command fits a request. Without it Claude Code falls back to the
    first line of the body, which for these files is usually a heading or an instruction to
    the model, not a summary for a person.

    Fix: add `description: <one line saying what the command does>` to the front matter (the
    quick fix starts it from the file's `# Title`).
    """
    fm = doc.frontmatter
    title = _title_text(doc)
    if fm is None:
        fix = None
        if title:
            fix = ctx.fix("Add front matter with a description",
                          ctx.edit(Range.of_line(0), f"---\ndescription: {title}\n---\n"),
                          safe=False)
        yield ctx.finding(ctx.line_range(0),
                          "command has no front matter, so it has no `description`: expected "
                          "`---` / `description: ...` / `---` at the top of the file", fix=fix)
        return
    if fm.error:
        return
    entry = fm.get("description")
    if entry is not None and isinstance(entry.value, str) and entry.value.strip():
        return
    if entry is not None:
        yield ctx.finding(entry.range, "command `description` is empty: expected one line "
                                       "saying what the command does")
        return
    fix = None
    if title:
        fix = ctx.fix("Add a description", ctx.edit(Range.of_line(1), f"description: {title}\n"),
                      safe=False)
    yield ctx.finding(Range.of_line(0, 0, 3),
                      f"command front matter has no `description` key (found: "
                      f"{', '.join(fm.keys()) or 'no keys'})", fix=fix)


@rule("BTN303", "command-invalid-frontmatter", Severity.ERROR, COMMAND)
def invalid_frontmatter(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command front matter cannot be read as YAML, even leniently.

    Claude Code parses the block between the first two `---` lines; when that fails it drops
    every setting in it, including `allowed-tools` and `description`. Baton first tries strict
    YAML and then the flat `key: value` reading Claude Code tolerates (so `argument-hint:
    [--flag] TEXT` is fine); this rule fires only when both fail.

    Fix: correct the YAML at the reported position. Quote values that start with `[`, `{`,
    `*`, `&`, `!`, `%`, `@` or a backtick, and values containing `: `.
    """
    fm = doc.frontmatter
    if fm is None or not fm.error:
        return
    yield ctx.finding(fm.error_range or Range.of_line(0, 0, 3), fm.error)


@rule("BTN304", "command-unknown-type", Severity.INFO, COMMAND, fixable=True)
def unknown_command_type(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`command-type` has a value the workflow tooling does not know.

    The command registry and documentation generators group commands by `command-type`:
    `primary`, `utility`, `workflow`, `dependent` (invoked by a parent command, see
    `parent-commands`) and `example`. Another value puts the command in no group.

    Fix: use one of the known types (a quick fix is offered for near misses).
    """
    fm = doc.frontmatter
    entry = fm.get("command-type") if fm is not None and not fm.error else None
    if entry is None:
        return
    value = entry.value
    if isinstance(value, str) and value.strip() in COMMAND_TYPES:
        return
    shown = value if isinstance(value, str) else repr(value)
    guess = nearest(shown, COMMAND_TYPES, 0.6) if isinstance(value, str) else None
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
      cross_file=True)
def unknown_dependent_agent(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """`dependent-agents` names an agent that has no file in `.claude/agents/`.

    `dependent-agents` is the command's declared contract: the agents it invokes through
    behavioural injection. Dependency checks and documentation are built from it, so an entry
    without a matching `.claude/agents/<name>.md` means the agent was renamed, deleted or
    misspelt (the repository has both `-` and `_` spellings of some agents).

    Fix: correct the name (a quick fix is offered when one agent name is close), add the
    agent file, or remove the entry. Not checked when the workspace has no `.claude/agents/`
    directory (agents may then live at user level).
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
        guess = nearest(name, names, 0.8)
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
                          f".claude/agents/{name}.md{hint}", fix=fix, related=related)


@rule("BTN306", "command-duplicate-frontmatter-key", Severity.WARNING, COMMAND)
def duplicate_key(doc: CommandFile, ctx: RuleContext) -> Iterator[Finding]:
    """Command front matter repeats a key.

    YAML readers keep only one of the values (usually the last), so the other is silently
    lost; which one wins differs between tools.

    Fix: merge the two entries into one.
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

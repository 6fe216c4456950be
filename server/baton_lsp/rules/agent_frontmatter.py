"""BTN201-BTN209: the YAML front matter of agent files (`.claude/agents/*.md`)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator

import yaml

from ..model.agent import AgentFile
from ..model.base import Finding, Kind, Range, Severity
from ..model.claude_models import ALIASES, INHERIT, SUGGESTIONS, full_id, is_claude_model
from ..model.common import Frontmatter, FrontmatterEntry, ListItem
from ..parse.frontmatter import safe_load
from .base import RuleContext, rule

AGENT = (Kind.AGENT,)

KNOWN_TOOLS = (
    "Read", "Write", "Edit", "MultiEdit", "Bash", "BashOutput", "KillShell", "KillBash",
    "Grep", "Glob", "LS", "WebSearch", "WebFetch", "Task", "TodoWrite", "TodoRead",
    "NotebookEdit", "NotebookRead", "SlashCommand", "Skill", "ExitPlanMode", "AskUserQuestion",
)
TOOL_KEYS = ("allowed-tools", "tools")
MODEL_KEYS = ("model", "fallback-model")
MODEL_SUGGESTIONS = SUGGESTIONS

_KEY_LINE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*\s*:")
_MCP_RE = re.compile(r"^mcp__[A-Za-z0-9_.-]+$")
_SCOPED_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*\((.*)\)$", re.DOTALL)
def _source(ctx: RuleContext, rng: Range) -> str:
    """The text under a single-line range ('' when the range spans lines)."""
    if rng.start_line != rng.end_line or not 0 <= rng.start_line < len(ctx.lines):
        return ""
    return ctx.lines[rng.start_line].rstrip("\r")[rng.start_char:rng.end_char]


def _is_agent(doc: AgentFile) -> bool:
    """Templates and prompt fragments are not agents Claude Code loads."""
    return not (doc.is_template or doc.is_prompt)


def _yaml_scalar(text: str) -> str:
    """`text` as a YAML plain scalar when that round-trips, else double-quoted."""
    try:
        if safe_load(f"k: {text}") == {"k": text}:
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)


def _nearest(name: str, candidates: list[str]) -> str | None:
    folded = {c.lower(): c for c in candidates}
    if name.lower() in folded:
        return folded[name.lower()]
    close = difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.6)
    return folded[close[0]] if close else None


# -- presence and readability ---------------------------------------------------------


@rule("BTN201", "agent-missing-frontmatter", Severity.WARNING, AGENT, fixable=True)
def missing_frontmatter(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent file has no YAML front matter.

    Claude Code reads an agent's `description` (when to use it) and its tools and model from
    the `---` block at the very top of the file; it only recognises the block when line 1 is
    exactly `---`. Without it the agent is invisible to automatic delegation and gets default
    tools. Files under `agents/templates/` and `agents/prompts/` are fragments, not agents,
    and are skipped.

    Fix: add a block such as

        ---
        name: my-agent
        description: One line saying when to use this agent
        ---

    as the first lines of the file (the quick fix inserts one built from the file name and
    title; review the description), or remove the blank lines above an existing block.
    """
    if doc.frontmatter is not None or not _is_agent(doc):
        return
    lines = ctx.lines
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None and first > 0 and lines[first].strip() == "---" \
            and first + 1 < len(lines) and _KEY_LINE_RE.match(lines[first + 1]):
        yield ctx.finding(
            Range.of_line(first, 0, len(lines[first])),
            f"agent `{doc.name}` has front matter starting on line {first + 1}: expected "
            "`---` on line 1, found blank lines above it, so Claude Code ignores the block",
            fix=ctx.fix("Remove the blank lines before the front matter",
                        ctx.edit(Range.span(0, 0, first, 0), "")))
        return
    title = doc.title or doc.name
    skeleton = (f"---\nname: {_yaml_scalar(doc.name)}\n"
                f"description: {_yaml_scalar(title)}\n---\n\n")
    head = lines[0].rstrip("\r") if lines else ""
    found = f"`{head[:40]}`" if head else "an empty line"
    yield ctx.finding(
        ctx.line_range(0),
        f"agent `{doc.name}` has no front matter: expected a `---` block on line 1 with at "
        f"least `description:`, found {found} on line 1",
        fix=ctx.fix("Insert front matter (review the description)",
                    ctx.edit(Range.of_line(0), skeleton), safe=False))


@rule("BTN202", "agent-frontmatter-invalid", Severity.ERROR, AGENT)
def frontmatter_invalid(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter cannot be read, even as flat `key: value` lines.

    When the block between the `---` lines is neither valid YAML nor a list of simple
    `key: value` lines, no tool can tell what the agent's description, tools or model are;
    Claude Code may skip the agent or load it without its settings.

    Fix: correct the reported line. Quote values that contain `: `, start with `[`, `{`,
    `*`, `&`, `!`, `%`, `@` or a backquote, or contain ` #`.
    """
    fm = doc.frontmatter
    if fm is None or fm.error is None:
        return
    yield ctx.finding(fm.error_range or Range.of_line(0, 0, 3),
                      f"agent `{doc.name}`: {fm.error}; expected YAML `key: value` lines")


def _lenient_culprit(fm: Frontmatter, ctx: RuleContext) -> FrontmatterEntry | None:
    """The first entry whose lines are not valid YAML on their own."""
    for entry in fm.entries:
        start, end = entry.range.start_line, entry.range.end_line
        text = "\n".join(ctx.lines[start:end + 1])
        try:
            safe_load(text)
        except yaml.YAMLError:
            return entry
    return None


@rule("BTN203", "agent-frontmatter-not-strict-yaml", Severity.HINT, AGENT, fixable=True)
def frontmatter_lenient(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter is not strict YAML; it was read as flat `key: value` lines.

    Claude Code reads simple front matter line by line, so a value such as
    `argument-hint: [--flag] TEXT` works there, but YAML parsers (editors, linters, other
    agent runners) reject the whole block or read the value as a list. Baton read it
    leniently, the way Claude Code does, so its other checks still ran.

    Fix: quote the value (the quick fix wraps it in double quotes, which every reader
    understands the same way).
    """
    fm = doc.frontmatter
    if fm is None or fm.lenient_reason is None:
        return
    entry = _lenient_culprit(fm, ctx)
    if entry is None:
        yield ctx.finding(Range.of_line(fm.range.start_line, 0, 3),
                          f"agent `{doc.name}`: {fm.lenient_reason}; read as flat `key: value` "
                          "lines instead, which other tools may read differently")
        return
    fix = None
    raw = _source(ctx, entry.value_range)
    if isinstance(entry.value, str) and raw and entry.range.start_line == entry.range.end_line:
        quoted = json.dumps(entry.value, ensure_ascii=False)
        try:
            ok = safe_load(f"{entry.key}: {quoted}") == {entry.key: entry.value}
        except yaml.YAMLError:
            ok = False
        if ok:
            fix = ctx.fix(f"Quote the value of `{entry.key}`",
                          ctx.edit(entry.value_range, quoted))
    reason = fm.lenient_reason.removeprefix("front matter is not valid YAML: ")
    yield ctx.finding(
        entry.range if entry.range.start_line == entry.range.end_line else entry.key_range,
        f"value of `{entry.key}` is not valid YAML ({reason}): Claude Code reads it as plain "
        "text but YAML tools reject or reinterpret it; expected a quoted string",
        fix=fix)


# -- required keys --------------------------------------------------------------------


def _is_blank(entry: FrontmatterEntry | None) -> bool:
    return entry is not None and (entry.value is None or str(entry.value).strip() == "")


@rule("BTN204", "agent-missing-description", Severity.WARNING, AGENT, fixable=True)
def missing_description(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter has no `description`.

    The description is how Claude Code decides when to delegate to an agent and what the
    `/agents` list shows; an agent without one is never picked automatically and callers
    cannot tell what it does.

    Fix: add `description: <one line saying when to use this agent>` (the quick fix uses the
    file's title as a starting point).
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _is_agent(doc):
        return
    entry = fm.get("description")
    if entry is not None and not _is_blank(entry):
        return
    if entry is not None:
        yield ctx.finding(entry.key_range,
                          f"agent `{doc.name}` has an empty `description`: expected one line "
                          "saying when to use the agent")
        return
    text = _yaml_scalar(doc.title or doc.name)
    keys = ", ".join(f"`{e.key}`" for e in fm.entries) or "no keys"
    yield ctx.finding(
        Range.of_line(fm.range.start_line, 0, 3),
        f"agent `{doc.name}` front matter has no `description`: expected one line saying when "
        f"to use the agent, found only {keys}",
        fix=ctx.fix("Add a description (review it)",
                    ctx.edit(Range.of_line(fm.range.end_line), f"description: {text}\n"),
                    safe=False))


def _newer_format(fm: Frontmatter) -> bool:
    keys = {e.key for e in fm.entries}
    return "tools" in keys or not ({"allowed-tools", "model"} & keys)


@rule("BTN205", "agent-missing-name", Severity.WARNING, AGENT, fixable=True)
def missing_name(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter in the newer format has no `name`.

    The newer agent format (G3: `name:` + `description:`, optionally `tools:` and `model:`)
    identifies an agent by its `name` key. It is recognised here by a `tools` key or by the
    absence of both `allowed-tools` and `model`, which the older format always carries. An
    agent without a name falls back to tool-specific defaults and may not be found when a
    skill or command delegates to it by name.

    Fix: add `name: <file name without .md>` (the quick fix does exactly that).
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _is_agent(doc) or not fm.entries:
        return
    if not _newer_format(fm):
        return
    entry = fm.get("name")
    if entry is not None and not _is_blank(entry):
        return
    if entry is not None:
        yield ctx.finding(
            entry.key_range,
            f"agent `{doc.name}` has an empty `name`: expected `name: {doc.name}`",
            fix=ctx.fix(f"Set name to `{doc.name}`",
                        ctx.edit(entry.range, f"name: {_yaml_scalar(doc.name)}")))
        return
    yield ctx.finding(
        Range.of_line(fm.range.start_line, 0, 3),
        f"agent `{doc.name}` uses the newer front matter format (no `allowed-tools`/`model`) "
        f"but has no `name`: expected `name: {doc.name}`",
        fix=ctx.fix(f"Add `name: {doc.name}`",
                    ctx.edit(Range.of_line(fm.range.start_line + 1),
                             f"name: {_yaml_scalar(doc.name)}\n")))


# -- values ---------------------------------------------------------------------------


def _entry_items(entry: FrontmatterEntry) -> list[ListItem]:
    if entry.items:
        return entry.items
    if isinstance(entry.value, (str, int, float)) and not isinstance(entry.value, bool):
        return [ListItem(value=entry.value, range=entry.value_range)]
    return []


def _tool_ok(name: str, known: set[str]) -> bool:
    if name in known or name == "None" or _MCP_RE.match(name):
        return True
    m = _SCOPED_RE.match(name)
    return bool(m and m.group(1) in known)


@rule("BTN206", "agent-unknown-tool", Severity.WARNING, AGENT, fixable=True)
def unknown_tool(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """`allowed-tools` / `tools` names a tool Claude Code does not have.

    Claude Code silently ignores unknown tool names, so a typo such as `Reed` or `webfetch`
    leaves the agent without the tool it was meant to have and it fails later, far from the
    cause. Accepted: the built-in tools (Read, Write, Edit, MultiEdit, Bash, BashOutput,
    KillShell, KillBash, Grep, Glob, LS, WebSearch, WebFetch, Task, TodoWrite, TodoRead,
    NotebookEdit, NotebookRead, SlashCommand, Skill, ExitPlanMode, AskUserQuestion),
    `mcp__server__tool` names, scoped permissions such as `Bash(git:*)` whose tool part is
    known, the literal `None`, and names listed in `extra-tools` of `[tool.baton]`.

    Fix: correct the spelling (the quick fix offers the nearest known tool), separate tools
    with commas, or add custom tools to `extra-tools`.
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None:
        return
    known = set(KNOWN_TOOLS) | set(ctx.config.extra_tools)
    candidates = sorted(known)
    for key in TOOL_KEYS:
        entry = fm.get(key)
        if entry is None:
            continue
        for item in _entry_items(entry):
            name = str(item.value).strip()
            if not name or "{{" in name or _tool_ok(name, known):
                continue
            raw = _source(ctx, item.range)
            words = name.replace(",", " ").split()
            if len(words) > 1 and all(_tool_ok(w, known) for w in words):
                fix = ctx.fix("Separate the tools with commas",
                              ctx.edit(item.range, raw.replace(name, ", ".join(words), 1)))\
                    if raw and name in raw else None
                yield ctx.finding(
                    item.range,
                    f"`{key}` lists `{name}` as one tool: expected a comma-separated list "
                    f"(`{', '.join(words)}`), found tools separated by spaces", fix=fix)
                continue
            scoped = _SCOPED_RE.match(name)
            base = scoped.group(1) if scoped else name
            suggestion = _nearest(base, candidates)
            fix = None
            if suggestion and raw and base in raw:
                fix = ctx.fix(f"Change to `{suggestion}`",
                              ctx.edit(item.range, raw.replace(base, suggestion, 1)))
            hint = f"; did you mean `{suggestion}`?" if suggestion else \
                " (add it to `extra-tools` in [tool.baton] if it is a custom tool)"
            what = f"tool `{base}` in scoped permission `{name}`" if scoped else f"tool `{name}`"
            yield ctx.finding(
                item.range,
                f"unknown {what} in `{key}`: expected one of {', '.join(KNOWN_TOOLS)}, an "
                f"`mcp__server__tool` name or `Tool(pattern)`{hint}",
                fix=fix)


def model_ok(name: str, extra: list[str] | tuple[str, ...] = ()) -> bool:
    """True when `name` is a model Claude Code passes on correctly (alias, inherit, full id)."""
    return is_claude_model(name, extra)


@rule("BTN207", "agent-unknown-model", Severity.WARNING, AGENT, fixable=True)
def unknown_model(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """`model` / `fallback-model` is not a model name Claude Code understands.

    Claude Code resolves its aliases itself and sends anything else to the API verbatim, so an
    unknown name fails the agent at its first request (or, as a subagent, silently falls back
    to the default model), changing cost and behaviour without notice. Accepted: `inherit`,
    the aliases `sonnet`, `opus`, `haiku`, `opusplan`, `default`, `best`, `sonnet[1m]`,
    `opus[1m]`, full ids (`claude-sonnet-4-5`, `claude-opus-4-1-20250805`,
    `claude-3-5-haiku-latest`) and names listed in `extra-models` of `[tool.baton]`. The
    short versioned form many trees use (`sonnet-4.5`) is not one of them: Baton maps it when
    it launches claude, but Claude Code itself does not.

    Fix: use an alias or the full id (the quick fix offers `claude-sonnet-4-5` for
    `sonnet-4.5`, else the nearest alias) or add the name to `extra-models`.
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None:
        return
    extra = list(ctx.config.extra_models)
    for key in MODEL_KEYS:
        entry = fm.get(key)
        if entry is None or entry.value is None:
            continue
        raw = _source(ctx, entry.value_range)
        if "{{" in raw:
            continue
        if isinstance(entry.value, (dict, list, bool)):
            yield ctx.finding(entry.value_range,
                              f"`{key}` must be a model name: expected e.g. `sonnet`, found "
                              f"`{raw or type(entry.value).__name__}`")
            continue
        name = str(entry.value).strip()
        if not name or model_ok(name, extra):
            continue
        full = full_id(name)
        suggestion = full or _nearest(name, [*SUGGESTIONS, *extra])
        fix = None
        if suggestion and raw and name in raw:
            fix = ctx.fix(f"Change to `{suggestion}`",
                          ctx.edit(entry.value_range, raw.replace(name, suggestion, 1)))
        if full:
            why = (f"`{name}` in `{key}` is not a model id Claude Code knows: it is sent to "
                   f"the API verbatim and rejected; expected the full id `{full}` or an alias "
                   f"({', '.join(ALIASES[2:5])})")
        else:
            hint = f"; did you mean `{suggestion}`?" if suggestion else ""
            why = (f"unknown model `{name}` in `{key}`: expected `{INHERIT}`, an alias "
                   f"({', '.join(ALIASES[2:5])}) or a full id such as `claude-sonnet-4-5`"
                   f"{hint}")
        yield ctx.finding(entry.value_range, why, fix=fix)


@rule("BTN208", "agent-unfilled-placeholder", Severity.WARNING, AGENT)
def unfilled_placeholder(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A `{{PLACEHOLDER}}` survives in an agent that is not a template.

    Agents are often created by copying `agents/templates/*.md` and filling in the
    `{{...}}` values. A placeholder left behind reaches the model verbatim (and in front
    matter turns `description: {{X}}` into a YAML mapping), so the agent runs with missing
    instructions. Files under `agents/templates/` and prompt fragments under
    `agents/prompts/` (which callers fill in) are not checked; placeholders inside code
    blocks and code spans of the body are ignored.

    Fix: replace the placeholder with the real value.
    """
    if not _is_agent(doc):
        return
    for rng in doc.placeholders:
        text = _source(ctx, rng) or "{{...}}"
        where = "front matter" if doc.frontmatter is not None and \
            rng.start_line <= doc.frontmatter.range.end_line else "body"
        yield ctx.finding(
            rng,
            f"unfilled template placeholder `{text}` in the {where} of agent `{doc.name}`: "
            "expected a concrete value (only files under agents/templates/ may keep "
            "placeholders)")


@rule("BTN209", "agent-duplicate-frontmatter-key", Severity.WARNING, AGENT, fixable=True)
def duplicate_key(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A front matter key appears more than once.

    YAML readers disagree about repeated keys: PyYAML keeps the last value, strict readers
    (js-yaml, most editors) reject the whole block, and line-based readers may keep the
    first. The agent therefore behaves differently depending on who reads it.

    Fix: keep one occurrence (the quick fix removes the repeated one; check which value
    you meant).
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None:
        return
    for dup in fm.duplicates:
        first = fm.get(dup.key)
        first_line = first.key_range.start_line + 1 if first else 0
        value = _source(ctx, dup.value_range) or str(dup.value)
        yield ctx.finding(
            dup.key_range,
            f"front matter key `{dup.key}` appears again (first on line {first_line}): "
            f"expected each key once, found a second value `{value}`",
            fix=ctx.fix(f"Remove the repeated `{dup.key}`",
                        ctx.edit(Range.span(dup.range.start_line, 0, dup.range.end_line + 1, 0),
                                 ""), safe=False))


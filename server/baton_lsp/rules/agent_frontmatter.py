"""BTN201-BTN209, BTN240, BTN242: the YAML front matter of agent files (`.claude/agents/*.md`)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import yaml

from ..lazy_pattern import LazyPattern
from ..model.agent import AgentFile
from ..model.base import Convention, Finding, Kind, Range, Severity
from ..model.claude_models import (
    ALIASES,
    CURRENT_TOOLS,
    INHERIT,
    SUGGESTIONS,
    full_id,
    is_claude_model,
    tool_status,
)
from ..model.common import Frontmatter, FrontmatterEntry, ListItem
from ..parse.frontmatter import claude_code_error, loads, safe_load
from .base import RuleContext, closest, rule

AGENT = (Kind.AGENT,)

KNOWN_TOOLS = CURRENT_TOOLS
"""Completion offers these; the check itself reads the versioned table in claude_models."""
TOOL_KEYS = ("tools", "disallowedTools", "allowed-tools")
LAUNCHER_ONLY = ("Claude Code reads a subagent's tools from `tools`, and a launcher passing "
                 "`allowed-tools` to `claude --allowedTools` (Baton, the seeds' orchestrators) "
                 "grants nothing by it")
"""What a bad name in an agent's `allowed-tools` costs: the key is the launchers', not Claude
Code's subagent format."""
MODEL_KEYS = ("model",)
"""`fallback-model` is the seeds' key, not Claude Code's: Baton maps it when it launches."""
CC = Convention.CLAUDE_CODE
MODEL_SUGGESTIONS = SUGGESTIONS

_KEY_LINE_RE = LazyPattern(r"^[A-Za-z][A-Za-z0-9_-]*\s*:")
_MCP_RE = re.compile(r"^mcp__[A-Za-z0-9_.*-]+$")
_SCOPED_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)\s*\((.*)\)$", re.DOTALL)
def _source(ctx: RuleContext, rng: Range) -> str:
    """The text under a single-line range ('' when the range spans lines)."""
    if rng.start_line != rng.end_line or not 0 <= rng.start_line < len(ctx.lines):
        return ""
    return ctx.lines[rng.start_line].rstrip("\r")[rng.start_char:rng.end_char]


def _is_agent(doc: AgentFile) -> bool:
    """Templates and prompt fragments are not agents Claude Code loads."""
    return not (doc.is_template or doc.is_prompt)


def _orchestrator_prompts(ctx: RuleContext) -> bool:
    """Most of the workspace's agent files have no front matter: the tree keeps prompt
    files its own orchestrator reads (and injects), not Claude Code subagents, and the few
    with a `---` block are the same kind of file (Claude Code registers none of them
    without `name` and `description`, so nothing is lost by their absence)."""
    paths = ctx.agent_paths()
    if len(paths) < 3:
        return False
    bare = 0
    for name in paths:
        other = ctx.agent(name)
        bare += other is not None and other.frontmatter is None
    return bare * 2 > len(paths)


def _yaml_scalar(text: str) -> str:
    """`text` as a YAML plain scalar when that round-trips, else double-quoted."""
    try:
        if safe_load(f"k: {text}") == {"k": text}:
            return text
    except yaml.YAMLError:
        pass
    return json.dumps(text, ensure_ascii=False)


# -- presence and readability ---------------------------------------------------------


@rule("BTN201", "agent-missing-frontmatter", Severity.WARNING, AGENT, fixable=True,
      convention=CC)
def missing_frontmatter(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent file has front matter Claude Code cannot see.

    Claude Code only recognises the `---` block when line 1 is exactly `---`; a file without
    one is, by its documentation, "documentation kept beside your agents" and is not loaded.
    That is fine for notes, templates, symlinks checked out as text and behavioural files a
    command reads and injects, so those are not reported. Reported are files that clearly
    meant to be agents: a `---` block pushed down by blank lines, `name:` /
    `description:` lines at the top with no `---` around them (unless every value is a
    placeholder such as `[Must be unique]`: a reference sheet), or an empty file.

    Fix: remove the blank lines above the block (quick fix), or wrap the key lines in `---`.

    Reported:

        ==> .claude/agents/reviewer.md <==

        ---
        name: reviewer
        description: Reviews diffs for bugs
        ---
        You review code.

    Not reported:

        ==> .claude/agents/debug-analyst.md <==
        # Debug Analyst Agent

        Read by /debug and injected into a general-purpose Task prompt.
    """
    if doc.frontmatter is not None or not _is_agent(doc):
        return
    lines = ctx.lines
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        yield ctx.finding(
            Range.of_line(0), f"agent file `{doc.name}` is empty: Claude Code skips it; "
            "expected `---` / `name:` / `description:` / `---` and the agent's instructions")
        return
    if first > 0 and lines[first].strip() == "---" \
            and first + 1 < len(lines) and _KEY_LINE_RE.match(lines[first + 1]):
        yield ctx.finding(
            Range.of_line(first, 0, len(lines[first])),
            f"agent `{doc.name}` has front matter starting on line {first + 1}: expected "
            "`---` on line 1, found blank lines above it, so Claude Code ignores the block",
            fix=ctx.fix("Remove the blank lines before the front matter",
                        ctx.edit(Range.span(0, 0, first, 0), "")))
        return
    found = [(m.group(1), m.group(2)) for line in lines[first:first + 6]
             if (m := re.match(r"^(name|description|tools|model)\s*:\s*(.*)$", line))]
    keys = [k for k, _ in found]
    placeholders = all(v.strip()[:1] in ("[", "<", "{") for _, v in found)
    if first == 0 and {"name", "description"} <= set(keys) and not placeholders:
        yield ctx.finding(
            ctx.line_range(0),
            f"agent `{doc.name}` starts with `{keys[0]}:` lines but no `---` line above them: "
            "expected the keys between two `---` lines, so Claude Code reads the file as "
            "documentation, not an agent")


@rule("BTN202", "agent-frontmatter-invalid", Severity.ERROR, AGENT, convention=CC)
def frontmatter_invalid(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter cannot be read: not YAML, not even with Claude Code's retry.

    When the block between the `---` lines is not valid YAML, Claude Code quotes one-line
    values holding YAML indicators and parses again; a block that this retry reads (nested
    mappings included) loads fine and is not reported here, and its values are the ones
    checked. Reported is a block that fails both and is not even a list of simple
    `key: value` lines: no tool can tell what the agent's description, tools or model are,
    and Claude Code skips the agent.

    Fix: correct the reported line. Quote values that contain `: `, start with `[`, `{`,
    `*`, `&`, `!`, `%`, `@` or a backquote, or contain ` #`.

    Reported:

        ==> .claude/agents/demo.md <==
        ---
        name: demo
        description: Reviews code
        tools: [Read
        this line is not a key and value pair
        ---

    Not reported:

        ==> .claude/agents/demo.md <==
        ---
        name: demo
        description: Reviews code
        tools: [Read, Grep]
        ---
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
        if not loads(text):
            return entry
    return None


@rule("BTN203", "agent-frontmatter-not-strict-yaml", Severity.WARNING, AGENT, fixable=True,
      convention=CC)
def frontmatter_lenient(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter is YAML that Claude Code cannot read, even with its retry.

    When strict YAML fails, Claude Code quotes every one-line `key: value` whose value holds
    a YAML indicator (`: `, `[`, `#`, a backquote, ...) and parses again, so the `/agents`
    generator's own `description: Use this agent when... Examples: <example>Context: ...`
    loads fine and is not reported. What still fails (a value continued on an indented line
    that holds `: `, an unbalanced quote) makes Claude Code read no fields and skip the
    agent, logging the error only with `--debug`. Baton read such a block line by line so its
    other checks still ran.

    Fix: quote the value (the quick fix wraps a one-line value in double quotes) or write a
    long description as a block scalar (`description: |`).

    Reported:

        ==> .claude/agents/demo.md <==
        ---
        name: demo
        description: Use this agent when
          the user asks: review the code
        ---

    Not reported:

        ==> .claude/agents/test-writer.md <==
        ---
        name: test-writer
        description: Use when tests are needed. Examples: <example>Context: new</example>
        model: sonnet
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.lenient_reason is None:
        return
    why = claude_code_error("\n".join(ctx.lines[fm.range.start_line + 1:fm.range.end_line]))
    if why is None:
        return
    entry = _lenient_culprit(fm, ctx)
    if entry is None:
        yield ctx.finding(Range.of_line(fm.range.start_line, 0, 3),
                          f"agent `{doc.name}`: Claude Code cannot parse this front matter "
                          f"({why}), so it reads no fields and skips the agent")
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
    yield ctx.finding(
        entry.range if entry.range.start_line == entry.range.end_line else entry.key_range,
        f"value of `{entry.key}` is not YAML Claude Code can read ({why}): it reads no fields "
        "and skips the agent; expected a quoted string or a `|` block",
        fix=fix)


# -- required keys --------------------------------------------------------------------


def _is_blank(entry: FrontmatterEntry | None) -> bool:
    return entry is not None and (entry.value is None or str(entry.value).strip() == "")


@rule("BTN204", "agent-missing-description", Severity.WARNING, AGENT, fixable=True,
      cross_file=True, convention=CC)
def missing_description(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter has no `description`.

    Claude Code refuses to load an agent file without a non-empty string `description`: its
    loader logs 'Missing required "description" field in frontmatter' (claude 2.1.331, only
    visible with `--debug`) and skips the file, so the agent cannot be delegated to, neither
    automatically nor by name. The description is also how Claude Code decides when to
    delegate and what the `/agents` list shows.

    Where most agent files of the workspace have no front matter at all, they are prompt
    files the project's own orchestrator reads, not Claude Code subagents (Claude Code
    requires `name` and `description` of a subagent, `Missing required "description" field
    in frontmatter` in its loader), and a file among them is not reported.

    Fix: add `description: <one line saying when to use this agent>` (the quick fix uses the
    file's title as a starting point).

    Reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        tools: Read, Grep
        ---

    Not reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews diffs for bugs; use after every change
        tools: Read, Grep
        ---

    Not reported (the project's orchestrator reads its agents):

        ==> .claude/agents/planner.md <==
        # Planner

        You turn the research notes into a numbered plan.
        ==> .claude/agents/coder.md <==
        # Coder

        You implement one step of the plan.
        ==> .claude/agents/reviewer.md <==
        ---
        model: opus
        ---
        # Reviewer

        You review the coder's diff.
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _is_agent(doc):
        return
    entry = fm.get("description")
    if entry is not None and not _is_blank(entry):
        return
    if _orchestrator_prompts(ctx):
        return
    if entry is not None:
        yield ctx.finding(entry.key_range,
                          f"agent `{doc.name}` has an empty `description`: Claude Code "
                          "refuses to load the agent (\"Missing required description\"); "
                          "expected one line saying when to use it")
        return
    text = _yaml_scalar(doc.title or doc.name)
    keys = ", ".join(f"`{e.key}`" for e in fm.entries) or "no keys"
    also = "" if fm.get("name") is not None else " (nor a `name`, which it requires too)"
    yield ctx.finding(
        Range.of_line(fm.range.start_line, 0, 3),
        f"agent `{doc.name}` front matter has no `description`{also}, so Claude Code refuses to "
        f"load the agent; expected one line saying when to use it, found only {keys}",
        fix=ctx.fix("Add a description (review it)",
                    ctx.edit(Range.of_line(fm.range.end_line), f"description: {text}\n"),
                    safe=False))


def newer_format(fm: Frontmatter) -> bool:
    """The newer agent format: a `tools` key, or neither `allowed-tools` nor `model`."""
    keys = {e.key for e in fm.entries}
    return "tools" in keys or not ({"allowed-tools", "model"} & keys)


@rule("BTN205", "agent-missing-name", Severity.WARNING, AGENT, fixable=True,
      cross_file=True, convention=CC)
def missing_name(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Agent front matter in the newer format has no `name`.

    The newer agent format (G3: `name:` + `description:`, optionally `tools:` and `model:`)
    identifies an agent by its `name` key. It is recognised here by a `tools` key or by the
    absence of both `allowed-tools` and `model`, which the older format always carries. An
    agent without a name falls back to tool-specific defaults and may not be found when a
    skill or command delegates to it by name. Agents of a project's own orchestrator (most
    agent files of the workspace without front matter, see BTN204) are not reported.

    Fix: add `name: <file name without .md>` (the quick fix does exactly that).

    Reported:

        ==> .claude/agents/reviewer.md <==
        ---
        description: Reviews diffs for bugs
        tools: Read, Grep
        ---

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        ---
        allowed-tools: Read, Grep
        description: Researches a topic
        model: sonnet
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _is_agent(doc) or not fm.entries:
        return
    if not newer_format(fm):
        return
    entry = fm.get("name")
    if entry is not None and not _is_blank(entry):
        return
    if _orchestrator_prompts(ctx):
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


def _base(name: str) -> str:
    m = _SCOPED_RE.match(name)
    return m.group(1) if m else name


def _tool_ok(name: str, extra: set[str]) -> bool:
    """Known now (or a legacy alias Claude Code still maps), MCP, `None` or configured."""
    base = _base(name)
    if base in extra or name == "None" or name == "*" or _MCP_RE.match(base):
        return True
    known = tool_status(base)
    return known is not None and known.until is None


@rule("BTN206", "agent-unknown-tool", Severity.WARNING, AGENT, fixable=True, convention=CC)
def unknown_tool(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """`tools` / `disallowedTools` names a tool Claude Code does not have (any more).

    Claude Code drops tool names it does not know, so a typo such as `Reed` or `webfetch`, or
    a tool a release removed (`MultiEdit`, `LS`, `NotebookRead`, `TodoRead`, `BashOutput`,
    `SlashCommand`, `TaskOutput`), leaves the agent without the tool it was meant to have; if
    nothing resolves, the agent fails to launch. The check reads the versioned tool table in
    `model/claude_models.py` (tools reference docs, the claude 2.1.331 and 2.1.197 binaries'
    tool lists and legacy-name maps, the changelog). Accepted: current tools (Agent, Bash,
    Edit, Glob, Grep, ListMcpResourcesTool, ReadMcpResourceTool, Skill, WebFetch, ...), the
    legacy names Claude Code still maps (`Task` → Agent, `KillShell` → TaskStop), scoped
    rules such as `Bash(git:*)`, `Agent(reviewer)` or `Task(reviewer)`, `mcp__server__tool`
    and `mcp__server__*`, the literal `None`, and names in `extra-tools` of `[tool.baton]`.

    In `disallowedTools` a removed tool is not reported (denying it is harmless, and still
    denies it on older releases); a misspelt name is, since the tool meant stays allowed.

    An agent's `allowed-tools` (the seeds' key) is not Claude Code's: subagents read `tools`.
    Launchers such as Baton pass it to `claude --allowedTools`, so a bad name there is reported
    as what it costs them.

    Fix: correct the spelling (the quick fix offers the nearest current tool), use the tool
    that replaced a removed one, separate tools with commas, or add custom tools to
    `extra-tools`.

    Reported:

        ==> .claude/agents/editor.md <==
        ---
        name: editor
        description: Applies review comments
        tools: Read, MultiEdit, Reed
        ---

    Not reported:

        ==> .claude/agents/editor.md <==
        ---
        name: editor
        description: Applies review comments
        tools: ["Bash(git diff:*)", Read, ListMcpResourcesTool, Task(reviewer), mcp__gh__*]
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None:
        return
    extra = set(ctx.config.extra_tools)
    candidates = sorted({*CURRENT_TOOLS, *extra})
    for key in TOOL_KEYS:
        entry = fm.get(key)
        if entry is None:
            continue
        for item in _entry_items(entry):
            name = str(item.value).strip()
            if not name or "{{" in name or _tool_ok(name, extra):
                continue
            raw = _source(ctx, item.range)
            # A string value arrives here already split on commas (as Claude Code splits
            # it), so a comma left in a name is one item of a YAML list.
            words = [w.strip() for w in name.split(",")] if "," in name else name.split()
            if len(words) > 1 and all(w and _tool_ok(w, extra) for w in words):
                if "," in name:
                    yield ctx.finding(
                        item.range,
                        f"`{key}` item `{name}` holds several tools in one list item: "
                        "expected one tool per item")
                    continue
                fix = ctx.fix("Separate the tools with commas",
                              ctx.edit(item.range, raw.replace(name, ", ".join(words), 1)))\
                    if raw and name in raw else None
                yield ctx.finding(
                    item.range,
                    f"`{key}` lists `{name}` as one tool: expected a comma-separated list "
                    f"(`{', '.join(words)}`), found tools separated by spaces", fix=fix)
                continue
            base = _base(name)
            scoped = base != name
            what = f"tool `{base}` in scoped rule `{name}`" if scoped else f"tool `{name}`"
            gone = tool_status(base)
            if gone is not None and gone.until is not None:
                if key == "disallowedTools":
                    continue  # denying a removed tool is harmless (older releases still have it)
                note = f" ({gone.note})" if gone.note else ""
                yield ctx.finding(
                    item.range,
                    f"{what} in `{key}` was removed from Claude Code in {gone.until}{note}: "
                    + (LAUNCHER_ONLY if key == "allowed-tools" else
                       "Claude Code drops it, so the agent does not get it"))
                continue
            suggestion = closest(base, candidates)
            fix = None
            if suggestion and raw and base in raw:
                fix = ctx.fix(f"Change to `{suggestion}`",
                              ctx.edit(item.range, raw.replace(base, suggestion, 1)))
            hint = f"; did you mean `{suggestion}`?" if suggestion else \
                " (add it to `extra-tools` in [tool.baton] if it is a custom tool)"
            cost = {"allowed-tools": f" ({LAUNCHER_ONLY})",
                    "disallowedTools": " (nothing is denied: the tool meant stays allowed)",
                    }.get(key, "")
            yield ctx.finding(
                item.range,
                f"unknown {what} in `{key}`: expected a Claude Code tool name, an "
                f"`mcp__server__tool` name or `Tool(pattern)`{hint}{cost}",
                fix=fix)


def model_ok(name: str, extra: list[str] | tuple[str, ...] = ()) -> bool:
    """True when `name` is a model Claude Code passes on correctly (alias, inherit, full id)."""
    return is_claude_model(name, extra)


_CLAUDE_FAMILY = LazyPattern(r"claude|sonnet|opus|haiku|anthropic", re.IGNORECASE)
"""A model name that means a Claude model (and so must be one Claude Code knows)."""


def _claude_family(name: str) -> bool:
    """`sonnet-4.5`, `claude_opus`, even `sonet-4.5`: a Claude model is meant."""
    if _CLAUDE_FAMILY.search(name):
        return True
    words = re.findall(r"[a-z]+", name.lower())
    return any(closest(w, ("claude", "sonnet", "opus", "haiku"), 0.75) for w in words)

@rule("BTN207", "agent-unknown-model", Severity.WARNING, AGENT, fixable=True,
      convention=CC)
def unknown_model(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """`model` is not a model name Claude Code understands.

    Claude Code resolves its aliases itself and sends anything else to the API verbatim, so an
    unknown name fails the agent at its first request (or, as a subagent, silently falls back
    to the default model), changing cost and behaviour without notice. Accepted: `inherit`,
    the aliases `sonnet`, `opus`, `haiku`, `opusplan`, `default`, `best`, `sonnet[1m]`,
    `opus[1m]`, full ids (`claude-sonnet-4-5`, `claude-opus-4-1-20250805`,
    `claude-3-5-haiku-latest`) and names listed in `extra-models` of `[tool.baton]`. The
    short versioned form many trees use (`sonnet-4.5`) is not one of them: Baton maps it when
    it launches claude, but Claude Code itself does not. Nor is a full id whose version is
    written with a dot (`claude-opus-4.6`): the claude 2.1.331 binary has no dotted id, and its
    own `availableModels` check says "write it with a hyphen" (`claude-opus-4-6`).

    Names of other model families (`glm-4.7`, `gpt-5`, `deepseek-chat`) are left alone:
    trees that route Claude Code to another provider through `ANTHROPIC_BASE_URL` use them
    on purpose. Only names that mean a Claude model but are not one are reported.

    `fallback-model` is not checked: it is the seeds' key, which Claude Code never reads
    and Baton maps itself when it launches claude.

    Fix: use an alias or the full id (the quick fix offers `claude-sonnet-4-5` for
    `sonnet-4.5` and `claude-opus-4-6` for `claude-opus-4.6`, else the nearest alias) or add
    the name to `extra-models`.

    Reported:

        ==> .claude/agents/topic-naming-agent.md <==
        ---
        name: topic-naming-agent
        description: Names topics
        model: haiku-4.5
        ---

    Reported:

        ==> .claude/agents/app-release-manager.md <==
        ---
        name: app-release-manager
        description: Prepares releases
        model: claude-opus-4.6
        ---

    Not reported:

        ==> .claude/agents/topic-naming-agent.md <==
        ---
        name: topic-naming-agent
        description: Names topics
        model: haiku
        fallback-model: sonnet-4.5
        ---

        ==> .claude/agents/analyst.md <==
        ---
        name: analyst
        description: Analyses workflows
        model: glm-4.7
        ---
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
        if full is None and not _claude_family(name):
            continue  # `glm-4.7`, `gpt-5`: another provider behind ANTHROPIC_BASE_URL
        suggestion = full or closest(name, [*SUGGESTIONS, *extra])
        fix = None
        if suggestion and raw and name in raw:
            fix = ctx.fix(f"Change to `{suggestion}`",
                          ctx.edit(entry.value_range, raw.replace(name, suggestion, 1)))
        if full and name.startswith("claude-"):
            why = (f"`{name}` in `{key}` is not a model id Claude Code knows: Claude model ids "
                   f"write versions with a hyphen, so it is sent to the API verbatim and "
                   f"rejected; expected `{full}`")
        elif full:
            why = (f"`{name}` in `{key}` is not a model id Claude Code knows: it is sent to "
                   f"the API verbatim and rejected; expected the full id `{full}` or an alias "
                   f"({', '.join(ALIASES[2:5])})")
        else:
            hint = f"; did you mean `{suggestion}`?" if suggestion else ""
            why = (f"unknown model `{name}` in `{key}`: expected `{INHERIT}`, an alias "
                   f"({', '.join(ALIASES[2:5])}) or a full id such as `claude-sonnet-4-5`"
                   f"{hint}")
        yield ctx.finding(entry.value_range, why, fix=fix)


_FILL_IN = LazyPattern(r"\{\{\s*[A-Z][A-Z0-9_]*\s*\}\}")
"""`{{PROJECT_NAME}}`: the upper-case fill-ins agent templates use."""
_HANDLEBARS_BLOCK = LazyPattern(r"\{\{[#/^](?:each|if|unless|with)\b|\{\{else\}\}")

@rule("BTN208", "agent-unfilled-placeholder", Severity.WARNING, AGENT, convention=CC)
def unfilled_placeholder(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A `{{PLACEHOLDER}}` survives in an agent that is not a template.

    Agents are often created by copying `agents/templates/*.md` and filling in the
    `{{...}}` values. A placeholder left behind reaches the model verbatim (and in front
    matter turns `description: {{X}}` into a YAML mapping), so the agent runs with missing
    instructions. Files under `agents/templates/` and prompt fragments under
    `agents/prompts/` (which callers fill in) are not checked; placeholders inside code
    blocks and code spans of the body are ignored, and so is an agent whose text uses
    Handlebars block helpers (`{{#each}}`, `{{/if}}`): it carries a template on purpose.
    Only upper-case fill-ins (`{{PROJECT_NAME}}`) are reported: `Use {{variable}} syntax`
    talks about the syntax, and lower-case names are a template engine's fields.

    Fix: replace the placeholder with the real value.

    Reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews {{LANGUAGE}} code
        ---

    Not reported:

        ==> .claude/agents/templates/reviewer.md <==
        ---
        name: reviewer
        description: Reviews {{LANGUAGE}} code
        ---
    """
    if not doc.placeholders or not _is_agent(doc):
        return
    if any(_HANDLEBARS_BLOCK.search(line) for line in ctx.lines):
        return  # `{{#each}}` … `{{/each}}`: a template the agent is meant to fill, on purpose
    for rng in doc.placeholders:
        text = _source(ctx, rng) or "{{...}}"
        if not _FILL_IN.fullmatch(text):
            continue  # `{{variable}}`, `{{statusCode}}`: prose about the syntax, engine fields
        where = "front matter" if doc.frontmatter is not None and \
            rng.start_line <= doc.frontmatter.range.end_line else "body"
        yield ctx.finding(
            rng,
            f"unfilled template placeholder `{text}` in the {where} of agent `{doc.name}`: "
            "expected a concrete value (only files under agents/templates/ may keep "
            "placeholders)")


@rule("BTN209", "agent-duplicate-frontmatter-key", Severity.WARNING, AGENT, fixable=True,
      convention=CC)
def duplicate_key(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A front matter key appears more than once.

    YAML readers disagree about repeated keys: PyYAML keeps the last value, strict readers
    (js-yaml, most editors) reject the whole block, and line-based readers may keep the
    first. The agent therefore behaves differently depending on who reads it.

    Fix: keep one occurrence (the quick fix removes the repeated one; check which value
    you meant).

    Reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews code
        model: sonnet
        model: opus
        ---

    Not reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews code
        model: opus
        ---
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



def _is_subagent(fm: Frontmatter) -> bool:
    """Claude Code loads an agent file only with a string `name` and `description`."""
    name, desc = fm.get("name"), fm.get("description")
    return all(e is not None and isinstance(e.value, str) and e.value.strip()
               for e in (name, desc))


@rule("BTN240", "agent-allowed-tools-ignored", Severity.WARNING, AGENT, fixable=True,
      convention=CC)
def allowed_tools_ignored(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A subagent restricts its tools with `allowed-tools`, which Claude Code does not read.

    `allowed-tools` is the command and skill key. Claude Code's subagent loader reads only
    `tools` and `disallowedTools`; any other key is ignored with a `--debug` warning (claude
    2.1.331: "has a frontmatter key Claude Code does not recognize or apply: allowed-tools
    (did you mean "tools"?)"). Without `tools` a subagent gets every tool, so a "read-only"
    reviewer or auditor can Write, Edit and run any command.

    Reported only for files Claude Code loads as subagents (a `name` and a `description`)
    with no `tools` key; `allowed_tools` and `allowedTools` too, which the same warning maps
    to `tools` (it compares keys without `-`, `_` and case). The seeds' older format
    (`allowed-tools`, `description`, `model`, no `name`) is not one: Claude Code skips it,
    and launchers such as Baton pass its `allowed-tools` to `claude --allowedTools`
    themselves.

    Fix: rename the key to `tools` (the quick fix does, when every item is a tool name; it
    asks for review when an item is a scoped rule such as `Bash(git *)`).

    Reported:

        ==> .claude/agents/researcher.md <==
        ---
        name: researcher
        description: Deep technical research on infrastructure decisions
        model: opus
        allowed-tools:
          - Read
          - Grep
          - WebFetch
        ---

    Not reported:

        ==> .claude/agents/research-specialist.md <==
        ---
        allowed-tools: Read, Grep, WebFetch
        description: Researches a topic
        model: sonnet
        ---

        ==> .claude/agents/researcher.md <==
        ---
        name: researcher
        description: Deep technical research on infrastructure decisions
        tools: Read, Grep, WebFetch
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _is_agent(doc) or not _is_subagent(fm):
        return
    entry = next((e for e in fm.entries
                  if re.sub(r"[-_]", "", e.key).lower() == "allowedtools"), None)
    if entry is None or fm.get("tools") is not None or _is_blank(entry):
        return
    names = [str(i.value).strip() for i in _entry_items(entry)]
    extra = set(ctx.config.extra_tools)
    fix = None
    if names and all(n and _tool_ok(n, extra) for n in names):
        scoped = any(_base(n) != n for n in names)
        fix = ctx.fix(f"Rename `{entry.key}` to `tools`" + (" (review the scoped rules)"
                                                               if scoped else ""),
                      ctx.edit(entry.key_range, "tools"), safe=not scoped)
    yield ctx.finding(
        entry.key_range,
        f"agent `{doc.name}` lists its tools under `{entry.key}`, a command/skill key "
        "Claude Code does not read in a subagent: the agent gets every tool; expected "
        "`tools:`", fix=fix)


def _inline_servers(value: object) -> list[str]:
    """The names of the MCP servers `value` defines inline (not those it names): a mapping
    of name → config, or list items that are such mappings."""
    if isinstance(value, dict):
        return [str(k) for k, v in value.items() if isinstance(v, dict)]
    if isinstance(value, list):
        return [str(k) for item in value if isinstance(item, dict)
                for k, v in item.items() if isinstance(v, dict)]
    return []


@rule("BTN242", "agent-mcp-servers-ignored", Severity.WARNING, AGENT, fixable=True,
      convention=CC)
def mcp_servers_ignored(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """A subagent defines MCP servers where Claude Code does not read them: they never start.

    Claude Code's subagent loader reads `mcpServers` and only as a list, each item a server
    name or a `name: {config}` mapping (claude 2.1.331: `Vn=o.mcpServers; if
    (Array.isArray(Vn)) …`); `mcp-servers` (GitHub Copilot's agent key) or `mcp_servers` is
    an unknown key, and `mcpServers` written as a mapping (the shape of `.mcp.json`) is
    skipped without a word. Reported only when the value defines a server inline: that
    server then exists for nobody. A list of names of servers the session already has is
    left alone, since the subagent inherits those tools anyway.

    Fix: `mcpServers:` with one list item per server (`- react-test: {type: stdio, …}`);
    the quick fix renames a misspelt key whose value is already a list.

    Reported:

        ==> .claude/agents/react-test-planner.md <==
        ---
        name: react-test-planner
        description: Plans React tests with Jest and React Testing Library
        mcp-servers:
          react-test:
            type: stdio
            command: npx
            args:
              - react-test
              - run-mcp-server
        ---

    Not reported:

        ==> .claude/agents/react-test-planner.md <==
        ---
        name: react-test-planner
        description: Plans React tests with Jest and React Testing Library
        mcpServers:
          - react-test:
              type: stdio
              command: npx
              args:
                - react-test
                - run-mcp-server
        ---
    """
    fm = doc.frontmatter
    if fm is None or fm.error is not None or not _is_agent(doc) or not _is_subagent(fm):
        return
    for entry in fm.entries:
        if re.sub(r"[-_]", "", entry.key).lower() != "mcpservers":
            continue
        servers = _inline_servers(entry.value)
        if not servers:
            continue
        names = ", ".join(f"`{n}`" for n in servers)
        if entry.key != "mcpServers":
            fix = ctx.fix(f"Rename `{entry.key}` to `mcpServers`",
                          ctx.edit(entry.key_range, "mcpServers")) \
                if isinstance(entry.value, list) and fm.get("mcpServers") is None else None
            yield ctx.finding(
                entry.key_range,
                f"agent `{doc.name}` defines {names} under `{entry.key}`, which Claude Code "
                "does not read (it reads `mcpServers`, a list): the server never starts",
                fix=fix)
        elif not isinstance(entry.value, list):
            yield ctx.finding(
                entry.key_range,
                f"agent `{doc.name}` writes `mcpServers` as a mapping; Claude Code reads it "
                f"only as a list (`- name: {{…}}`), so {names} never start")

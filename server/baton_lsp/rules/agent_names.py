"""BTN210-BTN212: agent names as Claude Code registers them.

Claude Code 2.1 (its agent loader) reads every `.claude/agents/**/*.md`, keys each agent by
its front-matter `name`, and drops a file whose `name` is missing or invalid without a word
(a missing name is not even logged). Two files with one `name` leave one agent: the
definitions are kept in a map by name, so the later file replaces the earlier. Verified with
the pinned `claude` against the fake Anthropic API: the init event's `agents` list.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..model.agent import AgentFile
from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..workspace.discovery import plugin_layout
from .agent_frontmatter import newer_format
from .base import RuleContext, rule

CC = Convention.CLAUDE_CODE
AGENT = (Kind.AGENT,)
NAME_MAX = 256
"""Claude Code refuses a longer agent `name` ("names must be at most 256 characters")."""


def name_problem(value: Any) -> str | None:
    """Why Claude Code refuses `value` as an agent name (its own checks), or None."""
    if not isinstance(value, str) or not value:
        return "is not a string" if value not in (None, "") else None
    if value.startswith("-"):
        return "starts with `-`"
    if len(value) > NAME_MAX:
        return f"is longer than {NAME_MAX} characters"
    if ":" in value:
        return "contains `:` (reserved for plugin namespacing)"
    return None


def _loaded(doc: Any) -> bool:
    return isinstance(doc, AgentFile) and not (doc.is_template or doc.is_prompt) \
        and doc.frontmatter is not None and doc.frontmatter.error is None


def _claude_agents(ctx: RuleContext) -> list[tuple[Path, AgentFile]]:
    """Every agent file under `.claude/agents/` (nested too), parsed, in path order."""
    if ctx.index is None or ctx.root is None:
        return []
    return list(ctx.shared("claude-agents", _list_claude_agents))


def _list_claude_agents(ctx: RuleContext) -> list[tuple[Path, AgentFile]]:
    assert ctx.index is not None and ctx.root is not None
    base = os.path.join(os.path.normpath(ctx.root), ".claude", "agents")
    # Only `.claude/agents/` is listed (not the whole workspace), and every folder and file
    # of it is recorded: an agent added, renamed or edited anywhere under it re-checks.
    paths: list[str] = []
    for dirpath, dirnames, filenames in os.walk(base):
        ctx.depends_on.add(dirpath)
        dirnames.sort()
        paths += [os.path.join(dirpath, f) for f in filenames if f.endswith(".md")]
    found: list[tuple[Path, AgentFile]] = []
    for path in sorted(paths):
        if ctx.index.kind_of(path) is not Kind.AGENT:
            continue
        ctx.depends_on.add(path)
        doc = ctx.index.document(path, Kind.AGENT)
        if _loaded(doc):
            found.append((Path(path), doc))
    return found


def _plugin_agents(ctx: RuleContext) -> list[tuple[Path, AgentFile, tuple[str, ...]]]:
    """Every agent file of the plugin the workspace is (its `agents/` and the manifest's
    extra agent paths, nested too), parsed, in path order, each with its namespace: the
    folders between the agents path and the file. Claude Code 2.1.331 names a plugin agent
    `plugin:<folders…>:<name>` (`[pluginName, ...namespace, name].join(":")`), so only agents
    of one folder of one plugin can collide. Empty when the workspace is no plugin."""
    if ctx.index is None or ctx.root is None:
        return []
    return list(ctx.shared("plugin-agents", _list_plugin_agents))


def _list_plugin_agents(ctx: RuleContext) -> list[tuple[Path, AgentFile, tuple[str, ...]]]:
    assert ctx.index is not None and ctx.root is not None
    root = os.path.normpath(ctx.root)
    layout = plugin_layout(root)
    found: list[tuple[Path, AgentFile, tuple[str, ...]]] = []
    for rel_base in layout.get("agents", ()) if layout is not None else ():
        base = os.path.join(root, rel_base)
        paths: list[str] = []
        for dirpath, dirnames, filenames in os.walk(base):
            ctx.depends_on.add(dirpath)
            dirnames.sort()
            paths += [os.path.join(dirpath, f) for f in filenames if f.endswith(".md")]
        for path in sorted(paths):
            if ctx.index.kind_of(path) is not Kind.AGENT:
                continue
            ctx.depends_on.add(path)
            doc = ctx.index.document(path, Kind.AGENT)
            if _loaded(doc):
                folders = os.path.relpath(os.path.dirname(path), base)
                namespace = () if folders == "." else tuple(folders.split(os.sep))
                found.append((Path(path), doc, namespace))
    return found


def _same_name(doc: AgentFile, ctx: RuleContext, mine: str) -> list[tuple[Path, AgentFile]]:
    """The agent files Claude Code registers under the same name as `doc`, in path order:
    the project's `.claude/agents/`, or `doc`'s folder of the plugin the workspace is."""
    here = os.path.normpath(ctx.path)
    plugin = _plugin_agents(ctx)
    spaces = [ns for p, _d, ns in plugin if os.path.normpath(str(p)) == here]
    if spaces:
        return [(p, d) for p, d, ns in plugin if ns == spaces[0] and _name(d) == mine]
    return [(p, d) for p, d in _claude_agents(ctx) if _name(d) == mine]


def _name(doc: AgentFile) -> str | None:
    entry = doc.frontmatter.get("name") if doc.frontmatter else None
    value = entry.value if entry is not None else None
    return value if isinstance(value, str) and value.strip() else None


@rule("BTN210", "agent-name-invalid", Severity.ERROR, AGENT, convention=CC)
def name_invalid(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """An agent's `name` is one Claude Code refuses: the agent is not loaded.

    Claude Code requires the `name` to be a string that does not start with `-`, has at most
    256 characters and no `:` (the plugin namespace separator, `plugin:agent`); otherwise it
    logs "Failed to parse agent" and the agent does not exist in the session. A number
    (`name: 42`) is not a string in YAML.

    Fix: use the file name: lowercase letters, digits and hyphens (`name: qa-reviewer`).

    Reported:

        ==> .claude/agents/qa-reviewer.md <==
        ---
        name: qa:reviewer
        description: Reviews test coverage
        ---

    Not reported:

        ==> .claude/agents/qa-reviewer.md <==
        ---
        name: qa-reviewer
        description: Reviews test coverage
        ---
    """
    if not _loaded(doc):
        return
    entry = doc.frontmatter.get("name") if doc.frontmatter else None
    if entry is None:
        return
    problem = name_problem(entry.value)
    if problem is None:
        return
    yield ctx.finding(entry.value_range,
                      f"agent name `{entry.value}` {problem}: Claude Code does not load "
                      f"the agent; use `name: {doc.name}`")


@rule("BTN211", "agent-name-duplicate", Severity.WARNING, AGENT, cross_file=True,
      convention=CC)
def name_duplicate(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """Two agent files declare the same `name`: Claude Code keeps only one of them.

    Claude Code keys agents by their front-matter `name`; when two files under
    `.claude/agents/` (nested folders included) declare one name, one definition replaces
    the other and the replaced file is never used. A plugin's agents are compared within
    the plugin, folder by folder: Claude Code names them `plugin:folder:name` (its plugin
    agent loader), so the same name in two plugins or two folders is two agents. Reported
    on the second file in path order, linking the first. (BTN222 reports file names that
    differ only by `-`/`_`.)

    Fix: give each agent its own name, or delete the copy that is out of date.

    Reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews diffs
        ---
        ==> .claude/agents/strict-reviewer.md <==
        ---
        name: reviewer
        description: Reviews diffs strictly
        ---

    Not reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews diffs
        ---
        ==> .claude/agents/strict-reviewer.md <==
        ---
        name: strict-reviewer
        description: Reviews diffs strictly
        ---
    """
    mine = _name(doc) if _loaded(doc) else None
    if mine is None:
        return
    here = os.path.normpath(ctx.path)
    earlier = _same_name(doc, ctx, mine)
    if len(earlier) < 2 or os.path.normpath(str(earlier[0][0])) == here:
        return
    first_path, first = earlier[0]
    entry = doc.frontmatter.get("name") if doc.frontmatter else None
    rng = entry.value_range if entry is not None else Range.of_line(0)
    first_entry = first.frontmatter.get("name") if first.frontmatter else None
    related = [Related(path=str(first_path),
                       range=first_entry.value_range if first_entry else Range.of_line(0),
                       message=f"`{mine}` is declared first here")]
    rel = os.path.relpath(first_path, ctx.root) if ctx.root else str(first_path)
    yield ctx.finding(rng,
                      f"agent name `{mine}` is also declared by {rel.replace(os.sep, '/')}: "
                      "Claude Code keeps one agent per name, so one of the two files is "
                      "never used", related=related)


@rule("BTN212", "agent-unregistered-no-name", Severity.WARNING, AGENT, cross_file=True,
      convention=CC)
def unregistered(doc: AgentFile, ctx: RuleContext) -> Iterator[Finding]:
    """An agent in the older front-matter format has no `name`, in a tree whose agents are
    Claude Code subagents: Claude Code does not register it.

    Claude Code drops an agent file without `name` silently. BTN205 reports the newer
    format; the older one (`allowed-tools` and `model`, no `tools`) is also the format of
    agents a project's own orchestrator reads as prompt files, so it is reported only where
    the tree's agents are subagents: at least three other agents have a `name`, and the
    agents without one are at most a quarter of them.

    Fix: add `name: <file name without .md>`.

    Reported:

        ==> .claude/agents/planner.md <==
        ---
        name: planner
        description: Plans
        ---
        ==> .claude/agents/coder.md <==
        ---
        name: coder
        description: Codes
        ---
        ==> .claude/agents/tester.md <==
        ---
        name: tester
        description: Tests
        ---
        ==> .claude/agents/research-specialist.md <==
        ---
        allowed-tools: Read, Grep, WebSearch
        description: Researches a topic
        model: sonnet
        ---

    Not reported:

        ==> .claude/agents/planner.md <==
        ---
        allowed-tools: Read, Write
        description: Plans
        model: opus
        ---
        ==> .claude/agents/research-specialist.md <==
        ---
        allowed-tools: Read, Grep, WebSearch
        description: Researches a topic
        model: sonnet
        ---
    """
    if not _loaded(doc) or doc.frontmatter is None or not doc.frontmatter.entries:
        return
    fm = doc.frontmatter
    if fm.get("name") is not None or newer_format(fm):
        return  # a blank name and the newer format are BTN205's
    agents = _claude_agents(ctx)
    named = sum(1 for _, d in agents if _name(d) is not None)
    unnamed = sum(1 for _, d in agents if d.frontmatter is not None
                  and d.frontmatter.get("name") is None)
    if named < 3 or unnamed * 4 > len(agents):
        return
    yield ctx.finding(Range.of_line(fm.range.start_line, 0, 3),
                      f"agent `{doc.name}` has no `name` while {named} of the tree's "
                      f"{len(agents)} agents have one: Claude Code does not register an "
                      f"agent without a name; add `name: {doc.name}`")

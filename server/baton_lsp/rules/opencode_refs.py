"""BTN710-BTN713: what OpenCode agents and commands name: tools and agents.

Tool ids are OpenCode's (lowercase: `read`, `bash`, `webfetch`; MCP tools `<server>_<tool>`),
not Claude Code's (`Read`, `mcp__server__tool`); agents are the workspace's
`.opencode/agent(s)/` files (by OpenCode's name for them), the `agent` section of
`opencode.json`, and OpenCode's built-in agents. Sources are in `model/opencode.py`.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.opencode import (
    AGENT_DIRS,
    BUILTIN_AGENTS,
    BUILTIN_TOOLS,
    MODE_DIRS,
    OPENCODE_DIR,
    OpenCodeAgent,
    OpenCodeCommand,
    mode_file,
)
from ..workspace.discovery import extension_installed
from .base import SKIPPED_LOG, RuleContext, closest, rule
from .opencode_common import config_data
from .opencode_frontmatter import key_range

OC = Convention.OPENCODE
_WILDCARD = re.compile(r"[*?\[]")
SUBAGENT_RE = re.compile(r"""\bsubagent_type\s*[=:]\s*(["'])([A-Za-z0-9_./-]+)\1""")
"""A task-tool call's agent, quoted: `subagent_type="planner-agent"` or `subagent_type: 'x'`
(placeholders such as `{agent}` or `${AGENT}` do not match)."""
_TOOL_DIRS = (f"{OPENCODE_DIR}/tool", f"{OPENCODE_DIR}/tools")
"""Custom tools: `<dir>/<name>.{js,ts}` define tool `<name>` (or `<name>_<export>`)."""

skipped = logging.getLogger(SKIPPED_LOG)


def config_agents(ctx: RuleContext) -> set[str]:
    """Agent names of the `agent` sections of the workspace's OpenCode config files."""
    names: set[str] = set()
    for data in config_data(ctx):
        section = data.get("agent")
        if isinstance(section, dict):
            names.update(str(k) for k in section)
    return names


def workspace_agents(ctx: RuleContext) -> set[str]:
    """Every agent name OpenCode would know in this workspace (files, config, built-ins)."""
    names = set(BUILTIN_AGENTS) | config_agents(ctx)
    if ctx.index is None or ctx.root is None:
        return names
    for sub in (*AGENT_DIRS, *MODE_DIRS):
        ctx.depends_on.add(str(ctx.root / OPENCODE_DIR / sub))
    agents = ctx.index.opencode_agents()
    ctx.depends_on.update(agents.values())  # and their directories: a new agent beside them
    ctx.depends_on.update(str(Path(p).parent) for p in agents.values())
    if extension_installed(ctx.index.rel(ctx.path)) is None:
        # an extension's agent is OpenCode's only once loaded (copied into `agent/subagents/`)
        loaded = {name for name, paths in ctx.index.opencode_agent_files().items()
                  if any(extension_installed(ctx.index.rel(p)) is None for p in paths)}
        return names | loaded
    return names | set(agents)


def _custom_tools(ctx: RuleContext) -> set[str]:
    """Tool names the workspace defines in `.opencode/tool(s)/`: listed, never read, and
    only when the directory is inside the workspace (not reached through a link out)."""
    names: set[str] = set()
    if ctx.root is None:
        return names
    inside = os.path.realpath(ctx.root)
    for rel in _TOOL_DIRS:
        base = ctx.root / rel
        ctx.depends_on.add(str(base))
        real = os.path.realpath(base)
        if not (real == inside or real.startswith(inside + os.sep)) or not os.path.isdir(real):
            continue
        try:
            names.update(e.name.rsplit(".", 1)[0] for e in os.scandir(real)
                         if e.name.endswith((".js", ".ts")))
        except OSError as exc:
            skipped.info("%s: not listed for custom tools (%s)", base, exc)
    return names


def _tool_problem(name: str, custom: set[str]) -> str | None:
    """Why `name` matches no OpenCode tool, or None when it may match one."""
    if name in BUILTIN_TOOLS or name in custom or name == "*":
        return None
    if name.startswith("mcp__"):
        return ("is Claude Code's MCP naming: OpenCode names MCP tools `<server>_<tool>` "
                "(e.g. `lean-lsp_*`), so this matches no tool")
    if _WILDCARD.search(name) or "_" in name:
        return None  # a pattern, an MCP tool (`server_tool`) or a custom tool's export
    if name.lower() in BUILTIN_TOOLS:
        return (f"is Claude Code's spelling: OpenCode's tool ids are lowercase "
                f"(`{name.lower()}`), so this matches no tool")
    guess = closest(name, list(BUILTIN_TOOLS), cutoff=0.75)
    if guess is not None:
        return f"is not an OpenCode tool (did you mean `{guess}`?)"
    return None  # a plugin's tool: plugins name their tools freely


@rule("BTN710", "opencode-unknown-tool", Severity.WARNING, (Kind.OPENCODE_AGENT,),
      cross_file=True, convention=OC)
def unknown_tool(doc: OpenCodeAgent, ctx: RuleContext) -> Iterator[Finding]:
    """An agent's `tools` or `permission` names a tool OpenCode does not have.

    OpenCode turns each `tools` entry into a permission rule for that tool id and matches
    `permission` keys against tool ids as wildcards. Its ids are lowercase (`read`, `write`,
    `edit`, `bash`, `glob`, `grep`, `list`, `task`, `webfetch`, `websearch`, `todowrite`,
    `skill`, …) and MCP tools are `<server>_<tool>`, so Claude Code's `Read` or
    `mcp__lean-lsp__*` match nothing and the setting never applies. Names with `_` or a
    wildcard (MCP tools, patterns), custom tools under `.opencode/tool/` and names no
    built-in resembles (a plugin's tools) are accepted.

    Fix: use OpenCode's id (`read`, `lean-lsp_*`).

    Reported:

        ==> .opencode/agent/lean.md <==
        ---
        description: Implements Lean proofs
        tools:
          read: true
          mcp__lean-lsp__*: true
        ---
        Prove it.

    Not reported:

        ==> .opencode/agent/lean.md <==
        ---
        description: Implements Lean proofs
        tools:
          read: true
          write: false
          lean-lsp_*: true
        ---
        Prove it.
    """
    data = doc.load.data
    if data is None:
        return
    custom = _custom_tools(ctx)
    for key in ("tools", "permission"):
        value = data.get(key)
        if not isinstance(value, dict):
            continue
        fm = doc.frontmatter
        entry = fm.get(key) if fm is not None else None
        for name in value:
            problem = _tool_problem(str(name), custom)
            if problem is None:
                continue
            rng = key_range(doc, key)
            if entry is not None:  # the line that names the tool as a key, in the block
                quoted = "[\"']?"
                named = re.compile(rf"^\s+({quoted}){re.escape(str(name))}\1\s*:")
                for no in range(entry.key_range.start_line + 1, entry.range.end_line + 1):
                    m = named.match(ctx.lines[no]) if no < len(ctx.lines) else None
                    if m:
                        start = m.end(1)
                        rng = Range.of_line(no, start, start + len(str(name)))
                        break
            yield ctx.finding(rng, f"`{key}` entry `{name}` {problem}")


@rule("BTN711", "opencode-command-unknown-agent", Severity.WARNING, (Kind.OPENCODE_COMMAND,),
      cross_file=True, convention=OC)
def command_unknown_agent(doc: OpenCodeCommand, ctx: RuleContext) -> Iterator[Finding]:
    """A command's `agent` names no agent of the workspace or OpenCode's own.

    OpenCode runs a command with the agent its `agent` names and fails the command ("agent
    not found") when there is none. Agents are found by OpenCode's name for them: the
    front matter's `name`, else the path below `.opencode/agent/` without `.md`
    (`agent/subagents/x.md` is `subagents/x`), the keys of `opencode.json`'s `agent`
    section, and the built-in `build`, `plan`, `general` and `explore`. Agents defined only
    in the user's global configuration are not visible here; name them in the project if the
    command must work for everyone.

    Fix: correct the name, or add the agent (in an editor, the *Create agent* quick fix
    writes a new `.opencode/agent/` file from a template).

    Reported:

        ==> .opencode/commands/plan.md <==
        ---
        description: Create a plan
        agent: planer
        ---
        Plan $ARGUMENTS

    Not reported:

        ==> .opencode/agent/planner.md <==
        ---
        description: Creates plans
        mode: subagent
        ---
        Plan.
        ==> .opencode/commands/plan.md <==
        ---
        description: Create a plan
        agent: planner
        ---
        Plan $ARGUMENTS
    """
    data = doc.load.data
    if data is None:
        return
    agent = data.get("agent")
    if not isinstance(agent, str) or not agent.strip():
        return
    known = workspace_agents(ctx)
    if agent in known:
        return
    guess = closest(agent, sorted(known), cutoff=0.75)
    hint = f" (did you mean `{guess}`?)" if guess else ""
    yield ctx.finding(key_range(doc, "agent", value=True),
                      f"no agent `{agent}` in this workspace's `.opencode/agent/` or "
                      f"`opencode.json`, nor built in{hint}: OpenCode fails the command")


@rule("BTN712", "opencode-duplicate-agent", Severity.WARNING, (Kind.OPENCODE_AGENT,),
      cross_file=True, convention=OC)
def duplicate_agent(doc: OpenCodeAgent, ctx: RuleContext) -> Iterator[Finding]:
    """Two agent files give OpenCode the same agent name; it keeps only one of them.

    OpenCode names an agent by its front matter's `name`, else by its path below
    `.opencode/agent/`, and keeps one agent per name: when `agent/lean-research-agent.md`
    and `agent/subagents/lean-research-agent.md` both say `name: lean-research-agent`, one
    file's settings and prompt are silently ignored (which one depends on the order
    OpenCode lists the files in). An extension's source and the copy its loader installs
    are one agent, not two.

    Fix: delete the stale copy, or give the two agents different names.

    Reported:

        ==> .opencode/agent/lean-research-agent.md <==
        ---
        name: lean-research-agent
        description: Research Lean 4 topics
        ---
        ==> .opencode/agent/subagents/lean-research-agent.md <==
        ---
        name: lean-research-agent
        description: Research Lean 4 and Mathlib
        ---

    Not reported:

        ==> .opencode/agent/subagents/lean-research-agent.md <==
        ---
        description: Research Lean 4 and Mathlib
        ---
        ==> .opencode/agent/lean-research-agent.md <==
        ---
        description: Research Lean 4 topics
        ---
    """
    if doc.load.data is None or ctx.index is None or ctx.root is None:
        return
    files = ctx.index.opencode_agent_files().get(doc.agent_name, [])
    for sub in (*AGENT_DIRS, *MODE_DIRS):
        ctx.depends_on.add(str(ctx.root / OPENCODE_DIR / sub))
    ctx.depends_on.update(files)
    ctx.depends_on.update(str(Path(p).parent) for p in files)
    # A mode of an agent's name is merged into it (OpenCode deep-merges its modes over its
    # agents): only two agents, or two modes, of one name leave a file out.
    # An extension's agent (`.opencode/extensions/<name>/agents/`) is not loaded where it is:
    # the loader copies it into `.opencode/agent/subagents/`, so it and its copy are one agent.
    files = [p for p in files if mode_file(p) == doc.is_mode
             and extension_installed(ctx.index.rel(p)) is None]
    mine = str(Path(ctx.path))
    others = [p for p in files if p != mine]
    if len(files) < 2 or mine not in files:
        return
    rng = key_range(doc, "name") if "name" in doc.load.data else Range.of_line(0)
    shown = ", ".join(ctx.index.rel(p) for p in others)
    yield ctx.finding(rng, f"agent `{doc.agent_name}` is also defined by {shown}: OpenCode "
                           "keeps one agent per name and ignores the other file",
                      related=[Related(path=p, range=Range.of_line(0),
                                       message="the other definition") for p in others])


@rule("BTN713", "opencode-unknown-subagent", Severity.WARNING,
      (Kind.OPENCODE_AGENT, Kind.OPENCODE_COMMAND), cross_file=True, convention=OC)
def unknown_subagent(doc: OpenCodeAgent | OpenCodeCommand,
                     ctx: RuleContext) -> Iterator[Finding]:
    """A task-tool call names a `subagent_type` that is no agent of the workspace.

    OpenCode's task tool starts the agent its `subagent_type` parameter names and fails the
    call when there is none ("unknown agent type"). Agents are the workspace's
    `.opencode/agent/` files (by OpenCode's name for them), `opencode.json`'s `agent`
    section and OpenCode's own (`general`, `explore`, …). Only quoted names are read
    (`subagent_type="planner-agent"`); placeholders are left alone.

    Fix: correct the name, or add the agent (in an editor, the *Create agent* quick fix
    writes a new `.opencode/agent/` file from a template).

    Reported:

        ==> .opencode/commands/revise.md <==
        ---
        description: Revise a plan or a task description
        ---
        task(
          subagent_type="task-expander",
          prompt="Update task ${task_number}"
        )

    Not reported:

        ==> .opencode/agent/planner-agent.md <==
        ---
        description: Creates plans
        mode: subagent
        ---
        ==> .opencode/commands/revise.md <==
        ---
        description: Revise a plan or a task description
        ---
        task(
          subagent_type="planner-agent",
          prompt="Revise the plan for task ${task_number}"
        )
    """
    known: set[str] | None = None
    for no, line in enumerate(ctx.lines):
        if "subagent_type" not in line:
            continue
        for m in SUBAGENT_RE.finditer(line):
            name = m.group(2)
            known = workspace_agents(ctx) if known is None else known
            if name in known:
                continue
            guess = closest(name, sorted(known), cutoff=0.75)
            hint = f" (did you mean `{guess}`?)" if guess else ""
            yield ctx.finding(Range.of_line(no, m.start(2), m.end(2)),
                              f"no agent `{name}` in this workspace's `.opencode/agent/` or "
                              f"`opencode.json`, nor built in{hint}: OpenCode's task tool "
                              "fails the call")

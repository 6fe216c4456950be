"""BTN720-BTN724: OpenCode's project configuration (`opencode.json`, `opencode.jsonc`).

OpenCode reads the file as JSONC, substitutes `{file:path}` tokens with the files' content
and validates its `agent` section with the same agent schema as `.opencode/agent/` files
(sources in `model/opencode.py`). A broken file or a missing `{file:}` target stops
OpenCode from loading its configuration at all.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from ..model.base import Convention, Finding, Kind, Range, Severity
from ..model.opencode import BUILTIN_AGENTS, OpenCodeConfig
from ..parse.jsonpos import Positions
from .base import RuleContext, rule
from .opencode_common import config_data
from .opencode_frontmatter import agent_problems, command_problems, model_problem

OC = Convention.OPENCODE
CONFIG = (Kind.OPENCODE_CONFIG,)

_SHELL_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""`${NAME}`: what people write for an environment variable; OpenCode keeps it as typed."""
_MCP_LITERAL_KEYS = ("headers", "environment")
"""An MCP server's maps whose values OpenCode passes on as they are: the remote server's
request headers and the local server's process environment."""


@rule("BTN720", "opencode-config-bad-file-reference", Severity.ERROR, CONFIG, cross_file=True,
      convention=OC)
def bad_file_reference(doc: OpenCodeConfig, ctx: RuleContext) -> Iterator[Finding]:
    """A `{file:path}` in the configuration names a file that does not exist.

    OpenCode replaces every `{file:path}` of its configuration (an agent's `prompt`,
    `instructions`, a provider key, …) with the file's content, resolving a relative path
    from the configuration file's directory. A missing file is a configuration error ("bad
    file reference: … does not exist"): OpenCode refuses the whole configuration. A token on
    a line commented out with `//` is left alone; `~/`, absolute paths and paths leading out
    of the workspace are not looked at.

    Fix: correct the path, create the file, or remove the agent that uses it.

    Reported:

        ==> opencode.json <==
        {
          "agent": {
            "spreadsheet": {
              "mode": "subagent",
              "prompt": "{file:.opencode/agent/subagents/spreadsheet-agent.md}"
            }
          }
        }

    Not reported:

        ==> .opencode/agent/subagents/spreadsheet-agent.md <==
        Convert spreadsheets.
        ==> opencode.json <==
        {
          "agent": {
            "spreadsheet": {
              "mode": "subagent",
              "prompt": "{file:.opencode/agent/subagents/spreadsheet-agent.md}"
            }
          }
        }
    """
    base = Path(ctx.path).parent
    root = os.path.normpath(ctx.root) if ctx.root is not None else None
    for ref in doc.file_refs:
        target = ref.target.strip()
        if not target or target.startswith("~") or target.startswith("/"):
            continue
        resolved = Path(os.path.normpath(base / target))
        if root is None or not str(resolved).startswith(root + os.sep):
            continue  # outside the workspace: not looked at
        if ctx.exists(resolved):
            continue
        yield ctx.finding(ref.range, f"`{ref.token}`: {target} does not exist (from "
                                     f"{Path(ctx.path).name}'s directory): OpenCode refuses "
                                     "the configuration (\"bad file reference\")")


@rule("BTN721", "opencode-config-unreadable", Severity.ERROR, CONFIG, convention=OC)
def config_unreadable(doc: OpenCodeConfig, ctx: RuleContext) -> Iterator[Finding]:
    """OpenCode cannot parse its configuration file.

    OpenCode reads `opencode.json` and `opencode.jsonc` as JSONC (comments and trailing
    commas allowed) and refuses to start on any other syntax error.

    Fix: repair the JSON at the reported position.

    Reported:

        ==> opencode.json <==
        {
          "agent": {
            "lean": {"mode": "subagent"}
          }

    Not reported:

        ==> opencode.jsonc <==
        {
          // comments and trailing commas are JSONC
          "agent": {
            "lean": {"mode": "subagent",},
          },
        }
    """
    if doc.error is None:
        return
    yield ctx.finding(doc.error_range or Range.of_line(0),
                      f"OpenCode cannot parse this configuration ({doc.error}): it refuses "
                      "to start with it")


@rule("BTN722", "opencode-config-invalid-entry", Severity.ERROR, CONFIG, convention=OC)
def config_invalid_entry(doc: OpenCodeConfig, ctx: RuleContext) -> Iterator[Finding]:
    """An agent or command of the configuration has a value OpenCode refuses.

    The `agent` section maps agent names to the same schema as the front matter of
    `.opencode/agent/` files (see BTN702 and BTN705): `mode` is `subagent`, `primary` or
    `all`, `tools` a map of tool ids to booleans, `permission` actions or pattern maps,
    `model` a `provider/model` string. The `command` section maps command names to
    `template` (required here: there is no body), `description`, `agent`, `model` and
    `subtask` (a boolean). OpenCode refuses the whole configuration on a schema error, and
    fails the agent or command on a model without a provider; the same holds for the
    top-level `model` and `small_model`.

    Fix: write the value in OpenCode's form.

    Reported:

        ==> opencode.json <==
        {"agent": {"lean": {"mode": "subagent", "model": "opus", "tools": ["read"]}}}

    Not reported:

        ==> opencode.json <==
        {"agent": {"lean": {"mode": "subagent", "model": "anthropic/claude-opus-4-1",
                            "tools": {"read": true, "write": false}}},
         "command": {"check": {"template": "Run the checks", "subtask": true}}}
    """
    data = doc.data
    if data is None:
        return
    pos: Positions | None = None
    for section, what in (("agent", "agent"), ("command", "command")):
        entries = data.get(section)
        if not isinstance(entries, dict):
            continue
        for name, entry in entries.items():
            problems: list[tuple[str, str]] = []
            if not isinstance(entry, dict):
                problems.append(("", "must be an object"))
            elif what == "agent":
                problems.extend(agent_problems(entry))
            else:
                if not isinstance(entry.get("template"), str):
                    problems.append(("template" if "template" in entry else "",
                                     "`template` (the command's text) is required and must be "
                                     "a string"))
                problems.extend(command_problems(entry))
            model = entry.get("model") if isinstance(entry, dict) else None
            problem = model_problem(model) if isinstance(model, str) else None
            if problem is not None:
                problems.append(("model", problem))
            for key, text in problems:
                pos = pos or Positions("\n".join(ctx.lines))
                path = (section, name, key) if key else (section, name)
                rng = pos.value_range(path) or pos.key_range((section, name)) \
                    or Range.of_line(0)
                yield ctx.finding(rng, f"{what} `{name}`: {text}")
    for key in ("model", "small_model"):
        model = data.get(key)
        problem = model_problem(model) if isinstance(model, str) else None
        if problem is not None:
            pos = pos or Positions("\n".join(ctx.lines))
            yield ctx.finding(pos.value_range((key,)) or Range.of_line(0), f"`{key}`: {problem}")


@rule("BTN723", "opencode-config-shell-variable", Severity.ERROR, CONFIG, fixable=True,
      convention=OC)
def shell_variable(doc: OpenCodeConfig, ctx: RuleContext) -> Iterator[Finding]:
    """An MCP server's header or environment value holds `${VAR}`, which OpenCode never
    substitutes.

    OpenCode replaces `{env:VAR}` (and `{file:path}`) in the text of its configuration and
    nothing else (opencode 1.18.33, `ConfigVariable.substitute`: `/\\{env:([^}]+)\\}/g`);
    an MCP server's `headers` go to the server and its `environment` to the process as
    written. So `"Authorization": "Bearer ${API_KEY}"` sends the literal text `${API_KEY}`,
    and the server refuses the request or runs unauthenticated. (Claude Code's `.mcp.json`
    does expand `${VAR}`, which is where the habit comes from.)

    Fix: write `{env:VAR}` (a quick fix).

    Reported:

        ==> .opencode/opencode.json <==
        {
          "mcp": {
            "context7": {
              "type": "remote",
              "url": "https://mcp.context7.com/mcp",
              "headers": {
                "CONTEXT7_API_KEY": "${CONTEXT7_API_KEY}"
              }
            }
          }
        }

    Not reported:

        ==> .opencode/opencode.json <==
        {
          "mcp": {
            "context7": {
              "type": "remote",
              "url": "https://mcp.context7.com/mcp",
              "headers": {
                "CONTEXT7_API_KEY": "{env:CONTEXT7_API_KEY}"
              }
            }
          }
        }
    """
    data = doc.data
    servers = data.get("mcp") if data is not None else None
    if not isinstance(servers, dict):
        return
    pos: Positions | None = None
    for name, server in servers.items():
        if not isinstance(server, dict):
            continue
        for section in _MCP_LITERAL_KEYS:
            values = server.get(section)
            if not isinstance(values, dict):
                continue
            for key, value in values.items():
                if not isinstance(value, str) or not _SHELL_VAR.search(value):
                    continue
                pos = pos or Positions("\n".join(ctx.lines))
                span = pos.spans.get(("mcp", name, section, key))
                if span is None:
                    continue
                raw = pos.text[span.start:span.end]
                for m in _SHELL_VAR.finditer(raw):
                    var = m.group(1)
                    rng = pos.range(span.start + m.start(), span.start + m.end())
                    yield ctx.finding(
                        rng,
                        f"MCP server `{name}`: OpenCode does not substitute `${{{var}}}` in "
                        f"`{section}`, so `{key}` is sent as that literal text; write "
                        f"`{{env:{var}}}`",
                        fix=ctx.fix(f"Write `{{env:{var}}}`",
                                    ctx.edit(rng, f"{{env:{var}}}")))


def _described(entry: object) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("description"), str) \
        and bool(entry["description"].strip())


@rule("BTN724", "opencode-config-subagent-missing-description", Severity.WARNING, CONFIG,
      cross_file=True, convention=OC)
def config_subagent_missing_description(doc: OpenCodeConfig,
                                        ctx: RuleContext) -> Iterator[Finding]:
    """An agent defined in the configuration can be a subagent but has no `description`.

    The configuration's `agent` entries are agents as much as `.opencode/agent/` files are.
    OpenCode's task tool lists every agent that is not `mode: primary` with its description,
    and one without as "This subagent should only be called manually by the user"
    (opencode 1.18.33, `ToolRegistry.describeTask`), so the model never delegates to it
    (BTN706 reports the same for agent files). Not reported when an agent file, a built-in
    agent or another configuration file of the workspace gives that name a description
    (OpenCode merges them).

    Fix: add a `description` saying when to use the agent, or key the entry by the name of
    the agent file it was meant to configure.

    Reported:

        ==> opencode.json <==
        {
          "agent": {
            "lean-research-agent": {
              "mode": "subagent",
              "tools": {"lean-lsp-mcp_loogle": true}
            }
          }
        }

    Not reported:

        ==> opencode.json <==
        {
          "agent": {
            "lean-research-agent": {
              "mode": "subagent",
              "description": "Lean 4 library research with Loogle",
              "tools": {"lean-lsp-mcp_loogle": true}
            }
          }
        }
    """
    data = doc.data
    section = data.get("agent") if data is not None else None
    if not isinstance(section, dict):
        return
    files = ctx.index.opencode_agents() if ctx.index is not None else {}
    others: list[dict[str, object]] = []
    pos: Positions | None = None
    for name, entry in section.items():
        if not isinstance(entry, dict) or entry.get("mode") == "primary" \
                or entry.get("disable") is True or _described(entry):
            continue
        if name in BUILTIN_AGENTS or name in files:
            continue
        if not others:
            others = [d.get("agent") or {} for d in config_data(ctx)]
        if any(isinstance(o, dict) and _described(o.get(name)) for o in others):
            continue
        pos = pos or Positions("\n".join(ctx.lines))
        rng = pos.key_range(("agent", name)) or Range.of_line(0)
        yield ctx.finding(rng, f"agent `{name}` can be a subagent but has no `description`: "
                               "the task tool lists it as one to be called manually only")

"""OpenCode's agent and command files: what OpenCode itself reads from them.

Every fact here is taken from OpenCode's source (github.com/anomalyco/opencode, formerly
sst/opencode, the npm package `opencode-ai`), not from Claude Code's formats:

- Agents: `packages/opencode/src/config/agent.ts` (commit 05988800) globs
  `{agent,agents}/**/*.md` in each config directory (`.opencode/` among them). The name is
  the front matter's `name`, else the path below `agent/` without `.md`, so
  `agent/subagents/x.md` is `subagents/x` (`config/entry-name.ts`). The schema is
  `packages/core/src/v1/config/agent.ts` (commit 24e02906): a struct *with rest*, so unknown
  keys are not refused but moved into `options`, which go to the model provider with each
  request. `mode` is `subagent`, `primary` or `all`; `tools` is a map of tool id to boolean
  (deprecated: each entry becomes an `allow`/`deny` permission, `write`/`edit`/`patch` all
  mean `edit`); `steps`/`maxSteps` are positive integers; `color` is `#rrggbb` or a theme
  colour.
- Permissions: `packages/core/src/v1/config/permission.ts` (commit 02ce4a33): an action
  (`ask`, `allow`, `deny`) or a map of keys to an action or to a map of patterns to actions;
  `question`, `webfetch`, `websearch` and `doom_loop` take an action only.
- Commands: `packages/opencode/src/config/command.ts` (commit 01b622ed) globs
  `{command,commands}/**/*.md`; its schema is `template` (the body), `description`, `agent`,
  `model` and `subtask` (boolean). Other keys are dropped.
- Front matter: `packages/opencode/src/config/markdown.ts` (commit 0a8a0ed8) reads it with
  gray-matter (js-yaml, which refuses duplicate keys); when that fails it retries once after
  `fallbackSanitization` (a top-level `key: value` whose key matches `[A-Za-z_]\\w*` and
  whose unquoted value holds a `:` becomes a block scalar); when that fails too, the file is
  skipped (agents and commands alike: their loaders catch the error and `continue`). But
  gray-matter caches its result by input text before parsing, so when the retry's text is
  the same as the first (nothing to sanitize), the retry returns the cached unparsed file:
  no front matter, the whole text, `---` block included, as the prompt or template. Both
  outcomes were checked against the `opencode` 1.18.33 binary (`opencode debug config`), as
  was js-yaml's YAML 1.2 reading of values: `yes`, `no`, `on`, `off` are strings.
- Models: `provider/model` (`Provider.parseModel` splits at the first `/`; a bare `opus` is
  provider `opus` with an empty model id, which no provider has).
- Config files: `opencode.json` / `opencode.jsonc` at the project root and in `.opencode/`,
  read as JSONC (comments, trailing commas). `{file:path}` anywhere in the text (not on a
  `//` line) is replaced by the file's content, resolved from the config file's directory;
  a missing file is `ConfigInvalidError` ("bad file reference"), so OpenCode does not start
  (`packages/opencode/src/config/variable.ts`, commit 0380a03a). Its `agent` section takes
  the agent schema above, keyed by agent name.
- Tools: the registry (`packages/opencode/src/tool/registry.ts`, commit 010bc19e) and each
  tool's id; MCP tools are named `<server>_<tool>` (`packages/opencode/src/mcp/index.ts`).
  The task tool fails on a `subagent_type` it does not know ("Unknown agent type: … is not
  a valid agent type", in the 1.18.33 binary).
"""

from __future__ import annotations

import re
from typing import Any

from .agent import AgentFile, CommandFile
from .base import Model, Range

OPENCODE_DIR = ".opencode"
CONFIG_NAMES = ("opencode.json", "opencode.jsonc")
"""Project configuration files, at the root or in `.opencode/`."""
AGENT_DIRS = ("agent", "agents")
MODE_DIRS = ("mode", "modes")
"""Where OpenCode reads its older "modes": `{mode,modes}/*.md`, one level only, with the
agent schema, the name from the path below `mode/`, and `mode` forced to `primary`
(`loadMode` in `packages/opencode/src/config/agent.ts`, commit 05988800; the modes docs)."""
COMMAND_DIRS = ("command", "commands")

AGENT_KEYS: dict[str, str] = {
    "name": "the agent's name (default: the path below `agent/` without `.md`)",
    "description": "when to use the agent; the task tool lists subagents by it",
    "mode": "`subagent`, `primary` or `all` (default `all`)",
    "model": "`provider/model`, e.g. `anthropic/claude-sonnet-4-5`",
    "variant": "default model variant when the agent's own model is used",
    "prompt": "system prompt (the body, or `{file:./path}`)",
    "temperature": "sampling temperature (a number)",
    "top_p": "nucleus sampling (a number)",
    "tools": "deprecated map of tool id to true/false (use `permission`)",
    "permission": "`ask`/`allow`/`deny`, or a map of tool to action or pattern map",
    "disable": "true removes the agent",
    "hidden": "hide a subagent from the @ menu",
    "hidden_from_cycle": "leave out of tab rotation",
    "color": "`#rrggbb` or a theme colour",
    "steps": "maximum agentic iterations (a positive integer)",
    "maxSteps": "deprecated spelling of `steps`",
    "options": "extra options passed to the model provider",
}
"""The keys OpenCode's agent schema names (`KNOWN_KEYS` in core/v1/config/agent.ts)."""

COMMAND_KEYS: dict[str, str] = {
    "description": "shown in the command list",
    "agent": "the agent that runs the command",
    "model": "`provider/model` to run the command with",
    "subtask": "true runs the command as a subagent task",
}
"""The command schema's front-matter keys (`template` is the body)."""

MODES = ("subagent", "primary", "all")
ACTIONS = ("ask", "allow", "deny")
ACTION_ONLY = ("question", "webfetch", "websearch", "doom_loop")
"""Permission keys that take an action, never a pattern map."""
PERMISSION_KEYS = ("read", "edit", "glob", "grep", "list", "bash", "task",
                   "external_directory", "question", "webfetch", "websearch", "lsp",
                   "doom_loop", "skill")
THEME_COLORS = ("primary", "secondary", "accent", "success", "warning", "error", "info")
COLOR_RE = re.compile(r"^#[0-9a-fA-F]{6}$")

BUILTIN_TOOLS = ("bash", "read", "write", "edit", "patch", "apply_patch", "multiedit", "glob",
                 "grep", "list", "task", "webfetch", "websearch", "codesearch", "todowrite",
                 "todoread", "skill", "lsp", "batch", "question", "plan_enter", "plan_exit",
                 "invalid")
"""Built-in tool ids across OpenCode releases (older ones kept: a config naming them is not
wrong on the releases that have them)."""

BUILTIN_AGENTS = ("build", "plan", "general", "explore")
"""Agents OpenCode defines itself (commands may name them in `agent`)."""

CLAUDE_CODE_KEYS: dict[str, str] = {
    "permissions": "permission",
    "allowed-tools": "permission",
    "allowed_tools": "permission",
    "disallowedTools": "permission",
    "maxTurns": "steps",
    "max_turns": "steps",
}
"""Keys written the Claude Code way (or misspelt) and the OpenCode key that does the job."""


class OpenCodeLoad(Model):
    """What OpenCode's front-matter reader makes of a file."""

    data: dict[str, Any] | None = None
    """The front matter as OpenCode reads it; None when it cannot read it (file skipped)."""
    error: str | None = None
    error_range: Range | None = None
    fallback: bool = False
    """Read only after OpenCode's `fallbackSanitization` retry."""
    raw: bool = False
    """Unreadable, yet loaded: without front matter, the `---` block sent as text."""
    unchecked: str | None = None
    """Why the front matter was not judged: past Baton's YAML limits (aliases, which js-yaml
    expands and Baton never does, depth, size). Rules then say nothing of it."""


class OpenCodeAgent(AgentFile):
    """An agent under `.opencode/agent(s)/`, or a mode under `.opencode/mode(s)/`."""

    load: OpenCodeLoad = OpenCodeLoad()
    agent_name: str = ""
    """The name OpenCode gives the agent (front matter `name`, else the path)."""
    is_mode: bool = False
    """A `.opencode/mode(s)/` file: a primary agent whatever its `mode:` says."""


class OpenCodeCommand(CommandFile):
    """A command under `.opencode/command(s)/`."""

    load: OpenCodeLoad = OpenCodeLoad()
    command_name: str = ""


class FileRef(Model):
    """A `{file:path}` substitution in a config file."""

    token: str
    target: str
    range: Range


class OpenCodeConfig(Model):
    """`opencode.json(c)`: the parsed document and its `{file:}` substitutions."""

    path: str
    data: dict[str, Any] | None = None
    """None when OpenCode cannot parse the file (it then refuses to start)."""
    error: str | None = None
    error_range: Range | None = None
    file_refs: list[FileRef] = []


def mode_file(path: str) -> bool:
    """Whether `path` is a mode file, `.opencode/mode(s)/x.md` (the last `.opencode/` in
    it counts)."""
    parts = path.replace("\\", "/").split("/")
    if OPENCODE_DIR not in parts:
        return False
    idx = len(parts) - 1 - parts[::-1].index(OPENCODE_DIR)
    return len(parts) == idx + 3 and parts[idx + 1] in MODE_DIRS


def entry_name(rel: str, dirs: tuple[str, ...]) -> str:
    """OpenCode's name for the file at `rel` (relative to the workspace root): the path
    below `.opencode/<dir>/` without its extension (`config/entry-name.ts`)."""
    parts = rel.split("/")
    if len(parts) > 2 and parts[0] == OPENCODE_DIR and parts[1] in dirs:
        inner = "/".join(parts[2:])
    else:
        inner = parts[-1]
    return inner[:-3] if inner.endswith(".md") else inner

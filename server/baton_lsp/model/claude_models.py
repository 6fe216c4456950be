"""Claude model names the way Claude Code and the Anthropic API accept them.

One definition for the front-matter rule (BTN207), completion, preflight and the claude
runner: aliases resolve inside Claude Code, full ids go to the API as they are, and the
short versioned form many trees write (`sonnet-4.5`) is neither, so it is mapped to the full
id (`claude-sonnet-4-5`) before launch and flagged with that fix in the editor.
"""

from __future__ import annotations

import re
from typing import NamedTuple

ALIASES = ("default", "best", "sonnet", "opus", "haiku", "opusplan", "sonnet[1m]", "opus[1m]",
           "fable")
"""`claude --model` aliases (Claude Code's model configuration; `fable` per the sub-agents
docs' `model` field)."""
INHERIT = "inherit"
"""Agent front matter only: use the main session's model (no `--model` is passed)."""
SUGGESTIONS = (INHERIT, "sonnet", "opus", "haiku", "claude-sonnet-4-5", "claude-opus-4-1",
               "claude-haiku-4-5")

_SHORT = re.compile(r"^(?P<family>haiku|sonnet|opus|fable)-(?P<major>\d+)(?:[.-](?P<minor>\d+))?$")
_DOTTED = re.compile(r"(\d)\.(\d)")
"""A version written with a dot (`4.6`): Claude Code has no such id, and its own model-list
check tells users to write it with a hyphen (the claude 2.1.331 binary's availableModels
message)."""
_FULL = re.compile(
    r"^(?:(?:[a-z]{2,4}\.)?anthropic\.)?claude-"
    r"(?:(?P<pre>\d+(?:-\d+)?)-)?(?:haiku|sonnet|opus|fable)"
    r"(?:-(?P<post>\d+(?:-\d+)?))?"
    r"(?:-(?:\d{8}|latest))?(?:@\d{8})?(?:-v\d+(?::\d+)?)?(?:\[1m\])?$"
)


def looks_like_claude_model(name: str) -> bool:
    """A Claude model in any spelling (alias, full or provider id, `sonnet-4.5`): what the
    codex and gemini runners must never be given."""
    lowered = name.strip().lower()
    head = re.split(r"[-_.\[\s]", lowered, maxsplit=1)[0]
    return (head in ("claude", "sonnet", "opus", "haiku", "opusplan", "fable")
            or bool(_FULL.match(lowered)) or bool(_SHORT.match(lowered)))


def full_id(name: str) -> str | None:
    """`sonnet-4.5` → `claude-sonnet-4-5`, `opus-4` → `claude-opus-4-0`, `claude-opus-4.6` →
    `claude-opus-4-6`; None otherwise."""
    if name.startswith("claude-") and _DOTTED.search(name):
        hyphenated = _DOTTED.sub(r"\1-\2", name)
        full = _FULL.match(hyphenated)
        return hyphenated if full and (full.group("pre") or full.group("post")) else None
    m = _SHORT.match(name)
    if not m:
        return None
    minor = m.group("minor") or ("0" if m.group("major") == "4" else None)
    version = m.group("major") + (f"-{minor}" if minor is not None else "")
    return f"claude-{m.group('family')}-{version}"


def is_claude_model(name: str, extra: tuple[str, ...] | list[str] = ()) -> bool:
    """True for what Claude Code passes on correctly: `inherit`, an alias, a full id."""
    if name == INHERIT or name in ALIASES or name in extra:
        return True
    m = _FULL.match(name)
    return bool(m and (m.group("pre") or m.group("post")))


def claude_model_arg(name: str | None, extra: tuple[str, ...] | list[str] = ()) -> str | None:
    """The `--model` value for a front-matter model: None for none or `inherit`.

    Raises ValueError naming the fix for a name that is not a Claude model.
    """
    if not name or name == INHERIT:
        return None
    if is_claude_model(name, extra):
        return name
    mapped = full_id(name)
    if mapped is not None:
        return mapped
    raise ValueError(f"`{name}` is not a Claude model: use an alias ({', '.join(ALIASES[2:5])})"
                     f" or a full id such as `claude-sonnet-4-5`")


# -- tools, front-matter keys and permission modes, with the versions they exist in ----------
#
# Sources, so the table can be re-checked instead of guessed:
# - code.claude.com/docs/en/tools-reference (snapshot: github.com/ericbuess/claude-code-docs
#   docs/tools-reference.md, docs up to v2.1.240) for the current tool names;
# - the tool list, legacy-name map and removed-tool set compiled into the claude binary
#   (`@anthropic-ai/claude-code` 2.1.331 and 2.1.197, `strings` of the native executable);
# - code.claude.com/docs/en/changelog for the versions a tool was added, renamed or unshipped;
#   where the changelog is silent, the release current when the tools table in the settings /
#   IAM docs dropped the tool (marked "≈" in `note`).


class Known(NamedTuple):
    """A tool or front-matter key and the Claude Code releases it exists in (a named tuple,
    not a dataclass, whose methods would be compiled at import)."""

    name: str
    since: str | None = None
    """First release that has it (None: before the oldest release we checked)."""
    until: str | None = None
    """First release that no longer has it (None: still there)."""
    alias_of: str | None = None
    """The current name Claude Code maps this legacy name to (still accepted)."""
    note: str = ""


_DROPPED = "≈: the release current when the docs' tools table dropped it"


def _tools(names: str, since: str | None = None) -> list[Known]:
    return [Known(n, since) for n in names.split()]


TOOLS: tuple[Known, ...] = (
    *_tools("Bash Edit Glob Grep NotebookEdit Read TodoWrite WebFetch WebSearch Write"),
    Known("Agent", "2.1.63", note="≈; was `Task`, which stays an accepted alias"),
    Known("Task", until=None, alias_of="Agent", note="the name of Agent before ≈2.1.63"),
    Known("AskUserQuestion", "2.0.21"),
    Known("ExitPlanMode"), Known("EnterPlanMode"),
    Known("ListMcpResourcesTool"), Known("ReadMcpResourceTool"),
    Known("ReadMcpResourceDirTool"),
    Known("ListMcpResources", alias_of="ListMcpResourcesTool"),
    Known("ReadMcpResource", alias_of="ReadMcpResourceTool"),
    Known("ReadMcpResourceDir", alias_of="ReadMcpResourceDirTool"),
    Known("Skill", note="took over SlashCommand in 2.1.3"),
    Known("SlashCommand", "1.0.123", "2.1.3", note="merged into the Skill tool"),
    Known("LSP", "2.0.74"), Known("ToolSearch"),
    Known("TaskCreate", "2.1.16"), Known("TaskGet", "2.1.16"), Known("TaskList", "2.1.16"),
    Known("TaskUpdate", "2.1.16"), Known("TaskStop"),
    Known("KillShell", alias_of="TaskStop"), Known("KillBash", alias_of="TaskStop"),
    Known("TaskOutput", "2.0.64", "2.1.331",
          note="deprecated in 2.1.83 for Read on the task's output file; removed by 2.1.331"),
    Known("BashOutput", None, "2.0.64", note="unshipped for TaskOutput, itself removed since"),
    Known("AgentOutputTool", None, "2.0.64", note="unshipped for TaskOutput"),
    Known("MultiEdit", None, "2.0.41", note=f"{_DROPPED}; use Edit"),
    Known("LS", None, "2.0.41", note=f"{_DROPPED}; use Glob"),
    Known("NotebookRead", None, "2.0.51", note=f"{_DROPPED}; use Read"),
    Known("TodoRead", None, "1.0.45", note=_DROPPED),
    Known("TeamCreate", None, "2.1.178"), Known("TeamDelete", None, "2.1.178"),
    Known("CronCreate", "2.1.71"), Known("CronDelete", "2.1.71"), Known("CronList", "2.1.71"),
    Known("EnterWorktree"), Known("ExitWorktree", "2.1.72"),
    Known("Monitor", "2.1.98"), Known("PowerShell", "2.1.84"),
    Known("PushNotification", "2.1.110"), Known("SendMessage"),
    Known("ListAgents", "2.1.224"), Known("ListPeers", alias_of="ListAgents"),
    Known("EndConversation", "2.1.214"), Known("Workflow", "2.1.154"),
    *_tools("Artifact ReportFindings ScheduleWakeup RemoteTrigger SendUserFile SendUserMessage "
            "ShareOnboardingGuide WaitForMcpServers SetGoal"),
    Known("Brief", alias_of="SendUserMessage"),
    *(Known(n, note="in the 2.1.331 binary's tool list; first release not checked")
      for n in ("ClaudeDesign", "OfferChromeSetup", "Projects", "propose_skills",
                "ReadNotifications", "SendFeedback", "ShowOnboardingRolePicker",
                "SubagentHandback")),
    Known("ProposeGoal", alias_of="SetGoal"),
)
"""Every tool name Claude Code has had. Versions marked ≈ in `note` are estimates."""

TOOL_INDEX = {t.name: t for t in TOOLS}
CURRENT_TOOLS = tuple(sorted(t.name for t in TOOLS if t.until is None and t.alias_of is None))
"""Names a tool list may use today (legacy aliases excluded, though still accepted)."""


def tool_status(name: str) -> Known | None:
    """The table entry for a bare tool name (`Bash`, not `Bash(git:*)`), or None if unknown."""
    return TOOL_INDEX.get(name)


SCOPED_TOOLS = frozenset({"Bash", "PowerShell", "Monitor", "Read", "Grep", "Glob", "LSP", "Edit",
                          "Write", "NotebookEdit", "Skill", "Agent", "Task", "WebFetch"})
"""Tools whose permission rules take a specifier, `Tool(specifier)` (tools reference,
"Configure tools with permission rules and hooks"); `Tool(param:value)` since 2.1.178."""

AGENT_KEYS: tuple[Known, ...] = (
    Known("name"), Known("description"), Known("tools"), Known("model"), Known("color"),
    Known("disallowedTools", "2.0.30"), Known("permissionMode"),
    Known("skills"), Known("hooks"), Known("mcpServers"), Known("maxTurns"),
    Known("memory", "2.1.33"), Known("background"), Known("effort"), Known("isolation"),
    Known("initialPrompt"),
)
"""Subagent front matter (code.claude.com/docs/en/sub-agents, "Supported frontmatter
fields")."""

SKILL_KEYS: tuple[Known, ...] = (
    Known("name"), Known("description"), Known("when_to_use"), Known("argument-hint"),
    Known("arguments"), Known("disable-model-invocation"), Known("user-invocable"),
    Known("allowed-tools"), Known("disallowed-tools"), Known("model"), Known("effort"),
    Known("context"), Known("agent"), Known("background", "2.1.218"), Known("hooks"),
    Known("paths"), Known("shell"), Known("metadata"), Known("license"),
    Known("compatibility"), Known("version"),
)
"""Skill and command front matter (code.claude.com/docs/en/skills, "Frontmatter reference";
commands under `.claude/commands/` take the same keys since commands and skills merged in
2.1.3). `version` is read by the CLI (2.1.331 key list) though not documented."""

CLI_FRONTMATTER_KEYS = (
    "name", "description", "model", "allowed-tools", "argument-hint", "arguments",
    "disable-model-invocation", "user-invocable", "effort", "shell", "version", "when_to_use",
    "paths", "hooks", "context", "agent", "created_by", "improved_by", "mcpServers",
    "lspServers", "agents", "outputStyles", "themes", "workflows", "channels", "monitors",
    "settings", "experimental", "commands", "skills", "dependencies", "userConfig", "metadata",
    "engines", "network", "displayName", "defaultEnabled", "fallback", "evals", "author",
    "homepage", "repository", "license", "keywords", "compatibility", "tools",
    "disallowedTools", "color", "permissionMode", "maxTurns", "autoCompactWindow",
    "initialPrompt", "memory", "background", "omitClaudeMd", "isolation", "observer",
    "observerMessage", "observeSubagents", "observeToolResults", "keep-coding-instructions",
    "force-for-plugin", "type", "originSessionId", "hide-from-slash-command-tool",
)
"""Every front-matter key the claude 2.1.331 binary recognises (its key list for skills,
commands, agents and plugins), undocumented ones such as `hide-from-slash-command-tool`
included."""

_USER_ONLY = ("the model can still invoke it; `disable-model-invocation: true` is the key that "
              "leaves it to the user's `/name`")
"""Claude Code 2.1.331 reads `disable-model-invocation` (and `user-invocable`) and no
`user-only`; unknown keys only land in `declaredFields`, which nothing enforces."""

MISTAKEN_KEYS = {
    "thinking": "Claude Code has no `thinking` key; set `effort` (low, medium, high, max)",
    "max_thinking_tokens": "Claude Code has no such key; set `effort`",
    "temperature": "Claude Code takes no sampling settings from front matter",
    "top_p": "Claude Code takes no sampling settings from front matter",
    "max_tokens": "Claude Code takes no token limit from front matter",
    "max-tokens": "Claude Code takes no token limit from front matter",
    "args": "the argument keys are `argument-hint` (autocomplete) and `arguments` (names)",
    "arg": "the argument keys are `argument-hint` (autocomplete) and `arguments` (names)",
    "permissions": "permission rules live in settings.json; commands take `allowed-tools`",
    "forbidden_tools": "no tool is blocked by it; the key is `disallowed-tools`",
    "forbidden-tools": "no tool is blocked by it; the key is `disallowed-tools`",
    "blocked_tools": "no tool is blocked by it; the key is `disallowed-tools`",
    "blocked-tools": "no tool is blocked by it; the key is `disallowed-tools`",
    "denied_tools": "no tool is blocked by it; the key is `disallowed-tools`",
    "denied-tools": "no tool is blocked by it; the key is `disallowed-tools`",
    "permission-mode": "commands have no permission mode; agents take `permissionMode`",
    "user-only": _USER_ONLY,
    "user_only": _USER_ONLY,
    "useronly": _USER_ONLY,
}
"""Keys people write believing Claude Code reads them (settings of other tools or APIs);
any other unknown key is the project's own metadata and is left alone."""

PERMISSION_MODES = ("default", "acceptEdits", "auto", "dontAsk", "bypassPermissions", "plan",
                    "manual")
"""Subagent `permissionMode` values; `manual` (alias of default) since 2.1.200."""

SUBSTITUTIONS = ("$ARGUMENTS", "$ARGUMENTS[N]", "$N", "$name", "${CLAUDE_SESSION_ID}",
                 "${CLAUDE_EFFORT}", "${CLAUDE_SKILL_DIR}", "${CLAUDE_PROJECT_DIR}",
                 "${CLAUDE_PLUGIN_ROOT}", "${CLAUDE_PLUGIN_DATA}")
"""What Claude Code expands in command and skill bodies (skills docs, "Available string
substitutions"); anything else reaches the model as typed."""

"""Claude Code's project settings (`.claude/settings.json`, `.claude/settings.local.json`)
and the hook vocabulary shared by settings and agent/skill front matter `hooks:`.

Every name below is read from the pinned Claude Code 2.1.331 bundle
(~/.cache/baton-agents/node_modules/@anthropic-ai/claude-code-linux-x64/claude): the hook
event enum, the events whose matcher query is never computed, and the hook entry `type`
union of the settings schema. A hook under a name Claude Code does not have is dropped
with a note ("unknown hook event; entry ignored"), so it never runs.
"""

from __future__ import annotations

from typing import Any

from .base import Model, Range

SETTINGS_FILES = ("settings.json", "settings.local.json")
"""The project's settings files, directly under `.claude/` (shared, then personal)."""

STRAY_HOOKS_FILE = ("hooks", "hooks.json")
"""`.claude/hooks/hooks.json`: a plugin's hooks file (`hooks/hooks.json` at a plugin root)
written into a project's `.claude/`, where Claude Code never reads it. Read as a settings
file so its hooks are checked and BTN812 can say it is never loaded."""

HOOK_EVENTS = (
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PostToolBatch", "Notification",
    "UserPromptSubmit", "UserPromptExpansion", "SessionStart", "SessionEnd", "Stop",
    "StopFailure", "SubagentStart", "SubagentStop", "PreCompact", "PostCompact",
    "PreModelSwitch", "PostModelSwitch", "PermissionRequest", "PermissionDenied", "Setup",
    "TeammateIdle", "TaskCreated", "TaskCompleted", "Elicitation", "ElicitationResult",
    "ConfigChange", "WorktreeCreate", "WorktreeRemove", "InstructionsLoaded", "CwdChanged",
    "FileChanged", "DirectoryAdded", "MessageDisplay",
)
"""The hook events of Claude Code 2.1.331 (the bundle's event enum, in its order)."""

_TOOL = "the tool name"
MATCH_QUERY: dict[str, str | None] = {
    "PreToolUse": _TOOL, "PostToolUse": _TOOL, "PostToolUseFailure": _TOOL,
    "PermissionRequest": _TOOL, "PermissionDenied": _TOOL,
    "PostToolBatch": "the tool names of the batch",
    "UserPromptExpansion": "the command name",
    "SessionStart": "the source (startup, resume, clear, compact)",
    "Setup": "the trigger", "PreCompact": "the trigger (manual, auto)",
    "PostCompact": "the trigger (manual, auto)", "PreModelSwitch": "the model switched to",
    "PostModelSwitch": "the model switched to", "Notification": "the notification type",
    "SessionEnd": "the reason", "StopFailure": "the error", "SubagentStart": "the agent type",
    "SubagentStop": "the agent type", "Elicitation": "the MCP server name",
    "ElicitationResult": "the MCP server name", "ConfigChange": "the source",
    "DirectoryAdded": "the source", "InstructionsLoaded": "the load reason",
    "FileChanged": "the file name",
    "UserPromptSubmit": None, "Stop": None, "TeammateIdle": None, "TaskCreated": None,
    "TaskCompleted": None, "WorktreeCreate": None, "WorktreeRemove": None, "CwdChanged": None,
    "MessageDisplay": None,
}
"""What each event's `matcher` is matched against (the bundle's match-query switch, and its
batch matching for PostToolBatch); None: nothing, every group runs."""

MATCHERLESS_EVENTS = frozenset(e for e, query in MATCH_QUERY.items() if query is None)
"""Events for which Claude Code computes no match query, so every matcher group runs
whatever its `matcher` says."""

TOOL_EVENTS = frozenset(e for e, query in MATCH_QUERY.items() if query == _TOOL)
"""Events whose matcher is matched against a tool name."""

HOOK_TYPES = ("command", "prompt", "agent", "http", "mcp_tool")
"""The `type`s of the settings schema's hook entry union."""

WILDCARD_MATCHERS = frozenset({"", "*"})
"""Matchers that select everything: harmless on any event."""


TOO_DEEP = "nested too deeply to read"
"""`ClaudeSettings.error` of a file whose nesting exhausts the reader (a hostile file)."""


class ClaudeSettings(Model):
    """A parsed settings file: the object, or why Claude Code cannot read it."""

    path: str
    data: dict[str, Any] | None = None
    error: str | None = None
    error_range: Range | None = None

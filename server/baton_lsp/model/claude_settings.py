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

MATCHERLESS_EVENTS = frozenset({
    "UserPromptSubmit", "Stop", "TeammateIdle", "TaskCreated", "TaskCompleted",
    "WorktreeCreate", "WorktreeRemove", "CwdChanged", "MessageDisplay",
})
"""Events for which Claude Code computes no match query (its `hook_event_name` switch
returns nothing), so every matcher group runs whatever its `matcher` says."""

TOOL_EVENTS = frozenset({
    "PreToolUse", "PostToolUse", "PostToolUseFailure", "PermissionRequest", "PermissionDenied",
})
"""Events whose matcher is matched against a tool name (the bundle's match-query switch)."""

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

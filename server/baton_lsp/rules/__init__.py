"""Rule families, one module each. Importing a module registers its rules."""

from __future__ import annotations

import importlib
import threading

RULE_MODULES = (
    "meta",
    "markdown_structure",
    "plan_deps",
    "plan_phases",
    "plan_metadata",
    "plan_links",
    "links",
    "plan_structure",
    "agent_frontmatter",
    "agent_body",
    "agent_names",
    "command_frontmatter",
    "skill_text",
    "command_tasks",
    "command_bash",
    "command_paths",
    "command_shellcheck",
    "data_files",
    "run_state",
    "checkpoint_files",
    "task_registry",
    "opencode_frontmatter",
    "opencode_refs",
    "opencode_config",
    "mcp_config",
    "memory_files",
    "plugin_manifest",
    "unloaded_files",
    "claude_settings",
    "hook_commands",
)

MODULES_BY_KIND: dict[str, tuple[str, ...]] = {
    "plan": ("plan_deps", "plan_phases", "plan_metadata", "plan_links", "plan_structure",
             "run_state", "data_files", "markdown_structure"),
    "agent": ("agent_frontmatter", "links", "agent_body", "agent_names", "command_tasks",
              "run_state", "data_files", "markdown_structure", "claude_settings",
              "hook_commands"),
    "command": ("command_frontmatter", "links", "command_tasks", "command_bash",
                "command_paths", "command_shellcheck", "data_files", "markdown_structure"),
    "skill": ("command_frontmatter", "links", "skill_text", "command_paths", "command_tasks",
              "data_files", "markdown_structure", "claude_settings",
              "hook_commands"),
    "settings": ("claude_settings", "hook_commands", "data_files"),
    "checkpoint": ("checkpoint_files", "data_files"),
    "registry": ("task_registry", "data_files"),
    "opencode-agent": ("opencode_frontmatter", "opencode_refs", "data_files"),
    "opencode-command": ("opencode_frontmatter", "opencode_refs", "command_shellcheck",
                         "data_files"),
    "opencode-config": ("opencode_config", "data_files"),
    "mcp-config": ("mcp_config", "data_files"),
    "memory": ("memory_files", "data_files"),
    "context": ("links", "memory_files", "data_files"),
    "plugin-manifest": ("plugin_manifest", "data_files"),
    "unloaded": ("unloaded_files", "data_files"),
}
"""The rule modules that register rules for a kind (`Kind` values; every other kind has
`data_files`' only). A file's first check imports just these — the editor's first opened
document is checked before the rest of the rules load. `tests/rules/test_registry.py`
checks this map against the full registry."""

_loaded = False
_kinds_loaded: set[str] = set()
_lock = threading.Lock()


def load_for(kind: str) -> None:
    """Import the rule modules of one kind (`Kind` value) once; see `MODULES_BY_KIND`."""
    if _loaded or kind in _kinds_loaded:
        return
    with _lock:
        if kind in _kinds_loaded:
            return
        for name in MODULES_BY_KIND.get(kind, ("data_files",)):
            importlib.import_module(f"{__name__}.{name}")
        _kinds_loaded.add(kind)


def load_all() -> None:
    """Import every rule module once (registration happens at import).

    Guarded by a lock and marked done only afterwards: the language server checks files
    on several threads, and a thread must never see a half-filled registry.
    """
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:
            return
        for name in RULE_MODULES:
            try:
                importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
        _loaded = True

"""Rule families, one module each. Importing a module registers its rules."""

from __future__ import annotations

import importlib
import threading

RULE_MODULES = (
    "meta",
    "plan_deps",
    "plan_phases",
    "plan_metadata",
    "plan_links",
    "plan_structure",
    "agent_frontmatter",
    "agent_body",
    "command_frontmatter",
    "command_tasks",
    "command_bash",
    "command_shellcheck",
    "data_files",
    "run_state",
    "checkpoint_files",
    "task_registry",
)

_loaded = False
_lock = threading.Lock()


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

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
              "run_state", "data_files", "markdown_structure"),
    "command": ("command_frontmatter", "links", "command_tasks", "command_bash",
                "command_paths", "data_files", "markdown_structure"),
    "skill": ("command_frontmatter", "links", "skill_text", "command_paths", "command_tasks",
              "data_files", "markdown_structure"),
    "settings": ("claude_settings", "hook_commands", "data_files"),
    "checkpoint": ("checkpoint_files", "data_files"),
    "registry": ("task_registry", "data_files"),
    "opencode-agent": ("opencode_frontmatter", "opencode_refs", "data_files"),
    "opencode-command": ("opencode_frontmatter", "opencode_refs", "data_files"),
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

HOOK_MODULES = ("claude_settings", "hook_commands")
"""The modules of the hook rules, which agents and skills share with settings files: loaded
for an agent or skill only when its front matter has `hooks:` (`load_hooks`), since without
it every hook rule returns at once, and most agents and skills have none."""

SHELLCHECK_MODULES = ("command_shellcheck",)
"""The module of BTN330, ShellCheck on commands' bash blocks: loaded for a command only
when its workspace runs ShellCheck (`shellcheck` not `"off"`, `load_shellcheck`), since
with it off the rule returns at once, and its module with ShellCheck's configuration and
binary lookup cost every such check a few milliseconds."""

RULE_CODES: frozenset[str] = frozenset((
    'BTN000', 'BTN001', 'BTN002', 'BTN003', 'BTN101', 'BTN102', 'BTN103', 'BTN104', 'BTN105',
    'BTN106', 'BTN110', 'BTN111', 'BTN112', 'BTN113', 'BTN114', 'BTN115', 'BTN116', 'BTN117',
    'BTN120', 'BTN121', 'BTN122', 'BTN123', 'BTN124', 'BTN130', 'BTN131', 'BTN132', 'BTN133',
    'BTN140', 'BTN141', 'BTN142', 'BTN143', 'BTN201', 'BTN202', 'BTN203', 'BTN204', 'BTN205',
    'BTN206', 'BTN207', 'BTN208', 'BTN209', 'BTN210', 'BTN211', 'BTN212', 'BTN220', 'BTN221',
    'BTN222', 'BTN230', 'BTN231', 'BTN240', 'BTN241', 'BTN242', 'BTN301', 'BTN302', 'BTN303',
    'BTN304', 'BTN305', 'BTN306', 'BTN307', 'BTN308', 'BTN310', 'BTN311', 'BTN312', 'BTN313',
    'BTN314', 'BTN315', 'BTN316', 'BTN317', 'BTN318', 'BTN319', 'BTN320', 'BTN321', 'BTN322',
    'BTN323', 'BTN324', 'BTN325', 'BTN326', 'BTN327', 'BTN328', 'BTN329', 'BTN330', 'BTN331',
    'BTN400', 'BTN401', 'BTN402', 'BTN403', 'BTN404', 'BTN405', 'BTN406', 'BTN407', 'BTN410',
    'BTN411', 'BTN412', 'BTN413', 'BTN414', 'BTN415', 'BTN416', 'BTN417', 'BTN501', 'BTN502',
    'BTN503', 'BTN504', 'BTN505', 'BTN506', 'BTN600', 'BTN601', 'BTN602', 'BTN603', 'BTN604',
    'BTN605', 'BTN701', 'BTN702', 'BTN703', 'BTN704', 'BTN705', 'BTN706', 'BTN710', 'BTN711',
    'BTN712', 'BTN713', 'BTN720', 'BTN721', 'BTN722', 'BTN723', 'BTN724', 'BTN801', 'BTN802',
    'BTN803', 'BTN804', 'BTN805', 'BTN806', 'BTN807', 'BTN808', 'BTN809', 'BTN810', 'BTN811',
    'BTN812', 'BTN813', 'BTN814', 'BTN820', 'BTN821', 'BTN822', 'BTN823', 'BTN824', 'BTN825',
    'BTN826', 'BTN830', 'BTN831', 'BTN832', 'BTN833', 'BTN834', 'BTN835', 'BTN836', 'BTN840',
    'BTN841',
))
"""Every registered rule's code, known without importing a rule module: `select` / `ignore`
are checked against it before a check (the checkpoint rules' modules import pydantic).
`tests/rules/test_registry.py` checks it against the full registry."""

_loaded = False
_kinds_loaded: set[str] = set()
_lock = threading.Lock()


def load_for(kind: str) -> None:
    """Import the rule modules of one kind (`Kind` value, "hooks": `HOOK_MODULES`, or
    "shellcheck": `SHELLCHECK_MODULES`) once; see `MODULES_BY_KIND`."""
    if _loaded or kind in _kinds_loaded:
        return
    with _lock:
        if kind in _kinds_loaded:
            return
        names = (HOOK_MODULES if kind == "hooks" else SHELLCHECK_MODULES
                 if kind == "shellcheck" else MODULES_BY_KIND.get(kind, ("data_files",)))
        for name in names:
            importlib.import_module(f"{__name__}.{name}")
        _kinds_loaded.add(kind)


def load_hooks() -> None:
    """Import the hook rules' modules once (`HOOK_MODULES`)."""
    load_for("hooks")


def load_shellcheck() -> None:
    """Import BTN330's module once (`SHELLCHECK_MODULES`)."""
    load_for("shellcheck")


def load_all() -> None:
    """Import every rule module once (registration happens at import).

    Guarded by a lock and marked done only afterwards: the language server checks files
    on several threads, and a thread must never see a half-filled registry.
    """
    global _loaded
    if _loaded:
        return
    with _lock:
        if _loaded:  # mypy narrows the global, but another thread may have set it meanwhile
            return  # type: ignore[unreachable]
        for name in RULE_MODULES:
            try:
                importlib.import_module(f"{__name__}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{__name__}.{name}":
                    raise
        _loaded = True

"""Finding workspaces and deciding what each file is from its path.

A workspace root holds `.claude/`, or an OpenCode `.opencode/` with agents, commands or
specs (`.opencode/` is read beside `.claude/`, never as a workspace of its own: its
`specs/` is the root's second place for plans and a registry), or a `specs/` directory
with plans or a `state.json` task registry (trees that keep their plans in the repository
but their Claude Code setup in the user's home), or is a Claude Code plugin
(`.claude-plugin/plugin.json`; its `agents/`, `commands/` and `skills/` sit at the
plugin's root, plus any paths its manifest adds).
Plans also live outside `specs/`: `docs/**/plans/`, a root `PLAN.md`, `.claude/plans/`,
`.claude/TODO.md`. Those places hold notes and templates too, so a file found there is a
plan only when its text looks like one (phase headings or task checkboxes).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from ..model.base import Kind
from ..model.claude_files import (
    CONTEXT_DIR,
    MCP_CONFIG_NAME,
    MEMORY_NAMES,
    PLUGIN_DIR,
    PLUGIN_MANIFESTS,
    RULES_DIR,
)
from ..model.claude_settings import SETTINGS_FILES, STRAY_HOOKS_FILE
from ..model.opencode import AGENT_DIRS, COMMAND_DIRS, CONFIG_NAMES, MODE_DIRS, OPENCODE_DIR
from ..paths import KIND, WORKTREES, in_worktrees, list_dir, look, look_listing
from ..runs.confine import OutsideLink, read_head

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv", "venv", ".hypothesis"}

_NOT_COMMAND_DIRS = {"shared", "templates"}
"""`.claude/commands/` subdirectories that hold fragments included by commands, not commands."""

_SNIFF_BYTES = 65536
_PLAN_SHAPE = re.compile(
    r"^(?:#{1,6}[ \t]+(?:\S.*?[ \t])?(?:Phase|Stage)[ \t]+\d|[ \t]*[-*+][ \t]+\[[ xX]\][ \t])",
    re.MULTILINE | re.IGNORECASE)
"""A phase heading (`## Phase 2: ...`, `### Stage 1`) or a task checkbox (`- [ ] ...`)."""
_ERRORS_LOG_SHAPE = re.compile(r'"(?:error_type|error_message)"[ \t]*:')
"""A key every record of the errors log carries (reference formats, errors.jsonl)."""


def _listing(path: str) -> tuple[list[os.DirEntry[str]], list[str]] | None:
    """`paths.list_dir`, noted as looked at (its names are the tree's shape)."""
    listed = list_dir(path)
    if listed is not None:
        look_listing(path, (e.name for e in listed[0]), listed[1])
    return listed


def specs_root(directory: Path) -> bool:
    """True when `directory/specs/` holds a task registry or plans (`specs/plans/`,
    `specs/<topic>/plans/`): a workspace root even without `.claude/`."""
    specs = directory / "specs"
    state, plans = specs / "state.json", specs / "plans"
    for path in (specs, state, plans):
        look(path, KIND)
    if state.is_file() or plans.is_dir():
        return True
    listed = _listing(str(specs))
    if listed is None:
        return False
    for entry in listed[0]:
        topic_plans = os.path.join(entry.path, "plans")
        look(topic_plans, KIND)
        if os.path.isdir(topic_plans):
            return True
    return False


def opencode_root(directory: Path) -> bool:
    """True when `directory/.opencode/` holds OpenCode agents, modes, commands or a `specs/` with
    plans or a registry. A bare `.opencode/` is not enough: OpenCode's installer puts its
    binary in `~/.opencode/bin`."""
    base = directory / OPENCODE_DIR
    for sub in (*AGENT_DIRS, *MODE_DIRS, *COMMAND_DIRS):
        look(base / sub, KIND)
        if (base / sub).is_dir():
            return True
    look(base / "specs", KIND)
    return (base / "specs").is_dir() and specs_root(base)


PLUGIN_MANIFEST = ".claude-plugin/plugin.json"
MARKETPLACE_MANIFEST = ".claude-plugin/marketplace.json"
PLUGIN_HOOKS = "hooks/hooks.json"
"""A plugin's hooks file, at its root: read as a settings file, so its hooks are checked."""
PLUGIN_COMPONENTS = ("agents", "commands", "skills")
"""Component directories Claude Code discovers at a plugin's root (plugins reference)."""
_MANIFEST_MAX = 1 << 20

PluginLayout = dict[str, tuple[str, ...]]
"""Component (`agents`, `commands`, `skills`) → the paths, relative to the plugin root,
that hold it."""

_plugin_lock = threading.Lock()
_plugin_cache: dict[str, tuple[float | None, PluginLayout | None]] = {}


def plugin_layout(root: Path | str) -> PluginLayout | None:
    """For a plugin root, each component (`agents`, `commands`, `skills`) mapped to the
    paths, relative to the root, that hold it: the default directory and any the manifest
    adds (`"agents": "./extra/"` or a list; custom paths supplement the defaults). None when
    `root` is not a plugin. Cached per manifest mtime, so an edited manifest is re-read."""
    manifest = os.path.join(os.fspath(root), PLUGIN_MANIFEST)
    look(manifest)
    try:
        st = os.stat(manifest)
        mtime: float | None = st.st_mtime
    except OSError:
        mtime = None
    key = os.fspath(root)
    with _plugin_lock:
        hit = _plugin_cache.get(key)
        if hit is not None and hit[0] == mtime:
            return hit[1]
    layout = None if mtime is None else _read_layout(Path(key), manifest)
    with _plugin_lock:
        _plugin_cache[key] = (mtime, layout)
    return layout


def _read_layout(root: Path, manifest: str) -> PluginLayout:
    layout: dict[str, tuple[str, ...]] = {c: (c,) for c in PLUGIN_COMPONENTS}
    try:  # not through a link out of the plugin, never waiting on a FIFO
        data = json.loads(read_head(root, manifest, _MANIFEST_MAX)[0]
                          .decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return layout  # a broken manifest still makes a plugin; its defaults are found
    if not isinstance(data, dict):
        return layout
    for comp in PLUGIN_COMPONENTS:
        extra = data.get(comp)
        items = [extra] if isinstance(extra, str) else extra if isinstance(extra, list) else []
        paths = list(layout[comp])
        for item in items:
            if not isinstance(item, str):
                continue
            rel = os.path.normpath(item.strip()).replace(os.sep, "/")
            if rel in (".", "") or rel.startswith("../") or os.path.isabs(rel):
                continue  # never outside the plugin
            if rel not in paths:
                paths.append(rel)
        layout[comp] = tuple(paths)
    return layout


def _marketplace_skills(root: Path) -> list[str]:
    """Skill paths (relative to `root`) of the plugins a marketplace at `root` holds locally
    without a manifest of their own: each entry's `source` directory's `skills/` and the
    paths its `skills` list adds (`"source": "./", "strict": false, "skills":
    ["./skills/xlsx"]`). A plugin with its own `plugin.json` is a workspace of its own."""
    manifest = os.path.join(os.fspath(root), MARKETPLACE_MANIFEST)
    look(manifest)
    try:  # not through a link out of the workspace, never waiting on a FIFO
        data = json.loads(read_head(root, manifest, _MANIFEST_MAX)[0]
                          .decode("utf-8", errors="replace"))
    except (OSError, ValueError):
        return []
    plugins = data.get("plugins") if isinstance(data, dict) else None
    found: list[str] = []
    for entry in plugins if isinstance(plugins, list) else []:
        source = entry.get("source") if isinstance(entry, dict) else None
        if not isinstance(source, str) or not source.startswith("./"):
            continue
        base = os.path.normpath(source).replace(os.sep, "/")
        if base.startswith("../") or base == "..":
            continue  # never outside the workspace
        if base != "." and os.path.isfile(os.path.join(root, base, PLUGIN_MANIFEST)):
            continue
        extra = entry.get("skills")
        items = [extra] if isinstance(extra, str) else extra if isinstance(extra, list) else []
        for item in ["./skills", *items]:
            if not isinstance(item, str):
                continue
            rel = os.path.normpath(os.path.join(base, item.strip())).replace(os.sep, "/")
            if rel in (".", "") or rel.startswith("../") or os.path.isabs(rel):
                continue
            if rel not in found:
                found.append(rel)
    return found


def component_layout(root: Path | str) -> PluginLayout | None:
    """Where a workspace's plugin components are, for `classify`: the plugin's layout, plus
    the skills of the manifest-less plugins a marketplace at the root holds. None when the
    root is neither a plugin nor a marketplace."""
    layout = plugin_layout(root)
    look(os.path.join(os.fspath(root), MARKETPLACE_MANIFEST), KIND)
    if not os.path.isfile(os.path.join(os.fspath(root), MARKETPLACE_MANIFEST)):
        return layout
    skills = _marketplace_skills(Path(root))
    if not skills:
        return layout
    merged: dict[str, tuple[str, ...]] = dict(layout) if layout is not None \
        else {c: () for c in PLUGIN_COMPONENTS}
    merged["skills"] = tuple(dict.fromkeys((*merged["skills"], *skills)))
    return merged


def _plugin_kind(rel: str, layout: PluginLayout) -> Kind | None:
    """The kind of `rel` inside a plugin: judged as the same file under `.claude/<component>/`
    would be (templates, READMEs and fragment directories excluded alike). A skills path may
    name one skill's folder (`./skills/xlsx` holding `SKILL.md`) or a folder of skills, as
    Claude Code reads it."""
    for comp in PLUGIN_COMPONENTS:
        for base in layout[comp]:
            if comp == "skills" and rel == f"{base}/SKILL.md":
                inner = f"{base.rsplit('/', 1)[-1]}/SKILL.md"
            elif rel == base:  # the manifest names the file itself
                inner = rel.rsplit("/", 1)[-1]
            elif rel.startswith(base + "/"):
                inner = rel[len(base) + 1:]
            else:
                continue
            return classify(f".claude/{comp}/{inner}")
    return None


EXTENSIONS_DIR = "extensions"
"""`.claude/extensions/<name>/` (and `.opencode/`'s): an extension's agents, commands, skills
and context, which the tree's loader copies into `.claude/` when the extension is loaded."""
_EXTENSION_KINDS = frozenset({Kind.AGENT, Kind.COMMAND, Kind.SKILL, Kind.CONTEXT,
                              Kind.OPENCODE_AGENT, Kind.OPENCODE_COMMAND})


def extension_installed(rel: str) -> str | None:
    """Where the extension loader puts `rel` (`.claude/extensions/<name>/<component>/<rest>`
    → `.claude/<component>/<rest>`; OpenCode's agents → `.opencode/agent/subagents/`), or None
    for a path outside an extension's component folders.

    The author's loader (its `extensions/README.md`: "Agent, skill, rule files are copied to
    .claude/", "Context directories are copied to .claude/context/project/") copies each file
    verbatim; Claude Code and OpenCode read the copy, never the extension's folder, so links
    in an extension's file may be written for either place."""
    parts = rel.split("/")
    if len(parts) < 5 or parts[0] not in (".claude", OPENCODE_DIR) \
            or parts[1] != EXTENSIONS_DIR:
        return None
    top, comp, rest = parts[0], parts[3], parts[4:]
    if top == OPENCODE_DIR and comp == "agents":
        return "/".join((top, "agent", "subagents", *rest))
    return "/".join((top, comp, *rest))


def _extension_kind(rel: str) -> Kind | None:
    """An extension's file is checked as the agent, command, skill or context document it
    becomes once loaded (`extension_installed`): the rules Claude Code (or OpenCode) applies
    to the copy apply to the source, where the author edits it (the loader overwrites the
    copy on every load). Rules, scripts, hooks and merge sources are not read."""
    installed = extension_installed(rel)
    if installed is None:
        return None
    kind = classify(installed)
    return kind if kind in _EXTENSION_KINDS else None


def _linked_from_install(root: str, rel: str) -> bool:
    """An extension's file that its installed place links to (`.claude/agents/x.md ->
    ../extensions/e/agents/x.md`): it is checked there, once. (A linked skill folder is not
    walked into, so its skill is checked here.)"""
    installed = extension_installed(rel)
    if installed is None:
        return False
    there = os.path.join(root, installed)
    return os.path.islink(there) and \
        os.path.realpath(there) == os.path.realpath(os.path.join(root, rel))


def find_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds `.claude/` or a `specs/` with
    plans or a registry (the nearest wins: a path is classified relative to its root)."""
    look(start, KIND)
    cur = start if start.is_dir() else start.parent
    cur = Path(os.path.abspath(cur))
    parts = cur.parts
    if in_worktrees(parts):  # a worktree's copy of the tree is checked where it came from
        return None
    for marker in (".claude", OPENCODE_DIR):
        if marker in parts:  # inside .claude/ or .opencode/: its parent is the root
            idx = len(parts) - 1 - parts[::-1].index(marker)
            if marker == ".claude" or opencode_root(Path(*parts[:idx])):
                return Path(*parts[:idx]) if idx > 0 else None
    for cand in (cur, *cur.parents):
        # The names probed, not `cand` itself: a parent such as /tmp changes all the time.
        look(cand / ".claude", KIND)
        look(cand / PLUGIN_MANIFEST, KIND)
        look(cand / MARKETPLACE_MANIFEST, KIND)
        if (cand / ".claude").is_dir() or specs_root(cand) or opencode_root(cand) \
                or (cand / PLUGIN_MANIFEST).is_file() or (cand / MARKETPLACE_MANIFEST).is_file():
            return cand
    return None


_ARCHIVE_DIRS = frozenset({"archive", "archives", "archived", "_archive", "_archived",
                           ".archive", "analysis-archive"})
"""Directories of retired files: archived agents disabled on purpose, frozen eval runs, done
plans filed away. Nothing reads them any more, so nothing in them is checked."""


def _is_backup(name: str, parts: tuple[str, ...]) -> bool:
    return (".backup" in name or name.endswith(".bak") or "backups" in parts
            or any(p.endswith(".backup") or p.lower() in _ARCHIVE_DIRS for p in parts[:-1]))


def _is_template(name: str) -> bool:
    """A file whose name says it is a template to copy (`TEMPLATE.md`, `x-template.md`,
    `x_template.md`, `x.template.md`): its placeholders are meant, so it is not checked."""
    stem = name.rsplit(".", 1)[0].lower()
    return stem == "template" or stem.endswith(("-template", "_template", ".template"))


def plan_candidate(rel: str) -> bool:
    """True for the places outside `specs/` where plans live beside other notes:
    `docs/**/plans/**.md`, a root `PLAN.md`, `.claude/plans/**.md`, `.claude/TODO.md`."""
    parts = tuple(rel.split("/"))
    name = parts[-1]
    if not name.endswith(".md") or name.lower() == "readme.md" or _is_template(name):
        return False
    if len(parts) == 1:
        return name.lower() == "plan.md"
    if parts[0] == "docs":
        return "plans" in parts[1:-1]
    if parts[0] == ".claude":
        return parts[1:] == ("TODO.md",) or (len(parts) > 2 and parts[1] == "plans")
    return False


def looks_like_plan(path: Path, root: Path | None = None) -> bool:
    """True when the start of the file has a phase heading or a task checkbox, read from
    `root` (default: its directory) as the index reads it. A link out of the workspace is
    taken for a plan unread, so the check reports the link (BTN400) instead of skipping it;
    a FIFO or device is no plan (opening it would wait for a writer)."""
    look(path)
    try:
        head = read_head(root or path.parent, path, _SNIFF_BYTES)[0] \
            .decode("utf-8", errors="replace")
    except OutsideLink:
        return True
    except OSError:
        return False
    return _PLAN_SHAPE.search(head) is not None


SKILL_FILE = "SKILL.md"
MEMORY_FILE = MEMORY_NAMES[0]
"""The only spellings Claude Code 2.1.331 opens: it joins these exact names to a skill folder
and to the root or `.claude/` (on a case-sensitive file system `skill.md` is another file)."""


def _unusable_link(root: Path, rel: str) -> bool:
    """`rel` is a symbolic link that dangles, or names an absolute target outside `root`
    (it works only on the machine that made it)."""
    path = os.path.join(root, rel)
    look(path, KIND)
    try:
        target = os.readlink(path)
    except OSError:
        return False  # not a link
    if not os.path.exists(path):
        return True
    if not os.path.isabs(target):
        return False  # relative: it moves with the checkout (BTN400 reports one leaving)
    real, base = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([real, base]) != base


def unloaded(rel: str, root: Path | None = None) -> bool:
    """True for a file under `.claude/` (or a root `claude.md`) that Claude Code never loads
    though it is in a place or spelling meant for it: a loose `skills/x.md`, `skill.md` or
    `claude.md` in lower case, a link in `rules/` or to a skill folder that dangles or points
    to an absolute path outside the workspace (the last two need `root`)."""
    parts = tuple(rel.split("/"))
    name = parts[-1]
    if len(parts) == 1:
        return name.lower() == MEMORY_FILE.lower() and name != MEMORY_FILE
    if parts[0] != ".claude":
        return False
    sub = parts[1:]
    if len(sub) == 1:
        return name.lower() == MEMORY_FILE.lower() and name != MEMORY_FILE
    if sub[0] == "skills":
        if name.endswith(".md") and len(sub) == 2:  # `skills/SKILL.md`: no skill folder meant
            return name.lower() not in ("readme.md", SKILL_FILE.lower())
        if len(sub) >= 3 and name.lower() == SKILL_FILE.lower() and name != SKILL_FILE:
            return True
        return len(sub) == 2 and root is not None and _unusable_link(root, rel)
    if sub[0] == "rules" and name.endswith(".md"):
        return root is not None and _unusable_link(root, rel)
    return False

def looks_like_errors_log(path: Path, root: Path | None = None) -> bool:
    """True when the start of a JSON Lines file has the errors log's `error_type` or
    `error_message` key: a file of test cases or eval data may have "error" in its name."""
    look(path)
    try:
        head = read_head(root or path.parent, path, _SNIFF_BYTES)[0] \
            .decode("utf-8", errors="replace")
    except OutsideLink:
        return True  # reported as a link out of the workspace, not skipped
    except OSError:
        return False
    return _ERRORS_LOG_SHAPE.search(head) is not None


def classify(rel: str, root: Path | None = None,
             plugin: PluginLayout | None = None) -> Kind | None:
    """Kind of the file at `rel` (POSIX, relative to the workspace root); None = not ours.

    Decided from the path alone, except for `plan_candidate` paths and "error" JSON Lines
    files outside `logs/`: with `root` their text is read to tell a plan from a note, an
    errors log from test data; without it they are not ours. `plugin` is the root's
    `plugin_layout` when the root is a plugin (callers look it up once, not per file)."""
    parts = tuple(rel.split("/"))
    name = parts[-1]
    if ".claude" in parts[1:] or parts[:2] == WORKTREES:
        return None  # stray nested copies such as .claude/tests/.claude/..., worktrees
    if _is_backup(name, parts):
        return None
    if len(parts) > 2 and parts[1] == EXTENSIONS_DIR:
        return _extension_kind(rel)
    if parts[0] == OPENCODE_DIR:
        return _opencode_kind(parts[1:], name)
    if len(parts) == 1 and name in CONFIG_NAMES:
        return Kind.OPENCODE_CONFIG
    if name == MCP_CONFIG_NAME and (len(parts) == 1 or parts[:-1] == (".claude",)):
        return Kind.MCP_CONFIG  # `.claude/.mcp.json` is read by no one: BTN824 says so
    if len(parts) == 2 and parts[0] == PLUGIN_DIR and name in PLUGIN_MANIFESTS:
        return Kind.PLUGIN_MANIFEST
    in_claude = parts[0] == ".claude"
    sub = parts[1:] if in_claude else parts
    if not sub:
        return None
    if plugin is not None and rel == PLUGIN_HOOKS:
        return Kind.SETTINGS
    if (in_claude or len(parts) == 1) and unloaded(rel, root):
        return Kind.UNLOADED
    if plugin is not None and not in_claude and name.endswith(".md"):
        kind = _plugin_kind(rel, plugin)
        if kind is not None:
            return kind
    if sub == ("specs", "state.json"):
        return Kind.REGISTRY
    if _memory_file(in_claude, sub, name):
        return Kind.MEMORY
    if plan_candidate(rel):
        return Kind.PLAN if root is not None and looks_like_plan(root / rel, root) else None
    if name.endswith(".md"):
        if in_claude and sub[0] == CONTEXT_DIR and len(sub) >= 2:
            return Kind.CONTEXT
        if name.lower() == "readme.md":
            return None
        if in_claude and sub[0] == "agents":
            # Templates to copy from are not agents: their placeholders are on purpose.
            if _is_template(name) or "templates" in sub[1:-1]:
                return None
            return Kind.AGENT
        if in_claude and sub[0] == "commands":
            # namespaced commands (`commands/<ns>/x.md` is `/ns:x`) at any depth
            return Kind.COMMAND if len(sub) == 2 or (
                len(sub) > 2 and sub[1] not in _NOT_COMMAND_DIRS) else None
        if in_claude and sub[0] == "skills":
            # `skills/<name>/SKILL.md`, or grouped: `skills/<group>/<name>/SKILL.md`
            return Kind.SKILL if len(sub) >= 3 and name == "SKILL.md" else None
        if sub[0] == "specs":
            return _specs_kind(sub, name)
        if in_claude and sub[0] == "lib" and "fixtures" in sub:
            return Kind.PLAN
        return None
    if not in_claude:
        return None
    if (len(sub) == 1 and name in SETTINGS_FILES) or sub == STRAY_HOOKS_FILE:
        return Kind.SETTINGS
    if name.endswith(".jsonl") and "error" in name.lower():
        # not every JSON Lines log (`events.jsonl` has its own records), nor every file
        # named for errors: the log lives in a `logs/` directory (`.claude/data/logs/`,
        # `.claude/tests/logs/`); elsewhere its records must say so
        if "logs" in sub[:-1]:
            return Kind.ERRORS_LOG
        return Kind.ERRORS_LOG if root is not None and looks_like_errors_log(
            root / rel, root) else None
    if name.endswith(".json") and ("checkpoints" in sub) and sub[0] in ("data", "checkpoints") \
            and name != "run.json" and "logs" not in sub:  # the engine's owner file, agent logs
        return Kind.CHECKPOINT
    if name.endswith(".state") or (name.endswith(".sh") and (
            (sub[0] == "tmp" and ("workflow_" in name or "state" in name)) or ".state" in sub)):
        return Kind.STATE
    return None


def _memory_file(in_claude: bool, sub: tuple[str, ...], name: str) -> bool:
    """`CLAUDE.md`/`CLAUDE.local.md` at the root, in `.claude/` or in a directory below the
    root that Baton walks; `.claude/rules/**/*.md` (Claude Code loads them all)."""
    if in_claude:
        return (len(sub) == 1 and name in MEMORY_NAMES) or (
            len(sub) >= 2 and sub[0] == RULES_DIR and name.endswith(".md")
            and name.lower() != "readme.md")
    return name in MEMORY_NAMES


def _specs_kind(sub: tuple[str, ...], name: str) -> Kind | None:
    """A markdown file under `specs/` (the root's or `.opencode/`'s)."""
    if _is_template(name):
        return None
    if "plans" in sub:
        return Kind.PLAN
    if "reports" in sub:
        return Kind.REPORT
    if "summaries" in sub:
        return Kind.SUMMARY
    if "debug" in sub and "plan" in name:
        return Kind.PLAN
    return None


def _opencode_kind(sub: tuple[str, ...], name: str) -> Kind | None:
    """A file under `.opencode/`: agents and commands as OpenCode finds them (any depth,
    `agent/` or `agents/`, `command/` or `commands/`; modes, `mode/` or `modes/`, one level
    deep, are agents too), and its `specs/` like the root's.
    READMEs, templates and fragment directories are skipped as on the Claude Code side."""
    if not sub:
        return None
    if sub == ("specs", "state.json"):
        return Kind.REGISTRY
    if len(sub) == 1 and name in CONFIG_NAMES:
        return Kind.OPENCODE_CONFIG
    if sub[0] == CONTEXT_DIR and name.endswith(".md") and len(sub) >= 2:
        return Kind.CONTEXT
    if not name.endswith(".md") or name.lower() == "readme.md" or len(sub) < 2:
        return None
    if sub[0] in AGENT_DIRS:
        if _is_template(name) or "templates" in sub[1:-1]:
            return None
        return Kind.OPENCODE_AGENT
    if sub[0] in MODE_DIRS:  # `{mode,modes}/*.md`: agents too, one level only
        return Kind.OPENCODE_AGENT if len(sub) == 2 and not _is_template(name) else None
    if sub[0] in COMMAND_DIRS:
        if _is_template(name) or (len(sub) > 2 and sub[1] in _NOT_COMMAND_DIRS):
            return None
        return Kind.OPENCODE_COMMAND
    if sub[0] == "specs":
        return _specs_kind(sub, name)
    return None


_ENGINE_HISTORY = re.compile(
    r"(^|[/\\])\.claude[/\\]data[/\\]checkpoints[/\\][A-Za-z0-9][A-Za-z0-9_.-]*$")


def engine_history_dir(directory: str) -> bool:
    """A workflow's directory of the engine's own history (`.claude/data/checkpoints/<id>`,
    relative or absolute)."""
    return _ENGINE_HISTORY.search(directory) is not None


def excluded(rel: str, patterns: Iterable[str]) -> bool:
    return any(fnmatch.fnmatch(rel, p) or fnmatch.fnmatch(rel, p.rstrip("/") + "/*")
               for p in patterns)


def walk(root: Path, exclude: Iterable[str] = ()) -> Iterator[tuple[Path, Kind]]:
    """Every classified file of the workspace at `root` (its `.claude/`, `specs/`, `docs/`
    and a root `PLAN.md`)."""
    for path, kind in walk_files(root, exclude):
        yield Path(path), kind


def walk_files(root: Path | str, exclude: Iterable[str] = ()) -> Iterator[tuple[str, Kind]]:
    """`walk` as absolute, normalised path strings (the index's keys): listing a tree of
    thousands of files is on the path of every warm check, so no `Path` per file."""
    patterns = list(exclude)
    root_str = os.path.normpath(os.path.abspath(root))
    root_path = Path(root_str)
    listed = _listing(root_str)
    top_files = sorted(n for n in listed[1] if n.lower() in ("plan.md", "claude.md")
                       or n in CONFIG_NAMES or n == MCP_CONFIG_NAME
                       or n in MEMORY_NAMES) if listed else []
    for fname in top_files:  # listed, not probed: `PLAN.md` and `plan.md` once each
        kind = classify(fname, root_path)
        if kind is not None and not (patterns and excluded(fname, patterns)):
            yield os.path.join(root_str, fname), kind
    tops = [".claude", OPENCODE_DIR, "specs", "docs", PLUGIN_DIR]
    layout = component_layout(root_str)
    if layout is not None:
        tops.append(PLUGIN_HOOKS)
        for comp in PLUGIN_COMPONENTS:
            tops += [p for p in layout[comp] if p.split("/", 1)[0] not in tops]
    seen: set[str] = set()
    cut = len(root_str) + 1 if root_str != os.sep else 1
    for top in tops:
        base = os.path.normpath(os.path.join(root_str, top))
        look(base, KIND)
        if os.path.isfile(base) and top not in seen:  # a manifest naming one file
            seen.add(top)
            kind = classify(top, root_path, layout)
            if kind is not None and not (patterns and excluded(top, patterns)):
                yield base, kind
            continue
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base):
            look_listing(dirpath, dirnames, filenames)
            rel_dir = dirpath[cut:].replace(os.sep, "/") if dirpath.startswith(root_str) \
                else os.path.relpath(dirpath, root_str).replace(os.sep, "/")
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in _SKIP_DIRS and d != ".claude"
                                 and d.lower() not in _ARCHIVE_DIRS
                                 and (rel_dir, d) != WORKTREES)
            if rel_dir == ".claude/skills":  # os.walk lists, not follows, a linked skill folder
                for d in dirnames:
                    if classify(f"{rel_dir}/{d}", root_path) is Kind.UNLOADED \
                            and not (patterns and excluded(f"{rel_dir}/{d}", patterns)):
                        yield os.path.join(dirpath, d), Kind.UNLOADED
            if engine_history_dir(rel_dir):
                # the engine's own checksummed history (up to 500 files per workflow):
                # checked when opened or named, not on every workspace walk
                dirnames[:] = []
                continue
            for fname in sorted(filenames):
                rel = f"{rel_dir}/{fname}"
                if rel in seen:  # a manifest path nested in another component path
                    continue
                seen.add(rel)
                kind = classify(rel, root_path, layout)
                if kind is None or (patterns and excluded(rel, patterns)):
                    continue
                if _linked_from_install(root_str, rel):
                    continue
                yield os.path.join(dirpath, fname), kind


def find_workspaces(path: Path) -> list[Path]:
    """Workspace roots at or below `path` (a directory may hold several, e.g. a corpus):
    directories with `.claude/`, a `specs/` that holds plans or a registry, or a plugin
    manifest (a marketplace's `plugins/<name>/` each) or a marketplace manifest (its own
    root, whose manifest is checked)."""
    path = Path(os.path.abspath(path))
    roots: list[Path] = []
    above = find_root(path)
    if above is not None:
        roots.append(above)
    look(path, KIND)
    if path.is_dir():
        for dirpath, dirnames, filenames in os.walk(path):
            look_listing(dirpath, dirnames, filenames)
            if ".claude-plugin" in dirnames:
                look(os.path.join(dirpath, PLUGIN_MANIFEST), KIND)
                look(os.path.join(dirpath, MARKETPLACE_MANIFEST), KIND)
            here = Path(dirpath)
            if here not in roots and ".claude" not in here.parts and (
                    ".claude" in dirnames or ("specs" in dirnames and specs_root(here))
                    or (OPENCODE_DIR in dirnames and opencode_root(here))
                    or (".claude-plugin" in dirnames and ((here / PLUGIN_MANIFEST).is_file()
                                                      or (here / MARKETPLACE_MANIFEST).is_file()))):
                roots.append(here)
            # `.opencode/` is read with its parent's workspace (its specs too), never as one
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS
                                 and d not in (".claude", OPENCODE_DIR)
                                 and d.lower() not in _ARCHIVE_DIRS)
    return roots

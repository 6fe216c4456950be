"""BTN801-BTN808 and BTN812-BTN814:
Claude Code's project settings and the hooks of settings, agents and skills.

Hooks live in `.claude/settings.json` / `.claude/settings.local.json` under `hooks`, and in
an agent's or skill's front matter under `hooks:`, in one shape: event name → list of
matcher groups (`matcher`, `hooks: [{type, command…}]`). Claude Code drops what it cannot
read with a note nobody sees, so a misspelt event or a hook of an unknown type never runs.
The vocabularies are in `model/claude_settings.py`; permission rule semantics are in
`model/claude_permissions.py`, both from the pinned Claude Code 2.1.331 bundle.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..lazy_pattern import LazyPattern
from ..model.base import Convention, Finding, Kind, Range, Severity
from ..model.claude_models import TOOL_INDEX
from ..model.claude_permissions import file_rule_instead, rule_problem
from ..model.claude_settings import (
    HOOK_EVENTS,
    HOOK_TYPES,
    MATCHERLESS_EVENTS,
    STRAY_HOOKS_FILE,
    TOO_DEEP,
    TOOL_EVENTS,
    WILDCARD_MATCHERS,
    ClaudeSettings,
)
from ..model.common import FrontmatterEntry
from ..parse.jsonpos import Positions
from ..workspace.discovery import PLUGIN_HOOKS, PLUGIN_MANIFEST
from .base import RuleContext, closest, edit_distance, rule

CC = Convention.CLAUDE_CODE
SETTINGS = (Kind.SETTINGS,)
HOOKED = (Kind.SETTINGS, Kind.AGENT, Kind.SKILL)
PERMISSION_LISTS = ("allow", "deny", "ask")
HINT_CUTOFF = 0.72
"""How close an unknown event must be to a real one for the message to name it: `on_stop`
(Stop) is, `pre-commit` (PreCompact) and `on_start` (SessionStart? SubagentStart?) are not."""
FIX_CUTOFF = 0.85
"""How close a misspelt event must be for the quick fix to rename it (case and `_` aside)."""

_SCRIPT = LazyPattern(
    r"(?<![^\s'\"`;&|(=])"
    r"(?P<var>\"?\$(?:\{(?P<name>CLAUDE_PROJECT_DIR|CLAUDE_PLUGIN_ROOT)(?::-[^}\s]*)?\}"
    r"|(?P<bare>CLAUDE_PROJECT_DIR|CLAUDE_PLUGIN_ROOT)\b|\(git rev-parse --show-toplevel\))"
    r"\"?/)?"
    r"(?P<path>(?:\./)?[\w.-]+(?:/[\w.-]+)*\.(?:sh|bash|zsh|py|js|mjs|cjs|ts|rb|pl))"
    r"(?=$|[\s'\"`;&|)<>])")
"""A script a hook command runs from the project: `$CLAUDE_PROJECT_DIR/...`,
`"${CLAUDE_PROJECT_DIR}"/...`, `${CLAUDE_PROJECT_DIR:-.}/...`,
`"$(git rev-parse --show-toplevel)/..."` (the repository's root), a plugin's
`${CLAUDE_PLUGIN_ROOT}/...` (see `hook_scripts`) or a relative path with a
directory (`.claude/hooks/x.sh`, `./scripts/x.py`). Hook commands run in the project
directory. A bare `x.sh` may be on PATH, and `~/`, absolute and other-variable paths are
outside what Baton reads."""
_CD = LazyPattern(r"(?:^|[;&|(]|\bthen|\bdo)\s*(?:cd|pushd)\s")
"""A directory change: relative paths after it are no longer the project's."""
MAX_SCRIPTS = 64
"""Script paths looked at per hook command (a hostile command cannot make the check slow)."""
BUILT_DIRS = frozenset({"dist", "build", "out", "target", "node_modules", ".venv", "venv"})
"""Directories of build output and installed packages: a hook running `dist/x.js` runs what
a build makes, which a repository does not commit."""


_YAML_KEY = LazyPattern(r"""^\s+(["']?)(?P<key>[^\s"':#][^"':]*?)\1\s*:(?:\s|$)""")
"""An indented `key:` (optionally quoted) of a front-matter block."""


def hook_scripts(command: str, plugin: bool = False) -> list[str]:
    """The project scripts a hook command runs, as paths relative to the project directory
    (where hook commands run), each once: `$CLAUDE_PROJECT_DIR/x.sh` or a relative path with
    a directory before any `cd`; build output is left out (see `_SCRIPT`). In a plugin's
    hooks file (`plugin`, checked with the plugin as workspace) `${CLAUDE_PLUGIN_ROOT}/x.sh`
    too, and no relative path: a plugin's hooks run in the user's project."""
    found: list[str] = []
    cd = _CD.search(command)
    cd_at = cd.start() if cd else len(command)
    for m in itertools.islice(_SCRIPT.finditer(command), MAX_SCRIPTS):
        rel = m["path"]
        relative = m["var"] is None
        in_plugin = (m["name"] or m["bare"]) == "CLAUDE_PLUGIN_ROOT"
        if in_plugin != plugin:
            continue
        if rel in found or (relative and "/" not in rel) \
                or BUILT_DIRS.intersection(rel.split("/")[:-1]) \
                or (relative and m.start() > cd_at):
            continue
        found.append(rel)
    return found


def command_hooks(hooks: Hooks) -> Iterator[tuple[str, tuple[str | int, ...], str]]:
    """(event, path of the entry below `hooks`, command) of every command hook of a known
    event."""
    for event, i, group in _groups(hooks):
        entries = group.get("hooks")
        if not isinstance(entries, list):
            continue
        for j, hook in enumerate(entries):
            command = hook.get("command") if isinstance(hook, dict) else None
            if isinstance(command, str) and hook.get("type", "command") == "command":
                yield event, (event, i, "hooks", j, "command"), command


# -- where the hooks are -----------------------------------------------------------------


@dataclass
class Hooks:
    """A file's `hooks` object and how to point at its parts."""

    value: dict[str, Any]
    pos: Positions | None
    """Settings: JSON positions (paths start at `("hooks",)`)."""
    entry: FrontmatterEntry | None
    """Front matter: the `hooks:` entry (its lines are searched)."""
    lines: list[str]
    _keys: dict[str, int] | None = None

    def event_line(self, event: str) -> int | None:
        """The front-matter line naming `event` (the block's keys, read once)."""
        if self.entry is None:
            return None
        if self._keys is None:
            self._keys = {}
            first = self.entry.range.start_line + 1
            indent: int | None = None  # the events' own level, below `hooks:`
            for no in range(first, min(self.entry.range.end_line + 1, len(self.lines))):
                m = _YAML_KEY.match(self.lines[no])
                if m is None:
                    continue
                at = len(self.lines[no]) - len(self.lines[no].lstrip())
                indent = at if indent is None else indent
                if at == indent:
                    self._keys.setdefault(m["key"], no)
        return self._keys.get(event)

    def event_range(self, event: str) -> Range:
        """The event's name (with its quotes in JSON)."""
        if self.pos is not None:
            return self.pos.key_range(("hooks", event)) or Range.of_line(0)
        assert self.entry is not None
        no = self.event_line(event)
        if no is None:
            return self.entry.key_range
        start = self.lines[no].index(event)
        return Range.of_line(no, start, start + len(event))

    def part(self, path: tuple[str | int, ...], needle: str) -> Range:
        """The value at `path` below the event (JSON), or the first line of the event's
        block holding `needle` (front matter)."""
        if self.pos is not None:
            return (self.pos.value_range(("hooks", *path))
                    or self.pos.key_range(("hooks", *path[:1])) or Range.of_line(0))
        assert self.entry is not None
        first = self.event_line(str(path[0]))
        if first is None:
            return self.entry.key_range
        for no in range(first, self.entry.range.end_line + 1):
            line = self.lines[no] if no < len(self.lines) else ""
            at = line.find(needle) if needle else -1
            if at >= 0:
                return Range.of_line(no, at, at + len(needle))
        return Range.of_line(first, 0, len(self.lines[first]))


def hooks_of(doc: Any, ctx: RuleContext) -> Hooks | None:
    """The `hooks` object of a settings file or of an agent's or skill's front matter."""
    if "hooks" in ctx.memo:
        found: Hooks | None = ctx.memo["hooks"]
        return found
    found = None
    if isinstance(doc, ClaudeSettings):
        value = doc.data.get("hooks") if doc.data is not None else None
        if isinstance(value, dict) and value:
            found = Hooks(value, Positions("\n".join(ctx.lines)), None, ctx.lines)
    else:
        fm = getattr(doc, "frontmatter", None)
        entry = fm.get("hooks") if fm is not None else None
        if entry is not None and isinstance(entry.value, dict) and entry.value:
            found = Hooks(entry.value, None, entry, ctx.lines)
    ctx.memo["hooks"] = found
    return found


def _groups(hooks: Hooks) -> Iterator[tuple[str, int, dict[str, Any]]]:
    """(event, index, matcher group) of every known event's well-formed groups."""
    for event, groups in hooks.value.items():
        if event not in HOOK_EVENTS or not isinstance(groups, list):
            continue
        for i, group in enumerate(groups):
            if isinstance(group, dict):
                yield event, i, group


def _where(doc: Any) -> str:
    return "settings" if isinstance(doc, ClaudeSettings) else "front matter"


# -- settings file ------------------------------------------------------------------------


@rule("BTN801", "settings-invalid-json", Severity.ERROR, SETTINGS, convention=CC)
def settings_invalid_json(doc: ClaudeSettings, ctx: RuleContext) -> Iterator[Finding]:
    """Claude Code cannot parse a project settings file.

    `.claude/settings.json` and `.claude/settings.local.json` are JSON (no comments, no
    trailing commas); Claude Code applies none of a file it cannot parse: no permissions,
    no hooks, no environment (a `//` comment line is enough: observed with the real binary
    in tests/agents/test_claude_hooks.py). An empty file sets nothing and is not reported.

    Fix: repair the JSON at the reported position.

    Reported:

        ==> .claude/settings.json <==
        {
          "permissions": {
            "allow": ["Bash(git:*)", "Read",]
          }
        }

    Not reported:

        ==> .claude/settings.json <==
        {
          "permissions": {
            "allow": ["Bash(git:*)", "Read"]
          }
        }
    """
    if doc.error is None:
        return
    if doc.error == TOO_DEEP:
        yield ctx.finding(Range.of_line(0), "this settings file nests too deeply to read; "
                                            "it was not checked")
        return
    yield ctx.finding(doc.error_range or Range.of_line(0),
                      f"Claude Code cannot parse this settings file ({doc.error}): none of "
                      "its permissions, hooks or environment apply")


# -- hooks ----------------------------------------------------------------------------------


@rule("BTN802", "hook-unknown-event", Severity.ERROR, HOOKED, fixable=True, convention=CC)
def hook_unknown_event(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A hook is declared under an event name Claude Code does not have, so it never runs.

    Claude Code 2.1.331 knows 33 hook events (`PreToolUse`, `PostToolUse`, `Stop`,
    `SubagentStop`, `SessionStart`, `UserPromptSubmit`, …; the bundle's event enum, spelt
    exactly, case included). Loading a settings file's or an agent's or skill's `hooks`, it
    drops any other key with the note "unknown hook event; entry ignored" that no session
    shows, so `preToolUse`, `post_tool_use` or `AfterEdit` hooks are silently never run
    (observed with the real binary: tests/agents/test_claude_hooks.py).

    Fix: use the event's exact name (the quick fix renames a near miss).

    Reported:

        ==> .claude/agents/reviewer.md <==
        ---
        name: reviewer
        description: Reviews changes
        hooks:
          postToolUse:
            - matcher: "Edit|Write"
              hooks:
                - type: command
                  command: "npm run lint"
        ---
        Review the diff.

    Not reported:

        ==> .claude/settings.json <==
        {"hooks": {"PostToolUse": [{"matcher": "Edit|Write",
          "hooks": [{"type": "command", "command": "npm run lint"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    for event in hooks.value:
        if event in HOOK_EVENTS:
            continue
        rng = hooks.event_range(event)
        import difflib  # here: only an unknown event needs it

        near = closest(event, HOOK_EVENTS, HINT_CUTOFF)
        hint = f"; did you mean `{near}`?" if near else ""
        fix = None
        if near is not None and (near.lower() == event.lower() or difflib.SequenceMatcher(
                None, near.lower(), event.lower()).ratio() >= FIX_CUTOFF):
            text = json.dumps(near) if hooks.pos is not None else near
            fix = ctx.fix(f"Rename the event to `{near}`", ctx.edit(rng, text))
        yield ctx.finding(rng, f"Claude Code has no hook event `{event}`: it ignores these "
                               f"hooks, so they never run{hint}", fix=fix)


@rule("BTN803", "hook-matcher-ignored", Severity.WARNING, HOOKED, convention=CC)
def hook_matcher_ignored(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A `matcher` on a hook event that has nothing to match: the hooks run every time.

    Claude Code matches a group's `matcher` against a value each event supplies (the tool
    name for `PreToolUse`, the source for `SessionStart`, …). For `UserPromptSubmit`,
    `Stop`, `TeammateIdle`, `TaskCreated`, `TaskCompleted`, `WorktreeCreate`,
    `WorktreeRemove`, `CwdChanged` and `MessageDisplay` it computes no such value and runs
    every group whatever its matcher says (the bundle's match-query switch has no case for
    them; the hooks reference says the field "is silently ignored"; the real binary runs a
    `Stop` group with `"matcher": "Bash"` in tests/agents/test_claude_hooks.py). A filter
    written there does not filter. `"*"` and `""` mean "everything" anyway and are not
    reported, nor is `Stop` in an agent's front matter: Claude Code registers it as
    `SubagentStop`, whose matcher is the agent type.

    Fix: drop the `matcher`, and filter inside the hook's command if it must.

    Reported:

        ==> .claude/settings.json <==
        {"hooks": {"Stop": [{"matcher": "Bash",
          "hooks": [{"type": "command", "command": "echo done"}]}]}}

    Not reported:

        ==> .claude/settings.json <==
        {"hooks": {"Stop": [{"matcher": "*",
          "hooks": [{"type": "command", "command": "echo done"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    for event, i, group in _groups(hooks):
        matcher = group.get("matcher")
        if event not in MATCHERLESS_EVENTS or not isinstance(matcher, str) \
                or matcher.strip() in WILDCARD_MATCHERS \
                or (event == "Stop" and ctx.kind is Kind.AGENT):
            continue
        yield ctx.finding(hooks.part((event, i, "matcher"), matcher),
                          f"`{event}` hooks take no matcher: Claude Code runs this group on "
                          f"every {event}, not only for `{matcher}`")


@rule("BTN804", "hook-script-missing", Severity.WARNING, HOOKED, cross_file=True,
      convention=CC)
def hook_script_missing(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A hook command runs a script of the project that does not exist.

    Hook commands run in the project directory, so `.claude/hooks/x.sh`, `./scripts/x.py`
    and `$CLAUDE_PROJECT_DIR/.claude/hooks/x.sh` name files of this repository (the hooks
    reference recommends the `$CLAUDE_PROJECT_DIR` form). When the file is missing the hook
    fails on every event, or does nothing at all behind `2>/dev/null || echo '{}'`.
    Scripts on PATH (a bare `x.sh`), under `~/`, absolute paths, paths from other
    variables, build output (`.claude/hooks/dist/x.js`, `node_modules/…`) and relative
    paths after a `cd` are not looked at.

    Fix: restore the script, correct the path, or remove the hook.

    Reported:

        ==> .claude/settings.json <==
        {"hooks": {"Stop": [{"hooks": [{"type": "command",
          "command": "bash .claude/hooks/claude-stop-notify.sh 2>/dev/null || echo '{}'"}]}]}}

    Not reported:

        ==> .claude/hooks/claude-stop-notify.sh <==
        #!/bin/bash
        echo '{}'
        ==> .claude/settings.json <==
        {"hooks": {"Stop": [{"hooks": [{"type": "command",
          "command": "bash .claude/hooks/claude-stop-notify.sh 2>/dev/null || echo '{}'"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None or ctx.root is None:
        return
    root = os.path.normpath(ctx.root)
    for event, where, command in command_hooks(hooks):
        for rel in hook_scripts(command, plugin_hooks_file(ctx)):
            target = os.path.normpath(os.path.join(root, rel))
            if not target.startswith(root + os.sep) or ctx.exists(Path(target)):
                continue
            yield ctx.finding(hooks.part(where, rel),
                              f"`{event}` hook runs `{rel}`, which does not exist in this "
                              f"project: the hook fails or does nothing on every {event}")


@rule("BTN805", "hook-malformed-entry", Severity.ERROR, HOOKED, convention=CC)
def hook_malformed_entry(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A hook entry Claude Code cannot read, so it is dropped.

    Each event holds a list of matcher groups, each group a `hooks` list of entries, each
    entry a `type` of `command`, `prompt`, `agent`, `http` or `mcp_tool` (the settings
    schema's union) with that type's fields (`command` for a command hook). Claude Code
    drops an event whose value is not a list, a group without a `hooks` list (a hook written
    directly in the event's list is such a group), and an entry of another type; on
    `PreToolUse` and `PermissionRequest` a broken entry stops the agent or skill holding it
    from loading at all (the real binary skips both forms while running their siblings:
    tests/agents/test_claude_hooks.py).

    Fix: write the hook in the documented shape.

    Reported:

        ==> .claude/settings.json <==
        {"hooks": {"PostToolUse": [{"matcher": "Write",
          "hooks": [{"type": "shell", "command": "npm run lint"}]}]}}

    Not reported:

        ==> .claude/settings.json <==
        {"hooks": {"PostToolUse": [{"matcher": "Write",
          "hooks": [{"type": "command", "command": "npm run lint"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    for event, groups in hooks.value.items():
        if event not in HOOK_EVENTS:
            continue  # BTN802
        if not isinstance(groups, list):
            yield ctx.finding(hooks.part((event,), event),
                              f"`{event}` must be a list of matcher groups: Claude Code "
                              "ignores it")
            continue
        for i, group in enumerate(groups):
            entries = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(entries, list):
                yield ctx.finding(hooks.part((event, i), event),
                                  f"`{event}` group {i + 1} has no `hooks` list (write "
                                  "`{\"matcher\": …, \"hooks\": [{\"type\": \"command\", …}]}`):"
                                  " Claude Code ignores it")
                continue
            for j, hook in enumerate(entries):
                if not isinstance(hook, dict):
                    continue
                kind = hook.get("type")
                if kind not in HOOK_TYPES:
                    shown = json.dumps(kind) if kind is not None else "no `type`"
                    near = closest(str(kind), HOOK_TYPES) if isinstance(kind, str) else None
                    hint = f"; did you mean `{near}`?" if near else ""
                    needle = kind if isinstance(kind, str) else "type"
                    rng = hooks.part((event, i, "hooks", j, "type"), needle) \
                        if "type" in hook else hooks.part((event, i, "hooks", j), "command")
                    yield ctx.finding(rng, f"`{event}` hook of type {shown}: Claude Code has "
                                           f"hook types {', '.join(HOOK_TYPES)} and ignores "
                                           f"this one{hint}")
                elif kind == "command" and not isinstance(hook.get("command"), str):
                    yield ctx.finding(hooks.part((event, i, "hooks", j), "command"),
                                      f"`{event}` command hook without a `command` string: "
                                      "Claude Code ignores it")


_RULE_SHAPED = LazyPattern(r"^\s*[A-Za-z_][\w-]*\(([^()]*)\)\s*$")
_NAME_CHARS = LazyPattern(r"^[\w|]*$")


def _permission_shaped(matcher: str) -> bool:
    """`Write(*.md)`, `Bash(git commit:*)`, `Write(*.ts)|Edit(*.ts)`: every alternative a
    tool with a specifier. `Notebook(Edit|Read)` is a regex over tool names and is not."""
    parts = matcher.split("|") if matcher.count("(") > 1 else [matcher]
    found = [_RULE_SHAPED.match(p) for p in parts]
    return all(m is not None and not _NAME_CHARS.match(m[1]) for m in found)


@rule("BTN808", "hook-matcher-rule-syntax", Severity.ERROR, HOOKED, convention=CC)
def hook_matcher_rule_syntax(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A tool hook's `matcher` written as a permission rule (`Write(*.py)`): it never matches.

    A matcher of `PreToolUse`, `PostToolUse`, `PostToolUseFailure`, `PermissionRequest` and
    `PermissionDenied` is matched against the tool's name (`Write`, `Edit|Write`, a regex
    such as `mcp__github__.*`), never against its arguments. `Write(*.py)` is no valid regex
    and `Bash(git commit:*)` matches no tool name, so the hooks never run: the real binary
    runs neither a `Write(*.md)` group for a Write of `notes.md` nor a `Bash(echo *)` group
    for `echo hi` (tests/agents/test_claude_hooks.py). Filtering on arguments is the hook
    entry's own `if` field, which takes permission-rule syntax ("Bash(git *)", the settings
    schema).

    Fix: match the tool name and move the pattern to `if` on each hook of the group.

    Reported:

        ==> .claude/settings.json <==
        {"hooks": {"PostToolUse": [{"matcher": "Write(*.py)", "hooks": [{"type": "command",
          "command": "jq -r .tool_input.file_path | xargs ruff check --fix"}]}]}}

    Not reported:

        ==> .claude/settings.json <==
        {"hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command",
          "if": "Write(*.py)",
          "command": "jq -r .tool_input.file_path | xargs ruff check --fix"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    for event, i, group in _groups(hooks):
        matcher = group.get("matcher")
        if event not in TOOL_EVENTS or not isinstance(matcher, str) \
                or not _permission_shaped(matcher):
            continue
        tool = matcher.split("(", 1)[0].strip()
        yield ctx.finding(hooks.part((event, i, "matcher"), matcher),
                          f"`{event}` matcher `{matcher}` is permission-rule syntax: Claude Code "
                          "matches it against the tool name only, so these hooks never run "
                          f"(match `{tool}` and put the pattern in each hook's `if`)")


def plugin_hooks_file(ctx: RuleContext) -> bool:
    """The file is a plugin's `hooks/hooks.json` (the workspace is the plugin)."""
    if ctx.root is None:
        return False
    return os.path.relpath(ctx.path, ctx.root).replace(os.sep, "/") == PLUGIN_HOOKS


def _stray_hooks_file(ctx: RuleContext) -> bool:
    """`.claude/hooks/hooks.json` of a project that is no plugin (neither the root nor
    `.claude/` holds a `.claude-plugin/plugin.json` that could name it)."""
    if ctx.root is None:
        return False
    rel = os.path.relpath(ctx.path, ctx.root).replace(os.sep, "/")
    if rel != "/".join((".claude", *STRAY_HOOKS_FILE)):
        return False
    return not any(ctx.exists(base / PLUGIN_MANIFEST) for base in (ctx.root,
                                                                    ctx.root / ".claude"))


@rule("BTN812", "hooks-file-never-loaded", Severity.WARNING, SETTINGS, cross_file=True,
      convention=CC)
def hooks_file_never_loaded(doc: ClaudeSettings, ctx: RuleContext) -> Iterator[Finding]:
    """Hooks written in `.claude/hooks/hooks.json` of a project: Claude Code never reads it.

    `hooks/hooks.json` is a plugin's hooks file, read at a plugin's root (or where its
    `plugin.json` `hooks` points; the 2.1.331 bundle's plugin loader joins the plugin root,
    "hooks", "hooks.json"). A project's hooks are read from `.claude/settings.json` and
    `.claude/settings.local.json` only, so hooks kept in `.claude/hooks/hooks.json` never run.
    Not reported when the root or `.claude/` is a plugin (`.claude-plugin/plugin.json`).

    Fix: move the `hooks` object into `.claude/settings.json`.

    Reported:

        ==> .claude/hooks/hooks.json <==
        {
          "hooks": {
            "PreToolUse": [
              {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "echo '{}'", "timeout": 5000}]
              }
            ]
          }
        }

    Not reported:

        ==> .claude-plugin/plugin.json <==
        {"name": "forge", "hooks": "./.claude/hooks/hooks.json"}
        ==> .claude/hooks/hooks.json <==
        {
          "hooks": {
            "PreToolUse": [
              {
                "matcher": "Write|Edit",
                "hooks": [{"type": "command", "command": "echo '{}'", "timeout": 5000}]
              }
            ]
          }
        }
    """
    hooks = doc.data.get("hooks") if doc.data is not None else None
    if not isinstance(hooks, dict) or not hooks or not _stray_hooks_file(ctx):
        return
    pos = Positions("\n".join(ctx.lines))
    events = ", ".join(f"`{e}`" for e in list(hooks)[:4]) + (" …" if len(hooks) > 4 else "")
    yield ctx.finding(pos.key_range(("hooks",)) or Range.of_line(0),
                      f"Claude Code never reads .claude/hooks/hooks.json (a plugin's hooks "
                      f"file; a project's hooks live in .claude/settings.json): the {events} "
                      "hooks here never run; move them into .claude/settings.json")


_SIMPLE_MATCHER = LazyPattern(r"^[A-Za-z0-9_|]+$")
"""A matcher Claude Code reads as a list of exact tool names (`Edit|Write`), not a regex."""
_LOWER_NAME = LazyPattern(r"^[a-z][a-z0-9_]*$")


def _bare_names(matcher: str) -> list[str]:
    """The alternatives of an exact-name matcher that no tool can be named: lower-case names
    (Claude Code's tools are `Bash`, `Edit`, …; an MCP tool is `mcp__server__tool`)."""
    if not _SIMPLE_MATCHER.match(matcher):
        return []
    return [n for n in matcher.split("|") if _LOWER_NAME.match(n) and not n.startswith("mcp__")]


@rule("BTN813", "hook-matcher-bare-tool-name", Severity.WARNING, HOOKED, convention=CC)
def hook_matcher_bare_tool_name(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A tool hook's matcher names a tool without its MCP prefix (`thinkdeep`), or a built-in
    tool in lower case: no tool has that name, so the hooks never run for it.

    A matcher of letters, digits, `_` and `|` is a list of exact tool names (anything else is
    a regex). Claude Code compares it with the tool's full name: `Bash`, `Edit`, or for an
    MCP tool `mcp__<server>__<tool>` — the 2.1.331 bundle adds no short name for an MCP tool
    (`hookMatcherFamilyNames` only for tools standing in for a built-in), so `thinkdeep` or
    `github__create_issue` never equals `mcp__zen__thinkdeep`. Names are case-sensitive:
    `bash` is not `Bash`.

    Fix: write the full name (`mcp__zen__thinkdeep`), a regex over it (`mcp__.*__thinkdeep`),
    or the built-in's exact name.

    Reported:

        ==> .claude/hooks/check_energy.sh <==
        exit 0
        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "thinkdeep|morph|batch_edit|refactor",
          "hooks": [{"type": "command", "command": "bash .claude/hooks/check_energy.sh"}]}]}}

    Not reported:

        ==> .claude/hooks/check_energy.sh <==
        exit 0
        ==> .claude/settings.json <==
        {"hooks": {"PreToolUse": [{"matcher": "mcp__zen__thinkdeep|mcp__morph__.*|Edit",
          "hooks": [{"type": "command", "command": "bash .claude/hooks/check_energy.sh"}]}]}}
    """
    hooks = hooks_of(doc, ctx)
    if hooks is None:
        return
    builtin = {name.lower(): name for name in TOOL_INDEX}
    for event, i, group in _groups(hooks):
        matcher = group.get("matcher")
        if event not in TOOL_EVENTS or not isinstance(matcher, str):
            continue
        names = _bare_names(matcher.strip())
        if not names:
            continue
        parts: list[str] = []
        bare = [n for n in names if n not in builtin]
        if bare:
            parts.append(f"{', '.join(f'`{n}`' for n in bare)}: an MCP tool is named "
                         f"`mcp__<server>__<tool>` (match `mcp__.*__{bare[0]}`)")
        cased = [n for n in names if n in builtin]
        if cased:
            parts.append(", ".join(f"`{n}` (did you mean `{builtin[n]}`?)" for n in cased)
                         + ": names are case-sensitive")
        what = "; ".join(parts)
        yield ctx.finding(hooks.part((event, i, "matcher"), matcher),
                          f"`{event}` matcher `{matcher}` names no tool Claude Code has, so "
                          f"these hooks never run for them: {what}")


# -- permissions ----------------------------------------------------------------------------


def _permission_rules(doc: ClaudeSettings,
                      ctx: RuleContext) -> Iterator[tuple[str, int, str, Range]]:
    """(list, index, rule text, range of the string) of every permission rule."""
    perms = doc.data.get("permissions") if doc.data is not None else None
    if not isinstance(perms, dict):
        return
    pos: Positions | None = ctx.memo.get("positions")
    for name in PERMISSION_LISTS:
        rules = perms.get(name)
        if not isinstance(rules, list):
            continue
        for i, text in enumerate(rules):
            if not isinstance(text, str):
                continue
            if pos is None:
                pos = ctx.memo["positions"] = Positions("\n".join(ctx.lines))
            yield name, i, text, (pos.value_range(("permissions", name, i))
                                  or Range.of_line(0))


@rule("BTN806", "permission-rule-never-matched", Severity.WARNING, SETTINGS, fixable=True,
      convention=CC)
def permission_rule_never_matched(doc: ClaudeSettings, ctx: RuleContext) -> Iterator[Finding]:
    """A path rule on Write, MultiEdit, NotebookEdit or Glob: Claude Code never consults it.

    `Write(path)`, `MultiEdit(path)`, `NotebookEdit(path)`, `Glob(path)`.

    Claude Code checks file paths against `Edit(path)` rules for every tool that edits
    files and against `Read(path)` rules for every tool that reads them; a path rule on
    Write, MultiEdit, NotebookEdit or Glob is "not matched by file permission checks" (the
    bundle's own rule validator; observed with the real binary for `Write(path)` in
    tests/agents/test_claude_cli.py). A deny rule of that form protects nothing; an allow
    rule allows nothing. The bare tool name (`Write`, `Write(*)`) is a tool rule and works.

    Fix: write the path rule on Edit (or Read for Glob); the quick fix does.

    Reported:

        ==> .claude/settings.json <==
        {"permissions": {"deny": ["Write(.env)", "Read(secrets/**)"]}}

    Not reported:

        ==> .claude/settings.json <==
        {"permissions": {"deny": ["Edit(.env)", "Read(secrets/**)"], "allow": ["Write"]}}
    """
    for name, _i, text, rng in _permission_rules(doc, ctx):
        instead = file_rule_instead(text)
        if instead is None:
            continue
        tool, better = instead
        fix = ctx.fix(f"Use `{better}`", ctx.edit(rng, json.dumps(better)), safe=False)
        yield ctx.finding(rng, f"`{text}` in `{name}` is never consulted: Claude Code matches "
                               f"file paths only against {better.split('(', 1)[0]}(path) "
                               f"rules, which cover {tool} too; use `{better}`", fix=fix)


@rule("BTN807", "permission-rule-malformed", Severity.ERROR, SETTINGS, convention=CC)
def permission_rule_malformed(doc: ClaudeSettings, ctx: RuleContext) -> Iterator[Finding]:
    """A permission rule Claude Code refuses, so it is skipped.

    A rule is `Tool` or `Tool(content)` ending at the closing parenthesis. Claude Code's
    rule validator skips ("Invalid permission rule … was skipped") an empty rule, an
    unbalanced or misplaced parenthesis, empty parentheses, a lowercase tool name, `(...)`
    after an MCP tool name (`mcp__server__tool` takes no content) and a Bash rule that is
    only `:*`. Tool names are not checked against a list: Claude Code accepts any name.

    Fix: write the rule as `Tool(content)` (`Bash(git log:*)`, `Edit(src/**)`).

    Reported:

        ==> .claude/settings.json <==
        {"permissions": {"allow": ["Bash(git log:*", "Read"]}}

    Not reported:

        ==> .claude/settings.json <==
        {"permissions": {"allow": ["Bash(git log:*)", "Read", "mcp__lean-lsp__*"]}}
    """
    for name, _i, text, rng in _permission_rules(doc, ctx):
        problem = rule_problem(text)
        if problem is not None:
            yield ctx.finding(rng, f"`{text}` in `{name}`: {problem}; Claude Code skips it")


_TOOL_NAME = LazyPattern(r"^[A-Za-z][A-Za-z0-9_-]*$")
_COLON_FORM = LazyPattern(r"^(?P<tool>[A-Za-z][A-Za-z0-9_]*):(?P<spec>.+)$", re.DOTALL)
_WHOLE = frozenset({"*", "**"})


_LONGEST = 40
"""Longer names are not compared (the longest tool name has 24 letters)."""


def _typo_limit(name: str) -> int:
    """Edits a misspelling of the tool `name` may show: one in a short name (`Bsah`, `Reed`),
    two in a longer one (`WebFecth`, `TodoWirte`); more and it may be a name of its own."""
    return 1 if len(name) <= 5 else 2


def misspelt_tool(tool: str, known: frozenset[str]) -> str | None:
    """The one Claude Code tool `tool` (not itself one) clearly misspells, or None: the same
    name in other case, or the only tool within `_typo_limit` edits of it."""
    if tool in known or len(tool) < 3 or len(tool) > _LONGEST or not _TOOL_NAME.match(tool):
        return None  # a name much longer than every tool is no misspelling of one
    same = [k for k in known if k.lower() == tool.lower()]
    if same:
        return same[0] if len(same) == 1 else None
    near = [(edit_distance(tool, k), k) for k in known]
    best = min(d for d, _ in near)
    meant = [k for d, k in near if d == best]
    if len(meant) != 1 or best > _typo_limit(meant[0]):
        return None
    return meant[0]


def _rule_meant(text: str, known: frozenset[str]) -> tuple[str, str] | None:
    """(tool name as written, the rule meant) for a permission rule naming no tool; None
    when the rule names a tool, an MCP tool or a name of no clear intent."""
    if rule_problem(text) is not None or "\\" in text or text.startswith("mcp_"):
        return None
    head, paren, rest = text.partition("(")
    if not paren and (m := _COLON_FORM.match(text)) is not None and m["tool"] in known:
        spec = m["spec"].strip()
        return text, m["tool"] if spec in _WHOLE else f"{m['tool']}({spec})"
    if "*" in head:
        return None
    meant = misspelt_tool(head, known)
    if meant is None:
        return None
    return head, f"{meant}{paren}{rest}"


@rule("BTN814", "permission-unknown-tool", Severity.WARNING, SETTINGS, fixable=True,
      convention=CC)
def permission_unknown_tool(doc: ClaudeSettings, ctx: RuleContext) -> Iterator[Finding]:
    """A permission rule names a tool Claude Code does not have: a misspelt tool name.

    Claude Code's rule validator accepts any tool name, and a rule is matched against a
    tool by its exact name (legacy names such as `Task` or `KillShell` mapped first), so
    `Bsah(npm test:*)` in `allow` allows nothing and `Reed(.env)` in `deny` denies
    nothing, with no message anywhere. Reported only where the intent is clear: a name
    that is the same as a Claude Code tool in other case, or within one edit (a short
    name) or two edits (a longer one) of exactly one tool (edits: a letter added, dropped,
    changed, or two swapped); and the `Tool:pattern` form (`Bash:npm *`), which Claude Code
    reads as one tool name `Bash:npm *`. The tool list is the versioned table in
    `model/claude_models.py`, checked against the tool list and legacy-name map compiled
    into the pinned claude 2.1.331 binary. MCP tools (`mcp__server__tool`), wildcards
    (`mcp__github__*`, deny rules' `*`), names in `extra-tools` of `[tool.baton]` and names
    far from every tool are not judged; rules Claude Code skips are BTN807's.

    Fix: spell the tool as Claude Code names it (`Bash(npm test:*)`, `Bash(npm *)`); the
    quick fix does.

    Reported:

        ==> .claude/settings.json <==
        {"permissions": {"allow": ["Bsah(npm test:*)", "WebFetch(domain:github.com)"],
                         "deny": ["Reed(.env)", "Bash:rm *"]}}

    Not reported:

        ==> .claude/settings.json <==
        {"permissions": {"allow": ["Bash(npm test:*)", "Task(reviewer)", "KillShell",
                                   "mcp__lean-lsp__lean_goal", "mcp__github__*"],
                         "deny": ["Read(.env)", "Deploy", "Notebook"]}}
    """
    known = frozenset({*TOOL_INDEX, *ctx.config.extra_tools})
    for name, _i, text, rng in _permission_rules(doc, ctx):
        meant = _rule_meant(text, known)
        if meant is None:
            continue
        written, better = meant
        fix = ctx.fix(f"Use `{better}`", ctx.edit(rng, json.dumps(better)), safe=False)
        yield ctx.finding(rng, f"`{text}` in `{name}` names no Claude Code tool (`{written}`"
                               f"), so it never matches and {_USELESS[name]}; did you mean "
                               f"`{better}`?", fix=fix)


_USELESS = {"allow": "allows nothing", "deny": "denies nothing", "ask": "never asks"}

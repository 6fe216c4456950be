"""Claude Code's permission deny rules, read the way Claude Code 2.1.331 applies them to a
file it is about to write, so preflight can tell before any agent runs that a user's (or a
project's, or the organisation's) settings will refuse an artifact.

A rule is `Tool` or `Tool(specifier)`. Only what stops a write matters here:

* `Edit(path)` covers every built-in tool that edits files, Write included;
* `Read(path)` also refuses writes to what it covers in 2.1.331 (not in 2.1.197), and in
  every version makes the artifact unreadable to the later steps that take it as input;
* `Write` or `Write(*)` takes the Write tool away, and with it the way artifacts are made.

Observed with the real binary and pinned in tests/agents/test_claude_cli.py: `Write(path)` is
not consulted at all (the write goes through), and a bare `Edit` or `Edit(*)` denies the Edit
tool alone, so Write still creates the artifact; neither stops a run.

Path specifiers follow gitignore, with four ways to say where they start (Claude Code's
permission documentation and its rule parser): `//abs` from the filesystem root, `~/p` from
the home directory, `/p` from the settings file's own root (the project directory for
project, local and managed settings; the configuration directory, `~/.claude` or
`CLAUDE_CONFIG_DIR`, for user settings), and `./p` or `p` from the working directory. A deny
specifier ending in `/**` drops it, so `reports/**` denies every `reports` directory at any
depth, as `reports` does; one that is only `/**` or `**` denies everything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePosixPath
from typing import Literal

_RULE = re.compile(r"^\s*(?P<tool>[A-Za-z_][\w-]*)\s*(?:\((?P<spec>.*)\))?\s*$", re.DOTALL)
_PATH_TOOLS = frozenset({"Edit", "Read"})
_WHOLE_TOOL = frozenset({"", "*"})
"""Specifiers that mean the tool itself, not a path (`Write(*)` is `Write`)."""


class SettingsScope(Enum):
    """Which of Claude Code's settings files a rule comes from: it decides where `/path`
    starts."""

    MANAGED = "managed"
    USER = "user"
    PROJECT = "project"
    LOCAL = "local"


@dataclass(frozen=True)
class Roots:
    """The directories a rule's path can start from, for one agent run."""

    cwd: PurePosixPath
    """The agent's working directory (the workspace root)."""
    home: PurePosixPath
    config_dir: PurePosixPath
    """`CLAUDE_CONFIG_DIR`, else `~/.claude`: where user settings live and start."""

    def of(self, scope: SettingsScope) -> PurePosixPath:
        """Where a `/path` specifier of `scope` starts."""
        return self.config_dir if scope is SettingsScope.USER else self.cwd


@dataclass(frozen=True)
class DenyRule:
    """One deny rule that can stop a write: a whole tool (`path is None`) or a path rule."""

    text: str
    tool: str
    path: str | None


def parse_deny(text: str) -> DenyRule | None:
    """The deny rule `text` as far as writes are concerned, None for one that never stops
    one (another tool, `Write(path)`, a bare `Edit`, a negation, or not a rule at all)."""
    m = _RULE.match(text)
    if m is None:
        return None
    tool, spec = m["tool"], (m["spec"] or "").strip()
    if tool == "Write":
        return DenyRule(text, tool, None) if spec in _WHOLE_TOOL else None
    if tool not in _PATH_TOOLS or spec in _WHOLE_TOOL or spec.startswith("!"):
        return None
    return DenyRule(text, tool, spec)


def covers(rule: DenyRule, scope: SettingsScope, roots: Roots, path: PurePosixPath) -> bool:
    """Whether `rule` (from a settings file of `scope`) refuses a write of the absolute
    `path`."""
    if rule.path is None:
        return True
    root, pattern = _anchor(rule.path, roots, scope)
    try:
        rel = path.relative_to(root)
    except ValueError:
        return False  # outside where the rule starts
    parts = rel.parts
    if not parts:
        return False
    regex = _compile(_deny_form(pattern))
    dir_only = pattern.endswith("/") and not pattern.endswith("\\/")
    # gitignore: a path is covered when it or any directory above it matches
    for i in range(1, len(parts) + 1):
        is_dir = i < len(parts)
        if dir_only and not is_dir:
            continue
        if regex.match("/".join(parts[:i])):
            return True
    return False


def _anchor(spec: str, roots: Roots, scope: SettingsScope) -> tuple[PurePosixPath, str]:
    """(where the pattern starts, the gitignore pattern) for a path specifier."""
    if spec.startswith("//"):
        return PurePosixPath("/"), re.sub(r"/{2,}", "/", spec[1:])
    if spec.startswith("~/"):
        return roots.home, re.sub(r"/{2,}", "/", spec[1:])
    if spec.startswith("/"):
        return roots.of(scope), re.sub(r"/{2,}", "/", spec)
    rel = spec[2:] if spec.startswith("./") else spec
    return roots.cwd, re.sub(r"/{2,}", "/", rel)


def _deny_form(pattern: str) -> str:
    """Claude Code's rewrite of a deny pattern before gitignore matching: a trailing `/**`
    goes, and what is left keeps its own anchoring (`reports/**` is `reports`)."""
    if not pattern.endswith("/**"):
        return pattern
    head = pattern[:-3]
    return head if re.search(r"[^/]", head) else "/**"


def _compile(pattern: str) -> re.Pattern[str]:
    """A gitignore pattern as a regex over a `/`-joined path relative to its root."""
    pattern = pattern.rstrip("/") if not pattern.endswith("\\/") else pattern
    anchored = pattern.startswith("/") or "/" in pattern
    body = pattern.lstrip("/")
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if body.startswith("**/", i) and (i == 0 or body[i - 1] == "/"):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i) and (i == 0 or body[i - 1] == "/") and i + 2 == len(body):
            out.append(".*")
            i += 2
        elif c == "*":
            while i < len(body) and body[i] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[" and (end := body.find("]", i + 2)) > 0:
            inner = body[i + 1:end]
            if inner[:1] in ("!", "^"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = end + 1
        elif c == "\\" and i + 1 < len(body):
            out.append(re.escape(body[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(f"^{prefix}{''.join(out)}$", re.DOTALL)


# -- rules as Claude Code 2.1.331's settings validator reads them ----------------------------

_FILE_RULE_TOOL = {"Write": "Edit", "MultiEdit": "Edit", "NotebookEdit": "Edit", "Glob": "Read"}
"""Tools whose path rules the validator says are "not matched by file permission checks —
only Edit(path) / Read(path) rules are" (Edit rules cover every file-editing tool, Read rules
every file-reading one)."""


def _call(text: str) -> tuple[str, str] | Literal[False] | None:
    """(tool, content) of `Tool(content)`; False for a bare `Tool`; None when malformed (the
    validator's split: the first `(` and the last `)`, which must end the rule, and no
    parenthesis in the tool name)."""
    if "(" not in text and ")" not in text:
        return False
    start, end = text.find("("), text.rfind(")")
    if start < 0 or end <= start or end != len(text) - 1 or ")" in text[:start]:
        return None
    return text[:start], text[start + 1:end]


def rule_problem(text: str) -> str | None:
    """Why Claude Code's validator skips the permission rule `text`, or None when it keeps
    it. Rules with a backslash (escaped parentheses) are not judged."""
    if not text.strip():
        return "an empty rule"
    if "\\" in text:
        return None
    call = _call(text)
    if call is None:
        return ("malformed: a rule is `Tool` or `Tool(content)` ending at its closing "
                "parenthesis")
    tool, content = (text, None) if call is False else call
    if content == "":
        return "empty parentheses (write the tool alone, or a pattern inside)"
    if tool.startswith("mcp__"):
        return "MCP rules take no `(…)`" if content is not None else None
    if not tool:
        return "no tool name before the parentheses"
    if "_" not in tool and tool[0] != tool[0].upper():
        return f"tool names start with an uppercase letter (`{tool[0].upper()}{tool[1:]}`)"
    if tool == "Bash" and content == ":*":
        return "an empty command prefix before `:*`"
    return None


def file_rule_instead(text: str) -> tuple[str, str] | None:
    """(tool, the rule to write instead) for a path rule on a tool whose path rules are never
    consulted (`Write(src/**)` → `Edit(src/**)`); None for any other rule."""
    if "\\" in text:
        return None
    call = _call(text)
    if not call:
        return None
    tool, content = call
    instead = _FILE_RULE_TOOL.get(tool)
    if instead is None or content.strip() in _WHOLE_TOOL or ":*" in content:
        return None
    return tool, f"{instead}({content})"

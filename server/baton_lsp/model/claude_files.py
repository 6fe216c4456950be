"""Claude Code's project files beside agents and commands: `.mcp.json` (project MCP
servers) and the instruction files Claude Code loads into every session (`CLAUDE.md`,
`.claude/CLAUDE.md`, `.claude/rules/**/*.md`) with their `@path` imports."""

from __future__ import annotations

from typing import Any

from .base import Model, Range
from .common import Frontmatter, Link, Suppression

MCP_CONFIG_NAME = ".mcp.json"
"""The project-scoped MCP server file Claude Code reads at the repository root."""
MEMORY_NAMES = ("CLAUDE.md", "CLAUDE.local.md")
"""Instruction files Claude Code loads from the project root and each directory it reads."""
PLUGIN_DIR = ".claude-plugin"
PLUGIN_MANIFESTS = ("plugin.json", "marketplace.json")
"""`.claude-plugin/plugin.json` (a plugin) and `marketplace.json` (a catalog of plugins)."""
RULES_DIR = "rules"
"""`.claude/rules/**/*.md`: instruction files, optionally scoped by `paths:` globs."""
IMPORT_MAX_DEPTH = 5
"""Claude Code follows `@path` imports at most this many hops from the file it loads."""
CONTEXT_DIR = "context"
"""`.claude/context/` (and `.opencode/context/`): the documents agents, commands and skills
point to with `@.claude/context/...` references and links."""


class JsonFile(Model):
    """A strict-JSON file Claude Code reads (`.mcp.json`, plugin and marketplace manifests):
    the parsed document (None when it is not JSON) and where parsing failed."""

    path: str
    data: Any = None
    error: str | None = None
    error_range: Range | None = None


class MemoryImport(Model):
    """One `@path` import of an instruction file, as Claude Code reads it."""

    target: str
    """The path as written, fragment (`#…`) removed and `\\ ` unescaped."""
    range: Range


class MemoryFile(Model):
    """An instruction file: its `@path` imports outside code and its front matter."""

    path: str
    imports: list[MemoryImport] = []
    frontmatter: Frontmatter | None = None


class ContextFile(Model):
    """A context document (`.claude/context/**/*.md`): no format of its own, only the `@path`
    references and relative links through which it points to other files."""

    path: str
    imports: list[MemoryImport] = []
    links: list[Link] = []
    suppressions: list[Suppression] = []

"""Baton: language server, CLI and workflow engine for `.claude/` agent workflows."""

__version__ = "0.1.0"

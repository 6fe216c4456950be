"""BTN00x: codes produced by the machinery itself, registered here for their documentation.

These rules apply to no document kind: the engine (BTN000) and the configuration loader
(BTN001) emit them directly. They are registered so `baton rule BTN001` explains them and
SARIF output lists them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..model.base import Finding, Severity
from .base import RuleContext, rule


@rule("BTN000", "internal-error", Severity.WARNING, ())
def internal_error(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """A rule crashed on this file; the other rules still ran.

    Baton isolates every rule: if one raises, its failure is reported once as this
    diagnostic (with the exception text) and checking continues. It always means a bug in
    Baton, not in your file — please report it with the file that triggers it.
    """
    yield from ()


@rule("BTN001", "invalid-configuration", Severity.ERROR, ())
def invalid_configuration(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """The Baton configuration cannot be used.

    `[tool.baton]` in `pyproject.toml` or `.claude/baton.toml` has a syntax error, an unknown
    key or a value of the wrong type. The language server reports it on the configuration
    file and with a message, and uses the defaults until it is fixed; `baton check` stops
    with exit code 2. It is never silently ignored.
    """
    yield from ()


@rule("BTN002", "agent-cli-preflight", Severity.WARNING, ())
def agent_cli_preflight(doc: Any, ctx: RuleContext) -> Iterator[Finding]:
    """`baton run` would stop before any agent runs, with this configuration.

    When `[workflow] runner` (or a role's runner) names the claude, codex, gemini or opencode
    CLI, the language server runs the engine's preflight in the background and reports each problem
    on the configuration file: the CLI is not on PATH or does not answer `--version`, it
    has no credentials, Claude Code would have to write artifacts under `.claude/` (it
    refuses that in every permission mode but bypassPermissions), or gemini does not trust
    the folder. Each message names its fix. Model names in agent files are BTN207's.
    """
    yield from ()

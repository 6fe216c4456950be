"""How an agent step is launched and how its output is read: one runner per agent CLI.

A runner turns an `Invocation` into an argv, stdin and environment (`launch`), turns each
stdout line into text lines plus an optional final result (`decode`), and says what kind of
failure an exit was (`classify_exit`): "transient" (retry later), "permanent" (this attempt
is wrong; a retry with the same input fails the same way) or "fatal" (stop the workflow:
the environment is broken — not logged in, disk full, program missing).

Prompts always go on stdin, never in argv: no argument length limit and nothing readable in
`ps`. Values are only ever single argv elements; no runner builds a shell command line.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path

from ...model.config import WorkflowSettings
from .base import (
    FATAL,
    PERMANENT,
    TRANSIENT,
    AgentEvent,
    HopelessRetry,
    Invocation,
    LaunchSpec,
    Runner,
    RunResult,
    classify_common,
    classify_outcome,
    classify_text,
    fix_for,
    refusals,
    usage_of,
)
from .claude import ClaudeRunner
from .codex import CodexRunner
from .command import CommandRunner
from .gemini import GeminiRunner
from .opencode import OpencodeRunner
from .script import SCRIPTED_MODULE, ScriptRunner

__all__ = [
    "AUTO_RUNNER",
    "CLI_RUNNERS",
    "FATAL",
    "PERMANENT",
    "REGISTRY",
    "RUNNER_NAMES",
    "SCRIPTED_MODULE",
    "TRANSIENT",
    "AgentEvent",
    "ClaudeRunner",
    "CodexRunner",
    "CommandRunner",
    "GeminiRunner",
    "HopelessRetry",
    "Invocation",
    "LaunchSpec",
    "OpencodeRunner",
    "RunResult",
    "Runner",
    "ScriptRunner",
    "available_runner",
    "classify_common",
    "classify_outcome",
    "classify_text",
    "cli_runner",
    "fix_for",
    "own_runner",
    "refusals",
    "registered_runner",
    "usage_of",
]

logger = logging.getLogger(__name__)


RunnerFactory = Callable[[WorkflowSettings, Path], Runner]

# One registration per runner: a new agent CLI is its module plus one line here.
REGISTRY: dict[str, RunnerFactory] = {
    "script": ScriptRunner.configured,
    "command": CommandRunner.configured,
    "claude": ClaudeRunner.configured,
    "codex": CodexRunner.configured,
    "gemini": GeminiRunner.configured,
    "opencode": OpencodeRunner.configured,
}
CLI_RUNNERS = ("claude", "codex", "gemini", "opencode")
AUTO_RUNNER = "auto"
"""The run's runner when nothing names one: the first agent CLI installed and logged in
(resolved by the engine before anything runs); as a role's runner, the run's own."""
RUNNER_NAMES = (AUTO_RUNNER, *sorted(REGISTRY))


def own_runner(name: str | None) -> str | None:
    """A role's own runner, None when it has none (unset or `auto`: the run's runner)."""
    return name if name and name.strip().lower() != AUTO_RUNNER else None


def registered_runner(name: str | None, settings: WorkflowSettings, root: Path) -> Runner:
    """The runner of that name as the workspace's settings configure it; `auto` (or None) is
    the scripted agent here — the engine resolves `auto` to an agent CLI before any step
    (`Engine._choose_runner`), so this fallback serves only direct users of `Run`. Raises
    ValueError for an unknown name or an incomplete setting."""
    key = (name or AUTO_RUNNER).strip().lower()
    factory = REGISTRY.get("script" if key == AUTO_RUNNER else key)
    if factory is None:
        raise ValueError(f"unknown runner {name!r}; valid runners: {', '.join(RUNNER_NAMES)}")
    runner = factory(settings, root)
    exe = getattr(runner, "executable", None)
    if key in CLI_RUNNERS and exe and shutil.which(exe) is None:
        logger.warning("runner %r: %r is not on PATH; its steps will fail to start", key, exe)
    return runner


def cli_runner(key: str, settings: WorkflowSettings | None = None) -> Runner:
    """The claude, codex, gemini or opencode runner with its `[workflow.<key>]` settings."""
    if key not in CLI_RUNNERS:
        raise ValueError(f"{key!r} is not an agent CLI runner")
    return REGISTRY[key](settings or WorkflowSettings(), Path.cwd())


def available_runner(name: str | None, *, which: Callable[[str], str | None] = shutil.which,
                     command: Sequence[str] | None = None, executable: str | None = None,
                     script: Path | None = None,
                     settings: WorkflowSettings | None = None) -> Runner:
    """The runner configured by name with explicit overrides (the agent-CLI tests and
    benchmarks use it); a new instance on every call (runners may keep per-run decoding
    state).

    None or "auto" gives the `script` runner here: these callers drive single steps offline
    and must not spend money or fail on a login because a CLI happens to be installed. A
    workflow never gets the scripted agents this way: `baton run` resolves `auto` to an
    installed, logged-in agent CLI or stops (`Engine._choose_runner`), and runs the scripted
    agents only where `runner = "script"` is configured. An explicit CLI that `which` cannot
    find is only logged: the step
    then fails with AgentLaunchError, which the engine records as a fatal step failure.
    Unknown names raise ValueError naming the valid ones.
    """
    key = (name or AUTO_RUNNER).strip().lower()
    if key in (AUTO_RUNNER, "script"):
        return ScriptRunner(script)
    ws = settings or WorkflowSettings()
    if key == "command":
        if not command:
            raise ValueError("runner 'command' needs an argv template (a list of strings)")
        ws = ws.model_copy(update={"command": list(command)})
    if key not in REGISTRY:
        raise ValueError(f"unknown runner {name!r}; valid runners: {', '.join(RUNNER_NAMES)}")
    runner = REGISTRY[key](ws, Path.cwd())
    if executable:
        runner.executable = executable  # type: ignore[attr-defined]
    exe = getattr(runner, "executable", None)
    if key in CLI_RUNNERS and exe and which(exe) is None:
        logger.warning("runner %r: %r is not on PATH; its steps will fail to start", key, exe)
    return runner

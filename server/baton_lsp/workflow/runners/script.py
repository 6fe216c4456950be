"""A Python agent script, by default the built-in deterministic agent."""

from __future__ import annotations

import sys
from pathlib import Path

from ...model.config import WorkflowSettings
from ...paths import python_module_argv
from ..layout import contained
from .base import (
    AgentEvent,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    plain_event,
    runner_env,
)

SCRIPTED_MODULE = "baton_lsp.workflow.scripted"


class ScriptRunner:
    """A Python agent script run with this interpreter; by default the built-in deterministic
    agent. Prompt on stdin, contract in the environment, plain text out. `-P` keeps the
    workspace (the cwd) off `sys.path`, so a workspace file named like a standard module
    cannot shadow the built-in agent's imports."""

    @classmethod
    def configured(cls, settings: WorkflowSettings, root: Path) -> ScriptRunner:
        """`[workflow] script` (inside the workspace), else the built-in scripted agent."""
        script = settings.script
        return cls(contained(root, script, "agent script") if script else None)

    name = "script"

    def __init__(self, script: Path | None = None) -> None:
        self.script = script
        self.argv = ([sys.executable, str(script)] if script is not None
                     else python_module_argv(SCRIPTED_MODULE, "-P"))

    def __repr__(self) -> str:
        return f"ScriptRunner({self.script!r})"

    def launch(self, inv: Invocation) -> LaunchSpec:
        return LaunchSpec(list(self.argv), inv.prompt.encode("utf-8"), runner_env(inv))

    def decode(self, line: str) -> AgentEvent:
        return plain_event(line)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)



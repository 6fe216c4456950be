"""A user-defined argv as the agent."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ...model.config import WorkflowSettings
from ...runs import confine
from .base import (
    AgentEvent,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    plain_event,
    runner_env,
)

PROMPTS_DIR = Path(".claude", "tmp", "prompts")
"""Where `{prompt_file}` prompts are written, below the workspace."""
_PLACEHOLDER = re.compile(r"\{(prompt_file|artifact|step|role|workspace|workdir)\}")


@dataclass
class CommandRunner:
    """A user-defined argv. `{prompt_file}`, `{artifact}`, `{step}`, `{role}`, `{workspace}`
    and `{workdir}` (the agent's working directory: a phase's worktree) are replaced inside
    each element in one pass (a value containing a placeholder or shell syntax stays
    literal); other braces are left alone. The prompt is also on stdin, and every output
    line is text."""

    @classmethod
    def configured(cls, settings: WorkflowSettings, root: Path) -> CommandRunner:
        """The argv template of `[workflow] command`."""
        if not settings.command:
            raise ValueError("runner `command` needs [workflow] command = [argv...]")
        return cls(list(settings.command))

    argv_template: list[str]
    name: str = "command"

    def __post_init__(self) -> None:
        if not self.argv_template:
            raise ValueError("command runner: the argv template is empty")

    def launch(self, inv: Invocation) -> LaunchSpec:
        temp: list[Path] = []
        values = {"artifact": inv.contract.get("BATON_ARTIFACT_PATH", ""),
                  "step": inv.step_id, "role": inv.role,
                  "workspace": inv.contract.get("BATON_WORKSPACE", str(inv.cwd)),
                  "workdir": str(inv.cwd)}
        extra: dict[str, str] = {}
        root = Path(inv.contract.get("BATON_WORKSPACE") or inv.cwd)
        if any("{prompt_file}" in part for part in self.argv_template):
            # in the workspace, through confine like every file Baton writes: a fresh
            # name (O_EXCL | O_NOFOLLOW), private to this user, removed after the run
            safe_step = re.sub(r"[^A-Za-z0-9._-]", "_", inv.step_id)
            path = root / PROMPTS_DIR / f"baton-prompt-{safe_step}-{os.urandom(6).hex()}.md"
            with confine.open_new(root, path, mode=0o600) as fd:
                os.write(fd, inv.prompt.encode("utf-8"))
            temp.append(path)
            values["prompt_file"] = extra["BATON_PROMPT_FILE"] = str(path)

        def fill(match: re.Match[str]) -> str:
            return values[match.group(1)]

        argv = [_PLACEHOLDER.sub(fill, part) for part in self.argv_template]
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), runner_env(inv, extra), tuple(temp),
                          root)

    def decode(self, line: str) -> AgentEvent:
        return plain_event(line)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        return classify_common(exit_code, stderr_tail, result)



"""Agent and command markdown files: front matter, steps, signals, injections, blocks."""

from __future__ import annotations

from .base import Model, Range
from .common import Frontmatter, Link, Suppression

CLAUDE_BUILTIN_AGENTS = frozenset({
    "general-purpose", "Explore", "Plan", "statusline-setup", "claude-code-guide", "claude",
    "fork", "worker", "workflow-subagent", "comment-thread-analyst", "output-style-setup"})
"""Claude Code's built-in subagent types (the `agentType` of its built-in agents in the
pinned claude binary; `output-style-setup` from earlier releases)."""


class StepHeading(Model):
    """`### STEP 2 (REQUIRED BEFORE STEP 3) - Title` and its parsed parts."""

    number: int
    title: str
    level: int
    range: Range
    number_range: Range
    required_before: int | None = None
    required_before_range: Range | None = None


class SignalRef(Model):
    """A return signal (`REPORT_CREATED:` …) documented or parsed in a file."""

    name: str
    """Without the colon: `REPORT_CREATED`, `TASK_ERROR`."""
    range: Range
    in_code: bool


class Injection(Model):
    """A behavioural-injection line: `Read and follow ALL behavioral guidelines from: <path>`."""

    target: str
    """The path as written (may contain `${CLAUDE_PROJECT_DIR}`)."""
    agent_name: str | None
    """The agent file's stem when the path points into `.claude/agents/`."""
    range: Range
    target_range: Range


class AgentFile(Model):
    path: str
    name: str
    """File stem: how commands and `dependent-agents` refer to it."""
    frontmatter: Frontmatter | None = None
    title: str | None = None
    title_range: Range | None = None
    steps: list[StepHeading] = []
    signals: list[SignalRef] = []
    injections: list[Injection] = []
    placeholders: list[Range] = []
    """`{{...}}` outside code (front matter included)."""
    links: list[Link] = []
    suppressions: list[Suppression] = []
    is_template: bool = False
    is_prompt: bool = False
    """Files under `agents/prompts/`: prompt fragments, not agents; front matter optional."""
    line_count: int = 0
    task_blocks: list[TaskBlock] = []
    """`Task {` pseudo-calls: coordinator agents invoke other agents the way commands do."""

    @property
    def emitted_signals(self) -> set[str]:
        return {s.name for s in self.signals}


class TaskField(Model):
    name: str
    value: str
    range: Range
    value_range: Range


class TaskBlock(Model):
    """A `Task { subagent_type: ..., description: ..., prompt: ... }` pseudo-call."""

    range: Range
    open_range: Range
    closed: bool
    fields: list[TaskField] = []
    unbalanced_quote: Range | None = None
    elided: bool = False
    """A line of its own is an ellipsis (`...`, `…`): an abbreviated example, whose
    missing fields are left out on purpose."""
    injections: list[Injection] = []
    signals: list[SignalRef] = []
    """Signals the prompt tells the agent to return (`REPORT_CREATED:` …)."""

    def field(self, name: str) -> TaskField | None:
        for f in self.fields:
            if f.name == name:
                return f
        return None


class BashBlock(Model):
    """A ```bash fence: `start_line` is the opening fence, content starts on the next line."""

    start_line: int
    end_line: int
    content: str
    closed: bool
    range: Range
    index: int
    """0-based position among the file's bash blocks (each runs in a new process)."""

    @property
    def first_content_line(self) -> int:
        return self.start_line + 1


class CommandFile(Model):
    path: str
    name: str
    frontmatter: Frontmatter | None = None
    title: str | None = None
    title_range: Range | None = None
    bash_blocks: list[BashBlock] = []
    task_blocks: list[TaskBlock] = []
    injections: list[Injection] = []
    signals: list[SignalRef] = []
    links: list[Link] = []
    suppressions: list[Suppression] = []
    line_count: int = 0


# `task_blocks` refers to TaskBlock, defined below it: `Model.model_validate` resolves the
# annotations (in this module's namespace) on first use, not at import.

"""Core vocabulary shared by every layer: ranges, findings and fixes.

Ranges are 0-based (line, character) with characters counted in Python code points; the
LSP layer converts to UTF-16 so the core never needs to know about encodings.
"""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict

RULE_DOCS_URL = "https://baton-lsp.dev/rules/{code}"
"""Where a rule's documentation lives (`baton rule CODE` prints the same text)."""


def rule_docs_url(code: str) -> str:
    return RULE_DOCS_URL.format(code=code)


class Model(BaseModel):
    """Base of every document model. Schemas are built on first use, not at import:
    building ~40 validators at import cost ~100 ms of the language server's start-up."""

    model_config = ConfigDict(defer_build=True)


_new = object.__new__
_set = object.__setattr__
_RANGE_FIELDS = ("start_line", "start_char", "end_line", "end_char")
_ALL_RANGE_FIELDS = set(_RANGE_FIELDS)
"""Shared by every `span`: a frozen Range never changes its set (`model_copy` copies it
first), and one set per range was a fifth of a large plan's memory."""


class Range(Model):
    """A 0-based, end-exclusive span of source text."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    start_line: int
    start_char: int
    end_line: int
    end_char: int

    @classmethod
    def of_line(cls, line: int, start: int = 0, end: int = 0) -> Range:
        """A span on a single line (fast path: skips validation on the hot path)."""
        return cls.span(line, start, line, end)

    @classmethod
    def span(cls, start_line: int, start_char: int, end_line: int, end_char: int) -> Range:
        """What `model_construct` builds, without its per-field loop: the parsers make
        thousands of ranges (`tests/model/test_range.py` keeps the two equal)."""
        r = _new(cls)
        _set(r, "__dict__", {"start_line": start_line, "start_char": start_char,
                             "end_line": end_line, "end_char": end_char})
        _set(r, "__pydantic_fields_set__", _ALL_RANGE_FIELDS)
        _set(r, "__pydantic_extra__", None)
        _set(r, "__pydantic_private__", None)
        return r

    def contains_line(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line

    def __str__(self) -> str:
        start = f"{self.start_line + 1}:{self.start_char + 1}"
        return f"{start}-{self.end_line + 1}:{self.end_char + 1}"


ZERO = Range.of_line(0)


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2, Severity.HINT: 3}


class Kind(StrEnum):
    """What a workspace file is, decided from its path."""

    PLAN = "plan"
    AGENT = "agent"
    COMMAND = "command"
    SKILL = "skill"
    OPENCODE_AGENT = "opencode-agent"
    """`.opencode/agent(s)/**/*.md`: an OpenCode agent (its own format, not Claude Code's)."""
    OPENCODE_COMMAND = "opencode-command"
    """`.opencode/command(s)/**/*.md`: an OpenCode command template."""
    OPENCODE_CONFIG = "opencode-config"
    """`opencode.json(c)` at the root or in `.opencode/`: OpenCode's project configuration."""
    MCP_CONFIG = "mcp-config"
    """`.mcp.json` at the root: Claude Code's project-scoped MCP servers."""
    PLUGIN_MANIFEST = "plugin-manifest"
    """`.claude-plugin/plugin.json` or `marketplace.json` at the root: a Claude Code plugin's
    manifest or a plugin marketplace's catalog."""
    MEMORY = "memory"
    """`CLAUDE.md` (root, `.claude/`, nested), `CLAUDE.local.md`, `.claude/rules/**/*.md`:
    instruction files Claude Code loads into the session, with their `@path` imports."""
    """`.claude/skills/<name>/SKILL.md`: front matter like a command's, plus `name`."""
    SETTINGS = "settings"
    """`.claude/settings.json` and `.claude/settings.local.json`: Claude Code's project
    settings (permissions, hooks)."""
    REGISTRY = "registry"
    """`specs/state.json`: the task registry of the newer task-based trees."""
    REPORT = "report"
    SUMMARY = "summary"
    STATE = "state"
    ERRORS_LOG = "errors_log"
    CHECKPOINT = "checkpoint"
    UNLOADED = "unloaded"
    """A file meant for Claude Code where it never looks: a loose `.claude/skills/x.md`, a
    `skill.md`/`claude.md` not spelt in capitals, a link under `.claude/rules/` or to a skill
    folder that dangles or leaves the workspace (`workspace.discovery.unloaded`)."""
    OTHER = "other"


class Convention(StrEnum):
    """Which body of conventions a rule enforces; a rule runs only on files that follow it."""

    CLAUDE_CODE = "claude-code"
    """Claude Code's documented agent, command, skill and settings formats."""
    OPENCODE = "opencode"
    """OpenCode's agent and command formats (`.opencode/agent/`, `.opencode/command/`)."""
    PLAN = "plan"
    """Any markdown plan with numbered phases, checkboxes and status markers."""
    CHECKBOX_PLAN = "checkbox-plan"
    """Plans whose task checkboxes are ticked as the work is done (all but task-based ones)."""
    PLAN_STANDARD = "plan-standard"
    """The seeds' plan metadata standard (spec 010), where the workspace ships it."""
    TASK_PLAN = "task-plan"
    """The newer task-based plans: bullet metadata under the title (`Task`, `Effort`)."""
    WORKFLOW_BASH = "workflow-bash"
    """The seeds' bash-block orchestration: state files, `append_workflow_state`, traps."""
    SCRIPT_BLOCKS = "script-blocks"
    """Commands whose bash blocks are scripts run as written (they call a project library)."""
    MARKDOWN = "markdown"
    """CommonMark, as GitHub and the editor's preview render every markdown file."""
    WORKFLOW_AGENTS = "workflow-agents"
    """The seeds' agent/command orchestration: STEP numbering, `Task {` blocks, injection."""
    TASK_REGISTRY = "task-registry"
    """`specs/state.json` task registries."""
    BATON = "baton"
    """Baton's own configuration, checkpoints, error log and run state."""


CONVENTION_DOCS = {
    Convention.CLAUDE_CODE: "Claude Code's documented formats for agents, commands, skills "
    "and settings (code.claude.com/docs); every agent and command file follows it",
    Convention.OPENCODE: "OpenCode's agent and command formats (its config schema and "
    "loaders, npm `opencode-ai`); every file under `.opencode/agent(s)/` and "
    "`.opencode/command(s)/` follows it",
    Convention.PLAN: "markdown plans with `Phase N` headings, task checkboxes and status "
    "markers, by any author",
    Convention.CHECKBOX_PLAN: "plans whose task checkboxes are ticked as work is done (the "
    "seeds' `/implement` and checkbox utilities); task-based plans track status on the phase "
    "heading only and leave their task lists as written",
    Convention.PLAN_STANDARD: "the seeds' plan metadata standard (spec 010); a plan follows "
    "it when its metadata has a `Standards File` entry and the workspace ships the standard "
    "(.claude/docs/reference/standards/plan-metadata-standard.md)",
    Convention.TASK_PLAN: "the newer task-based plans (bullet metadata directly under the "
    "title) that name their format standard (`- **Standards**: plan-format.md; ...`)",
    Convention.WORKFLOW_BASH: "the seeds' multi-block bash orchestration (state files, "
    "`append_workflow_state`, `${CLAUDE_PROJECT_DIR}` paths); a command follows it when its "
    "bash blocks use the state library",
    Convention.SCRIPT_BLOCKS: "commands whose ```bash blocks are scripts Claude runs as "
    "written: they use the seeds' state library or `source` a library from the project's "
    "`.claude/` tree (`source .claude/lib/…`); elsewhere a bash fence is as often an example, "
    "a template or instructions",
    Convention.WORKFLOW_AGENTS: "the seeds' agent and command orchestration (`Task {` "
    "blocks with subagent_type/prompt, behavioural injection, return signals, STEP numbering, "
    "`dependent-agents`/`command-type` keys); a file follows it when it uses any of them",
    Convention.TASK_REGISTRY: "`specs/state.json` task registries (`active_projects`)",
    Convention.BATON: "Baton's own configuration, checkpoints, errors.jsonl and run state",
    Convention.MARKDOWN: "CommonMark block structure (fences, headings), as GitHub and the "
    "editor's preview render it; every markdown file Baton reads follows it",
}


class TextEdit(Model):
    """Replace `range` in `path` with `new_text`."""

    path: str
    range: Range
    new_text: str


class Fix(Model):
    """An edit computed together with its finding, so code actions never re-run rules."""

    title: str
    edits: list[TextEdit]
    safe: bool = True


class Related(Model):
    """Another location that explains a finding (e.g. the other phases of a cycle)."""

    path: str
    range: Range
    message: str


class Finding(Model):
    """One problem found by one rule, ready to be rendered by any front end."""

    code: str
    rule: str
    severity: Severity
    message: str
    path: str
    range: Range
    related: list[Related] = []
    fix: Fix | None = None
    tags: list[str] = []

    @property
    def url(self) -> str:
        """The rule's documentation page."""
        return rule_docs_url(self.code)

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.path, self.range.start_line, self.range.start_char, self.code)

"""User configuration: `[tool.baton]` in pyproject.toml or `.claude/baton.toml`."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .base import Convention, Severity

DEFAULT_REQUIRED_METADATA = [
    "Date", "Feature", "Status", "Estimated Hours", "Standards File", "Research Reports",
]
DEFAULT_REQUIRED_METADATA_G3 = ["Task", "Status", "Effort"]
DEFAULT_SHELLCHECK_EXCLUDE = ["SC1090", "SC1091", "SC2154"]


def _kebab(name: str) -> str:
    return name.replace("_", "-")


_M = TypeVar("_M", bound=BaseModel)


def _defaults_of(model: type[_M]) -> Callable[[], _M]:
    """A default factory: `model` with its defaults, built without its validator. Pydantic
    validates no default, so the value equals `model()`; a configuration that sets nothing
    (most trees) then builds no validator of the workflow's settings at all."""
    return lambda: model.model_construct()


class AgentRoleSettings(BaseModel):
    """Which behavioural file (and optionally runner and model) plays one workflow role."""

    model_config = ConfigDict(extra="forbid", alias_generator=_kebab, populate_by_name=True,
                              defer_build=True)

    agent: str | None = Field(None, description="Agent name (`.claude/agents/<name>.md`) or a "
                              "path; the role's default agent when left out.")
    runner: str | None = Field(None, description="Runner for this role only.")
    model: str | None = Field(None, description="Model override for this role.")


DEFAULT_ROLE_AGENTS = {
    "research": "research-specialist",
    "plan": "plan-architect",
    "revise": "plan-architect",
    "implement": "implementation-executor",
    "debug": "debug-analyst",
    "document": "doc-writer",
    "classifier": "workflow-classifier",
    "research-coordinator": "research-coordinator",
    "research-supervisor": "research-sub-supervisor",
    "implement-coordinator": "implementer-coordinator",
}


class CliSettings(BaseModel):
    """What every agent CLI runner takes: its program, its model, more argv elements."""

    model_config = ConfigDict(extra="forbid", alias_generator=_kebab, populate_by_name=True,
                              defer_build=True)

    executable: str = Field(description="Program name or path of the CLI.")
    model: str | None = Field(None, description="Model for every step of this runner. For "
                              "codex, gemini and opencode the only way to choose one "
                              "(front-matter models are Claude models and are not passed); "
                              "for claude it overrides the agent's front matter `model`.")
    extra_args: list[str] = Field(default_factory=list, description="More argv elements.")


class ClaudeSettings(CliSettings):
    """`[workflow.claude]`: how the claude runner starts Claude Code (`claude -p`)."""

    executable: str = Field("claude", description="Program name or path of the claude CLI.")
    permission_mode: str = Field(
        "acceptEdits", description="--permission-mode. acceptEdits lets the agent write its "
        "artifact (outside `.claude/`, which Claude Code protects in every mode but "
        "bypassPermissions) and other files in the workspace without prompting.")
    fallback_model: str | None = Field(None, description="--fallback-model when the main model "
                                       "is overloaded; default: the front matter's.")


class CodexSettings(CliSettings):
    """`[workflow.codex]`: how the codex runner starts Codex (`codex exec --json`)."""

    executable: str = Field("codex", description="Program name or path of the codex CLI.")
    sandbox: str | None = Field("workspace-write", description="--sandbox: read-only, "
                                "workspace-write or danger-full-access; \"\" passes none "
                                "(codex's own configuration decides).")
    usage_telemetry: bool = Field(
        True, description="Point codex's OpenTelemetry log export at Baton for each step "
        "(`-c otel.exporter=…` to a 127.0.0.1 port Baton serves, prompts not logged): its "
        "`exec --json` reports tokens only when the step ends, its telemetry per model "
        "response, so budgets see a looping codex while it runs. false leaves codex's own "
        "[otel] settings in charge; then only max-turns stops a looping codex mid-step.")


class GeminiSettings(CliSettings):
    """`[workflow.gemini]`: how the gemini runner starts Gemini CLI (`gemini -p`)."""

    executable: str = Field("gemini", description="Program name or path of the gemini CLI.")
    approval_mode: str | None = Field("auto_edit", description="--approval-mode: default, "
                                      "auto_edit, yolo or plan; \"\" passes none (gemini's "
                                      "own settings decide).")
    skip_trust: bool = Field(
        True, description="--skip-trust: Baton launches agents only in a workspace the user "
        "trusts (a `baton run` there, or a trusted editor workspace), so gemini is told to "
        "trust it too; false leaves gemini's own folder trust in charge.")
    usage_telemetry: bool = Field(
        True, description="Point gemini's OpenTelemetry export at Baton for each step "
        "(GEMINI_TELEMETRY_* variables: a 127.0.0.1 port Baton serves, prompts not logged): "
        "its stream-json reports tokens only when the step ends, its telemetry per model "
        "request (batched up to 5 s), so budgets see a looping gemini while it runs. false "
        "leaves gemini's own telemetry settings in charge; then only max-turns stops a "
        "looping gemini mid-step.")


class OpencodeSettings(CliSettings):
    """`[workflow.opencode]`: how the opencode runner starts OpenCode (`opencode run`)."""

    executable: str = Field("opencode", description="Program name or path of the opencode CLI.")
    model: str | None = Field(None, description="-m provider/model (e.g. "
                              "\"anthropic/claude-sonnet-4-5\") for every step; unset: "
                              "opencode's own configuration chooses.")
    agent: str | None = Field(None, description="--agent: the opencode agent that runs each "
                              "step (e.g. \"build\"); unset: opencode's default agent.")
    edit: str | None = Field(
        "allow", description="opencode's `edit` permission for each step (allow, ask or "
        "deny; it covers write, edit and patch), passed in OPENCODE_PERMISSION: headless "
        "`opencode run` rejects every permission it would ask for, so the agent can write "
        "its artifact only where edits are allowed. \"\" passes none (opencode's own "
        "configuration decides).")


class ModelPrice(BaseModel):
    """What one model costs, in US dollars per million tokens (`[workflow.prices]`)."""

    model_config = ConfigDict(extra="forbid", alias_generator=_kebab, populate_by_name=True,
                              defer_build=True)

    input: float = Field(ge=0, description="Per million input tokens.")
    output: float = Field(ge=0, description="Per million output tokens.")
    cached_input: float | None = Field(None, ge=0, description="Per million input tokens read "
                                       "from the prompt cache (default: the input price).")
    cache_write: float | None = Field(None, ge=0, description="Per million input tokens "
                                      "written to the prompt cache (default: the input price).")


DEFAULT_PRICES: dict[str, ModelPrice] = {
    # What Claude Code 2.1.331 itself charges: its `total_cost_usd` for each kind of token.
    # For haiku it charges a fifth of this on small prompts (100,000 tokens); the table keeps
    # the higher rate, so a budget errs on the early side. Claude's own final figure replaces
    # these estimates when a step ends.
    "claude-opus-5-5": ModelPrice(input=4.0, output=20.0, cached_input=0.2, cache_write=5.0),
    "claude-sonnet-5-5": ModelPrice(input=2.0, output=10.0, cached_input=0.1, cache_write=2.5),
    "claude-haiku-5-5": ModelPrice(input=0.5, output=2.5, cached_input=0.05, cache_write=0.625),
    "gpt-5.5": ModelPrice(input=1.25, output=10.0, cached_input=0.125, cache_write=None),
    "gemini-2.5-pro": ModelPrice(input=1.25, output=10.0, cached_input=0.31, cache_write=None),
    "gemini-2.5-flash": ModelPrice(input=0.30, output=2.50, cached_input=0.075,
                                   cache_write=None),
}
"""Baton's price table for the models its runners use by default. Codex and gemini report
tokens but no dollars, so a budget in dollars can only stop them through this table; a model
missing from it (and from the user's `[workflow.prices]`) is not priced, and then only
`max-tokens` and `max-turns` can stop its steps."""


class WorkflowSettings(BaseModel):
    """`[tool.baton.workflow]`: how `baton run` launches agents and paces the work."""

    model_config = ConfigDict(extra="forbid", alias_generator=_kebab, populate_by_name=True,
                              defer_build=True)

    runner: str = Field(
        "auto", description="script, claude, codex, gemini, opencode or command; `auto` is the "
        "first agent CLI installed and logged in (claude, then codex, then gemini, then "
        "opencode), and a run stops "
        "when there is none. `script` is the deterministic offline demo agent (placeholder "
        "code): it runs only where it is configured.")
    command: list[str] = Field(
        default_factory=list, description="argv template of the `command` runner; "
        "placeholders {prompt_file} {artifact} {step} {role} {workspace} {workdir}.")
    script: str | None = Field(None, description="Agent script of the `script` runner "
                               "(default: the built-in deterministic agent).")
    specs_dir: str = Field(
        "auto", description="Where topic directories (reports, plans, summaries) are created, "
        "relative to the workspace. `auto`: `specs/` if it exists, else an existing "
        "`.claude/specs/`, else `specs/`; always `specs/` when a claude agent writes them "
        "(Claude Code refuses writes under `.claude/`).")
    claude: ClaudeSettings = Field(default_factory=_defaults_of(ClaudeSettings),
                                   description="[workflow.claude]: the claude runner.")
    codex: CodexSettings = Field(default_factory=_defaults_of(CodexSettings),
                                 description="[workflow.codex]: the codex runner.")
    gemini: GeminiSettings = Field(default_factory=_defaults_of(GeminiSettings),
                                   description="[workflow.gemini]: the gemini runner.")
    opencode: OpencodeSettings = Field(default_factory=_defaults_of(OpencodeSettings),
                                       description="[workflow.opencode]: the opencode runner.")
    agents: dict[str, str | AgentRoleSettings] = Field(
        default_factory=dict, description="Role (classifier, research, research-coordinator, "
        "research-supervisor, plan, revise, implement, implement-coordinator, debug, "
        "document) → agent name, or a table with agent/runner/model. Configuring "
        "`classifier` makes initialize ask that agent for the classification (otherwise: the "
        "user's flags, then keywords).")
    research_mode: Literal["supervisor", "planning", "agent"] = Field(
        "supervisor", description="Four or more research topics: `supervisor` runs the "
        "workers under the supervisor tier; `planning` first asks the research-coordinator "
        "agent for an invocation plan (INVOCATION_PLAN_READY) and runs that; `agent` lets a "
        "research-supervisor agent run the workers itself (every report is still checked "
        "and its metadata extracted by Baton).")
    implement_mode: Literal["waves", "iterations"] = Field(
        "waves", description="`waves`: one implementation agent per phase, waves in parallel; "
        "`iterations`: the implement-coordinator agent runs iteration after iteration, "
        "driven by its brief summary (work_remaining, requires_continuation).")
    max_iterations: int = Field(5, ge=1, le=100, description="Iterations of the implement "
                                "loop before it halts with halt_reason max_iterations.")
    context_budget: int = Field(
        200_000, ge=1, description="Tokens the orchestrator may receive from the iteration "
        "loop's brief summaries before it halts with halt_reason context_threshold.")
    test_command: list[str] = Field(
        default_factory=list, description="argv of the test state; exit 0 = tests pass. "
        "Empty: `bash .claude/tests/run_all_tests.sh` when the workspace has it (the seeds' "
        "fallback), else the test state is skipped (never reported as passed).")
    keep_runs: int = Field(
        20, ge=0, description="`baton clean --runs` keeps the histories of this many finished "
        "(complete) workflows, the newest; failed, cancelled, interrupted and running ones "
        "are always kept.")
    keep_runs_days: float = Field(
        30.0, ge=0, description="`baton clean --runs` removes a finished workflow's history "
        "once it finished more than this many days ago, even among the newest `keep-runs`.")
    max_parallel: int = Field(3, ge=1, le=64, description="Phases of one wave run at once.")
    isolation: Literal["worktree", "none"] = Field(
        "worktree", description="In a git repository, `worktree` runs each phase in its own "
        "git worktree (`.claude/worktrees/`, branch `baton/<workflow>/phase-<N>`) and merges "
        "it into your branch when the wave ends, one run at a time; every phase becomes a "
        "merge commit. `none`: every phase runs in the working tree and nothing is committed "
        "(as outside git).")
    research_parallel: int = Field(4, ge=1, le=64, description="Research topics run at once.")
    timeout: float = Field(300.0, gt=0, description="Seconds an agent step may take.")
    implement_timeout: float = Field(600.0, gt=0, description="Seconds for an implement step.")
    test_timeout: float = Field(900.0, gt=0, description="Seconds for the test command.")
    stall_timeout: float = Field(180.0, gt=0, description="Seconds without output before an "
                                 "agent is considered stalled and killed.")
    attempts: int = Field(3, ge=1, le=10, description="Attempts per step (transient failures).")
    state_retries: int = Field(2, ge=0, le=10, description="Re-runs of a state whose steps "
                               "failed transiently after all their attempts.")
    backoff: float = Field(2.0, ge=0, description="First retry delay in seconds (doubles, "
                           "with jitter).")
    backoff_max: float = Field(60.0, ge=0, description="Longest retry delay.")
    debug_mode: Literal["loop", "report"] = Field(
        "loop", description="What failing tests lead to (full-implementation, test-and-debug). "
        "`loop`: debug → test again, up to max-debug-iterations times, then the workflow fails "
        "in test (resumable). `report`: the seeds' ending — one debug report, then the workflow "
        "ends `complete` with the outcome `needs_attention` (the report under Artifacts, a "
        "re-run hint); nothing is tested again.")
    max_debug_iterations: int = Field(2, ge=0, le=20, description="`loop`: test → debug loops "
                                      "before the workflow fails with tests still failing; 0 "
                                      "runs no debug agent. `report`: 0 ends the workflow "
                                      "`needs_attention` without a debug report (the test "
                                      "output is the artifact); any other value: one report.")
    kill_grace: float = Field(5.0, ge=0, description="Seconds between SIGTERM and SIGKILL.")
    version_timeout: float = Field(
        90.0, gt=0, description="Seconds preflight waits for each agent CLI to answer "
        "`--version` (a node CLI starting on a loaded machine can take half a minute).")
    max_budget_usd: float | None = Field(
        None, gt=0, description="US dollars the whole workflow may spend. Checked as each "
        "agent CLI's stream reports usage: the running agent is stopped the moment the "
        "workflow's total (this step so far included) reaches it, and no further step starts; "
        "the workflow stays resumable (raise it and resume). Tokens a CLI reports without a "
        "price are priced from `prices`.")
    max_tokens: int | None = Field(
        None, gt=0, description="Likewise for the tokens the agent CLIs reported.")
    max_turns: int | None = Field(
        None, gt=0, description="Model requests one attempt of one agent step may make (a "
        "looping agent is stopped when it makes more); claude's stream reports each request, "
        "codex's and gemini's each tool call, each of which the model is asked about again.")
    prices: dict[str, ModelPrice] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES), description="Model id → "
        "{ input, output, cached-input, cache-write } in US dollars per million tokens, "
        "merged over Baton's table (claude-opus-5-5, claude-sonnet-5-5, claude-haiku-5-5, "
        "gpt-5.5, gemini-2.5-pro, gemini-2.5-flash). A model with no price can only be stopped by "
        "max-tokens or max-turns.")

    @model_validator(mode="before")
    @classmethod
    def _old_claude_key(cls, data: object) -> object:
        """0.1's `claude-permission-mode` is `[workflow.claude] permission-mode` now."""
        if isinstance(data, dict):
            for old in ("claude-permission-mode", "claude_permission_mode"):
                if old in data:
                    data = dict(data)
                    mode = data.pop(old)
                    claude = dict(data.get("claude") or {})
                    claude.setdefault("permission-mode", mode)
                    data["claude"] = claude
        return data

    @field_validator("prices")
    @classmethod
    def _over_defaults(cls, value: dict[str, ModelPrice]) -> dict[str, ModelPrice]:
        """A user's `[workflow.prices]` adds to Baton's table and overrides its entries."""
        return {**DEFAULT_PRICES, **value}

    def role(self, role: str) -> AgentRoleSettings:
        value = self.agents.get(role)
        if isinstance(value, AgentRoleSettings):
            if value.agent:
                return value
            return value.model_copy(update={"agent": DEFAULT_ROLE_AGENTS.get(role, role)})
        return AgentRoleSettings(agent=value or DEFAULT_ROLE_AGENTS.get(role, role))


class BatonConfig(BaseModel):
    """Every setting has a default so an empty configuration is valid."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=_kebab, populate_by_name=True, frozen=False,
        defer_build=True,
    )

    select: list[str] = Field(
        default_factory=list,
        description="Rule codes or code prefixes to enable (e.g. `BTN1`); empty enables all.",
    )
    ignore: list[str] = Field(
        default_factory=list, description="Rule codes or prefixes to disable."
    )
    severity: dict[str, Severity] = Field(
        default_factory=dict, description="Per-rule severity overrides, e.g. `BTN120 = \"error\"`."
    )
    exclude: list[str] = Field(
        default_factory=list,
        description="Glob patterns (relative to the workspace root) of files never checked.",
    )
    required_metadata: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REQUIRED_METADATA),
        description="Metadata keys every G1/G2 plan must have.",
    )
    required_metadata_g3: list[str] = Field(
        default_factory=lambda: list(DEFAULT_REQUIRED_METADATA_G3),
        description="Metadata keys every G3 plan (bullets under the title) must have.",
    )
    conventions: dict[str, Literal["auto", "on", "off"]] = Field(
        default_factory=dict,
        description="Convention name (claude-code, plan, checkbox-plan, plan-standard, "
        "task-plan, workflow-bash, script-blocks, workflow-agents, task-registry, markdown, "
        "baton) → "
        "`auto` (apply its rules to files that follow it, the default), `on` (to every file "
        "of its kinds) or `off`; `baton rule CODE` names a rule's convention.")
    shellcheck: Literal["auto", "all", "off"] = Field(
        "auto",
        description="Run ShellCheck (BTN330) on the bash blocks of commands: `auto` only on "
        "commands whose blocks are scripts run as written (the `script-blocks` convention: "
        "they use the seeds' state library or `source .claude/lib/…`), `all` on every "
        "command, `off` never. `true` reads as `all`, `false` as `off`.")
    shellcheck_checks: list[str] = Field(
        default_factory=lambda: ["default"],
        description="ShellCheck codes reported by BTN330: `default` (parse errors and a "
        "curated set of checks that mean a script is broken, see `baton rule BTN330`), "
        "`all`, or codes such as `SC2086`; e.g. `[\"default\", \"SC2086\"]`.",
    )
    shellcheck_exclude: list[str] = Field(
        default_factory=lambda: list(DEFAULT_SHELLCHECK_EXCLUDE),
        description="ShellCheck codes to skip (blocks read state from earlier blocks).",
    )
    bash_block_max_lines: int = Field(400, ge=1, description="Longest bash block tolerated.")
    max_file_size: int = Field(
        4 * 1024 * 1024, ge=1024, description="Files larger than this (bytes) are not parsed."
    )
    extra_tools: list[str] = Field(
        default_factory=list, description="Tool names to accept in `allowed-tools`."
    )
    extra_models: list[str] = Field(
        default_factory=list, description="Model names to accept in `model`."
    )
    extra_frontmatter_keys: list[str] = Field(
        default_factory=list, description="Command front matter keys to accept."
    )

    workflow: WorkflowSettings = Field(
        default_factory=_defaults_of(WorkflowSettings),
        description="How `baton run` launches agents.")

    @field_validator("shellcheck", mode="before")
    @classmethod
    def _shellcheck_bool(cls, value: object) -> object:
        """The setting was a boolean once: `true` ran ShellCheck on every command."""
        if isinstance(value, bool):
            return "all" if value else "off"
        return value

    @field_validator("shellcheck_checks")
    @classmethod
    def _known_checks(cls, value: list[str]) -> list[str]:
        out = [v.strip().lower() if v.strip().lower() in ("default", "all")
               else v.strip().upper() for v in value]
        bad = [v for v in out if v not in ("default", "all") and not re.fullmatch(r"SC\d{4}", v)]
        if bad:
            raise ValueError(f"unknown ShellCheck check {', '.join(bad)}: expected `default`, "
                             "`all` or codes like `SC2086`")
        return out

    @field_validator("conventions")
    @classmethod
    def _known_conventions(cls, value: dict[str, str]) -> dict[str, str]:
        known = [c.value for c in Convention]
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise ValueError(f"unknown convention {', '.join(unknown)}: expected one of "
                             f"{', '.join(known)}")
        return value

    @classmethod
    def defaults(cls) -> BatonConfig:
        """The configuration of a workspace that sets nothing: equal to `BatonConfig()`
        (`tests/model/test_config_defaults.py`), without building a validator, which took a
        measurable part of a small tree's check."""
        return cls.model_construct()

    def enabled(self, code: str) -> bool:
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        return not any(code.startswith(p) for p in self.ignore)

    def severity_for(self, code: str, default: Severity) -> Severity:
        return self.severity.get(code, default)

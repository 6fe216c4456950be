"""User configuration: `[tool.baton]` in pyproject.toml or `.claude/baton.toml`.

The settings are stdlib dataclasses (one definition: defaults, descriptions, bounds and
aliases), so a workspace that configures nothing, and the CLI's own flags, build them without
importing pydantic, which cost a small tree's cold check more than its rules. A configuration
file or an editor's settings are validated by a pydantic `TypeAdapter`, imported then: it reads
the bounds and descriptions from each field's `metadata` and the aliases from
`__pydantic_config__`, and the JSON schema (`baton schema`) is generated the same way."""

from __future__ import annotations

import dataclasses
import re
from enum import Enum
from typing import Any, ClassVar, Literal, TypeVar

from .base import Convention, Severity

DEFAULT_REQUIRED_METADATA = [
    "Date", "Feature", "Status", "Estimated Hours", "Standards File", "Research Reports",
]
DEFAULT_REQUIRED_METADATA_G3 = ["Task", "Status", "Effort"]
DEFAULT_SHELLCHECK_EXCLUDE = ["SC1090", "SC1091", "SC2154"]


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _f(default: Any = dataclasses.MISSING, *, factory: Any = dataclasses.MISSING,
       **meta: Any) -> Any:
    """A setting: its default (or default factory) and what pydantic reads when it validates
    a file (`description`, `ge`, `gt`, `le`: pydantic passes a dataclass field's metadata to
    its `Field`)."""
    return dataclasses.field(default=default, default_factory=factory, metadata=meta)


class ConfigField:
    """What `model_fields` tells of one setting (as pydantic's `FieldInfo` did)."""

    __slots__ = ("alias", "default", "description", "name", "required")

    def __init__(self, spec: dataclasses.Field[Any]) -> None:
        self.name = spec.name
        self.alias = _kebab(spec.name)
        self.description: str | None = spec.metadata.get("description")
        self.required = spec.default is dataclasses.MISSING \
            and spec.default_factory is dataclasses.MISSING
        factory = spec.default_factory
        self.default: Any = factory() if factory is not dataclasses.MISSING else (
            None if spec.default is dataclasses.MISSING else spec.default)

    def is_required(self) -> bool:
        return self.required


class _FieldsOf:
    def __get__(self, obj: object, owner: type) -> dict[str, ConfigField]:
        return {f.name: ConfigField(f) for f in dataclasses.fields(owner)}


_S = TypeVar("_S", bound="Settings")
_ADAPTERS: dict[type, Any] = {}


def _plain(value: Any, as_json: bool, by_alias: bool) -> Any:
    """What pydantic's `model_dump` gave: nested settings as dicts (keys kebab-case with
    `by_alias`, as the files write them), enums as their values in JSON mode."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {(_kebab(f.name) if by_alias else f.name):
                _plain(getattr(value, f.name), as_json, by_alias)
                for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v, as_json, by_alias) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v, as_json, by_alias) for k, v in value.items()}
    if as_json and isinstance(value, Enum):
        return value.value
    return value


class Settings:
    """What every configuration record shares: validation of untrusted input (pydantic,
    imported on first use), dumping, copying and the JSON schema."""

    __pydantic_config__: ClassVar[dict[str, Any]] = {
        "extra": "forbid", "alias_generator": _kebab, "populate_by_name": True}
    model_fields: ClassVar[Any] = _FieldsOf()

    @classmethod
    def _prepare(cls, data: Any) -> Any:
        """Input as it was once written, rewritten as it is now (before validation)."""
        return data

    @classmethod
    def _adapter(cls) -> Any:
        adapter = _ADAPTERS.get(cls)
        if adapter is None:
            from pydantic import TypeAdapter  # lazy: an unconfigured check never needs it

            adapter = _ADAPTERS[cls] = TypeAdapter(cls)
        return adapter

    @classmethod
    def model_validate(cls: type[_S], data: Any) -> _S:
        """`data` (TOML or JSON values, keys kebab-case or not) checked by pydantic: raises
        its ValidationError (a ValueError) naming each bad setting."""
        return cls._adapter().validate_python(cls._prepare(data))  # type: ignore[no-any-return]

    @classmethod
    def model_json_schema(cls, by_alias: bool = True,
                          mode: Literal["validation", "serialization"] = "validation"
                          ) -> dict[str, Any]:
        return cls._adapter().json_schema(by_alias=by_alias, mode=mode)  # type: ignore[no-any-return]

    @classmethod
    def defaults(cls: type[_S]) -> _S:
        """The settings of a workspace that sets nothing."""
        return cls()

    def model_dump(self, *, mode: str = "python", by_alias: bool = False) -> dict[str, Any]:
        return _plain(self, mode == "json", by_alias)  # type: ignore[no-any-return]

    def model_copy(self: _S, *, update: dict[str, Any] | None = None) -> _S:
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


@dataclasses.dataclass(kw_only=True)
class AgentRoleSettings(Settings):
    """Which behavioural file (and optionally runner and model) plays one workflow role."""

    agent: str | None = _f(None, description="Agent name (`.claude/agents/<name>.md`) or a "
                              "path; the role's default agent when left out.")
    runner: str | None = _f(None, description="Runner for this role only.")
    model: str | None = _f(None, description="Model override for this role.")


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


@dataclasses.dataclass(kw_only=True)
class CliSettings(Settings):
    """What every agent CLI runner takes: its program, its model, more argv elements."""

    executable: str = _f(description="Program name or path of the CLI.")
    model: str | None = _f(None, description="Model for every step of this runner. For "
                              "codex, gemini and opencode the only way to choose one "
                              "(front-matter models are Claude models and are not passed); "
                              "for claude it overrides the agent's front matter `model`.")
    extra_args: list[str] = _f(factory=list, description="More argv elements.")


@dataclasses.dataclass(kw_only=True)
class ClaudeSettings(CliSettings):
    """`[workflow.claude]`: how the claude runner starts Claude Code (`claude -p`)."""

    executable: str = _f("claude", description="Program name or path of the claude CLI.")
    permission_mode: str = _f(
        "acceptEdits", description="--permission-mode. acceptEdits lets the agent write its "
        "artifact (outside `.claude/`, which Claude Code protects in every mode but "
        "bypassPermissions) and other files in the workspace without prompting.")
    fallback_model: str | None = _f(None, description="--fallback-model when the main model "
                                       "is overloaded; default: the front matter's.")


@dataclasses.dataclass(kw_only=True)
class CodexSettings(CliSettings):
    """`[workflow.codex]`: how the codex runner starts Codex (`codex exec --json`)."""

    executable: str = _f("codex", description="Program name or path of the codex CLI.")
    sandbox: str | None = _f("workspace-write", description="--sandbox: read-only, "
                                "workspace-write or danger-full-access; \"\" passes none "
                                "(codex's own configuration decides).")
    usage_telemetry: bool = _f(
        True, description="Point codex's OpenTelemetry log export at Baton for each step "
        "(`-c otel.exporter=…` to a 127.0.0.1 port Baton serves, prompts not logged): its "
        "`exec --json` reports tokens only when the step ends, its telemetry per model "
        "response, so budgets see a looping codex while it runs. false leaves codex's own "
        "[otel] settings in charge; then only max-turns stops a looping codex mid-step.")


@dataclasses.dataclass(kw_only=True)
class GeminiSettings(CliSettings):
    """`[workflow.gemini]`: how the gemini runner starts Gemini CLI (`gemini -p`)."""

    executable: str = _f("gemini", description="Program name or path of the gemini CLI.")
    approval_mode: str | None = _f("auto_edit", description="--approval-mode: default, "
                                      "auto_edit, yolo or plan; \"\" passes none (gemini's "
                                      "own settings decide).")
    skip_trust: bool = _f(
        True, description="--skip-trust: Baton launches agents only in a workspace the user "
        "trusts (a `baton run` there, or a trusted editor workspace), so gemini is told to "
        "trust it too; false leaves gemini's own folder trust in charge.")
    usage_telemetry: bool = _f(
        True, description="Point gemini's OpenTelemetry export at Baton for each step "
        "(GEMINI_TELEMETRY_* variables: a 127.0.0.1 port Baton serves, prompts not logged): "
        "its stream-json reports tokens only when the step ends, its telemetry per model "
        "request (batched up to 5 s), so budgets see a looping gemini while it runs. false "
        "leaves gemini's own telemetry settings in charge; then only max-turns stops a "
        "looping gemini mid-step.")


@dataclasses.dataclass(kw_only=True)
class OpencodeSettings(CliSettings):
    """`[workflow.opencode]`: how the opencode runner starts OpenCode (`opencode run`)."""

    executable: str = _f("opencode", description="Program name or path of the opencode CLI.")
    model: str | None = _f(None, description="-m provider/model (e.g. "
                              "\"anthropic/claude-sonnet-4-5\") for every step; unset: "
                              "opencode's own configuration chooses.")
    agent: str | None = _f(None, description="--agent: the opencode agent that runs each "
                              "step (e.g. \"build\"); unset: opencode's default agent.")
    edit: str | None = _f(
        "allow", description="opencode's `edit` permission for each step (allow, ask or "
        "deny; it covers write, edit and patch), passed in OPENCODE_PERMISSION: headless "
        "`opencode run` rejects every permission it would ask for, so the agent can write "
        "its artifact only where edits are allowed. \"\" passes none (opencode's own "
        "configuration decides).")


REMOTE_STATES_DEFAULT = ["implement", "research"]
"""The states whose agent steps the Dask executor runs on workers unless configured."""


@dataclasses.dataclass(kw_only=True)
class DaskSettings(Settings):
    """`[workflow.dask]`: where the `dask` executor sends agent steps (`baton worker`)."""

    scheduler: str = _f(
        "local:2", description="`local:N` starts a scheduler and N `baton worker` processes "
        "on 127.0.0.1 for the run's lifetime; `tls://host:port` connects to a cluster with "
        "mutual TLS (ca, cert, key); `tcp://127.0.0.1:port` to a cluster on this machine "
        "(plain tcp:// to any other host is refused: agents' work would cross the network "
        "unauthenticated).")
    ca: str | None = _f(None, description="CA certificate (PEM) the cluster's certificates "
                           "are signed with (tls:// only).")
    cert: str | None = _f(None, description="This client's certificate (PEM, tls:// only).")
    key: str | None = _f(None, description="This client's private key (PEM, tls:// only).")
    remote_states: list[str] = _f(
        factory=lambda: list(REMOTE_STATES_DEFAULT), description="States whose agent steps "
        "run on workers: research, plan (their artifact comes back) and implement (each "
        "phase shipped as a git bundle and brought back as its branch; in a repository with "
        "`isolation = \"worktree\"` only). The others run on this machine.")
    remote: str | None = _f(
        None, description="A git remote of your repository (e.g. \"origin\") the workers "
        "fetch an implement phase's base history from: each phase's bundle then holds only "
        "the commits that remote lacks. Unset: the bundle holds the whole history.")
    connect_timeout: float = _f(60.0, gt=0, description="Seconds to wait for the scheduler "
                                   "and, for `local:N`, its workers to be ready.")


@dataclasses.dataclass(kw_only=True)
class ModelPrice(Settings):
    """What one model costs, in US dollars per million tokens (`[workflow.prices]`)."""

    input: float = _f(ge=0, description="Per million input tokens.")
    output: float = _f(ge=0, description="Per million output tokens.")
    cached_input: float | None = _f(None, ge=0, description="Per million input tokens read "
                                       "from the prompt cache (default: the input price).")
    cache_write: float | None = _f(None, ge=0, description="Per million input tokens "
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


@dataclasses.dataclass(kw_only=True)
class WorkflowSettings(Settings):
    """`[tool.baton.workflow]`: how `baton run` launches agents and paces the work."""

    runner: str = _f(
        "auto", description="script, claude, codex, gemini, opencode or command; `auto` is the "
        "first agent CLI installed and logged in (claude, then codex, then gemini, then "
        "opencode), and a run stops "
        "when there is none. `script` is the deterministic offline demo agent (placeholder "
        "code): it runs only where it is configured.")
    command: list[str] = _f(
        factory=list, description="argv template of the `command` runner; "
        "placeholders {prompt_file} {artifact} {step} {role} {workspace} {workdir}.")
    script: str | None = _f(None, description="Agent script of the `script` runner "
                               "(default: the built-in deterministic agent).")
    specs_dir: str = _f(
        "auto", description="Where topic directories (reports, plans, summaries) are created, "
        "relative to the workspace. `auto`: `specs/` if it exists, else an existing "
        "`.claude/specs/`, else `specs/`; always `specs/` when a claude agent writes them "
        "(Claude Code refuses writes under `.claude/`).")
    claude: ClaudeSettings = _f(factory=ClaudeSettings,
                                   description="[workflow.claude]: the claude runner.")
    codex: CodexSettings = _f(factory=CodexSettings,
                                 description="[workflow.codex]: the codex runner.")
    gemini: GeminiSettings = _f(factory=GeminiSettings,
                                   description="[workflow.gemini]: the gemini runner.")
    opencode: OpencodeSettings = _f(factory=OpencodeSettings,
                                       description="[workflow.opencode]: the opencode runner.")
    agents: dict[str, str | AgentRoleSettings] = _f(
        factory=dict, description="Role (classifier, research, research-coordinator, "
        "research-supervisor, plan, revise, implement, implement-coordinator, debug, "
        "document) → agent name, or a table with agent/runner/model. Configuring "
        "`classifier` makes initialize ask that agent for the classification (otherwise: the "
        "user's flags, then keywords).")
    research_mode: Literal["supervisor", "planning", "agent"] = _f(
        "supervisor", description="Four or more research topics: `supervisor` runs the "
        "workers under the supervisor tier; `planning` first asks the research-coordinator "
        "agent for an invocation plan (INVOCATION_PLAN_READY) and runs that; `agent` lets a "
        "research-supervisor agent run the workers itself (every report is still checked "
        "and its metadata extracted by Baton).")
    implement_mode: Literal["waves", "iterations"] = _f(
        "waves", description="`waves`: one implementation agent per phase, waves in parallel; "
        "`iterations`: the implement-coordinator agent runs iteration after iteration, "
        "driven by its brief summary (work_remaining, requires_continuation).")
    max_iterations: int = _f(5, ge=1, le=100, description="Iterations of the implement "
                                "loop before it halts with halt_reason max_iterations.")
    context_budget: int = _f(
        200_000, ge=1, description="Tokens the orchestrator may receive from the iteration "
        "loop's brief summaries before it halts with halt_reason context_threshold.")
    test_command: list[str] = _f(
        factory=list, description="argv of the test state; exit 0 = tests pass. "
        "Empty: `bash .claude/tests/run_all_tests.sh` when the workspace has it (the seeds' "
        "fallback), else the test state is skipped (never reported as passed).")
    keep_runs: int = _f(
        20, ge=0, description="`baton clean --runs` keeps the histories of this many finished "
        "(complete) workflows, the newest; failed, cancelled, interrupted and running ones "
        "are always kept.")
    keep_runs_days: float = _f(
        30.0, ge=0, description="`baton clean --runs` removes a finished workflow's history "
        "once it finished more than this many days ago, even among the newest `keep-runs`.")
    max_parallel: int = _f(3, ge=1, le=64, description="Phases of one wave run at once.")
    isolation: Literal["worktree", "none"] = _f(
        "worktree", description="In a git repository, `worktree` runs each phase in its own "
        "git worktree (`.claude/worktrees/`, branch `baton/<workflow>/phase-<N>`) and merges "
        "it into your branch when the wave ends, one run at a time; every phase becomes a "
        "merge commit. `none`: every phase runs in the working tree and nothing is committed "
        "(as outside git).")
    executor: Literal["local", "dask"] = _f(
        "local", description="Where agent steps run: `local` on this machine; `dask` on the "
        "workers of a Dask cluster ([workflow.dask], the `baton-lsp[dask]` extra, `baton "
        "worker`) for the states in [workflow.dask] remote-states.")
    dask: DaskSettings = _f(factory=DaskSettings,
                            description="[workflow.dask]: the Dask cluster of `executor = "
                            "\"dask\"`.")
    research_parallel: int = _f(4, ge=1, le=64, description="Research topics run at once.")
    timeout: float = _f(300.0, gt=0, description="Seconds an agent step may take.")
    implement_timeout: float = _f(600.0, gt=0, description="Seconds for an implement step.")
    test_timeout: float = _f(900.0, gt=0, description="Seconds for the test command.")
    stall_timeout: float = _f(180.0, gt=0, description="Seconds without output before an "
                                 "agent is considered stalled and killed.")
    attempts: int = _f(3, ge=1, le=10, description="Attempts per step (transient failures).")
    state_retries: int = _f(2, ge=0, le=10, description="Re-runs of a state whose steps "
                               "failed transiently after all their attempts.")
    backoff: float = _f(2.0, ge=0, description="First retry delay in seconds (doubles, "
                           "with jitter).")
    backoff_max: float = _f(60.0, ge=0, description="Longest retry delay.")
    debug_mode: Literal["loop", "report"] = _f(
        "loop", description="What failing tests lead to (full-implementation, test-and-debug). "
        "`loop`: debug → test again, up to max-debug-iterations times, then the workflow fails "
        "in test (resumable). `report`: the seeds' ending — one debug report, then the workflow "
        "ends `complete` with the outcome `needs_attention` (the report under Artifacts, a "
        "re-run hint); nothing is tested again.")
    max_debug_iterations: int = _f(2, ge=0, le=20, description="`loop`: test → debug loops "
                                      "before the workflow fails with tests still failing; 0 "
                                      "runs no debug agent. `report`: 0 ends the workflow "
                                      "`needs_attention` without a debug report (the test "
                                      "output is the artifact); any other value: one report.")
    kill_grace: float = _f(5.0, ge=0, description="Seconds between SIGTERM and SIGKILL.")
    version_timeout: float = _f(
        90.0, gt=0, description="Seconds preflight waits for each agent CLI to answer "
        "`--version` (a node CLI starting on a loaded machine can take half a minute).")
    max_budget_usd: float | None = _f(
        None, gt=0, description="US dollars the whole workflow may spend. Checked as each "
        "agent CLI's stream reports usage: the running agent is stopped the moment the "
        "workflow's total (this step so far included) reaches it, and no further step starts; "
        "the workflow stays resumable (raise it and resume). Tokens a CLI reports without a "
        "price are priced from `prices`.")
    max_tokens: int | None = _f(
        None, gt=0, description="Likewise for the tokens the agent CLIs reported.")
    max_turns: int | None = _f(
        None, gt=0, description="Model requests one attempt of one agent step may make (a "
        "looping agent is stopped when it makes more); claude's stream reports each request, "
        "codex's and gemini's each tool call, each of which the model is asked about again.")
    prices: dict[str, ModelPrice] = _f(
        factory=lambda: dict(DEFAULT_PRICES), description="Model id → "
        "{ input, output, cached-input, cache-write } in US dollars per million tokens, "
        "merged over Baton's table (claude-opus-5-5, claude-sonnet-5-5, claude-haiku-5-5, "
        "gpt-5.5, gemini-2.5-pro, gemini-2.5-flash). A model with no price can only be stopped by "
        "max-tokens or max-turns.")

    @classmethod
    def _prepare(cls, data: Any) -> Any:
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

    def __post_init__(self) -> None:
        """A user's `[workflow.prices]` adds to Baton's table and overrides its entries."""
        self.prices = {**DEFAULT_PRICES, **self.prices}

    def role(self, role: str) -> AgentRoleSettings:
        value = self.agents.get(role)
        if isinstance(value, AgentRoleSettings):
            if value.agent:
                return value
            return value.model_copy(update={"agent": DEFAULT_ROLE_AGENTS.get(role, role)})
        return AgentRoleSettings(agent=value or DEFAULT_ROLE_AGENTS.get(role, role))


@dataclasses.dataclass(kw_only=True)
class BatonConfig(Settings):
    """Every setting has a default so an empty configuration is valid."""

    select: list[str] = _f(
        factory=list,
        description="Rule codes or code prefixes to enable (e.g. `BTN1`); empty enables all.",
    )
    ignore: list[str] = _f(
        factory=list, description="Rule codes or prefixes to disable."
    )
    severity: dict[str, Severity] = _f(
        factory=dict, description="Per-rule severity overrides, e.g. `BTN120 = \"error\"`."
    )
    exclude: list[str] = _f(
        factory=list,
        description="Glob patterns (relative to the workspace root) of files never checked.",
    )
    required_metadata: list[str] = _f(
        factory=lambda: list(DEFAULT_REQUIRED_METADATA),
        description="Metadata keys every G1/G2 plan must have.",
    )
    required_metadata_g3: list[str] = _f(
        factory=lambda: list(DEFAULT_REQUIRED_METADATA_G3),
        description="Metadata keys every G3 plan (bullets under the title) must have.",
    )
    conventions: dict[str, Literal["auto", "on", "off"]] = _f(
        factory=dict,
        description="Convention name (claude-code, plan, checkbox-plan, plan-standard, "
        "task-plan, workflow-bash, script-blocks, workflow-agents, task-registry, markdown, "
        "baton) → "
        "`auto` (apply its rules to files that follow it, the default), `on` (to every file "
        "of its kinds) or `off`; `baton rule CODE` names a rule's convention.")
    shellcheck: Literal["auto", "all", "off"] = _f(
        "auto",
        description="Run ShellCheck (BTN330) on the bash blocks of commands: `auto` only on "
        "commands whose blocks are scripts run as written (the `script-blocks` convention: "
        "they use the seeds' state library or `source .claude/lib/…`), `all` on every "
        "command, `off` never. `true` reads as `all`, `false` as `off`.")
    shellcheck_checks: list[str] = _f(
        factory=lambda: ["default"],
        description="ShellCheck codes reported by BTN330: `default` (parse errors and a "
        "curated set of checks that mean a script is broken, see `baton rule BTN330`), "
        "`all`, or codes such as `SC2086`; e.g. `[\"default\", \"SC2086\"]`.",
    )
    shellcheck_exclude: list[str] = _f(
        factory=lambda: list(DEFAULT_SHELLCHECK_EXCLUDE),
        description="ShellCheck codes to skip (blocks read state from earlier blocks).",
    )
    bash_block_max_lines: int = _f(400, ge=1, description="Longest bash block tolerated.")
    max_file_size: int = _f(
        4 * 1024 * 1024, ge=1024, description="Files larger than this (bytes) are not parsed."
    )
    extra_tools: list[str] = _f(
        factory=list, description="Tool names to accept in `allowed-tools`."
    )
    extra_models: list[str] = _f(
        factory=list, description="Model names to accept in `model`."
    )
    extra_frontmatter_keys: list[str] = _f(
        factory=list, description="Command front matter keys to accept."
    )

    workflow: WorkflowSettings = _f(
        factory=WorkflowSettings,
        description="How `baton run` launches agents.")

    @classmethod
    def _prepare(cls, data: Any) -> Any:
        """The `shellcheck` setting was a boolean once: `true` ran ShellCheck on every
        command."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if isinstance(data.get("shellcheck"), bool):
            data["shellcheck"] = "all" if data["shellcheck"] else "off"
        if "workflow" in data:
            data["workflow"] = WorkflowSettings._prepare(data["workflow"])
        return data

    def __post_init__(self) -> None:
        """ShellCheck codes normalised and checked, convention names checked (pydantic
        reports a ValueError raised here with the message as is); severities as `Severity`
        also where Python code builds the settings (`BatonConfig(severity={...: "error"})`)."""
        if not isinstance(self.shellcheck_checks, list) or not isinstance(self.conventions,
                                                                          dict):
            # A stdlib dataclass does not enforce its annotations: pydantic refuses the type
            # itself after this runs, so mypy's narrowing is wrong here.
            return  # type: ignore[unreachable]
        self.severity = {code: Severity(level) for code, level in self.severity.items()}
        out = [v.strip().lower() if v.strip().lower() in ("default", "all")
               else v.strip().upper() for v in self.shellcheck_checks]
        bad = [v for v in out if v not in ("default", "all") and not re.fullmatch(r"SC\d{4}", v)]
        if bad:
            raise ValueError(f"shellcheck-checks: unknown ShellCheck check {', '.join(bad)}: "
                             "expected `default`, `all` or codes like `SC2086`")
        self.shellcheck_checks = out
        known = [c.value for c in Convention]
        unknown = sorted(set(self.conventions) - set(known))
        if unknown:
            raise ValueError(f"conventions: unknown convention {', '.join(unknown)}: expected "
                             f"one of {', '.join(known)}")

    def with_flags(self, flags: dict[str, Any]) -> BatonConfig:
        """This configuration with settings the CLI's own argument parser already checked
        (`--select`, `--ignore`, `--shellcheck`) put over it, as a later file would: no
        validation, so no pydantic, for them."""
        names = {_kebab(name): name for name in self.model_fields}
        update = {names.get(key, key): value for key, value in flags.items()}
        unknown = sorted(set(update) - set(names.values()))
        if unknown:
            raise ValueError(f"unknown setting {', '.join(unknown)}")
        return self.model_copy(update=update)

    def enabled(self, code: str) -> bool:
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        return not any(code.startswith(p) for p in self.ignore)

    def severity_for(self, code: str, default: Severity) -> Severity:
        return self.severity.get(code, default)

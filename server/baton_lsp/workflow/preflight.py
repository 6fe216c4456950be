"""Checks before any agent runs: what would otherwise fail after tokens were spent.

For every agent CLI a workflow will use: the program is found and answers `--version`,
credentials of some kind are present, the models the agent files ask for are models that CLI
serves, the artifact directory is one it may write in its permission mode, and gemini will
trust the folder. Each problem names its fix (and the file it is about, for the editor).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from ..errors import PathError
from ..model.agent import AgentFile
from ..model.base import Kind
from ..model.claude_models import claude_model_arg, looks_like_claude_model
from ..model.claude_permissions import DenyRule, Roots, SettingsScope, covers, parse_deny
from ..model.config import DEFAULT_ROLE_AGENTS, WorkflowSettings
from ..model.states import State
from ..parse import parse_bytes
from ..runs import confine
from .layout import AGENT_SCRATCH, contained, inside, specs_dir
from .runners import own_runner
from .runners.base import AUTH_FIXES

logger = logging.getLogger(__name__)

CLI_PACKAGES = {"claude": "@anthropic-ai/claude-code", "codex": "@openai/codex",
                "gemini": "@google/gemini-cli", "opencode": "opencode-ai"}
_CREDENTIAL_ENV = {
    "claude": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
               "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY"),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI",
               "GOOGLE_GENAI_USE_GCA"),
    # opencode's stored logins as JSON, and the key variables of its common providers
    "opencode": ("OPENCODE_AUTH_CONTENT", "ANTHROPIC_API_KEY", "OPENAI_API_KEY",
                 "GOOGLE_GENERATIVE_AI_API_KEY", "OPENROUTER_API_KEY"),
}

AUTO_ORDER = ("claude", "codex", "gemini", "opencode")
"""The agent CLIs `runner = "auto"` tries, in this order."""

MANAGED_SETTINGS = Path("/etc/claude-code/managed-settings.json")
MAX_CONFIG = 1 << 20
"""Bytes of an agent CLI's configuration file read at most."""
MAX_AGENT = 1 << 22
"""Bytes of an agent file read at most (the default `max-file-size` of `baton check`)."""
"""Claude Code's managed (organisation) settings on Linux; `managed-settings.d/*.json` beside
it are merged in."""


@dataclass(frozen=True)
class Problem:
    """One reason the workflow cannot start, with its fix; `path` is the file it is about."""

    message: str
    path: str | None = None
    line: int | None = None
    setting: str | None = None
    """The configuration key the fix is about (`workflow.codex.sandbox`), for the editor."""


@dataclass(frozen=True)
class AgentUse:
    """One role's agent as the workflow would launch it."""

    role: str
    runner: str
    agent_file: Path | None
    model: str | None
    fallback_model: str | None
    model_line: int | None = None


def agent_file(root: Path, name: str) -> Path | None:
    """The agent file a role names: `.claude/agents/<name>.md`, or a workspace path."""
    for cand in (root / ".claude" / "agents" / f"{name}.md", root / name):
        try:
            cand = contained(root, cand, "agent file")
        except PathError as exc:
            if os.path.lexists(cand):  # a link out of the workspace: said, never read
                _warn_once(f"not using the agent file {cand}: {exc}")
            continue
        if cand.is_file():
            return cand
        if os.path.lexists(cand):
            _warn_once(f"not using the agent file {cand}: it is not a regular file")
    return None


_warned: set[str] = set()


def _warn_once(text: str) -> None:
    """Preflight and every step look the agent up: one warning per process is enough."""
    if text not in _warned:
        _warned.add(text)
        logger.warning("%s", text)


def agent_use(root: Path, settings: WorkflowSettings, role: str,
              runner: str | None = None) -> tuple[AgentUse, tuple[str, ...]]:
    """The agent file a role runs, its runner, the model, fallback model and tools its
    front matter asks for (the role's `model` setting wins); `runner` is the run's own
    choice (`baton run --runner`), below a role's and above the configuration's."""
    rs = settings.role(role)
    path = agent_file(root, rs.agent) if rs.agent else None  # `role` always names one
    model, fallback, line = rs.model, None, None
    tools: tuple[str, ...] = ()
    if path is not None:
        try:
            doc = parse_bytes(Kind.AGENT, confine.read_bytes(root, path, MAX_AGENT),
                              str(path))
        except OSError:
            doc = None
        if isinstance(doc, AgentFile) and doc.frontmatter is not None:
            fm = {e.key: e for e in doc.frontmatter.entries}
            value = {k: e.value for k, e in fm.items()}
            if model is None and isinstance(value.get("model"), str):
                model, line = value["model"], fm["model"].range.start_line
            if isinstance(value.get("fallback-model"), str):
                fallback = value["fallback-model"]
            raw_tools = value.get("allowed-tools") or value.get("tools")
            if isinstance(raw_tools, str):
                tools = tuple(t.strip() for t in raw_tools.split(",") if t.strip())
            elif isinstance(raw_tools, list):
                tools = tuple(str(t) for t in raw_tools)
    return AgentUse(role, own_runner(rs.runner) or runner or settings.runner, path, model,
                    fallback,
                    line), tools


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def has_credentials(cli: str, root: Path, env: Mapping[str, str]) -> bool:
    """Whether `cli` has some way to authenticate (we cannot tell whether it is valid)."""
    if any(env.get(name) for name in _CREDENTIAL_ENV[cli]):
        return True
    home = _home(env)
    if cli == "claude":
        config = Path(env.get("CLAUDE_CONFIG_DIR") or home / ".claude")
        if (config / ".credentials.json").is_file():
            return True
        settings = [config / "settings.json", root / ".claude" / "settings.json",
                    root / ".claude" / "settings.local.json"]
        return any(_json_has(p, ("apiKeyHelper",), root)
                   or _json_has(p, ("env", "ANTHROPIC_API_KEY"), root)
                   for p in settings)
    if cli == "codex":
        codex_home = Path(env.get("CODEX_HOME") or home / ".codex")
        return (codex_home / "auth.json").is_file() or (codex_home / "config.toml").is_file()
    if cli == "opencode":
        return _opencode_credentials(root, env)
    gemini = home / ".gemini"
    return (gemini / "oauth_creds.json").is_file() or _json_has(
        gemini / "settings.json", ("security", "auth", "selectedType"), root)


def _opencode_credentials(root: Path, env: Mapping[str, str]) -> bool:
    """A login stored by `opencode auth login` (`$XDG_DATA_HOME/opencode/auth.json`), or a
    configuration with a `provider` section (its global files in `$XDG_CONFIG_HOME/opencode`,
    OPENCODE_CONFIG, OPENCODE_CONFIG_CONTENT, the project's opencode.json), where a key or a
    keyless local endpoint is set up."""
    home = _home(env)
    data = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    if (data / "opencode" / "auth.json").is_file():
        return True
    if '"provider"' in env.get("OPENCODE_CONFIG_CONTENT", ""):
        return True
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "opencode"
    files = [config / name for name in ("config.json", "opencode.json", "opencode.jsonc")]
    files += [root / "opencode.json", root / "opencode.jsonc"]
    if env.get("OPENCODE_CONFIG"):
        files.append(Path(env["OPENCODE_CONFIG"]))
    for path in files:
        try:  # JSONC allows comments, so the key is looked for as text
            if b'"provider"' in read_config(path, root):
                return True
        except OSError:
            continue
    return False


def auto_runner(root: Path, settings: WorkflowSettings, env: Mapping[str, str] | None = None,
                which: Callable[[str], str | None] = shutil.which) -> tuple[str | None, list[str]]:
    """What `runner = "auto"` means here: the first agent CLI (claude, then codex, then
    gemini, then opencode) that is installed and has credentials, by preflight's own checks
    — never the scripted demo agents, which would "implement" a real repository with
    placeholder code.
    Returns (that CLI or None, why each one before it was passed over)."""
    env = os.environ if env is None else env
    passed: list[str] = []
    for cli in AUTO_ORDER:
        exe = getattr(settings, cli).executable
        if which(exe) is None:
            passed.append(f"{cli}: `{exe}` is not on PATH (`npm install -g "
                          f"{CLI_PACKAGES[cli]}`)")
        elif not has_credentials(cli, root, env):
            passed.append(f"{cli}: installed but has no credentials ({AUTH_FIXES[cli]})")
        else:
            return cli, passed
    return None, passed


def read_config(path: Path, root: Path) -> bytes:
    """A configuration file of an agent CLI: one in the workspace `root` through `confine`
    (a link out of it is named, never read), one in the home directory or /etc as the CLI
    reads it (links followed); a FIFO is refused, never waited on, either way."""
    try:
        confine.relative(root, path)
    except confine.UnsafePath:  # not below the workspace: the user's own file
        return confine.read_regular(path, MAX_CONFIG)
    return confine.read_bytes(root, path, MAX_CONFIG)


def _json_has(path: Path, keys: tuple[str, ...], root: Path) -> bool:
    try:
        node: object = json.loads(read_config(path, root))
    except (OSError, ValueError):
        return False
    for key in keys:
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return bool(node)


def _gemini_trusts(root: Path, env: Mapping[str, str]) -> bool:
    if env.get("GEMINI_CLI_TRUST_WORKSPACE", "").lower() == "true":
        return True
    try:
        folders = json.loads(confine.read_regular(
            _home(env) / ".gemini" / "trustedFolders.json", MAX_CONFIG))
    except (OSError, ValueError):
        return False
    return isinstance(folders, dict) and any(
        value == "TRUST_FOLDER" and inside(Path(key), root) for key, value in folders.items())


class VersionTimeout(ValueError):
    """The CLI started but did not answer `--version` in time: slow (a loaded machine), not
    broken, so it is reported apart from a CLI that fails."""

    def __init__(self, executable: str, timeout: float) -> None:
        self.timeout = timeout
        super().__init__(f"`{executable} --version` did not answer in {timeout:g} s")


VersionOf = Callable[[str, Mapping[str, str], float], str]
"""How preflight asks a CLI for its version: (executable, environment, timeout in seconds)."""


def cli_version(executable: str, env: Mapping[str, str], timeout: float) -> str:
    """`<executable> --version`, last line; raises OSError/ValueError when it cannot answer
    and VersionTimeout when it does not answer within `timeout` seconds.

    The CLI runs in its own process group, killed whole on a timeout (before it is reaped,
    so the group id cannot have been reused): gemini relaunches itself as a child that
    keeps the output pipes open, and waiting for those would hang."""
    with subprocess.Popen([executable, "--version"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                          env=dict(env), start_new_session=True) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise VersionTimeout(executable, timeout) from None
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    if proc.returncode != 0 or not lines:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        raise ValueError(f"`{executable} --version` failed (exit {proc.returncode}): {tail}")
    return lines[-1]


def claude_settings_files(root: Path, env: Mapping[str, str],
                          managed: Path = MANAGED_SETTINGS) -> list[tuple[SettingsScope, Path]]:
    """Every settings file Claude Code reads its permission rules from for a run in `root`:
    managed (and its drop-ins), user (`CLAUDE_CONFIG_DIR` or `~/.claude`), project, local."""
    drop_ins: list[Path] = []
    with contextlib.suppress(OSError):
        drop_ins = sorted((managed.parent / "managed-settings.d").glob("*.json"))
    return [(SettingsScope.MANAGED, managed),
            *((SettingsScope.MANAGED, p) for p in drop_ins),
            (SettingsScope.USER, _claude_config_dir(env) / "settings.json"),
            (SettingsScope.PROJECT, root / ".claude" / "settings.json"),
            (SettingsScope.LOCAL, root / ".claude" / "settings.local.json")]


def _claude_config_dir(env: Mapping[str, str]) -> Path:
    return Path(env.get("CLAUDE_CONFIG_DIR") or _home(env) / ".claude")


def _deny_list(path: Path, notes: list[str], root: Path) -> list[str]:
    """`permissions.deny` of one settings file; a file that is missing has none, one that
    is unreadable or malformed gets a note (Claude Code reports it too) and none."""
    try:
        data: object = json.loads(read_config(path, root))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        why = confine.describe(exc) if isinstance(exc, OSError) else str(exc)
        notes.append(f"cannot read Claude Code settings {path} ({why}); its permission "
                     "rules were not checked")
        return []
    perms = data.get("permissions") if isinstance(data, dict) else None
    deny = perms.get("deny") if isinstance(perms, dict) else None
    if deny is None:
        return []
    if not isinstance(deny, list):
        notes.append(f"Claude Code settings {path}: permissions.deny is not a list; "
                     "ignored")
        return []
    return [rule for rule in deny if isinstance(rule, str)]


def artifact_probes(specs: Path, topic: Path | None) -> list[Path]:
    """One file of each kind a run writes: the classifier's answer, a report, the plan, a
    summary, a debug report (the names the states give them)."""
    topic = topic or specs / "001_topic"
    number = topic.name.split("_", 1)[0]
    return [specs / AGENT_SCRATCH / "classification_baton.json",
            topic / "reports" / f"001_{topic.name.split('_', 1)[-1]}.md",
            topic / "plans" / f"{topic.name}_plan.md",
            topic / "summaries" / f"{number}_workflow_summary.md",
            topic / "debug" / "001_debug_report.md"]


def claude_denials(root: Path, specs: Path, topic: Path | None, env: Mapping[str, str],
                   managed: Path = MANAGED_SETTINGS, notes: list[str] | None = None
                   ) -> list[Problem]:
    """Deny rules in Claude Code's settings that refuse an artifact this run must write:
    found now, they cost nothing; found by the agent, they cost a paid step and a barrier
    failure."""
    logged = notes is None
    notes = [] if notes is None else notes
    roots = Roots(cwd=PurePosixPath(root), home=PurePosixPath(_home(env)),
                  config_dir=PurePosixPath(_claude_config_dir(env)))
    probes = [PurePosixPath(p) for p in artifact_probes(specs, topic)]
    problems: list[Problem] = []
    for scope, path in claude_settings_files(root, env, managed):
        for text in _deny_list(path, notes, root):
            rule = parse_deny(text)
            if rule is None:
                continue
            hit = next((p for p in probes if covers(rule, scope, roots, p)), None)
            if hit is not None:
                problems.append(Problem(_denial_message(root, scope, path, rule, Path(hit)),
                                        setting="workflow.specs-dir"))
    if logged:
        for note in notes:
            logger.warning("%s", note)
    return problems


def _denial_message(root: Path, scope: SettingsScope, path: Path, rule: DenyRule,
                    hit: Path) -> str:
    where = f"Claude Code's {scope.value} settings ({path}) deny `{rule.text}`"
    if rule.path is None:
        return (f"{where}: the Write tool every artifact is written with; remove the rule "
                "(or run these agents with another runner)")
    shown = hit.relative_to(root) if inside(root, hit) else hit
    why = ("claude refuses to write it" if rule.tool == "Edit" else
           "claude refuses to write what it may not read, and later steps read it")
    return (f"{where}, which covers {shown}, an artifact this run writes ({why}): remove "
            "the rule, or set [workflow] specs-dir to a directory it does not cover")


def check(root: Path, settings: WorkflowSettings, uses: list[AgentUse], specs: Path,
          env: Mapping[str, str] | None = None,
          which: Callable[[str], str | None] = shutil.which,
          version_of: VersionOf = cli_version, *, topic: Path | None = None,
          managed: Path = MANAGED_SETTINGS, notes: list[str] | None = None,
          ) -> tuple[list[Problem], dict[str, str]]:
    """Problems that stop the workflow before any agent runs, and the CLI versions found.
    `version_of(executable, env, timeout)` raises OSError/ValueError when the CLI cannot
    answer, VersionTimeout when it is too slow to. `topic` is the topic directory the run
    will write in (a likely one when None); `notes` collects what was not checked."""
    env = os.environ if env is None else env
    problems: list[Problem] = []
    versions: dict[str, str] = {}
    clis = sorted({u.runner for u in uses if u.runner in CLI_PACKAGES})
    for cli in clis:
        exe = getattr(settings, cli).executable
        found = which(exe)
        if found is None:
            problems.append(Problem(
                f"the {cli} CLI (`{exe}`) is not on PATH: install it (`npm install -g "
                f"{CLI_PACKAGES[cli]}`) or set [workflow.{cli}] executable",
                setting=f"workflow.{cli}.executable"))
            continue
        try:
            versions[cli] = version_of(found, env, settings.version_timeout)
        except VersionTimeout as exc:
            problems.append(Problem(
                f"the {cli} CLI (`{exe}`) did not answer `--version` in {exc.timeout:g} s: "
                "if the machine is busy, raise [workflow] version-timeout (or check that "
                f"`{exe} --version` works)", setting="workflow.version-timeout"))
            continue
        except (OSError, ValueError) as exc:
            problems.append(Problem(f"the {cli} CLI does not run: {exc}",
                                    setting=f"workflow.{cli}.executable"))
            continue
        if not has_credentials(cli, root, env):
            problems.append(Problem(f"the {cli} CLI has no credentials: {AUTH_FIXES[cli]}",
                                    setting="workflow.runner"))
    if "claude" in clis and inside(root / ".claude", specs):
        problems.append(Problem(
            f"artifacts would be written under {specs.relative_to(root)}/, and Claude Code "
            "refuses writes under .claude/ in every permission mode but bypassPermissions: "
            "set [workflow] specs-dir = \"specs\" (or leave it at \"auto\")",
            setting="workflow.specs-dir"))
    if "claude" in clis:
        problems += claude_denials(root, specs, topic, env, managed, notes)
    problems += _write_modes(settings, clis)
    for cli in ("codex", "gemini"):
        model = getattr(settings, cli).model
        if cli in clis and model and looks_like_claude_model(model):
            problems.append(Problem(
                f"[workflow.{cli}] model = \"{model}\" is a Claude model, which {cli} does not "
                f"serve: set it to a model of {cli}'s provider", setting=f"workflow.{cli}.model"))
    model = settings.opencode.model
    if "opencode" in clis and model and "/" not in model.strip("/"):
        problems.append(Problem(
            f"[workflow.opencode] model = \"{model}\" names no provider: opencode takes "
            "provider/model (e.g. \"anthropic/claude-sonnet-4-5\")",
            setting="workflow.opencode.model"))
    if "gemini" in clis and not settings.gemini.skip_trust and not _gemini_trusts(root, env):
        problems.append(Problem(
            "gemini does not trust this folder and [workflow.gemini] skip-trust is false: set "
            "it to true, or GEMINI_CLI_TRUST_WORKSPACE=true, or trust the folder in gemini",
            setting="workflow.gemini.skip-trust"))
    for use in uses:
        if use.runner != "claude" or settings.claude.model:
            continue
        for key, name in (("model", use.model), ("fallback-model", use.fallback_model)):
            try:
                claude_model_arg(name)
            except ValueError as exc:
                where = str(use.agent_file) if use.agent_file else None
                problems.append(Problem(
                    f"agent `{use.agent_file.stem if use.agent_file else use.role}` "
                    f"({use.role}): `{key}: {name}`: {exc}, or set [workflow.claude] model",
                    where, use.model_line))
    return problems, versions


ROLES = tuple(DEFAULT_ROLE_AGENTS)
"""Every role a workflow may launch an agent for."""


_NO_WRITE = {
    ("claude", "permission_mode", "plan"): "Claude Code's plan mode refuses every write",
    ("codex", "sandbox", "read-only"): "codex's read-only sandbox refuses every write",
    ("gemini", "approval_mode", "default"):
        "gemini in its default approval mode offers no write tool when it runs headless",
    ("gemini", "approval_mode", "plan"): "gemini's plan mode refuses every write",
    ("opencode", "edit", "deny"): "opencode offers no write tool where `edit` is deny",
    ("opencode", "edit", "ask"):
        "headless opencode rejects every permission it would ask for, `edit` included",
}


def _write_modes(settings: WorkflowSettings, clis: list[str]) -> list[Problem]:
    """Modes in which the CLI cannot write the artifact every step must write. An empty
    mode passes no flag: the CLI's own configuration decides, which Baton cannot see."""
    out = []
    for (cli, attr, value), why in _NO_WRITE.items():
        cli_settings = getattr(settings, cli)
        if cli in clis and getattr(cli_settings, attr) == value:
            key = attr.replace("_", "-")
            default = type(cli_settings).model_fields[attr].default
            out.append(Problem(
                f"every step writes an artifact, and {why}: set [workflow.{cli}] {key} = "
                f"\"{default}\" (Baton's default)", setting=f"workflow.{cli}.{key}"))
    return out


def workspace_check(root: Path, settings: WorkflowSettings,
                    env: Mapping[str, str] | None = None,
                    which: Callable[[str], str | None] = shutil.which,
                    version_of: VersionOf = cli_version,
                    ) -> list[Problem]:
    """What `baton run` would refuse in this workspace with its configuration, for every
    role any scope may launch (the editor shows these before a workflow is started)."""
    uses = [agent_use(root, settings, role)[0] for role in ROLES]
    clis = {u.runner for u in uses}
    if not clis & set(CLI_PACKAGES):
        return []
    specs = specs_dir(root, settings.specs_dir, claude="claude" in clis)
    return check(root, settings, uses, specs, env, which, version_of)[0]


def roles_ahead(settings: WorkflowSettings, states: Sequence[State]) -> list[str]:
    """The roles a run through `states` launches agents for, in order."""
    by_state = {
        State.INITIALIZE: ["classifier"] if "classifier" in settings.agents else [],
        State.RESEARCH: ["research", *{"agent": ["research-supervisor"],
                                       "planning": ["research-coordinator"]}.get(
                                           settings.research_mode, [])],
        State.PLAN: ["plan"],
        State.IMPLEMENT: ["implement-coordinator" if settings.implement_mode == "iterations"
                          else "implement"],
        State.DEBUG: ["debug"], State.DOCUMENT: ["document"]}
    return [r for st in states for r in by_state.get(st, [])]

"""BTN701-BTN706: the front matter of OpenCode agents and commands, by OpenCode's rules.

OpenCode's formats are not Claude Code's: an agent's `tools` is a map of tool id to
boolean, `mode: subagent` is a setting, a model is `provider/model`, unknown agent keys
become model options. These rules read the front matter the way OpenCode reads it
(`parse.opencode`, whose docstrings name the OpenCode source of each fact) and never run
on `.claude/` files; Claude Code's rules never run on these.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from ..model.base import Convention, Finding, Kind, Range, Related, Severity
from ..model.opencode import (
    ACTION_ONLY,
    ACTIONS,
    AGENT_KEYS,
    CLAUDE_CODE_KEYS,
    COLOR_RE,
    COMMAND_KEYS,
    MODES,
    THEME_COLORS,
    OpenCodeAgent,
    OpenCodeCommand,
)
from .base import RuleContext, closest, rule
from .opencode_common import plugins_installed

OC = Convention.OPENCODE
AGENT = (Kind.OPENCODE_AGENT,)
BOTH = (Kind.OPENCODE_AGENT, Kind.OPENCODE_COMMAND)

OpenCodeFile = OpenCodeAgent | OpenCodeCommand

COMMAND_AGENT_SETTINGS = ("tools", "permission", "permissions", "allowed-tools",
                          "allowed_tools", "disallowedTools", "temperature", "top_p", "mode",
                          "steps", "maxSteps")
"""Agent settings written on a command: OpenCode's command schema drops them; the command
runs with the tools, permissions and sampling of the agent it names."""


def key_range(doc: OpenCodeFile, key: str, value: bool = False) -> Range:
    """Where `key` (or its value) is written in the front matter, else the block's start."""
    fm = doc.frontmatter
    entry = fm.get(key) if fm is not None else None
    if entry is not None:
        return entry.value_range if value else entry.key_range
    return Range.of_line(0, 0, 3)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _is_positive_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0


def _permission_problem(value: Any) -> str | None:
    """Why `value` is not an OpenCode permission (core/v1/config/permission.ts), or None."""
    if isinstance(value, str):
        return None if value in ACTIONS else f"`{value}` is not one of ask, allow, deny"
    if not isinstance(value, dict):
        return "expected ask, allow, deny or a map of tools to actions"
    for tool, rule_ in value.items():
        if isinstance(rule_, str):
            if rule_ not in ACTIONS:
                return f"`{tool}: {rule_}` is not one of ask, allow, deny"
            continue
        if tool in ACTION_ONLY:
            return f"`{tool}` takes ask, allow or deny, not a pattern map"
        if not isinstance(rule_, dict):
            return f"`{tool}` must be ask, allow, deny or a map of patterns to actions"
        for pattern, action in rule_.items():
            if action not in ACTIONS:
                return f"`{tool}` pattern `{pattern}: {action}` is not one of ask, allow, deny"
    return None


def agent_problems(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, problem) for every value OpenCode's agent schema refuses."""
    for key in ("model", "variant", "prompt", "description"):
        if key in data and not _is_str(data[key]):
            yield key, f"`{key}` must be a string"
    for key in ("temperature", "top_p"):
        if key in data and not _is_number(data[key]):
            yield key, f"`{key}` must be a number"
    for key in ("disable", "hidden", "hidden_from_cycle"):
        if key in data and not _is_bool(data[key]):
            yield key, f"`{key}` must be true or false"
    for key in ("steps", "maxSteps"):
        if key in data and not _is_positive_int(data[key]):
            yield key, f"`{key}` must be a positive integer"
    if "mode" in data and data["mode"] not in MODES:
        yield "mode", f"`mode: {data['mode']}` is not one of subagent, primary, all"
    if "tools" in data:
        tools = data["tools"]
        if not isinstance(tools, dict):
            shape = "a list" if isinstance(tools, (list, str)) else "empty" if tools is None \
                else "a single value"
            yield "tools", ("`tools` must be a map of tool ids to true/false (OpenCode's "
                            f"form, e.g. `write: false`), not {shape}")
        else:
            bad = [str(k) for k, v in tools.items() if not _is_bool(v)]
            if bad:
                yield "tools", f"`tools` values must be true or false (`{bad[0]}` is not)"
    if "options" in data and not isinstance(data["options"], dict):
        yield "options", "`options` must be a map"
    if "color" in data:
        color = data["color"]
        if not (isinstance(color, str) and (COLOR_RE.match(color) or color in THEME_COLORS)):
            yield "color", "`color` must be `#rrggbb` or a theme colour (primary, accent, …)"
    if "permission" in data:
        problem = _permission_problem(data["permission"])
        if problem:
            yield "permission", f"`permission`: {problem}"


def model_problem(model: str) -> str | None:
    """Why `model` is not OpenCode's `provider/model` (`Provider.parseModel`), or None."""
    provider, _, name = model.partition("/")
    if provider.strip() and name.strip():
        return None
    return (f"model `{model}` is not `provider/model`: OpenCode reads it as provider "
            f"`{provider}` with model id `{name}`, which no provider has")


def command_problems(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(key, problem) for every value OpenCode's command schema refuses."""
    for key in ("description", "agent", "model"):
        if key in data and not _is_str(data[key]):
            yield key, f"`{key}` must be a string"
    if "subtask" in data and not _is_bool(data["subtask"]):
        yield "subtask", "`subtask` must be true or false"


def _what(doc: OpenCodeFile) -> str:
    return "agent" if isinstance(doc, OpenCodeAgent) else "command"


@rule("BTN701", "opencode-frontmatter-unreadable", Severity.ERROR, BOTH, convention=OC)
def frontmatter_unreadable(doc: OpenCodeFile, ctx: RuleContext) -> Iterator[Finding]:
    """OpenCode cannot read the front matter: the file is skipped, or loaded without it.

    OpenCode reads front matter with gray-matter (js-yaml, which also refuses a key given
    twice in one mapping). When that fails it retries once, after rewriting every top-level
    `key: value` whose key is a plain word and whose unquoted value holds a colon as a block
    scalar (its `fallbackSanitization`). What happens next (checked against the `opencode`
    1.18.33 binary):

    - the retry reads it: the file is fine, and not reported;
    - the rewrite changed nothing (no such line; `argument-hint` has a hyphen, so it is
      never rewritten): gray-matter answers the retry from its cache with the file unparsed,
      so OpenCode loads the agent or command *without* front matter: no description,
      agent, model or mode, and the `---` block is sent to the model as part of the
      prompt or template;
    - the rewrite changed something and the retry fails too: the loader drops the file,
      and the command is missing from the menu, the agent from the task tool.

    Fix: quote the value (`argument-hint: "[--draft] [USER]"`), or remove the repeated key.

    Reported:

        ==> .opencode/commands/merge.md <==
        ---
        description: Create a pull request for the current branch
        argument-hint: [--draft] [--assignee USER]
        ---
        Create the pull request: $ARGUMENTS

    Not reported (OpenCode's retry quotes the colon in the description):

        ==> .opencode/commands/fix-it.md <==
        ---
        description: Scan files for FIX:, NOTE: and TODO: tags
        argument-hint: "[PATH...]"
        ---
        Scan $ARGUMENTS
    """
    if doc.load.error is None:
        return
    what = _what(doc)
    if doc.load.raw:
        outcome = (f"OpenCode loads the {what} without it (no description, agent or model) "
                   f"and sends the `---` block to the model as part of the "
                   f"{'prompt' if what == 'agent' else 'template'}")
    else:
        outcome = f"its retry after quoting values with colons fails too: it skips the {what}"
    yield ctx.finding(doc.load.error_range or Range.of_line(0, 0, 3),
                      f"OpenCode cannot read this front matter ({doc.load.error}): {outcome}")


@rule("BTN702", "opencode-invalid-value", Severity.ERROR, BOTH, convention=OC)
def invalid_value(doc: OpenCodeFile, ctx: RuleContext) -> Iterator[Finding]:
    """A front-matter value has a type or value OpenCode's schema refuses.

    OpenCode validates agents and commands against its config schema and refuses the whole
    configuration when one does not match (the loader throws `ConfigInvalidError`). An
    agent's `mode` is `subagent`, `primary` or `all`; `tools` is a map of tool ids to
    `true`/`false`; `permission` is `ask`/`allow`/`deny` or a map of tools to an action or
    to a map of patterns (`bash: {"git *": allow}`); `temperature` and `top_p` are numbers;
    `steps` a positive integer; `color` `#rrggbb` or a theme colour; `description`, `model`,
    `prompt` strings. A command's `description`, `agent` and `model` are strings and
    `subtask` is a boolean. An empty value (`description:`) is null, which a string field
    refuses too.

    Fix: write the value in OpenCode's form.

    Reported:

        ==> .opencode/agent/reviewer.md <==
        ---
        description: Reviews code
        mode: command
        ---
        Review the diff.

    Not reported:

        ==> .opencode/agent/reviewer.md <==
        ---
        description: Reviews code
        mode: subagent
        tools:
          write: false
          edit: false
        permission:
          bash:
            "git diff*": allow
            "*": ask
        ---
        Review the diff.
    """
    data = doc.load.data
    if data is None:
        return
    problems = agent_problems(data) if isinstance(doc, OpenCodeAgent) \
        else command_problems(data)
    for key, problem in problems:
        yield ctx.finding(key_range(doc, key, value=True),
                          f"{problem}: OpenCode refuses the configuration with this {_what(doc)}")


@rule("BTN703", "opencode-misplaced-key", Severity.WARNING, BOTH, fixable=True, convention=OC)
def misplaced_key(doc: OpenCodeFile, ctx: RuleContext) -> Iterator[Finding]:
    """A front-matter key OpenCode does not read, where a setting was clearly meant.

    Reported are Claude Code's keys and misspellings of OpenCode's: on an agent,
    `permissions`, `allowed-tools` or `disallowedTools` (OpenCode's key is `permission`;
    the rules written under another key are never enforced) and `maxTurns` (`steps`); on a
    command, agent settings (`tools`, `permission`, `allowed-tools`, `temperature`, `mode`,
    …: OpenCode's command schema is `description`, `agent`, `model` and `subtask` only, and
    the command runs with the tools and permissions of its agent), plus near misses of a
    known key (`descripton`, `sub_task`). Other unknown keys are reported by BTN704 (agents)
    or left alone (commands drop them; `argument-hint` is harmless there).

    Fix: rename the key (a quick fix for near misses), move tool rules to the agent's
    `permission`, or delete the key.

    Reported:

        ==> .opencode/agent/planner.md <==
        ---
        description: Creates implementation plans
        mode: subagent
        permissions:
          deny:
            - bash: ["rm -rf"]
        ---
        Plan the task.

    Not reported:

        ==> .opencode/agent/planner.md <==
        ---
        description: Creates implementation plans
        mode: subagent
        permission:
          bash:
            "rm -rf *": deny
        ---
        Plan the task.
    """
    data = doc.load.data
    fm = doc.frontmatter
    if data is None or fm is None:
        return
    agent = isinstance(doc, OpenCodeAgent)
    known = AGENT_KEYS if agent else {**COMMAND_KEYS, "name": ""}
    for key in data:
        if key in known:
            continue
        rng = key_range(doc, key)
        if agent and key in CLAUDE_CODE_KEYS:
            meant = CLAUDE_CODE_KEYS[key]
            yield ctx.finding(rng, f"OpenCode does not read `{key}` (Claude Code's key or a "
                                   f"misspelling): its agent setting is `{meant}`, so what "
                                   "is written here never applies")
            continue
        if not agent and key in COMMAND_AGENT_SETTINGS:
            yield ctx.finding(rng, f"OpenCode commands do not read `{key}`: a command runs "
                                   "with the tools, permissions and sampling of its agent "
                                   "(set them on the agent named in `agent`)")
            continue
        guess = closest(key, list(known), cutoff=0.8)
        if guess is not None and guess != key:
            yield ctx.finding(
                rng, f"`{key}` looks like a misspelling of `{guess}`: OpenCode does not read "
                     "it, so the setting never applies",
                fix=ctx.fix(f"Rename `{key}` to `{guess}`", ctx.edit(rng, guess)))


@rule("BTN704", "opencode-agent-option-key", Severity.INFO, AGENT, convention=OC)
def option_key(doc: OpenCodeAgent, ctx: RuleContext) -> Iterator[Finding]:
    """An agent key OpenCode's schema does not name: it becomes a model option.

    OpenCode keeps unknown agent keys instead of refusing them: it moves them into the
    agent's `options`, which are merged into the options sent to the model provider with
    every request. A project's own metadata (`version`, `timeout`, `context_loading`) is
    therefore not read by OpenCode as a setting, and may reach the provider's API. One
    finding per agent names them all (the others are related locations); keys covered by
    BTN703 (Claude Code's keys, misspellings) are not repeated here. Nothing is reported
    where plugins are installed (a `plugin` list in `opencode.json`, or files in
    `.opencode/plugin(s)/`): plugins receive the resolved configuration and may read the key.

    Fix: drop the key, move it to a comment or the body, or put genuine provider options
    under `options:`.

    Reported:

        ==> .opencode/agent/planner.md <==
        ---
        description: Creates implementation plans
        timeout: 1800
        ---
        Plan the task.

    Not reported:

        ==> .opencode/agent/planner.md <==
        ---
        description: Creates implementation plans
        steps: 30
        options:
          reasoningEffort: high
        ---
        Plan the task.
    """
    data = doc.load.data
    if data is None or doc.frontmatter is None:
        return
    keys: list[str] = []
    for key in data:
        if key in AGENT_KEYS or key in CLAUDE_CODE_KEYS:
            continue
        guess = closest(key, list(AGENT_KEYS), cutoff=0.8)
        if guess is not None and guess != key:
            continue  # BTN703's
        keys.append(key)
    if not keys or plugins_installed(ctx):
        return  # a plugin may read them (oh-my-opencode's `fallback_models`): not known here
    # One finding per agent (at its first such key, the others related): a project's own
    # metadata block is one decision, not one per key.
    named = ", ".join(f"`{k}`" for k in keys)
    many = len(keys) > 1
    yield ctx.finding(
        key_range(doc, keys[0]),
        f"OpenCode's agent schema has no {named}: "
        + ("OpenCode passes them to the model provider as options and reads no setting "
           "from them" if many else "OpenCode passes it to the model provider as an option "
           "and reads no setting from it"),
        related=[Related(path=ctx.path, range=key_range(doc, k),
                         message=f"`{k}` is passed to the model provider too")
                 for k in keys[1:]])


@rule("BTN705", "opencode-model-id", Severity.WARNING, BOTH, convention=OC)
def model_id(doc: OpenCodeFile, ctx: RuleContext) -> Iterator[Finding]:
    """`model` is not in OpenCode's `provider/model` form.

    OpenCode splits a model at its first `/` into provider and model id
    (`Provider.parseModel`). Claude Code's aliases (`opus`, `sonnet`, `haiku`, `inherit`)
    and bare model ids have no `/`: the provider becomes `opus` and the model id empty, and
    running the agent or command fails with "model not found".

    Fix: name the provider, e.g. `anthropic/claude-opus-4-1`, or drop `model` to use the
    default.

    Reported:

        ==> .opencode/agent/researcher.md <==
        ---
        description: Researches logic topics
        model: opus
        ---
        Research.

    Not reported:

        ==> .opencode/agent/researcher.md <==
        ---
        description: Researches logic topics
        model: anthropic/claude-opus-4-1
        ---
        Research.
    """
    data = doc.load.data
    if data is None:
        return
    model = data.get("model")
    if not isinstance(model, str):
        return
    problem = model_problem(model)
    if problem is not None:
        yield ctx.finding(key_range(doc, "model", value=True), problem)


@rule("BTN706", "opencode-subagent-missing-description", Severity.WARNING, AGENT,
      convention=OC)
def missing_description(doc: OpenCodeAgent, ctx: RuleContext) -> Iterator[Finding]:
    """A subagent has no `description`, so the task tool cannot offer it.

    OpenCode lists every agent that is not `mode: primary` in the task tool's description,
    each with its `description`; one without is listed as "This subagent should only be
    called manually by the user", so the model does not delegate to it.

    Fix: add one line saying when to use the agent.

    Reported:

        ==> .opencode/agent/tester.md <==
        ---
        mode: subagent
        ---
        Run the tests.

    Not reported:

        ==> .opencode/agent/orchestrator.md <==
        ---
        mode: primary
        ---
        Route the request.
    """
    data = doc.load.data
    if data is None or doc.is_mode or data.get("mode") == "primary" \
            or data.get("disable") is True:
        return  # a mode (`.opencode/mode/`) is a primary agent whatever its `mode:` says
    if isinstance(data.get("description"), str) and data["description"].strip():
        return
    rng = key_range(doc, "description") if "description" in data else \
        (doc.frontmatter.range if doc.frontmatter is not None else Range.of_line(0, 0, 0))
    yield ctx.finding(rng, "this agent can be a subagent but has no `description`: the task "
                           "tool lists it as one to be called manually only")

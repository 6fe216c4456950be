"""BTN820-BTN823: Claude Code's project MCP servers (`.mcp.json` at the repository root).

The shapes and messages are Claude Code's own (2.1: `claude mcp list` prints them as "MCP
config diagnostics"): a file that is not JSON or has no `mcpServers` object loads no server
at all; a server with an unknown `type`, a `url` but no `type`, or a field of the wrong
shape is skipped and the others load. `${VAR}` and `${VAR:-default}` are expanded by Claude
Code when it starts a server, so they are never reported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..model.base import Convention, Finding, Kind, Range, Severity
from ..model.claude_files import JsonFile
from ..parse.jsonpos import Path as JsonPath
from ..parse.jsonpos import Positions
from .base import RuleContext, closest, rule

CC = Convention.CLAUDE_CODE
MCP = (Kind.MCP_CONFIG,)

SERVER_TYPES = ("stdio", "sse", "http", "streamable-http", "ws")
"""The `type`s a project `.mcp.json` may use (Claude Code's "Valid types are: …")."""
HOST_ONLY_TYPES = ("sdk", "claudeai-proxy")
"""Types Claude Code knows but skips in a configuration file."""
_URL_TYPES = ("sse", "http", "streamable-http", "ws")
_RESERVED = frozenset(n for n in dir(object) if n.startswith("__")) | {"constructor"}
"""Names of `Object.prototype` that Claude Code refuses as server names."""
_INTERPRETERS = frozenset({"node", "python", "python3", "bash", "sh", "tsx", "ts-node",
                           "deno", "bun", "uv"})
_SCRIPT_EXT = (".js", ".mjs", ".cjs", ".ts", ".py", ".sh")
HOME_PATH = re.compile(r"(?:^|(?<=[\s\"'=:])|(?<=/mnt/[a-z]))(/home/|/Users/)([A-Za-z0-9._-]+)/"
                       r"|(?:^|(?<=[\s\"'=]))([A-Za-z]:[\\/]Users[\\/])([A-Za-z0-9._ -]+)[\\/]")
"""An absolute path into one user's home directory: `/home/alice/…`, `/Users/alice/…`,
`C:\\Users\\alice\\…` and WSL's `/mnt/c/Users/alice/…`."""
PLACEHOLDER_USERS = frozenset({"user", "username", "you", "me", "yourname", "your-name",
                               "name", "someone", "example", "runner"})


def _positions(ctx: RuleContext) -> Positions:
    pos = ctx.memo.get("mcp-positions")
    if pos is None:
        pos = ctx.memo["mcp-positions"] = Positions("\n".join(ctx.lines))
    return pos


def _at(ctx: RuleContext, path: JsonPath, key: bool = False) -> Range:
    pos = _positions(ctx)
    found = pos.key_range(path) if key else pos.value_range(path)
    while found is None and path:
        path = path[:-1]
        found = pos.key_range(path) if path else None
    return found or Range.of_line(0)


def misplaced(ctx: RuleContext) -> bool:
    """`.claude/.mcp.json`: Claude Code reads project servers from the root's file only."""
    return Path(ctx.path).parent.name == ".claude"


def _servers(doc: JsonFile, ctx: RuleContext | None = None) -> dict[str, Any] | None:
    if ctx is not None and misplaced(ctx):
        return None  # never read: BTN824 reports the file, not its contents
    data = doc.data
    if isinstance(data, dict) and isinstance(servers := data.get("mcpServers"), dict):
        return servers
    return None


@rule("BTN820", "mcp-config-unreadable", Severity.ERROR, MCP, convention=CC)
def config_unreadable(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """`.mcp.json` is not JSON or has no `mcpServers` object: Claude Code loads none of it.

    Claude Code parses the project's `.mcp.json` as strict JSON (no comments, no trailing
    commas) and requires `{"mcpServers": {"<name>": {...}}}`; otherwise it reports "MCP
    config is not a valid JSON" (or the schema error) and starts no server from the file. A
    top-level `servers` key (VS Code's name for it) is not read.

    Fix: correct the JSON syntax, or put the servers under `mcpServers`.

    Reported:

        ==> .mcp.json <==
        {
          "servers": {
            "docs": {"command": "npx", "args": ["-y", "docs-mcp"]}
          }
        }

    Not reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "docs": {"command": "npx", "args": ["-y", "docs-mcp"]}
          }
        }
    """
    if misplaced(ctx):
        return
    if doc.error is not None:
        yield ctx.finding(doc.error_range or Range.of_line(0),
                          f".mcp.json is not valid JSON ({doc.error}): Claude Code loads no "
                          "MCP server from it")
        return
    data = doc.data
    if not isinstance(data, dict):
        yield ctx.finding(Range.of_line(0), ".mcp.json is not a JSON object: expected "
                          "{\"mcpServers\": {...}}; Claude Code loads no MCP server from it")
        return
    servers = data.get("mcpServers")
    if isinstance(servers, dict):
        return
    if servers is None:
        hint = " (found `servers`: Claude Code reads only `mcpServers`)" \
            if "servers" in data else ""
        yield ctx.finding(_at(ctx, ("servers",), key=True) if "servers" in data
                          else Range.of_line(0),
                          f".mcp.json has no `mcpServers` object{hint}: Claude Code loads no "
                          "MCP server from it")
        return
    yield ctx.finding(_at(ctx, ("mcpServers",)),
                      f"`mcpServers` is a {type(servers).__name__.replace('dict', 'object')}, "
                      "expected an object keyed by server name: Claude Code loads no MCP "
                      "server from the file")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _string_map(value: Any) -> str | None:
    """Why `value` is not an object of strings (None when it is one)."""
    if not isinstance(value, dict):
        return "expected an object of strings"
    for k, v in value.items():
        if not isinstance(v, str):
            return f"`{k}` is {json_type(v)}, expected a string"
    return None


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "a string"


def server_problems(name: str, server: Any) -> list[tuple[tuple[str, ...], str]]:
    """(field path within the server, problem) for each reason Claude Code skips it."""
    if name in _RESERVED:
        return [((), f"\"{name}\" is a reserved MCP server name and is not loaded")]
    if not isinstance(server, dict):
        return [((), f"the server is {json_type(server)}, expected an object")]
    kind = server.get("type", "stdio")
    if not isinstance(kind, str):
        return [(("type",), f"`type` is {json_type(kind)}, expected one of "
                 + ", ".join(SERVER_TYPES))]
    if kind in HOST_ONLY_TYPES:
        return [(("type",), f"type \"{kind}\" is only registered by a host application, "
                 "never read from .mcp.json")]
    if kind not in SERVER_TYPES:
        guess = closest(kind, SERVER_TYPES)
        hint = f" (did you mean \"{guess}\"?)" if guess else ""
        return [(("type",), f"unknown MCP server type \"{kind}\"{hint}; valid types: "
                 + ", ".join(SERVER_TYPES))]
    problems: list[tuple[tuple[str, ...], str]] = []
    if kind == "stdio":
        if "type" not in server and "url" in server and "command" not in server:
            return [(("url",), "has a `url` but no `type`: add \"type\": \"http\" (or "
                     "\"sse\" / \"ws\")")]
        command = server.get("command")
        if not isinstance(command, str) or not command:
            problems.append(((), "a stdio server needs a non-empty string `command`"
                             if command is None or command == ""
                             else f"`command` is {json_type(command)}, expected a string"))
        if "args" in server and not _strings(server["args"]):
            problems.append((("args",), "`args` must be an array of strings"))
        if "env" in server:
            why = _string_map(server["env"])
            if why:
                problems.append((("env",), f"`env`: {why}"))
    elif kind in _URL_TYPES:
        if not isinstance(server.get("url"), str):
            problems.append(((), f"a {kind} server needs a string `url`"))
        if "headers" in server:
            why = _string_map(server["headers"])
            if why:
                problems.append((("headers",), f"`headers`: {why}"))
    return problems


@rule("BTN821", "mcp-server-skipped", Severity.ERROR, MCP, convention=CC)
def server_skipped(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """An MCP server of `.mcp.json` has a shape Claude Code skips: it never starts.

    Claude Code validates each server on its own and skips the ones that fail, saying so only
    in `claude mcp list`'s diagnostics: an unknown `type` (valid: `stdio`, `sse`, `http`,
    `streamable-http`, `ws`), a `url` without a `type`, a stdio server without a `command`, a
    URL server without a `url`, `args` that are not strings, `env` or `headers` values that are
    not strings (a number must be quoted), or a reserved name such as `constructor`.

    Fix: correct the field the message names (quote numbers in `env`, add `"type": "http"` to
    a URL server).

    Reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "search": {"command": "npx", "args": ["-y", "search-mcp"], "env": {"PORT": 8080}}
          }
        }

    Not reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "search": {"command": "npx", "args": ["-y", "search-mcp"],
                       "env": {"PORT": "8080", "TOKEN": "${SEARCH_TOKEN:-none}"}},
            "api": {"type": "http", "url": "https://example.com/mcp"}
          }
        }
    """
    servers = _servers(doc, ctx)
    if servers is None:
        return
    for name, server in servers.items():
        for where, problem in server_problems(name, server):
            rng = _at(ctx, ("mcpServers", name, *where), key=not where)
            yield ctx.finding(rng, f"MCP server `{name}` is skipped by Claude Code: {problem}")


_WINDOWS_ABSOLUTE = re.compile(r"^[A-Za-z]:[\\/]")


def _elsewhere(path: str) -> bool:
    """An absolute path (POSIX or a Windows drive), one under `~` or with a variable: the
    user's machine, not the project."""
    return "$" in path or os.path.isabs(path) or path.startswith("~") \
        or _WINDOWS_ABSOLUTE.match(path) is not None


def _script(command: str, args: Any) -> tuple[str, tuple[str | int, ...]] | None:
    """The project-relative program a stdio server runs, if it names one: the `command`
    itself (`./scripts/server.sh`) or an interpreter's script (`node mcp/server.js`)."""
    if not _elsewhere(command) and "/" in command:
        return command, ("command",)
    if os.path.basename(command) in _INTERPRETERS and _strings(args):
        for i, arg in enumerate(args):
            if arg.startswith("-") or arg in ("run",):
                continue
            if _elsewhere(arg) or not arg.endswith(_SCRIPT_EXT):
                return None
            return arg, ("args", i)
    return None


@rule("BTN822", "mcp-server-missing-script", Severity.ERROR, MCP, cross_file=True,
      convention=CC)
def missing_script(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """A stdio MCP server runs a project script that does not exist.

    Claude Code starts a stdio server as `command args…` from the project directory; a
    `command` such as `./scripts/mcp.sh`, or an interpreter's script (`node mcp/server.js`,
    `python tools/server.py`), that is not in the repository makes the server fail to start
    ("Failed to connect"). Paths with `${VAR}`, `~` or absolute paths are the user's and are
    not looked at.

    Fix: correct the path, or commit the script.

    Reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "tasks": {"command": "node", "args": ["mcp/tasks-server.js"]}
          }
        }

    Not reported:

        ==> mcp/tasks-server.js <==
        console.log("ok")
        ==> .mcp.json <==
        {
          "mcpServers": {
            "tasks": {"command": "node", "args": ["mcp/tasks-server.js"]},
            "lean": {"command": "uvx", "args": ["lean-lsp-mcp"]}
          }
        }
    """
    servers = _servers(doc, ctx)
    if servers is None or ctx.root is None:
        return
    root = os.path.normpath(ctx.root)
    for name, server in servers.items():
        if not isinstance(server, dict) or server.get("type", "stdio") != "stdio":
            continue
        command = server.get("command")
        if not isinstance(command, str) or not command:
            continue
        found = _script(command, server.get("args"))
        if found is None:
            continue
        target, where = found
        resolved = os.path.normpath(os.path.join(root, target))
        if not resolved.startswith(root + os.sep):
            continue  # outside the workspace: not looked at
        if ctx.exists(Path(resolved)):
            continue
        yield ctx.finding(_at(ctx, ("mcpServers", name, *where)),
                          f"MCP server `{name}` runs `{target}`, which does not exist in the "
                          "project: the server fails to start")


def home_path(text: str) -> str | None:
    """The `/home/<user>/`-style prefix `text` hard-codes, unless the user is a
    placeholder."""
    for m in HOME_PATH.finditer(text):
        prefix, user = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if user.lower() not in PLACEHOLDER_USERS and not user.startswith("<"):
            return f"{prefix}{user}{prefix[-1]}"
    return None


def _strings_in(value: Any, path: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings_in(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings_in(v, (*path, i))


@rule("BTN823", "mcp-hard-coded-home", Severity.WARNING, MCP, convention=CC)
def hard_coded_home(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """A server in the shared `.mcp.json` hard-codes one user's home directory.

    `.mcp.json` is checked in and shared by everyone who clones the project; a path such as
    `/home/alice/Projects/app` (or `/Users/alice/…`, `C:\\Users\\alice\\…`) exists only
    on its author's machine, so the server gets a
    wrong path everywhere else. Claude Code expands `${VAR}` and `${VAR:-default}` in
    `command`, `args`, `env`, `url` and `headers`, which is what makes a path portable.

    Fix: use a path relative to the project, or an environment variable
    (`"${HOME}/…"`, `"${PROJECT_DIR:-.}"`); keep personal servers in `~/.claude.json`.

    Reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "lean-lsp": {
              "type": "stdio",
              "command": "uvx",
              "args": ["lean-lsp-mcp"],
              "env": {"LEAN_PROJECT_PATH": "/home/benjamin/Projects/ProofChecker"}
            }
          }
        }

    Not reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "lean-lsp": {
              "type": "stdio",
              "command": "uvx",
              "args": ["lean-lsp-mcp"],
              "env": {"LEAN_PROJECT_PATH": "${PWD}", "EXAMPLE": "/home/user/project"}
            }
          }
        }
    """
    servers = _servers(doc, ctx)
    if servers is None:
        return
    for name, server in servers.items():
        found = [(path, prefix) for path, text in _strings_in(server, ("mcpServers", name))
                 for prefix in (home_path(text),) if prefix is not None]
        if not found:
            continue  # one finding per server: the fix is the same for all its paths
        path, prefix = found[0]
        more = f" (and {len(found) - 1} more of its values)" if len(found) > 1 else ""
        yield ctx.finding(_at(ctx, path),
                          f"MCP server `{name}` hard-codes `{prefix}`{more} in the shared "
                          ".mcp.json: the path exists only on one machine; use a relative "
                          "path or an environment variable")


@rule("BTN824", "mcp-config-misplaced", Severity.WARNING, MCP, convention=CC)
def config_misplaced(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """MCP servers are defined in `.claude/.mcp.json`, which Claude Code never reads.

    Claude Code reads a project's MCP servers from `.mcp.json` at the repository root (and
    the user's from `~/.claude.json`); a `.mcp.json` inside `.claude/` is not read, so the
    servers it defines never start (`claude mcp list` does not show them). A file there with
    no servers is left alone.

    Fix: move the file to the repository root (merge it with the root's `.mcp.json`).

    Reported:

        ==> .claude/.mcp.json <==
        {"mcpServers": {"playwright": {"command": "npx", "args": ["@playwright/mcp@latest"]}}}

    Not reported:

        ==> .claude/.mcp.json <==
        {"_comment": "Users can add their own servers here.", "mcpServers": {}}
    """
    if not misplaced(ctx) or not isinstance(doc.data, dict):
        return
    servers = doc.data.get("mcpServers")
    if not isinstance(servers, dict) or not servers:
        return
    names = ", ".join(f"`{n}`" for n in list(servers)[:5])
    more = f" and {len(servers) - 5} more" if len(servers) > 5 else ""
    yield ctx.finding(_at(ctx, ("mcpServers",), key=True),
                      f"Claude Code reads project MCP servers from .mcp.json at the repository "
                      f"root, not from .claude/: {names}{more} never start; move the file to "
                      "the root")


SECRET_KEY = re.compile(r"(?:^|[_-])(?:TOKEN|KEY|SECRET|PASSWORD|PASSWD|PAT|CREDENTIALS?)(?:$|[_-])"
                        r"|^(?:authorization|x-api-key|api-key|apikey)$", re.IGNORECASE)
"""An `env` or `headers` name that holds a credential (`GITHUB_TOKEN`, `API_KEY`,
`Authorization`); `KEY_FILE`-style paths are told apart by their value."""
SECRET_SHAPE = re.compile(
    r"\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_\w{30,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{35}|glpat-[\w-]{20,}"
    r"|[sr]k_live_[A-Za-z0-9]{20,})")
"""Token formats whose prefix says what they are (OpenAI/Anthropic, GitHub, Slack, AWS,
Google, GitLab, Stripe): a secret under any name."""
_OPAQUE = re.compile(r"^(?:Bearer\s+|Basic\s+|token\s+)?(?P<v>[A-Za-z0-9+/_.=-]{20,})$")
_PLACEHOLDER = re.compile(r"your|xxx|\.\.\.|<|>|change.?me|example|placeholder|replace|dummy|"
                          r"fake|test|sample|redacted|\*\*\*|none|null|token_here|secret_here",
                          re.IGNORECASE)
LITELLM_ENV = re.compile(r"^os\.environ/(?P<var>[A-Za-z_][A-Za-z0-9_]*)$")
"""LiteLLM's reference to an environment variable in its config (`os.environ/GITHUB_TOKEN`)."""


def _secret(name: str, value: str) -> bool:
    """A committed credential: a value in a known token format, or under a credential's name
    a long opaque string of letters and digits (not a path, a URL, a placeholder or a
    `${VAR}`)."""
    if "${" in value or _PLACEHOLDER.search(value):
        return False
    if SECRET_SHAPE.search(value):
        return True
    m = _OPAQUE.match(value.strip())
    if m is None or SECRET_KEY.search(name) is None:
        return False
    token = m["v"]
    return (any(c.isdigit() for c in token) and any(c.isalpha() for c in token)
            and "/" not in token.strip("/") and len(set(token)) >= 10)


def _named_values(server: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(field, name, value) of a server's `env` and `headers` strings."""
    for field in ("env", "headers"):
        values = server.get(field)
        if isinstance(values, dict):
            for name, value in values.items():
                if isinstance(value, str):
                    yield field, str(name), value


@rule("BTN825", "mcp-literal-secret", Severity.WARNING, MCP, convention=CC)
def literal_secret(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """A server's `env` or `headers` in the shared `.mcp.json` holds a literal credential.

    `.mcp.json` is committed and read by everyone who clones the project; a token written
    into it is published with the repository. Claude Code expands `${VAR}` (and
    `${VAR:-default}`) in `env` and `headers` when it starts a server, so the value can stay
    in each user's environment. Reported: a value in a known token format (`sk-…`, `ghp_…`,
    `xoxb-…`, `AKIA…`) or, under a credential's name (`…_TOKEN`, `…_KEY`, `Authorization`),
    a long opaque string; placeholders (`your-token-here`) and `${VAR}` are not. The message
    names the field, never the value.

    Fix: replace the value with `${NAME}`, set it in your environment, and revoke the token
    that was committed.

    Reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "athanor-agents": {
              "command": "python3", "args": ["scripts/mcp-athanor-agents.py"],
              "env": {"ATHANOR_AGENT_URL": "http://192.168.1.244:9000",
                      "ATHANOR_AGENT_API_TOKEN": "Q7vNw2kLp9RtXe4ZbHs8JmYc3FgUa6Di"}
            }
          }
        }

    Not reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "athanor-agents": {
              "command": "python3", "args": ["scripts/mcp-athanor-agents.py"],
              "env": {"ATHANOR_AGENT_URL": "http://192.168.1.244:9000",
                      "ATHANOR_AGENT_API_TOKEN": "${ATHANOR_AGENT_API_TOKEN}",
                      "GITHUB_TOKEN": "your-github-token-here"}
            }
          }
        }
    """
    servers = _servers(doc, ctx)
    if servers is None:
        return
    for name, server in servers.items():
        if not isinstance(server, dict):
            continue
        for field, key, value in _named_values(server):
            if _secret(key, value):
                yield ctx.finding(_at(ctx, ("mcpServers", name, field, key)),
                                  f"MCP server `{name}` has a literal credential in `{field}` "
                                  f"`{key}`: it is published with the shared .mcp.json; write "
                                  f"`${{{key if field == 'env' else 'VAR'}}}` and set it in the "
                                  "environment (and revoke the committed one)")


@rule("BTN826", "mcp-litellm-env-syntax", Severity.ERROR, MCP, fixable=True, convention=CC)
def litellm_env_syntax(doc: JsonFile, ctx: RuleContext) -> Iterator[Finding]:
    """A value written `os.environ/NAME` (LiteLLM's syntax): Claude Code passes it literally.

    LiteLLM's proxy config reads `os.environ/GITHUB_TOKEN` as "the variable GITHUB_TOKEN";
    Claude Code does not: it expands only `${NAME}` and `${NAME:-default}` (its expansion
    returns a string without `${` unchanged, in the 2.1.331 bundle), so the server gets the
    text `os.environ/GITHUB_TOKEN` as its token and every call is refused.

    Fix: write `${NAME}`.

    Reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "github": {"type": "stdio", "command": "npx",
                       "args": ["@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_TOKEN": "os.environ/GITHUB_TOKEN"}}
          }
        }

    Not reported:

        ==> .mcp.json <==
        {
          "mcpServers": {
            "github": {"type": "stdio", "command": "npx",
                       "args": ["@modelcontextprotocol/server-github"],
                       "env": {"GITHUB_TOKEN": "${GITHUB_TOKEN}"}}
          }
        }
    """
    servers = _servers(doc, ctx)
    if servers is None:
        return
    for name, server in servers.items():
        for path, text in _strings_in(server, ("mcpServers", name)):
            m = LITELLM_ENV.match(text.strip())
            if m is None:
                continue
            fix = ctx.fix(f"Write `${{{m['var']}}}`",
                          ctx.edit(_at(ctx, path), f"\"${{{m['var']}}}\""))
            yield ctx.finding(_at(ctx, path),
                              f"`{text}` is LiteLLM's syntax: Claude Code expands only "
                              f"`${{{m['var']}}}`, so MCP server `{name}` gets this text "
                              f"literally; write `${{{m['var']}}}`", fix=fix)

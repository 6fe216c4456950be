"""OpenCode: `opencode run --format json`."""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...model.config import WorkflowSettings
from ...terminal import terminal_safe
from .base import (
    FATAL,
    PERMANENT,
    TRANSIENT,
    AgentEvent,
    Invocation,
    LaunchSpec,
    RunResult,
    classify_common,
    classify_text,
    fatal_status,
    json_object,
    number_or_none,
    plain_event,
    runner_env,
    str_or_none,
    stream_key,
)

_WRITE_TOOLS = frozenset({"write", "edit", "patch", "apply_patch", "multiedit"})
"""opencode's file-writing tools, all governed by its `edit` permission."""
_REFUSED = re.compile(r"rejected permission to use this specific tool call|"
                      r"specified a rule which prevents you from using this specific tool call",
                      re.IGNORECASE)
"""opencode 1.18's PermissionRejectedError (an `ask` that headless `run` auto-rejected) and
PermissionDeniedError (a `deny` rule) messages, as its tool parts carry them."""
_AUTO_REJECTED = re.compile(r"permission requested: (?P<perm>\S+) \((?P<patterns>[^)]*)\); "
                            r"auto-rejecting")
"""What `opencode run` prints on stderr for each permission it was asked for and rejected."""
_FATAL_ERRORS = frozenset({"ProviderAuthError", "ProviderModelNotFoundError",
                           "ProviderInitError"})
_LOGGED = re.compile(r'level=ERROR .*?\bref=(?P<ref>\S+) error="(?P<error>(?:[^"\\]|\\.)*)"')
"""opencode's log line (stderr, with `--print-logs`) for an error its `run` event reports
only as `UnknownError` "Unexpected server error. Check server logs for details." with a
`ref` (an unknown model or provider: `ProviderModelNotFoundError: Model not found: …`)."""
_NAMED = re.compile(r"^(?P<name>[A-Z][A-Za-z]*Error)\b")
"""`error` names no retry can fix: credentials, an unknown model, a provider that does not
load."""
_ASK_FIX = (" (headless `opencode run` rejects every permission it would ask for; fix: "
            "[workflow.opencode] edit = \"allow\", Baton's default, or allow it in opencode's "
            "permission configuration)")


def _mapping(value: object) -> Mapping[str, Any]:
    """`value` when the stream gave an object there, else an empty one."""
    return value if isinstance(value, Mapping) else {}


def _one_line(text: str, limit: int = 300) -> str:
    text = terminal_safe(text, multiline=True, strip_sequences=True)
    line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    return line if len(line) <= limit else line[:limit - 1] + "…"


def _error(error: object) -> tuple[str, str]:
    """A stream `error` as (one readable line, failure class): `APIError HTTP 401: invalid
    x-api-key`. opencode's errors are {name, data: {message, statusCode, isRetryable, …}}
    (its NamedError shape); an API status decides the class, then the name, then the text."""
    if not isinstance(error, Mapping):
        text = _one_line(str(error or "error"))
        return text, classify_text(text) or PERMANENT
    name = str_or_none(error.get("name")) or "error"
    data = _mapping(error.get("data"))
    ref = str_or_none(data.get("ref"))
    status = number_or_none(data.get("statusCode"))
    message = str_or_none(data.get("message")) or ""
    head = f"{name} HTTP {int(status)}" if status is not None else name
    kind = _body_type(data.get("responseBody"))
    head += f" ({kind})" if kind else ""
    text = _one_line(f"{head}: {message}" if message else head, 2000)
    text += f" (ref {ref})" if ref else ""
    if status is not None and fatal_status(int(status)):
        return text, FATAL
    if (status is not None and (int(status) == 429 or int(status) >= 500)) \
            or data.get("isRetryable") is True:
        return text, TRANSIENT
    if name in _FATAL_ERRORS:
        return text, FATAL
    return text, classify_text(text) or PERMANENT


def _body_type(body: object) -> str | None:
    """The provider's own error type in an API error's `responseBody` (`{"error": {"type":
    "authentication_error", …}}` from Anthropic, `{"error": {"code": "invalid_api_key"}}`
    from OpenAI), which names the cause more exactly than the status."""
    try:
        obj = json.loads(body) if isinstance(body, str) else None
    except ValueError:
        return None
    err = obj.get("error") if isinstance(obj, dict) else None
    if not isinstance(err, dict):
        return None
    kind = str_or_none(err.get("type")) or str_or_none(err.get("code")) \
        or str_or_none(err.get("status"))
    return _one_line(kind, 80) if kind else None


def _usage(part: Mapping[str, Any]) -> dict[str, Any]:
    """One `step-finish` part's usage: opencode's `tokens` {input, output, reasoning, total,
    cache: {read, write}} and `cost` in US dollars, which it prices itself from its models
    data; each step-finish is one model request."""
    out: dict[str, Any] = {"turns": 1}
    tokens = _mapping(part.get("tokens"))
    cache = _mapping(tokens.get("cache"))
    for ours, value in (("input_tokens", tokens.get("input")),
                        ("output_tokens", tokens.get("output")),
                        ("total_tokens", tokens.get("total")),
                        ("cache_read_tokens", cache.get("read")),
                        ("cache_write_tokens", cache.get("write"))):
        if (n := number_or_none(value)) is not None:
            out[ours] = n
    if (cost := number_or_none(part.get("cost"))) is not None:
        out["cost_usd"] = cost
    return out


def _refusal(part: Mapping[str, Any]) -> str | None:
    """`write /abs/path: <opencode's reason>` for a tool part that opencode refused: a call
    to a tool its permissions removed (it runs as the `invalid` tool), or one it rejected or
    denied by a permission rule."""
    state = _mapping(part.get("state"))
    tool = str_or_none(part.get("tool")) or "tool"
    args = _mapping(state.get("input"))
    if tool == "invalid":
        called = str_or_none(args.get("tool"))
        if called not in _WRITE_TOOLS:
            return None
        why = str_or_none(args.get("error")) or "not offered"
        return (f"{called}: {_one_line(why)} (opencode offers no write tool where its `edit` "
                f"permission is deny; fix: [workflow.opencode] edit = \"allow\", Baton's "
                f"default)")
    error = str_or_none(state.get("error"))
    if state.get("status") != "error" or error is None or not _REFUSED.search(error):
        return None
    target = next((str(args[k]) for k in ("filePath", "path", "command")
                   if isinstance(args.get(k), str)), None)
    call = f"{tool} {_one_line(target, 200)}" if target else tool
    return f"{call}: {_one_line(error)}"


@dataclass
class OpencodeRunner:
    """`opencode run --format json [-m provider/model] [--agent A]`, the prompt on stdin and
    no message argument: opencode 1.18's `run` reads stdin when it is not a TTY and, without
    message arguments, sends it verbatim as the user message (arguments would go first,
    each one with a space wrapped in double quotes).

    Facts this rests on, from the 1.18.33 binary (its bundled `run` command, `--help`) and
    tests/agents/test_opencode_cli.py: with `--format json` every stdout line is one JSON
    event {type, timestamp, sessionID, …}: `step_start`, `text` (a finished text part),
    `tool_use` (a tool part that completed or failed), `step_finish` (one model request: its
    `tokens` and `cost`, `reason` "tool-calls" or "stop") and `error` ({name, data: {message,
    statusCode, isRetryable}}); there is no final result event, and any `error` makes it exit
    1. It retries 429, 5xx and "retryable" API errors itself (5 retries, 2 s doubling, or the
    retry-after header) and never a 401/403. Headless it rejects every permission it would ask
    for (stderr `permission requested: … auto-rejecting`), so Baton passes the `edit`
    permission and allows the directories beside the workspace a step writes in
    (`Invocation.extra_dirs`, as `external_directory` rules) in OPENCODE_PERMISSION, which
    opencode merges over every configuration file. OPENCODE_DISABLE_AUTOUPDATE keeps a step
    from upgrading the binary under a running workflow. Its directory is `$PWD` when set
    (`run`: `path.resolve(process.env.PWD ?? process.cwd())`), so PWD is the step's cwd.

    Each `step_finish` is reported as it arrives — usage for budgets, and a `RunResult`
    carrying the refusals seen so far, so the last one is the run's account; refusals are
    kept per stream (per asyncio task), so one instance can decode parallel agents.
    """

    @classmethod
    def configured(cls, settings: WorkflowSettings, root: Path) -> OpencodeRunner:
        """The runner `[workflow.opencode]` describes."""
        o = settings.opencode
        return cls(executable=o.executable, model=o.model, agent=o.agent, edit=o.edit,
                   extra_args=tuple(o.extra_args))

    executable: str = "opencode"
    model: str | None = None
    """`-m provider/model`; front-matter models are Claude model names and never reach it."""
    agent: str | None = None
    edit: str | None = "allow"
    extra_args: Sequence[str] = ()
    name: str = "opencode"
    cached_in_input: bool = False
    """opencode's `tokens.input` leaves out the cache reads and writes it counts apart."""
    _refused: weakref.WeakKeyDictionary[object, list[str]] = field(
        default_factory=weakref.WeakKeyDictionary, init=False, repr=False, compare=False)

    def launch(self, inv: Invocation) -> LaunchSpec:
        # its errors on stderr: the only place some of them are named (see `classify_exit`)
        argv = [self.executable, "run", "--format", "json", "--print-logs", "--log-level",
                "ERROR"]
        if self.model:
            argv += ["-m", self.model]
        if self.agent:
            argv += ["--agent", self.agent]
        argv += [*self.extra_args]
        # opencode 1.18's `run` takes its directory from $PWD before its real cwd: the
        # caller's shell PWD would make it work (and confine its writes) elsewhere
        env = runner_env(inv, {"OPENCODE_DISABLE_AUTOUPDATE": "1", "PWD": str(inv.cwd)})
        permission = self._permission(inv, env.get("OPENCODE_PERMISSION"))
        if permission:
            env["OPENCODE_PERMISSION"] = json.dumps(permission)
        return LaunchSpec(argv, inv.prompt.encode("utf-8"), env)

    def _permission(self, inv: Invocation, given: str | None) -> dict[str, Any]:
        """Baton's permission rules over the OPENCODE_PERMISSION `given` in the environment
        (a JSON object; anything else opencode itself would skip with a warning)."""
        try:
            own = json.loads(given or "{}")
        except ValueError:
            own = {}
        # a bare action ("allow") is opencode's shorthand for that action on every permission
        out: dict[str, Any] = (dict(own) if isinstance(own, dict) else
                               {"*": own} if isinstance(own, str) else {})
        if self.edit:
            out["edit"] = self.edit
        if inv.extra_dirs:
            rules = out.get("external_directory")
            merged: dict[str, Any] = dict(rules) if isinstance(rules, dict) else (
                {"*": rules} if isinstance(rules, str) else {})
            for directory in inv.extra_dirs:  # the last matching rule wins
                merged[f"{directory}/**"] = "allow"
            out["external_directory"] = merged
        return out

    def decode(self, line: str) -> AgentEvent:
        obj = json_object(line)
        if obj is None:
            return plain_event(line)
        kind = obj.get("type")
        session = str_or_none(obj.get("sessionID"))
        part = _mapping(obj.get("part"))
        if kind == "text":
            return AgentEvent(text=str(part.get("text") or "").splitlines(), session_id=session)
        if kind == "tool_use":
            refusal = _refusal(part)
            if refusal is not None:
                self._refused.setdefault(stream_key(), []).append(refusal)
            return AgentEvent(session_id=session)
        if kind == "step_finish":
            reason = str_or_none(part.get("reason"))
            return AgentEvent(session_id=session, usage=_usage(part), result=RunResult(
                ok=True, subtype=reason, message=None, session_id=session, failure=None,
                denials=tuple(self._refused.get(stream_key(), ()))))
        if kind == "error":
            message, failure = _error(obj.get("error"))
            return AgentEvent(session_id=session, error=message, result=RunResult(
                ok=False, subtype="error", message=message, session_id=session,
                failure=failure, denials=tuple(self._refused.pop(stream_key(), ()))))
        return AgentEvent(session_id=session)  # step_start, reasoning, unknown

    def stderr_denials(self, stderr_tail: str) -> tuple[str, ...]:
        """The permissions `opencode run` asked for and rejected, from its stderr
        (`! permission requested: external_directory (/x/*); auto-rejecting`)."""
        text = terminal_safe(stderr_tail, multiline=True, strip_sequences=True)
        out: list[str] = []
        for m in _AUTO_REJECTED.finditer(text):
            line = f"permission {m['perm']} ({_one_line(m['patterns'], 200)}): auto-rejected"
            line += _ASK_FIX if m["perm"] == "edit" else (
                " (headless `opencode run` rejects every permission it would ask for)")
            if line not in out:
                out.append(line)
        return tuple(out)

    def classify_exit(self, exit_code: int, stderr_tail: str,
                      result: RunResult | None) -> str | None:
        """The common classification, after an `UnknownError` event that only points at
        opencode's log (`ref`) has its real cause from that log line on stderr put in its
        place: the cause's message becomes the result's, and its error name its class."""
        if result is not None and not result.ok and result.message:
            for m in _LOGGED.finditer(stderr_tail):
                if f"(ref {m['ref']})" in result.message:
                    cause = _one_line(m["error"].replace('\\"', '"'), 2000)
                    named = _NAMED.match(cause)
                    result.message = cause
                    result.failure = (FATAL if named and named["name"] in _FATAL_ERRORS
                                      else classify_text(cause) or PERMANENT)
        return classify_common(exit_code, stderr_tail, result)

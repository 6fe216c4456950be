"""A fake OpenAI Responses API on 127.0.0.1, so tests can drive the real `codex` CLI offline.

Codex talks to `POST {base_url}/responses` (SSE) once it is given a custom model provider with
`wire_api = "responses"` and `supports_websockets = false` (see `codex_config`); without the
latter it first tries a Responses WebSocket. Every request is recorded (path, headers, parsed
JSON body) in `FakeOpenAI.requests`, so a test can check what the CLI actually sent (model id,
offered tools, tool outputs). A *responder* decides each answer of `POST /v1/responses`; the
helpers below build the behaviours the tests need: a scripted write-then-report session (shell
or apply_patch), OpenAI-shaped HTTP errors (always or for the first N calls), an unknown-model
404, a request that never gets an answer and a stream that stalls after its first event. Any
other path gets a harmless empty JSON object, so nothing in the CLI hangs waiting on us.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from tests.agents.fake_http import JSON, FakeApi, JsonHandler

_OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")

HIGH_DEMAND = "We're currently experiencing high demand, which may cause temporary errors."


@dataclass
class Recorded:
    """One request as the CLI sent it."""

    method: str
    path: str
    headers: dict[str, str]
    body: JSON

    @property
    def model(self) -> str | None:
        return self.body.get("model")

    @property
    def tool_names(self) -> list[str]:
        return [t.get("name") or t.get("type", "") for t in self.body.get("tools", [])]

    @property
    def is_turn(self) -> bool:
        """A model call (POST .../responses), not a side request such as a model list."""
        return self.method == "POST" and self.path.split("?", 1)[0].endswith("/responses")

    def tool_outputs(self) -> list[JSON]:
        """The trailing (custom_)function_call_output items: what our last tool call produced."""
        outputs: list[JSON] = []
        for item in reversed(self.body.get("input") or []):
            if not isinstance(item, dict) or item.get("type") not in _OUTPUT_TYPES:
                break
            outputs.insert(0, item)
        return outputs


@dataclass
class Text:
    """A final assistant message with this text."""

    text: str
    usage: JSON = field(default_factory=lambda: {"input_tokens": 1200, "output_tokens": 40})


@dataclass
class FunctionCall:
    """An assistant turn calling one function tool (e.g. `exec_command`)."""

    name: str
    arguments: JSON
    usage: JSON = field(default_factory=lambda: {"input_tokens": 1000, "output_tokens": 60})


@dataclass
class CustomToolCall:
    """An assistant turn calling one freeform tool (codex's `apply_patch` takes a raw patch)."""

    name: str
    input: str
    usage: JSON = field(default_factory=lambda: {"input_tokens": 1000, "output_tokens": 60})


@dataclass
class HttpError:
    """An OpenAI-style JSON error response: {"error": {message, type, param, code}}."""

    status: int
    type: str
    message: str
    code: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hang:
    """Read the request and never answer (the socket stays open until the server stops)."""


@dataclass
class Stall:
    """Send 200 + event-stream headers and `response.created`, then nothing on an open socket."""


Reply = Text | FunctionCall | CustomToolCall | HttpError | Hang | Stall
Responder = Callable[[Recorded], Reply]

ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request"),
    401: (
        "invalid_request_error",
        "invalid_api_key",
        "Incorrect API key provided: sk-fake. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
    ),
    403: ("request_forbidden", "unsupported_country_region_territory",
          "Country, region, or territory not supported"),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    429: (
        "requests",
        "rate_limit_exceeded",
        "Rate limit reached for requests. Please try again in 20s.",
    ),
    500: ("server_error", None, HIGH_DEMAND),
    503: ("server_error", None, "The server is overloaded or not ready yet."),
}


def error(
    status: int, message: str | None = None, code: str | None = None, retry_after: int | None = None
) -> HttpError:
    """The canonical error body of `status` (500 is the "high demand" one)."""
    kind, default_code, default = ERRORS[status]
    headers = {"retry-after": str(retry_after)} if retry_after is not None else {}
    return HttpError(status, kind, message or default, code or default_code, headers)


# --- responders -------------------------------------------------------------------------------


def shell_write_command(file_path: str, content: str) -> str:
    """A POSIX command that creates `file_path` (and its parents) holding `content`."""
    parent = file_path.rsplit("/", 1)[0] or "/"
    return (
        f"mkdir -p {shlex.quote(parent)} && "
        f"printf '%s' {shlex.quote(content)} > {shlex.quote(file_path)}"
    )


def add_file_patch(file_path: str, content: str) -> str:
    """An `apply_patch` patch (codex's lark grammar) that adds `file_path` holding `content`."""
    lines = "".join(f"+{line}\n" for line in content.splitlines())
    return f"*** Begin Patch\n*** Add File: {file_path}\n{lines}*** End Patch\n"


def write_then_report(
    file_path: str, content: str, signal: str, tool: str = "exec_command"
) -> Responder:
    """Turn 1: write `content` to `file_path` with `tool`; after its output: reply `signal`.

    `tool` is "exec_command" (a shell command, offered for every model) or "apply_patch" (a
    freeform tool codex only offers for models it has metadata for, e.g. gpt-5.5). A failure
    reported back (a non-zero "Process exited with code N", e.g. the sandbox's "Read-only file
    system", or a rejected patch) makes the reply `REPORT_FAILED` instead. Stateless (decided from
    the conversation in the request), so CLI retries and side calls cannot shift it out of step.
    """

    def respond(req: Recorded) -> Reply:
        outputs = req.tool_outputs()
        if not outputs:
            if tool == "apply_patch":
                return CustomToolCall("apply_patch", add_file_patch(file_path, content))
            return FunctionCall(
                tool, {"cmd": shell_write_command(file_path, content), "yield_time_ms": 5000}
            )
        output = str(outputs[-1].get("output", ""))
        if not succeeded(output):
            return Text(f"The write failed: {output}\nREPORT_FAILED")
        return Text(f"Done.\n{signal}")

    return respond


def succeeded(output: str) -> bool:
    """Whether codex's tool output text says the command / patch worked."""
    code = re.search(r"(?:Process exited with code|Exit code:) (\d+)", output)
    return code is not None and code.group(1) == "0"


def reply_text(text: str) -> Responder:
    """Always answer with plain text (no tool call)."""
    return lambda req: Text(text)


def failing(
    status: int,
    first: int | None = None,
    then: Responder | None = None,
    message: str | None = None,
    retry_after: int | None = None,
) -> Responder:
    """Answer `status` to the first `first` calls (every call when None), then defer to `then`."""
    counter = itertools.count()
    fallback = then or reply_text("ok")

    def respond(req: Recorded) -> Reply:
        if first is None or next(counter) < first:
            return error(status, message, retry_after=retry_after)
        return fallback(req)

    return respond


def only_models(allowed: Iterable[str], then: Responder, status: int = 404) -> Responder:
    """model_not_found (404, or 400 as some endpoints do) for a model outside `allowed`."""
    ok = set(allowed)

    def respond(req: Recorded) -> Reply:
        if req.model not in ok:
            return error(
                status,
                f"The model `{req.model}` does not exist or you do not have access to it.",
                code="model_not_found",
            )
        return then(req)

    return respond


def looping(usage: JSON | None = None) -> Responder:
    """A runaway agent: every turn calls `exec_command` with a new command (`echo loop N`),
    whatever came back, so the real CLI keeps asking for the next turn until it is stopped."""
    counter = itertools.count()

    def respond(req: Recorded) -> Reply:
        n = next(counter)
        reply = FunctionCall("exec_command", {"cmd": f"echo loop {n}", "yield_time_ms": 1000})
        if usage is not None:
            reply.usage = dict(usage)
        return reply

    return respond


def hang() -> Responder:
    return lambda req: Hang()


def stall() -> Responder:
    return lambda req: Stall()


# --- server -----------------------------------------------------------------------------------


class FakeOpenAI(FakeApi[Recorded]):
    """`with FakeOpenAI(responder) as api:` serves on `api.url` (base URL: `api.url + "/v1"`)."""

    def __init__(self, responder: Responder) -> None:
        super().__init__(responder, Recorded, _handler_for)

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def turns(self) -> list[Recorded]:
        """The recorded model calls (POST /v1/responses), retries included."""
        return self._recorded(lambda r: r.is_turn)

    def _next_id(self, prefix: str) -> str:
        return f"{prefix}_fake_{next(self._ids):04d}"


def codex_config(
    base_url: str,
    model: str = "gpt-5.1-codex",
    env_key: str = "FAKE_OPENAI_KEY",
    idle_timeout_ms: int | None = 3000,
    request_retries: int | None = 0,
    stream_retries: int | None = 0,
) -> str:
    """A `config.toml` (for an isolated CODEX_HOME) that points codex at `base_url` over HTTP.

    `supports_websockets = false` stops the WebSocket attempt; the retry/idle keys keep error
    and stall tests fast (None leaves codex's default: 4 request retries, 5 stream retries,
    300 s idle timeout).
    """
    lines = [
        f'model = "{model}"',
        'model_provider = "fake"',
        "",
        "[model_providers.fake]",
        'name = "fake"',
        f'base_url = "{base_url}"',
        'wire_api = "responses"',
        f'env_key = "{env_key}"',
        "supports_websockets = false",
    ]
    for key, value in (
        ("request_max_retries", request_retries),
        ("stream_max_retries", stream_retries),
        ("stream_idle_timeout_ms", idle_timeout_ms),
    ):
        if value is not None:
            lines.append(f"{key} = {value}")
    return "\n".join(lines) + "\n"


def _handler_for(api: FakeOpenAI) -> type[JsonHandler]:
    class Handler(JsonHandler):
        request_id_header = "x-request-id"

        def do_POST(self) -> None:
            body = self._body()
            req = Recorded("POST", self.path, dict(self.headers), body)
            if req.is_turn:
                api._record(req)
                self._answer(req, api.responder(req))
            else:
                self._other(req)

        def _answer(self, req: Recorded, reply: Reply) -> None:
            if isinstance(reply, HttpError):
                body = {
                    "error": {
                        "message": reply.message,
                        "type": reply.type,
                        "param": None,
                        "code": reply.code,
                    }
                }
                self._send_json(reply.status, body, reply.headers)
                return
            if isinstance(reply, Hang):
                api._stop.wait()
                self.close_connection = True
                return
            self._start_sse()
            for event in _events(api, req, reply):
                self._sse(event)
            if isinstance(reply, Stall):
                api._stop.wait()

    Handler.api = api
    return Handler


def _events(api: FakeOpenAI, req: Recorded, reply: Reply) -> list[JSON]:
    """The SSE events of one response, in the order the real Responses API streams them."""
    resp_id = api._next_id("resp")
    response: JSON = {
        "id": resp_id,
        "object": "response",
        "status": "in_progress",
        "model": req.model or "gpt-fake",
        "output": [],
    }
    events: list[JSON] = [{"type": "response.created", "sequence_number": 0, "response": response}]
    if isinstance(reply, Stall):
        return events
    if isinstance(reply, CustomToolCall):
        item = {
            "type": "custom_tool_call",
            "id": api._next_id("ctc"),
            "call_id": api._next_id("call"),
            "name": reply.name,
            "input": reply.input,
            "status": "completed",
        }
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "input": "", "status": "in_progress"},
            },
            {
                "type": "response.custom_tool_call_input.done",
                "output_index": 0,
                "item_id": item["id"],
                "input": item["input"],
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
        usage = reply.usage
    elif isinstance(reply, FunctionCall):
        item: JSON = {
            "type": "function_call",
            "id": api._next_id("fc"),
            "call_id": api._next_id("call"),
            "name": reply.name,
            "arguments": json.dumps(reply.arguments),
            "status": "completed",
        }
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "arguments": "", "status": "in_progress"},
            },
            {
                "type": "response.function_call_arguments.done",
                "output_index": 0,
                "item_id": item["id"],
                "arguments": item["arguments"],
            },
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
        usage = reply.usage
    else:
        assert isinstance(reply, Text)
        item = {
            "type": "message",
            "id": api._next_id("msg"),
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
        }
        part = {"output_index": 0, "item_id": item["id"], "content_index": 0}
        events += [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "content": [], "status": "in_progress"},
            },
            {
                "type": "response.content_part.added",
                **part,
                "part": {"type": "output_text", "text": "", "annotations": []},
            },
            {"type": "response.output_text.delta", **part, "delta": reply.text},
            {"type": "response.output_text.done", **part, "text": reply.text},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        ]
        usage = reply.usage
    full_usage = {
        "input_tokens": usage["input_tokens"],
        "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)},
        "output_tokens": usage["output_tokens"],
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
        "total_tokens": usage["input_tokens"] + usage["output_tokens"],
    }
    events.append(
        {
            "type": "response.completed",
            "response": {**response, "status": "completed", "output": [item], "usage": full_usage},
        }
    )
    return events

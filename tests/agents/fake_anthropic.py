"""A fake Anthropic Messages API on 127.0.0.1, so tests can drive the real `claude` CLI offline.

Every request is recorded (path, headers, parsed JSON body) in `FakeAnthropic.requests`, so a
test can check what the CLI actually sent (model id, offered tools, ...). A *responder* decides
each answer of `POST /v1/messages`; the helpers below build the behaviours the tests need:
a scripted Write-then-report session, HTTP errors (always or for the first N calls), an unknown
model 404, a request that never gets an answer and a stream that stalls after its first delta.
Any other path gets a harmless empty JSON object, so nothing in the CLI hangs waiting on us.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from tests.agents.fake_http import JSON, FakeApi, JsonHandler


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
        return [t.get("name", "") for t in self.body.get("tools", [])]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    def last_tool_results(self) -> list[JSON]:
        """The tool_result blocks of the newest user message (what our last tool_use produced)."""
        # Claude Code may append `system`-role notices (e.g. the token budget) after the
        # user turn that carries the tool results; they are not a new turn.
        messages = [m for m in self.body.get("messages") or [] if m.get("role") != "system"]
        if not messages or messages[-1].get("role") != "user":
            return []
        content = messages[-1].get("content")
        if not isinstance(content, list):
            return []
        return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


@dataclass
class Text:
    """A final assistant turn with this text (stop_reason end_turn)."""

    text: str
    usage: JSON = field(default_factory=lambda: {"input_tokens": 1200, "output_tokens": 40})


@dataclass
class ToolUse:
    """An assistant turn calling one tool (stop_reason tool_use)."""

    name: str
    input: JSON
    text: str = ""
    usage: JSON = field(default_factory=lambda: {"input_tokens": 1000, "output_tokens": 60})


@dataclass
class HttpError:
    """An Anthropic-style JSON error response."""

    status: int
    type: str
    message: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Hang:
    """Read the request and never answer (the socket stays open until the server stops)."""


@dataclass
class Stall:
    """Stream message_start and a first text delta, then nothing more on an open connection.

    A non-streaming request (the CLI's fallback after a stalled stream) is left unanswered.
    """


Reply = Text | ToolUse | HttpError | Hang | Stall
Responder = Callable[[Recorded], Reply]

ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource"),
    404: ("not_found_error", "Not found"),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit"),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def error(status: int, message: str | None = None, retry_after: int | None = None) -> HttpError:
    """The canonical error body of `status`; 429 and 529 carry a retry-after header."""
    kind, default = ERRORS[status]
    headers = {}
    if retry_after is not None or status in (429, 529):
        headers["retry-after"] = str(retry_after if retry_after is not None else 0)
    return HttpError(status, kind, message or default, headers)


# --- responders -------------------------------------------------------------------------------


def write_then_report(file_path: str, content: str, signal: str) -> Responder:
    """Turn 1: Write `content` to `file_path`; once a tool_result is back: reply `signal`.

    Stateless (decided from the conversation in the request), so CLI retries and side calls
    cannot shift it out of step.
    """

    def respond(req: Recorded) -> Reply:
        results = req.last_tool_results()
        if not results:
            return ToolUse(
                "Write", {"file_path": file_path, "content": content}, text="Writing the report."
            )
        outcome = text_of(results[-1])
        if results[-1].get("is_error"):
            return Text(f"The write failed: {outcome}\nREPORT_FAILED")
        return Text(f"Done.\n{signal}")

    return respond


def reply_text(text: str) -> Responder:
    """Always answer with plain text (no tool use)."""
    return lambda req: Text(text)


def failing(
    status: int,
    first: int | None = None,
    then: Responder | None = None,
    retry_after: int | None = None,
) -> Responder:
    """Answer `status` to the first `first` calls (every call when None), then defer to `then`."""
    counter = itertools.count()
    fallback = then or reply_text("ok")

    def respond(req: Recorded) -> Reply:
        if first is None or next(counter) < first:
            return error(status, retry_after=retry_after)
        return fallback(req)

    return respond


def only_models(allowed: Iterable[str], then: Responder) -> Responder:
    """404 not_found_error for a model id outside `allowed`, like the real API."""
    ok = set(allowed)

    def respond(req: Recorded) -> Reply:
        if req.model not in ok:
            return error(404, f"model: {req.model}")
        return then(req)

    return respond


def looping(usage: JSON | None = None, tool: str = "Bash", titles: bool = False) -> Responder:
    """A runaway agent: every turn calls `tool` (claude's Bash; opencode's bash, which also
    takes a `description`) with a new command (`echo loop N`), whatever came back, so the
    real CLI keeps asking for the next turn until it is stopped. `titles`: a request without
    tools (opencode's session title, asked of its small model) gets text instead."""
    counter = itertools.count()

    def respond(req: Recorded) -> Reply:
        if titles and not req.body.get("tools"):
            return Text("Loop")
        n = next(counter)
        args: JSON = {"command": f"echo loop {n}"}
        if tool != "Bash":
            args["description"] = f"loop {n}"
        reply = ToolUse(tool, args, text=f"Step {n}.")
        if usage is not None:
            reply.usage = dict(usage)
        return reply

    return respond


def hang() -> Responder:
    return lambda req: Hang()


def stall() -> Responder:
    return lambda req: Stall()


def text_of(block: JSON) -> str:
    """The text of a tool_result block (its content a string or text blocks)."""
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return ""


def opencode_config(url: str, model: str = "claude-sonnet-4-5", **extra: Any) -> str:
    """An opencode.json pointing opencode's bundled `anthropic` provider at the fake on
    `url` (`options.baseURL` ends in /v1: the SDK appends /messages), with a key, `model` as
    the default, and no autoupdate or sharing (opencode's config schema, 1.18)."""
    config = {"$schema": "https://opencode.ai/config.json", "model": f"anthropic/{model}",
              "autoupdate": False, "share": "disabled",
              "provider": {"anthropic": {"options": {"baseURL": f"{url}/v1",
                                                     "apiKey": "sk-fake"}}}, **extra}
    return json.dumps(config)


# --- server -----------------------------------------------------------------------------------


class FakeAnthropic(FakeApi[Recorded]):
    """`with FakeAnthropic(responder) as api:` serves on `api.url` until the block ends."""

    def __init__(self, responder: Responder) -> None:
        super().__init__(responder, Recorded, _handler_for)

    @property
    def messages(self) -> list[Recorded]:
        """The recorded `POST /v1/messages` calls (streaming or not), in arrival order."""
        return self._recorded(lambda r: r.path.split("?", 1)[0] == "/v1/messages")

    def _next_id(self) -> str:
        return f"msg_fake_{next(self._ids):04d}"


def _handler_for(api: FakeAnthropic) -> type[JsonHandler]:
    class Handler(JsonHandler):
        def do_POST(self) -> None:
            body = self._body()
            req = Recorded("POST", self.path, dict(self.headers), body)
            path = self.path.split("?", 1)[0]
            if path == "/v1/messages/count_tokens":
                api._record(req)
                self._send_json(200, {"input_tokens": 1000})
            elif path == "/v1/messages":
                api._record(req)
                try:
                    reply = api.responder(req)
                except Exception as exc:  # a broken script must show, not just make the CLI retry
                    api.errors.append(exc)
                    reply = HttpError(400, "invalid_request_error", f"fake responder failed: {exc}")
                self._answer(req, reply)
            else:
                self._other(req)

        def _answer(self, req: Recorded, reply: Reply) -> None:
            if isinstance(reply, HttpError):
                body = {
                    "type": "error",
                    "error": {"type": reply.type, "message": reply.message},
                    "request_id": "req_fake",
                }
                self._send_json(reply.status, body, reply.headers)
                return
            if isinstance(reply, Hang) or (isinstance(reply, Stall) and not req.body.get("stream")):
                api._stop.wait()
                self.close_connection = True
                return
            message = self._message(req, reply)
            if not req.body.get("stream"):
                self._send_json(200, message)
                return
            self._start_sse()
            for event in _events(message, stall=isinstance(reply, Stall)):
                self._sse(event)
            if isinstance(reply, Stall):
                api._stop.wait()

        def _message(self, req: Recorded, reply: Reply) -> JSON:
            if isinstance(reply, ToolUse):
                blocks: list[JSON] = [{"type": "text", "text": reply.text}] if reply.text else []
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": f"toolu_fake_{next(api._ids):04d}",
                        "name": reply.name,
                        "input": reply.input,
                    }
                )
                stop, usage = "tool_use", reply.usage
            elif isinstance(reply, Text):
                blocks, stop, usage = (
                    [{"type": "text", "text": reply.text}],
                    "end_turn",
                    reply.usage,
                )
            else:  # Stall: the text that is never finished
                blocks, stop, usage = [{"type": "text", "text": "Working on it"}], None, {}
            return {
                "id": api._next_id(),
                "type": "message",
                "role": "assistant",
                "model": req.model or "claude-fake",
                "content": blocks,
                "stop_reason": stop,
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 0,
                    **usage,
                },
            }

    Handler.api = api
    return Handler


def _events(message: JSON, stall: bool = False) -> list[JSON]:
    """The SSE events of `message`, as the real API streams it (one delta per block)."""
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {**message["usage"], "output_tokens": 1},
    }
    events: list[JSON] = [{"type": "message_start", "message": start}]
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            events.append(
                {
                    "type": "content_block_start",
                    "index": i,
                    "content_block": {"type": "text", "text": ""},
                }
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "text_delta", "text": block["text"]},
                }
            )
        else:
            events.append(
                {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}}
            )
            events.append(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                }
            )
        if stall:
            return events
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": message["usage"]["output_tokens"]},
        }
    )
    events.append({"type": "message_stop"})
    return events

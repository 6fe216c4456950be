"""A scripted stand-in for the Gemini API (generativelanguage ``v1beta``) on 127.0.0.1.

Why: the real ``gemini`` CLI is worth testing end to end (its flags, trust gate, approval
modes, retries and ``-o stream-json`` events), but the sandbox has no network and real calls
cost quota. Pointing the CLI at this server (``GOOGLE_GEMINI_BASE_URL`` plus
``security.auth.selectedType = "gemini-api-key"`` in its settings) keeps it offline and makes
each model turn deterministic.

What the CLI calls, as observed with gemini-cli 0.61.0:

* ``POST /v1beta/models/{model}:streamGenerateContent?alt=sse`` -- every main chat turn. This
  is where a :class:`Script` applies (tool call, final text, injected errors, hang, stall).
* ``POST /v1beta/models/{model}:generateContent`` -- internal JSON side calls (model router
  classifier, next-speaker check, loop detection). They are always answered with one JSON
  object holding every field those schemas require, so routing never fails noisily.
* ``countTokens`` / ``embedContent`` / ``batchEmbedContents`` -- answered with plausible data.

Stdlib only so it runs wherever the tests run.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

Behaviour = Literal["success", "write_elsewhere", "text", "hang", "stall", "loop"]
ErrorKind = Literal["quota", "quota_daily", "internal", "unavailable", "invalid_key", "not_found",
                    "unauthenticated", "permission_denied"]

SIGNAL = "REPORT_CREATED"
"""Prefix of the line the final reply carries, so tests can find the reported path."""
FAILED = "WRITE_FAILED"
"""Prefix of the final line when the CLI answered the write_file call with an error."""

KNOWN_MODEL = re.compile(r"^(gemini-|gemma-|text-embedding|embedding-)")
"""Model ids the fake serves; anything else gets the real API's 404, like an unknown model."""

_QUOTA_MSG = (
    "You exceeded your current quota, please check your plan and billing details. "
    "For more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
    "rate-limits."
)


def _quota(quota_id: str, retry: str) -> dict[str, Any]:
    return {
        "code": 429,
        "message": _QUOTA_MSG,
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_free_tier_requests",
                        "quotaId": quota_id,
                        "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                        "quotaValue": "10",
                    }
                ],
            },
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry},
        ],
    }


_KEY_MSG = "API key not valid. Please pass a valid API key."

ERRORS: dict[str, dict[str, Any]] = {
    # Per-minute quota with a short RetryInfo: the CLI treats it as retryable.
    "quota": _quota("GenerateRequestsPerMinutePerProjectPerModel-FreeTier", "1s"),
    # Per-day quota: the CLI treats it as terminal ("exhausted your daily quota").
    "quota_daily": _quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "40s"),
    "internal": {
        "code": 500,
        "message": "An internal error has occurred. Please retry or report in "
        "https://developers.generativeai.google/guide/troubleshooting",
        "status": "INTERNAL",
    },
    "unavailable": {
        "code": 503,
        "message": "The model is overloaded. Please try again later.",
        "status": "UNAVAILABLE",
    },
    "invalid_key": {
        "code": 400,
        "message": _KEY_MSG,
        "status": "INVALID_ARGUMENT",
        "details": [
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
            {
                "@type": "type.googleapis.com/google.rpc.LocalizedMessage",
                "locale": "en-US",
                "message": _KEY_MSG,
            },
        ],
    },
    # A revoked or foreign credential (the real API's texts): not retryable, however asked.
    "unauthenticated": {
        "code": 401,
        "message": "Request had invalid authentication credentials. Expected OAuth 2 access "
        "token, login cookie or other valid authentication credential.",
        "status": "UNAUTHENTICATED",
    },
    "permission_denied": {
        "code": 403,
        "message": "Method doesn't allow unregistered callers (callers without established "
        "identity). Please use API Key or other form of API consumer identity to call this API.",
        "status": "PERMISSION_DENIED",
    },
    "not_found": {
        "code": 404,
        "message": "models/{model} is not found for API version v1beta, or is not supported "
        "for generateContent. Call ListModels to see the list of available models and their "
        "supported methods.",
        "status": "NOT_FOUND",
    },
}

# One object satisfying every JSON side-call schema of gemini-cli 0.61 (zod drops extras):
# the numerical and the legacy router classifier, next-speaker check, loop detection.
SIDE_CALL_JSON: dict[str, Any] = {
    "complexity_reasoning": "fake: trivial",
    "complexity_score": 1,
    "reasoning": "fake: trivial",
    "model_choice": "flash",
    "next_speaker": "user",
    "unproductive_state_analysis": "fake: progressing",
    "unproductive_state_confidence": 0.0,
}

USAGE = {"promptTokenCount": 120, "candidatesTokenCount": 8, "totalTokenCount": 128}
"""usageMetadata sent with every final stream chunk; tests assert the CLI's stats echo it."""


@dataclass
class Script:
    """What the fake answers on main chat turns (``streamGenerateContent``).

    ``loop`` answers every turn with a new ``glob`` call (a different pattern each time, so
    the CLI's identical-call loop detection never fires): a runaway agent that never ends.
    ``target`` is the absolute path the ``write_file`` call names (``write_elsewhere`` uses
    ``elsewhere``). ``error`` injects an API error on the first ``fail_first`` stream requests
    (``None``: on all of them); after those the ``behaviour`` applies, so retries can recover.
    """

    behaviour: Behaviour = "success"
    target: str = ""
    elsewhere: str = ""
    content: str = "# Report\n\nWritten by the fake Gemini.\n"
    error: ErrorKind | None = None
    fail_first: int | None = None
    text: str = "Hello from the fake Gemini."
    agent: Callable[[dict[str, Any]], Any] | None = None
    """For whole workflows: request body → an answer with `path`, `content` and `final`
    (tests/agents/model.py), or None; it replaces `target`, `content` and the final text."""


@dataclass
class Request:
    """One request as the CLI sent it, for assertions."""

    method: str
    path: str
    model: str
    action: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass
class _State:
    script: Script
    requests: list[Request] = field(default_factory=list)
    stream_calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)


_PATH = re.compile(r"^/(?P<ver>v1\w*)/models/(?P<model>[^:/?]+):(?P<action>\w+)")


def _tool_response(body: dict[str, Any]) -> dict[str, Any] | None:
    """The newest functionResponse's ``response`` (None while the tool has not run yet)."""
    contents = body.get("contents") or []
    for part in contents[-1].get("parts", []) if contents else []:
        if "functionResponse" in part:
            return part["functionResponse"].get("response") or {}
    return None


def _chunk(parts: list[dict[str, Any]], finish: str | None, model: str) -> dict[str, Any]:
    cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    # The CLI keys its per-model stats by modelVersion, so echo the requested id like the API.
    out: dict[str, Any] = {"candidates": [cand], "modelVersion": model}
    if finish:
        cand["finishReason"] = finish
        out["usageMetadata"] = USAGE
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silence the default stderr access log; tests read ``FakeGemini.requests``."""

    def do_GET(self) -> None:
        self._record({})
        self._json(200, {"models": [{"name": "models/gemini-2.5-flash"}]})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        req = self._record(body)
        st = self.server.state
        if req.model and not KNOWN_MODEL.match(req.model):
            self._error("not_found", req.model)
        elif req.action == "streamGenerateContent":
            with st.lock:
                n = st.stream_calls
                st.stream_calls += 1
            sc = st.script
            if sc.error and (sc.fail_first is None or n < sc.fail_first):
                self._error(sc.error, req.model)
            else:
                self._stream(sc, body, req.model, n)
        elif req.action == "generateContent":
            text = json.dumps(SIDE_CALL_JSON)
            self._json(200, _chunk([{"text": text}], "STOP", req.model))
        elif req.action == "countTokens":
            self._json(200, {"totalTokens": max(1, len(raw) // 4)})
        elif req.action in ("embedContent", "batchEmbedContents"):
            vec = {"values": [0.0] * 8}
            n_req = len(body.get("requests", [])) or 1
            self._json(200, {"embedding": vec, "embeddings": [vec] * n_req})
        else:
            self._json(
                404,
                {"error": {"code": 404, "message": "fake: no such method", "status": "NOT_FOUND"}},
            )

    def _record(self, body: dict[str, Any]) -> Request:
        m = _PATH.match(self.path)
        req = Request(
            method=self.command,
            path=self.path,
            model=m["model"] if m else "",
            action=m["action"] if m else "",
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
        )
        with self.server.state.lock:
            self.server.state.requests.append(req)
        return req

    def _json(self, status: int, obj: dict[str, Any]) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json; charset=UTF-8")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, kind: str, model: str) -> None:
        err = json.loads(json.dumps(ERRORS[kind]).replace("{model}", model))
        self._json(err["code"], {"error": err})

    def _stream(self, sc: Script, body: dict[str, Any], model: str, n: int = 0) -> None:
        stop = self.server.state.stop
        if sc.behaviour == "hang":
            stop.wait()  # never answer; the CLI must time out or be killed
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")  # body ends when we close: no length needed
        self.end_headers()
        path = sc.elsewhere if sc.behaviour == "write_elsewhere" else sc.target
        content, final = sc.content, None
        if sc.agent is not None:
            answer = sc.agent(body)
            if answer is not None:
                path, content, final = answer.path, answer.content, answer.final
        if sc.behaviour == "loop":
            call = {"name": "glob", "args": {"pattern": f"loop-{n}-*.md"}}
            self._sse(_chunk([{"functionCall": call}], "STOP", model))
            self.close_connection = True
            return
        if sc.behaviour == "stall":
            self._sse(_chunk([{"text": "Working on it"}], None, model))
            stop.wait()  # first chunk, then silence with the connection held open
            return
        result = _tool_response(body)
        if sc.behaviour == "text":
            text = sc.text
        elif result is None:
            call = {"name": "write_file", "args": {"file_path": path, "content": content}}
            text = ""
        elif "error" in result:  # refused or failed: say so, and claim nothing
            text = f"Could not write {path}.\n{FAILED}: {result['error']}\n"
        else:
            text = f"{final}\n" if final is not None else f"Done.\n{SIGNAL}: {path}\n"
        if text:
            half = len(text) // 2  # two chunks, so the CLI emits two delta messages
            chunks = [
                _chunk([{"text": text[:half]}], None, model),
                _chunk([{"text": text[half:]}], "STOP", model),
            ]
        else:
            chunks = [_chunk([{"functionCall": call}], "STOP", model)]
        for c in chunks:
            self._sse(c)
        self.close_connection = True

    def _sse(self, obj: dict[str, Any]) -> None:
        self.wfile.write(b"data: " + json.dumps(obj).encode() + b"\r\n\r\n")
        self.wfile.flush()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


class FakeGemini:
    """Context manager serving a :class:`Script` on ``http://127.0.0.1:<free port>``.

    ``url`` goes into ``GOOGLE_GEMINI_BASE_URL``; ``requests`` lists what the CLI sent.
    Leaving the context releases hung/stalled handlers and closes the socket.
    """

    def __init__(self, script: Script | None = None) -> None:
        self._state = _State(script or Script(behaviour="text"))
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.state = self._state
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def script(self) -> Script:
        return self._state.script

    @property
    def requests(self) -> list[Request]:
        with self._state.lock:
            return list(self._state.requests)

    def stream_requests(self) -> list[Request]:
        """Main chat turns only (the side calls use ``generateContent``)."""
        return [r for r in self.requests if r.action == "streamGenerateContent"]

    def __enter__(self) -> FakeGemini:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._state.stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

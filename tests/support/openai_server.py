"""A real HTTP server on loopback that speaks the OpenAI chat-completions protocol.

Tests drive litellm through its real HTTP stack against this server instead of mocking
litellm: what is tested is what a user's run does, minus the provider. The server answers
from a queue of scripted responses, one per request, in order, and records every request
body it received so a test can assert on the messages and tools that were actually sent.

Example:
    >>> with OpenAIServer() as server:
    ...     server.reply_text("hello")
    ...     url = server.url + "/v1"  # give this to the client as its api_base
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["OpenAIServer", "RecordedRequest", "ScriptedResponse"]

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")
_NOT_ROUTED = object()


@dataclass(frozen=True, slots=True)
class ScriptedResponse:
    """One queued answer: an HTTP status, headers and a raw body, sent after an optional delay."""

    status: int
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()
    delay_s: float = 0.0
    """How long to wait before answering; a hang is a long delay the server can cut short."""


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """What the server received."""

    path: str
    headers: dict[str, str]
    """Header names are lower-cased."""
    body: dict[str, Any] | None
    """The JSON body, or None when it was not JSON."""


@dataclass
class _Script:
    queue: list[ScriptedResponse | _Completion] = field(default_factory=list)
    requests: list[RecordedRequest] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass(frozen=True, slots=True)
class _Completion:
    """A success reply; built when the request arrives so `model` can echo the request."""

    message: dict[str, Any]
    finish_reason: str
    model: str | None
    prompt_tokens: int
    completion_tokens: int

    def render(self, request_model: str) -> bytes:
        return json.dumps(
            {
                "id": "chatcmpl-" + uuid.uuid4().hex[:24],
                "object": "chat.completion",
                "created": int(time.time()),
                "model": self.model or request_model,
                "choices": [
                    {
                        "index": 0,
                        "message": self.message,
                        "logprobs": None,
                        "finish_reason": self.finish_reason,
                    }
                ],
                "usage": {
                    "prompt_tokens": self.prompt_tokens,
                    "completion_tokens": self.completion_tokens,
                    "total_tokens": self.prompt_tokens + self.completion_tokens,
                },
            }
        ).encode()


def _error_body(message: str, type_: str, code: str | None = None) -> bytes:
    # The shape OpenAI uses, so client SDKs extract the message the way they do in production.
    return json.dumps(
        {"error": {"message": message, "type": type_, "param": None, "code": code}}
    ).encode()


class OpenAIServer:
    """A scripted OpenAI-compatible chat-completions server on 127.0.0.1 and a free port.

    Queue responses with the `reply_*` and fault methods before the client calls; each
    request takes the next one. A request that finds the queue empty gets HTTP 400 with a
    message saying so (400, because clients do not retry it, so the test fails at once).

    Use it as a context manager, or call `start()` and `stop()`.
    """

    def __init__(self) -> None:
        self._script = _Script()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # Handler threads are daemons so a handler still sleeping in a hang can never keep
        # the test process alive; stop() also wakes them through `_stopping`.
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            # A short poll so stop() returns at once instead of after the default 0.5 s.
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="openai-test-server",
            daemon=True,
        )

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The server's root URL, e.g. "http://127.0.0.1:54321" (append "/v1" for an api_base)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> OpenAIServer:
        """Start serving in a background thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and wake any handler that is hanging."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- what it received ------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, in order."""
        with self._script.lock:
            return list(self._script.requests)

    @property
    def bodies(self) -> list[dict[str, Any] | None]:
        """The JSON body of every request received so far."""
        return [r.body for r in self.requests]

    @property
    def pending(self) -> int:
        """How many queued responses no request has taken yet."""
        with self._script.lock:
            return len(self._script.queue)

    # -- scripting: replies ----------------------------------------------------------------

    def reply_text(
        self,
        text: str,
        *,
        model: str | None = None,
        prompt_tokens: int = 11,
        completion_tokens: int = 7,
    ) -> None:
        """Queue a text reply. `model` defaults to the model named in the request."""
        self._push(
            _Completion(
                message={"role": "assistant", "content": text},
                finish_reason="stop",
                model=model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        )

    def reply_tool_calls(
        self,
        *calls: tuple[str, dict[str, Any] | str] | tuple[str, dict[str, Any] | str, str],
        text: str | None = None,
        model: str | None = None,
        prompt_tokens: int = 13,
        completion_tokens: int = 9,
    ) -> None:
        """Queue a reply that asks for tool calls.

        Each call is `(name, arguments)` or `(name, arguments, call_id)`. Arguments given as
        a dict are sent JSON-encoded; a str is sent exactly as written, which is how a test
        sends a model's malformed arguments.
        """
        tool_calls = []
        for i, call in enumerate(calls):
            name, arguments = call[0], call[1]
            call_id = call[2] if len(call) == 3 else f"call_{i}_{uuid.uuid4().hex[:8]}"
            tool_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": name,
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments),
                    },
                }
            )
        self._push(
            _Completion(
                message={"role": "assistant", "content": text, "tool_calls": tool_calls},
                finish_reason="tool_calls",
                model=model,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
            )
        )

    # -- scripting: faults -----------------------------------------------------------------

    def rate_limit(self, *, retry_after_s: float = 0.0) -> None:
        """Queue an HTTP 429 asking the client to retry after `retry_after_s` seconds."""
        self._push(
            ScriptedResponse(
                429,
                _error_body("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
                headers=(
                    ("Retry-After", str(int(retry_after_s))),
                    # OpenAI also sends milliseconds; clients prefer it, so waits stay tiny.
                    ("retry-after-ms", str(int(retry_after_s * 1000))),
                ),
            )
        )

    def server_error(self, *, status: int = 500) -> None:
        """Queue an HTTP 5xx."""
        self._push(ScriptedResponse(status, _error_body("The server had an error", "server_error")))

    def unauthorized(self) -> None:
        """Queue an HTTP 401 for a bad API key."""
        self._push(
            ScriptedResponse(
                401,
                _error_body(
                    "Incorrect API key provided: sk-test.",
                    "invalid_request_error",
                    "invalid_api_key",
                ),
            )
        )

    def hang(self, seconds: float = 10.0) -> None:
        """Queue a response that arrives only after `seconds`, to trip the client's timeout.

        The wait is bounded and ends early when the server stops, so a client that does not
        time out makes its test fail instead of hanging the suite. After the wait the server
        answers with HTTP 504, never a success, so a missing timeout cannot pass as one.
        """
        self._push(
            ScriptedResponse(
                504, _error_body("the test server hung on purpose", "timeout"), delay_s=seconds
            )
        )

    def invalid_json(self) -> None:
        """Queue an HTTP 200 whose body is not JSON."""
        self._push(
            ScriptedResponse(
                200,
                b'{"id": "chatcmpl-broken", "choices": [ this is not json',
                headers=(("Content-Type", "application/json"),),
            )
        )

    def empty_choices(self) -> None:
        """Queue an HTTP 200 chat.completion with an empty `choices` list."""
        body = {
            "id": "chatcmpl-empty",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "test-model",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 0, "total_tokens": 5},
        }
        self._push(ScriptedResponse(200, json.dumps(body).encode()))

    def respond(self, response: ScriptedResponse) -> None:
        """Queue any raw response."""
        self._push(response)

    # -- internals -------------------------------------------------------------------------

    def _push(self, item: ScriptedResponse | _Completion) -> None:
        with self._script.lock:
            self._script.queue.append(item)

    def _take(
        self, request: RecordedRequest, *, routed: bool
    ) -> ScriptedResponse | _Completion | object | None:
        with self._script.lock:
            self._script.requests.append(request)
            if not routed:
                return _NOT_ROUTED  # a stray request must not use up a scripted response
            return self._script.queue.pop(0) if self._script.queue else None

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.1 keeps connections alive as real providers do, so the client's
            # connection pooling is exercised too.
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                recorded = RecordedRequest(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body if isinstance(body, dict) else None,
                )
                # Every request is recorded, routed or not, so a test can see a client
                # that called the wrong place (or another provider's API).
                item = server._take(recorded, routed=self.path.split("?")[0] in CHAT_PATHS)
                if item is _NOT_ROUTED:
                    self._send(404, _error_body(f"no route {self.path}", "invalid_request_error"))
                    return
                if item is None:
                    n = len(server.requests)
                    self._send(
                        400,
                        _error_body(
                            f"the test server has no scripted response left for request #{n}; "
                            "queue one with reply_text(), reply_tool_calls() or a fault",
                            "invalid_request_error",
                        ),
                    )
                    return
                if isinstance(item, _Completion):
                    model = str((recorded.body or {}).get("model", ""))
                    self._send(200, item.render(model))
                    return
                assert isinstance(item, ScriptedResponse)
                if item.delay_s and server._stopping.wait(item.delay_s):
                    return  # the server is stopping: drop the hung request
                self._send(item.status, item.body, item.headers)

            def _send(
                self, status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()
            ) -> None:
                try:
                    self.send_response(status)
                    names = {k.lower() for k, _ in headers}
                    if "content-type" not in names:
                        self.send_header("Content-Type", "application/json")
                    for key, value in headers:
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout); nothing to tell it

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean; `requests` is the log

        return Handler

"""How much the server takes: connections, request heads, bodies, event streams.

Before a request reaches the app (and its token check), the connection itself is bounded
by `bounded_http_protocol`, uvicorn's own HTTP protocol with three limits uvicorn lacks:

- a head-read timeout: a request's line and headers must all arrive within
  `header_timeout_s` of the connection opening (or of the previous answer, on a kept-alive
  connection), however slowly they trickle in; uvicorn's keep-alive timer starts only
  after a first answer and restarts with every byte, so a slow client ("slowloris") held
  a connection for good;
- a head size limit (431): llhttp, uvicorn's parser when httptools is installed, takes
  headers of any size;
- a connection cap: at `max_connections` open, a new connection closes the one that has
  waited longest for its request's head (a slow client or an idle kept-alive one); only
  when every connection is busy with a request is the new one refused (503). So slow
  clients can neither exhaust the process's file descriptors nor keep real requests out.
  (uvicorn's `limit_concurrency` answers 503 only once a request's head is in, so it
  counts slow connections without ever closing one.)

Then, as ASGI middlewares, in the app:

- `BodyLimit` (413): refuses a body over the limit from its declared ``Content-Length``
  before reading any of it, and one sent in chunks as soon as the bytes read pass the
  limit, so nobody makes the server read (and hold) more than the limit.
- `StreamCap` (429): each open event stream holds a connection and looks at the store
  every few tenths of a second; past the cap, a new one is refused until one closes.

The size of a task and the depth of a JSON body are checked where they are read (the app).
"""

from __future__ import annotations

import asyncio
import json
import logging
from http import HTTPStatus
from typing import Any, ClassVar, cast

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thinkgraph.server.guards import refuse

__all__ = [
    "HEADER_TIMEOUT_S",
    "MAX_CONNECTIONS",
    "MAX_HEADER_BYTES",
    "BodyLimit",
    "StreamCap",
    "bounded_http_protocol",
]

logger = logging.getLogger("thinkgraph.server")

MAX_CONNECTIONS = 1000
"""The default number of connections open at once."""
HEADER_TIMEOUT_S = 10.0
"""The default time a request's line and headers have to arrive in."""
MAX_HEADER_BYTES = 64 << 10
"""The largest request head (line and headers) taken: 64 KiB."""


# -- connections --------------------------------------------------------------------------------


class _Open:
    """The open connections of one server, and those waiting for a head, longest first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.counted: dict[_Bounded, None] = {}
        self.waiting: dict[_Bounded, None] = {}
        """Insertion-ordered: the first has waited longest (the event loop is the only
        writer: no lock)."""

    def make_room(self) -> bool:
        """Close the connection that has waited longest for a head; False if none waits."""
        while self.waiting:
            oldest = next(iter(self.waiting))
            del self.waiting[oldest]
            if oldest.waits_for_head():
                oldest.shut(None)
                return True
        return False


class _Bounded(asyncio.Protocol):
    """Mixed into uvicorn's HTTP protocol by `bounded_http_protocol` (see the module)."""

    # Set by `bounded_http_protocol`; named apart from uvicorn's own attributes.
    _bounds: ClassVar[_Open]
    _header_timeout_s: ClassVar[float]
    _max_header_bytes: ClassVar[int]

    # Set by uvicorn's protocol (httptools and h11 alike).
    transport: asyncio.Transport
    cycle: Any
    loop: asyncio.AbstractEventLoop

    _timer: asyncio.TimerHandle | None = None
    _armed_cycle: Any = None
    _head_bytes = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        open_ = self._bounds
        if len(open_.counted) >= open_.limit and not open_.make_room():
            message = (
                f"{len(open_.counted)} connections are busy, the most this server takes; "
                "try again in a moment, or start the server with a higher --max-connections"
            )
            self.shut((503, message))
            return
        open_.counted[self] = None
        self._arm()

    def data_received(self, data: bytes) -> None:
        armed = self._timer is not None
        if armed:
            self._head_bytes += len(data)
        super().data_received(data)
        if self.transport.get_protocol() is not self:
            self._forget()  # upgraded (a WebSocket): the connection is another protocol's now
            return
        if not armed or self.transport.is_closing():
            return
        if self.cycle is not self._armed_cycle:
            self._disarm()  # a request's head is in: the app has it now
        elif self._head_bytes > self._max_header_bytes:
            message = (
                f"the request's line and headers are over {self._max_header_bytes} bytes; "
                "send fewer or shorter headers"
            )
            self.shut((431, message))

    def on_response_complete(self) -> None:
        # Not a method of asyncio.Protocol: uvicorn's protocol calls it after each answer.
        cast(Any, super()).on_response_complete()
        if not self.transport.is_closing() and self.waits_for_head(after_answer=True):
            self._arm()  # kept alive: the next head gets the same time

    def connection_lost(self, exc: Exception | None) -> None:
        self._forget()
        super().connection_lost(exc)

    def waits_for_head(self, after_answer: bool = False) -> bool:
        """Whether no request is in progress: waiting for the (next) request's head."""
        if not after_answer and (self._timer is None or self.cycle is not self._armed_cycle):
            return False
        return self.cycle is None or bool(self.cycle.response_complete)

    def shut(self, answer: tuple[int, str] | None) -> None:
        """Close the connection, first answering ``(status, message)`` if given."""
        self._forget()  # counted out now: closing takes a turn of the loop
        if self.transport.is_closing():
            return
        if answer is not None:
            self.transport.write(_plain_answer(*answer))
        self.transport.close()

    def _arm(self) -> None:
        self._disarm()
        self._armed_cycle = self.cycle
        self._head_bytes = 0
        self._timer = self.loop.call_later(self._header_timeout_s, self._too_slow)
        self._bounds.waiting[self] = None

    def _forget(self) -> None:
        self._disarm()
        self._bounds.counted.pop(self, None)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._bounds.waiting.pop(self, None)

    def _too_slow(self) -> None:
        self._timer = None
        if self.cycle is not self._armed_cycle:
            return
        logger.debug("closed a connection: its request head took over %g s", self._header_timeout_s)
        if self._head_bytes == 0:
            self.shut(None)  # nothing was asked: an idle connection just goes
            return
        message = (
            f"the request's line and headers took over {self._header_timeout_s:g} s to arrive; "
            "send them at once"
        )
        self.shut((408, message))


def _plain_answer(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 answer with a JSON ``{"error": message}`` that closes the connection."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


def bounded_http_protocol(
    max_connections: int = MAX_CONNECTIONS,
    header_timeout_s: float = HEADER_TIMEOUT_S,
    max_header_bytes: int = MAX_HEADER_BYTES,
) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol with a connection cap, a head timeout and a head size limit.

    Give it to uvicorn as its ``http``: ``uvicorn.Config(app, http=bounded_http_protocol())``.
    Each call makes a class of its own, which counts the connections of one server.

    Args:
        max_connections: the most connections open at once; past it, the one that waited
            longest for its request's head is closed, or (none waits) the new one refused
            with 503.
        header_timeout_s: the time a request's line and headers have to arrive in, from
            the connection's start or the previous answer; past it, the connection is
            closed (with 408 if part of a request came).
        max_header_bytes: the largest request line and headers taken (431 past it).
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    if max_connections < 1 or header_timeout_s <= 0 or max_header_bytes < 1:
        raise ValueError(
            "max_connections and max_header_bytes must be 1 or more and header_timeout_s "
            f"over 0, not {max_connections}, {max_header_bytes} and {header_timeout_s}"
        )
    limits = {
        "_bounds": _Open(max_connections),
        "_header_timeout_s": header_timeout_s,
        "_max_header_bytes": max_header_bytes,
    }
    return type("BoundedHTTPProtocol", (_Bounded, AutoHTTPProtocol), limits)


# -- bodies and streams -------------------------------------------------------------------------


class _TooLarge(Exception):
    """The body went past the limit while it was read."""


class BodyLimit:
    """ASGI middleware: refuse (413) a request body of more than `max_bytes`."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        message = (
            f"the request body is over this server's limit of {self.max_bytes} bytes; send "
            "less, or start the server with a higher --max-body-bytes"
        )
        # Close the connection after the answer: the rest of the body is never read.
        await refuse(scope, receive, send, 413, message, {"Connection": "close"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        read = 0
        answered = False

        async def counted() -> Message:
            nonlocal read
            message = await receive()
            if message["type"] == "http.request":
                read += len(message.get("body", b""))
                if read > self.max_bytes:
                    raise _TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except _TooLarge:
            if answered:
                raise  # too late to say so: the server drops the connection
            await self._refuse(scope, receive, send)


class StreamCap:
    """ASGI middleware: at most `limit` requests open at once to paths ending in `suffix`."""

    def __init__(self, app: ASGIApp, limit: int, suffix: str = "/events") -> None:
        self.app = app
        self.limit = limit
        self.suffix = suffix
        self.open = 0
        """Streams open now (the event loop is the only writer: no lock)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].endswith(self.suffix):
            await self.app(scope, receive, send)
            return
        if self.open >= self.limit:
            message = (
                f"{self.open} event streams are open, the most this server allows; close "
                "one, or start the server with a higher --max-streams"
            )
            await refuse(scope, receive, send, 429, message, {"Retry-After": "5"})
            return
        self.open += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.open -= 1

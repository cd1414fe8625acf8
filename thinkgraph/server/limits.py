"""How much the server takes: request bodies, and event streams open at once.

- `BodyLimit` (413): refuses a body over the limit from its declared ``Content-Length``
  before reading any of it, and one sent in chunks as soon as the bytes read pass the
  limit, so nobody makes the server read (and hold) more than the limit.
- `StreamCap` (429): each open event stream holds a connection and looks at the store
  every few tenths of a second; past the cap, a new one is refused until one closes.

Both are ASGI middlewares; the size of a task is checked where it is read (the app).
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thinkgraph.server.guards import refuse

__all__ = ["BodyLimit", "StreamCap"]


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

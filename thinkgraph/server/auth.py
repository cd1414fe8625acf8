"""A shared token in front of the HTTP surface: whoever can reach it can approve tool calls.

With a token set, every request must carry it: `Authorization: Bearer TOKEN` (programs),
or the cookie that opening a page with `?token=TOKEN` once sets (`/` or `/studio`; the
pages' event streams and forms cannot send headers). Without the token: 401 and a message
saying how to give it. Paths given as `open_paths` (the health probes) are answered to
GET and HEAD without it.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["COOKIE", "TokenGate"]

COOKIE = "thinkgraph_token"
"""The cookie the page keeps the token in (HttpOnly, SameSite=Strict)."""


class TokenGate:
    """ASGI middleware: let through only requests that carry the token."""

    def __init__(self, app: ASGIApp, token: str, open_paths: Iterable[str] = ()) -> None:
        """`open_paths`: paths answered to GET and HEAD without the token (health probes)."""
        if not token:
            raise ValueError("the token must not be empty")
        self.app = app
        self._token = token.encode()
        self._open = frozenset(open_paths)

    def _ok(self, given: str) -> bool:
        return bool(given) and hmac.compare_digest(given.encode(), self._token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in self._open and scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        offered = request.query_params.get("token")
        if request.method == "GET" and offered is not None and self._ok(offered):
            # Keep it in a cookie and drop it from the address bar (and the history).
            response = RedirectResponse(request.url.path, status_code=303)
            response.set_cookie(COOKIE, offered, httponly=True, samesite="strict")
            await response(scope, receive, send)
            return
        header = request.headers.get("authorization", "")
        bearer = header[len("bearer ") :] if header.lower().startswith("bearer ") else ""
        if self._ok(bearer) or self._ok(request.cookies.get(COOKIE, "")):
            await self.app(scope, receive, send)
            return
        refused = JSONResponse(
            {
                "error": "this server needs its token: send 'Authorization: Bearer TOKEN', "
                "or open /?token=TOKEN in a browser once"
            },
            status_code=401,
            headers={"WWW-Authenticate": "Bearer"},
        )
        await refused(scope, receive, send)

"""Who may use the server: its own names only, and for changes, its own pages only.

A page on another site, open in the user's browser, can reach a server on 127.0.0.1.
Two ASGI middlewares refuse it, with or without a token:

- `HostGate` (403): the request's ``Host`` must be one of the server's own names. A
  rebound DNS name (the attacker's domain resolving to 127.0.0.1) is same-origin for the
  browser, so only the Host it sends gives it away.
- `SameOriginGate`: a request that changes something (POST, PUT, PATCH, DELETE) must come
  from the server's own page or from a program: no other ``Origin`` and no
  ``Sec-Fetch-Site`` but ``same-origin`` or ``none`` (403), and a JSON body (415), which a
  cross-site form or a CORS "simple request" cannot send without a preflight we never
  answer.

Starlette's `TrustedHostMiddleware` checks the Host too, but drops the port, splits an
IPv6 literal (``[::1]:8000``) at its first colon, and answers a plain-text 400; this gate
keeps the port, reads IPv6 literals, and answers like the rest of the API.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from starlette.datastructures import Headers
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["LOOPBACK", "Host", "HostGate", "SameOriginGate", "refuse", "server_hosts"]

LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""The names of the loopback interface a server bound to it answers to."""

_WILDCARD = ("0.0.0.0", "::", "")


async def refuse(
    scope: Scope,
    receive: Receive,
    send: Send,
    status: int,
    message: str,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Answer with `status` and a one-line JSON ``{"error": message}``."""
    await JSONResponse({"error": message}, status, headers=headers)(scope, receive, send)


def _split(host: str) -> tuple[str, int | None]:
    """``name[:port]`` → (lower-case name without IPv6 brackets, port or None)."""
    host = host.strip().lower()
    if host.startswith("["):  # [::1]:8000
        name, _, rest = host[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif host.count(":") == 1:
        name, port = host.split(":")
    else:  # a bare name, or a bare IPv6 address
        name, port = host, ""
    if port and not port.isdigit():
        return "", None
    return name, int(port) if port else None


Host = tuple[str, int | None]
"""A name (lower case, IPv6 without brackets) and a port; None: any port."""


def server_hosts(host: str, port: int | None = None, allow: Iterable[str] = ()) -> frozenset[Host]:
    """The ``Host`` values a server bound to `host`:`port` answers to.

    Bound to loopback: its names (127.0.0.1, localhost, [::1]); bound to every interface
    (0.0.0.0, ::): those and nothing else, so other names must be in `allow`; bound to one
    address: that one. Each with `port`, or with any port when `port` is None. An entry
    of `allow` with a port matches that port only; one without matches any port.

    Raises:
        ValueError: an entry of `allow` is not ``NAME`` or ``NAME:PORT``.
    """
    name = host.strip().strip("[]").lower()
    names = LOOPBACK if name in LOOPBACK or name in _WILDCARD else (name,)
    found = {(n, port) for n in names}
    for entry in allow:
        if not _split(entry)[0]:
            raise ValueError(f"{entry!r} is not a host name: give NAME or NAME:PORT")
        found.add(_split(entry))
    return frozenset(found)


def _show(host: Host) -> str:
    name, port = host
    name = f"[{name}]" if ":" in name else name
    return name if port is None else f"{name}:{port}"


class HostGate:
    """ASGI middleware: refuse (403) a request whose ``Host`` is not one of `hosts`.

    `hosts` as `server_hosts` makes them: (name, port), or (name, None) for any port.
    """

    def __init__(self, app: ASGIApp, hosts: Iterable[Host]) -> None:
        self.app = app
        self._hosts = frozenset(hosts)

    def _ours(self, given: str) -> bool:
        name, port = _split(given)
        if not name:
            return False
        port = 80 if port is None else port
        return (name, port) in self._hosts or (name, None) in self._hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get("host", "")
        if self._ours(given):
            await self.app(scope, receive, send)
            return
        names = ", ".join(sorted(_show(h) for h in self._hosts))
        message = (
            f"this server does not answer to the host {given!r} (it answers to {names}); "
            "open it by one of those, or start it with --allow-host NAME"
        )
        await refuse(scope, receive, send, 403, message)


_SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_OWN_FETCHES = ("same-origin", "none")
"""`Sec-Fetch-Site` of our own page's requests, and of what a person typed or opened."""


class SameOriginGate:
    """ASGI middleware: changes come from this server's own page or from a program.

    Refused: another ``Origin`` than the request's own host, a ``Sec-Fetch-Site`` other
    than same-origin or none (403), and a body that is not ``application/json`` (415) —
    except, under `form_paths`, a form (``application/x-www-form-urlencoded``), which the
    route takes only with its CSRF token (the studio's, `thinkgraph.server.studio.csrf`).
    """

    def __init__(self, app: ASGIApp, form_paths: tuple[str, ...] = ()) -> None:
        self.app = app
        self._form_paths = form_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _SAFE_METHODS:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is not None and not _same_origin(origin, headers.get("host", "")):
            message = (
                f"requests from {origin} may not change anything here; use this server's "
                "own page, or call it from a program (without an Origin header)"
            )
            await refuse(scope, receive, send, 403, message)
            return
        fetched = headers.get("sec-fetch-site")
        if fetched is not None and fetched not in _OWN_FETCHES:
            message = (
                f"a {fetched} request may not change anything here; use this server's own "
                "page, or call it from a program"
            )
            await refuse(scope, receive, send, 403, message)
            return
        media = headers.get("content-type", "").split(";")[0].strip().lower()
        form = media == "application/x-www-form-urlencoded" and any(
            scope["path"].startswith(prefix) for prefix in self._form_paths
        )
        if media != "application/json" and not form:
            message = (
                f"send the body as JSON with 'Content-Type: application/json' "
                f"(not {media or 'no content type'})"
            )
            await refuse(scope, receive, send, 415, message)
            return
        await self.app(scope, receive, send)


def _same_origin(origin: str, host: str) -> bool:
    """Whether `origin` (scheme://host[:port]) names the host the request went to."""
    scheme, sep, authority = origin.partition("://")
    if not sep or scheme not in ("http", "https"):
        return False  # "null" (a sandboxed frame, a file) and anything odd
    default = 80 if scheme == "http" else 443
    (name, port), (ours, our_port) = _split(authority), _split(host)
    return bool(name) and name == ours and (port or default) == (our_port or default)

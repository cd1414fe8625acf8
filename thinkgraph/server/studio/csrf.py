"""The studio's forms carry a token a page on another site cannot know (double submit).

The studio sets a random cookie (`COOKIE`, HttpOnly, SameSite=Strict) on the first page it
serves; each form it renders holds, in a hidden field, an HMAC of that cookie under a
secret of this server process. A POST is taken only when the field is the HMAC of the
cookie it came with. Another site can make a browser send the cookie (SameSite aside) but
can read neither it nor the page, so it cannot write the field; a restarted server has a
new secret, and an old page's forms are refused (403) until reloaded.

This is on top of `guards.SameOriginGate` (another Origin, or a cross-site
``Sec-Fetch-Site``, is refused before any form is read) and of the token, when the
server has one.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from starlette.requests import Request

__all__ = ["COOKIE", "FIELD", "Csrf"]

COOKIE = "thinkgraph_studio"
"""The cookie that holds the browser's random value."""

FIELD = "csrf"
"""The form field that holds the HMAC of that value."""


class Csrf:
    """Issue and check the studio's form tokens; one per server process."""

    def __init__(self, secret: bytes | None = None) -> None:
        self._secret = secret or secrets.token_bytes(32)

    def token(self, value: str) -> str:
        """The form token for the cookie `value`."""
        return hmac.new(self._secret, value.encode(), hashlib.sha256).hexdigest()

    @staticmethod
    def cookie(request: Request) -> tuple[str, bool]:
        """The browser's cookie value, and whether it is new (to be set on the answer)."""
        value = request.cookies.get(COOKIE, "")
        if len(value) == 43 and value.replace("-", "").replace("_", "").isalnum():
            return value, False
        return secrets.token_urlsafe(32), True

    def holds(self, request: Request, given: str) -> bool:
        """Whether `given` is the token of the cookie the request came with."""
        value = request.cookies.get(COOKIE, "")
        return bool(value and given) and hmac.compare_digest(self.token(value), given)

"""What the studio tests share: an agent whose runs pause for approval, a client."""

from __future__ import annotations

import re
import time
from typing import Any

from starlette.testclient import TestClient

from tests.server.support import SEND, send

__all__ = ["BASE", "SEND", "form_of", "send", "wait_status"]

BASE = "http://127.0.0.1:8000"


def wait_status(client: TestClient, thread: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        doc: dict[str, Any] = client.get(f"/runs/{thread}").json()
        if doc.get("status") == status:
            return doc
        time.sleep(0.05)
    raise AssertionError(f"thread {thread} never became {status}: {doc}")


def form_of(html: str, button: str) -> dict[str, str]:
    """The fields of the form that holds the button named `button` (as a browser posts
    them when that button is pressed)."""
    for form in re.findall(r"<form method=\"post\".*?</form>", html, re.S):
        if f">{button}</button>" not in form:
            continue
        fields = dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', form))
        for name, value in re.findall(
            r'<input type="text" id="[^"]*" name="([^"]+)" value="([^"]*)"', form
        ):
            fields[name] = value
        pressed = re.search(rf'<button name="action" value="([^"]+)">{button}</button>', form)
        assert pressed is not None
        fields["action"] = pressed.group(1)
        return {k: _unescape(v) for k, v in fields.items()}
    raise AssertionError(f"no form with a {button!r} button in the page")


def _unescape(value: str) -> str:
    import html

    return html.unescape(value)

"""`thinkgraph serve`'s live page in a real headless Chromium: a run shown as it pauses,
approved from the page, followed to its end (the routes: test_server.py)."""

from __future__ import annotations

import httpx
from playwright.sync_api import Page, expect

from tests.server.support import AUTH, TOKEN


def test_the_live_page_shows_a_run_and_approves_it_in_a_real_browser(
    served: str, page: Page
) -> None:
    httpx.post(served + "/runs", json={"task": "add then publish", "thread_id": "b1"}, headers=AUTH)
    page.goto(served + f"/?token={TOKEN}#thread=b1")  # the cookie, then the page
    body = page.locator("body")
    expect(body).to_contain_text("waits for approval: publish")
    shown = body.inner_text()
    assert "#4 tool_result" in shown and "add → ok" in shown
    # The stream ended at the pause; no reconnecting (EventSource.CLOSED is 2).
    page.wait_for_function("() => source.readyState === 2", timeout=10_000)
    page.locator("#pending").get_by_role("button", name="Approve").click()
    expect(body).to_contain_text("answer: 3")
    shown = body.inner_text()
    assert "#9 human" in shown and "approve" in shown and "#14 final" in shown
    assert "waits for approval" not in shown
    assert shown.count("#4 tool_result") == 1  # each step once, though streamed twice
    done = httpx.get(served + "/runs/b1", headers=AUTH).json()
    assert done["status"] == "done" and done["answer"] == "3"

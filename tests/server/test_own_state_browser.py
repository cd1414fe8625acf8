"""A run's own state on the live page in a real headless Chromium: as text, never as markup,
masked as every view masks it (over HTTP: test_own_state.py).

The graph (`tests.cli.state_graphs:planned`) declares a plan (appended by a reducer) and a
score; a fork sets the plan to a text with a credential and markup in it.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.server.support import MARKUP, SECRET, Live, forked, wait_status
from thinkgraph import Agent
from thinkgraph.server import build_app


def test_the_page_shows_the_runs_own_state_as_text(
    planner: Agent, page: Page, tmp_path: Path
) -> None:
    live = Live(build_app(planner, poll_s=0.05))
    try:
        started = httpx.post(live.url + "/runs", json={"task": "plan it", "thread_id": "p1"})
        assert started.status_code == 202
        wait_status(lambda p: httpx.get(live.url + p), "p1", "done", within=30)
        forked(planner)

        page.goto(live.url + "/#thread=p1")
        keys = page.locator("#state li")
        expect(keys).to_have_text(['plan = ["step 1","step 2"]', "score = 20"])

        page.evaluate("() => watch('f1')")
        plan = "plan = " + json.dumps(["call ***", MARKUP], separators=(",", ":"))
        expect(keys.first).to_have_text(plan)
        expect(keys).to_have_count(2)
        assert page.locator("#state img").count() == 0
        assert page.title() == "thinkgraph"
        assert SECRET not in page.locator("body").inner_text()
        page.screenshot(path=str(tmp_path / "state.png"))
    finally:
        live.stop()

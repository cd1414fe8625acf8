"""The live page in a real headless Chromium: edit a waiting call (a bad edit is refused next
to it and the run stays paused), answer one with text, the diagram following the run, the
list paged. (Its routes: test_page.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
from playwright.sync_api import Page, expect

from tests.server.support import Live, wait_status
from thinkgraph import Agent
from thinkgraph.server import build_app


def test_the_live_page_edits_and_answers_calls_draws_the_run_and_pages_the_list(
    sender: Agent, page: Page, tmp_path: Path
) -> None:
    live = Live(build_app(sender, poll_s=0.05))
    try:
        threads = ["e1", "e2", *(f"more{i}" for i in range(10))]  # 12 runs: two pages
        for thread in threads:
            started = httpx.post(live.url + "/runs", json={"task": "send it", "thread_id": thread})
            assert started.status_code == 202
        for thread in threads:
            wait_status(lambda p: httpx.get(live.url + p), thread, "paused")

        page.goto(live.url + "/#thread=e1")
        pending = page.locator("#pending")
        expect(pending).to_contain_text('waits for approval: send({"to":"ops","count":2})')
        # The diagram: drawn by the server, shown as an image, with the path to the pause.
        page.wait_for_function("() => document.querySelector('#drawing img')?.naturalWidth > 0")
        drawn = page.evaluate("() => diagramText")
        assert ">think</text>" in drawn and "paused (approval: send)" in drawn
        page.screenshot(path=str(tmp_path / "paused.png"))

        # The run list, ten at a time.
        runs = page.locator("li.run")
        expect(runs).to_have_count(10)
        first = runs.evaluate_all("(lis) => lis.map((li) => li.dataset.thread)")
        expect(page.locator("#prev")).to_be_disabled()
        page.locator("#next").click()
        expect(runs).to_have_count(2)
        second = runs.evaluate_all("(lis) => lis.map((li) => li.dataset.thread)")
        assert sorted(first + second) == sorted(threads)
        expect(page.locator("#next")).to_be_disabled()
        expect(page.locator("body")).to_contain_text("runs 11–12")
        page.locator("#prev").click()
        expect(runs).to_have_count(10)

        # Edit with a value the schema refuses: said next to the call; the run waits on.
        pending.get_by_role("button", name="Edit", exact=True).click()
        args = pending.locator("textarea.args")
        assert json.loads(args.input_value()) == {"to": "ops", "count": 2}
        args.fill('{"to": "team", "count": "lots"}')
        pending.get_by_role("button", name="Run with these arguments").click()
        fault = pending.locator(".pending[data-call] .fault")
        expect(fault).to_contain_text("still paused")
        assert "count" in fault.text_content() and "integer" in fault.text_content()
        page.screenshot(path=str(tmp_path / "refused.png"))
        doc = httpx.get(live.url + "/runs/e1").json()
        assert doc["status"] == "paused" and doc["pending"][0]["args"] == {"to": "ops", "count": 2}

        # Good arguments: the call runs with them.
        args.fill('{"to": "team", "count": 5}')
        pending.get_by_role("button", name="Run with these arguments").click()
        expect(page.locator("body")).to_contain_text("answer: sent")
        doc = wait_status(lambda p: httpx.get(live.url + p), "e1", "done")
        [result] = [s for s in doc["steps"] if s["type"] == "tool_result"]
        assert result["output"] == "sent 5 to team"
        # The diagram is drawn again once the run ended: the path now reaches the end.
        page.wait_for_function(
            "() => diagramText.includes('>finalize</text>') && !diagramText.includes('paused')"
        )

        # A second run answered with text instead of running the call.
        page.evaluate("() => watch('e2')")
        expect(pending).to_contain_text("waits for approval: send")
        pending.get_by_role("button", name="Respond").click()
        pending.locator(".pending .form textarea").fill("it went out by hand already")
        pending.get_by_role("button", name="Send response").click()
        expect(page.locator("body")).to_contain_text("answer: sent")
        doc = wait_status(lambda p: httpx.get(live.url + p), "e2", "done")
        [result] = [s for s in doc["steps"] if s["type"] == "tool_result"]
        assert result["node"] == "approve"  # answered at the gate; `send` never ran
        assert result["output"] == "it went out by hand already"
    finally:
        live.stop()

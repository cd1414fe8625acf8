"""The live page: its routes (the run's diagram, the run list in pages), then the page itself
in a real headless chromium: edit a waiting call (a bad edit is refused next to it and the
run stays paused), answer one with text, the diagram following the run, the list paged.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.server.support import Live
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.server import build_app
from thinkgraph.server.page import PAGE, PAGE_CSP


@tool(requires_approval=True)
def send(to: str, count: int) -> str:
    """Send `count` copies of the report to `to`."""
    return f"sent {count} to {to}"


SEND = [
    'Thought: send it\nAction: send\nAction Input: {"to": "ops", "count": 2}',
    "Thought: done\nFinal Answer: sent",
]
"""A run that pauses once, for approval of `send`, then ends with the answer "sent"."""


@pytest.fixture
def sender(tmp_path: Path) -> Iterator[Agent]:
    made = Agent(ScriptedModel(SEND), [send], store=f"sqlite:///{tmp_path / 'runs.db'}")
    with made:
        yield made


def _wait_status(get: Any, thread: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        doc: dict[str, Any] = get(f"/runs/{thread}").json()
        if doc.get("status") == status:
            return doc
        time.sleep(0.05)
    raise AssertionError(f"thread {thread} never became {status}")


def test_the_diagram_route_draws_the_path_a_run_took(sender: Agent) -> None:
    with TestClient(build_app(sender, poll_s=0.05), base_url=BASE) as client:
        client.post("/runs", json={"task": "send it", "thread_id": "d1"})
        _wait_status(client.get, "d1", "paused")
        drawn = client.get("/runs/d1/diagram")
        assert drawn.status_code == 200
        assert drawn.headers["content-type"].startswith("image/svg+xml")
        assert drawn.headers["x-content-type-options"] == "nosniff"
        assert "<svg" in drawn.text
        for node in ("think", "approve", "act", "finalize"):
            assert f">{node}</text>" in drawn.text
        assert "paused (approval: send)" in drawn.text
        mermaid = client.get("/runs/d1/diagram", params={"format": "mermaid"})
        assert mermaid.headers["content-type"].startswith("text/plain")
        assert mermaid.text.startswith("graph TD;") and 'think["think<br/>×1"]' in mermaid.text
        missing = client.get("/runs/none/diagram")
        assert missing.status_code == 404 and "no run is stored" in missing.json()["error"]
        wrong = client.get("/runs/d1/diagram", params={"format": "png"})
        assert wrong.status_code == 400 and "svg, mermaid or dot" in wrong.json()["error"]


def test_without_graphviz_the_diagram_is_the_mermaid_text(
    sender: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    from thinkgraph.viz import GraphvizNotFoundError

    drawn = sender.draw

    def no_graphviz(fmt: str, thread_id: str | None = None) -> str | bytes:
        if fmt == "svg":
            raise GraphvizNotFoundError("no dot here")
        return drawn(fmt, thread_id)

    monkeypatch.setattr(sender, "draw", no_graphviz)
    with TestClient(build_app(sender, poll_s=0.05), base_url=BASE) as client:
        client.post("/runs", json={"task": "send it", "thread_id": "m1"})
        _wait_status(client.get, "m1", "paused")
        fallback = client.get("/runs/m1/diagram")
    assert fallback.status_code == 200
    assert fallback.headers["content-type"].startswith("text/plain")
    assert "paused (approval: send)" in fallback.text


def test_the_run_list_comes_in_pages_with_a_link_to_the_next(sender: Agent) -> None:
    with TestClient(build_app(sender, poll_s=0.05), base_url=BASE) as client:
        for i in range(5):
            client.post("/runs", json={"task": "send it", "thread_id": f"p{i}"})
        for i in range(5):
            _wait_status(client.get, f"p{i}", "paused")
        everything = [r["thread_id"] for r in client.get("/runs").json()]
        assert sorted(everything) == [f"p{i}" for i in range(5)]
        first = client.get("/runs", params={"limit": 2})
        assert [r["thread_id"] for r in first.json()] == everything[:2]
        assert first.headers["link"] == '</runs?limit=2&offset=2>; rel="next"'
        second = client.get("/runs", params={"limit": 2, "offset": 2})
        assert [r["thread_id"] for r in second.json()] == everything[2:4]
        last = client.get("/runs", params={"limit": 2, "offset": 4})
        assert [r["thread_id"] for r in last.json()] == everything[4:]
        assert "link" not in last.headers
        assert client.get("/runs", params={"offset": 9}).json() == []
        for bad in ({"limit": 0}, {"limit": "many"}, {"offset": -1}):
            refused = client.get("/runs", params=bad)
            assert refused.status_code == 400 and "whole number" in refused.json()["error"]


def test_the_page_runs_only_its_own_script_and_style_and_has_no_inline_handlers(
    sender: Agent,
) -> None:
    with TestClient(build_app(sender), base_url=BASE) as client:
        page = client.get("/")
    assert page.headers["content-security-policy"] == PAGE_CSP
    assert "default-src 'none'" in PAGE_CSP and "unsafe-inline" not in PAGE_CSP
    assert not re.search(r"<[^>]+\son[a-z]+\s*=", PAGE)  # no onclick="..." attributes
    assert " style=" not in PAGE  # inline style attributes would need 'unsafe-inline'
    assert "innerHTML" not in PAGE and "<script src" not in PAGE


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
            _wait_status(lambda p: httpx.get(live.url + p), thread, "paused")

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
        doc = _wait_status(lambda p: httpx.get(live.url + p), "e1", "done")
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
        doc = _wait_status(lambda p: httpx.get(live.url + p), "e2", "done")
        [result] = [s for s in doc["steps"] if s["type"] == "tool_result"]
        assert result["node"] == "approve"  # answered at the gate; `send` never ran
        assert result["output"] == "it went out by hand already"
    finally:
        live.stop()

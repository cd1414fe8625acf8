"""A run's own state over HTTP: in the run's document, in its stream's status events, and on
the page, masked as every view masks it; on the page as text, never as markup.

The graph (`tests.cli.state_graphs:planned`) declares a plan (appended by a reducer) and a
score; a fork sets the plan to a text with a credential and markup in it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect
from starlette.testclient import TestClient

from tests.cli.state_graphs import PLANNED
from tests.server.conftest import BASE
from tests.server.support import Live, events
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app

SECRET = "sk-proj-abcdefghijklmnop1234"
MARKUP = '<img src=x onerror="document.title=1">'


@pytest.fixture
def planner(tmp_path: Path) -> Iterator[Agent]:
    made = Agent(ScriptedModel(["Thought: done\nFinal Answer: 42"] * 4),
                 store=f"sqlite:///{tmp_path / 'runs.db'}", graph=PLANNED)  # fmt: skip
    with made:
        yield made


def done(get: Any, thread: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        doc: dict[str, Any] = get(f"/runs/{thread}").json()
        if doc.get("status") == "done":
            return doc
        time.sleep(0.05)
    raise AssertionError(f"thread {thread} never finished")


def forked(agent: Agent) -> None:
    """Fork p1 after its first planner as f1, its plan set to a secret and markup."""
    at = next(c.checkpoint_id for c in agent.history("p1") if c.node == "planner")
    agent.fork("p1", at, state={"plan": [f"call {SECRET}", MARKUP]}, new_thread_id="f1")


def test_the_run_document_and_its_status_events_carry_its_own_state_masked(
    planner: Agent,
) -> None:
    with TestClient(build_app(planner, poll_s=0.05), base_url=BASE) as client:
        assert client.post("/runs", json={"task": "plan it", "thread_id": "p1"}).is_success
        doc = done(client.get, "p1")
        assert doc["state"] == {"plan": ["step 1", "step 2"], "score": 20}

        forked(planner)
        shown = client.get("/runs/f1")
        assert shown.json()["state"] == {"plan": ["call ***", MARKUP], "score": 20}
        with client.stream("GET", "/runs/f1/events") as stream:
            seen = list(events(stream.iter_lines()))
        statuses = [data for kind, data in seen if kind == "status"]
        assert statuses[-1]["state"] == {"plan": ["call ***", MARKUP], "score": 20}
        assert SECRET not in shown.text and all(SECRET not in json.dumps(d) for _, d in seen)


def test_the_page_shows_the_runs_own_state_as_text(
    planner: Agent, page: Page, tmp_path: Path
) -> None:
    live = Live(build_app(planner, poll_s=0.05))
    try:
        started = httpx.post(live.url + "/runs", json={"task": "plan it", "thread_id": "p1"})
        assert started.status_code == 202
        done(lambda p: httpx.get(live.url + p), "p1")
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

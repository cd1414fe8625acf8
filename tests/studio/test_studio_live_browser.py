"""A run's page in a real headless Chromium follows the run: when the run pauses, the
forms that answer it appear without a reload, a press of one answers it, and the page
says when the run is done; the tokens per node follow too."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.server.support import Live
from tests.studio.support import send
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.llm.base import ModelReply, ModelRequest
from thinkgraph.server import build_app

SLOW_THEN_SEND = [
    "Thought: wait first\nAction: wait\nAction Input: {}",
    'Thought: send it\nAction: send\nAction Input: {"to": "ops", "count": 2}',
    "Thought: done\nFinal Answer: sent",
]
"""A run that waits in `wait` (so a page opens on it running), then pauses for approval
of `send`, then ends with the answer "sent"."""

GO = threading.Event()
"""Set by a test once its page is open: `wait` returns then."""


@tool
async def wait() -> str:
    """Wait until the test lets the run go on."""
    await asyncio.to_thread(GO.wait, 20)
    return "waited"


class Metered(ScriptedModel):
    """A scripted model that reports 10 prompt and 5 completion tokens a call."""

    def complete(self, request: ModelRequest) -> ModelReply:
        reply = super().complete(request)
        return dataclasses.replace(reply, prompt_tokens=10, completion_tokens=5, cost_usd=0.25)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Live]:
    store = f"sqlite:///{tmp_path / 'r.db'}"
    GO.clear()
    with Agent(Metered(SLOW_THEN_SEND * 2), [wait, send], store=store) as agent:
        live = Live(build_app(agent, poll_s=0.05))
        try:
            yield live
        finally:
            live.stop()


def _running(live: Live, thread: str) -> None:
    started = httpx.post(f"{live.url}/runs", json={"task": "send it", "thread_id": thread})
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 20
    while httpx.get(f"{live.url}/runs/{thread}").json().get("status") != "running":
        assert time.monotonic() < deadline, "the run never ran"
        time.sleep(0.02)


def test_the_forms_appear_when_the_run_pauses_and_a_press_finishes_it(
    browser: Browser, served: Live
) -> None:
    _running(served, "w1")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{served.url}/studio/runs/w1")
    approve = page.get_by_role("button", name="Approve")
    expect(page.locator("#status")).to_have_text("running")
    assert approve.count() == 0
    GO.set()
    expect(approve).to_be_visible(timeout=15000)  # no reload: the script brought it
    expect(page.locator("#status")).to_have_text("paused")
    think = page.locator('table[aria-label="tokens and cost per node"] tr[data-node="think"]')
    expect(think).to_contain_text("30")  # two model calls so far, 15 tokens each
    approve.click()
    expect(page).to_have_url(f"{served.url}/studio/runs/w1")
    expect(page.locator("#status")).to_have_text("done", timeout=15000)
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)
    expect(think).to_contain_text("45")
    context.close()


def test_a_second_tab_loses_the_forms_when_the_run_moves_on(browser: Browser, served: Live) -> None:
    _running(served, "w2")
    context = browser.new_context()
    page, other = context.new_page(), context.new_page()
    page.goto(f"{served.url}/studio/runs/w2")
    other.goto(f"{served.url}/studio/runs/w2")
    GO.set()
    expect(other.get_by_role("button", name="Approve")).to_be_visible(timeout=15000)
    expect(page.get_by_role("button", name="Approve")).to_be_visible(timeout=15000)
    page.get_by_role("button", name="Approve").click()
    expect(other.locator("#status")).to_have_text("done", timeout=15000)
    expect(other.get_by_role("button", name="Approve")).to_have_count(0)  # not left stale
    context.close()


def test_without_scripts_the_forms_appear_on_a_reload(browser: Browser, served: Live) -> None:
    _running(served, "w3")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{served.url}/studio/runs/w3")
    GO.set()
    deadline = time.monotonic() + 20
    while httpx.get(f"{served.url}/runs/w3").json().get("status") != "paused":
        assert time.monotonic() < deadline, "the run never paused"
        time.sleep(0.05)
    expect(page.get_by_role("button", name="Approve")).to_have_count(0)  # nothing moves
    page.reload()
    page.get_by_role("button", name="Approve").click()
    expect(page).to_have_url(f"{served.url}/studio/runs/w3")
    context.close()


def test_each_new_pause_swaps_in_its_own_forms(browser: Browser, tmp_path: Path) -> None:
    """A tab that presses nothing follows the run: Continue at a breakpoint, then, once
    another tab continued it, Approve for the call it waits for, then Continue again."""
    store = f"sqlite:///{tmp_path / 'b.db'}"
    GO.clear()
    points = {"after": ["act"]}
    with Agent(Metered(SLOW_THEN_SEND), [wait, send], store=store, breakpoints=points) as agent:
        served = Live(build_app(agent, poll_s=0.05))
        try:
            _running(served, "p1")
            context = browser.new_context()
            watcher, page = context.new_page(), context.new_page()
            watcher.goto(f"{served.url}/studio/runs/p1")
            expect(watcher.locator("#status")).to_have_text("running")
            GO.set()
            for button in ("Continue", "Approve", "Continue"):
                expect(watcher.get_by_role("button", name=button)).to_be_visible(timeout=15000)
                page.goto(f"{served.url}/studio/runs/p1")
                page.get_by_role("button", name=button).click()
                expect(watcher.get_by_role("button", name=button)).to_have_count(0, timeout=15000)
            expect(watcher.locator("#status")).to_have_text("done", timeout=15000)
            context.close()
        finally:
            served.stop()


@pytest.mark.parametrize("first", ["running", "breakpoint"])
def test_a_pause_at_the_checkpoint_the_page_was_drawn_at_still_brings_its_forms(
    browser: Browser, tmp_path: Path, first: str
) -> None:
    """The approval pause of a run is at the checkpoint its approve node started from: a
    page drawn then (the run still deciding, or paused at a breakpoint after think) has
    that checkpoint already, and must still swap in the forms of the pause that came."""
    store = f"sqlite:///{tmp_path / 'c.db'}"
    replies = ['Thought: send it\nAction: send\nAction Input: {"to": "ops", "count": 2}',
               "Thought: done\nFinal Answer: sent"]  # fmt: skip
    points = {"after": ["think"]}
    with Agent(ScriptedModel(replies), [send], store=store, breakpoints=points) as agent:
        served = Live(build_app(agent, poll_s=0.05))
        try:
            started = httpx.post(f"{served.url}/runs", json={"task": "send", "thread_id": "a1"})
            assert started.status_code == 202, started.text
            _until(served, "a1", "paused")
            at = agent.checkpoint_id("a1")
            page = browser.new_page()
            page.goto(f"{served.url}/studio/runs/a1")
            expect(page.get_by_role("button", name="Continue")).to_be_visible()
            if first == "running":  # the page as drawn while the approve node decides
                page.evaluate("document.getElementById('steer').hidden = true")
                page.evaluate("document.getElementById('live').dataset.status = 'running'")
            answered = httpx.post(f"{served.url}/runs/a1/resume", json={})
            assert answered.status_code == 202, answered.text
            deadline = time.monotonic() + 20
            while (
                not agent.result("a1").pending or agent.result("a1").pending[0].kind != "approval"
            ):
                assert time.monotonic() < deadline, "the run never paused for approval"
                time.sleep(0.05)
            assert agent.checkpoint_id("a1") == at  # the same checkpoint, another pause
            expect(page.get_by_role("button", name="Approve")).to_be_visible(timeout=15000)
            expect(page.get_by_role("button", name="Continue")).to_have_count(0)
            page.get_by_role("button", name="Approve").click()
            # The next pause (after think again) swaps its Continue in; it ends the run.
            page.get_by_role("button", name="Continue").click(timeout=15000)
            _until(served, "a1", "done")
            page.close()
        finally:
            served.stop()


def _until(live: Live, thread: str, status: str) -> None:
    deadline = time.monotonic() + 20
    while httpx.get(f"{live.url}/runs/{thread}").json().get("status") != status:
        assert time.monotonic() < deadline, f"the run never became {status}"
        time.sleep(0.05)

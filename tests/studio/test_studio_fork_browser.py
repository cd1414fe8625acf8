"""Fork and replay in a real headless Chromium (Playwright), with and without JavaScript:
an argument edited in its own field of the fork form, and a replay's report on the
comparison, reached by the page's own redirect (and reload, while it runs)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.server.support import Live
from tests.studio.support import SEND, send
from thinkgraph import Agent, ScriptedModel
from thinkgraph.policies import ReActText
from thinkgraph.server import build_app


def _wait(live: Live, thread: str, status: str) -> dict[str, object]:
    deadline = time.monotonic() + 20
    while (doc := httpx.get(f"{live.url}/runs/{thread}").json()).get("status") != status:
        assert time.monotonic() < deadline, f"the run never became {status}: {doc}"
        time.sleep(0.05)
    return doc


@pytest.fixture
def store(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'r.db'}"


@pytest.fixture
def served(store: str) -> Iterator[tuple[Live, Agent]]:
    with Agent(ScriptedModel(SEND * 4), [send], store=store) as agent:
        live = Live(build_app(agent, poll_s=0.05))
        try:
            yield live, agent
        finally:
            live.stop()


def _finished(agent: Agent, thread: str) -> None:
    agent.run("send the report", thread_id=thread)
    call = agent.result(thread).pending[0].call_id
    assert call is not None
    agent.resume(thread, {call: {"action": "approve"}})


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_fork_with_an_argument_edited_in_its_field(
    browser: Browser, served: tuple[Live, Agent], javascript: bool
) -> None:
    live, agent = served
    _finished(agent, "k1")
    at = next(h.checkpoint_id for h in agent.history("k1") if h.node == "think")
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live.url}/studio/runs/k1/at/{at}")
    fork = page.get_by_role("form", name="fork")
    fork.get_by_label("count").fill("7")
    fork.get_by_label("new thread id (optional)").fill("k2")
    fork.get_by_role("button", name="Fork from here").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/k2")
    doc = _wait(live, "k2", "paused")
    assert doc["pending"][0]["args"] == {"to": "ops", "count": 7}  # type: ignore[index]
    context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_replay_shows_its_report_with_the_prompt_diff(
    browser: Browser, store: str, javascript: bool
) -> None:
    with Agent(ScriptedModel(SEND), [send], store=store) as agent:
        _finished(agent, "m1")
    policy = ReActText(intro="You are a careful clerk.")
    with Agent(ScriptedModel([]), [send], store=store, policy=policy) as agent:
        live = Live(build_app(agent, poll_s=0.05))
        context = browser.new_context(java_script_enabled=javascript)
        try:
            page = context.new_page()
            page.goto(f"{live.url}/studio/runs/m1")
            page.get_by_role("button", name="Replay").click()
            expect(page).to_have_url(f"{live.url}/studio/compare?a=m1&b=replay-m1")
            report = page.get_by_role("region", name="replay report")
            expect(report).to_contain_text("request changed at think#1", timeout=20_000)
            expect(report.locator(".diff-line.add")).to_contain_text("+You are a careful clerk.")
            expect(report.locator(".diff-line.del").first).to_be_visible()
        finally:
            context.close()
            live.stop()

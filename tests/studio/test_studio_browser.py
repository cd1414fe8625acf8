"""The studio in a real headless Chromium (Playwright): controls found by role and name,
each answer with and without JavaScript, keyboard only, a hostile run inert, a custom
graph's run with state of its own."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect

from tests.cli.state_graphs import PLANNED
from tests.server.support import Live
from tests.studio.support import SEND, send
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app

HOSTILE = '"><img src=x onerror="document.title=\'owned\'"><script>alert(3)</script>'


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Live, Agent]]:
    with Agent(ScriptedModel(SEND * 6), [send], store=f"sqlite:///{tmp_path / 'r.db'}") as agent:
        live = Live(build_app(agent, poll_s=0.05))
        try:
            yield live, agent
        finally:
            live.stop()


def _paused(live: Live, thread: str, task: str = "send the report") -> None:
    started = httpx.post(f"{live.url}/runs", json={"task": task, "thread_id": thread})
    assert started.status_code == 202, started.text
    deadline = time.monotonic() + 20
    while httpx.get(f"{live.url}/runs/{thread}").json().get("status") != "paused":
        assert time.monotonic() < deadline, "the run never paused"
        time.sleep(0.05)


def _done(live: Live, thread: str) -> dict[str, object]:
    deadline = time.monotonic() + 20
    while (doc := httpx.get(f"{live.url}/runs/{thread}").json()).get("status") != "done":
        assert time.monotonic() < deadline, f"the run never finished: {doc}"
        time.sleep(0.05)
    return doc


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_the_inbox_leads_to_the_run_and_approve_finishes_it(
    browser: Browser, served: tuple[Live, Agent], javascript: bool
) -> None:
    live, _ = served
    _paused(live, "b1")
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live.url}/studio")
    inbox = page.get_by_role("region", name="Waiting for you (1)")
    inbox.get_by_role("link", name="b1").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/b1")
    expect(page.locator("svg .node.paused")).to_have_count(1)
    page.get_by_role("button", name="Approve").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/b1")
    assert _done(live, "b1")["answer"] == "sent"
    page.go_back()
    page.go_back()
    expect(page).to_have_url(f"{live.url}/studio")  # real links: the back button works
    context.close()


def test_the_list_shows_a_run_with_its_task_status_and_graph(
    browser: Browser, served: tuple[Live, Agent]
) -> None:
    live, _ = served
    _paused(live, "l1", task="send the weekly report")
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{live.url}/studio")
    row = page.get_by_role("row").filter(has=page.get_by_role("link", name="l1"))
    expect(row).to_have_count(1)
    expect(row).to_contain_text("send the weekly report")
    expect(row).to_contain_text("paused")
    expect(row).to_contain_text("ours")
    page.get_by_label("Search runs").fill("weekly")
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(f"{live.url}/studio?q=weekly&status=&graph=")
    expect(page.get_by_role("row").filter(has=page.get_by_role("link", name="l1"))).to_be_visible()
    context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_edit_an_argument(browser: Browser, served: tuple[Live, Agent], javascript: bool) -> None:
    live, agent = served
    _paused(live, "e1")
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live.url}/studio/runs/e1")
    edit = page.get_by_role("form", name="edit call")
    edit.get_by_label("count").fill("7")
    edit.get_by_role("button", name="Edit").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/e1")
    _done(live, "e1")
    results = [s.model_dump() for s in agent.result("e1").chain if s.type == "tool_result"]
    assert "sent 7 to ops" in str(results)
    context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_reject_with_a_reason(
    browser: Browser, served: tuple[Live, Agent], javascript: bool
) -> None:
    live, agent = served
    _paused(live, "r1")
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live.url}/studio/runs/r1")
    reject = page.get_by_role("form", name="reject call")
    reject.get_by_label("reason").fill("not on a Friday")
    reject.get_by_role("button", name="Reject").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/r1")
    _done(live, "r1")
    chain = agent.result("r1").chain
    assert not [s for s in chain if s.type == "tool_result" and "sent" in str(s.model_dump())]
    assert "not on a Friday" in str([s.model_dump() for s in chain])
    context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_respond_with_a_result(
    browser: Browser, served: tuple[Live, Agent], javascript: bool
) -> None:
    live, agent = served
    _paused(live, "s1")
    context = browser.new_context(java_script_enabled=javascript)
    page = context.new_page()
    page.goto(f"{live.url}/studio/runs/s1")
    respond = page.get_by_role("form", name="respond to call")
    given = respond.get_by_label("the result to give instead")
    respond.get_by_role("button", name="Respond").click()  # empty: the browser asks for it
    assert given.evaluate("e => e.validity.valueMissing")
    assert httpx.get(f"{live.url}/runs/s1").json()["status"] == "paused"
    given.fill("posted by hand")
    respond.get_by_role("button", name="Respond").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/s1")
    _done(live, "s1")
    chain = agent.result("s1").chain
    assert not [s for s in chain if s.type == "tool_result" and "sent 2" in str(s.model_dump())]
    assert "posted by hand" in str([s.model_dump() for s in chain])
    context.close()


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_continue_at_a_breakpoint(browser: Browser, tmp_path: Path, javascript: bool) -> None:
    store = f"sqlite:///{tmp_path / 'bp.db'}"
    replies = ["Thought: done\nFinal Answer: 42"]
    with Agent(ScriptedModel(replies), store=store, breakpoints={"before": ["think"]}) as agent:
        live = Live(build_app(agent, poll_s=0.05))
        try:
            _paused(live, "bp1")
            context = browser.new_context(java_script_enabled=javascript)
            page = context.new_page()
            page.goto(f"{live.url}/studio")
            expect(page.get_by_role("region", name="Waiting for you (1)")).to_contain_text(
                "breakpoint before think"
            )
            page.goto(f"{live.url}/studio/runs/bp1")
            page.get_by_role("button", name="Continue").click()
            expect(page).to_have_url(f"{live.url}/studio/runs/bp1")
            assert _done(live, "bp1")["answer"] == "42"
            context.close()
        finally:
            live.stop()


def test_a_stale_second_tab_gets_409_and_changes_nothing(
    browser: Browser, served: tuple[Live, Agent]
) -> None:
    live, agent = served
    _paused(live, "s1")
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{live.url}/studio/runs/s1")
    # The same run open in a second tab without scripts (with them, its forms would go
    # away as the run moves on: test_studio_live_browser), so it keeps the stale form.
    still = browser.new_context(java_script_enabled=False)
    stale = still.new_page()
    stale.goto(f"{live.url}/studio/runs/s1")
    page.get_by_role("form", name="reject call").get_by_label("reason").fill("no")
    page.get_by_role("button", name="Reject").click()
    _done(live, "s1")
    before = len(agent.result("s1").chain)
    with stale.expect_response(lambda r: r.request.method == "POST") as answered:
        stale.get_by_role("button", name="Approve").click()
    assert answered.value.status == 409
    expect(stale.get_by_role("alert")).to_be_visible()
    assert len(agent.result("s1").chain) == before  # the late Approve ran nothing
    still.close()
    context.close()


def test_keyboard_only_approve(browser: Browser, served: tuple[Live, Agent]) -> None:
    live, _ = served
    _paused(live, "k1")
    page = browser.new_page()
    page.goto(f"{live.url}/studio/runs/k1")
    for _ in range(40):  # Tab through the page to the Approve button
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement && document.activeElement.textContent")
        if focused == "Approve":
            break
    else:
        raise AssertionError("Approve is not reached by Tab")
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert _done(live, "k1")["answer"] == "sent"
    # A node of the drawing is reached by Tab too, and Enter shows its steps.
    page.goto(f"{live.url}/studio/runs/k1")
    for _ in range(60):
        page.keyboard.press("Tab")
        label = page.evaluate("document.activeElement.getAttribute('aria-label')")
        if label == "steps of act":
            break
    else:
        raise AssertionError("the drawn node act is not reached by Tab")
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live.url}/studio/runs/k1?node=act")
    expect(page.get_by_role("heading", name="Steps of act")).to_be_visible()
    page.close()


def test_a_hostile_run_renders_inert(browser: Browser, served: tuple[Live, Agent]) -> None:
    live, _ = served
    hostile = '<script>alert(1)</script>"><img src=x onerror=alert(2)>' + "y" * 20000
    _paused(live, "h1", task=hostile)
    call = httpx.get(f"{live.url}/runs/h1").json()["pending"][0]["call_id"]
    edited = {"to": HOSTILE, "count": 1}
    answered = httpx.post(
        f"{live.url}/runs/h1/resume",
        json={"decisions": {call: {"action": "edit", "args": edited}}},
    )
    assert answered.status_code == 202, answered.text
    _done(live, "h1")  # its call's arguments and result now hold markup too
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    for path in ("/studio", "/studio/runs/h1"):
        page.goto(live.url + path)
        assert page.locator("main img").count() == 0
        assert page.locator("main script").count() == 0
        assert page.evaluate("document.title") != "owned"
    expect(page.get_by_text("<script>alert(1)</script>", exact=False).first).to_be_visible()
    assert dialogs == []
    page.close()


def test_a_custom_graphs_run_shows_its_nodes_and_own_state(
    browser: Browser, tmp_path: Path
) -> None:
    replies = ["Thought: done\nFinal Answer: 42"] * 2
    store = f"sqlite:///{tmp_path / 'c.db'}"
    with Agent(ScriptedModel(replies), store=store, graph=PLANNED) as agent:
        agent.run("plan it", thread_id="c1")
        live = Live(build_app(agent, poll_s=0.05))
        try:
            page = browser.new_page()
            page.goto(f"{live.url}/studio/runs/c1")
            nodes = page.locator("svg g.node").evaluate_all("els => els.map(e => e.dataset.node)")
            assert "planner" in nodes, nodes  # the user's own node, drawn from the run's shape
            expect(page.get_by_role("heading", name="State")).to_be_visible()
            expect(page.get_by_role("cell", name="plan", exact=True)).to_be_visible()
            # The node in the drawing is a link: a click shows that node's steps.
            page.get_by_role("link", name="steps of planner").click()
            expect(page).to_have_url(f"{live.url}/studio/runs/c1?node=planner")
            expect(page.get_by_role("heading", name="Steps of planner")).to_be_visible()
            page.close()
        finally:
            live.stop()


def test_the_whole_story_start_pause_edit_fork_replay_compare(
    browser: Browser, served: tuple[Live, Agent]
) -> None:
    live, agent = served
    page = browser.new_page()
    page.goto(f"{live.url}/studio")
    page.get_by_label("Task").fill("send the weekly report")
    page.get_by_label("Thread id (optional)").fill("story")
    page.get_by_role("button", name="Start").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/story")
    # The run may still be on its way when the page is drawn: the page then follows it
    # live and says when it paused, with a link that draws it again, forms and all.
    if not page.get_by_role("button", name="Edit").count():
        expect(page.get_by_role("status")).to_contain_text("The run is paused now.")
        page.get_by_role("link", name="Reload to see it").click()
    expect(page.locator("svg .node.paused")).to_have_count(1)
    page.get_by_label("count").fill("3")
    page.get_by_role("button", name="Edit").click()
    assert _done(live, "story")["answer"] == "sent"

    page.reload()
    page.get_by_role("region", name="checkpoints").get_by_role("link", name="think").first.click()
    call = next(s for s in agent.result("story").chain if s.type == "tool_call")
    page.get_by_label("steps to edit").fill(
        f'{{"{call.number}": {{"args": {{"to": "audit", "count": 1}}}}}}'
    )
    page.get_by_label("new thread id (optional)").fill("story-fork")
    page.get_by_role("button", name="Fork from here").click()
    expect(page).to_have_url(f"{live.url}/studio/runs/story-fork")
    expect(page.get_by_text('"to": "audit"').first).to_be_visible()

    page.goto(f"{live.url}/studio/runs/story")
    page.get_by_role("button", name="Replay").click()
    expect(page.get_by_text("replay: same")).to_be_visible()

    page.goto(f"{live.url}/studio/runs/story")
    page.get_by_label("another run").fill("story-fork")
    page.get_by_role("button", name="Compare").click()
    expect(page).to_have_url(f"{live.url}/studio/compare?a=story&b=story-fork")
    expect(page.locator("svg .node.diverge")).to_have_count(1)
    page.close()


def test_a_run_page_follows_the_run_live_without_a_new_layout(
    browser: Browser, served: tuple[Live, Agent]
) -> None:
    live, _ = served
    _paused(live, "l1")
    page = browser.new_page()
    page.goto(f"{live.url}/studio/runs/l1")
    expect(page.locator("svg .node.paused")).to_have_count(1)
    page.evaluate("window.__drawnOnce = document.querySelector('.graph svg')")
    call = httpx.get(f"{live.url}/runs/l1").json()["pending"][0]["call_id"]
    answered = httpx.post(  # answered elsewhere (the API): the page hears it
        f"{live.url}/runs/l1/resume", json={"decisions": {call: {"action": "approve"}}}
    )
    assert answered.status_code == 202, answered.text
    _done(live, "l1")
    expect(page.locator("svg .node.paused")).to_have_count(0)
    expect(page.locator('svg .node[data-node="finalize"].visited')).to_have_count(1)
    expect(page.get_by_role("status")).to_contain_text("The run is done now.")
    # The same drawing, its classes changed: the page was neither reloaded nor redrawn.
    assert page.evaluate("window.__drawnOnce === document.querySelector('.graph svg')")
    page.close()

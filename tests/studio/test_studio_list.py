"""The studio's runs list and inbox over HTTP: search by task as well as thread, pages by
links that keep the filters, the inbox newest first with each run's waiting call masked,
and an ask_human pause answered by form (retry, guidance, abort)."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from tests.studio.support import BASE, SEND, form_of, send, wait_status
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.server import build_app
from thinkgraph.server.studio import routes


@tool(requires_approval=True)
def login(user: str, password: str) -> str:
    """Log `user` in."""
    return f"{user} in: {password == 'hunter2'}"


LOGIN = [
    'Thought: log in\nAction: login\nAction Input: {"user": "ann", "password": "hunter2"}',
    "Thought: done\nFinal Answer: in",
]


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with (
        Agent(ScriptedModel(SEND * 6), [send], store=store) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as made,
    ):
        yield made


def _paused(client: TestClient, thread: str, task: str = "send it") -> None:
    assert client.post("/runs", json={"task": task, "thread_id": thread}).status_code == 202
    wait_status(client, thread, "paused")


def _table(page: str) -> str:
    return page.split("<tbody>")[1].split("</tbody>")[0]


def test_the_search_finds_a_run_by_its_task_and_the_list_shows_the_task(
    client: TestClient,
) -> None:
    _paused(client, "t-1", task="send the weekly report to ops")
    _paused(client, "t-2", task="order more coffee")
    found = _table(client.get("/studio", params={"q": "WEEKLY report"}).text)
    assert "t-1" in found and "t-2" not in found
    assert "send the weekly report to ops" in found
    by_thread = _table(client.get("/studio", params={"q": "t-2"}).text)
    assert "t-2" in by_thread and "t-1" not in by_thread


def test_pages_are_links_that_keep_the_filters(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(routes, "PAGE_SIZE", 2)
    for n in range(3):
        _paused(client, f"p-{n}")
    first = client.get("/studio", params={"status": "paused"}).text
    assert _table(first).count("<tr>") == 2
    older = re.search(r'<a href="([^"]+)">Older runs</a>', first)
    assert older is not None, "no link to the next page"
    href = html.unescape(older.group(1))
    assert "status=paused" in href and "offset=2" in href
    second = client.get(href).text
    assert _table(second).count("<tr>") == 1
    assert "Older runs" not in second
    newer = re.search(r'<a href="([^"]+)">Newer runs</a>', second)
    assert newer is not None and "status=paused" in html.unescape(newer.group(1))
    shown = re.findall(r"/studio/runs/(p-\d)", _table(first) + _table(second))
    assert sorted(shown) == ["p-0", "p-1", "p-2"]  # every run once, over both pages


def test_the_inbox_lists_paused_runs_newest_first_with_secrets_masked(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with (
        Agent(ScriptedModel(LOGIN * 3), [login], store=store) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        _paused(client, "older")
        time.sleep(0.01)
        _paused(client, "newer")
        listing = client.get("/studio").text
        inbox = listing.split('id="waiting"')[1].split("</section>")[0]
        assert inbox.index("newer") < inbox.index("older")
        assert "login(" in inbox and "ann" in inbox
        assert "hunter2" not in listing
        assert "hunter2" not in client.get("/studio/runs/newer").text


def test_an_edit_keeps_a_masked_argument_as_it_was(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with (
        Agent(ScriptedModel(LOGIN * 2), [login], store=store) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        _paused(client, "m1")
        fields = form_of(client.get("/studio/runs/m1").text, "Edit")
        assert fields["arg.password"] == "***"  # shown masked, never the secret
        fields["arg.user"] = "bob"
        done = client.post("/studio/runs/m1/answer", data=fields, follow_redirects=False)
        assert done.status_code == 303, done.text
        wait_status(client, "m1", "done")
        results = [s for s in agent.result("m1").chain if s.type == "tool_result"]
        assert "bob in: True" in str(results[-1].model_dump())  # the real password kept


def _asking(tmp_path: Path, replies: list[str]) -> Agent:
    limits = StepLimits(max_consecutive_failures=1, failure_policy="ask_human")
    return Agent(ScriptedModel(replies), limits=limits, store=f"sqlite:///{tmp_path / 'a.db'}")


@pytest.mark.parametrize(
    ("button", "extra", "status"),
    [("Retry", {}, "done"), ("Send guidance", {"text": "answer 42"}, "done"),
     ("Abort", {}, "failed")],
)  # fmt: skip
def test_an_ask_human_pause_is_answered_by_form(
    tmp_path: Path, button: str, extra: dict[str, str], status: str
) -> None:
    with (
        _asking(tmp_path, ["??", "Thought: done\nFinal Answer: 42"]) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        _paused(client, "q1")
        page = client.get("/studio/runs/q1").text
        assert "asks a person" in page
        inbox = client.get("/studio").text.split('id="waiting"')[1].split("</section>")[0]
        assert "/studio/runs/q1" in inbox and "Retry, give guidance, or abort?" in inbox
        fields = form_of(page, button)
        fields.update(extra)
        done = client.post("/studio/runs/q1/answer", data=fields, follow_redirects=False)
        assert done.status_code == 303, done.text
        doc = wait_status(client, "q1", status)
        kinds = [s.get("kind") for s in doc["steps"] if s.get("type") == "human"]
        assert kinds[-1] == fields["action"]


def test_the_inbox_says_what_each_paused_run_was_asked(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with (
        Agent(ScriptedModel(LOGIN * 2), [login], store=store) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        _paused(client, "a1", task="Log Ann in <b>now</b> with sk-abcdefghijklmnopqrstuv")
        listing = client.get("/studio", params={"q": "nothing matches this"}).text
        inbox = listing.split('id="waiting"')[1].split("</section>")[0]
        assert "Log Ann in &lt;b&gt;now&lt;/b&gt; with ***" in inbox  # as text, masked
        assert "sk-abcdefghijklmnopqrstuv" not in listing

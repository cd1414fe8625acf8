"""The server's guards hold for every studio route and form: the token, the Host, the
body and task limits; a hostile run's task, call arguments and answer are text on every
page; a checkpoint's own state keys are masked as everywhere."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from tests.cli.state_graphs import PLANNED
from tests.studio.support import BASE, form_of, send, wait_status
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app

TOKEN = "s3cret-token-for-the-studio"
HOSTILE = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'

PATH_VALUES = {"{thread}": "g1", "{checkpoint}": "x"}


def studio_paths(app: Starlette) -> tuple[list[str], list[str]]:
    """Every studio route of `app`, as a path to ask (GET) and to post to (POST): read from
    the app itself, so a route added later is guarded by these tests without a word here."""
    gets: list[str] = []
    posts: list[str] = []
    for route in app.routes:
        path = getattr(route, "path", "")
        if not path.startswith("/studio"):
            continue
        for name, value in PATH_VALUES.items():
            path = path.replace(name, value)
        assert "{" not in path, f"give {path} a value in PATH_VALUES"
        methods = getattr(route, "methods", None) or set()
        gets += [path] if "GET" in methods else []
        posts += [path] if "POST" in methods else []
    return gets, posts


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    call = json.dumps({"to": HOSTILE, "count": 1})
    replies = [
        f"Thought: {HOSTILE}\nAction: send\nAction Input: {call}",
        f"Thought: done\nFinal Answer: {HOSTILE}",
    ]
    with Agent(ScriptedModel(replies * 2), [send], store=f"sqlite:///{tmp_path / 'r.db'}") as a:
        yield a


def test_every_studio_route_needs_the_token_and_the_servers_own_host(agent: Agent) -> None:
    app = build_app(agent, token=TOKEN)
    gets, posts = studio_paths(app)
    assert "/studio/runs/g1/steer" in gets and "/studio/runs/g1/fork" in posts  # read, not listed
    with TestClient(app, base_url=BASE) as client:
        for path in gets:
            assert client.get(path).status_code == 401, path
            assert client.get(path, headers={"Host": "evil.example"}).status_code == 403, path
        for path in posts:
            sent = client.post(path, data={"task": "x"}, follow_redirects=False)
            assert sent.status_code == 401, path
        assert client.get("/studio", params={"token": TOKEN}).status_code == 200


def test_a_form_over_the_body_limit_is_413_and_a_task_over_the_task_limit_too(
    agent: Agent,
) -> None:
    app = build_app(agent, max_body_bytes=4096, max_task_bytes=100)
    with TestClient(app, base_url=BASE) as client:
        page = client.get("/studio").text
        token = re.search(r'name="csrf" value="([^"]+)"', page)
        assert token is not None
        huge = client.post("/studio/runs", data={"csrf": token.group(1), "task": "x" * 10_000})
        assert huge.status_code == 413
        long = client.post(
            "/studio/runs", data={"csrf": token.group(1), "task": "y" * 200, "thread_id": "t"}
        )
        assert long.status_code == 413, long.text
        assert "limit of 100 bytes" in long.text
        assert client.get("/runs/t").status_code == 404  # nothing was started


def test_a_hostile_runs_task_arguments_and_answer_are_text_on_every_page(agent: Agent) -> None:
    with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
        started = client.post("/runs", json={"task": HOSTILE + "z" * 5000, "thread_id": "g1"})
        assert started.status_code == 202
        wait_status(client, "g1", "paused")
        paused = [client.get(p).text for p in ("/studio", "/studio/runs/g1")]
        fields = form_of(paused[1], "Approve")
        assert client.post("/studio/runs/g1/answer", data=fields).status_code == 200
        assert wait_status(client, "g1", "done")["answer"] == HOSTILE
        at = re.findall(r'href="(/studio/runs/g1/at/[^"]+)"', client.get("/studio/runs/g1").text)
        pages = [
            *paused,
            client.get("/studio/runs/g1").text,
            client.get(at[-1]).text,
            client.get("/studio/compare", params={"a": "g1", "b": "g1"}).text,
        ]
        for text in pages:
            assert "<script>alert" not in text and "<img src=x" not in text
            assert "onerror=alert" not in text.replace("onerror=alert(2)&gt;", "")
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pages[1]  # the argument, as text
        assert "&lt;img src=x onerror=alert(2)&gt;" in pages[2]  # the answer, as text


def test_a_checkpoints_own_state_keys_are_masked(tmp_path: Path) -> None:
    secret = "sk-proj-abcdefghijklmnop1234"
    replies = ["Thought: done\nFinal Answer: 42"] * 4
    store = f"sqlite:///{tmp_path / 'p.db'}"
    with (
        Agent(ScriptedModel(replies), store=store, graph=PLANNED) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        agent.run("plan it", thread_id="p1")
        at = next(c.checkpoint_id for c in agent.history("p1") if c.node == "planner")
        agent.fork("p1", at, state={"plan": [f"call {secret}", HOSTILE]}, new_thread_id="f1")
        point = agent.history("f1")[-1].checkpoint_id
        page = client.get(f"/studio/runs/f1/at/{point}")
        assert page.status_code == 200
        assert secret not in page.text and "call ***" in page.text
        assert "<img src=x" not in page.text


def test_every_studio_form_is_refused_cross_site_and_without_its_csrf_token(agent: Agent) -> None:
    """Each studio POST, read from the app: a form from another site is 403 before it is
    read, and a same-site form without the page's CSRF token is 403 too; nothing starts."""
    app = build_app(agent)
    _gets, posts = studio_paths(app)
    assert len(posts) >= 4
    with TestClient(app, base_url=BASE) as client:
        for path in posts:
            for headers in ({"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}):
                sent = client.post(path, data={"task": "x"}, headers=headers)
                assert sent.status_code == 403, (path, headers)
            bare = client.post(path, data={"task": "x", "thread_id": "nope"})
            assert bare.status_code == 403, path
        assert client.get("/runs/nope").status_code == 404  # nothing started

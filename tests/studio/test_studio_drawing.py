"""A run's drawing: laid out once per graph shape (the served graph's as the server starts),
and exported as Mermaid and DOT text linked from the run's page (the page draws its own
SVG), served as plain text, never as a page."""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.studio.support import BASE, SEND, send, wait_status
from thinkgraph import Agent, ScriptedModel
from thinkgraph.server import build_app


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with (
        Agent(ScriptedModel(SEND * 2), [send], store=store) as agent,
        TestClient(build_app(agent, poll_s=0.05, token="t0ken"), base_url=BASE) as made,
    ):
        yield made


def test_a_run_page_links_its_drawing_as_mermaid_and_dot(client: TestClient) -> None:
    opened = client.get("/studio", params={"token": "t0ken"})  # keeps the token in a cookie
    assert opened.status_code == 200
    started = client.post("/runs", json={"task": "send it", "thread_id": "x<1>"})
    assert started.status_code == 202
    wait_status(client, "x<1>", "paused")
    page = client.get("/studio/runs/x%3C1%3E").text
    links = dict(
        (name, html.unescape(href))
        for href, name in re.findall(r'<a href="([^"]*/diagram[^"]*)">([^<]+)</a>', page)
    )
    assert links == {
        "Mermaid": "/runs/x%3C1%3E/diagram?format=mermaid",
        "DOT": "/runs/x%3C1%3E/diagram?format=dot",
    }
    mermaid = client.get(links["Mermaid"])
    dot = client.get(links["DOT"])
    for text in (mermaid, dot):
        assert text.status_code == 200
        assert text.headers["content-type"].startswith("text/plain")
        assert text.headers["x-content-type-options"] == "nosniff"
    assert mermaid.text.startswith("graph TD") and "paused (approval: send)" in mermaid.text
    assert dot.text.startswith("digraph") and "paused (approval: send)" in dot.text
    refused = client.get("/runs/x%3C1%3E/diagram", params={"format": "html"})
    assert refused.status_code == 400
    assert "svg, mermaid or dot" in refused.json()["error"]


def test_the_served_graph_is_laid_out_once_as_the_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server lays out its graph in the background as it starts; a page of one of its
    runs then lays out nothing (a 150-node graph's layout is most of its page's time)."""
    import thinkgraph.viz.layout as layout

    made: list[int] = []
    lay_out = layout._lay_out

    def counted(model: Any) -> Any:
        made.append(model.number_of_nodes())
        return lay_out(model)

    monkeypatch.setattr(layout, "_lay_out", counted)
    monkeypatch.setattr(layout, "_kept", type(layout._kept)())
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with (
        Agent(ScriptedModel(SEND * 2), [send], store=store) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        deadline = time.monotonic() + 20
        while not made and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(made) == 1, made
        assert client.post("/runs", json={"task": "send it", "thread_id": "w1"}).status_code == 202
        wait_status(client, "w1", "paused")
        page = client.get("/studio/runs/w1")
        assert page.status_code == 200 and "<svg" in page.text
    assert len(made) == 1, made


def test_a_run_page_marks_the_nodes_its_forks_were_taken_at(tmp_path: Path) -> None:
    """The node whose checkpoint a fork started from is a fork point on the source's drawing
    (a class, as the path and the pause are); a node no fork started from is not."""
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    with Agent(ScriptedModel(SEND * 4), [send], store=store) as agent:
        agent.run("send it", thread_id="src")
        at = next(c.checkpoint_id for c in agent.history("src") if c.node == "think")
        agent.fork("src", at, new_thread_id="child")
        with TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
            page = client.get("/studio/runs/src").text
            child = client.get("/studio/runs/child").text
    marked = _fork_points(page)
    assert marked == ["think"], marked
    assert _fork_points(child) == []  # the fork itself has no forks


def _fork_points(page: str) -> list[str]:
    """The drawn nodes of `page` with the class ``fork-point``."""
    groups = re.findall(r'<g class="([^"]*)" id="[^"]*" data-node="([^"]*)"', page)
    assert groups, "no drawn nodes"
    return [node for classes, node in groups if "fork-point" in classes.split()]

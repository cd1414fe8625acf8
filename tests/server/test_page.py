"""The live page's routes: the run's diagram, the run list in pages, the page's policy (the
page itself in a real browser: test_page_browser.py)."""

from __future__ import annotations

import re

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.server.support import wait_status
from thinkgraph import Agent
from thinkgraph.server import build_app
from thinkgraph.server.page import PAGE, PAGE_CSP


def test_the_diagram_route_draws_the_path_a_run_took(sender: Agent) -> None:
    with TestClient(build_app(sender, poll_s=0.05), base_url=BASE) as client:
        client.post("/runs", json={"task": "send it", "thread_id": "d1"})
        wait_status(client.get, "d1", "paused")
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
        wait_status(client.get, "m1", "paused")
        fallback = client.get("/runs/m1/diagram")
    assert fallback.status_code == 200
    assert fallback.headers["content-type"].startswith("text/plain")
    assert "paused (approval: send)" in fallback.text


def test_the_run_list_comes_in_pages_with_a_link_to_the_next(sender: Agent) -> None:
    with TestClient(build_app(sender, poll_s=0.05), base_url=BASE) as client:
        for i in range(5):
            client.post("/runs", json={"task": "send it", "thread_id": f"p{i}"})
        for i in range(5):
            wait_status(client.get, f"p{i}", "paused")
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

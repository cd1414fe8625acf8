"""A page in the user's browser must not use the local server: the attacks, refused.

No token here, as with `serve --no-token` on 127.0.0.1: only the Host, Origin,
Sec-Fetch-Site and content-type checks stand between another site and the runs.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from thinkgraph import Agent
from thinkgraph.server import build_app

TASK = {"task": "add then publish", "thread_id": "x1"}


def _one_line_error(response: Any) -> str:
    assert "\n" not in response.text.strip()
    message: str = response.json()["error"]
    return message


@pytest.mark.parametrize(
    "host", ["evil.example:8000", "evil.example", "127.0.0.1.evil.example:8000", "8000"]
)
def test_dns_rebinding_a_host_that_is_not_ours_is_refused(
    client: TestClient, agent: Agent, host: str
) -> None:
    # The attacker's name resolves to 127.0.0.1: the browser sends its Host, same-origin.
    read = client.get("/runs", headers={"host": host})
    assert read.status_code == 403 and "--allow-host" in _one_line_error(read)
    started = client.post("/runs", json=TASK, headers={"host": host})
    assert started.status_code == 403
    streamed = client.get("/runs/x1/events", headers={"host": host})
    assert streamed.status_code == 403
    time.sleep(0.1)
    assert agent.runs() == []


@pytest.mark.parametrize("host", ["127.0.0.1:8000", "localhost:8000", "[::1]:8000", "LOCALHOST"])
def test_the_loopback_names_are_ours(client: TestClient, host: str) -> None:
    assert client.get("/runs", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    ("headers", "body", "status"),
    [
        ({"origin": "http://evil.example"}, TASK, 403),
        ({"origin": "null"}, TASK, 403),
        ({"origin": "http://127.0.0.1:3000"}, TASK, 403),  # another port: another origin
        ({"sec-fetch-site": "cross-site"}, TASK, 403),
        ({"sec-fetch-site": "same-site"}, TASK, 403),
        ({"content-type": "text/plain"}, TASK, 415),  # a CORS "simple request"
        ({"content-type": "text/plain", "origin": "http://evil.example"}, TASK, 403),
        ({"content-type": "application/x-www-form-urlencoded"}, "task=x", 415),
        (
            {"content-type": "application/x-www-form-urlencoded", "origin": "http://evil.example"},
            "task=x",
            403,
        ),
        ({"content-type": "multipart/form-data; boundary=b"}, TASK, 415),
        ({"content-type": ""}, TASK, 415),
    ],
)
def test_a_cross_site_start_is_refused_and_nothing_runs(
    client: TestClient, agent: Agent, headers: dict[str, str], body: Any, status: int
) -> None:
    import json

    content = body if isinstance(body, str) else json.dumps(body)
    headers = {"content-type": "application/json", **headers}
    refused = client.post("/runs", content=content, headers=headers)
    assert refused.status_code == status, refused.text
    assert _one_line_error(refused)
    time.sleep(0.1)
    assert agent.runs() == []


def test_same_origin_json_starts_a_run(client: TestClient) -> None:
    same = {"origin": BASE, "sec-fetch-site": "same-origin"}
    started = client.post("/runs", json=TASK, headers=same)
    assert started.status_code == 202
    typed = client.post(
        "/runs",
        content='{"task": "t", "thread_id": "x2"}',
        headers={"content-type": "application/json; charset=utf-8", "sec-fetch-site": "none"},
    )
    assert typed.status_code == 202


def test_an_answer_from_another_site_is_refused_and_the_run_stays_paused(
    client: TestClient, agent: Agent
) -> None:
    import json

    assert client.post("/runs", json=TASK).status_code == 202
    deadline = time.monotonic() + 20
    while agent.result("x1").status != "paused":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    call_id = agent.result("x1").pending[0].call_id
    answer = json.dumps({"decisions": {call_id: {"action": "approve"}}})
    plain = client.post("/runs/x1/resume", content=answer, headers={"content-type": "text/plain"})
    assert plain.status_code == 415
    cross = client.post(
        "/runs/x1/resume",
        content=answer,
        headers={"content-type": "application/json", "sec-fetch-site": "cross-site"},
    )
    assert cross.status_code == 403
    rebound = client.post(
        "/runs/x1/resume",
        content=answer,
        headers={"content-type": "application/json", "host": "evil.example:8000"},
    )
    assert rebound.status_code == 403
    time.sleep(0.2)
    assert agent.result("x1").status == "paused"


def test_more_hosts_can_be_allowed(agent: Agent) -> None:
    app = build_app(agent, allow_hosts=["agents.internal", "box.lan:9000"])
    with TestClient(app, base_url=BASE) as client:
        assert client.get("/runs", headers={"host": "agents.internal:8000"}).status_code == 200
        assert client.get("/runs", headers={"host": "box.lan:9000"}).status_code == 200
        assert client.get("/runs", headers={"host": "box.lan:9001"}).status_code == 403
        assert client.get("/runs", headers={"host": "evil.example"}).status_code == 403


def test_bound_to_a_port_only_that_port_is_ours(agent: Agent) -> None:
    with TestClient(build_app(agent, port=8000), base_url=BASE) as client:
        assert client.get("/runs", headers={"host": "localhost:8000"}).status_code == 200
        assert client.get("/runs", headers={"host": "localhost:8001"}).status_code == 403

"""The server's error messages speak HTTP: the request to make, not a Python call."""

from __future__ import annotations

import time

from starlette.testclient import TestClient


def _wait_status(client: TestClient, thread: str, status: str) -> None:
    deadline = time.monotonic() + 20
    while client.get(f"/runs/{thread}").json().get("status") != status:
        assert time.monotonic() < deadline, f"{thread} never became {status}"
        time.sleep(0.05)


def test_errors_name_the_http_request_that_continues_a_run(client: TestClient) -> None:
    client.post("/runs", json={"task": "add then publish", "thread_id": "w1"})
    _wait_status(client, "w1", "paused")
    again = client.post("/runs", json={"task": "again", "thread_id": "w1"})
    assert again.status_code == 409
    assert "POST /runs/w1/resume" in again.json()["error"], again.json()
    assert "resume('w1')" not in again.json()["error"]


def test_an_unknown_run_points_at_the_list_of_runs(client: TestClient) -> None:
    missing = client.post("/runs/none/resume", json={"answer": "retry"})
    assert missing.status_code == 404
    message = missing.json()["error"]
    assert "GET /runs" in message and "thinkgraph runs" not in message, message
    assert "--store" not in message, message

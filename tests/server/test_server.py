"""The HTTP surface: the routes through Starlette's test client, then a real server.

The run needs approval for `publish`, so each test sees a run start, pause, get its
answer over HTTP and finish, and the event stream follow it step by step. The attacks
from other sites are in test_cross_site.py, the bounds in test_limits.py, the live page in
a real browser in test_server_browser.py.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.testclient import TestClient

from tests.server.conftest import BASE
from tests.server.support import AUTH, REPLIES, TOOLS, events, wait_status
from tests.support.meeting import REPLIES as MEETING
from tests.support.meeting import meeting
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.server import build_app


def test_a_run_starts_pauses_is_approved_and_ends_over_http(client: TestClient) -> None:
    started = client.post("/runs", json={"task": "add then publish", "thread_id": "h1"})
    assert started.status_code == 202 and started.json() == {"thread_id": "h1"}
    paused = wait_status(client.get, "h1", "paused")
    [pending] = paused["pending"]
    assert pending["tool"] == "publish" and pending["args"] == {"report": "three"}
    assert [r["thread_id"] for r in client.get("/runs").json()] == ["h1"]

    wrong = client.post("/runs/h1/resume", json={"decisions": {"nope": {"action": "approve"}}})
    assert wrong.status_code == 422 and "no call 'nope'" in wrong.json()["error"]
    answer = {"decisions": {pending["call_id"]: {"action": "approve"}}}
    assert client.post("/runs/h1/resume", json=answer).status_code == 202
    # A second click: refused whether the first is still going on (busy) or over.
    assert client.post("/runs/h1/resume", json=answer).status_code == 409
    done = wait_status(client.get, "h1", "done")
    assert done["answer"] == "3"
    assert [s["type"] for s in done["steps"]][-3:] == ["llm_call", "thought", "final"]


def test_the_event_stream_follows_a_run_to_its_pause_then_to_its_end(
    client: TestClient,
) -> None:
    client.post("/runs", json={"task": "add then publish", "thread_id": "h2"})
    with client.stream("GET", "/runs/h2/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        paused = list(events(stream.iter_lines()))  # it ends at the pause
    assert paused[-1][0] == "status" and paused[-1][1]["status"] == "paused"
    call_id = paused[-1][1]["pending"][0]["call_id"]
    answer = {"decisions": {call_id: {"action": "approve"}}}
    assert client.post("/runs/h2/resume", json=answer).status_code == 202
    with client.stream("GET", "/runs/h2/events") as stream:
        ended = list(events(stream.iter_lines()))  # opened again once answered
    for seen in (paused, ended):
        numbers = [data["number"] for kind, data in seen if kind == "step"]
        assert numbers == list(range(len(numbers)))  # each step once, in order
    assert len(numbers) >= 14
    statuses = [data["status"] for kind, data in ended if kind == "status"]
    assert statuses[-1] == "done" and ended[-1] == ("end", ended[-2][1])


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("get", "/runs/none", None, 404, "no run is stored"),
        ("get", "/runs/none/events", None, 404, "no run is stored"),
        ("post", "/runs/none/resume", {"answer": "retry"}, 404, "no run is stored"),
        ("post", "/runs", {"thread_id": "x"}, 400, "give the task"),
        ("post", "/runs", [1, 2], 400, "JSON object"),
        ("post", "/runs/h/resume", {"decisions": {}, "answer": "x"}, 400, "not both"),
    ],
)
def test_bad_requests_get_a_status_and_a_message(
    client: TestClient, method: str, path: str, body: Any, status: int, message: str
) -> None:
    response = getattr(client, method)(path, **({} if body is None else {"json": body}))
    assert response.status_code == status
    assert message in response.json()["error"]


def test_a_thread_cannot_be_started_twice_or_answered_when_running(client: TestClient) -> None:
    client.post("/runs", json={"task": "add then publish", "thread_id": "h3"})
    again = client.post("/runs", json={"task": "again", "thread_id": "h3"})
    assert again.status_code == 409 and "already holds a run" in again.json()["error"]
    wait_status(client.get, "h3", "paused")
    typed = {"content-type": "application/json"}
    not_json = client.post("/runs/h3/resume", content=b"{oops", headers=typed)
    assert not_json.status_code == 400 and "not JSON" in not_json.json()["error"]


def test_the_page_is_one_document_that_streams_runs(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "new EventSource(" in page.text and "<script src" not in page.text


def _follow(url: str, thread: str) -> list[tuple[str, Any]]:
    """The events of `thread` until its stream ends (at a pause or at the end)."""
    with httpx.stream("GET", f"{url}/runs/{thread}/events", timeout=30, headers=AUTH) as stream:
        return list(events(stream.iter_lines()))


def test_thinkgraph_serve_runs_a_task_over_real_http(served: str) -> None:
    refused = httpx.post(served + "/runs", json={"task": "x", "thread_id": "s0"})
    assert refused.status_code == 401
    started = httpx.post(
        served + "/runs", json={"task": "add then publish", "thread_id": "s1"}, headers=AUTH
    )
    assert started.status_code == 202
    paused = _follow(served, "s1")
    kind, data = paused[-1]
    assert kind == "status" and data["status"] == "paused"
    answer = {"decisions": {data["pending"][0]["call_id"]: {"action": "approve"}}}
    resumed = httpx.post(served + "/runs/s1/resume", json=answer, headers=AUTH)
    assert resumed.status_code == 202
    ended = _follow(served, "s1")
    kind, data = ended[-1]
    assert kind == "end" and data["status"] == "done" and data["answer"] == "3"
    assert [k for k, _ in ended].count("step") >= 14


def test_with_a_queue_the_server_hands_runs_to_workers(tmp_path: Path) -> None:
    import uuid

    from tests.conftest import POSTGRES_URL
    from thinkgraph.worker import run_worker

    queue, thread = f"srv-{uuid.uuid4().hex[:8]}", f"srv-{uuid.uuid4().hex[:8]}"
    agent = Agent(ScriptedModel(REPLIES), TOOLS, store=POSTGRES_URL)

    def work() -> None:
        run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)

    with agent, TestClient(build_app(agent, queue=queue, poll_s=0.05), base_url=BASE) as client:
        started = client.post("/runs", json={"task": "add then publish", "thread_id": thread})
        assert started.status_code == 202 and started.json()["queue"] == queue
        with client.stream("GET", f"/runs/{thread}/events") as stream:
            first = next(events(stream.iter_lines()))
        assert first == ("status", {"status": "queued"})
        work()
        paused = client.get(f"/runs/{thread}").json()
        assert paused["status"] == "paused"
        call_id = paused["pending"][0]["call_id"]
        answer = {"decisions": {call_id: {"action": "approve"}}}
        resumed = client.post(f"/runs/{thread}/resume", json=answer)
        assert resumed.status_code == 202 and "job_id" in resumed.json()
        twice = client.post(f"/runs/{thread}/resume", json=answer)
        assert twice.status_code == 409
        job = resumed.json()["job_id"]
        assert (
            f"already answered: approved by job {job} on queue {queue!r}" in twice.json()["error"]
        )
        work()
        assert client.get(f"/runs/{thread}").json()["answer"] == "3"


def test_the_server_advances_many_runs_at_once_and_streams_each(tmp_path: Path) -> None:
    runs = 3
    agent = Agent(ScriptedModel(MEETING), [meeting(runs)], store=f"sqlite:///{tmp_path / 'r.db'}")
    threads = [f"m{i}" for i in range(runs)]
    with agent, TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client:
        for thread in threads:
            started = client.post("/runs", json={"task": "meet", "thread_id": thread})
            assert started.status_code == 202
        again = client.post("/runs", json={"task": "meet", "thread_id": threads[0]})
        assert again.status_code == 409  # taken while it runs
        for thread in threads:
            with client.stream("GET", f"/runs/{thread}/events") as stream:
                kinds = [kind for kind, _ in events(stream.iter_lines())]
            assert kinds[0] == "step" and kinds[-1] == "end"
    for thread in threads:
        result = agent.result(thread)
        assert result.answer == "met"
        assert [s.output for s in result.chain if s.type == "tool_result"] == ["together"]


def test_past_max_runs_a_start_is_refused_with_429_and_nothing_stored(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    @tool
    def slow(text: str) -> str:
        """Wait until the test lets it go."""
        release.wait(timeout=20)
        return text

    replies = ['Thought: wait\nAction: slow\nAction Input: {"text": "x"}', "Final Answer: x"]
    agent = Agent(ScriptedModel(replies), [slow], store=f"sqlite:///{tmp_path / 'r.db'}")
    app = build_app(agent, poll_s=0.05, max_runs=1)
    with agent, TestClient(app, base_url=BASE) as client:
        assert client.post("/runs", json={"task": "one", "thread_id": "r1"}).status_code == 202
        refused = client.post("/runs", json={"task": "two", "thread_id": "r2"})
        assert refused.status_code == 429
        assert "already advances 1 runs at once" in refused.json()["error"]
        assert agent.checkpoint_id("r2") is None
        release.set()
        with client.stream("GET", "/runs/r1/events") as stream:
            assert [kind for kind, _ in events(stream.iter_lines())][-1] == "end"
        # Room again once the first run ended.
        assert client.post("/runs", json={"task": "two", "thread_id": "r2"}).status_code == 202


def test_with_a_token_every_request_must_carry_it(tmp_path: Path) -> None:
    agent = Agent(ScriptedModel(REPLIES), TOOLS, store=f"sqlite:///{tmp_path / 'runs.db'}")
    with agent, TestClient(build_app(agent, token="s3cret"), base_url=BASE) as client:
        refused = client.get("/runs")
        assert refused.status_code == 401 and "needs its token" in refused.json()["error"]
        assert client.get("/runs", headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert client.get("/", params={"token": "wrong"}).status_code == 401
        assert client.get("/runs", headers={"Authorization": "Bearer s3cret"}).json() == []
        # The page: /?token= once sets a cookie and sends the browser back to /.
        opened = client.get("/", params={"token": "s3cret"}, follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "/"
        assert "httponly" in opened.headers["set-cookie"].lower()
        assert client.get("/").status_code == 200  # the client kept the cookie
        started = client.post("/runs", json={"task": "add then publish", "thread_id": "a1"})
        assert started.status_code == 202


def test_stopping_the_server_lets_every_run_in_progress_reach_its_end(tmp_path: Path) -> None:
    import threading

    release = threading.Event()

    @tool
    def slow(text: str) -> str:
        """Wait until the test lets it go."""
        release.wait(timeout=20)
        return text

    replies = ['Thought: wait\nAction: slow\nAction Input: {"text": "x"}', "Final Answer: x"]
    agent = Agent(ScriptedModel(replies * 2), [slow], store=f"sqlite:///{tmp_path / 's.db'}")
    client = TestClient(build_app(agent, poll_s=0.05), base_url=BASE)
    client.__enter__()
    assert client.post("/runs", json={"task": "first", "thread_id": "going"}).status_code == 202
    assert client.post("/runs", json={"task": "also", "thread_id": "too"}).status_code == 202
    threading.Timer(0.5, release.set).start()
    stopping = time.monotonic()
    client.__exit__(None, None, None)  # the server stops: it waits for the runs in progress
    assert time.monotonic() - stopping >= 0.4
    with agent:  # closing the store is safe now: nothing uses it
        assert agent.result("going").answer == "x"
        assert agent.result("too").answer == "x"

"""Thread ids: 1 to 256 printable characters, checked at every door in one place.

A thread id names a run in the store, in a lease, in a job's lock, in a URL and on a
terminal line. An id with a NUL, a newline or another control character (or one longer
than any person would type) is refused with one line naming the rule, before anything is
read or written: from Python, the CLI, HTTP and the worker queue.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from tests.conftest import POSTGRES_URL
from thinkgraph import Agent, ScriptedModel
from thinkgraph.cli import app
from thinkgraph.errors import ThreadIdError
from thinkgraph.server import build_app
from thinkgraph.types import check_thread_id

RULE = "a thread id is 1 to 256 printable characters"
BAD = {
    "nul": "run\x00one",
    "newline": "run\none",
    "carriage return": "run\rone",
    "escape": "run\x1b[2Jone",
    "right-to-left override": "run\u202eone",
    "line separator": "run\u2028one",
    "surrogate": "run\ud800one",
    "empty": "",
    "too long": "r" * 257,
}
REPLY = ["Thought: easy\nFinal Answer: 42"]


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Agent]:
    with Agent(ScriptedModel(REPLY * 4), store=f"sqlite:///{tmp_path / 'runs.db'}") as made:
        yield made


def test_the_rule_accepts_what_people_type() -> None:
    for ok in ("t1", "q3-report", "Zürich 2026/Q3", "報告", "r" * 256, "a b"):
        assert check_thread_id(ok) == ok


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_the_rule_refuses_control_characters_empty_and_very_long_ids_in_one_line(
    bad: str,
) -> None:
    with pytest.raises(ThreadIdError) as refused:
        check_thread_id(bad)
    message = str(refused.value)
    assert RULE in message and "\n" not in message and "\x00" not in message
    assert isinstance(refused.value, ValueError)


def test_a_non_string_thread_id_is_refused() -> None:
    with pytest.raises(ThreadIdError, match="a thread id is a string"):
        check_thread_id(42)


@pytest.mark.parametrize("bad", [BAD["nul"], BAD["newline"], BAD["too long"]])
def test_every_agent_method_refuses_a_bad_thread_id_before_touching_the_store(
    agent: Agent, bad: str
) -> None:
    agent.run("x", thread_id="good")
    at = agent.history("good")[-1].checkpoint_id
    calls: list[Any] = [
        lambda: agent.run("x", thread_id=bad),
        lambda: list(agent.stream("x", bad)),
        lambda: agent.resume(bad),
        lambda: list(agent.stream_resume(bad)),
        lambda: agent.result(bad),
        lambda: agent.chain(bad),
        lambda: agent.history(bad),
        lambda: agent.checkpoint_id(bad),
        lambda: agent.check_resume(bad),
        lambda: agent.draw("mermaid", bad),
        lambda: agent.fork(bad, at),
        lambda: agent.fork("good", at, new_thread_id=bad),
    ]
    for call in calls:
        with pytest.raises(ThreadIdError, match=RULE):
            call()
    with pytest.raises(ThreadIdError, match=RULE), agent.lease(bad):
        pass
    assert [r.thread_id for r in agent.runs()] == ["good"]


@pytest.mark.parametrize(
    "command",
    [
        ["run", "x", "--thread", "{bad}", "--script", "{script}"],
        ["resume", "{bad}", "--script", "{script}"],
        ["approve", "{bad}", "--script", "{script}"],
        ["fork", "{bad}", "cp1", "--script", "{script}"],
        ["fork", "good", "cp1", "--thread", "{bad}", "--script", "{script}"],
        ["show", "{bad}"],
        ["history", "{bad}"],
        ["pending", "{bad}"],
    ],
    ids=lambda c: "-".join(c[:2]),
)
@pytest.mark.parametrize("bad", [BAD["nul"], BAD["newline"]], ids=["nul", "newline"])
def test_the_cli_refuses_a_bad_thread_id_in_one_line(
    agent: Agent, tmp_path: Path, command: list[str], bad: str
) -> None:
    agent.run("x", thread_id="good")
    script = tmp_path / "replies.json"
    script.write_text('["Thought: easy\\nFinal Answer: 42"]')
    args = [part.format(bad=bad, script=script) for part in command]
    result = CliRunner().invoke(app, [*args, "--store", f"sqlite:///{tmp_path / 'runs.db'}"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("error: ") and RULE in lines[0], lines
    assert [r.thread_id for r in agent.runs()] == ["good"]


@pytest.fixture
def client(agent: Agent) -> Iterator[TestClient]:
    with TestClient(build_app(agent, poll_s=0.05), base_url="http://127.0.0.1:8000") as made:
        yield made


@pytest.mark.parametrize("bad", [BAD["nul"], BAD["newline"], BAD["too long"]])
def test_http_refuses_a_bad_thread_id_with_400_in_the_body_and_the_path(
    client: TestClient, bad: str
) -> None:
    started = client.post("/runs", json={"task": "x", "thread_id": bad})
    assert started.status_code == 400 and RULE in started.json()["error"]
    path = f"/runs/{quote(bad, safe='')}"
    for method, url in [
        ("GET", path),
        ("GET", f"{path}/diagram?format=mermaid"),
        ("POST", f"{path}/resume"),
        ("GET", f"{path}/events"),
    ]:
        answer = client.request(method, url, json={} if method == "POST" else None)
        assert answer.status_code == 400, (url, answer.text)
        assert RULE in answer.json()["error"]


def test_with_a_queue_http_and_the_queue_refuse_a_bad_thread_id(tmp_path: Path) -> None:
    from thinkgraph.worker import RunQueue, open_jobs

    queue = f"q-{uuid.uuid4().hex[:8]}"
    with Agent(ScriptedModel(REPLY), store=POSTGRES_URL) as agent:
        app_ = build_app(agent, queue=queue, poll_s=0.05)
        with TestClient(app_, base_url="http://127.0.0.1:8000") as client:
            for url in [f"/runs/{quote(BAD['nul'], safe='')}/events", "/runs"]:
                body = {"task": "x", "thread_id": BAD["nul"]} if url == "/runs" else None
                answer = client.request("POST" if body else "GET", url, json=body)
                assert answer.status_code == 400, (url, answer.text)
                assert RULE in answer.json()["error"]
        with RunQueue(agent, queue) as runs:
            with pytest.raises(ThreadIdError, match=RULE):
                runs.submit("x", BAD["newline"])
            with pytest.raises(ThreadIdError, match=RULE):
                runs.resume(BAD["nul"])
        with pytest.raises(ThreadIdError, match=RULE):
            open_jobs(POSTGRES_URL, BAD["nul"])


def test_a_run_stored_under_a_bad_id_by_another_door_does_not_break_the_listing(
    agent: Agent,
) -> None:
    agent.run("x", thread_id="good")
    # A raw LangGraph call (or an older thinkgraph) stores what it is given.
    config: Any = {"configurable": {"thread_id": BAD["newline"]}}
    agent.graph.invoke(agent._start("x"), config, durability="sync")
    assert [r.thread_id for r in agent.runs()] == ["good"]

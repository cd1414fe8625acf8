"""The studio's forms over HTTP beyond Approve, Edit and Reject of one call: Respond,
several waiting calls answered together (each approved, edited, responded to or rejected),
an Edit form made from the tool's JSON schema and read by it, and an answer with no text
refused."""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from tests.studio.support import BASE, SEND, form_of, send, wait_status
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.server import build_app


@tool(requires_approval=True)
def book(room: str, people: int | None = None, note: str | None = None) -> str:
    """Book a room."""
    return f"booked {room!r} for {people!r}, note {note!r}"


class Size(StrEnum):
    SMALL = "1"
    LARGE = "2"


@tool(requires_approval=True)
def order(size: Size, extra: Size | None = None) -> str:
    """Order a box."""
    return f"ordered {size.value} and {extra.value if extra else None}"


ORDER = [
    'Thought: order\nAction: order\nAction Input: {"size": "1"}',
    "Thought: done\nFinal Answer: ordered",
]
BOOK = [
    'Thought: book\nAction: book\nAction Input: {"room": "blue", "people": 3}',
    "Thought: done\nFinal Answer: booked",
]
TWO_CALLS = [
    '<tool_call>{"name": "send", "arguments": {"to": "ops", "count": 1}}</tool_call>\n'
    '<tool_call>{"name": "send", "arguments": {"to": "board", "count": 9}}</tool_call>',
    "Thought: done\nFinal Answer: sent",
]


def _served(tmp_path: Path, replies: list[str], **options: Any) -> Iterator[TestClient]:
    store = f"sqlite:///{tmp_path / 'steer.db'}"
    with (
        Agent(ScriptedModel(replies), [send, book, order], store=store, **options) as agent,
        TestClient(build_app(agent, poll_s=0.05), base_url=BASE) as client,
    ):
        client.app_state["agent"] = agent
        yield client


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    yield from _served(tmp_path, SEND)


def _paused(client: TestClient, thread: str) -> str:
    started = client.post("/runs", json={"task": "do it", "thread_id": thread})
    assert started.status_code == 202, started.text
    wait_status(client, thread, "paused")
    return client.get(f"/studio/runs/{thread}").text


def _answer(client: TestClient, thread: str, fields: dict[str, str]) -> None:
    done = client.post(f"/studio/runs/{thread}/answer", data=fields, follow_redirects=False)
    assert done.status_code == 303, done.text
    assert done.headers["location"] == f"/studio/runs/{thread}"


def _steps(client: TestClient, thread: str) -> str:
    return str(client.get(f"/runs/{thread}").json()["steps"])


def test_respond_gives_the_result_instead_of_running_the_call(client: TestClient) -> None:
    fields = form_of(_paused(client, "resp"), "Respond")
    fields["text"] = "the report went by post"
    _answer(client, "resp", fields)
    wait_status(client, "resp", "done")
    steps = _steps(client, "resp")
    assert "the report went by post" in steps
    assert "sent 2 to ops" not in steps  # the call never ran


def test_several_waiting_calls_are_answered_together(tmp_path: Path) -> None:
    for client in _served(tmp_path, TWO_CALLS):
        page = _paused(client, "two")
        assert "2 calls wait for approval" in page
        calls = re.findall(r'name="decide\.([^"]+)" value="approve"', page)
        assert len(calls) == 2
        fields = form_of(page, "Answer all")
        fields[f"decide.{calls[0]}"] = "approve"
        fields[f"decide.{calls[1]}"] = "reject"
        fields[f"reason.{calls[1]}"] = "not the board"
        _answer(client, "two", fields)
        wait_status(client, "two", "done")
        steps = _steps(client, "two")
        assert "sent 1 to ops" in steps
        assert "not the board" in steps and "sent 9 to board" not in steps


def test_several_waiting_calls_can_each_be_edited_or_responded_to(tmp_path: Path) -> None:
    for client in _served(tmp_path, TWO_CALLS):
        page = _paused(client, "two")
        first, second = re.findall(r'name="decide\.([^"]+)" value="approve"', page)
        for call in (first, second):
            for choice in ("approve", "edit", "respond", "reject"):
                assert f'name="decide.{call}" value="{choice}"' in page
        fields = form_of(page, "Answer all")
        assert fields[f"arg.{first}.to"] == "ops" and fields[f"arg.{second}.count"] == "9"
        fields[f"decide.{first}"] = "edit"
        fields[f"arg.{first}.count"] = "5"
        fields[f"decide.{second}"] = "respond"
        fields[f"text.{second}"] = "the board has it already"
        _answer(client, "two", fields)
        wait_status(client, "two", "done")
        steps = _steps(client, "two")
        assert "sent 5 to ops" in steps
        assert "the board has it already" in steps and "sent 9 to board" not in steps


def test_a_bad_edit_among_several_calls_is_422_and_nothing_runs(tmp_path: Path) -> None:
    for client in _served(tmp_path, TWO_CALLS):
        page = _paused(client, "two")
        first, second = re.findall(r'name="decide\.([^"]+)" value="approve"', page)
        fields = form_of(page, "Answer all")
        fields[f"decide.{first}"] = "approve"
        fields[f"decide.{second}"] = "edit"
        fields[f"args_json.{second}"] = '{"to": "board", "count": "many"}'
        refused = client.post("/studio/runs/two/answer", data=fields, follow_redirects=False)
        assert refused.status_code == 422
        assert client.get("/runs/two").json()["status"] == "paused"
        assert "sent 1 to ops" not in _steps(client, "two")


ASK = ["no format", "still none", "nothing", "Thought: ok\nFinal Answer: 7"]


def test_the_edit_form_has_a_field_per_argument_of_the_tools_schema(tmp_path: Path) -> None:
    for client in _served(tmp_path, BOOK * 3):
        page = _paused(client, "bk")
        fields = form_of(page, "Edit")
        # Every argument of the schema, the ones the call left out too, with its type.
        assert {k for k in fields if k.startswith("arg.")} == {"arg.room", "arg.people", "arg.note"}
        assert (fields["arg.room"], fields["arg.people"], fields["arg.note"]) == ("blue", "3", "")
        assert '>note <span class="muted">(string or null)</span>' in page
        # A text that reads as a number stays text where the schema says string; an
        # empty field of an optional argument is left out (its default applies).
        fields.update({"arg.room": "42", "arg.people": "", "arg.note": "007"})
        _answer(client, "bk", fields)
        wait_status(client, "bk", "done")
        assert "booked '42' for None, note '007'" in _steps(client, "bk")


def test_an_empty_response_or_guidance_is_422_and_the_run_waits(tmp_path: Path) -> None:
    for client in _served(tmp_path, SEND):
        fields = form_of(_paused(client, "empty"), "Respond")
        refused = client.post("/studio/runs/empty/answer", data=fields, follow_redirects=False)
        assert refused.status_code == 422 and "write the result" in refused.text
        assert client.get("/runs/empty").json()["status"] == "paused"
    limits = StepLimits(failure_policy="ask_human", max_consecutive_failures=3)
    (tmp_path / "ask").mkdir()
    for client in _served(tmp_path / "ask", ASK, limits=limits):
        fields = form_of(_paused(client, "ask"), "Send guidance")
        fields["text"] = "   "
        refused = client.post("/studio/runs/ask/answer", data=fields, follow_redirects=False)
        assert refused.status_code == 422 and "write the guidance" in refused.text
        assert client.get("/runs/ask").json()["status"] == "paused"


def test_an_argument_of_a_type_the_schema_defines_apart_is_read_by_it(tmp_path: Path) -> None:
    for client in _served(tmp_path, ORDER):
        page = _paused(client, "box")
        assert '>size <span class="muted">(string)</span>' in page  # its $ref followed
        assert '>extra <span class="muted">(string or null)</span>' in page
        fields = form_of(page, "Edit")
        fields.update({"arg.size": "2", "arg.extra": "1"})  # enum values that read as numbers
        _answer(client, "box", fields)
        wait_status(client, "box", "done")
        assert "ordered 2 and 1" in _steps(client, "box")

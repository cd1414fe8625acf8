"""Secrets stay masked at every door: views, `thinkgraph show`, JSON lines and HTTP.

One real run (an `Agent` with a `ScriptedModel`) carries secrets along every path they can
take: a `sensitive` argument the model proposes and the model's reply and thought that
quote it, a value a person types in an `Edit`, a secret-named key nested in an argument
object, a secret-named key nested in a result, and the model's last thought and answer
quoting what the person typed. Each door is then read in full, with and without the
run's tools, and no secret may appear in what it shows, while the mask does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from thinkgraph import Agent, RunResult, ScriptedModel, StepLimits, tool
from thinkgraph.cli import app as cli
from thinkgraph.hitl import Edit
from thinkgraph.server import build_app
from thinkgraph.state import HumanStep, LLMCallStep, ThoughtStep, ToolCallStep
from thinkgraph.tools.base import Tool
from thinkgraph.views import MASK, to_html, to_json, to_json_dict, to_markdown, to_text

PROPOSED_PIN = "4821-proposed"
"""The pin the model proposes (a `sensitive` argument of `open_door`)."""
TYPED_PIN = "7391-typed-by-ann"
"""The pin a person types when editing the call."""
NESTED_KEY = "cfg-nested-5f4e3d2c"
"""An `api_key` nested inside the `config` argument of `configure`."""
RESULT_TOKEN = "res-tok-9a8b7c6d"
"""A `token` nested inside the result of `configure`."""
SECRETS = (PROPOSED_PIN, TYPED_PIN, NESTED_KEY, RESULT_TOKEN)


@tool
def configure(config: dict[str, Any]) -> dict[str, Any]:
    """Save a service configuration."""
    return {"saved": sorted(config), "service": {"name": "mail", "token": RESULT_TOKEN}}


@tool(sensitive={"pin"}, requires_approval=True)
def open_door(door: str, pin: str) -> str:
    """Open a door with its pin."""
    return f"the {door} door is open"


TOOLS: list[Tool] = [configure, open_door]

REPLIES = [
    "Thought: configure the mail service\nAction: configure\nAction Input: "
    + json.dumps({"config": {"region": "eu", "api_key": NESTED_KEY}}),
    f"Thought: open the front door with pin {PROPOSED_PIN}\nAction: open_door\nAction Input: "
    + json.dumps({"door": "front", "pin": PROPOSED_PIN}),
    f"Thought: Ann typed {TYPED_PIN} and the door opened\n"
    f"Final Answer: the back door is open (pin {TYPED_PIN})",
]
EDITED = {"door": "back", "pin": TYPED_PIN}


def _agent(store: str, tools: list[Tool] = TOOLS) -> Agent:
    return Agent(ScriptedModel(REPLIES), tools, limits=StepLimits(max_steps=6), store=store)


def _edit_decisions(result: RunResult) -> dict[str, Edit]:
    (waiting,) = result.pending
    assert waiting.call_id is not None
    return {waiting.call_id: Edit(args=EDITED)}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SQLite store holding the finished run "secrets"."""
    url = f"sqlite:///{tmp_path_factory.mktemp('secrets') / 'runs.db'}"
    with _agent(url) as agent:
        paused = agent.run("configure mail, then open a door", thread_id="secrets")
        done = agent.resume("secrets", _edit_decisions(paused))
    assert done.status == "done", done
    return url


@pytest.fixture(scope="module")
def run(store: str) -> RunResult:
    with _agent(store) as agent:
        return agent.result("secrets")


def _assert_masked(out: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in out, f"{where}: {secret!r} is shown"
    assert MASK in out.replace("&#42;", "*"), f"{where}: nothing is masked"


def test_the_stored_run_keeps_every_secret_where_a_view_could_find_it(run: RunResult) -> None:
    # Otherwise the tests below would pass for the wrong reason; the chain itself keeps
    # the real values (the tool needs them), only what is shown is masked.
    raw = json.dumps([s.model_dump(mode="json") for s in run.chain])
    for secret in SECRETS:
        assert secret in raw, secret
    edit = next(s for s in run.chain if isinstance(s, HumanStep))
    assert edit.kind == "edit" and TYPED_PIN in edit.text
    replies = "".join(s.text for s in run.chain if isinstance(s, LLMCallStep))
    assert NESTED_KEY in replies and PROPOSED_PIN in replies
    thoughts = "".join(s.text for s in run.chain if isinstance(s, ThoughtStep))
    assert PROPOSED_PIN in thoughts and TYPED_PIN in thoughts
    assert run.answer is not None and TYPED_PIN in run.answer


VIEWS: dict[str, Callable[..., str]] = {
    "text": lambda run, **kw: to_text(run.chain, **kw),
    "markdown": to_markdown,
    "json": to_json,
    "json_dict": lambda run, **kw: json.dumps(to_json_dict(run, **kw), ensure_ascii=False),
    "html": to_html,
}


@pytest.mark.parametrize("known", [True, False], ids=["with-tools", "without-tools"])
@pytest.mark.parametrize("audience", ["developer", "user", "auditor"])
@pytest.mark.parametrize("view", sorted(VIEWS))
def test_no_view_shows_a_secret(run: RunResult, view: str, audience: str, known: bool) -> None:
    out = VIEWS[view](run, audience=audience, tools=TOOLS if known else None)
    _assert_masked(out, f"{view}/{audience}/{'with' if known else 'without'} tools")


def test_the_edit_is_shown_with_its_sensitive_argument_masked(run: RunResult) -> None:
    text = to_text(run.chain, tools=TOOLS)
    assert 'human       edit: {"door": "back", "pin": "***"}' in text


def test_a_nested_secret_key_is_masked_in_the_args_and_the_model_reply(run: RunResult) -> None:
    text = to_text(run.chain, tools=TOOLS)
    assert 'configure({"config": {"region": "eu", "api_key": "***"}})' in text
    doc = to_json_dict(run, tools=TOOLS)
    (reply, *_) = [s for s in doc["steps"] if s["type"] == "llm_call"]
    assert '"api_key": "***"' in reply["text"] and '"region": "eu"' in reply["text"]


def test_with_the_tools_known_non_sensitive_arguments_stay_readable(run: RunResult) -> None:
    text = to_text(run.chain, tools=TOOLS)
    assert "note:" not in text
    assert 'open_door({"door": "front", "pin": "***"})' in text
    assert '"door": "back"' in text


def _without_record(run: RunResult) -> RunResult:
    """The run as stored before runs recorded their tools' sensitive fields."""
    chain = [
        s.model_copy(update={"sensitive": None}) if isinstance(s, ToolCallStep) else s
        for s in run.chain
    ]
    return run.model_copy(update={"chain": chain})


def test_without_the_tools_a_view_masks_the_fields_the_run_recorded(run: RunResult) -> None:
    text = to_text(run.chain)
    _assert_masked(text, "recorded, no tools")
    assert 'open_door({"door": "front", "pin": "***"})' in text
    assert "note:" not in text
    assert to_json_dict(run)["unknown_tools"] == []


def test_without_the_tools_or_the_record_every_argument_is_masked_and_a_note_says_why(
    run: RunResult,
) -> None:
    old = _without_record(run)
    text = to_text(old.chain)
    _assert_masked(text, "no record, no tools")
    assert 'open_door({"door": "***", "pin": "***"})' in text
    note = text.splitlines()[-1]
    assert note.startswith("note: ") and "configure, open_door" in note and "--tools" in note
    doc = to_json_dict(old)
    assert doc["unknown_tools"] == ["configure", "open_door"]
    assert doc["notes"] and "--tools" in doc["notes"][0]
    assert to_json_dict(old, tools=TOOLS)["unknown_tools"] == []
    assert "--tools" in to_markdown(old) and "--tools" in to_html(old)


def test_a_call_to_a_tool_the_view_does_not_know_is_masked_even_with_other_tools(
    run: RunResult,
) -> None:
    # Given only `configure`, the view cannot know which of open_door's arguments are secret.
    text = to_text(_without_record(run).chain, tools=[configure])
    _assert_masked(text, "only configure known")
    assert 'open_door({"door": "***", "pin": "***"})' in text
    assert "open_door" in text.splitlines()[-1] and "configure" not in text.splitlines()[-1]


def test_the_stored_chain_is_never_changed_by_a_view(run: RunResult) -> None:
    before = [s.model_dump() for s in run.chain]
    for view in VIEWS.values():
        view(run)
        view(run, tools=TOOLS)
    assert [s.model_dump() for s in run.chain] == before


# -- the CLI: thinkgraph show -----------------------------------------------------------------

runner = CliRunner()


@pytest.mark.parametrize("tools", [[], ["--tools", "tests.test_secrets:TOOLS"]], ids=["-", "tools"])
@pytest.mark.parametrize("fmt", ["text", "markdown", "json", "html"])
def test_thinkgraph_show_masks_every_secret(store: str, fmt: str, tools: list[str]) -> None:
    result = runner.invoke(cli, ["show", "secrets", "--store", store, "-f", fmt, *tools])
    assert result.exit_code == 0, result.output
    _assert_masked(result.output, f"show -f {fmt} {' '.join(tools)}")
    # The run recorded its tools' sensitive fields: nothing is masked for want of the tools.
    assert "--tools" not in result.output


def test_thinkgraph_show_writes_a_masked_file(store: str, tmp_path: Path) -> None:
    out = tmp_path / "run.html"
    result = runner.invoke(cli, ["show", "secrets", "--store", store, "-f", "html", "-o", str(out)])
    assert result.exit_code == 0, result.output
    _assert_masked(out.read_text(encoding="utf-8"), "show -o run.html")


# -- the CLI's JSON lines (run --json / resume --json) -----------------------------------------


def test_the_json_lines_mask_every_secret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What `run --json` and `resume --json` print, given the tools the run is made with.
    from thinkgraph.cli._progress import show

    with _agent(f"sqlite:///{tmp_path / 'runs.db'}") as agent:
        paused = show(agent.events("configure mail, then open a door", "j"), "json", tools=TOOLS)
        show(agent.resume_events("j", _edit_decisions(paused)), "json", tools=TOOLS)
    lines = capsys.readouterr().out
    assert [json.loads(line)["event"] for line in lines.splitlines()][-1] == "end"
    _assert_masked(lines, "json lines")


# -- HTTP: GET /runs/T and its events ----------------------------------------------------------


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    agent = _agent(f"sqlite:///{tmp_path / 'runs.db'}")
    app = build_app(agent, poll_s=0.05)
    with agent, TestClient(app, base_url="http://127.0.0.1:8000") as test_client:
        yield test_client


def _wait(client: TestClient, thread: str, status: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        doc: dict[str, Any] = client.get(f"/runs/{thread}").json()
        if doc.get("status") == status:
            return doc
        time.sleep(0.05)
    raise AssertionError(f"thread {thread} never became {status}")


def test_http_shows_the_run_and_its_events_masked(client: TestClient) -> None:
    assert client.post("/runs", json={"task": "open a door", "thread_id": "h"}).status_code == 202
    paused = _wait(client, "h", "paused")
    _assert_masked(json.dumps(paused, ensure_ascii=False), "GET /runs/h while paused")
    call_id = paused["pending"][0]["call_id"]
    answer = {"decisions": {call_id: {"action": "edit", "args": EDITED}}}
    assert client.post("/runs/h/resume", json=answer).status_code == 202
    done = _wait(client, "h", "done")
    shown = client.get("/runs/h").text
    _assert_masked(shown, "GET /runs/h")
    assert any(s["type"] == "human" and s["kind"] == "edit" for s in done["steps"])
    with client.stream("GET", "/runs/h/events") as stream:
        events = "\n".join(stream.iter_lines())
    assert "event: end" in events
    _assert_masked(events, "GET /runs/h/events")


def test_http_lists_runs_with_their_pending_calls_masked(client: TestClient) -> None:
    assert client.post("/runs", json={"task": "open a door", "thread_id": "l"}).status_code == 202
    _wait(client, "l", "paused")
    listed = client.get("/runs")
    (run,) = listed.json()
    assert run["pending"][0]["args"] == {"door": "front", "pin": MASK}
    _assert_masked(listed.text, "GET /runs")  # the pending call's thought quotes the pin too


def test_the_step_record_a_tool_call_holds_is_not_the_masked_one(run: RunResult) -> None:
    # The tool got the real arguments: masking is only ever at the door.
    call = next(s for s in run.chain if isinstance(s, ToolCallStep) and s.call.name == "open_door")
    assert call.call.args == {"door": "front", "pin": PROPOSED_PIN}

"""NaN never slips past an approval predicate, whichever door drives the run.

``requires_approval=lambda a: a["amount"] > 100`` answers False for NaN (every comparison
with NaN is False), so a NaN amount would run unapproved. Non-finite numbers therefore never
reach a tool or a predicate unless the tool's schema says it takes them: the model's NaN is
refused with feedback, a "nan" text fails the tool's arguments check (an observation the
model can recover from, after the gate, which asks when it cannot check the arguments), and
a predicate that raises, answers anything but a bool or sees a non-finite number means
"needs approval". Each door is attacked: the model (a ReAct reply), the compiled graph
driven raw (`invoke`/`ainvoke` on a state written by hand), the CLI and HTTP.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
from langchain_core.tools import StructuredTool
from langgraph.types import Command
from pydantic import Field
from starlette.testclient import TestClient
from typer.testing import CliRunner

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.cli import app
from thinkgraph.errors import ResumeValueError
from thinkgraph.hitl import Approve, Edit
from thinkgraph.server import build_app
from thinkgraph.state import ErrorStep, ThoughtStep, ToolCall, ToolCallStep, ToolResultStep
from thinkgraph.tools import from_langchain

PAID: list[Any] = []


@tool(requires_approval=lambda a: a["amount"] > 100, side_effects=True)
def pay(amount: float, to: str = "acme") -> str:
    """Pay an amount; a person approves amounts over 100."""
    PAID.append(amount)
    return f"paid {amount} to {to}"


@tool(requires_approval=lambda a: a["amount"] > 100)
def tip(amount: Annotated[float, Field(allow_inf_nan=True)]) -> str:
    """Tip an amount; this tool's schema takes NaN and infinities."""
    PAID.append(amount)
    return f"tipped {amount}"


@tool
def gauge(reading: float) -> str:
    """Record a reading (no approval rule)."""
    PAID.append(reading)
    return f"recorded {reading}"


@tool(requires_approval=lambda a: a["missing"] > 100)
def fragile(amount: float) -> str:
    """A tool whose predicate raises."""
    PAID.append(amount)
    return "ran"


@tool(requires_approval=lambda a: None)  # type: ignore[arg-type, return-value]
def vague(amount: float) -> str:
    """A tool whose predicate answers neither True nor False."""
    PAID.append(amount)
    return "ran"


TOOLS = [pay, tip, gauge, fragile, vague]
FINAL = "Thought: done\nFinal Answer: ok"


def call(name: str, action_input: str) -> str:
    return f"Thought: pay it\nAction: {name}\nAction Input: {action_input}"


@pytest.fixture(autouse=True)
def _nothing_paid() -> Iterator[None]:
    PAID.clear()
    yield
    PAID.clear()


def run(url: str, thread: str, *replies: str) -> Any:
    with Agent(ScriptedModel([*replies, FINAL]), TOOLS, store=url) as agent:
        return agent.run("pay", thread_id=thread)


# -- from the model ---------------------------------------------------------------------------


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_a_non_finite_amount_from_the_model_is_refused_with_feedback(
    sqlite_url: str, thread_id: str, number: str
) -> None:
    result = run(sqlite_url, thread_id, call("pay", f'{{"amount": {number}}}'))
    assert result.status == "done" and PAID == []
    (error,) = [s for s in result.chain if isinstance(s, ErrorStep)]
    assert error.kind == "parse"
    assert f"'amount' in the arguments is {number}, not a finite number" in error.feedback
    assert not any(isinstance(s, ToolResultStep) for s in result.chain)


@pytest.mark.parametrize("text", ["nan", "NaN", "-Infinity", "inf"])
def test_a_non_finite_amount_written_as_text_pauses_at_the_gate_and_never_runs(
    sqlite_url: str, thread_id: str, text: str
) -> None:
    result = run(sqlite_url, thread_id, call("pay", json.dumps({"amount": text})))
    assert result.status == "paused" and PAID == []
    (pending,) = result.pending
    assert pending.tool == "pay" and pending.args == {"amount": text}
    # Approved anyway: the tool's arguments check refuses it, as an observation.
    with Agent(ScriptedModel([call("pay", '{"amount": 1}'), FINAL]), TOOLS, store=sqlite_url) as a:
        done = a.resume(thread_id, {pending.call_id: Approve()})
    assert done.status == "done" and PAID == []
    (refused,) = [s for s in done.chain if isinstance(s, ToolResultStep)]
    assert refused.error_kind == "invalid_args"
    assert "amount: Input should be a finite number" in (refused.error or "")


def test_a_tool_without_an_approval_rule_never_gets_a_non_finite_number(
    sqlite_url: str, thread_id: str
) -> None:
    result = run(sqlite_url, thread_id, call("gauge", '{"reading": "nan"}'))
    assert result.status == "done" and PAID == []
    (refused,) = [s for s in result.chain if isinstance(s, ToolResultStep)]
    assert refused.error_kind == "invalid_args" and "finite number" in (refused.error or "")
    observed = [s.text for s in result.chain if s.type == "observation"]
    assert "finite number" in observed[0]  # the model is told, and can send a number


def test_a_schema_that_takes_nan_gets_it_but_only_after_a_person_approves(
    sqlite_url: str, thread_id: str
) -> None:
    # The predicate says False (nan > 100 is False); a NaN it cannot compare means "ask".
    result = run(sqlite_url, thread_id, call("tip", '{"amount": "nan"}'))
    assert result.status == "paused" and PAID == []
    with Agent(ScriptedModel([FINAL, FINAL]), TOOLS, store=sqlite_url) as agent:
        done = agent.resume(thread_id, {result.pending[0].call_id: Approve()})
    assert done.status == "done"
    assert len(PAID) == 1 and PAID[0] != PAID[0]  # the tool got its NaN, once approved


@pytest.mark.parametrize("name", ["fragile", "vague"])
def test_a_predicate_that_raises_or_answers_neither_true_nor_false_asks(
    sqlite_url: str, thread_id: str, name: str
) -> None:
    result = run(sqlite_url, thread_id, call(name, '{"amount": 5}'))
    assert result.status == "paused" and PAID == []


def test_a_finite_small_amount_still_runs_without_asking(sqlite_url: str, thread_id: str) -> None:
    result = run(sqlite_url, thread_id, call("pay", '{"amount": 5}'))
    assert result.status == "done" and PAID == [5.0]


@pytest.mark.parametrize(
    "args",
    [{"amount": float("nan")}, {"amount": -float("inf")}, {"amount": 5, "to": {"x": float("nan")}}],
    ids=["nan", "-inf", "nested nan"],
)
def test_the_predicate_never_sees_a_non_finite_number_it_would_pass(args: dict[str, Any]) -> None:
    assert pay.needs_approval(args) is True
    assert pay.needs_approval({"amount": 5}) is False


# -- LangChain and MCP tools get the same check ----------------------------------------------


def _lc_pay(amount: float) -> str:
    PAID.append(amount)
    return f"paid {amount}"


LC_PAY = StructuredTool.from_function(func=_lc_pay, name="lc_pay", description="Pay an amount.")
# An MCP server describes its tools with a JSON schema, as this one does.
SCHEMA_PAY = StructuredTool.from_function(
    func=_lc_pay,
    name="schema_pay",
    description="Pay an amount.",
    args_schema={
        "type": "object",
        "properties": {"amount": {"type": "number"}},
        "required": ["amount"],
    },
)


@pytest.mark.parametrize("lc", [LC_PAY, SCHEMA_PAY], ids=["pydantic schema", "JSON schema"])
@pytest.mark.parametrize("text", ["nan", "-Infinity"])
def test_a_langchain_or_mcp_tool_with_a_predicate_never_runs_a_non_finite_call_unasked(
    sqlite_url: str, thread_id: str, lc: StructuredTool, text: str
) -> None:
    adapted = from_langchain(lc, requires_approval=lambda a: a["amount"] > 100)
    replies = [call(adapted.name, json.dumps({"amount": text})), FINAL]
    with Agent(ScriptedModel(replies), [adapted], store=sqlite_url) as agent:
        result = agent.run("pay", thread_id=thread_id)
    assert result.status == "paused" and PAID == []
    with Agent(ScriptedModel(replies), [adapted], store=sqlite_url) as agent:
        done = agent.resume(thread_id, {result.pending[0].call_id: Approve()})
    assert done.status == "done" and PAID == []
    (refused,) = [s for s in done.chain if isinstance(s, ToolResultStep)]
    assert refused.error_kind == "invalid_args" and "finite number" in (refused.error or "")


# -- from the graph, driven raw ----------------------------------------------------------------


def _hand_written(agent: Agent, thread: str, args: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A think step proposing `pay(args)`, written by hand with nothing marked for approval."""
    proposed = ToolCall(name="pay", args=args)
    state = agent._start("pay")
    state["chain"] += [
        ThoughtStep(node="think", text="pay"),
        ToolCallStep(node="think", call=proposed, think_step=1),
    ]
    counters = state["counters"].model_copy(update={"steps": 1, "model_calls": 1})
    state.update(pending_calls=[proposed], counters=counters, needs_approval=[])
    config = agent._config(thread)
    agent.graph.update_state(config, state, as_node="think")
    return config, proposed.id


@pytest.mark.parametrize(
    "args", [{"amount": float("nan")}, {"amount": "nan"}, {"amount": "-Infinity"}]
)
def test_a_raw_graph_invoke_pauses_a_non_finite_call_at_the_gate(
    any_store_url: str, thread_id: str, args: dict[str, Any]
) -> None:
    with Agent(ScriptedModel([FINAL]), TOOLS, store=any_store_url) as agent:
        config, call_id = _hand_written(agent, thread_id, args)
        out = agent.graph.invoke(None, config)
        assert out["__interrupt__"] and PAID == []
        (waiting,) = out["__interrupt__"]
        assert [r["call_id"] for r in waiting.value["requests"]] == [call_id]


def test_a_raw_graph_ainvoke_pauses_a_non_finite_call_at_the_gate(
    sqlite_url: str, thread_id: str
) -> None:
    with Agent(ScriptedModel([FINAL]), TOOLS, store=sqlite_url) as agent:
        config, _ = _hand_written(agent, thread_id, {"amount": "nan"})
        out = asyncio.run(agent.graph.ainvoke(None, config))
        assert out["__interrupt__"] and PAID == []


@pytest.mark.parametrize(
    "edited",
    [{"amount": float("nan")}, {"amount": "inf"}, {"amount": 2**70}, {"amount": 5, "to": "\ud800"}],
    ids=["nan", "inf as text", "integer over 64 bits", "lone surrogate"],
)
def test_an_edit_to_a_non_finite_or_unstorable_value_is_refused_and_changes_nothing(
    sqlite_url: str, thread_id: str, edited: dict[str, Any]
) -> None:
    with Agent(ScriptedModel([FINAL, FINAL]), TOOLS, store=sqlite_url) as agent:
        config, call_id = _hand_written(agent, thread_id, {"amount": 500})
        agent.graph.invoke(None, config)
        before = len(agent.result(thread_id).chain)
        with pytest.raises(ResumeValueError, match="edited arguments"):
            agent.graph.invoke(Command(resume={call_id: Edit(args=edited)}), config)
        with pytest.raises(ResumeValueError, match="edited arguments"):
            agent.resume(thread_id, {call_id: Edit(args=edited)})
        after = agent.result(thread_id)
        assert after.status == "paused" and len(after.chain) == before and PAID == []
        done = agent.resume(thread_id, {call_id: Edit(args={"amount": 50})})
    assert done.status == "done" and PAID == [50.0]


# -- from the CLI -----------------------------------------------------------------------------

runner = CliRunner()
PAY = "tests.nodes.test_gate_nonfinite:pay"


@pytest.mark.parametrize("action_input", ['{"amount": "nan"}', '{"amount": "-inf"}'])
def test_the_cli_pauses_a_non_finite_payment_and_refuses_a_non_finite_edit(
    sqlite_url: str, tmp_path: Path, thread_id: str, action_input: str
) -> None:
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([call("pay", action_input), FINAL]))
    flags = ["--store", sqlite_url, "--tools", PAY, "--script", str(script)]
    started = runner.invoke(app, ["run", "pay", "--thread", thread_id, "--no-input", *flags])
    assert started.exit_code == 3, started.output  # paused for a person
    assert "waiting for approval of 1 call" in started.output and PAID == []
    with Agent(ScriptedModel([]), [pay], store=sqlite_url) as agent:
        (pending,) = agent.result(thread_id).pending
    edit = ["approve", thread_id, str(pending.call_id), "--edit", '{"amount": NaN}']
    refused = runner.invoke(app, [*edit, *flags])
    assert refused.exit_code == 2, refused.output
    assert "finite number" in refused.output and PAID == []


# -- over HTTP --------------------------------------------------------------------------------


@pytest.fixture
def client(sqlite_url: str) -> Iterator[TestClient]:
    replies = [call("pay", '{"amount": "nan"}'), FINAL]
    agent = Agent(ScriptedModel(replies), TOOLS, store=sqlite_url)
    with agent, TestClient(build_app(agent, poll_s=0.05), base_url="http://127.0.0.1:8000") as tc:
        yield tc


def _paused(client: TestClient, thread: str) -> dict[str, Any]:
    for _ in range(400):
        doc: dict[str, Any] = client.get(f"/runs/{thread}").json()
        if doc.get("status") not in (None, "running"):
            return doc
        asyncio.run(asyncio.sleep(0.05))
    raise AssertionError(f"{thread} never stopped running")


def test_over_http_a_non_finite_payment_waits_for_a_person_and_a_nan_edit_is_refused(
    client: TestClient,
) -> None:
    assert client.post("/runs", json={"task": "pay", "thread_id": "h1"}).status_code == 202
    doc = _paused(client, "h1")
    assert doc["status"] == "paused" and PAID == []
    (pending,) = doc["pending"]
    assert pending["tool"] == "pay"
    # Python's JSON reader, and so the server's, takes a bare NaN: the gate must not.
    edit = '{"action": "edit", "args": {"amount": NaN}}'
    body = f'{{"decisions": {{"{pending["call_id"]}": {edit}}}}}'
    refused = client.post(
        "/runs/h1/resume", content=body, headers={"content-type": "application/json"}
    )
    assert refused.status_code == 422, refused.text
    assert "'amount' is NaN, not a finite number" in refused.json()["error"]
    assert _paused(client, "h1")["status"] == "paused" and PAID == []
    rejected = {"decisions": {pending["call_id"]: {"action": "reject", "reason": "NaN"}}}
    assert client.post("/runs/h1/resume", json=rejected).status_code == 202

"""The approval gate lives in the graph: whoever resumes it, however, nothing runs unanswered.

Each attack drives the compiled graph directly (as the LangGraph server, Studio or a
user's own graph would), not through `Agent.resume`, and checks that the gated tool did
not run, the run is still paused exactly as it was, and a later valid answer works.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.types import Command

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ResumeValueError
from thinkgraph.hitl import Approve
from thinkgraph.state import HumanStep, ThoughtStep, ToolCall, ToolCallStep, ToolResultStep

SENT: list[str] = []


@tool(requires_approval=True, side_effects=True)
def send(to: str) -> str:
    """Send a message."""
    SENT.append(to)
    return f"sent to {to}"


@tool(requires_approval=True, side_effects=True)
def wire(amount: int) -> str:
    """Wire money."""
    SENT.append(f"wire {amount}")
    return f"wired {amount}"


REPLIES = ["(two calls planned below)", "Thought: done\nFinal Answer: ok"]


@pytest.fixture
def agent(any_store_url: str) -> Iterator[Agent]:
    SENT.clear()
    with Agent(ScriptedModel(list(REPLIES)), [send, wire], store=any_store_url) as made:
        yield made


def _paused(agent: Agent, thread_id: str) -> tuple[dict[str, Any], list[str]]:
    # A think step that proposed two gated calls at once, as a multi-call policy does.
    calls = [ToolCall(name="send", args={"to": "ceo"}), ToolCall(name="wire", args={"amount": 5})]
    state = agent._start("send it")
    state["chain"] += [
        ThoughtStep(node="think", text="send and wire"),
        *[ToolCallStep(node="think", call=c, think_step=1) for c in calls],
    ]
    counters = state["counters"].model_copy(update={"steps": 1, "model_calls": 1})
    state.update(pending_calls=calls, counters=counters, needs_approval=[c.id for c in calls])
    agent.graph.update_state(agent._config(thread_id), state, as_node="think")
    result = agent.resume(thread_id)
    assert result.status == "paused"
    ids = [p.call_id for p in result.pending if p.call_id is not None]
    assert len(ids) == 2
    return {"configurable": {"thread_id": thread_id}}, ids


def _unchanged(agent: Agent, thread_id: str, ids: list[str], chain_len: int) -> None:
    after = agent.result(thread_id)
    assert after.status == "paused"
    assert sorted(p.call_id or "" for p in after.pending) == sorted(ids)
    assert len(after.chain) == chain_len
    assert not any(isinstance(s, ToolResultStep | HumanStep) for s in after.chain)
    assert SENT == []


BAD_ANSWERS: list[tuple[str, Any]] = [
    ("unknown id", lambda ids: {"no-such-call": {"action": "reject", "reason": "no"}}),
    ("one missing", lambda ids: {ids[0]: {"action": "approve"}}),
    ("not a mapping", lambda ids: "approve"),
    ("malformed decision", lambda ids: {ids[0]: {"action": "launch"}, ids[1]: "approve"}),
    (
        "edit with bad args",
        lambda ids: {ids[0]: "approve", ids[1]: {"action": "edit", "args": {"amount": "lots"}}},
    ),
]


@pytest.mark.parametrize(("name", "make"), BAD_ANSWERS, ids=[n for n, _ in BAD_ANSWERS])
def test_a_raw_graph_resume_with_a_bad_answer_is_refused_and_changes_nothing(
    agent: Agent, thread_id: str, name: str, make: Any
) -> None:
    config, ids = _paused(agent, thread_id)
    chain_len = len(agent.result(thread_id).chain)
    with pytest.raises(ResumeValueError) as refused:
        agent.graph.invoke(Command(resume=make(ids)), config)
    assert "the run is still paused; waiting:" in str(refused.value)
    assert all(f"{call_id} (" in str(refused.value) for call_id in ids)
    _unchanged(agent, thread_id, ids, chain_len)
    # A later valid answer, from any door, still works.
    result = agent.resume(thread_id, {ids[0]: Approve(), ids[1]: {"action": "reject"}})
    assert result.status == "done"
    assert SENT == ["ceo"]


def test_an_empty_answer_runs_nothing_and_leaves_the_run_paused(
    agent: Agent, thread_id: str
) -> None:
    # LangGraph reads `{}` as a map of interrupt ids answering none of them: the gate asks
    # again. Through Agent (and so the CLI, HTTP, workers) it is refused outright.
    config, ids = _paused(agent, thread_id)
    chain_len = len(agent.result(thread_id).chain)
    out = agent.graph.invoke(Command(resume={}), config)
    assert out["__interrupt__"]
    _unchanged(agent, thread_id, ids, chain_len)
    with pytest.raises(ResumeValueError, match="one decision per call id"):
        agent.resume(thread_id, {})
    _unchanged(agent, thread_id, ids, chain_len)


def test_a_refused_answer_names_what_waits(agent: Agent, thread_id: str) -> None:
    config, ids = _paused(agent, thread_id)
    with pytest.raises(ResumeValueError, match="no call 'nope' waits for approval") as refused:
        agent.graph.invoke(Command(resume={"nope": "approve"}), config)
    for call_id in ids:
        assert call_id in str(refused.value)


def test_the_approve_shorthand_is_accepted_by_the_graph_as_by_agent(
    agent: Agent, thread_id: str
) -> None:
    config, ids = _paused(agent, thread_id)
    out = agent.graph.invoke(Command(resume={ids[0]: "approve", ids[1]: "approve"}), config)
    assert out["run"].status == "done"
    assert sorted(SENT) == ["ceo", "wire 5"]


def test_two_refusals_in_a_row_then_a_valid_answer_from_the_graph(
    agent: Agent, thread_id: str
) -> None:
    config, ids = _paused(agent, thread_id)
    chain_len = len(agent.result(thread_id).chain)
    for bad in ({"x": "approve"}, {ids[0]: "approve"}):
        with pytest.raises(ResumeValueError):
            agent.graph.invoke(Command(resume=bad), config)
    _unchanged(agent, thread_id, ids, chain_len)
    out = agent.graph.invoke(
        Command(resume={ids[0]: {"action": "respond", "text": "done by hand"}, ids[1]: "approve"}),
        config,
    )
    assert out["run"].status == "done"
    assert SENT == ["wire 5"]


def test_a_resume_keyed_by_interrupt_id_is_checked_too(agent: Agent, thread_id: str) -> None:
    config, ids = _paused(agent, thread_id)
    (waiting,) = agent.graph.get_state(config).interrupts
    with pytest.raises(ResumeValueError):
        agent.graph.invoke(Command(resume={waiting.id: {"bogus": "reject"}}), config)
    assert SENT == []
    out = agent.graph.invoke(
        Command(resume={waiting.id: {ids[0]: "approve", ids[1]: "approve"}}), config
    )
    assert out["run"].status == "done"


def test_the_interrupt_carries_the_schema_of_its_answer(agent: Agent, thread_id: str) -> None:
    config, ids = _paused(agent, thread_id)
    (waiting,) = agent.graph.get_state(config).interrupts
    schema = waiting.response_schema
    assert isinstance(schema, dict)
    ours, langchain = schema["anyOf"]  # our {call_id: decision}, or LangChain's answer
    assert ours["type"] == "object" and sorted(ours["required"]) == sorted(ids)
    decisions = langchain["properties"]["decisions"]
    assert decisions["minItems"] == decisions["maxItems"] == len(ids)
    assert set(decisions["items"]["properties"]["type"]["enum"]) == {
        "approve",
        "edit",
        "reject",
        "respond",
    }


def test_a_langchain_answer_from_the_graph_is_checked_like_ours(
    agent: Agent, thread_id: str
) -> None:
    config, ids = _paused(agent, thread_id)
    chain_len = len(agent.result(thread_id).chain)
    with pytest.raises(ResumeValueError, match="one decision per action request"):
        agent.graph.invoke(Command(resume={"decisions": [{"type": "approve"}]}), config)
    _unchanged(agent, thread_id, ids, chain_len)
    answer = {"decisions": [{"type": "reject", "message": "no"}, {"type": "approve"}]}
    out = agent.graph.invoke(Command(resume=answer), config)
    assert out["run"].status == "done"
    assert SENT == ["wire 5"]


def test_an_ask_human_pause_refuses_a_bad_answer_from_the_graph(
    any_store_url: str, thread_id: str
) -> None:
    from thinkgraph import StepLimits

    replies = ["gibberish"] * 3 + ["Thought: ok\nFinal Answer: fine"]
    limits = StepLimits(max_consecutive_failures=2, failure_policy="ask_human")
    with Agent(ScriptedModel(replies), [], store=any_store_url, limits=limits) as agent:
        paused = agent.run("x", thread_id=thread_id)
        assert paused.status == "paused" and paused.pending[0].kind == "ask_human"
        config = {"configurable": {"thread_id": thread_id}}
        with pytest.raises(ResumeValueError, match="answer an ask_human pause"):
            agent.graph.invoke(Command(resume={"action": "explode"}), config)
        assert agent.result(thread_id).status == "paused"
        out = agent.graph.invoke(Command(resume="retry"), config)
        assert out["run"].status == "done"


# -- predicates see what the tool will get --------------------------------------------------

RAN: list[str] = []


@tool(requires_approval=lambda a: "rm" in a.get("cmd", ""), side_effects=True)
def shell(cmd: str) -> str:
    """Run a shell command."""
    RAN.append(cmd)
    return "ok"


@tool(requires_approval=lambda a: a["amount"] > 100)
def pay(amount: int, currency: str = "EUR") -> str:
    """Pay an amount."""
    RAN.append(f"pay {amount}")
    return "paid"


@pytest.mark.parametrize(
    "action_input",
    ["rm -rf /important", '"rm -rf /important"', '{"cmd": "rm -rf /important"}'],
    ids=["bare text", "json string", "object"],
)
def test_a_predicate_sees_the_argument_the_tool_would_get(
    sqlite_url: str, thread_id: str, action_input: str
) -> None:
    RAN.clear()
    reply = f"Thought: clean up\nAction: shell\nAction Input: {action_input}"
    with Agent(
        ScriptedModel([reply, "Thought: x\nFinal Answer: y"]), [shell], store=sqlite_url
    ) as agent:
        result = agent.run("clean", thread_id=thread_id)
    assert result.status == "paused"
    assert RAN == []


def test_a_call_whose_arguments_cannot_be_determined_needs_approval(
    sqlite_url: str, thread_id: str
) -> None:
    RAN.clear()
    reply = 'Thought: pay\nAction: pay\nAction Input: {"amount": "a lot"}'
    with Agent(
        ScriptedModel([reply, "Thought: x\nFinal Answer: y"]), [pay], store=sqlite_url
    ) as agent:
        result = agent.run("pay", thread_id=thread_id)
    assert result.status == "paused"
    assert RAN == []


def test_a_predicate_sees_defaults_and_validated_values(sqlite_url: str, thread_id: str) -> None:
    seen: list[dict[str, Any]] = []

    @tool(requires_approval=lambda a: seen.append(dict(a)) or False)
    def charge(amount: int, currency: str = "EUR") -> str:
        """Charge."""
        return "ok"

    reply = 'Thought: pay\nAction: charge\nAction Input: {"amount": "7"}'
    with Agent(
        ScriptedModel([reply, "Thought: x\nFinal Answer: y"]), [charge], store=sqlite_url
    ) as agent:
        assert agent.run("pay", thread_id=thread_id).status == "done"
    assert seen and seen[0] == {"amount": 7, "currency": "EUR"}


# -- a state written by hand cannot skip the gate -------------------------------------------


def test_a_state_claiming_no_call_needs_approval_still_pauses_at_the_gate(
    agent: Agent, thread_id: str
) -> None:
    # As a Studio "edit state" or a raw update_state could write it: think's decision with
    # needs_approval emptied.
    calls = [ToolCall(name="send", args={"to": "ceo"})]
    state = agent._start("send it")
    state["chain"] += [
        ThoughtStep(node="think", text="send"),
        ToolCallStep(node="think", call=calls[0], think_step=1),
    ]
    counters = state["counters"].model_copy(update={"steps": 1, "model_calls": 1})
    state.update(pending_calls=calls, counters=counters, needs_approval=[])
    config = agent._config(thread_id)
    agent.graph.update_state(config, state, as_node="think")
    result = agent.resume(thread_id)
    assert result.status == "paused"
    assert [p.call_id for p in result.pending] == [calls[0].id]
    assert SENT == []


def test_a_call_marked_cleared_without_a_decision_never_runs(agent: Agent, thread_id: str) -> None:
    config, ids = _paused(agent, thread_id)
    # Written as if the gate had cleared both calls, with no decision recorded.
    agent.graph.update_state(config, {"run_calls": ids, "needs_approval": []}, as_node="approve")
    result = agent.resume(thread_id)
    assert SENT == []
    observed = [s.text for s in result.chain if s.type == "observation"]
    assert observed and all("did not run" in text for text in observed)

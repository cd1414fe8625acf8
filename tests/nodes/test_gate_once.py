"""The gate is one function: which calls need a person, and whether each has a decision.

think, the router into act, the approve node and the router after it all ask
`thinkgraph.nodes.gate.waiting_calls`; a call's rule is judged once per round, and a state
can add a need for approval but never take one away.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from thinkgraph import Agent, RunResult, ScriptedModel, tool
from thinkgraph.errors import ResumeValueError
from thinkgraph.hitl import Approve
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import (
    calls_needing_approval,
    check_answer,
    decided_calls,
    waiting_calls,
)
from thinkgraph.policies import ReActText
from thinkgraph.state import (
    AgentState,
    HumanStep,
    TaskStep,
    ThoughtStep,
    ToolCall,
    ToolCallStep,
)
from thinkgraph.tools import ToolRegistry

ASKED: list[dict[str, Any]] = []


def _over_100(args: dict[str, Any]) -> bool:
    ASKED.append(dict(args))
    return bool(args["amount"] > 100)


@tool(requires_approval=_over_100, side_effects=True)
def pay(amount: float) -> str:
    """Pay an amount; a person approves amounts over 100."""
    return f"paid {amount}"


@tool(requires_approval=lambda a: a["nope"] > 1)
def broken(amount: float) -> str:
    """A tool whose rule raises."""
    return "ran"


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


AFTER_THINK = {"after": ["think"]}


def _edited_after_think(
    agent: Agent, thread_id: str, edit: Callable[[ToolCall], dict[str, Any]]
) -> tuple[ToolCall, RunResult]:
    """Run to the pause after think, change the state as `edit` says of the round's one
    call (as a person would with ``update_state``), and resume: the call and the result."""
    assert agent.run("go", thread_id=thread_id).status == "paused"
    config = agent._config(thread_id)
    (call,) = agent.graph.get_state(config).values["pending_calls"]
    agent.graph.update_state(config, edit(call), as_node="think")
    return call, agent.resume(thread_id)


def _deps(**kw: Any) -> Deps:
    tools = ToolRegistry([pay, broken, add])
    return Deps(model=ScriptedModel([]), policy=ReActText(), tools=tools, **kw)


def _state(calls: list[ToolCall], *, marked: list[str] | None = None) -> AgentState:
    chain = [TaskStep(text="t"), ThoughtStep(text="go")]
    chain += [ToolCallStep(call=c, think_step=1) for c in calls]
    return {"chain": chain, "pending_calls": calls, "needs_approval": marked or []}


def test_a_rule_that_raises_or_sees_nan_needs_a_person() -> None:
    calls = [
        ToolCall(name="broken", args={"amount": 1}),
        ToolCall(name="pay", args={"amount": math.nan}),
        ToolCall(name="pay", args={"amount": 5}),
        ToolCall(name="add", args={"a": 1, "b": 2}),
        ToolCall(name="no_such_tool", args={}),
    ]
    assert calls_needing_approval(_deps(), calls) == [calls[0].id, calls[1].id]


def test_a_call_with_a_recorded_decision_waits_no_more() -> None:
    big = ToolCall(name="pay", args={"amount": 500})
    state = _state([big])
    assert waiting_calls(state, _deps()) == [big.id]
    state["chain"] = [*state["chain"], HumanStep(kind="approve", call_id=big.id)]
    assert decided_calls(state["chain"]) == {big.id: "approve"}
    assert waiting_calls(state, _deps()) == []


def test_a_decision_of_an_earlier_round_does_not_clear_this_rounds_call() -> None:
    big = ToolCall(name="pay", args={"amount": 500})
    state = _state([big])
    earlier = [TaskStep(text="t"), HumanStep(kind="approve", call_id=big.id)]
    state["chain"] = [*earlier, *state["chain"][1:]]
    assert waiting_calls(state, _deps()) == [big.id]


def test_a_state_may_add_a_need_for_approval_but_never_take_one_away() -> None:
    small, big = (
        ToolCall(name="pay", args={"amount": 5}),
        ToolCall(name="pay", args={"amount": 500}),
    )
    # Marked by think (or by hand): asked even though the rule would let it run.
    assert waiting_calls(_state([small], marked=[small.id]), _deps()) == [small.id]
    # Not marked (a state edited by hand): the tools still say it needs a person.
    assert waiting_calls(_state([big], marked=[]), _deps()) == [big.id]


def test_only_narrows_the_check_to_some_calls() -> None:
    a, b = ToolCall(name="pay", args={"amount": 500}), ToolCall(name="pay", args={"amount": 600})
    assert waiting_calls(_state([a, b]), _deps(), only={b.id}) == [b.id]


def test_the_agents_own_approval_list_is_part_of_the_gate() -> None:
    call = ToolCall(name="add", args={"a": 1, "b": 2})
    assert waiting_calls(_state([call]), _deps(approve=frozenset({"add"}))) == [call.id]
    assert waiting_calls(_state([call]), _deps(approve="side_effects")) == []


def test_a_rule_is_judged_once_per_call_in_a_round(sqlite_url: str, thread_id: str) -> None:
    # think, the router into approve, approve (before and after the pause) and the router
    # after it all ask the gate; the tool's rule itself runs once for the call.
    replies = [
        'Thought: pay\nAction: pay\nAction Input: {"amount": 500}',
        "Thought: done\nFinal Answer: paid",
    ]
    ASKED.clear()
    with Agent(ScriptedModel(replies), [pay], store=sqlite_url) as agent:
        paused = agent.run("pay", thread_id=thread_id)
        assert paused.status == "paused"
        (waiting,) = paused.pending
        done = agent.resume(thread_id, {waiting.call_id or "": Approve()})
    assert done.status == "done" and done.answer == "paid"
    assert ASKED == [{"amount": 500.0}]


def test_a_call_edited_by_hand_after_the_gate_judged_it_is_judged_again(
    sqlite_url: str, thread_id: str
) -> None:
    # think judged pay(5): no person needed. The same call, edited by hand to pay(500)
    # before it runs, is a new question: the kept verdict is for the old arguments.
    replies = [
        'Thought: pay\nAction: pay\nAction Input: {"amount": 5}',
        "Thought: done\nFinal Answer: paid",
    ]

    def pay_more(small: ToolCall) -> dict[str, Any]:
        return {"pending_calls": [small.model_copy(update={"args": {"amount": 500}})]}

    with Agent(ScriptedModel(replies), [pay], breakpoints=AFTER_THINK, store=sqlite_url) as agent:
        small, paused = _edited_after_think(agent, thread_id, pay_more)
    assert paused.status == "paused"
    assert [(p.kind, p.call_id, p.args) for p in paused.pending] == [
        ("approval", small.id, {"amount": 500})
    ]


def test_an_answer_to_a_pause_is_checked_before_it_is_handed_on(
    sqlite_url: str, thread_id: str
) -> None:
    replies = [
        'Thought: pay\nAction: pay\nAction Input: {"amount": 500}',
        "Thought: done\nFinal Answer: paid",
    ]
    with Agent(ScriptedModel(replies), [pay], store=sqlite_url) as agent:
        agent.run("pay", thread_id=thread_id)
        (waiting,) = agent.graph.get_state(agent._config(thread_id)).interrupts
    (call_id,) = [r["call_id"] for r in waiting.value["requests"]]
    tools = ToolRegistry([pay])
    assert check_answer(waiting.value, {call_id: "approve"}, tools) == {
        call_id: {"action": "approve"}
    }
    with pytest.raises(ResumeValueError, match="the run is still paused"):
        check_answer(waiting.value, {call_id: {"action": "edit", "args": {"amount": "x"}}}, tools)
    with pytest.raises(ResumeValueError, match="answer an ask_human pause"):
        check_answer({"kind": "ask_human"}, {"action": "explode"}, tools)
    assert check_answer({"kind": "ask_human"}, "retry", tools) == "retry"


def test_a_need_added_by_hand_is_asked_even_when_no_tool_needs_a_person(
    sqlite_url: str, thread_id: str
) -> None:
    # No tool of this agent can ever need a person; a state edited by hand to mark the
    # round's call still stops at the gate (the state may add a need, never take one away).
    replies = [
        'Thought: add\nAction: add\nAction Input: {"a": 1, "b": 2}',
        "Thought: done\nFinal Answer: 3",
    ]
    with Agent(ScriptedModel(replies), [add], breakpoints=AFTER_THINK, store=sqlite_url) as agent:
        call, paused = _edited_after_think(agent, thread_id, lambda c: {"needs_approval": [c.id]})
    assert paused.status == "paused"
    assert [(p.kind, p.call_id) for p in paused.pending] == [("approval", call.id)]

"""RunResult: what Agent.run returns dumps every step whole and round-trips through JSON."""

from __future__ import annotations

import json

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.hitl import Approve
from thinkgraph.result import RunResult
from thinkgraph.state import ThoughtStep, ToolCallStep, ToolResultStep


@tool(requires_approval=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


REPLIES = [
    'Thought: add them\nAction: add\nAction Input: {"a": 1, "b": 2}',
    "Thought: done\nFinal Answer: 3",
]


def test_model_dump_keeps_every_steps_own_fields() -> None:
    agent = Agent(ScriptedModel(REPLIES), [add], store="memory://")
    result = agent.run("1 + 2?", thread_id="t")
    dumped = result.model_dump(mode="json")
    thought = next(s for s in dumped["chain"] if s["type"] == "thought")
    assert thought["text"] == "add them" and thought["next_action"] == "continue"
    call = next(s for s in dumped["chain"] if s["type"] == "tool_call")
    assert call["call"]["name"] == "add" and call["call"]["args"] == {"a": 1, "b": 2}
    assert json.loads(result.model_dump_json())["chain"] == dumped["chain"]


def test_a_result_round_trips_through_json_paused_and_done() -> None:
    agent = Agent(ScriptedModel(REPLIES), [add], store="memory://")
    paused = agent.run("1 + 2?", thread_id="t")
    assert paused.status == "paused"
    again = RunResult.model_validate_json(paused.model_dump_json())
    assert again == paused and again.pending == paused.pending
    done = agent.resume("t", {paused.pending[0].call_id: Approve()})
    again = RunResult.model_validate_json(done.model_dump_json())
    assert again == done
    types = {type(s) for s in again.chain}
    assert {ThoughtStep, ToolCallStep, ToolResultStep} <= types

"""agent_tool(agent): delegation to a real sub-agent, its chain kept, cycles and depth stopped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.errors import ToolDefinitionError
from thinkgraph.llm.base import Message
from thinkgraph.state import ObservationStep, ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry, execute_call
from thinkgraph.tools.builtin import agent_tool
from thinkgraph.tools.builtin.agent_tool import AgentTool


def delegate(name: str, task: str) -> str:
    return f"Thought: delegate\nAction: {name}\nAction Input: {json.dumps({'task': task})}"


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def results(chain: list[Any]) -> list[ToolResultStep]:
    return [s for s in chain if isinstance(s, ToolResultStep)]


def observations(chain: list[Any]) -> list[str]:
    return [s.text for s in chain if isinstance(s, ObservationStep)]


def test_the_sub_agent_answers_and_its_chain_is_kept(tmp_path: Path) -> None:
    child = Agent(ScriptedModel([final("Paris")]), store=f"sqlite:///{tmp_path / 'child.db'}")
    research = agent_tool(child, name="research", description="Research a question.")
    parent_model = ScriptedModel([delegate("research", "capital of France?"), final("Paris")])
    with Agent(parent_model, [research], store="memory://") as parent, child:
        result = parent.run("capital of France?", thread_id="p")
    (step,) = results(result.chain)
    call_id = step.call_id
    assert step.child_thread_id == f"p:1:{call_id}/research"
    assert step.output == {
        "answer": "Paris",
        "status": "done",
        "stop_reason": "final_answer",
        "thread_id": step.child_thread_id,
    }
    assert step.child_chain is not None
    assert [s["type"] for s in step.child_chain] == ["task", "llm_call", "thought", "final"]
    assert step.child_chain[0]["text"] == "capital of France?"
    assert step.usage == {
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
        "model_calls": 1,
    }
    assert child.result(step.child_thread_id).answer == "Paris"  # the child's own thread
    assert "child_chain" not in observations(result.chain)[0]  # the model sees the answer only
    assert result.answer == "Paris"


class Crash(BaseException):
    """Stands for the process dying in the middle of the child's run."""


def test_a_re_run_resumes_the_same_child_thread_instead_of_starting_over() -> None:
    thinks: list[int] = []
    crashes = iter([Crash()])

    @tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        error = next(crashes, None)
        if error is not None:
            raise error
        return "page text"

    replies = [
        'Thought: fetch\nAction: fetch\nAction Input: {"url": "http://x"}',
        final("summary of page text"),
    ]

    def child_model(messages: list[Message]) -> str:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        thinks.append(turn)
        return replies[turn]

    child = Agent(ScriptedModel(child_model), [fetch], store="memory://")
    reader = agent_tool(child, name="reader", description="Read and summarize a page.")
    ctx = ToolContext.for_call("parent", 2, "call-7")
    args = reader.args_model(task="summarize http://x")
    with pytest.raises(Crash):
        reader.run(args, ctx)
    assert child.result("parent:2:call-7/reader").status == "running"

    again = execute_call(
        ToolRegistry([reader]),
        ToolCall(name="reader", raw_args="summarize http://x", id="call-7"),
        ctx,
    )
    assert again.ok and again.output["answer"] == "summary of page text"
    assert thinks == [0, 1]  # the first think was not repeated
    # Once finished, a further re-run returns the stored result and runs nothing.
    execute_call(ToolRegistry([reader]), ToolCall(name="reader", raw_args="x", id="call-7"), ctx)
    assert thinks == [0, 1]


def placeholder() -> Agent:
    return Agent(ScriptedModel([]), store="memory://")


def test_an_agent_delegating_to_itself_is_stopped_at_once() -> None:
    itself = agent_tool(placeholder(), name="helper", description="Ask a helper.")
    model = ScriptedModel([delegate("helper", "do it"), final("did it myself")])
    with Agent(model, [itself], store="memory://") as agent:
        itself.agent = agent  # the tool now delegates to the agent that owns it
        result = agent.run("do it")
    (step,) = results(result.chain)
    assert (step.ok, step.child_chain) == (False, None)
    assert step.error == (
        "DelegationError: delegation cycle refused: 'helper' would start an agent that is "
        "already running in this chain of delegation (root → helper); do this part yourself"
    )
    assert result.answer == "did it myself"


def test_a_cycle_through_another_agent_is_stopped_and_shown_in_the_child_chain() -> None:
    to_a = agent_tool(placeholder(), name="to_a", description="Ask agent A.")
    b = Agent(
        ScriptedModel([delegate("to_a", "back to you"), final("B answered")]),
        [to_a],
        store="memory://",
    )
    to_b = agent_tool(b, name="to_b", description="Ask agent B.")
    a = Agent(
        ScriptedModel([delegate("to_b", "help"), final("A answered")]), [to_b], store="memory://"
    )
    to_a.agent = a
    result = a.run("go")
    (step,) = results(result.chain)
    assert step.ok and step.output["answer"] == "B answered"
    assert step.child_chain is not None
    child_errors = [s["text"] for s in step.child_chain if s["type"] == "observation"]
    assert child_errors == [
        "DelegationError: delegation cycle refused: 'to_a' would start an agent that is "
        "already running in this chain of delegation (root → to_b → to_a); do this part yourself"
    ]


def test_delegation_deeper_than_max_depth_is_refused() -> None:
    c = Agent(ScriptedModel([final("C answered")]), store="memory://")
    to_c = agent_tool(c, name="to_c", description="Ask C.", max_depth=1)
    b = Agent(
        ScriptedModel([delegate("to_c", "deeper"), final("B alone")]), [to_c], store="memory://"
    )
    to_b = agent_tool(b, name="to_b", description="Ask B.", max_depth=1)
    a = Agent(
        ScriptedModel([delegate("to_b", "help"), final("A answered")]), [to_b], store="memory://"
    )
    result = a.run("go")
    (step,) = results(result.chain)
    assert step.output["answer"] == "B alone"  # depth 1 is allowed
    assert step.child_chain is not None
    (refusal,) = [s for s in step.child_chain if s["type"] == "tool_result"]
    assert refusal["error"] == (
        "DelegationError: delegation too deep: 'to_c' would run at depth 2, beyond "
        "max_depth=1 (root → to_b → to_c); do this part yourself"
    )


def test_the_tool_is_a_sub_agent_tool_taking_one_task() -> None:
    ask = agent_tool(placeholder(), name="ask", description="Ask another agent.")
    assert isinstance(ask, AgentTool)
    assert (ask.kind, ask.single_str_param(), ask.timeout_s) == ("sub_agent", "task", None)
    with pytest.raises(ToolDefinitionError, match="max_depth is 0; use 1 or more"):
        agent_tool(placeholder(), name="ask", description="Ask.", max_depth=0)
    with pytest.raises(ToolDefinitionError, match="has no description"):
        agent_tool(placeholder(), name="ask", description=" ")

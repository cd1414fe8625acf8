"""The graph for LangGraph's server and Studio: ``{"task": "..."}`` in, a thinkgraph run out.

`langgraph dev` (and LangGraph Platform) compile a graph with their own checkpointer, so a
`langgraph.json` names an *uncompiled* graph. `build_server_graph` is the ReAct graph with
one node in front, `start`, that turns the server's JSON input into the start state: the
task step, the limits and fresh counters. Everything after it is the same graph `Agent`
runs, so approvals are checked the same way: the approval interrupt carries our requests
and LangChain's HITL request shape, and a `Command(resume=...)` from `langgraph-sdk` is
validated before LangGraph records it.

Example (``agent.py`` next to a ``langgraph.json`` naming ``./agent.py:graph``):
    >>> graph = build_server_graph(deps, limits=StepLimits(max_steps=8))  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import StateGraph
from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.graphs.build import react_graph
from thinkgraph.graphs.checks import check_graph
from thinkgraph.graphs.routes import THINK
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, start_state
from thinkgraph.types import StepLimits

__all__ = ["START_NODE", "TaskInput", "build_server_graph", "start_state"]

START_NODE = "start"
"""The node that turns ``{"task": ...}`` into the start state (`state.start_state`)."""
"""The node that makes the start state from the server's input."""


class TaskInput(BaseModel):
    """The input of a run under LangGraph's server: what Studio's input form shows."""

    model_config = ConfigDict(extra="forbid")

    task: str = Field(min_length=1)
    """The task for the agent, as a person would type it."""


def build_server_graph(
    deps: Deps, *, limits: StepLimits | None = None
) -> StateGraph[AgentState, Any, TaskInput, AgentState]:
    """The ReAct graph that takes ``{"task": str}`` as input, uncompiled for the server.

    Name it in a `langgraph.json` (``"graphs": {"agent": "./agent.py:graph"}``); the
    server compiles it with its own checkpointer. Compiled with ours it runs the same:
    ``build_server_graph(deps).compile(checkpointer=...).ainvoke({"task": "..."}, config)``.

    Args:
        deps: the model, policy, tools and validators the nodes use.
        limits: the guards of every run it starts (the defaults when None).

    Raises:
        pydantic.ValidationError: at run time, for an input without a non-empty ``task``
            string or with other keys.
    """
    run_limits = limits or StepLimits()

    async def start(state: TaskInput) -> dict[str, Any]:
        return start_state(state.task, run_limits)

    wiring = react_graph(deps).add_node(START_NODE, start, as_is=True).set_entry(START_NODE)
    wiring.add_edge(START_NODE, THINK)
    graph: StateGraph[AgentState, Any, TaskInput, AgentState] = wiring.build(input_schema=TaskInput)
    check_graph(graph, limits=run_limits)
    return graph

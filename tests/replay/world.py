"""Tools and graphs that touch the world, for the tests that a replay touches nothing.

Importable by address from the repo root (``--tools tests.replay.world:send_email``). Each
tool appends a line to the file named by ``$THINKGRAPH_TEST_OUTBOX``, so a test counts
what really ran, in any process. With ``$THINKGRAPH_TEST_DIE_IN_TOOL`` set, `send_email`
kills its own process (SIGKILL) right after its side effect: the README's crash story.
"""

from __future__ import annotations

import dataclasses
import os
import signal
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph

from thinkgraph import tool
from thinkgraph.graphs import build_react_graph, react_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, ObservationStep, ToolCall, new_id
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.runner import aexecute_call

OUTBOX = "THINKGRAPH_TEST_OUTBOX"
DIE_IN_TOOL = "THINKGRAPH_TEST_DIE_IN_TOOL"

Graph = StateGraph[AgentState, Any, AgentState, AgentState]


def _touch(line: str) -> None:
    with Path(os.environ[OUTBOX]).open("a") as outbox:
        outbox.write(line + "\n")


@tool(requires_approval=True, side_effects=True)
def send_email(to: str, body: str) -> str:
    """Send an email."""
    _touch(f"email to {to}")
    if os.environ.get(DIE_IN_TOOL):
        os.kill(os.getpid(), signal.SIGKILL)
    return f"sent to {to}"


@tool(side_effects=True)
def write_note(text: str) -> str:
    """Write a note to the team board."""
    _touch(f"note {text}")
    return "noted"


def non_empty(answer: str, state: Any) -> bool:
    """A validator: the answer says something."""
    return bool(answer.strip())


def with_validator(deps: Deps) -> Graph:
    """Our graph with one more validator, added the natural way: a copy of the parts."""
    return build_react_graph(dataclasses.replace(deps, validators=(*deps.validators, non_empty)))


def observe_to_finalize(deps: Deps) -> Graph:
    """Our graph, but observe goes straight to finalize (where the run went back to think)."""
    return react_graph(deps).set_route("observe", "next", "finalize").build()


def notes_after_observe(deps: Deps) -> Graph:
    """Our graph with a node of the user's after observe that runs a tool itself (not
    through act): it writes a note of each round, and records what the tool said."""

    async def minutes(state: Any, *, deps: Deps) -> dict[str, Any]:
        round_ = state["counters"].steps
        call = ToolCall(name="write_note", args={"text": f"round {round_}"}, id=new_id())
        ctx = ToolContext.for_call("minutes", round_, call.id)
        result = await aexecute_call(deps.tools, call, ctx)
        said = f"minutes: {result.output or result.error}"
        return {"chain": [ObservationStep(call_id=call.id, tool=call.name, text=said)]}

    graph = react_graph(deps).add_node("minutes", minutes)
    return graph.set_route("observe", "next", "minutes").add_edge("minutes", "think").build()


def _die(answer: str, state: Any) -> bool:
    """A validator that kills its own process (SIGKILL)."""
    os.kill(os.getpid(), signal.SIGKILL)
    return True  # pragma: no cover - the process is gone


def killed_validating(deps: Deps) -> Graph:
    """Our graph whose validator kills its own process: a run of it dies in validate, after
    think's checkpoint, before anything records how it ended."""
    return build_react_graph(dataclasses.replace(deps, validators=(*deps.validators, _die)))

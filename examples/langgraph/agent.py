"""A thinkgraph agent for LangGraph's server and Studio: ``langgraph dev`` in this folder.

`langgraph.json` names `graph` below, an uncompiled graph the server compiles with its own
checkpointer. Start a run with ``{"task": "..."}``; before `save_note` runs it pauses with
an approval request (ours under ``requests``, LangChain's HITL shape under
``action_requests`` / ``review_configs``), answered by ``Command(resume=...)``.

    pip install "thinkgraph[studio]"
    cd examples/langgraph && langgraph dev                  # a ScriptedModel plays the model
    THINKGRAPH_MODEL=openai/gpt-4o-mini langgraph dev       # or a real one
"""

from __future__ import annotations

import os

from thinkgraph import ScriptedModel, StepLimits, tool
from thinkgraph.graphs.server import build_server_graph
from thinkgraph.llm import as_chat_model
from thinkgraph.nodes.deps import Deps
from thinkgraph.policies import ReActText
from thinkgraph.tools import ToolRegistry

NOTES: dict[str, str] = {"groceries": "milk, eggs"}
"""The notebook the tools read and write (in memory: it lives as long as the server)."""


@tool
def read_note(name: str) -> str:
    """Read a note.

    Args:
        name: the note's name.
    """
    return NOTES.get(name, f"(no note named {name!r})")


@tool(side_effects=True)
def save_note(name: str, text: str) -> str:
    """Save a note, replacing any note of that name.

    Args:
        name: the note's name.
        text: what the note says.
    """
    NOTES[name] = text
    return f"saved {name!r}"


SCRIPT = [
    'Thought: first read the note.\nAction: read_note\nAction Input: {"name": "groceries"}',
    "Thought: now save it with bread added.\nAction: save_note\n"
    'Action Input: {"name": "groceries", "text": "milk, eggs, bread"}',
    "Thought: done.\nFinal Answer: Your groceries note now says: milk, eggs, bread.",
]
"""What the ScriptedModel answers, in turn, when THINKGRAPH_MODEL is not set."""

model = os.environ.get("THINKGRAPH_MODEL")
deps = Deps(
    model=as_chat_model(model) if model else ScriptedModel(SCRIPT),
    policy=ReActText(),
    tools=ToolRegistry([read_note, save_note]),
    approve="side_effects",
)
graph = build_server_graph(deps, limits=StepLimits(max_steps=8))
"""The graph `langgraph.json` serves, uncompiled: the server brings its checkpointer."""

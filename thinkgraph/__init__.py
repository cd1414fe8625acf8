"""thinkgraph: LLM agents as explicit, checkpointed LangGraph state machines.

Example:
    >>> from thinkgraph import Agent, ScriptedModel, StepLimits, tool

The public names load on first use, so `thinkgraph --help` and `import thinkgraph.types`
stay fast; importing LangGraph happens when an agent is built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from thinkgraph._lazy import lazy_names

if TYPE_CHECKING:
    from thinkgraph.agent import Agent
    from thinkgraph.errors import ThinkgraphError
    from thinkgraph.hitl import Approve, Edit, Pending, Reject, Respond
    from thinkgraph.llm.base import ChatModel
    from thinkgraph.llm.scripted import ScriptedModel
    from thinkgraph.result import RunResult
    from thinkgraph.state import Verdict
    from thinkgraph.storage.prune import Retention
    from thinkgraph.tools.base import Tool
    from thinkgraph.tools.function import tool
    from thinkgraph.types import NextAction, StepLimits

__all__ = [
    "Agent",
    "Approve",
    "ChatModel",
    "Edit",
    "NextAction",
    "Pending",
    "Reject",
    "Respond",
    "Retention",
    "RunResult",
    "ScriptedModel",
    "StepLimits",
    "ThinkgraphError",
    "Tool",
    "Verdict",
    "tool",
]

__getattr__, __dir__ = lazy_names(
    __name__,
    {
        # running agents
        "thinkgraph.agent": ["Agent"],
        "thinkgraph.result": ["RunResult"],
        # models
        "thinkgraph.llm.base": ["ChatModel"],
        "thinkgraph.llm.scripted": ["ScriptedModel"],
        # limits, routing and retention
        "thinkgraph.types": ["NextAction", "StepLimits"],
        "thinkgraph.storage.prune": ["Retention"],
        # tools and validation
        "thinkgraph.tools.base": ["Tool"],
        "thinkgraph.tools.function": ["tool"],
        "thinkgraph.state": ["Verdict"],
        # human in the loop
        "thinkgraph.hitl": ["Approve", "Edit", "Pending", "Reject", "Respond"],
        # errors
        "thinkgraph.errors": ["ThinkgraphError"],
    },
)

__version__ = "0.1.0"

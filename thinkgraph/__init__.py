"""thinkgraph: LLM agents as explicit, checkpointed LangGraph state machines.

Example:
    >>> from thinkgraph import Agent, ScriptedModel, StepLimits, tool

The public names load on first use, so `thinkgraph --help` and `import thinkgraph.types`
stay fast; importing LangGraph happens when an agent is built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

_WHERE = {
    # running agents
    "Agent": "thinkgraph.agent",
    "RunResult": "thinkgraph.result",
    # models
    "ChatModel": "thinkgraph.llm.base",
    "ScriptedModel": "thinkgraph.llm.scripted",
    # limits and routing
    "NextAction": "thinkgraph.types",
    "StepLimits": "thinkgraph.types",
    "Retention": "thinkgraph.storage.prune",
    # tools and validation
    "Tool": "thinkgraph.tools.base",
    "tool": "thinkgraph.tools.function",
    "Verdict": "thinkgraph.state",
    # human in the loop
    "Approve": "thinkgraph.hitl",
    "Edit": "thinkgraph.hitl",
    "Reject": "thinkgraph.hitl",
    "Respond": "thinkgraph.hitl",
    "Pending": "thinkgraph.hitl",
    # errors
    "ThinkgraphError": "thinkgraph.errors",
}

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'thinkgraph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])

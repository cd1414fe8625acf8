"""thinkgraph: LLM agents as explicit, checkpointed LangGraph state machines.

Example:
    >>> from thinkgraph import Agent, ScriptedModel, StepLimits, tool
"""

from thinkgraph.agent import Agent, RunResult
from thinkgraph.errors import ThinkgraphError
from thinkgraph.llm.base import ChatModel
from thinkgraph.llm.scripted import ScriptedModel
from thinkgraph.state import Verdict
from thinkgraph.tools.base import Tool, tool
from thinkgraph.types import NextAction, StepLimits

__all__ = [
    # running agents
    "Agent",
    "ChatModel",
    # limits and routing
    "NextAction",
    "RunResult",
    "ScriptedModel",
    "StepLimits",
    # errors
    "ThinkgraphError",
    # tools
    "Tool",
    # validation
    "Verdict",
    "tool",
]

__version__ = "0.1.0"

"""The guard every tool execution asks first: may this call run, or does a result stand in?

A run can be driven with a guard (`guarded`, put in the run's LangGraph config by the run
driver): a replay's, which serves the recorded result of a call, refuses a call it must not
run, and counts the calls it lets run (`thinkgraph.runs.replay`). The guard travels in the
config, which LangGraph hands to every node whatever parts the node was built with, and
`execute_call` / `aexecute_call` ask it (`stand_in`) before anything else. So a graph
builder that copies or replaces the agent's parts, or a user's node that runs a tool
itself, cannot route around it: every tool execution passes here.

A run without a guard (every run but a replay) pays one context-variable read per call.
"""

from __future__ import annotations

from typing import Protocol

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config

from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.registry import ToolRegistry

__all__ = ["GUARD_KEY", "ToolGuard", "active_guard", "guarded", "stand_in"]

GUARD_KEY = "__thinkgraph_tool_guard"
"""Where the guard sits in the config's ``configurable`` (a ``__`` key: LangGraph keeps it
out of the checkpoints' metadata)."""


class ToolGuard(Protocol):
    """Decides, for each tool call of a run, whether it runs."""

    def stand_in(
        self, registry: ToolRegistry, call: ToolCall, ctx: ToolContext
    ) -> ToolResultStep | None:
        """The result that stands for `call` instead of running it (served or refused), or
        None: the tool runs. Called once per call, before the tool is looked up."""
        ...


def guarded(config: RunnableConfig, guard: ToolGuard | None) -> RunnableConfig:
    """`config` with `guard` over every tool call of the run (unchanged when None)."""
    if guard is None:
        return config
    return {**config, "configurable": {**config.get("configurable", {}), GUARD_KEY: guard}}


def active_guard() -> ToolGuard | None:
    """The guard of the run whose node is running now, or None (none, or outside a run)."""
    config = var_child_runnable_config.get()
    if not config:
        return None
    guard: ToolGuard | None = (config.get("configurable") or {}).get(GUARD_KEY)
    return guard


def stand_in(registry: ToolRegistry, call: ToolCall, ctx: ToolContext) -> ToolResultStep | None:
    """What stands for `call` instead of running it, when the run has a guard; else None."""
    guard = active_guard()
    return None if guard is None else guard.stand_in(registry, call, ctx)

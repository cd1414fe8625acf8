"""act: run one approved tool call. The graph starts one act task per call (`Send`)."""

from __future__ import annotations

from typing import Any, NotRequired

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

from thinkgraph.nodes.deps import Deps
from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.cache import replay_cached
from thinkgraph.tools.runner import execute_call

__all__ = ["ActTask", "act", "tool_context"]


class ActTask(TypedDict):
    """The input of one act task."""

    call: ToolCall
    """The call to run."""
    step: int
    """The think step (1-based) that proposed it."""
    number: NotRequired[int]
    """The chain number its result will have (the chain's length when the round began,
    plus the call's place in the round)."""
    cached: NotRequired[ToolResultStep | None]
    """An earlier result of an identical call within the tool's `cache_ttl_s`, found in the
    chain when the task was made (act never sees the chain): served instead of running."""


def tool_context(task: ActTask, config: RunnableConfig) -> ToolContext:
    """The context a tool sees for this task's call, idempotency key included."""
    thread_id = str(config.get("configurable", {}).get("thread_id", ""))
    return ToolContext.for_call(thread_id, task["step"], task["call"].id)


def act(task: ActTask, config: RunnableConfig, *, deps: Deps) -> dict[str, Any]:
    """Run the call and record its result. Never raises for a tool's failure.

    Each call is its own LangGraph task, so the result of a call that finished is saved
    even if a sibling call (or the process) dies; on resume only unfinished calls re-run.
    """
    ctx = tool_context(task, config)
    cached = task.get("cached")
    if cached is not None:
        return {"chain": [replay_cached(cached, task["call"], ctx)]}
    result = execute_call(deps.tools, task["call"], ctx)
    return {"chain": [result.model_copy(update={"node": "act"})]}

"""act: run one approved tool call. The graph starts one act task per call (`Send`).

A run's `StepLimits.timeout_s` bounds its tools too: the router that starts act puts the
run's time left in each task (`time_left`), and the call gets no more than that; a call it
stops becomes a "timeout" result, observe counts its time, and the router after observe
sends the run to its forced answer. Time left is counted like the guard counts time
(`Counters.elapsed_s`: time inside nodes, paused time excluded), so a run paused for
approval still has, on resume, the time it had.
"""

from __future__ import annotations

from typing import Any, NotRequired

from langchain_core.runnables import RunnableConfig
from typing_extensions import TypedDict

from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState, Counters, ToolCall, ToolResultStep
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.cache import replay_cached
from thinkgraph.tools.runner import aexecute_call

__all__ = ["ActTask", "act", "time_left", "tool_context"]


class ActTask(TypedDict):
    """The input of one act task."""

    call: ToolCall
    """The call to run."""
    step: int
    """The think step (1-based) that proposed it."""
    cached: NotRequired[ToolResultStep | None]
    """An earlier result of an identical call within the tool's `cache_ttl_s`, found in the
    chain when the task was made (act never sees the chain): served instead of running."""
    time_left_s: NotRequired[float | None]
    """The run's time left when the round began (`time_left`): the call gets no more.
    None or absent: the run has no time limit."""


def time_left(state: AgentState) -> float | None:
    """The run's time left for a round of calls: `timeout_s` minus the time counted so far.

    None when the run has no time limit. A call re-run after a crash gets the same value
    (it is stored with the task).
    """
    timeout = state["limits"].timeout_s
    if timeout is None:
        return None
    return timeout - (state.get("counters") or Counters()).elapsed_s


def tool_context(task: ActTask, config: RunnableConfig) -> ToolContext:
    """The context a tool sees for this task's call, idempotency key included."""
    thread_id = str(config.get("configurable", {}).get("thread_id", ""))
    return ToolContext.for_call(thread_id, task["step"], task["call"].id)


async def act(task: ActTask, config: RunnableConfig, *, deps: Deps) -> dict[str, Any]:
    """Run the call and record its result. Never raises for a tool's failure.

    Each call is its own LangGraph task, so the result of a call that finished is saved
    even if a sibling call (or the process) dies; on resume only unfinished calls re-run.
    An `async def` tool is awaited on the loop; a sync tool runs in the bounded tool
    thread pool, so calls of many runs wait side by side.
    """
    ctx = tool_context(task, config)
    cached = task.get("cached")
    if cached is not None:
        return {"chain": [replay_cached(cached, task["call"], ctx)]}
    # A replay's guard (in the run's config) answers inside the runner: every tool
    # execution passes there, whatever parts this node was built with.
    result = await aexecute_call(deps.tools, task["call"], ctx, time_left_s=task.get("time_left_s"))
    return {"chain": [result]}

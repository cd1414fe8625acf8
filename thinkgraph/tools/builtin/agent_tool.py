"""`agent_tool`: delegate a task to another thinkgraph `Agent`, as a tool call.

The sub-agent runs on its own thread in its own store. The thread id is derived from the
call's idempotency key (`<parent thread>:<step>:<call id>/<tool name>`), so when the
parent's call is re-run after a crash, the child thread is found and resumed, or its
stored result returned, instead of the work starting over. Give the sub-agent a durable
store (sqlite, postgres) for that to hold across processes.

The `tool_result` step keeps the whole child run: `child_thread_id`, `child_chain` (every
child step as a dict) and `usage` (the child's tokens and cost, which observe adds to the
parent's counters). The model sees only `{"answer", "status", "stop_reason", "thread_id"}`.

Delegation is tracked in a context variable: the path of agents running, from the root
agent (the one whose tool call started the delegation) down. A call that would start an
agent already on the path (a cycle, direct or through others) or go deeper than
`max_depth` is refused with an observation that shows the path.
"""

from __future__ import annotations

import contextvars
import threading
from dataclasses import dataclass
from typing import Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.errors import ThreadNotFoundError, ToolDefinitionError
from thinkgraph.result import RunResult
from thinkgraph.tools.base import Tool, ToolContext, ToolKind
from thinkgraph.tools.output import ToolOutput, ToolUsage
from thinkgraph.tools.registry import ToolRegistry, current_registry

__all__ = ["AgentTool", "Delegate", "DelegationError", "agent_tool"]


class _Parts(Protocol):
    @property
    def tools(self) -> ToolRegistry: ...


class Delegate(Protocol):
    """Who a tool hands a task to: a thinkgraph `Agent` is one.

    A protocol, so the tools package needs no agent to import: what delegation uses is
    running a task on a thread, reading or continuing that thread, and the delegate's
    tools (which name it on the delegation path).
    """

    @property
    def deps(self) -> _Parts:
        """The delegate's parts; its `tools` registry identifies it on the path."""
        ...

    def run(self, task: str, thread_id: str | None = None) -> RunResult:
        """Run `task` on `thread_id` until it finishes or pauses."""
        ...

    def resume(self, thread_id: str, decisions: Any = None) -> RunResult:
        """Continue the run on `thread_id`."""
        ...

    def result(self, thread_id: str) -> RunResult:
        """Where the run on `thread_id` stands.

        Raises:
            ThreadNotFoundError: no run is stored under `thread_id`.
        """
        ...


class DelegationError(Exception):
    """A delegation refused: a cycle, or deeper than the tool's `max_depth`."""


@dataclass(frozen=True, slots=True)
class _Running:
    """One agent on the delegation path."""

    tools: ToolRegistry
    """The agent's registry: what identifies the agent (one registry per `Agent`)."""
    label: str
    """How the path names it: "root", or the name of the tool that started it."""


_PATH: contextvars.ContextVar[tuple[_Running, ...]] = contextvars.ContextVar(
    "thinkgraph_delegation_path", default=()
)


class _TaskArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    task: str = Field(description="the task for the sub-agent, with all the context it needs")


class AgentTool(Tool):
    """Runs another `Agent` on a task and returns its answer; made by `agent_tool`."""

    args_model = _TaskArgs
    kind: ToolKind = "sub_agent"
    returns = '{"answer": text or null, "status": done|failed|paused|running, ...}'

    def __init__(
        self,
        agent: Delegate,
        *,
        name: str,
        description: str,
        max_depth: int,
        timeout_s: float | None,
    ) -> None:
        if max_depth < 1:
            raise ToolDefinitionError(f"max_depth is {max_depth}; use 1 or more")
        self.agent = agent
        self.name = name
        self.description = description
        self.max_depth = max_depth
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._opened = False
        self.check_definition()

    def run(self, args: BaseModel, ctx: ToolContext) -> ToolOutput:
        path = _PATH.get()
        caller = current_registry()
        if not path and caller is not None:
            path = (_Running(caller, "root"),)
        self._check(path)
        child_path = (*path, _Running(self.agent.deps.tools, self.name))
        thread_id = f"{ctx.idempotency_key}/{self.name}"
        # A fresh context: the parent's LangGraph config lives in context variables, and a
        # child run that inherited it would be taken for a subgraph of the parent's run
        # (checkpointed under the parent's namespace, unreadable as its own thread).
        result = contextvars.Context().run(self._run_child, child_path, args, thread_id)
        return _output(result)

    def _check(self, path: tuple[_Running, ...]) -> None:
        names = " → ".join([*(r.label for r in path), self.name])
        if any(r.tools is self.agent.deps.tools for r in path):
            raise DelegationError(
                f"delegation cycle refused: {self.name!r} would start an agent that is already "
                f"running in this chain of delegation ({names}); do this part yourself"
            )
        depth = max(len(path), 1)
        if depth > self.max_depth:
            raise DelegationError(
                f"delegation too deep: {self.name!r} would run at depth {depth}, beyond "
                f"max_depth={self.max_depth} ({names}); do this part yourself"
            )

    def _run_child(self, path: tuple[_Running, ...], args: BaseModel, thread_id: str) -> RunResult:
        _PATH.set(path)
        try:
            stored = self._stored(thread_id)
        except ThreadNotFoundError:
            return self.agent.run(cast(_TaskArgs, args).task, thread_id=thread_id)
        # The call ran before (a crash or a resume re-runs it): go on, never start over.
        return self.agent.resume(thread_id) if stored.status == "running" else stored

    def _stored(self, thread_id: str) -> RunResult:
        if self._opened:
            return self.agent.result(thread_id)
        # The first read opens the delegate's store (and builds its graph): done once,
        # not by parallel calls racing to it.
        with self._lock:
            try:
                return self.agent.result(thread_id)
            finally:
                self._opened = True


def _output(result: RunResult) -> ToolOutput:
    counters = result.counters
    usage: ToolUsage = {
        "prompt_tokens": counters.prompt_tokens,
        "completion_tokens": counters.completion_tokens,
        "cost_usd": counters.cost_usd if counters.cost_known else None,
        "model_calls": counters.model_calls,
    }
    value: dict[str, Any] = {
        "answer": result.answer,
        "status": result.status,
        "stop_reason": result.stop_reason,
        "thread_id": result.thread_id,
    }
    if result.detail:
        value["detail"] = result.detail
    return ToolOutput(
        value,
        usage=usage,
        child_thread_id=result.thread_id,
        child_chain=[step.model_dump(mode="json") for step in result.chain],
    )


def agent_tool(
    agent: Delegate,
    *,
    name: str,
    description: str,
    max_depth: int = 3,
    timeout_s: float | None = None,
) -> AgentTool:
    """A tool that delegates a task to `agent` and returns its answer.

    Example:
        >>> from thinkgraph import Agent, ScriptedModel
        >>> researcher = Agent(ScriptedModel(["Final Answer: 42"]), store="memory://")
        >>> ask = agent_tool(researcher, name="research", description="Research a question.")
        >>> ask.kind, ask.single_str_param()
        ('sub_agent', 'task')

    Args:
        agent: the sub-agent; it runs with its own model, tools, limits and store.
        name: the tool's name, e.g. "research".
        description: what the sub-agent is good at, for the calling model.
        max_depth: the deepest this tool may run, counting the root agent's delegates
            as depth 1; deeper calls are refused.
        timeout_s: stop waiting after this many seconds. None by default: the sub-agent's
            own `StepLimits` bound its run (give it a `timeout_s` there), and a child given
            up on would run on unseen. The calling run's `timeout_s` still stops waiting.

    Raises:
        ToolDefinitionError: a bad name, an empty description or max_depth below 1.
    """
    return AgentTool(
        agent, name=name, description=description, max_depth=max_depth, timeout_s=timeout_s
    )

"""Agent: the one-class way to build, run, pause, resume and draw a thinkgraph agent."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, StateSnapshot
from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.errors import NotPausedError, ThreadExistsError, ThreadNotFoundError
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.llm import as_chat_model
from thinkgraph.llm.base import ChatModel
from thinkgraph.nodes.ask_human import parse_human_answer
from thinkgraph.nodes.deps import Deps, Validator
from thinkgraph.policies.base import Policy
from thinkgraph.state import BaseStep, Counters, RunInfo, TaskStep
from thinkgraph.storage import DEFAULT_STORE, close_checkpointer, open_checkpointer
from thinkgraph.tools import Tool, ToolRegistry, tool
from thinkgraph.types import NextAction, RunStatus, StepLimits, StopReason

__all__ = ["Agent", "RunResult"]


class RunResult(BaseModel):
    """Where a run stands: its status, its answer and its whole chain."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    thread_id: str
    """The run's thread id; pass it to `Agent.resume`, `Agent.chain`, the CLI."""
    status: RunStatus
    """running (interrupted, e.g. by a crash), paused (waits for a person), done, failed."""
    answer: str | None = None
    stop_reason: StopReason | None = None
    """Why the run stopped; None while it has not."""
    detail: str = ""
    """More on the stop, e.g. the last error."""
    chain: list[BaseStep] = Field(default_factory=list)
    """Every step of the run."""
    pending: list[dict[str, Any]] = Field(default_factory=list)
    """What a paused run waits for, one entry per open question."""
    counters: Counters = Field(default_factory=Counters)
    """Steps, tokens, cost and time so far."""


def _as_tool(item: Tool | Callable[..., Any]) -> Tool:
    if isinstance(item, Tool):
        return item
    if callable(item):
        return tool(item)
    raise TypeError(f"tools must be Tool objects or typed functions, got {type(item).__name__}")


class Agent:
    """An LLM agent as an explicit, checkpointed state machine.

    Example:
        >>> from thinkgraph import Agent, ScriptedModel, tool
        >>> @tool
        ... def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> agent = Agent(
        ...     model=ScriptedModel([
        ...         'Thought: add them\\nAction: add\\nAction Input: {"a": 2, "b": 40}',
        ...         "Thought: done\\nFinal Answer: 42",
        ...     ]),
        ...     tools=[add],
        ...     store="memory://",
        ... )
        >>> agent.run("What is 2 + 40?", thread_id="t1").answer
        '42'
    """

    def __init__(
        self,
        model: str | ChatModel,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        *,
        limits: StepLimits | None = None,
        store: str | BaseCheckpointSaver[Any] = DEFAULT_STORE,
        policy: Policy | None = None,
        validators: Sequence[Validator] = (),
        max_observation_chars: int = 4000,
    ) -> None:
        from thinkgraph.policies import ReActText

        self.limits = limits or StepLimits()
        self.deps = Deps(
            model=as_chat_model(model),
            policy=policy or ReActText(),
            tools=ToolRegistry([_as_tool(t) for t in tools]),
            validators=tuple(validators),
            max_observation_chars=max_observation_chars,
        )
        self._store = store
        self._saver: BaseCheckpointSaver[Any] | None = (
            store if isinstance(store, BaseCheckpointSaver) else None
        )
        self._owns_saver = False
        self._compiled: CompiledStateGraph[Any, Any, Any, Any] | None = None

    # -- set-up ---------------------------------------------------------------------------

    @property
    def graph(self) -> CompiledStateGraph[Any, Any, Any, Any]:
        """The compiled LangGraph graph, with the checkpointer (opened on first use)."""
        if self._compiled is None:
            if self._saver is None:
                assert isinstance(self._store, str)
                self._saver = open_checkpointer(self._store)
                self._owns_saver = True
            self._compiled = build_react_graph(self.deps).compile(checkpointer=self._saver)
        return self._compiled

    def close(self) -> None:
        """Close the store this agent opened (a store passed in is left open)."""
        if self._owns_saver and self._saver is not None:
            close_checkpointer(self._saver)
        self._saver = None if self._owns_saver else self._saver
        self._compiled = None

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _config(self, thread_id: str) -> RunnableConfig:
        # Each think step takes at most four super-steps before the next think (act,
        # observe, validate, reset or ask_human); the router stops the run, not this limit.
        limit = 5 * self.limits.max_steps + 25
        return {"configurable": {"thread_id": thread_id}, "recursion_limit": limit}

    # -- running --------------------------------------------------------------------------

    def run(self, task: str, thread_id: str | None = None) -> RunResult:
        """Run a task until it finishes or pauses.

        Args:
            task: what the agent should do.
            thread_id: the run's id in the store; a new one is made when omitted.

        Raises:
            ThreadExistsError: the thread already holds a run (resume it, or use a new id).
        """
        thread_id = thread_id or uuid.uuid4().hex[:12]
        config = self._config(thread_id)
        if self.graph.get_state(config).values:
            raise ThreadExistsError(
                f"thread {thread_id!r} already holds a run; continue it with "
                f"resume({thread_id!r}) or start this task on a new thread id"
            )
        self.graph.invoke(self._start(task), config, durability="sync")
        return self.result(thread_id)

    def stream(self, task: str, thread_id: str) -> Iterator[BaseStep]:
        """Run a task, yielding each chain step as soon as its node's checkpoint is written.

        Read the outcome afterwards with `result(thread_id)`.
        """
        config = self._config(thread_id)
        if self.graph.get_state(config).values:
            raise ThreadExistsError(
                f"thread {thread_id!r} already holds a run; continue it with "
                f"resume({thread_id!r}) or start this task on a new thread id"
            )
        start = self._start(task)
        for number, step in enumerate(start["chain"]):
            yield step.model_copy(update={"number": number})
        yield from self._stream(start, config, first_number=len(start["chain"]))

    def _stream(
        self, graph_input: Any, config: RunnableConfig, first_number: int
    ) -> Iterator[BaseStep]:
        number = first_number
        updates = self.graph.stream(graph_input, config, stream_mode="updates", durability="sync")
        for update in updates:
            for values in update.values():
                if not isinstance(values, dict):
                    continue
                for step in values.get("chain", []):
                    yield step.model_copy(update={"number": number})
                    number += 1

    async def arun(self, task: str, thread_id: str | None = None) -> RunResult:
        """`run` without blocking the event loop."""
        return await asyncio.to_thread(self.run, task, thread_id)

    def resume(self, thread_id: str, decisions: Any = None) -> RunResult:
        """Continue a run: after a crash, or with the answer to what a paused run waits for.

        Args:
            thread_id: the run to continue.
            decisions: the answer to a pause (e.g. "retry", "abort" or guidance text for an
                ask_human pause). Leave it out to continue a run whose process died.

        Raises:
            ThreadNotFoundError: no run is stored under this thread id.
            NotPausedError: `decisions` was given but the run does not wait for an answer.
        """
        config = self._config(thread_id)
        snapshot = self._snapshot(thread_id)
        interrupts = list(snapshot.interrupts)
        if decisions is not None and not interrupts:
            raise NotPausedError(
                f"thread {thread_id!r} is not paused (status {self._status(snapshot)}); "
                "there is nothing to answer"
            )
        if interrupts:
            if decisions is None:
                return self.result(thread_id)
            parse_human_answer(decisions)  # refuse a bad answer before the run moves on
            command: Command[Any] = Command(resume={i.id: decisions for i in interrupts})
            self.graph.invoke(command, config, durability="sync")
        elif snapshot.next:
            self.graph.invoke(None, config, durability="sync")
        return self.result(thread_id)

    def _start(self, task: str) -> dict[str, Any]:
        return {
            "chain": [TaskStep(node="start", text=task)],
            "limits": self.limits,
            "counters": Counters(),
            "next_action": NextAction.CONTINUE,
            "pending_calls": [],
            "candidate": None,
            "answer": None,
        }

    # -- reading --------------------------------------------------------------------------

    def _snapshot(self, thread_id: str) -> StateSnapshot:
        snapshot = self.graph.get_state(self._config(thread_id))
        if not snapshot.values:
            raise ThreadNotFoundError(
                f"no run is stored under thread {thread_id!r}; list runs with "
                "`thinkgraph runs` or check --store"
            )
        return snapshot

    @staticmethod
    def _status(snapshot: StateSnapshot) -> RunStatus:
        run = snapshot.values.get("run")
        if isinstance(run, RunInfo):
            return run.status
        return "paused" if snapshot.interrupts else "running"

    def result(self, thread_id: str) -> RunResult:
        """The current result of a run, read from the store."""
        snapshot = self._snapshot(thread_id)
        values: Mapping[str, Any] = snapshot.values
        run = values.get("run")
        return RunResult(
            thread_id=thread_id,
            status=self._status(snapshot),
            answer=values.get("answer"),
            stop_reason=run.stop_reason if isinstance(run, RunInfo) else None,
            detail=run.detail if isinstance(run, RunInfo) else "",
            chain=list(values.get("chain", [])),
            pending=[
                {"id": i.id, **(i.value if isinstance(i.value, dict) else {"value": i.value})}
                for i in snapshot.interrupts
            ],
            counters=values.get("counters") or Counters(),
        )

    def chain(self, thread_id: str) -> list[BaseStep]:
        """Every step of a run, in order."""
        return self.result(thread_id).chain

    def draw(self, fmt: str = "mermaid", thread_id: str | None = None) -> str:
        """The graph as a diagram. Only "mermaid" for now."""
        if fmt != "mermaid":
            raise ValueError(f"unknown diagram format {fmt!r}; use 'mermaid'")
        return self.graph.get_graph().draw_mermaid()

"""LangGraph's side: the prebuilt ReAct agent with a scripted chat model on `SqliteSaver`.

LangGraph 1.x marks `langgraph.prebuilt.create_react_agent` deprecated in favour of
`langchain.agents.create_agent` (in the separate `langchain` package). The benchmark keeps
the prebuilt agent: it ships with langgraph itself and is what DESIGN.md §10 names.
"""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph.state import CompiledStateGraph

from bench.samples import ResumeSample, RunSample
from bench.sqlite_files import (
    count_checkpoints,
    open_wal,
    remove_store,
    stopped_at,
    storage_size,
)
from bench.workload import TASK, add, final_answer, tool_args

__all__ = ["DB_NAME", "find_fork_point", "resume", "run"]

SYSTEM = "prebuilt"
DB_NAME = "prebuilt.db"
THREAD_ID = "bench"


class ToolCallingFakeModel(GenericFakeChatModel):
    """`GenericFakeChatModel` that accepts `bind_tools`, as the prebuilt agent requires.

    The replies already carry their tool calls, so binding has nothing to change.
    """

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ToolCallingFakeModel:
        return self


def _replies(cycles: int) -> list[AIMessage]:
    """One AIMessage with one `add` call per cycle, then the final answer."""
    calls = [
        AIMessage(
            content="",
            tool_calls=[{"name": "add", "args": tool_args(i), "id": f"call_{i}"}],
        )
        for i in range(cycles)
    ]
    return [*calls, AIMessage(content=final_answer(cycles))]


def _graph(replies: list[AIMessage], saver: SqliteSaver) -> CompiledStateGraph[Any, Any, Any, Any]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the deprecation notice described above
        from langgraph.prebuilt import create_react_agent

        tools: list[Callable[..., Any]] = [add]
        return create_react_agent(
            ToolCallingFakeModel(messages=iter(replies)), tools, checkpointer=saver
        )


def _config(cycles: int, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable = {"thread_id": THREAD_ID}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    # two nodes (agent, tools) per cycle; the default limit of 25 would stop the run
    return {"configurable": configurable, "recursion_limit": 2 * cycles + 10}


def _saver(db: Path) -> SqliteSaver:
    saver = SqliteSaver(open_wal(db))
    saver.setup()
    return saver


def run(cycles: int, workdir: Path) -> RunSample:
    """Time `invoke` of the prebuilt agent over `cycles` cycles; measure its file."""
    db = workdir / DB_NAME
    saver = _saver(db)
    graph = _graph(_replies(cycles), saver)
    gc.collect()
    started = time.perf_counter()
    out = graph.invoke({"messages": [("user", TASK)]}, _config(cycles), durability="sync")
    seconds = time.perf_counter() - started
    saver.conn.close()
    if out["messages"][-1].content != final_answer(cycles):
        raise RuntimeError(f"the prebuilt agent answered {out['messages'][-1].content!r}")
    return RunSample(
        system=SYSTEM,
        cycles=cycles,
        seconds=seconds,
        nodes=count_checkpoints(db) - 2,
        storage=storage_size(db),
    )


def find_fork_point(db: Path, cycles: int) -> str:
    """The id of the newest checkpoint whose next node is the model ("agent"). Untimed."""
    saver = _saver(db)
    try:
        graph = _graph([], saver)
        # list() first: the saver holds its lock while the listing is open
        for item in list(saver.list(_config(cycles), limit=6)):
            if graph.get_state(item.config).next == ("agent",):
                return str(item.config["configurable"]["checkpoint_id"])
    finally:
        saver.conn.close()
    raise RuntimeError(f"no checkpoint before the agent node in the last 6 of {db}")


def resume(db: Path, cycles: int, checkpoint_id: str) -> ResumeSample:
    """Time load and load + first node from the end of the last cycle, fresh each time.

    The same method as thinkgraph's: resume a copy cut back to the checkpoint before the
    final model call and stop right after that call (the "agent" node).
    """
    return ResumeSample(
        SYSTEM,
        cycles,
        load_s=_timed_load(db, cycles, checkpoint_id),
        load_first_node_s=_timed_first_node(db, cycles, checkpoint_id),
    )


def _timed_load(db: Path, cycles: int, checkpoint_id: str) -> float:
    saver = _saver(db)
    graph = _graph([], saver)
    gc.collect()
    started = time.perf_counter()
    snapshot = graph.get_state(_config(cycles, checkpoint_id))
    seconds = time.perf_counter() - started
    saver.conn.close()
    if snapshot.next != ("agent",):
        raise RuntimeError(f"fork point {checkpoint_id} is before {snapshot.next}, not agent")
    return seconds


def _timed_first_node(db: Path, cycles: int, checkpoint_id: str) -> float:
    copy = stopped_at(db, checkpoint_id, db.with_name(f"resumed-{db.name}"))
    saver = _saver(copy)
    graph = _graph([AIMessage(content=final_answer(cycles))], saver)
    gc.collect()
    started = time.perf_counter()
    out = graph.invoke(None, _config(cycles), durability="sync", interrupt_after=["agent"])
    seconds = time.perf_counter() - started
    saver.conn.close()
    remove_store(copy)
    if out["messages"][-1].content != final_answer(cycles):
        raise RuntimeError("the resumed agent node did not give the final answer")
    return seconds

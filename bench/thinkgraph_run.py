"""thinkgraph's side: `Agent` with a `ScriptedModel` on a real SQLite store."""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

from bench.samples import ResumeSample, RunSample
from bench.sqlite_files import count_checkpoints, remove_store, stopped_at, storage_size
from bench.workload import TASK, add, final_answer, react_replies
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.state import ThoughtStep

__all__ = ["DB_NAME", "find_fork_point", "resume", "run"]

SYSTEM = "thinkgraph"
DB_NAME = "thinkgraph.db"
THREAD_ID = "bench"
ADD = tool(add)


def _agent(cycles: int, db: Path) -> Agent:
    """An agent scripted for `cycles` tool calls, whose store is opened and graph compiled.

    Opening the connection and compiling the graph happen once per process, whatever the
    run's length, so they are done here, outside every timed region.
    """
    agent = Agent(
        model=ScriptedModel(react_replies(cycles)),
        tools=[ADD],
        limits=StepLimits(max_steps=cycles + 1),
        store=f"sqlite:///{db.resolve()}",
    )
    _ = agent.graph
    return agent


def _config(checkpoint_id: str | None = None, cycles: int = 0) -> dict[str, Any]:
    configurable = {"thread_id": THREAD_ID}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable, "recursion_limit": 5 * cycles + 25}


def run(cycles: int, workdir: Path) -> RunSample:
    """Time `Agent.run` over `cycles` cycles and the final answer; measure its file."""
    db = workdir / DB_NAME
    agent = _agent(cycles, db)
    gc.collect()
    started = time.perf_counter()
    result = agent.run(TASK, thread_id=THREAD_ID)
    seconds = time.perf_counter() - started
    agent.close()
    if result.answer != final_answer(cycles):
        raise RuntimeError(f"thinkgraph answered {result.answer!r} ({result.stop_reason})")
    return RunSample(
        system=SYSTEM,
        cycles=cycles,
        seconds=seconds,
        # one checkpoint for the input and one for START's writes, then one per node
        nodes=count_checkpoints(db) - 2,
        storage=storage_size(db),
    )


def find_fork_point(db: Path, cycles: int) -> str:
    """The id of the newest checkpoint whose next node is think: the last cycle's end.

    Resuming from there runs the final think, as a run killed after its last observe
    would. Untimed.
    """
    agent = _agent(cycles, db)
    try:
        saver = agent.graph.checkpointer
        assert saver is not None and not isinstance(saver, bool)
        # list() first: the saver holds its lock while the listing is open
        for item in list(saver.list(_config(), limit=8)):
            if agent.graph.get_state(item.config).next == ("think",):
                return str(item.config["configurable"]["checkpoint_id"])
    finally:
        agent.close()
    raise RuntimeError(f"no checkpoint before think in the last 8 of {db}")


def resume(db: Path, cycles: int, checkpoint_id: str) -> ResumeSample:
    """Time load, load + first node, and `Agent.result`, each in a fresh agent.

    "Load + first node" resumes the run as a process killed just after `checkpoint_id`
    (the end of the last tool cycle) left it — on a copy cut back to that checkpoint, made
    untimed for every repeat — and stops right after think: the checkpoint is read, the
    chain rebuilt, the model called and think's checkpoint written. (Forking at the
    checkpoint instead, as this did before, also times the fork's own checkpoint, which
    stores the whole chain: a resume writes no such checkpoint.)
    """
    load_s = _timed_load(db, cycles, checkpoint_id)
    first_s = _timed_first_node(db, cycles, checkpoint_id)
    result_s = _timed_result(db, cycles)
    return ResumeSample(SYSTEM, cycles, load_s, first_s, result_s)


def _timed_load(db: Path, cycles: int, checkpoint_id: str) -> float:
    agent = _agent(cycles, db)
    gc.collect()
    started = time.perf_counter()
    snapshot = agent.graph.get_state(_config(checkpoint_id, cycles))
    seconds = time.perf_counter() - started
    agent.close()
    if snapshot.next != ("think",):
        raise RuntimeError(f"fork point {checkpoint_id} is before {snapshot.next}, not think")
    return seconds


def _timed_first_node(db: Path, cycles: int, checkpoint_id: str) -> float:
    copy = stopped_at(db, checkpoint_id, db.with_name(f"resumed-{db.name}"))
    agent = _agent(cycles, copy)
    gc.collect()
    started = time.perf_counter()
    values = agent.graph.invoke(
        None, _config(cycles=cycles), durability="sync", interrupt_after=["think"]
    )
    seconds = time.perf_counter() - started
    agent.close()
    remove_store(copy)
    last = values["chain"][-1]
    if not (isinstance(last, ThoughtStep) and last.answer == final_answer(cycles)):
        raise RuntimeError(f"the resumed think did not give the final answer: {last!r}")
    return seconds


def _timed_result(db: Path, cycles: int) -> float:
    agent = _agent(cycles, db)
    gc.collect()
    started = time.perf_counter()
    result = agent.result(THREAD_ID)
    seconds = time.perf_counter() - started
    agent.close()
    # After a fork the newest checkpoint is the fork's, which holds as many steps.
    if len(result.chain) < 5 * cycles:
        raise RuntimeError(f"the stored run has {len(result.chain)} steps, not a full run")
    return seconds


def _publish(report: str) -> str:
    """Publish a report (needs a person's approval)."""
    return f"published: {report}"


PUBLISH = tool(requires_approval=True)(_publish)
PAUSED_CYCLES = 300
"""The length of the paused run: issue 3 asks for resume latency at 300+ cycles."""


def paused_resumes(workdir: Path, repeat: int, cycles: int = PAUSED_CYCLES) -> list[float]:
    """Time resuming runs paused for approval after `cycles` cycles, each in a fresh agent.

    Each run does `cycles` add calls, then proposes a call that needs approval and pauses.
    The timed part is `Agent.resume(thread, decisions={call: Approve()})` in a new `Agent`
    (new connection, cold caches) until the run is done: loading the paused state, then
    approve, act, observe, think, validate and finalize. The pauses are made untimed,
    one thread per repeat, so every resume starts from the same kind of state.
    """
    from thinkgraph import Approve

    db = workdir / "paused.db"
    replies = [
        *react_replies(cycles)[:-1],
        'Thought: publish it\nAction: _publish\nAction Input: {"report": "done"}',
        f"Thought: all done\nFinal Answer: {final_answer(cycles)}",
    ]

    def agent() -> Agent:
        made = Agent(
            ScriptedModel(replies),
            [ADD, PUBLISH],
            limits=StepLimits(max_steps=cycles + 2),
            store=f"sqlite:///{db.resolve()}",
        )
        _ = made.graph
        return made

    calls: list[tuple[str, str]] = []
    with agent() as maker:
        for n in range(repeat):
            paused = maker.run(TASK, thread_id=f"paused-{n}")
            if paused.status != "paused" or not paused.pending:
                raise RuntimeError(f"the run did not pause for approval: {paused.status}")
            calls.append((paused.thread_id, str(paused.pending[0].call_id)))
    seconds: list[float] = []
    for thread_id, call_id in calls:
        fresh = agent()
        gc.collect()
        started = time.perf_counter()
        result = fresh.resume(thread_id, decisions={call_id: Approve()})
        seconds.append(time.perf_counter() - started)
        fresh.close()
        if result.answer != final_answer(cycles):
            raise RuntimeError(f"the resumed run answered {result.answer!r}")
    return seconds

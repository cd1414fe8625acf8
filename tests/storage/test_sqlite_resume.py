"""The SQLite store's fast load: the same values as LangGraph's own walk, in less work.

`CompactSqliteSaver.get_delta_channel_history` walks ancestors by id and decodes only
listed snapshots and the root; `keep_for_resume` stores a paused run's chain whole. Each
is checked here against LangGraph's own `SqliteSaver` reading the same file.
"""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from langgraph.channels.delta import DeltaChannel
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from thinkgraph import Agent, Approve, ScriptedModel, StepLimits, tool
from thinkgraph._langgraph import DeltaSnapshot as _DeltaSnapshot
from thinkgraph.state import BaseStep, PackedSteps, TaskStep, ThoughtStep, append_steps
from thinkgraph.storage import close_checkpointer, open_checkpointer, serializer
from thinkgraph.storage.checkpointers import steps_left_packed
from thinkgraph.storage.sqlite import KEEP_MIN_SIZE, CompactSqliteSaver


def _extend(current: list[int], writes: Sequence[list[int]]) -> list[int]:
    return [*current, *(x for write in writes for x in write)]


class Counting(TypedDict, total=False):
    often: Annotated[list[int], DeltaChannel(_extend, snapshot_frequency=3)]
    seldom: Annotated[list[int], DeltaChannel(_extend, snapshot_frequency=7)]
    n: Annotated[int, operator.add]


def _step(state: Counting) -> dict[str, Any]:
    n = state.get("n", 0)
    update: dict[str, Any] = {"often": [n], "n": 1}
    if n % 4 == 0:
        update["seldom"] = [n * 10]
    return update


def _counting_graph(saver: Any, stop: int) -> Any:
    builder = StateGraph(Counting)
    builder.add_node("step", _step)
    builder.add_edge(START, "step")
    builder.add_conditional_edges(
        "step", lambda s: END if s.get("n", 0) >= stop else "step", ["step", END]
    )
    return builder.compile(checkpointer=saver)


@pytest.fixture
def sqlite_saver(tmp_path: Path) -> Iterator[CompactSqliteSaver]:
    saver = open_checkpointer(f"sqlite:///{tmp_path / 'runs.db'}")
    assert isinstance(saver, CompactSqliteSaver)
    yield saver
    close_checkpointer(saver)


def _plain(history: Any) -> dict[str, Any]:
    """A history with its snapshot seeds unwrapped, for comparing two walks."""
    out: dict[str, Any] = {}
    for channel, entry in history.items():
        seed = entry.get("seed", "no seed")
        out[channel] = {
            "seed": seed.value if isinstance(seed, _DeltaSnapshot) else seed,
            "writes": [(task, ch, value) for task, ch, value in entry["writes"]],
        }
    return out


def _all_configs(saver: CompactSqliteSaver, thread_id: str) -> list[Any]:
    return [t.config for t in saver.list({"configurable": {"thread_id": thread_id}})]


def test_history_matches_langgraphs_walk_at_every_checkpoint(
    sqlite_saver: CompactSqliteSaver,
) -> None:
    graph = _counting_graph(sqlite_saver, stop=30)
    config = {"configurable": {"thread_id": "count"}, "recursion_limit": 100}
    graph.invoke({"n": 0}, config)
    listed = sqlite_saver.conn.execute("SELECT count(*) FROM delta_snapshots").fetchone()[0]
    assert listed >= 10  # snapshots every 3 and 7 updates were listed as they were stored

    configs = _all_configs(sqlite_saver, "count")
    assert len(configs) > 30
    for at in configs:
        ours = sqlite_saver.get_delta_channel_history(config=at, channels=["often", "seldom"])
        theirs = SqliteSaver.get_delta_channel_history(
            sqlite_saver, config=at, channels=["often", "seldom"]
        )
        assert _plain(ours) == _plain(theirs)
    final = graph.get_state(config).values
    assert final["often"] == list(range(30))
    assert final["seldom"] == [n * 10 for n in range(0, 30, 4)]


def test_forks_and_fresh_threads_load_the_same_values(sqlite_saver: CompactSqliteSaver) -> None:
    graph = _counting_graph(sqlite_saver, stop=12)
    base = {"configurable": {"thread_id": "base"}, "recursion_limit": 100}
    graph.invoke({"n": 0}, base)
    middle = _all_configs(sqlite_saver, "base")[6]
    # A branch from the middle of the thread, and a thread started by update_state.
    forked = graph.update_state(middle, {"often": [-1]})
    graph.invoke(None, {**forked, "recursion_limit": 100})
    fresh = {"configurable": {"thread_id": "fresh"}}
    graph.update_state(fresh, {"often": [7, 8], "seldom": [9], "n": 3}, as_node="step")
    graph.invoke(None, {**fresh, "recursion_limit": 100})

    for thread in ("base", "fresh"):
        for at in _all_configs(sqlite_saver, thread):
            ours = sqlite_saver.get_delta_channel_history(config=at, channels=["often", "seldom"])
            theirs = SqliteSaver.get_delta_channel_history(
                sqlite_saver, config=at, channels=["often", "seldom"]
            )
            assert _plain(ours) == _plain(theirs), at
    assert graph.get_state(fresh).values["often"][:2] == [7, 8]


def test_a_store_without_the_listing_still_loads_every_state(
    sqlite_saver: CompactSqliteSaver,
) -> None:
    graph = _counting_graph(sqlite_saver, stop=20)
    config = {"configurable": {"thread_id": "legacy"}, "recursion_limit": 100}
    graph.invoke({"n": 0}, config)
    # A thread started by update_state holds its first values as a snapshot in its root.
    fresh = {"configurable": {"thread_id": "fresh"}}
    graph.update_state(fresh, {"often": [7, 8], "n": 18}, as_node="step")
    graph.invoke(None, {**fresh, "recursion_limit": 100})
    configs = _all_configs(sqlite_saver, "legacy") + _all_configs(sqlite_saver, "fresh")
    before = [graph.get_state(c).values for c in configs]
    assert before[-1]["often"] == [7, 8]
    # A store written before snapshots were listed: the walk must not trust the listing.
    sqlite_saver.conn.execute("DELETE FROM delta_snapshots")
    sqlite_saver.conn.commit()
    assert [graph.get_state(c).values for c in configs] == before


def _replies(cycles: int, publish_after: Sequence[int]) -> list[str]:
    replies: list[str] = []
    for cycle in range(cycles):
        if cycle in publish_after:
            replies.append(
                f'Thought: publish\nAction: publish\nAction Input: {{"report": "r{cycle}"}}'
            )
        replies.append(
            f'Thought: add one to {cycle}\nAction: add\nAction Input: {{"a": {cycle}, "b": 1}}'
        )
    return [*replies, f"Thought: done\nFinal Answer: {cycles}"]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def publish(report: str) -> str:
    """Publish a report."""
    return f"published {report}"


def _agent(url: str, replies: list[str]) -> Agent:
    return Agent(
        ScriptedModel(replies), [add, publish], limits=StepLimits(max_steps=200), store=url
    )


def _kept(url: str) -> list[tuple[str, int]]:
    saver = open_checkpointer(url)
    try:
        rows = saver.conn.execute(  # type: ignore[attr-defined]
            "SELECT checkpoint_id, size FROM delta_snapshots WHERE channel = 'chain'"
        ).fetchall()
    finally:
        close_checkpointer(saver)
    return [(str(cid), int(size)) for cid, size in rows]


def _same_steps(a: list[BaseStep], b: list[BaseStep]) -> bool:
    return [s.model_dump() for s in a] == [s.model_dump() for s in b]


def test_a_long_paused_run_keeps_its_chain_and_resumes_to_the_same_end(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    cycles = 60  # five steps a cycle: past KEEP_MIN_SIZE when the run pauses
    replies = _replies(cycles, publish_after=[55])
    with _agent(url, replies) as agent:
        paused = agent.run("count", thread_id="long")
    assert paused.status == "paused" and len(paused.chain) >= KEEP_MIN_SIZE
    kept = _kept(url)
    assert [size for _, size in kept] == [len(paused.chain)]

    saver = open_checkpointer(url)
    try:
        latest = saver.get_tuple({"configurable": {"thread_id": "long"}})
        assert latest is not None
        assert latest.config["configurable"]["checkpoint_id"] == kept[0][0]
        snapshot = latest.checkpoint["channel_values"]["chain"]
        # The kept chain is what LangGraph's own replay of the stored writes gives.
        replay = SqliteSaver.get_delta_channel_history(
            saver, config=latest.config, channels=["chain"]
        )["chain"]
        assert "seed" not in replay
        rebuilt = append_steps([], [value for _, _, value in replay["writes"]])
        assert _same_steps(snapshot.value, rebuilt)
        assert _same_steps(snapshot.value, paused.chain)
    finally:
        close_checkpointer(saver)

    with _agent(url, replies) as fresh:
        pending = fresh.result("long").pending
        done = fresh.resume("long", decisions={pending[0].call_id: Approve()})
    assert done.status == "done" and done.answer == str(cycles)
    assert _same_steps(done.chain[: len(paused.chain)], paused.chain)
    with _agent(url, replies) as reader:
        assert _same_steps(reader.chain("long"), done.chain)


def test_pauses_keep_a_chain_only_when_it_doubled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    # Pauses after about 5, 265, 315 and 535 steps: too short, kept, not doubled, doubled.
    pauses = [1, 53, 63, 107]
    replies = _replies(110, publish_after=pauses)
    sizes: list[int] = []
    with _agent(url, replies) as agent:
        result = agent.run("count", thread_id="often")
        while result.status == "paused":
            sizes.append(len(result.chain))
            decision = {p.call_id: Approve() for p in result.pending}
            result = agent.resume("often", decisions=decision)
    assert result.status == "done" and len(sizes) == 4
    assert sizes[0] < KEEP_MIN_SIZE <= sizes[1] and sizes[2] < 2 * sizes[1] <= sizes[3]
    assert sorted(size for _, size in _kept(url)) == [sizes[1], sizes[3]]


def test_keep_for_resume_refuses_what_is_already_stored(
    sqlite_saver: CompactSqliteSaver,
) -> None:
    graph = _counting_graph(sqlite_saver, stop=4)
    config = {"configurable": {"thread_id": "small"}, "recursion_limit": 100}
    graph.invoke({"n": 0}, config)
    latest = sqlite_saver.get_tuple(config)
    assert latest is not None
    big = list(range(KEEP_MIN_SIZE))
    assert sqlite_saver.keep_for_resume(latest.config, {"often": big[:-1]}) == []
    assert sqlite_saver.keep_for_resume(latest.config, {"n": 5}) == []  # not a sequence
    gone = {"configurable": {**latest.config["configurable"], "checkpoint_id": "nope"}}
    assert sqlite_saver.keep_for_resume(gone, {"often": big}) == []
    assert sqlite_saver.keep_for_resume(latest.config, {"often": big}) == ["often"]
    assert sqlite_saver.keep_for_resume(latest.config, {"often": big}) == []  # stored now


def test_steps_left_packed_skips_reviving_a_stored_chain() -> None:
    serde = serializer()
    steps = [TaskStep(text="t", number=0), ThoughtStep(text="x", number=1)]
    stored = serde.dumps_typed({"channel_values": {"chain": _DeltaSnapshot(steps), "n": 3}})
    with steps_left_packed():
        packed = serde.loads_typed(stored)["channel_values"]
    assert isinstance(packed["chain"].value, PackedSteps) and packed["n"] == 3
    revived = serde.loads_typed(stored)["channel_values"]["chain"].value
    assert [s.model_dump() for s in revived] == [s.model_dump() for s in steps]


def test_loads_many_decodes_like_loads_typed() -> None:
    serde = serializer()
    values: list[Any] = [
        [TaskStep(text="a", number=0)],
        None,
        {"plain": [1, 2]},
        [ThoughtStep(text="b", number=1), ThoughtStep(text="c", number=2)],
        "text",
        json.dumps({"not": "steps"}),
    ]
    items = [serde.dumps_typed(v) for v in values]
    many = serde.loads_many(items)  # type: ignore[attr-defined]
    one_by_one = [serde.loads_typed(item) for item in items]
    assert len(many) == len(values)
    for a, b in zip(many, one_by_one, strict=True):
        if isinstance(a, list) and a and isinstance(a[0], BaseStep):
            assert [s.model_dump() for s in a] == [s.model_dump() for s in b]
        else:
            assert a == b

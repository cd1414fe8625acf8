"""The PostgreSQL store keeps a long paused run's chain whole, as LangGraph would load it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.postgres import PostgresSaver

from tests.conftest import POSTGRES_URL
from tests.storage.test_sqlite_resume import _agent, _replies, _same_steps
from thinkgraph import Approve
from thinkgraph._langgraph import DeltaSnapshot as _DeltaSnapshot
from thinkgraph._langgraph import postgres_cursor
from thinkgraph.state import append_steps
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.postgres import PostgresStore
from thinkgraph.storage.sqlite import KEEP_MIN_SIZE


@pytest.fixture
def store() -> Iterator[PostgresStore]:
    saver = open_checkpointer(POSTGRES_URL)
    assert isinstance(saver, PostgresStore)
    yield saver
    close_checkpointer(saver)


def _kept(store: PostgresStore, thread_id: str) -> list[tuple[str, int]]:
    with postgres_cursor(store) as cur:
        rows = cur.execute(
            "SELECT checkpoint_id, size FROM kept_snapshots WHERE thread_id = %s ORDER BY size",
            (thread_id,),
        ).fetchall()
    return [(str(r["checkpoint_id"]), int(r["size"])) for r in rows]


def test_a_long_paused_run_keeps_its_chain_in_postgres(
    store: PostgresStore, thread_id: str
) -> None:
    replies = _replies(60, publish_after=[55])
    with _agent(POSTGRES_URL, replies) as agent:
        paused = agent.run("count", thread_id=thread_id)
    assert paused.status == "paused" and len(paused.chain) >= KEEP_MIN_SIZE
    kept = _kept(store, thread_id)
    assert [size for _, size in kept] == [len(paused.chain)]

    latest = store.get_tuple({"configurable": {"thread_id": thread_id}})
    assert latest is not None and latest.config["configurable"]["checkpoint_id"] == kept[0][0]
    snapshot = latest.checkpoint["channel_values"]["chain"]
    assert isinstance(snapshot, _DeltaSnapshot)
    replay = PostgresSaver.get_delta_channel_history(
        store, config=latest.config, channels=["chain"]
    )["chain"]
    rebuilt = append_steps([], [value for _, _, value in replay["writes"]])
    assert _same_steps(snapshot.value, rebuilt)
    assert _same_steps(snapshot.value, paused.chain)

    with _agent(POSTGRES_URL, replies) as fresh:
        call_id = fresh.result(thread_id).pending[0].call_id
        done = fresh.resume(thread_id, decisions={call_id: Approve()})
    assert done.status == "done" and done.answer == "60"
    assert _same_steps(done.chain[: len(paused.chain)], paused.chain)


def test_keeping_follows_the_doubling_rule(store: PostgresStore, thread_id: str) -> None:
    replies = _replies(3, publish_after=[1])
    with _agent(POSTGRES_URL, replies) as agent:
        agent.run("count", thread_id=thread_id)
    latest = store.get_tuple({"configurable": {"thread_id": thread_id}})
    assert latest is not None
    config: Any = latest.config
    small = ["x"] * (KEEP_MIN_SIZE - 1)
    assert store.keep_for_resume(config, {"chain": small}) == []
    assert store.keep_for_resume(config, {"unknown": ["x"] * KEEP_MIN_SIZE}) == []
    assert store.keep_for_resume(config, {"chain": ["x"] * KEEP_MIN_SIZE}) == ["chain"]
    assert store.keep_for_resume(config, {"chain": ["x"] * 999}) == []  # already stored
    with postgres_cursor(store) as cur:
        marked = cur.execute(
            "SELECT checkpoint -> 'channel_values' -> 'chain' AS marker FROM checkpoints "
            "WHERE thread_id = %s AND checkpoint_id = %s",
            (thread_id, config["configurable"]["checkpoint_id"]),
        ).fetchone()
    assert marked is not None and marked["marker"] is True
    gone = {"configurable": {**config["configurable"], "checkpoint_id": "nope"}}
    assert store.keep_for_resume(gone, {"chain": ["x"] * 9999}) == []
    assert [size for _, size in _kept(store, thread_id)] == [KEEP_MIN_SIZE]

"""The store contract: every backend answers has-thread, list runs, keep-for-resume and the
lease alike, and a saver that implements none of it gets the same answers, only slower."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from tests.storage.test_sqlite_resume import _replies, _same_steps, add, publish
from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.errors import ThreadBusyError
from thinkgraph.storage import close_checkpointer, open_checkpointer, serializer
from thinkgraph.storage.contract import (
    KeepsPausedRuns,
    KnowsThreads,
    ListsThreads,
    RunStore,
    Store,
    _walked_thread_ids,
)
from thinkgraph.storage.sqlite import KEEP_MIN_SIZE


@pytest.fixture
def saver(any_store_url: str) -> Iterator[BaseCheckpointSaver[Any]]:
    opened = open_checkpointer(any_store_url)
    yield opened
    close_checkpointer(opened)


def _paused_run(saver: BaseCheckpointSaver[Any], thread_id: str) -> list[Any]:
    """A run that pauses for approval, stored in `saver`; its chain."""
    agent = Agent(
        ScriptedModel(_replies(2, publish_after=[1])),
        [add, publish],
        limits=StepLimits(max_steps=20),
        store=saver,
    )
    result = agent.run("count", thread_id=thread_id)
    assert result.status == "paused"
    return result.chain


def _new_id() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def test_every_store_of_ours_knows_and_lists_its_threads(
    saver: BaseCheckpointSaver[Any], any_store_url: str
) -> None:
    assert isinstance(saver, KnowsThreads) and isinstance(saver, ListsThreads)
    durable = not any_store_url.startswith("memory")
    # A durable store keeps a paused run for a resume in another process; memory cannot.
    assert isinstance(saver, RunStore) is durable
    assert isinstance(saver, KeepsPausedRuns) is durable
    assert Store(saver).keeps_paused_runs is durable


def test_has_thread_is_false_until_a_run_writes_its_first_checkpoint(
    saver: BaseCheckpointSaver[Any],
) -> None:
    store, first, other = Store(saver), _new_id(), _new_id()
    assert not store.has_thread(first)
    assert not asyncio.run(store.ahas_thread(first))
    _paused_run(saver, first)
    assert store.has_thread(first) and asyncio.run(store.ahas_thread(first))
    assert not store.has_thread(other)


def test_runs_are_listed_newest_first_and_cut_at_the_limit(
    saver: BaseCheckpointSaver[Any],
) -> None:
    store, older, newer = Store(saver), _new_id(), _new_id()
    _paused_run(saver, older)
    _paused_run(saver, newer)
    ids = store.thread_ids()
    assert older in ids and newer in ids
    assert ids.index(newer) < ids.index(older)  # PostgreSQL is shared: others may be listed
    assert store.thread_ids(limit=1) == ids[:1]


def test_keeping_a_paused_chain_changes_nothing_a_reader_sees(
    saver: BaseCheckpointSaver[Any],
) -> None:
    store, thread_id = Store(saver), _new_id()
    chain = _paused_run(saver, thread_id)
    latest = saver.get_tuple({"configurable": {"thread_id": thread_id}})
    assert latest is not None
    long_chain = [*chain, *([chain[-1]] * KEEP_MIN_SIZE)]
    # The agent already offered the (short) chain at the pause: declined as too short.
    kept = store.keep_for_resume(latest.config, {"chain": long_chain})
    assert kept == (["chain"] if store.keeps_paused_runs else [])
    store.settle()
    agent = Agent(ScriptedModel(["unused"]), [add, publish], store=saver)
    assert _same_steps(agent.result(thread_id).chain, long_chain if kept else chain)


def test_one_holder_of_a_thread_at_a_time(saver: BaseCheckpointSaver[Any]) -> None:
    store, thread_id = Store(saver), _new_id()
    refused: list[BaseException] = []

    def take() -> None:
        try:
            with store.lease(thread_id):
                pass
        except ThreadBusyError as exc:
            refused.append(exc)

    assert not store.is_held(thread_id)
    with store.lease(thread_id):
        assert store.is_held(thread_id)
        other = threading.Thread(target=take)
        other.start()
        other.join()
    assert len(refused) == 1 and "is being advanced by another process" in str(refused[0])
    assert not store.is_held(thread_id)
    take()
    assert len(refused) == 1  # free again


class _PlainSaver(InMemorySaver):
    """A saver of someone else's: LangGraph's interface and none of the extras."""


def test_a_saver_without_the_extras_gets_the_same_answers() -> None:
    plain = _PlainSaver(serde=serializer())
    ours = open_checkpointer("memory://")
    store, theirs = Store(ours), Store(plain)
    assert not isinstance(plain, KnowsThreads | ListsThreads | KeepsPausedRuns)
    ids = [_new_id() for _ in range(3)]
    for thread_id in ids:
        _paused_run(ours, thread_id)
        _paused_run(plain, thread_id)
    assert theirs.thread_ids() == store.thread_ids() == ids[::-1]
    assert _walked_thread_ids(plain) == ids[::-1]  # any other saver is walked
    assert all(theirs.has_thread(t) for t in ids) and not theirs.has_thread(_new_id())
    assert asyncio.run(theirs.ahas_thread(ids[0]))
    latest = plain.get_tuple({"configurable": {"thread_id": ids[0]}})
    assert latest is not None
    assert theirs.keep_for_resume(latest.config, {"chain": []}) == []
    assert not theirs.keeps_paused_runs

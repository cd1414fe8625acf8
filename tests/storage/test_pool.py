"""The PostgreSQL store's connections: a pool that heals after a restart and is shared by
concurrent calls; one lease session per store, whatever the number of threads held."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.support.pg_cluster import PgCluster, pg_cluster
from thinkgraph import Agent, ScriptedModel
from thinkgraph._langgraph import postgres_cursor
from thinkgraph.errors import StorageError, ThreadBusyError
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.lease import is_held, thread_lease

__all__ = ["pg_cluster"]  # the fixture, imported to be used here

DONE = ["Thought: nothing to do\nFinal Answer: ok"]


def _named(url: str) -> tuple[str, str]:
    """`url` with an application_name of its own, and the name (to count its sessions)."""
    name = f"tg-test-{uuid.uuid4().hex[:10]}"
    joiner = "&" if "?" in url else "?"
    return f"{url}{joiner}application_name={name}", name


def _sessions(name: str, url: str = POSTGRES_URL) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", (name,)
        ).fetchone()
    return int(row[0]) if row else 0


@pytest.fixture
def named() -> Iterator[tuple[Any, str]]:
    url, name = _named(POSTGRES_URL + "?pool_size=3")
    saver = open_checkpointer(url)
    yield saver, name
    close_checkpointer(saver)


def test_the_pool_size_comes_from_the_store_url(named: tuple[Any, str]) -> None:
    saver, _name = named
    assert saver.pool_size == 3


@pytest.mark.parametrize("value", ["0", "-1", "many", "1001"])
def test_a_bad_pool_size_is_a_one_line_error(value: str) -> None:
    with pytest.raises(StorageError) as caught:
        open_checkpointer(f"{POSTGRES_URL}?pool_size={value}")
    message = str(caught.value)
    assert "\n" not in message
    assert f"pool_size={value}" in message and "?pool_size=8" in message


def test_concurrent_calls_use_several_connections(named: tuple[Any, str]) -> None:
    saver, _name = named
    started = time.monotonic()

    def sleep() -> None:
        with postgres_cursor(saver) as cur:
            cur.execute("SELECT pg_sleep(0.6)")

    threads = [threading.Thread(target=sleep) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    # One connection would take 1.8 s; the pool's three take one sleep's time.
    assert time.monotonic() - started < 1.5


def test_many_threads_held_at_once_take_one_lease_session(named: tuple[Any, str]) -> None:
    saver, name = named
    holding = threading.Barrier(21)
    release = threading.Event()
    threads = [f"t-{uuid.uuid4().hex[:10]}" for _ in range(20)]
    errors: list[BaseException] = []

    def hold(thread_id: str) -> None:
        try:
            with thread_lease(saver, thread_id):
                holding.wait(timeout=20)
                release.wait(timeout=20)
        except BaseException as exc:
            errors.append(exc)
            holding.abort()

    workers = [threading.Thread(target=hold, args=(t,)) for t in threads]
    for w in workers:
        w.start()
    try:
        holding.wait(timeout=20)
        assert all(is_held(saver, t) for t in threads)
        # The pool (at most 3) and one session for every lease.
        assert _sessions(name) <= 3 + 1
        # Held by this process's one session: another thread of it is still refused...
        other: list[BaseException] = []

        def take() -> None:
            try:
                with thread_lease(saver, threads[0]):
                    pass
            except ThreadBusyError as exc:
                other.append(exc)

        taker = threading.Thread(target=take)
        taker.start()
        taker.join(timeout=10)
        assert len(other) == 1 and "being advanced by another process (since 20" in str(other[0])
        # ... and so is another process's session.
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            key = f"thinkgraph:thread:{threads[1]}"
            row = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
            ).fetchone()
            assert row is not None and row[0] is False
    finally:
        release.set()
        for w in workers:
            w.join(timeout=20)
    assert not errors
    assert not any(is_held(saver, t) for t in threads)


def test_a_lease_whose_session_died_is_lost_and_the_next_one_reconnects(
    named: tuple[Any, str], thread_id: str
) -> None:
    saver, name = named
    with thread_lease(saver, thread_id), psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(l.pid) FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND a.application_name = %s",
            (name,),
        )
        # The thread is free for anyone else now: its lease went with the session.
        key = f"thinkgraph:thread:{thread_id}"
        deadline = time.monotonic() + 10
        while True:
            got = conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))", (key,)
            ).fetchone()
            if got and got[0]:
                conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", (key,))
                break
            assert time.monotonic() < deadline
            time.sleep(0.05)
    # Letting go of a lost lease is quiet; the next one opens a new session.
    with thread_lease(saver, thread_id):
        assert is_held(saver, thread_id)


def test_the_store_and_its_leases_heal_after_a_database_restart(
    pg_cluster: PgCluster, thread_id: str
) -> None:
    with Agent(ScriptedModel(DONE * 2), store=pg_cluster.url) as agent:
        assert agent.run("first", thread_id=thread_id).status == "done"
        pg_cluster.restart(down_s=1.0)
        # No restart of this process: the pool replaces its broken connections, the lease
        # session reconnects.
        again = agent.run("second", thread_id=f"{thread_id}-2")
        assert again.status == "done"
        assert agent.result(thread_id).status == "done"

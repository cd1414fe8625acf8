"""The per-thread lease: one holder at a time on every store, gone when its holder dies."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from thinkgraph import Agent, Approve, ScriptedModel, tool
from thinkgraph.errors import ThreadBusyError
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.lease import athread_lease, thread_lease

ROOT = Path(__file__).resolve().parents[2]
BUSY = "is being advanced by another process (since "

REPLIES = [
    'Thought: send it\nAction: send\nAction Input: {"text": "hi"}',
    "Thought: sent\nFinal Answer: sent",
]


@tool(requires_approval=True, side_effects=True)
def send(text: str) -> str:
    """Send a message."""
    return f"sent {text}"


@pytest.fixture
def other(any_store_url: str, saver_for: Callable[[str], Any]) -> Any:
    """A second handle on the store: another holder (the same saver for memory://)."""
    return saver_for(any_store_url)


@pytest.fixture
def saver_for() -> Iterator[Callable[[str], Any]]:
    opened: dict[str, Any] = {}

    def open_once(url: str) -> Any:
        if url not in opened:
            opened[url] = open_checkpointer(url)
        return opened[url]

    yield open_once
    for saver in opened.values():
        close_checkpointer(saver)


def _in_another_thread(fn: Callable[[], Any]) -> Any:
    """What `fn` returns or raises, run in a thread of its own (another holder)."""
    box: list[Any] = []

    def go() -> None:
        try:
            box.append(fn())
        except Exception as exc:
            box.append(exc)

    worker = threading.Thread(target=go)
    worker.start()
    worker.join(timeout=30)
    return box[0]


def _try_lease(saver: Any, thread_id: str) -> str:
    with thread_lease(saver, thread_id):
        return "held"


def test_a_held_thread_is_refused_to_anyone_else_and_free_after(
    any_store_url: str, saver_for: Callable[[str], Any], thread_id: str
) -> None:
    saver = saver_for(any_store_url)
    with thread_lease(saver, thread_id):
        refused = _in_another_thread(lambda: _try_lease(saver, thread_id))
        assert isinstance(refused, ThreadBusyError)
        assert str(refused).startswith(f"thread {thread_id!r} {BUSY}")
        assert "UTC); wait for it to stop, then try again" in str(refused)
        assert _in_another_thread(lambda: _try_lease(saver, f"{thread_id}-b")) == "held"
    assert _in_another_thread(lambda: _try_lease(saver, thread_id)) == "held"


def test_code_inside_the_holder_s_block_takes_it_again(
    any_store_url: str, saver_for: Callable[[str], Any], thread_id: str
) -> None:
    saver = saver_for(any_store_url)
    with thread_lease(saver, thread_id), thread_lease(saver, thread_id):
        pass
    # Around a generator's body: the code between its items is not the holder.
    outer = thread_lease(saver, thread_id, nested=False)
    with outer, pytest.raises(ThreadBusyError), thread_lease(saver, thread_id):
        pass


def test_the_async_lease_is_the_same_lease(
    any_store_url: str, saver_for: Callable[[str], Any], thread_id: str
) -> None:
    saver = saver_for(any_store_url)

    async def take() -> str:
        # The second, nested in the holder, goes through.
        async with athread_lease(saver, thread_id), athread_lease(saver, thread_id):
            return "held"

    with thread_lease(saver, thread_id):
        assert isinstance(_in_another_thread(lambda: asyncio.run(take())), ThreadBusyError)
    assert asyncio.run(take()) == "held"
    assert _try_lease(saver, thread_id) == "held"  # given back


# -- other processes --------------------------------------------------------------------------

HOLD = """
import sys, time
from thinkgraph.storage import open_checkpointer
from thinkgraph.storage.lease import thread_lease
with thread_lease(open_checkpointer(sys.argv[1]), sys.argv[2]):
    print("held", flush=True)
    time.sleep(120)
"""


def test_a_sigkilled_holder_never_blocks_the_thread(
    store_url: str, saver_for: Callable[[str], Any], thread_id: str
) -> None:
    saver = saver_for(store_url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, store_url, thread_id],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(ThreadBusyError, match=r"another process \(since \d{4}-"):
            _try_lease(saver, thread_id)
        holder.send_signal(signal.SIGKILL)
        holder.wait(timeout=10)
    finally:
        holder.kill()
    deadline = time.monotonic() + 10  # PostgreSQL notices the lost connection at once
    while True:
        try:
            assert _try_lease(saver, thread_id) == "held"
            break
        except ThreadBusyError:
            assert time.monotonic() < deadline, "a dead holder still blocks the thread"
            time.sleep(0.05)


def test_the_async_lease_refuses_a_thread_another_process_holds(
    store_url: str, saver_for: Callable[[str], Any], thread_id: str
) -> None:
    """The lease taken on the event loop (SQLite) or on a thread (PostgreSQL) sees a holder
    in another process as the sync lease does, and takes the thread once it is let go."""
    saver = saver_for(store_url)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, store_url, thread_id],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip

    async def take() -> str:
        async with athread_lease(saver, thread_id):
            return "held"

    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(ThreadBusyError, match=r"another process \(since \d{4}-"):
            asyncio.run(take())
    finally:
        holder.kill()
        holder.wait(timeout=10)
    deadline = time.monotonic() + 10
    while True:
        try:
            assert asyncio.run(take()) == "held"
            break
        except ThreadBusyError:
            assert time.monotonic() < deadline, "a dead holder still blocks the thread"
            time.sleep(0.05)


# -- every door of the Agent --------------------------------------------------------------------


def test_an_agent_refuses_a_thread_someone_else_advances_and_changes_nothing(
    any_store_url: str, other: Any, thread_id: str
) -> None:
    store = other if any_store_url == "memory://" else any_store_url
    with Agent(ScriptedModel(REPLIES), [send], store=store) as agent:
        paused = agent.run("send hi", thread_id=thread_id)
        before = agent.checkpoint_id(thread_id)
        decisions = {paused.pending[0].call_id: Approve()}
        point = agent.history(thread_id)[-1].checkpoint_id

        def refused(door: Callable[[], Any]) -> str:
            found = _in_another_thread(door)
            assert isinstance(found, ThreadBusyError), found
            return str(found)

        with thread_lease(other, thread_id):
            assert BUSY in refused(lambda: agent.resume(thread_id, decisions))
            assert BUSY in refused(lambda: list(agent.resume_events(thread_id, decisions)))
            assert BUSY in refused(lambda: agent.run("again", thread_id=thread_id))
            assert BUSY in refused(lambda: list(agent.events("again", thread_id)))
            fork = lambda: agent.fork(thread_id, point, new_thread_id=thread_id)  # noqa: E731
            assert BUSY in refused(fork)
        assert agent.checkpoint_id(thread_id) == before
        assert agent.resume(thread_id, decisions).status == "done"


def test_the_agent_takes_the_lock_workers_of_every_version_take(thread_id: str) -> None:
    with Agent(ScriptedModel(REPLIES), [send], store=POSTGRES_URL) as agent:
        paused = agent.run("send hi", thread_id=thread_id)
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            key = f"thinkgraph:thread:{thread_id}"
            conn.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", (key,))
            with pytest.raises(ThreadBusyError, match=BUSY.replace("(", r"\(")):
                agent.resume(thread_id, {paused.pending[0].call_id: Approve()})


# -- from async code: on the loop when nothing is in the way -----------------------------------


@pytest.fixture
def count_hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The functions the async lease hands to a thread, by name (each hop costs the loop)."""
    import thinkgraph.storage.lease as lease_module

    handed: list[str] = []
    real = asyncio.to_thread

    async def counted(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        handed.append(getattr(fn, "__qualname__", repr(fn)))
        return await real(fn, *args, **kwargs)

    monkeypatch.setattr(lease_module.asyncio, "to_thread", counted)
    return handed


@pytest.mark.parametrize("backend", ["memory", "sqlite"])
def test_a_free_local_lease_is_taken_and_given_back_on_the_loop(
    backend: str,
    tmp_path: Path,
    saver_for: Callable[[str], Any],
    count_hand_offs: list[str],
    thread_id: str,
) -> None:
    url = "memory://" if backend == "memory" else f"sqlite:///{tmp_path / 'runs.db'}"
    saver = saver_for(url)

    async def take() -> str:
        async with athread_lease(saver, thread_id):
            refused = _in_another_thread(lambda: _try_lease(saver, thread_id))
            assert isinstance(refused, ThreadBusyError)  # held, as ever
        return "held"

    count_hand_offs.clear()
    assert asyncio.run(take()) == "held"
    assert count_hand_offs == []  # neither taking nor giving back went to a thread
    assert _try_lease(saver, thread_id) == "held"  # given back


def test_a_lease_being_let_go_is_waited_for_off_the_loop(
    sqlite_url: str, saver_for: Callable[[str], Any], count_hand_offs: list[str], thread_id: str
) -> None:
    """A holder that is just starting or just letting go has no note yet: look again."""
    import fcntl

    from thinkgraph.storage.lease import FileLeases, leases_for

    saver = saver_for(sqlite_url)
    leases = leases_for(saver)
    assert isinstance(leases, FileLeases)
    leases.folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(leases.path(thread_id), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(fd, fcntl.LOCK_EX)  # locked, with no note: someone letting go
    threading.Timer(0.03, os.close, (fd,)).start()

    async def take() -> str:
        async with athread_lease(saver, thread_id):
            return "held"

    count_hand_offs.clear()
    assert asyncio.run(take()) == "held"
    assert len(count_hand_offs) == 2  # taken by waiting on a thread, given back there too

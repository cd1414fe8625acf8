"""The SQLite store's writes from async code: done on the loop when nothing stands in the
way (a hand-off to a thread costs more than the write), handed off when something does,
so the event loop never waits on a lock; the write-ahead log is copied back off the loop.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.storage import close_checkpointer, open_checkpointer
from thinkgraph.storage.sqlite import CompactSqliteSaver


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[CompactSqliteSaver]:
    opened = open_checkpointer(f"sqlite:///{tmp_path / 'runs.db'}")
    assert isinstance(opened, CompactSqliteSaver)
    yield opened
    close_checkpointer(opened)


def _config(thread_id: str = "t") -> Any:
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


async def _put_with_heartbeat(saver: CompactSqliteSaver) -> tuple[Any, float]:
    """Store one checkpoint and its writes while a task measures how late the loop runs it."""
    gaps: list[float] = []
    stop = asyncio.Event()

    async def heartbeat() -> None:
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.05)
    stored = await saver.aput(_config(), empty_checkpoint(), {"step": 0}, {})
    await saver.aput_writes(stored, [("chain", ["x"])], "task-1")
    stop.set()
    await beat
    return stored, max(gaps)


def test_a_write_from_async_code_is_done_on_the_loop_when_nothing_holds_the_store(
    saver: CompactSqliteSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_hand_off(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a write with nothing in its way was handed to a thread")

    monkeypatch.setattr(saver, "_off_loop", no_hand_off)
    stored, _ = asyncio.run(_put_with_heartbeat(saver))
    assert saver.get_tuple(stored) is not None


def test_the_loop_never_waits_while_another_process_holds_the_write_lock(
    saver: CompactSqliteSaver, tmp_path: Path
) -> None:
    other = sqlite3.connect(tmp_path / "runs.db", isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process's write transaction, 0.5 s long
    threading.Timer(0.5, lambda: other.execute("COMMIT")).start()
    started = time.monotonic()
    stored, worst_gap = asyncio.run(_put_with_heartbeat(saver))
    assert time.monotonic() - started >= 0.5  # the write did wait for the lock…
    assert worst_gap < 0.2  # …but off the loop, which kept running
    assert saver.get_tuple(stored) is not None
    other.close()


def test_the_loop_never_waits_while_the_stores_thread_holds_it(
    saver: CompactSqliteSaver,
) -> None:
    held = threading.Event()

    def hold() -> None:
        with saver.lock:  # a long read on the store's thread, e.g. a history listing
            held.set()
            time.sleep(0.5)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    stored, worst_gap = asyncio.run(_put_with_heartbeat(saver))
    holder.join()
    assert worst_gap < 0.2
    assert saver.get_tuple(stored) is not None


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_the_write_ahead_log_is_copied_back_during_a_long_run(tmp_path: Path) -> None:
    cycles = 400
    replies = [
        f'Thought: step {i}\nAction: add\nAction Input: {{"a": {i}, "b": 1}}' for i in range(cycles)
    ]
    db = tmp_path / "runs.db"
    with Agent(
        ScriptedModel([*replies, "Thought: done\nFinal Answer: ok"]),
        [add],
        limits=StepLimits(max_steps=cycles + 1),
        store=f"sqlite:///{db}",
    ) as agent:
        assert agent.run("count", thread_id="long").answer == "ok"
        wal = db.with_name("runs.db-wal").stat().st_size
        stored = db.stat().st_size
    # The log is reused once copied back; left alone it would hold the whole run.
    assert stored > wal
    assert wal < 6 * 2**20


def test_whether_a_thread_exists_is_read_on_the_loop_when_nothing_holds_the_store(
    saver: CompactSqliteSaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Agent.arun` asks it of every new thread; a hand-off would cost more than the query."""

    def no_hand_off(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a read with nothing in its way was handed to a thread")

    saver.put(_config("there"), empty_checkpoint(), {"step": 0}, {})
    monkeypatch.setattr(saver, "_off_loop", no_hand_off)

    async def ask() -> tuple[bool, bool]:
        return await saver.ahas_thread("there"), await saver.ahas_thread("not-there")

    assert asyncio.run(ask()) == (True, False)


def test_whether_a_thread_exists_waits_off_the_loop_while_the_stores_thread_holds_it(
    saver: CompactSqliteSaver,
) -> None:
    saver.put(_config("there"), empty_checkpoint(), {"step": 0}, {})
    held = threading.Event()

    def hold() -> None:
        with saver.lock:
            held.set()
            time.sleep(0.3)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait()
    started = time.monotonic()
    assert asyncio.run(saver.ahas_thread("there")) is True
    assert time.monotonic() - started >= 0.2  # it waited for the holder, on the thread
    holder.join()

"""open_checkpointer: every URL form, and clear errors for stores that are not ours."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import StorageError
from thinkgraph.storage import close_checkpointer, open_checkpointer


def test_memory_url_opens_an_in_memory_saver() -> None:
    assert isinstance(open_checkpointer("memory://"), InMemorySaver)


def test_sqlite_url_creates_the_file_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "runs.db"
    saver = open_checkpointer(f"sqlite:///{path}")
    try:
        mode = saver.conn.execute("PRAGMA journal_mode").fetchone()[0]  # type: ignore[attr-defined]
    finally:
        close_checkpointer(saver)
    assert path.exists() and mode == "wal"


def test_relative_sqlite_url_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    close_checkpointer(open_checkpointer("sqlite:///.thinkgraph/runs.db"))
    assert (tmp_path / ".thinkgraph" / "runs.db").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("runs.db", "has no scheme"),
        ("redis://localhost", "unknown store scheme 'redis'"),
        ("sqlite://", "needs a path"),
        ("postgresql://nobody@127.0.0.1:1/none", "cannot connect"),
    ],
)
def test_bad_urls_say_what_to_use(url: str, message: str) -> None:
    with pytest.raises(StorageError, match=message):
        open_checkpointer(url)


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)
    with pytest.raises(StorageError, match="cannot open"):
        open_checkpointer(f"sqlite:///{path}")
    assert path.read_bytes().startswith(b"these are my notes")


def test_a_database_of_someone_else_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE users (id INTEGER)")
    with pytest.raises(StorageError, match="not a thinkgraph store"):
        open_checkpointer(f"sqlite:///{path}")
    with sqlite3.connect(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert tables == {"users"}


def test_a_run_round_trips_through_every_store(any_store_url: str, thread_id: str) -> None:
    with Agent(ScriptedModel(["Thought: t\nFinal Answer: ok"]), store=any_store_url) as agent:
        agent.run("x", thread_id=thread_id)
        assert agent.result(thread_id).answer == "ok"


def test_the_durable_stores_know_their_threads_from_the_index(saver: object) -> None:
    """What `Agent.run` asks before it starts a thread: only the root namespace counts."""
    import asyncio

    from langgraph.checkpoint.base import empty_checkpoint

    from thinkgraph.storage.contract import KnowsThreads

    assert isinstance(saver, KnowsThreads)
    root = {"configurable": {"thread_id": "kt-root", "checkpoint_ns": ""}}
    inner = {"configurable": {"thread_id": "kt-sub", "checkpoint_ns": "child:1"}}
    saver.put(root, empty_checkpoint(), {"step": 0}, {})  # type: ignore[attr-defined]
    saver.put(inner, empty_checkpoint(), {"step": 0}, {})  # type: ignore[attr-defined]
    assert saver.has_thread("kt-root") is True
    assert saver.has_thread("kt-sub") is False
    assert saver.has_thread("kt-none") is False
    assert asyncio.run(saver.ahas_thread("kt-root")) is True
    assert asyncio.run(saver.ahas_thread("kt-none")) is False


def test_a_stored_decision_revives_though_the_store_never_imports_policies() -> None:
    import subprocess
    import sys

    # In a fresh process: opening a store leaves the policies unimported, and a Decision a
    # node kept in a channel still comes back as a Decision.
    code = (
        "import sys\n"
        "from thinkgraph.storage import serializer\n"
        "assert 'thinkgraph.policies.base' not in sys.modules\n"
        "from thinkgraph.policies.base import Decision\n"
        "stored = serializer().dumps_typed(Decision(kind='final', answer='42'))\n"
        "revived = serializer().loads_typed(stored)\n"
        "print(type(revived).__name__, revived.answer)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["Decision", "42"]

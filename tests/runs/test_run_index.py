"""The run index: a listing from it says what the checkpoints say, on both durable stores."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from langgraph.types import Command

from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.runs.listing import RunFilter, RunPage
from thinkgraph.storage import run_index
from thinkgraph.storage.contract import Store
from thinkgraph.storage.run_index import run_index_of


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(requires_approval=True)
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


def call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


def final(answer: str) -> str:
    return f"Thought: done\nFinal Answer: {answer}"


def rows(found: RunPage) -> list[tuple[object, ...]]:
    """What a page shows of each run (its job aside): enough to tell two listings apart."""
    return [
        (
            r.summary.thread_id,
            r.summary.status,
            r.summary.steps,
            r.summary.tokens,
            r.summary.waiting_for,
            r.summary.updated_at,
            r.task,
        )
        for r in found.runs
    ]


def both(agent: Agent, where: RunFilter, offset: int = 0, limit: int | None = 50) -> RunPage:
    """The page from the index, checked against the same page read from the checkpoints."""
    indexed = agent.reader.page(where, offset, limit)
    slow = agent.reader.page_from_checkpoints(where, offset, limit)
    assert rows(indexed) == rows(slow)
    assert indexed.has_next == slow.has_next
    return indexed


def one(agent: Agent, thread: str) -> RunPage:
    """The run `thread` alone (the PostgreSQL store is shared with other tests)."""
    found = both(agent, RunFilter(search=thread))
    assert [r.summary.thread_id for r in found.runs] == [thread]
    return found


def test_the_index_agrees_with_the_checkpoints_as_runs_pause_resume_fail_and_go(
    store_url: str,
) -> None:
    tag = uuid.uuid4().hex[:10]
    paused, done, failed = (f"{tag}-{name}" for name in ("p", "d", "f"))

    def agent_of(*replies: str) -> Agent:
        limits = StepLimits(max_steps=2)
        return Agent(ScriptedModel(list(replies)), [add, send], store=store_url, limits=limits)

    with agent_of(call("send", to="bob"), final("sent")) as agent:
        assert agent.run("mail bob", thread_id=paused).status == "paused"
        index = run_index_of(agent.graph.checkpointer)  # type: ignore[arg-type]
        assert index is not None
        [shown] = one(agent, paused).runs
        assert (shown.summary.status, shown.summary.waiting_for) == ("paused", "approval: send")
        assert shown.task == "mail bob"
        assert paused in [r.summary.thread_id for r in agent.reader.page(RunFilter("paused")).runs]
        agent.resume(paused, {agent.result(paused).pending[0].call_id: "approve"})
        assert one(agent, paused).runs[0].summary.status == "done"
    with agent_of(call("add", a=1, b=2), final("3")) as agent:
        agent.run("add one and two", thread_id=done)
        [shown] = one(agent, done).runs
        assert shown.summary.steps == agent.result(done).counters.steps == 2
        assert shown.summary.tokens == agent.result(done).counters.tokens
    with agent_of(call("add", a=1, b=2), call("add", a=3, b=4)) as agent:
        assert agent.run("add forever", thread_id=failed).status == "failed"
        assert one(agent, failed).runs[0].summary.status == "failed"

    with agent_of() as agent:
        index = run_index_of(agent.graph.checkpointer)  # type: ignore[arg-type]
        assert index is not None
        assert not index.moved([paused, done, failed])  # each row written at its end
        Store(agent.graph.checkpointer).prune(status=agent.reader.status, thread=done)  # type: ignore[arg-type]
        assert not agent.reader.page(RunFilter(search=done)).runs
        assert not index.rows([done])


def test_a_run_the_index_has_no_row_of_is_listed(store_url: str) -> None:
    tag = uuid.uuid4().hex[:10]
    agent = Agent(ScriptedModel([final("1"), final("2")]), [add], store=store_url)
    with agent:
        agent.run("old task", thread_id=f"{tag}-old")
        agent.run("new task", thread_id=f"{tag}-new")
        index = run_index_of(agent.graph.checkpointer)  # type: ignore[arg-type]
        assert index is not None
        # A store written before the index existed: no row, and not reconciled.
        index.forget(f"{tag}-old")
        index._write("DELETE FROM run_index_meta", [()])
        found = both(agent, RunFilter(search=tag))
        assert [r.summary.thread_id for r in found.runs] == [f"{tag}-new", f"{tag}-old"]
        assert index.rows([f"{tag}-old"])  # and it has its row now
        assert index.reconciled()


def test_a_row_its_run_moved_on_from_is_read_again(store_url: str) -> None:
    tag = uuid.uuid4().hex[:10]
    thread = f"{tag}-moved"
    agent = Agent(ScriptedModel([call("send", to="bob"), final("sent")]), [send], store=store_url)
    with agent:
        agent.run("mail bob", thread_id=thread)
        index = run_index_of(agent.graph.checkpointer)  # type: ignore[arg-type]
        assert index is not None
        [stale] = index.rows([thread])
        # Resumed by a door that does not write the index (a raw graph call).
        call_id = agent.result(thread).pending[0].call_id
        agent.graph.invoke(
            Command(resume={call_id: {"action": "approve"}}),
            agent.driver.config(thread),
        )
        assert index.rows([thread]) == [stale]  # the row still says paused
        assert one(agent, thread).runs[0].summary.status == "done"
        assert both(agent, RunFilter(status="paused", search=tag)).runs == []


def test_pages_filters_and_search_match_the_slow_path_on_hundreds_of_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(run_index, "_CHUNK", 7)  # a long listing checks its rows in chunks
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    scripts = (
        [call("send", to="bob")],  # paused
        [call("add", a=1, b=1), final("2")],  # done
        [final("nothing")],  # done, no tool
        [call("add", a=1, b=1), call("add", a=1, b=1)],  # failed: no steps left
    )
    agents = [
        Agent(ScriptedModel(replies), [add, send], store=store, limits=StepLimits(max_steps=2))
        for replies in scripts
    ]
    for i in range(200):
        task = f"Task {i} for {'Alice' if i % 3 else 'Bob'}"
        agents[i % 4].run(task, thread_id=f"run-{i:03d}")
    with agents[0] as agent:
        every = both(agent, RunFilter(), limit=None)
        assert len(every.runs) == 200 and not every.has_next
        for where in (
            RunFilter(),
            RunFilter(status="paused"),
            RunFilter(status="done"),
            RunFilter(status="failed"),
            RunFilter(search="bob"),
            RunFilter(search="RUN-1"),
            RunFilter(status="done", search="alice"),
            RunFilter(graph=""),
            RunFilter(graph="nowhere:graph"),
        ):
            for offset in (0, 50, 100, 190):
                both(agent, where, offset, 50)
        counted = agent.reader.count()
        assert counted.by_status["paused"] == 50 and counted.read == 200

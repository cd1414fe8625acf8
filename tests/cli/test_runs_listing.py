"""`thinkgraph runs` says what it left out: "N more" past --limit, and totals per state."""

from __future__ import annotations

from tests.server.support import REPLIES, TOOLS
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, ScriptedModel, StepLimits
from thinkgraph.runs import RunReader
from thinkgraph.storage.run_index import run_index_of


def _store(url: str, done: int, paused: int) -> None:
    with Agent(ScriptedModel(["Final Answer: 3"]), store=url) as agent:
        for i in range(done):
            agent.run("answer", thread_id=f"done-{i}")
    with Agent(ScriptedModel(REPLIES), TOOLS, limits=StepLimits(max_steps=5), store=url) as agent:
        for i in range(paused):
            assert agent.run("add and publish", thread_id=f"paused-{i}").status == "paused"


def test_runs_says_how_many_more_and_the_totals_per_state(sqlite_url: str) -> None:
    _store(sqlite_url, done=4, paused=2)
    listed = thinkgraph_here("runs", "--store", sqlite_url, "--limit", "3")
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if line.startswith(("done-", "paused-"))]
    assert len(rows) == 3
    assert "3 more (raise --limit to list them)" in listed.stdout
    assert "6 runs: 4 done · 2 paused" in listed.stdout


def test_runs_of_one_state_count_that_state(sqlite_url: str) -> None:
    _store(sqlite_url, done=3, paused=1)
    listed = thinkgraph_here("runs", "--store", sqlite_url, "--status", "done", "--limit", "1")
    assert listed.returncode == 0, listed.stderr
    assert "2 more (raise --limit to list them)" in listed.stdout
    assert "4 runs: 3 done · 1 paused" in listed.stdout


def test_runs_within_the_limit_say_no_more(sqlite_url: str) -> None:
    _store(sqlite_url, done=2, paused=0)
    listed = thinkgraph_here("runs", "--store", sqlite_url)
    assert listed.returncode == 0, listed.stderr
    assert "more (raise --limit" not in listed.stdout
    assert "2 runs: 2 done" in listed.stdout


def test_the_count_reads_the_run_index_whole(sqlite_url: str) -> None:
    _store(sqlite_url, done=2, paused=1)
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        counted = agent.reader.count(most=2)  # a bound only a store without an index needs
    assert counted.by_status == {"done": 2, "paused": 1, "running": 0, "queued": 0, "failed": 0}
    assert (counted.read, counted.unread) == (3, 0)


def test_without_an_index_the_count_reads_only_the_newest_runs_and_counts_the_rest(
    sqlite_url: str,
) -> None:
    _store(sqlite_url, done=2, paused=1)
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        reader = RunReader(agent.graph.checkpointer)  # type: ignore[arg-type]
        reader._index = None  # a store that keeps no run index (a saver of yours)
        counted = reader.count(most=2)
    # The newest two are the paused run and the last done one.
    assert counted.by_status == {"done": 1, "paused": 1, "running": 0, "queued": 0, "failed": 0}
    assert (counted.read, counted.unread) == (2, 1)


def test_runs_reindex_lists_a_run_the_index_has_no_row_of(sqlite_url: str) -> None:
    _store(sqlite_url, done=2, paused=0)
    with Agent(ScriptedModel([]), store=sqlite_url) as agent:
        index = run_index_of(agent.graph.checkpointer)  # type: ignore[arg-type]
        assert index is not None
        index.forget("done-0")  # written by a program that keeps no index
    listed = thinkgraph_here("runs", "--store", sqlite_url, "--reindex")
    assert listed.returncode == 0, listed.stderr
    assert "reindexed 1 runs" in listed.stdout and "done-0" in listed.stdout
    assert "2 runs: 2 done" in listed.stdout

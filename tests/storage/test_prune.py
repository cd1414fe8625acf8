"""Prune: old checkpoints of finished runs go; nothing a kept or unfinished run needs does.

Every test runs on SQLite and PostgreSQL. PostgreSQL is shared between tests, so each
prune is limited to the test's own threads (`threads=`); the CLI test uses SQLite only.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.cli import app
from thinkgraph.hitl import Approve
from thinkgraph.state import BaseStep, ToolResultStep
from thinkgraph.storage import Store, sqlite_path, thread_lease
from thinkgraph.storage.prune import (
    PruneError,
    Retention,
    checkpoint_time,
    parse_duration,
    plan_trim,
    prune,
    vacuum,
)

PG_TABLES = ("checkpoints", "checkpoint_writes", "checkpoint_blobs", "kept_snapshots")
"""LangGraph's tables on PostgreSQL, and ours."""

SENT: list[str] = []
"""Every call of the gated tool that ran, in order."""


@tool
def lookup(name: str) -> str:
    """Look up a person's address."""
    return f"{name}@example.com"


@tool(requires_approval=True, side_effects=True)
def send(to: str) -> str:
    """Send a message (needs a person's approval)."""
    SENT.append(to)
    return f"sent to {to}"


def _call(name: str, args: dict[str, Any]) -> str:
    return f"Thought: next\nAction: {name}\nAction Input: {json.dumps(args)}\n"


FINAL = "Thought: finished\nFinal Answer: all done"


def _lookups(n: int) -> list[str]:
    return [*(_call("lookup", {"name": f"p{i}"}) for i in range(n)), FINAL]


def _gated() -> list[str]:
    return [_call("lookup", {"name": "ann"}), _call("send", {"to": "ann"}), FINAL]


def _agent(url: str, replies: list[str]) -> Agent:
    return Agent(ScriptedModel(replies), [lookup, send], store=url)


def _steps(chain: list[BaseStep]) -> list[dict[str, Any]]:
    return [s.model_dump(mode="json") for s in chain]


def _rows(url: str, threads: list[str]) -> dict[str, int]:
    """Rows of `threads` in every table of the store (LangGraph's and ours)."""
    path = sqlite_path(url)
    if path is not None:
        tables = ("checkpoints", "writes", "delta_snapshots")
        with sqlite3.connect(path) as conn:
            return {
                t: conn.execute(
                    f"SELECT count(*) FROM {t} WHERE thread_id IN (SELECT value FROM json_each(?))",
                    (json.dumps(threads),),
                ).fetchone()[0]
                for t in tables
            }
    with psycopg.connect(url) as conn:
        return {
            t: conn.execute(
                f"SELECT count(*) FROM {t} WHERE thread_id = ANY(%s)", (threads,)
            ).fetchone()[0]  # type: ignore[index]
            for t in PG_TABLES
        }


def _status(agent: Agent) -> Any:
    return lambda thread: agent.result(thread).status


@pytest.fixture
def ids(store_url: str, thread_id: str) -> Iterator[list[str]]:
    """Three thread ids of this test's own; on PostgreSQL (shared), every row of them and
    of their forks and replays is removed afterwards."""
    yield [f"{thread_id}-{n}" for n in range(3)]
    if sqlite_path(store_url) is None:
        with psycopg.connect(store_url, autocommit=True) as conn:
            for table in PG_TABLES:
                for like in (f"{thread_id}-%", f"replay-{thread_id}-%"):
                    conn.execute(f"DELETE FROM {table} WHERE thread_id LIKE %s", (like,))


def _finished(url: str, threads: list[str], n: int = 4) -> dict[str, list[BaseStep]]:
    chains = {}
    for thread in threads:
        with _agent(url, _lookups(n)) as agent:
            done = agent.run("find them", thread_id=thread)
        assert done.status == "done"
        chains[thread] = done.chain
    return chains


def test_a_dry_run_deletes_nothing(store_url: str, ids: list[str]) -> None:
    _finished(store_url, ids[:2])
    before = _rows(store_url, ids)
    with _agent(store_url, []) as agent:
        report = Store(agent.graph.checkpointer).prune(  # type: ignore[arg-type]
            status=_status(agent), keep_last=2, threads=ids, dry_run=True
        )
        whole = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            older_than=timedelta(0),
            threads=ids,
            dry_run=True,
        )
    assert report.dry_run and [r.action for r in report.runs] == ["trim", "trim"]
    assert report.checkpoints > 0 and report.writes > 0 and report.size > 0
    assert [r.action for r in whole.runs] == ["delete", "delete"]
    assert whole.checkpoints == before["checkpoints"]
    assert _rows(store_url, ids) == before


def test_keep_last_shrinks_the_tables_and_the_kept_run_reads_whole(
    store_url: str, ids: list[str]
) -> None:
    chains = _finished(store_url, ids[:2], n=6)
    before = _rows(store_url, ids)
    with _agent(store_url, []) as agent:
        history = {t: agent.history(t) for t in ids[:2]}
        planned = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            keep_last=3,
            threads=ids,
            dry_run=True,
        )
        report = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            keep_last=3,
            threads=ids,
        )
        after = _rows(store_url, ids)
        assert (report.checkpoints, report.writes, report.blobs) == (
            planned.checkpoints,
            planned.writes,
            planned.blobs,
        )
        assert after["checkpoints"] == before["checkpoints"] - report.checkpoints == 6
        # The writes table holds some rows under ids of no checkpoint (a superstep's
        # writes saved before it), so it shrinks by at least what the report counts.
        assert before[_writes(store_url)] - after[_writes(store_url)] >= report.writes > 0
        for thread in ids[:2]:
            kept = agent.history(thread)
            assert [c.checkpoint_id for c in kept] == [
                c.checkpoint_id for c in history[thread][-3:]
            ]
            # The whole chain, through LangGraph's own loading, from any kept checkpoint.
            assert _steps(agent.result(thread).chain) == _steps(chains[thread])
            oldest = kept[0].checkpoint_id
            forked = agent.fork(thread, oldest, new_thread_id=f"{thread}-fork")
            assert forked.status == "done"
            assert _steps(forked.chain)[: kept[0].step] == _steps(chains[thread])[: kept[0].step]
        # Pruned again with the same option: nothing is left to delete.
        again = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            keep_last=3,
            threads=ids,
        )
        assert again.runs == []


def _writes(url: str) -> str:
    return "writes" if sqlite_path(url) is not None else "checkpoint_writes"


def test_a_paused_run_is_untouched_and_its_tool_runs_once(store_url: str, ids: list[str]) -> None:
    paused_id, done_id = ids[0], ids[1]
    _finished(store_url, [done_id])
    SENT.clear()
    with _agent(store_url, _gated()) as agent:
        paused = agent.run("mail ann", thread_id=paused_id)
    assert paused.status == "paused"
    rows = _rows(store_url, [paused_id])
    with _agent(store_url, []) as agent:
        report = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            keep_last=1,
            threads=[paused_id, done_id],
        )
        whole = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            thread=paused_id,
        )
    assert [(r.thread_id, r.action, r.reason) for r in report.skipped] == [
        (paused_id, "skip", "paused")
    ]
    assert [r.reason for r in whole.runs] == ["paused"]
    assert _rows(store_url, [paused_id]) == rows
    with _agent(store_url, _gated()) as agent:
        call_id = agent.result(paused_id).pending[0].call_id
        done = agent.resume(paused_id, decisions={call_id: Approve()})
    assert done.status == "done" and done.answer == "all done"
    assert SENT == ["ann"]


def test_a_kept_checkpoint_that_waited_for_approval_forks_and_resumes(
    store_url: str, ids: list[str]
) -> None:
    thread = ids[0]
    SENT.clear()
    with _agent(store_url, _gated()) as agent:
        paused = agent.run("mail ann", thread_id=thread)
        waited_at = agent.checkpoint_id(thread)
        call_id = paused.pending[0].call_id
        done = agent.resume(thread, decisions={call_id: Approve()})
        history = [c.checkpoint_id for c in agent.history(thread)]
    assert done.status == "done" and SENT == ["ann"] and waited_at in history
    keep = len(history) - history.index(waited_at)
    with _agent(store_url, []) as agent:
        report = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            keep_last=keep,
            threads=[thread],
        )
    assert report.checkpoints == len(history) - keep > 0
    with _agent(store_url, _gated()) as agent:  # the script, as the run had it
        assert agent.history(thread)[0].checkpoint_id == waited_at
        assert _steps(agent.result(thread).chain) == _steps(done.chain)
        forked = agent.fork(thread, str(waited_at), new_thread_id=f"{thread}-fork")
        assert forked.status == "paused" and forked.pending[0].tool == "send"
        # The fork's chain: the run's up to the approval, then the fork's own step.
        assert _steps(forked.chain)[: len(paused.chain)] == _steps(paused.chain)
        again = agent.resume(f"{thread}-fork", decisions={forked.pending[0].call_id: Approve()})
    assert again.status == "done"
    assert [s.output for s in again.chain if isinstance(s, ToolResultStep)][-1] == "sent to ann"
    assert SENT == ["ann", "ann"]  # once for the run, once for its fork


def test_deleting_one_run_leaves_no_row_in_any_table(store_url: str, ids: list[str]) -> None:
    _finished(store_url, ids[:2])
    other = _rows(store_url, [ids[1]])
    with _agent(store_url, []) as agent:
        report = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            thread=ids[0],
        )
    assert [r.action for r in report.runs] == ["delete"]
    assert set(_rows(store_url, [ids[0]]).values()) == {0}
    assert _rows(store_url, [ids[1]]) == other


def test_a_leased_run_is_skipped(store_url: str, ids: list[str]) -> None:
    _finished(store_url, ids[:1])
    rows = _rows(store_url, ids[:1])
    taken, release = threading.Event(), threading.Event()
    with _agent(store_url, []) as agent:
        saver: Any = agent.graph.checkpointer

        def hold() -> None:  # another thread: a holder that is not prune's own code
            with thread_lease(saver, ids[0]):
                taken.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert taken.wait(10)
            dry = prune(saver, status=_status(agent), thread=ids[0], dry_run=True)
            real = prune(saver, status=_status(agent), keep_last=1, threads=ids[:1])
        finally:
            release.set()
            holder.join()
    assert [r.reason for r in dry.runs] == ["leased"]
    assert [r.reason for r in real.runs] == ["leased"]
    assert _rows(store_url, ids[:1]) == rows


def test_older_than_deletes_only_runs_last_updated_before(store_url: str, ids: list[str]) -> None:
    _finished(store_url, ids[:1])
    with _agent(store_url, []) as agent:
        saver: Any = agent.graph.checkpointer
        recent = prune(saver, status=_status(agent), older_than=timedelta(hours=1), threads=ids)
        assert recent.runs == []
        later = datetime.now(UTC) + timedelta(hours=2)
        old = prune(
            saver, status=_status(agent), older_than=timedelta(hours=1), threads=ids, now=later
        )
    assert [(r.thread_id, r.action) for r in old.runs] == [(ids[0], "delete")]
    assert set(_rows(store_url, ids[:1]).values()) == {0}


def test_a_sqlite_store_shrinks_on_disk_after_vacuum(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    threads = [f"run-{n}" for n in range(6)]
    _finished(url, threads, n=8)
    path = tmp_path / "runs.db"
    with _agent(url, []) as agent:
        vacuum(agent.graph.checkpointer)  # type: ignore[arg-type]
        before = path.stat().st_size
        prune(agent.graph.checkpointer, status=_status(agent), keep_last=2)  # type: ignore[arg-type]
        assert vacuum(agent.graph.checkpointer)  # type: ignore[arg-type]
        after = path.stat().st_size
        assert after < before * 0.6
        assert all(len(agent.history(t)) == 2 for t in threads)


def test_a_trim_plans_roots_where_the_parent_goes() -> None:
    lineage = [("a", None), ("b", "a"), ("c", "b"), ("d", "c")]
    trim = plan_trim(lineage, 2)
    assert trim is not None
    assert (trim.kept, trim.deleted, trim.roots) == (["c", "d"], ["a", "b"], ["c"])
    assert plan_trim(lineage, 4) is None


def test_durations_and_checkpoint_times() -> None:
    assert parse_duration("30d") == timedelta(days=30)
    assert parse_duration("12h") == timedelta(hours=12)
    assert parse_duration("90m") == timedelta(minutes=90)
    for bad in ("30", "d", "3x", "-1d", ""):
        with pytest.raises(PruneError, match="a number and a unit"):
            parse_duration(bad)
    from langgraph.checkpoint.base.id import uuid6

    written = checkpoint_time(str(uuid6()))
    assert written is not None and abs(written - datetime.now(UTC)) < timedelta(seconds=5)
    assert checkpoint_time("not-an-id") is None


def test_prune_needs_an_option_and_a_durable_store() -> None:
    with Agent(ScriptedModel([]), store="memory://") as agent:
        saver: Any = agent.graph.checkpointer
        with pytest.raises(PruneError, match="nothing to prune"):
            prune(saver, status=_status(agent))
        with pytest.raises(Exception, match="SQLite and PostgreSQL"):
            prune(saver, status=_status(agent), keep_last=1)


runner = CliRunner()


def test_the_cli_prunes_and_says_what_it_did(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    _finished(url, ["old-run"], n=5)
    with _agent(url, _gated()) as agent:
        assert agent.run("mail ann", thread_id="waiting").status == "paused"
    listed = runner.invoke(app, ["runs", "--store", url])
    assert listed.exit_code == 0, listed.output
    assert " kB" in listed.output.splitlines()[0]

    bad = runner.invoke(app, ["prune", "--store", url, "--older-than", "3x"])
    assert bad.exit_code == 2
    assert "error: --older-than takes a number and a unit, e.g. 30d or 12h" in bad.output

    before = _rows(url, ["old-run", "waiting"])
    waiting = _rows(url, ["waiting"])
    dry = runner.invoke(app, ["prune", "--store", url, "--keep-last", "2", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "old-run" in dry.output and "would trim" in dry.output
    assert "waiting              skip: paused" in dry.output
    assert "dry run: nothing was deleted" in dry.output
    assert _rows(url, ["old-run", "waiting"]) == before

    real = runner.invoke(app, ["prune", "--store", url, "--keep-last", "2"])
    assert real.exit_code == 0, real.output
    assert "after VACUUM" in real.output
    assert _rows(url, ["old-run"])["checkpoints"] == 2
    assert _rows(url, ["waiting"]) == waiting

    gone = runner.invoke(app, ["prune", "--store", url, "--thread", "old-run"])
    assert gone.exit_code == 0, gone.output
    assert set(_rows(url, ["old-run"]).values()) == {0}
    refused = runner.invoke(app, ["prune", "--store", url, "--thread", "waiting"])
    assert refused.exit_code == 1 and "skip: paused" in refused.output


def test_retention_trims_the_run_that_ended_and_sweeps_old_runs(
    store_url: str, ids: list[str]
) -> None:
    chains = _finished(store_url, ids[:2], n=4)
    with _agent(store_url, []) as agent:
        saver: Any = agent.graph.checkpointer
        keep = Retention(keep_last=2)
        report = keep.apply(saver, ids[0], _status(agent))
        assert [(r.thread_id, r.action) for r in report.runs] == [(ids[0], "trim")]
        assert len(agent.history(ids[0])) == 2 and len(agent.history(ids[1])) > 2
        assert _steps(agent.result(ids[0]).chain) == _steps(chains[ids[0]])
        # The sweep lists the whole store (shared on PostgreSQL): only ours are looked at
        # here, through a status that knows no other run.
        ours = {t: agent.result(t).status for t in ids[:2]}
        sweep = Retention(older_than="1h", sweep_every=timedelta(hours=1))
        later = datetime.now(UTC) + timedelta(hours=2)
        swept = sweep.apply(saver, ids[0], ours.get, now=later)
        assert sorted(r.thread_id for r in swept.touched) == sorted(ids[:2])
        assert sweep.apply(saver, ids[0], ours.get, now=later).runs == []  # not due yet
    assert set(_rows(store_url, ids[:2]).values()) == {0}


def test_retention_needs_something_to_drop() -> None:
    with pytest.raises(ValueError, match="keep_last=N or older_than"):
        Retention()
    with pytest.raises(ValueError, match="a number and a unit"):
        Retention(older_than="soon")
    assert Retention(older_than="12h").older_than == timedelta(hours=12)


def test_an_agent_with_retention_trims_each_run_it_finishes(store_url: str, ids: list[str]) -> None:
    keep = Retention(keep_last=2)
    with Agent(ScriptedModel(_lookups(4)), [lookup, send], store=store_url, retention=keep) as a:
        done = a.run("find them", thread_id=ids[0])
        assert [len(a.history(ids[0])), done.status] == [2, "done"]
        assert _steps(a.result(ids[0]).chain) == _steps(done.chain)
    SENT.clear()
    with Agent(ScriptedModel(_gated()), [lookup, send], store=store_url, retention=keep) as a:
        paused = a.run("mail ann", thread_id=ids[1])
        assert paused.status == "paused" and len(a.history(ids[1])) > 2  # not finished: kept
        call_id = paused.pending[0].call_id
        done = a.resume(ids[1], decisions={call_id: Approve()})
        assert done.status == "done" and len(a.history(ids[1])) == 2
        assert _steps(a.result(ids[1]).chain) == _steps(done.chain)
    assert SENT == ["ann"]


def test_a_trimmed_run_still_replays_same(store_url: str, ids: list[str]) -> None:
    thread = ids[0]
    with _agent(store_url, _gated()) as agent:
        paused = agent.run("mail ann", thread_id=thread)
        agent.resume(thread, decisions={paused.pending[0].call_id: Approve()})
    with _agent(store_url, _gated()) as agent:
        trimmed = prune(
            agent.graph.checkpointer,  # type: ignore[arg-type]
            status=_status(agent),
            keep_last=2,
            threads=[thread],
        )
        assert trimmed.checkpoints > 0 and len(agent.history(thread)) == 2
        SENT.clear()
        report = agent.replay(thread)
    assert report.outcome == "same", report.to_text()
    assert SENT == []  # the recorded result is served: the tool does not run again

"""Finished jobs do not stay forever: `thinkgraph prune` removes them.

A run that prune deletes takes its finished jobs (Procrastinate's rows and their events)
and thinkgraph's row of it along; ``--jobs-older-than`` deletes the finished jobs last
touched longer ago than that, and the rows of runs left with no job — never a job that
waits or runs, never one of a run that is paused or running.

The CLI sweeps the whole database, so these tests run on a database of their own (made on
the shared server, dropped afterwards); the library's prune, scoped to a test's threads,
runs on the shared one. Real Procrastinate workers in this process.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.conftest import POSTGRES_URL
from tests.support import worker_agent
from tests.support.cli import thinkgraph_here
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.storage import Store
from thinkgraph.storage.prune import prune
from thinkgraph.worker import RunQueue, ThreadRunner, run_worker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """The URL of a database of this module's own on the shared server."""
    name = f"tg_jobs_{uuid.uuid4().hex[:10]}"
    server = POSTGRES_URL.rsplit("/", 1)[0]
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield f"{server}/{name}"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture
def agent(database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    monkeypatch.setenv("WORKER_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("WORKER_STORE", database)
    monkeypatch.delenv("CRASH_AT", raising=False)
    with worker_agent.make_agent() as made:
        yield made


def _name(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:8]}"


def _drain(agent: Agent, queue: str) -> None:
    run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)


def _failing(monkeypatch: pytest.MonkeyPatch, threads: set[str]) -> None:
    """Jobs of `threads` fail before they do anything (as a model that refuses them)."""
    advance = ThreadRunner.advance

    async def refusing(self: ThreadRunner, thread_id: str, **kwargs: Any) -> str:
        if thread_id in threads:
            raise RuntimeError("the model server said no")
        return await advance(self, thread_id, **kwargs)

    monkeypatch.setattr(ThreadRunner, "advance", refusing)


def _approve(agent: Agent, runs: RunQueue, thread: str) -> None:
    paused = agent.result(thread)
    assert paused.status == "paused", paused.status
    runs.resume(thread, {paused.pending[0].call_id: Approve()})


def _jobs(url: str, thread: str) -> list[str]:
    """The statuses of the jobs of `thread`, oldest first."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT status::text FROM procrastinate_jobs WHERE lock = %s ORDER BY id", (thread,)
        ).fetchall()
    return [str(row[0]) for row in rows]


def _rows(url: str, thread: str) -> tuple[int, int]:
    """The events of `thread`'s jobs, and thinkgraph's rows of it (0 or 1)."""
    with psycopg.connect(url) as conn:
        events = conn.execute(
            "SELECT count(*) FROM procrastinate_events e JOIN procrastinate_jobs j "
            "ON j.id = e.job_id WHERE j.lock = %s",
            (thread,),
        ).fetchone()
        noted = conn.execute(
            "SELECT count(*) FROM thinkgraph_run_jobs WHERE thread_id = %s", (thread,)
        ).fetchone()
    assert events is not None and noted is not None
    return int(events[0]), int(noted[0])


def _age(url: str, threads: list[str], hours: int) -> None:
    """Make the jobs of `threads`, and thinkgraph's rows of them, `hours` older."""
    with psycopg.connect(url) as conn:
        conn.execute(
            "UPDATE procrastinate_events SET at = at - make_interval(hours => %s) WHERE job_id "
            "IN (SELECT id FROM procrastinate_jobs WHERE lock = ANY(%s))",
            (hours, threads),
        )
        conn.execute(
            "UPDATE thinkgraph_run_jobs SET updated_at = updated_at - make_interval(hours => %s) "
            "WHERE thread_id = ANY(%s)",
            (hours, threads),
        )


def _cli(url: str, *args: str) -> Any:
    return thinkgraph_here(*args, cwd=ROOT, env={"THINKGRAPH_STORE": url})


def test_pruning_a_run_deletes_its_jobs_and_its_row(database: str, agent: Agent) -> None:
    queue, gone, kept = _name("q"), _name("gone"), _name("kept")
    with RunQueue(agent, queue) as runs:
        for thread in (gone, kept):
            runs.submit("record and publish", thread)
        _drain(agent, queue)
        for thread in (gone, kept):
            _approve(agent, runs, thread)
        _drain(agent, queue)
    assert agent.result(gone).status == agent.result(kept).status == "done"
    assert _jobs(database, gone) == ["succeeded", "succeeded"]
    before = _rows(database, kept)

    pruned = _cli(database, "prune", "--thread", gone)
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert "of 1 run, and its 2 jobs" in pruned.stdout, pruned.stdout
    assert _jobs(database, gone) == []
    assert _rows(database, gone) == (0, 0)
    assert _jobs(database, kept) == ["succeeded", "succeeded"]
    assert _rows(database, kept) == before


def test_jobs_older_than_deletes_finished_jobs_but_none_of_a_paused_run_nor_an_open_one(
    database: str, agent: Agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue, elsewhere = _name("q"), _name("unserved")
    done, paused, answer_failed, never, recent, waiting = (
        _name(label) for label in ("done", "paused", "answer-failed", "never", "recent", "waiting")
    )
    failing = {never}
    _failing(monkeypatch, failing)
    with RunQueue(agent, queue) as runs:
        for thread in (done, paused, answer_failed, never, recent):
            runs.submit("record and publish", thread)
        _drain(agent, queue)  # `never` fails before its first checkpoint; the others pause
        for thread in (done, recent, answer_failed):
            _approve(agent, runs, thread)
        failing.add(answer_failed)  # its answer's job fails: the run is paused still
        _drain(agent, queue)
    with RunQueue(agent, elsewhere) as runs:
        runs.submit("record and publish", waiting)  # no worker serves that queue
    assert [agent.reader.status(t) for t in (done, recent, paused, answer_failed)] == [
        "done",
        "done",
        "paused",
        "paused",
    ]
    assert _jobs(database, never) == ["failed"]
    assert _jobs(database, answer_failed) == ["succeeded", "failed"]
    old = [done, paused, answer_failed, never, waiting]
    _age(database, old, hours=3)
    kept = {t: (_jobs(database, t), _rows(database, t)) for t in (paused, answer_failed)}
    kept |= {t: (_jobs(database, t), _rows(database, t)) for t in (recent, waiting)}

    dry = _cli(database, "prune", "--jobs-older-than", "2h", "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert "would delete 3 finished jobs older than 2h" in dry.stdout, dry.stdout
    assert _jobs(database, done) == ["succeeded", "succeeded"]

    pruned = _cli(database, "prune", "--jobs-older-than", "2h")
    assert pruned.returncode == 0, pruned.stdout + pruned.stderr
    assert "deleted 3 finished jobs older than 2h" in pruned.stdout, pruned.stdout
    assert "nothing to prune" not in pruned.stdout
    for thread in (done, never):
        assert _jobs(database, thread) == [], thread
        assert _rows(database, thread) == (0, 0), thread
    for thread, (jobs, rows) in kept.items():
        assert (_jobs(database, thread), _rows(database, thread)) == (jobs, rows), thread
    assert agent.reader.status(done) == "done"  # the run itself is not touched
    shown = _cli(database, "show", never)  # it existed only as its failed job
    assert shown.returncode == 2 and "no run is stored" in shown.stderr

    again = _cli(database, "prune", "--jobs-older-than", "2h")
    assert "deleted 0 finished jobs older than 2h" in again.stdout, again.stdout


def test_the_library_prune_keeps_the_jobs_of_runs_its_status_calls_unfinished(
    thread_id: str,
) -> None:
    # On the shared database, scoped to the test's threads; the statuses are given.
    queue = _name("q")
    threads = {f"{thread_id}-{status}": status for status in ("done", "running", "paused")}
    threads[f"{thread_id}-none"] = None  # no checkpoint at all: only its job
    with Agent(ScriptedModel([]), store=POSTGRES_URL) as agent:
        try:
            with RunQueue(agent, queue) as runs:
                ids = [runs.submit("x", thread).job_id for thread in threads]
            with psycopg.connect(POSTGRES_URL) as conn:  # as if workers had run them
                conn.execute(
                    "UPDATE procrastinate_jobs SET status = 'succeeded' WHERE id = ANY(%s)", (ids,)
                )
            store = Store(agent.driver.saver)
            later = datetime.now(UTC) + timedelta(hours=3)
            options: dict[str, Any] = {
                "status": threads.get,
                "threads": list(threads),
                "jobs_older_than": timedelta(hours=2),
            }
            assert store.prune(**options, now=datetime.now(UTC)).old_jobs == 0  # too recent
            dry = store.prune(**options, now=later, dry_run=True)
            assert dry.old_jobs == 2 and dry.dry_run
            assert prune(agent.driver.saver, **options, now=later).old_jobs == 2
            left = {t for t in threads if _jobs(POSTGRES_URL, t)}
            assert left == {f"{thread_id}-running", f"{thread_id}-paused"}
        finally:
            with psycopg.connect(POSTGRES_URL) as conn:
                conn.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", (queue,))

"""Prune deletes, with a finished run, the worker queue's record of it: its finished jobs
(and their events) and its row of `thinkgraph_run_jobs` — never a job that waits or runs,
never the jobs of a run prune leaves alone."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest
from typer.testing import CliRunner

from tests.conftest import POSTGRES_URL
from tests.support import quick_agent
from thinkgraph import Agent
from thinkgraph.cli import app
from thinkgraph.worker import RunQueue, run_worker


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch) -> Iterator[Agent]:
    monkeypatch.setenv("WORKER_STORE", POSTGRES_URL)
    with quick_agent.make_agent() as made:
        yield made


def _jobs(thread: str) -> tuple[list[str], int, int]:
    """(statuses of the thread's jobs, their events, its run_jobs rows)."""
    with psycopg.connect(POSTGRES_URL) as conn:
        statuses = [
            str(r[0])
            for r in conn.execute(
                "SELECT status::text FROM procrastinate_jobs WHERE lock = %s ORDER BY id",
                (thread,),
            )
        ]
        events = conn.execute(
            "SELECT count(*) FROM procrastinate_events e JOIN procrastinate_jobs j "
            "ON j.id = e.job_id WHERE j.lock = %s",
            (thread,),
        ).fetchone()
        rows = conn.execute(
            "SELECT count(*) FROM thinkgraph_run_jobs WHERE thread_id = %s", (thread,)
        ).fetchone()
    return statuses, int(events[0]) if events else 0, int(rows[0]) if rows else 0


def test_prune_deletes_a_finished_runs_jobs_and_leaves_a_queued_ones(agent: Agent) -> None:
    queue = f"keep-{uuid.uuid4().hex[:8]}"
    done, waiting = f"d-{uuid.uuid4().hex[:10]}", f"w-{uuid.uuid4().hex[:10]}"
    with RunQueue(agent, queue) as runs:
        runs.submit("finish", done)
    run_worker(agent, queue=queue, wait=False, install_signal_handlers=False)
    assert agent.result(done).status == "done"
    assert _jobs(done)[0] == ["succeeded"] and _jobs(done)[2] == 1
    with RunQueue(agent, queue) as runs:
        runs.submit("wait for a worker", waiting)

    pruned = CliRunner().invoke(app, ["prune", "--thread", done, "--store", POSTGRES_URL, "--yes"])
    assert pruned.exit_code == 0, pruned.output
    assert "and 1 finished job of the worker queue" in pruned.output, pruned.output
    assert _jobs(done) == ([], 0, 0)
    assert _jobs(waiting)[0] == ["todo"]  # its job waits: untouched

    refused = CliRunner().invoke(
        app, ["prune", "--thread", waiting, "--store", POSTGRES_URL, "--yes"]
    )
    assert _jobs(waiting)[0] == ["todo"], refused.output
    with psycopg.connect(POSTGRES_URL) as conn:
        conn.execute("DELETE FROM procrastinate_jobs WHERE lock = %s", (waiting,))

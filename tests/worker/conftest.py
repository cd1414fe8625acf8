"""What the worker tests share: a queue of each test's own on the shared PostgreSQL."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from tests.conftest import POSTGRES_URL


@pytest.fixture
def queue() -> Iterator[str]:
    """A queue of the test's own; its jobs are deleted afterwards (the database is shared)."""
    name = f"q-{uuid.uuid4().hex[:10]}"
    yield name
    with psycopg.connect(POSTGRES_URL) as conn:
        conn.execute("DELETE FROM procrastinate_jobs WHERE queue_name = %s", (name,))
        found = conn.execute("SELECT to_regclass('thinkgraph_run_jobs')").fetchone()
        if found is not None and found[0] is not None:  # the workers' row of each run
            conn.execute("DELETE FROM thinkgraph_run_jobs WHERE queue_name = %s", (name,))


def job_statuses(queue: str) -> list[str]:
    """The statuses of the queue's jobs, oldest first."""
    with psycopg.connect(POSTGRES_URL) as conn:
        rows = conn.execute(
            "SELECT status::text FROM procrastinate_jobs WHERE queue_name = %s ORDER BY id",
            (queue,),
        ).fetchall()
    return [str(row[0]) for row in rows]

"""``python -m bench.listing_scale [N [sqlite] [postgres]]``: N stored runs on SQLite and
PostgreSQL (or the stores named), then how long a page of the runs list takes: the first
page, a status-filtered page, a search by task, and the inbox (the newest paused runs and
their count). Prints one JSON line per store.

Issue 28's goal: the studio's list stays fast on 100,000 runs — a page of 50 in well under
0.5 s. Running 100,000 agents would take an hour, so twenty real runs are made (paused on
an approval, done with a tool call, done at once, failed out of steps; each with its row
in the run index, as the driver writes it), then copied in bulk with SQL, every table of
the store, each copy under its own thread id with its own checkpoint ids (a counter in
place of the ids' leading time digits, so each copy keeps its checkpoints' order and the
copies sort as runs made one after another). The PostgreSQL store is a database made on
127.0.0.1 for the run and dropped after it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.workload import add
from thinkgraph import Agent, ScriptedModel, StepLimits, tool
from thinkgraph.runs.listing import EVERY_RUN, RunFilter
from thinkgraph.storage.run_index import INDEX_TABLES

SEEDS = 20
"""Real runs made; the rest are copies of them."""
REPEAT = 5
PAGE = 50
POSTGRES_SERVER = os.environ.get(
    "THINKGRAPH_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432"
)
DATABASE = "thinkgraph_listing_bench"


@tool(requires_approval=True)
def send(to: str) -> str:
    """Send a message."""
    return f"sent to {to}"


def _call(name: str, **args: object) -> str:
    return f"Thought: use {name}\nAction: {name}\nAction Input: {json.dumps(args)}"


SCRIPTS = (
    [_call("send", to="bob")],  # paused, waiting for an approval
    [_call("add", a=1, b=1), "Thought: done\nFinal Answer: 2"],  # done
    ["Thought: done\nFinal Answer: nothing to do"],  # done at once
    [_call("add", a=1, b=1), _call("add", a=2, b=1)],  # failed: out of steps
)


def _seed(url: str) -> None:
    """Twenty real runs, named ``seed-NN`` (NN their number), with their index rows."""
    for kind, replies in enumerate(SCRIPTS):
        limits = StepLimits(max_steps=2)
        with Agent(ScriptedModel(replies), [add, send], store=url, limits=limits) as agent:
            for i in range(kind, SEEDS, len(SCRIPTS)):
                who = "Alice" if i % 3 else "Bob"
                agent.run(f"Help {who} with request {i}", thread_id=f"seed-{i:02d}")


def _copied(new_id: str, new_cp: str) -> dict[str, str]:
    """What a copy's columns hold, as SQL over the seed's row `t` and the copy's number
    `n.i`: its own thread id and checkpoint ids, its task numbered, its summary's id."""
    quoted = f"'\"' || {new_id} || '\"'"
    return {
        "thread_id": new_id,
        "checkpoint_id": new_cp.format(c="t.checkpoint_id"),
        "parent_checkpoint_id": new_cp.format(c="t.parent_checkpoint_id"),
        "thread_folded": f"lower({new_id})",
        "task": "t.task || ' #' || n.i",
        "task_folded": "t.task_folded || ' #' || n.i",
        "summary": f"replace(t.summary, '\"' || t.thread_id || '\"', {quoted})",
    }


def _columns(names: list[str], copy: dict[str, str]) -> str:
    return ", ".join(copy.get(n, n) for n in names)


def _copy_sqlite(path: Path, copies: int) -> None:
    """Each seed run copied `copies` times, every table of the SQLite store."""
    conn = sqlite3.connect(path)
    new_id = "printf('r%06d-%s', n.i, substr(t.thread_id, 6))"
    new_cp = "printf('%06d', n.i) || substr({c}, 7)"
    series = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?) "
    with conn:
        for table in ("checkpoints", "writes", "delta_snapshots", *INDEX_TABLES):
            names = [r[1] for r in conn.execute(f"PRAGMA table_info({table})")]
            cols = _columns(names, _copied(new_id, new_cp))
            conn.execute(
                f"{series}INSERT INTO {table} ({', '.join(names)}) SELECT {cols} "
                f"FROM n CROSS JOIN {table} t WHERE t.thread_id LIKE 'seed-%'",
                (copies,),
            )
    conn.execute("ANALYZE")
    conn.close()


def _copy_postgres(url: str, copies: int) -> None:
    """Each seed run copied `copies` times, every table of the PostgreSQL store."""
    import psycopg

    new_id = "format('r%%s-%%s', lpad(n.i::text, 6, '0'), substr(t.thread_id, 6))"
    new_cp = "lpad(n.i::text, 6, '0') || substr({c}, 7)"
    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("checkpoints", "checkpoint_writes", "checkpoint_blobs", *INDEX_TABLES):
            names = [
                r[0]
                for r in conn.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                    "ORDER BY ordinal_position",
                    (table,),
                )
            ]
            cols = _columns(names, _copied(new_id, new_cp))
            conn.execute(
                f"INSERT INTO {table} ({', '.join(names)}) SELECT {cols} "  # type: ignore[arg-type]
                f"FROM generate_series(1, %s) AS n(i) CROSS JOIN {table} t "
                "WHERE t.thread_id LIKE 'seed-%%'",
                (copies,),
            )
        conn.execute("VACUUM ANALYZE")


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    times, found = [], None
    for _ in range(REPEAT):
        started = time.perf_counter()
        found = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), found


def _measure(url: str, runs: int) -> dict[str, Any]:
    with Agent(ScriptedModel([]), [add, send], store=url) as agent:
        reader = agent.reader
        first_s, first = _timed(lambda: reader.page(EVERY_RUN, 0, PAGE))
        deep_s, _ = _timed(lambda: reader.page(EVERY_RUN, 10_000, PAGE))
        status_s, failed = _timed(lambda: reader.page(RunFilter(status="failed"), 0, PAGE))
        search_s, found = _timed(
            lambda: reader.page(RunFilter(search="alice with request 7"), 0, PAGE)
        )
        miss_s, missed = _timed(lambda: reader.page(RunFilter(search="no such task"), 0, PAGE))

        def inbox() -> tuple[Any, int]:
            waiting = reader.page(RunFilter(status="paused"), 0, 100)
            return waiting, reader.count().by_status["paused"]

        inbox_s, (waiting, paused) = _timed(inbox)
        count_s, counted = _timed(reader.count)
        # The same first page and status page read from the checkpoints, as before the
        # index (once: a search or the inbox that way reads every run, for minutes).
        started = time.perf_counter()
        reader.page_from_checkpoints(EVERY_RUN, 0, PAGE)
        slow_first_s = time.perf_counter() - started
        started = time.perf_counter()
        reader.page_from_checkpoints(RunFilter(status="failed"), 0, PAGE)
        slow_status_s = time.perf_counter() - started
    assert len(first.runs) == PAGE and first.has_next
    assert all(r.summary.status == "failed" for r in failed.runs) and len(failed.runs) == PAGE
    assert found.runs and all("alice with request 7" in r.task.casefold() for r in found.runs)
    assert not missed.runs
    assert len(waiting.runs) == 100 and paused == runs // 4
    assert counted.read == runs
    with Agent(ScriptedModel([]), [add, send], store=url) as agent:
        for copy in ("r000007-00", "r000007-01", "r000007-02", "r000007-03"):
            # A copy reads from its checkpoints as its row says (the copies are faithful).
            row = agent.reader.index_row(copy)
            [listed] = agent.reader.page(RunFilter(search=copy)).runs
            assert row is not None and row.summary is not None
            read = json.loads(row.summary)
            shown = listed.summary.model_dump(mode="json")
            for key in ("thread_id", "status", "steps", "tokens", "pending", "nodes"):
                assert read[key] == shown[key], (copy, key, read[key], shown[key])
    return {
        "runs": runs,
        "first_page_s": first_s,
        "page_at_10000_s": deep_s,
        "status_page_s": status_s,
        "task_search_s": search_s,
        "search_no_match_s": miss_s,
        "inbox_s": inbox_s,
        "count_s": count_s,
        "from_checkpoints_first_page_s": slow_first_s,
        "from_checkpoints_status_page_s": slow_status_s,
    }


def sqlite(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.db"
        url = f"sqlite:///{path}"
        started = time.perf_counter()
        _seed(url)
        _copy_sqlite(path, runs // SEEDS - 1)
        made_s = time.perf_counter() - started
        return {"store": "sqlite", "made_s": made_s, **_measure(url, runs)}


def postgres(runs: int) -> dict[str, Any]:
    import psycopg

    with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {DATABASE}")
        admin.execute(f"CREATE DATABASE {DATABASE}")
    url = f"{POSTGRES_SERVER}/{DATABASE}"
    try:
        started = time.perf_counter()
        _seed(url)
        _copy_postgres(url, runs // SEEDS - 1)
        made_s = time.perf_counter() - started
        return {"store": "postgres", "made_s": made_s, **_measure(url, runs)}
    finally:
        with psycopg.connect(f"{POSTGRES_SERVER}/postgres", autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {DATABASE} WITH (FORCE)")


def main(runs: int, stores: list[str]) -> None:
    for measure in (sqlite, postgres):
        if measure.__name__ in stores:
            print(json.dumps(measure(runs)), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000, sys.argv[2:] or ["sqlite", "postgres"])

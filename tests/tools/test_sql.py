"""sql_query: read-only SQL on a real SQLite file."""

from __future__ import annotations

import dataclasses
import json
import sqlite3
import time
from pathlib import Path

import pytest

from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import ToolDefinitionError
from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry, execute_call
from thinkgraph.tools.builtin import sql_query
from thinkgraph.tools.builtin.sql import SQLQueryTool

CTX = ToolContext.for_call("thread-1", 1, "call-1")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "shop data.db"  # a space, to check the path is escaped in the URI
    conn = sqlite3.connect(path)
    conn.executescript(
        """
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        CREATE TABLE orders (id INTEGER PRIMARY KEY, user_id INTEGER, total REAL, receipt BLOB);
        INSERT INTO users (name) VALUES ('ada'), ('bob'), ('cy');
        INSERT INTO orders (user_id, total, receipt) VALUES (1, 9.5, x'00ff'), (1, 3.0, NULL);
        """
    )
    conn.commit()
    conn.close()
    return path


def query(tool: SQLQueryTool, sql: str) -> ToolResultStep:
    return execute_call(ToolRegistry([tool]), ToolCall(name=tool.name, args={"query": sql}), CTX)


def snapshot(path: Path) -> list[object]:
    conn = sqlite3.connect(path)
    try:
        return [
            conn.execute("SELECT name, sql FROM sqlite_master ORDER BY name").fetchall(),
            conn.execute("SELECT * FROM users ORDER BY id").fetchall(),
        ]
    finally:
        conn.close()


def test_select_returns_columns_and_rows(db: Path) -> None:
    result = query(sql_query(db), "SELECT id, name FROM users ORDER BY id")
    assert result.ok is True
    assert result.output == {
        "columns": ["id", "name"],
        "rows": [[1, "ada"], [2, "bob"], [3, "cy"]],
        "truncated": False,
    }


def test_rows_beyond_max_rows_are_cut_and_flagged(db: Path) -> None:
    result = query(sql_query(db, max_rows=2), "SELECT name FROM users ORDER BY id")
    assert result.output == {"columns": ["name"], "rows": [["ada"], ["bob"]], "truncated": True}


@pytest.mark.parametrize(
    "sql",
    [
        "WITH big AS (SELECT user_id, SUM(total) AS s FROM orders GROUP BY user_id) "
        "SELECT u.name, big.s FROM users u JOIN big ON big.user_id = u.id",
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
        "SELECT COUNT(*) FROM n",
        "-- the totals\nSELECT total FROM orders;",
        "/* note */ SELECT*FROM users",
        "EXPLAIN QUERY PLAN SELECT * FROM users",
        "PRAGMA table_info(users)",
        "SELECT name FROM pragma_table_info('orders')",
        "VALUES (1, 2)",
    ],
)
def test_read_queries_are_allowed(db: Path, sql: str) -> None:
    result = query(sql_query(db), sql)
    assert result.ok is True, result.error
    assert result.output["rows"]


@pytest.mark.parametrize(
    "sql",
    [
        "INSERT INTO users (name) VALUES ('eve')",
        "UPDATE users SET name = 'eve'",
        "DELETE FROM users",
        "DROP TABLE users",
        "CREATE TABLE t (x)",
        "ALTER TABLE users ADD COLUMN age INTEGER",
        "REPLACE INTO users (id, name) VALUES (1, 'eve')",
        "ATTACH DATABASE ':memory:' AS other",
        "VACUUM",
        "  insert into users (name) values ('lower case')",
    ],
)
def test_writes_are_refused_by_their_first_keyword(db: Path, sql: str) -> None:
    before = snapshot(db)
    result = query(sql_query(db), sql)
    assert (result.ok, result.error_kind) == (False, "exception")
    assert result.error is not None and "only read queries are allowed" in result.error
    assert snapshot(db) == before


@pytest.mark.parametrize(
    "sql",
    [
        "WITH x AS (SELECT 1) DELETE FROM users",
        "WITH x AS (SELECT 1) INSERT INTO users (name) SELECT 'eve' FROM x",
        "PRAGMA query_only=OFF",
        "PRAGMA writable_schema=ON",
        "EXPLAIN DELETE FROM users",
    ],
)
def test_writes_disguised_as_reads_are_refused(db: Path, sql: str) -> None:
    before = snapshot(db)
    result = query(sql_query(db), sql)
    assert result.ok is False
    assert result.error is not None and "the query was refused" in result.error
    assert snapshot(db) == before


def test_the_schema_table_cannot_be_changed(db: Path) -> None:
    before = snapshot(db)
    result = query(sql_query(db), "WITH x AS (SELECT 1) UPDATE sqlite_master SET sql = 'x' WHERE 0")
    assert (result.ok, result.error_kind) == (False, "exception")
    assert snapshot(db) == before


def test_more_than_one_statement_is_refused(db: Path) -> None:
    before = snapshot(db)
    result = query(sql_query(db), "SELECT 1; DELETE FROM users")
    assert result.error == "ValueError: only one statement per call; send them one at a time"
    assert snapshot(db) == before


def test_connection_is_read_only_even_without_the_other_guards(db: Path) -> None:
    conn = sql_query(db)._connect()
    try:
        conn.set_authorizer(None)
        conn.execute("PRAGMA query_only=OFF")
        with pytest.raises(sqlite3.OperationalError, match="readonly database"):
            conn.execute("DELETE FROM users")
    finally:
        conn.close()


def test_a_runaway_query_is_stopped_at_the_tools_timeout(db: Path) -> None:
    # The runner stops waiting at timeout_s but cannot kill the thread; SQLite must stop too.
    tool = sql_query(db)
    tool.timeout_s = 0.2
    endless = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"
    )
    with pytest.raises(ValueError, match=r"ran longer than 0\.[234] s and was stopped at its"):
        tool.run(tool.args_model(query=endless), CTX)


def test_a_runaway_query_stops_at_the_calls_deadline_when_the_run_has_less_time(
    db: Path,
) -> None:
    # The runner gives the call the run's time left, shorter than the tool's 30 s: the
    # query must stop then too, not run on in its thread after the run has moved on.
    endless = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"
    )
    tool = sql_query(db)
    ctx = dataclasses.replace(CTX, deadline=time.monotonic() + 0.2)
    started = time.monotonic()
    with pytest.raises(ValueError, match="was stopped at its time limit"):
        tool.run(tool.args_model(query=endless), ctx)
    assert time.monotonic() - started < 1.5
    call = ToolCall(name=tool.name, args={"query": endless})
    result = execute_call(ToolRegistry([tool]), call, CTX, time_left_s=0.2)
    assert (result.ok, result.error_kind) == (False, "timeout")


def test_sql_errors_reach_the_model(db: Path) -> None:
    result = query(sql_query(db), "SELECT * FROM customers")
    assert result.error == "OperationalError: no such table: customers"


def test_empty_query_is_refused(db: Path) -> None:
    result = query(sql_query(db), "  -- nothing\n")
    assert result.error == "ValueError: the query is empty; write one SQL statement, e.g. SELECT 1"


def test_blobs_are_shown_as_their_size(db: Path) -> None:
    result = query(sql_query(db), "SELECT receipt FROM orders ORDER BY id")
    assert result.output["rows"] == [["<blob, 2 bytes>"], [None]]


def test_description_shows_the_table_schemas(db: Path) -> None:
    tool = sql_query(db, max_rows=7, name="shop_db")
    assert tool.name == "shop_db"
    assert "shop data.db" in tool.description
    assert "at most 7 rows" in tool.description
    assert "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)" in tool.description
    assert "CREATE TABLE orders" in tool.description


def test_sql_tool_is_a_database_tool_taking_one_query(db: Path) -> None:
    tool = sql_query(db)
    assert (tool.kind, tool.side_effects, tool.single_str_param()) == ("database", False, "query")
    raw = ToolCall(name="sql_query", raw_args="SELECT COUNT(*) AS n FROM users")
    assert execute_call(ToolRegistry([tool]), raw, CTX).output["rows"] == [[3]]


def test_missing_database_file_is_a_definition_error(tmp_path: Path) -> None:
    with pytest.raises(ToolDefinitionError, match="does not exist; create it"):
        sql_query(tmp_path / "nope.db")
    assert not (tmp_path / "nope.db").exists()


def test_a_file_that_is_not_sqlite_is_a_definition_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some text, long enough to not look like an empty database" * 10)
    with pytest.raises(ToolDefinitionError, match="is it a SQLite database"):
        sql_query(path)


def test_max_rows_below_one_is_a_definition_error(db: Path) -> None:
    with pytest.raises(ToolDefinitionError, match="max_rows is 0; use 1 or more"):
        sql_query(db, max_rows=0)


# -- bounded in bytes ---------------------------------------------------------------------

# Six rows from a CTE, for queries that make big values.
SIX = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 6) "


def test_a_long_cell_is_cut_with_a_marker_saying_how_big_it_was(db: Path) -> None:
    result = query(sql_query(db), "SELECT hex(zeroblob(400000)) AS h, 'short' AS s")
    assert result.ok is True
    ((cell, short),) = result.output["rows"]
    assert short == "short"
    assert cell.startswith("0000") and cell.endswith("…[truncated, 800 KB]")
    assert len(cell) < 10_100


def test_sqlite_itself_refuses_a_giant_value(db: Path) -> None:
    result = query(sql_query(db), "SELECT hex(randomblob(10000000)) LIMIT 6")
    assert (result.ok, result.error_kind) == (False, "exception")
    assert result.error is not None and result.error.startswith(
        "ValueError: a value the query reads or makes is larger than 10 MB"
    )


def test_rows_are_cut_when_the_result_grows_past_its_byte_limit(db: Path) -> None:
    result = query(
        sql_query(db), SIX + "SELECT i, hex(zeroblob(30000)), hex(zeroblob(30000)) FROM n"
    )
    assert result.ok is True
    rows = result.output["rows"]
    assert [row[0] for row in rows] == list(range(1, len(rows) + 1)) and len(rows) < 6
    assert sum(len(str(cell)) for row in rows for cell in row) <= 100_000
    assert result.output["truncated"] is True
    assert "page with LIMIT and OFFSET" in result.output["note"]


def test_the_checkpoint_of_a_run_stays_small_after_a_huge_query(db: Path, tmp_path: Path) -> None:
    huge = SIX + "SELECT hex(randomblob(4900000)) FROM n LIMIT 6"  # 6 x 9.8 MB of text
    giant = "SELECT hex(randomblob(10000000)) LIMIT 6"
    model = ScriptedModel(
        [
            tool_call_text("sql_query", huge),
            tool_call_text("sql_query", giant),
            "Thought: done\nFinal Answer: ok",
        ]
    )
    with Agent(model, [sql_query(db)], store=f"sqlite:///{tmp_path / 'runs.db'}") as agent:
        result = agent.run("query")
    steps = [s for s in result.chain if isinstance(s, ToolResultStep)]
    assert [s.ok for s in steps] == [True, False]
    sizes = [len(s.model_dump_json()) for s in steps]
    assert max(sizes) < 110_000, sizes
    assert (tmp_path / "runs.db").stat().st_size < 2_000_000
    assert "…[truncated, 9.8 MB]" in steps[0].output["rows"][0][0]


def tool_call_text(name: str, query_text: str) -> str:
    return f"Thought: look\nAction: {name}\nAction Input: {json.dumps({'query': query_text})}"

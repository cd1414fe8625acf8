"""`sql_query`: read-only SQL over a SQLite file, for the model.

Reading only is enforced four times over, because one guard can have a gap another
covers: the first keyword must be a read (SELECT, WITH, EXPLAIN, VALUES, PRAGMA) for a
clear refusal; an authorizer lets SQLite compile only reads, so `WITH x AS (...) DELETE`
is refused too; the file is opened with `mode=ro`; and `PRAGMA query_only=ON` is set.
SQLite itself refuses more than one statement per call.

A result is bounded in size as well as in rows, because it is stored in the run's
checkpoint: SQLite refuses any value over `MAX_VALUE_BYTES` (its own length limit, set on
the connection), a text cell is cut at `max_cell_chars` with a marker saying how big it
was, and rows stop once the cells passed `max_result_chars`. Rows are read one at a time,
so a query never holds more than one row of values beyond what it returns.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools.base import Tool, ToolContext, ToolKind

__all__ = [
    "MAX_CELL_CHARS",
    "MAX_RESULT_CHARS",
    "MAX_VALUE_BYTES",
    "READ_PRAGMAS",
    "SQLQueryTool",
    "sql_query",
]

MAX_VALUE_BYTES = 10_000_000
"""SQLite's length limit on the tool's connection: a longer string or blob is an error."""
MAX_CELL_CHARS = 10_000
"""Default most characters of one text cell in a result; the rest is cut, with a marker."""
MAX_RESULT_CHARS = 100_000
"""Default most characters of all cells of a result; rows past it are left out."""

READ_PRAGMAS = frozenset(
    {
        "table_info",
        "table_xinfo",
        "table_list",
        "index_list",
        "index_info",
        "index_xinfo",
        "foreign_key_list",
    }
)
"""The PRAGMAs a query may use: they describe tables and change nothing."""

_READ_KEYWORDS = frozenset({"SELECT", "WITH", "EXPLAIN", "VALUES", "PRAGMA"})
_READ_ACTIONS = frozenset(
    {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}
)
_LEADING_NOISE = re.compile(r"(?:\s+|--[^\n]*(?:\n|$)|/\*.*?\*/)*", re.DOTALL)
_WORD = re.compile(r"[A-Za-z]+")
_MAX_SCHEMA_CHARS = 8000
_PROGRESS_EVERY = 10_000  # SQLite VM instructions between deadline checks


class _QueryArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(
        description="one read-only SQL statement (SQLite), e.g. SELECT name FROM users LIMIT 5"
    )


class SQLQueryTool(Tool):
    """Runs one read-only SQL statement on a SQLite file; made by `sql_query`."""

    args_model = _QueryArgs
    kind: ToolKind = "database"
    returns = (
        '{"columns": [names], "rows": [[values], ...], "truncated": true if rows were cut, '
        '"note": why, when rows were cut for size}'
    )

    def __init__(
        self,
        db_path: str | os.PathLike[str],
        *,
        max_rows: int,
        name: str,
        max_cell_chars: int = MAX_CELL_CHARS,
        max_result_chars: int = MAX_RESULT_CHARS,
    ) -> None:
        for limit, value in (
            ("max_rows", max_rows),
            ("max_cell_chars", max_cell_chars),
            ("max_result_chars", max_result_chars),
        ):
            if value < 1:
                raise ToolDefinitionError(f"{limit} is {value}; use 1 or more")
        path = Path(db_path).resolve()
        if not path.is_file():
            raise ToolDefinitionError(
                f"database file {str(path)!r} does not exist; create it before sql_query(...)"
            )
        self.name = name
        self.max_rows = max_rows
        self.max_cell_chars = max_cell_chars
        self.max_result_chars = max_result_chars
        # A URI so the file is opened read-only; as_uri() escapes spaces and '?' in paths.
        self._uri = path.as_uri() + "?mode=ro"
        self.description = _describe(path, max_rows, _read_schema(self._uri))
        self.check_definition()

    def run(self, args: BaseModel, ctx: ToolContext) -> dict[str, Any]:
        query = cast(_QueryArgs, args).query
        _check_statement(query)
        started = time.monotonic()
        deadline = ctx.deadline
        if deadline is None and self.timeout_s is not None:
            deadline = time.monotonic() + self.timeout_s  # run directly, not by the runner
        conn = self._connect(deadline)
        try:
            try:
                cursor = conn.execute(query)
                return self._read(cursor)
            except sqlite3.ProgrammingError as exc:
                if "one statement" in str(exc):
                    raise ValueError(
                        "only one statement per call; send them one at a time"
                    ) from None
                raise
            except sqlite3.DatabaseError as exc:
                raise _explain(exc, started) from None
        finally:
            conn.close()

    def _read(self, cursor: sqlite3.Cursor) -> dict[str, Any]:
        """The result, row by row, each cell cut as it arrives, until a limit is reached."""
        columns = [col[0] for col in cursor.description or ()]
        rows: list[list[Any]] = []
        size = 0
        for row in cursor:
            if len(rows) == self.max_rows:
                return {"columns": columns, "rows": rows, "truncated": True}
            cells = [_cell(value, self.max_cell_chars) for value in row]
            size += sum(_size(cell) for cell in cells)
            if size > self.max_result_chars:
                note = (
                    f"only the first {len(rows)} rows are shown: the result passed "
                    f"{self.max_result_chars:,} characters; select fewer or shorter columns "
                    "(substr), or page with LIMIT and OFFSET"
                )
                return {"columns": columns, "rows": rows, "truncated": True, "note": note}
            rows.append(cells)
        return {"columns": columns, "rows": rows, "truncated": False}

    def _connect(self, deadline: float | None = None) -> sqlite3.Connection:
        # A connection per call: cheap for SQLite, and safe whatever thread runs the tool.
        conn = sqlite3.connect(self._uri, uri=True)
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        conn.execute("PRAGMA query_only=ON")
        conn.set_authorizer(_authorize)
        if deadline is not None:
            # The runner stops waiting at the call's deadline (the tool's timeout or the
            # run's time left) but cannot kill the thread; SQLite gives up at the same time,
            # so a runaway query does not run on.
            conn.set_progress_handler(lambda: time.monotonic() > deadline, _PROGRESS_EVERY)
        return conn


def sql_query(
    db_path: str | os.PathLike[str],
    *,
    max_rows: int = 100,
    name: str = "sql_query",
    max_cell_chars: int = MAX_CELL_CHARS,
    max_result_chars: int = MAX_RESULT_CHARS,
) -> SQLQueryTool:
    """A tool that runs read-only SQL on the SQLite file at `db_path`.

    The table schemas are read once, now, and put in the tool's description so the model
    knows what to query.

    Example:
        >>> tool = sql_query("shop.db", max_rows=20)  # doctest: +SKIP
        >>> tool.single_str_param()  # doctest: +SKIP
        'query'

    Args:
        db_path: the SQLite file; it must exist.
        max_rows: at most this many rows are returned; `truncated` says when there were more.
        name: the tool's name, to tell several databases apart.
        max_cell_chars: a longer text cell is cut here, ending in "…[truncated, 9.9 MB]".
        max_result_chars: rows stop once their cells hold this many characters; the
            result then says so in "note". Results are stored in the run's checkpoint.

    Raises:
        ToolDefinitionError: the file does not exist, is not a SQLite database, or a
            limit is below 1.
    """
    return SQLQueryTool(
        db_path,
        max_rows=max_rows,
        name=name,
        max_cell_chars=max_cell_chars,
        max_result_chars=max_result_chars,
    )


def _read_schema(uri: str) -> list[str]:
    try:
        conn = sqlite3.connect(uri, uri=True)
        try:
            rows = conn.execute(
                "SELECT sql FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY type, name"
            ).fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        raise ToolDefinitionError(
            f"cannot read the schema of {uri!r} ({exc}); is it a SQLite database?"
        ) from exc
    return [row[0] for row in rows]


def _describe(path: Path, max_rows: int, schema: list[str]) -> str:
    tables = ";\n".join(schema) + ";" if schema else "(the database has no tables yet)"
    if len(tables) > _MAX_SCHEMA_CHARS:
        tables = tables[:_MAX_SCHEMA_CHARS] + "\n… (cut; use PRAGMA table_info(name) for more)"
    return (
        f"Run one read-only SQL query (SQLite) on the database {path.name} and get back "
        f"its columns and at most {max_rows} rows. Only SELECT, WITH, EXPLAIN, VALUES and "
        "PRAGMA table_info(...)-style statements are allowed, one per call.\n\n"
        f"Tables:\n{tables}"
    )


def _check_statement(query: str) -> None:
    noise = _LEADING_NOISE.match(query)
    body = query[noise.end() :] if noise else query
    word = _WORD.match(body)
    keyword = word.group(0).upper() if word else ""
    if not body.strip():
        raise ValueError("the query is empty; write one SQL statement, e.g. SELECT 1")
    if keyword not in _READ_KEYWORDS:
        raise ValueError(
            "only read queries are allowed (SELECT, WITH, EXPLAIN, VALUES, PRAGMA "
            f"table_info(...)); this one starts with {keyword or body.strip()[:20]!r} "
            "and was not run"
        )


def _authorize(
    action: int, arg1: str | None, arg2: str | None, db: str | None, src: str | None
) -> int:
    if action in _READ_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_PRAGMA and arg1 is not None and arg1.lower() in READ_PRAGMAS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_UPDATE and arg1 == "sqlite_master":
        # SQLite asks this when it sets up a table-valued pragma such as
        # pragma_table_info('t'); a real change of the schema table is still stopped by
        # SQLite itself, by mode=ro and by query_only.
        return sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _explain(exc: sqlite3.DatabaseError, started: float) -> Exception:
    message = str(exc)
    if "not authorized" in message or "authorization denied" in message:
        return ValueError(
            "the query was refused: it would change the database or do something other than "
            "reading (allowed: SELECT, WITH, EXPLAIN, VALUES and PRAGMA "
            f"{', '.join(sorted(READ_PRAGMAS))})"
        )
    if message == "interrupted":
        ran = round(time.monotonic() - started, 1)
        return ValueError(
            f"the query ran longer than {ran:g} s and was stopped at its time limit; make it "
            "cheaper (a WHERE on an indexed column, fewer joins, a LIMIT)"
        )
    if message == "string or blob too big":
        return ValueError(
            f"a value the query reads or makes is larger than {_bytes(MAX_VALUE_BYTES)}, the "
            "most this tool handles; leave that column out, or make smaller values"
        )
    return exc


def _cell(value: Any, max_chars: int) -> Any:
    # Blobs are not JSON and mean nothing to a model as bytes; say what is there instead.
    if isinstance(value, bytes):
        return f"<blob, {len(value)} bytes>"
    if isinstance(value, str) and len(value) > max_chars:
        return f"{value[:max_chars]}…[truncated, {_bytes(len(value.encode('utf-8')))}]"
    return value


def _size(cell: Any) -> int:
    return len(cell) if isinstance(cell, str) else 8


def _bytes(count: int) -> str:
    """A byte count for people: 812 bytes, 800 KB, 9.9 MB."""
    if count < 1000:
        return f"{count} bytes"
    if count < 1_000_000:
        return f"{count / 1000:.0f} KB"
    return f"{count / 1_000_000:.1f} MB".replace(".0 MB", " MB")

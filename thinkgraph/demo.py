"""The demo: an analyst agent answers a question about a small sales database.

It runs on the embedded default store with the calculator and a read-only SQL tool. With
no model configured it uses a `ScriptedModel` whose replies are computed from the
observations it is shown (the SQL rows, the calculator's results), so the answer comes from
the tools, not from the script.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from thinkgraph.llm.base import Message
from thinkgraph.llm.scripted import ScriptedModel
from thinkgraph.tools.base import Tool
from thinkgraph.tools.builtin import calculator, sql_query

__all__ = ["DEMO_DB", "DEMO_TASK", "create_sales_db", "demo_tools", "scripted_analyst"]

DEMO_DB = Path(".thinkgraph") / "demo" / "sales.db"
"""Where the demo keeps its sales database, under the working directory."""

DEMO_TASK = (
    "Using the sales database, find which quarter of 2025 had the highest total revenue, "
    "and by what percentage it beat the average quarter of 2025."
)

_SALES = {
    # (quarter, region): revenue in thousands of USD
    ("Q1", "north"): 120.5,
    ("Q1", "south"): 98.0,
    ("Q1", "west"): 77.25,
    ("Q2", "north"): 134.0,
    ("Q2", "south"): 101.5,
    ("Q2", "west"): 88.0,
    ("Q3", "north"): 158.75,
    ("Q3", "south"): 121.0,
    ("Q3", "west"): 95.5,
    ("Q4", "north"): 149.0,
    ("Q4", "south"): 117.25,
    ("Q4", "west"): 102.0,
}


def create_sales_db(path: Path) -> Path:
    """Create (or recreate) the demo's SQLite database of 2025 sales by quarter and region."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE sales (year INTEGER, quarter TEXT, region TEXT, revenue_k REAL)")
        conn.executemany(
            "INSERT INTO sales VALUES (2025, ?, ?, ?)",
            [(q, r, v) for (q, r), v in _SALES.items()],
        )
    return path


_QUERY = (
    "SELECT quarter, ROUND(SUM(revenue_k), 2) AS revenue_k FROM sales "
    "WHERE year = 2025 GROUP BY quarter ORDER BY quarter"
)


def _observations(messages: list[Message]) -> list[str]:
    found: list[str] = []
    for message in messages:
        content = message.get("content") or ""
        if message.get("role") == "user" and isinstance(content, str):
            found.extend(m.group(1).strip() for m in re.finditer(r"Observation: (.*)", content))
    return found


def _analyst(messages: list[Message]) -> str:
    seen = _observations(messages)
    if not seen:
        return (
            "Thought: I need the total revenue of each quarter of 2025.\n"
            "Action: sql_query\n"
            f"Action Input: {json.dumps({'query': _QUERY})}"
        )
    rows = json.loads(seen[0])["rows"]
    totals = {str(q): float(v) for q, v in rows}
    if len(seen) == 1:
        expression = f"({' + '.join(str(v) for v in totals.values())}) / {len(totals)}"
        return (
            f"Thought: Quarterly totals are {totals}. Now the average quarter.\n"
            "Action: calculator\n"
            f"Action Input: {json.dumps({'expression': expression})}"
        )
    best = max(totals, key=lambda q: totals[q])
    if len(seen) == 2:
        average = seen[1]
        expression = f"({totals[best]} - {average}) / {average} * 100"
        return (
            f"Thought: {best} is the highest at {totals[best]}k; the average is {average}k. "
            "Now the percentage by which it beats the average.\n"
            "Action: calculator\n"
            f"Action Input: {json.dumps({'expression': expression})}"
        )
    percent = float(seen[2])
    return (
        f"Thought: I have everything I need.\n"
        f"Final Answer: {best} 2025 had the highest revenue ({totals[best]:.2f}k USD), "
        f"{percent:.1f}% above the average quarter ({float(seen[1]):.2f}k USD)."
    )


def scripted_analyst() -> ScriptedModel:
    """A scripted model that plays the analyst by reading the observations it is shown."""
    return ScriptedModel(_analyst, name="scripted-analyst")


def demo_tools(db: Path = DEMO_DB) -> list[Tool]:
    """The demo's tools: the calculator and read-only SQL on the sales database.

    The database is made first when it is not there. ``--tools thinkgraph.demo:tools``
    gives them to any command (e.g. `thinkgraph replay` of a demo run).
    """
    if not db.exists():
        create_sales_db(db)
    return [calculator, sql_query(db)]


def __getattr__(name: str) -> Any:
    # `tools` is made when asked for (it needs the database), not when the module loads.
    if name == "tools":
        return demo_tools()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

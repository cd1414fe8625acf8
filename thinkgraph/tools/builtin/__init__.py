"""Tools that come with thinkgraph."""

from thinkgraph.tools.builtin.calculator import calculator
from thinkgraph.tools.builtin.sql import sql_query

__all__ = [
    "calculator",
    "sql_query",
]

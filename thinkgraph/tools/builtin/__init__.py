"""Tools that come with thinkgraph."""

from thinkgraph.tools.builtin.agent_tool import DelegationError, agent_tool
from thinkgraph.tools.builtin.calculator import calculator
from thinkgraph.tools.builtin.files import files
from thinkgraph.tools.builtin.llm import llm_tool
from thinkgraph.tools.builtin.sql import sql_query

__all__ = [
    "DelegationError",
    "agent_tool",
    "calculator",
    "files",
    "llm_tool",
    "sql_query",
]

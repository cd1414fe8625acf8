"""Tools: what the agent can call, and how one call is run.

from thinkgraph.tools import tool, ToolRegistry, execute_call
"""

from thinkgraph.tools.base import Tool, ToolContext, ToolKind
from thinkgraph.tools.function import FunctionTool, tool
from thinkgraph.tools.langchain import as_tool, from_langchain
from thinkgraph.tools.mcp import mcp_tools
from thinkgraph.tools.output import ToolOutput, ToolUsage
from thinkgraph.tools.registry import ToolRegistry
from thinkgraph.tools.runner import aexecute_call, execute_call

__all__ = [
    "FunctionTool",
    "Tool",
    "ToolContext",
    "ToolKind",
    "ToolOutput",
    "ToolRegistry",
    "ToolUsage",
    "aexecute_call",
    "as_tool",
    "execute_call",
    "from_langchain",
    "mcp_tools",
    "tool",
]

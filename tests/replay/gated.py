"""The demo's tools with the SQL tool needing approval: ``--tools tests.replay.gated:tools``."""

from __future__ import annotations

import copy
from typing import Any

from thinkgraph.demo import demo_tools
from thinkgraph.tools.base import Tool


def gated_tools() -> list[Tool]:
    """The calculator, and sql_query marked `requires_approval`."""
    tools = demo_tools()
    tools[1].requires_approval = True
    return tools


def reworded_tools() -> list[Tool]:
    """The same tools, the calculator described in other words: only the prompt changes."""
    tools = gated_tools()
    tools[0] = copy.copy(tools[0])  # the calculator is shared: change a copy
    tools[0].description = "Work out an arithmetic expression exactly."
    return tools


def __getattr__(name: str) -> Any:
    # Made when asked for: the database is made under the working folder.
    if name == "tools":
        return gated_tools()
    if name == "reworded":
        return reworded_tools()
    raise AttributeError(name)

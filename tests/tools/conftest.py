"""What the tool tests share: one call context, and a call run both ways."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from thinkgraph.state import ToolCall, ToolResultStep
from thinkgraph.tools import ToolContext, ToolRegistry, aexecute_call, execute_call

CTX = ToolContext.for_call("thread-1", 2, "call-1")
"""The context of the calls the tests run: thread-1, think step 2, call-1."""

Runner = Callable[[ToolRegistry, ToolCall], ToolResultStep]


@pytest.fixture(params=["sync", "async"])
def run_call(request: pytest.FixtureRequest) -> Runner:
    """The same contract holds for execute_call and aexecute_call."""
    if request.param == "sync":
        return lambda registry, call: execute_call(registry, call, CTX)
    return lambda registry, call: asyncio.run(aexecute_call(registry, call, CTX))

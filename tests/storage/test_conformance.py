"""Every store `open_checkpointer` returns passes LangGraph's checkpointer conformance suite.

The suite is async-only; the stores are used as they are, with no adapter, so a LangGraph
program (the LangGraph server included) can use them with `ainvoke` and `astream`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks

from thinkgraph.storage import close_checkpointer, open_checkpointer


@pytest.mark.timeout(300)
def test_the_store_passes_langgraph_checkpointer_conformance(any_store_url: str) -> None:
    @checkpointer_test(name=any_store_url.partition("://")[0])
    async def store() -> AsyncIterator[Any]:
        saver = open_checkpointer(any_store_url)
        try:
            yield saver
        finally:
            close_checkpointer(saver)

    report = asyncio.run(validate(store, progress=ProgressCallbacks.quiet()))
    failed = {name: r.failures for name, r in report.results.items() if r.passed is False}
    assert report.passed_all(), failed
    assert report.passed_all_base(), failed
    assert sum(r.tests_passed for r in report.results.values()) >= 40

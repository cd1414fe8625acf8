"""LangGraph's private parts thinkgraph uses (thinkgraph._langgraph) are still there as used.

If one of these fails after an upgrade of LangGraph, the message says what moved; fix
`thinkgraph/_langgraph.py` (and only it), then widen `LANGGRAPH_TESTED` and the pin in
pyproject.toml.
"""

from __future__ import annotations

import asyncio
import inspect
from importlib.metadata import version
from pathlib import Path

import pytest
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from packaging.version import Version

from thinkgraph import _langgraph
from thinkgraph._langgraph import (
    LANGGRAPH_TESTED,
    DeltaSnapshot,
    DualNode,
    ext_hook_of,
    postgres_cursor,
    serializer_with_hook,
    sqlite_has_task_path,
)
from thinkgraph.storage import close_checkpointer, open_checkpointer


def test_the_installed_langgraph_is_a_version_these_uses_were_checked_against() -> None:
    installed = Version(version("langgraph"))
    low, high = (Version(bound.lstrip("<>=")) for bound in LANGGRAPH_TESTED)
    assert low <= installed < high, (
        f"langgraph {installed} is outside {LANGGRAPH_TESTED}: check every use in "
        "thinkgraph/_langgraph.py against it, then widen LANGGRAPH_TESTED and the pin"
    )
    text = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text()
    assert f'"langgraph{LANGGRAPH_TESTED[0]},{LANGGRAPH_TESTED[1]}"' in text, (
        "pyproject.toml's langgraph pin must be LANGGRAPH_TESTED"
    )


def test_a_delta_snapshot_still_wraps_one_value() -> None:
    snap = DeltaSnapshot([1, 2])
    assert snap.value == [1, 2], "DeltaSnapshot lost its .value: see how DeltaChannel stores"


def test_the_serializer_still_takes_and_keeps_an_ext_hook() -> None:
    calls: list[int] = []
    plain = JsonPlusSerializer()
    own = ext_hook_of(plain)
    assert callable(own), "JsonPlusSerializer._unpack_ext_hook is gone"

    def hook(code: int, data: bytes) -> object:
        calls.append(code)
        return own(code, data)

    serde = serializer_with_hook(JsonPlusSerializer, hook)
    assert serde.loads_typed(serde.dumps_typed(DeltaSnapshot([1]))).value == [1]
    assert calls, "JsonPlusSerializer(__unpack_ext_hook__=...) no longer calls the hook"


def test_the_sqlite_saver_still_says_whether_writes_have_a_task_path(tmp_path: object) -> None:
    saver = open_checkpointer(f"sqlite:///{tmp_path}/x.db")
    try:
        assert sqlite_has_task_path(saver) in (True, False)
    finally:
        close_checkpointer(saver)


def test_the_postgres_saver_still_has_its_cursor() -> None:
    from tests.conftest import POSTGRES_URL

    saver = open_checkpointer(POSTGRES_URL)
    try:
        with postgres_cursor(saver) as cur:
            assert cur.execute("SELECT 1 AS one").fetchone()["one"] == 1
    finally:
        close_checkpointer(saver)


def test_a_dual_node_runs_its_async_body_from_sync_and_async_code() -> None:
    async def body(state: dict[str, int]) -> dict[str, int]:
        await asyncio.sleep(0)
        return {"x": state["x"] + 1}

    node = DualNode("inc", body)
    assert node.invoke({"x": 1}) == {"x": 2}
    assert asyncio.run(node.ainvoke({"x": 1})) == {"x": 2}


@pytest.mark.parametrize("name", ["RunnableCallable"])
def test_langgraphs_node_class_still_takes_a_sync_and_an_async_body(name: str) -> None:
    params = inspect.signature(getattr(_langgraph, name)).parameters
    assert {"func", "afunc", "name", "trace"} <= set(params), f"{name}'s signature changed"

"""Every use of LangGraph's private parts, in one place, checked against one version range.

thinkgraph leans on a few names LangGraph does not export. They live here so an upgrade
that moves them fails in one module, loudly, with what to check (see
tests/test_langgraph_internals.py), instead of somewhere deep in a run.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import Runnable
from langgraph._internal._runnable import RunnableCallable

from thinkgraph._sync import run_sync

__all__ = ["LANGGRAPH_TESTED", "dual_node"]

LANGGRAPH_TESTED = ">=1.2.20,<1.3"
"""The LangGraph versions these uses were checked against (the dependency pin)."""


def dual_node(name: str, afunc: Callable[..., Awaitable[Any]]) -> Runnable[Any, Any]:
    """An async node that LangGraph can also run from ``invoke`` and ``stream``.

    The async function is the node's one implementation; from sync code LangGraph calls a
    wrapper that runs it on thinkgraph's loop thread (`thinkgraph._sync`), with the
    caller's context, so `interrupt` and the run's config work the same. Built as
    LangGraph builds its own nodes (`RunnableCallable`, not traced as a separate run).
    """

    @functools.wraps(afunc)  # the same signature: LangGraph injects `config` by it
    def func(*args: Any, **kwargs: Any) -> Any:
        return run_sync(lambda: afunc(*args, **kwargs))

    return RunnableCallable(func, afunc, name=name, trace=False)

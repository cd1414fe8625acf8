"""A graph builder, called once and checked: where every graph an agent runs on is built.

A builder is a function that takes the agent's `Deps` and returns an uncompiled
`StateGraph` (`GraphBuilder`). `built_graph` refuses one that cannot be called so before it
runs (a builtin named by mistake never runs), and whatever it raises or returns that is
not a `StateGraph` is one line; the graph it builds is checked (`check_graph`).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from langgraph.graph import StateGraph

from thinkgraph.errors import GraphConfigError, ThinkgraphError, first_line
from thinkgraph.graphs.build import GraphBuilder
from thinkgraph.graphs.checks import check_graph
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import AgentState
from thinkgraph.types import StepLimits

__all__ = ["built_graph"]


def built_graph(
    build: GraphBuilder, deps: Deps, limits: StepLimits, name: str | None = None
) -> StateGraph[AgentState, Any, AgentState, AgentState]:
    """The graph `build` makes of `deps`, checked (`check_graph`).

    A builder is called with one argument, the agent's `Deps`, and returns an uncompiled
    `StateGraph`. One that cannot be is refused here, where every graph an agent runs on
    is built (the CLI's `--graph` included), before anything runs or is stored.

    Args:
        build: the builder.
        deps: the agent's parts, passed to it.
        limits: the agent's limits, for the checks of the graph.
        name: how errors name the builder (its address; default: its name).

    Raises:
        GraphConfigError: in one line naming the builder: it is not a Python function
            (a builtin such as ``os.system`` is never called), its signature does not take
            one argument, it raised, or it returned something else than a `StateGraph`.
            A `ThinkgraphError` the builder raised (a check of the graph it built) is
            raised as it is.
    """
    shown = repr(name or getattr(build, "__qualname__", None) or type(build).__name__)
    problem = _builder_problem(build)
    if problem is not None:
        raise GraphConfigError(f"graph builder {shown} {problem}; {_BUILDER}")
    try:
        graph = build(deps)
    except ThinkgraphError:
        raise  # already one line, about the graph it built
    except Exception as exc:
        raise GraphConfigError(
            f"graph builder {shown} raised {first_line(exc)}; fix the builder ({_BUILDER})"
        ) from exc
    if not isinstance(graph, StateGraph):
        if inspect.iscoroutine(graph):
            graph.close()  # an async builder: never awaited, and not warned about either
        raise GraphConfigError(
            f"graph builder {shown} returned {_a_kind(graph)}; return the uncompiled "
            "StateGraph (the agent compiles it with its store)"
        )
    check_graph(graph, limits=limits)
    return graph


_BUILDER = (
    "a builder is a function that takes the agent's Deps and returns an uncompiled StateGraph"
)


def _builder_problem(build: Any) -> str | None:
    """What keeps `build` from being called as a builder; None when nothing does.

    Checked before it is called, so a builtin named by mistake (``os:system``, whose one
    parameter would take the Deps) never runs: a builder must be Python code, a function,
    a method or an object whose class defines `__call__` (through `functools.partial` and
    decorators that set `__wrapped__`, as `functools.wraps` and `lru_cache` do), and its
    signature must take exactly the one argument it is called with.
    """
    target = build
    for _ in range(100):  # a chain of wrappers, never a cycle of them
        if isinstance(target, functools.partial):
            target = target.func
        elif hasattr(target, "__wrapped__") and not inspect.isfunction(target):
            target = target.__wrapped__
        else:
            break
    if not _is_python(target):
        return f"is {_a_kind(target)}, not a Python function"
    try:
        signature = inspect.signature(build)
    except (TypeError, ValueError):
        return "has no signature to check"
    try:
        signature.bind(object())
    except TypeError:
        return f"takes {signature}, but is called with one argument, the agent's Deps"
    return None


def _is_python(target: Any) -> bool:
    if inspect.isfunction(target):
        return True
    if inspect.ismethod(target):
        return inspect.isfunction(target.__func__)
    # An object whose class defines `__call__` in Python (looked up on the class, as a call is).
    call = inspect.getattr_static(type(target), "__call__", None)
    return not isinstance(target, type) and inspect.isfunction(call)


def _a_kind(value: Any) -> str:
    if value is None:
        return "None"
    if inspect.isbuiltin(value):
        return "a built-in function"
    kind = "class" if isinstance(value, type) else type(value).__name__
    return f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"

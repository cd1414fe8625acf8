"""Reading a run from its record alone: a graph of its nodes' names, with no code of theirs.

Reading a run — its state, its pause, which node comes next — needs a compiled LangGraph
graph: LangGraph applies the checkpoint's channels and computes the next tasks from which
node-trigger channels changed since each node last ran. None of that runs a node. So a run
is read on a *reading graph*: our state's channels and the keys of the run's own state its
checkpoint holds, and one node that does nothing for each
name the checkpoint itself mentions (the nodes that have run, the nodes a route or a `Send`
has been sent to, the joins that wait for several nodes). Nothing is imported from the
address a run records, whoever wrote it into the store: a run of a graph of yours is read,
listed and drawn (from the shape its task step records) by any process, and only a command
that continues it builds its graph, from an address the operator named
(`thinkgraph.graphs.address.check_trusted`).
"""

from __future__ import annotations

import functools
import types
from typing import Annotated, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver, Checkpoint
from langgraph.constants import END, START
from langgraph.graph import StateGraph
from langgraph.graph.state import CompiledStateGraph

from thinkgraph.state import AgentState, is_own_key

__all__ = ["next_nodes", "reading_graph", "recorded_keys", "recorded_nodes"]

_TO = "branch:to:"
_JOIN = "join:"
_RESERVED = frozenset({START, END, "__input__", "__interrupt__", "__pregel_tasks"})


def recorded_nodes(checkpoint: Checkpoint) -> tuple[frozenset[str], frozenset[tuple[str, ...]]]:
    """The node names a checkpoint mentions, and its joins (each sources…, target).

    A node that ran is in ``versions_seen``; a node a route or an edge was sent to has a
    ``branch:to:NAME`` channel; a node several nodes wait to reach together has a
    ``join:A+B:NAME`` channel; a node a `Send` targets (act's calls) is named in the
    pending sends. That is every node LangGraph can compute as next from this checkpoint.
    """
    names: set[str] = set()
    joins: set[tuple[str, ...]] = set()
    names.update(k for k in checkpoint.get("versions_seen", {}) if isinstance(k, str))
    for channel in (*checkpoint.get("channel_versions", {}), *checkpoint.get("channel_values", {})):
        if not isinstance(channel, str):
            continue
        if channel.startswith(_TO):
            names.add(channel[len(_TO) :])
        elif channel.startswith(_JOIN):
            sources, _, target = channel[len(_JOIN) :].rpartition(":")
            parts = tuple(s for s in sources.split("+") if s)
            if parts and target:
                joins.add((*parts, target))
                names.update((*parts, target))
    for send in checkpoint.get("channel_values", {}).get("__pregel_tasks", None) or ():
        node = getattr(send, "node", None)
        if isinstance(node, str):
            names.add(node)
    return frozenset(n for n in names if n and n not in _RESERVED), frozenset(joins)


def _nothing(state: AgentState) -> dict[str, Any]:
    """A node of a reading graph: it never runs (reading computes, it does not advance)."""
    raise RuntimeError("a graph made for reading a run cannot run it")


def next_nodes(checkpoint: Checkpoint) -> tuple[str, ...]:
    """The nodes a run goes on to from `checkpoint`, computed from the checkpoint alone.

    As LangGraph decides (without building the graph or reading the chain): a node is next
    when the channel that triggers it (``branch:to:NODE``) has a newer version than the
    node last saw and still holds a value, or when a pending `Send` targets it. What a
    listing needs to tell a run paused before a breakpoint from one that stopped.
    """
    versions: dict[str, Any] = dict(checkpoint.get("channel_versions", {}))
    seen = checkpoint.get("versions_seen", {})
    values = checkpoint.get("channel_values", {})
    found: set[str] = set()
    for channel, version in versions.items():
        # A trigger a node consumed is emptied (and left out of the values) as it runs.
        if not isinstance(channel, str) or not channel.startswith(_TO) or channel not in values:
            continue
        target = channel[len(_TO) :]
        last: Any = (seen.get(target) or {}).get(channel, type(version)())
        if type(last) is type(version) and version > last:
            found.add(target)
    for send in values.get("__pregel_tasks", None) or ():
        sent = getattr(send, "node", None)
        if isinstance(sent, str):
            found.add(sent)
    return tuple(sorted(n for n in found if n not in _RESERVED))


def recorded_keys(checkpoint: Checkpoint) -> frozenset[str]:
    """The keys of the run's own state a checkpoint holds (those its graph declared beyond
    `AgentState`; a key never written has no channel value and reads as absent anyway)."""
    return frozenset(
        k for k in checkpoint.get("channel_values", {}) if isinstance(k, str) and is_own_key(k)
    )


def _keep_last(current: Any, new: Any) -> Any:
    """The reader's reducer for a key of the run's own state: its graph's reducer is not
    known, and reading applies none but a finished node's pending writes."""
    return new


def _state_with(keys: frozenset[str]) -> type[AgentState]:
    """`AgentState` with `keys` added, each holding any value."""
    extra = {key: Annotated[Any, _keep_last] for key in sorted(keys)}
    return cast(
        type[AgentState],
        types.new_class(
            "RecordedState",
            (AgentState,),
            {"total": False},
            lambda ns: ns.update({"__annotations__": extra}),
        ),
    )


@functools.lru_cache(maxsize=64)
def _skeleton(
    names: frozenset[str], joins: frozenset[tuple[str, ...]], keys: frozenset[str]
) -> StateGraph[Any]:
    state = _state_with(keys) if keys else AgentState
    graph: StateGraph[Any] = StateGraph(state)  # type: ignore[arg-type]
    ordered = sorted(names) or ["think"]
    for name in ordered:
        graph.add_node(name, _nothing)
    graph.add_edge(START, "think" if "think" in names else ordered[0])
    for *sources, target in joins:
        graph.add_edge(list(sources), target)
    return graph


def reading_graph(
    checkpoint: Checkpoint, saver: BaseCheckpointSaver[Any]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A graph that reads the run `checkpoint` belongs to from `saver`, and cannot run it."""
    names, joins = recorded_nodes(checkpoint)
    return _skeleton(names, joins, recorded_keys(checkpoint)).compile(checkpointer=saver)

"""The run overlay: which nodes and edges one run went through, and where it paused or stopped.

The path is read from the chain, not from checkpoint history, so it works wherever a chain
is (a `RunResult`, an export) and is a pure function of it. Each step records the node
that wrote it (`TaskStep` is written by "start"). Rules:

- consecutive steps from one node are one visit of it, except think: every think visit
  makes exactly one model call, so each ``llm_call`` step of think opens a new visit
  (think → think retries are counted);
- act steps in a row are one parallel round (one `Send` per call): a round counts as one
  visit of act and one traversal of think → act; `tool_calls` counts the calls;
- a node that wrote no step is filled in from the graph model: validate with no
  validators writes nothing, so a finalize that accepted a final answer without a
  validate since the last think went through validate; any other transition that is not
  an edge of the model is bridged by the shortest path through nodes that may run without
  writing a step (validate, approve, custom nodes);
- a paused run waits at the node named by its pending entries (`kind` ask_human →
  ask_human, approval → the approval gate, breakpoint → the entry's `node`); it is
  counted as visited (it ran up to its interrupt) except before a breakpoint.

Nodes are known by their kind in the graph model, so a renamed node of ours (think called
"plan", act called "execute") is counted as the node it is, under its own name.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any, cast

import networkx as nx

from thinkgraph.graphs import routes
from thinkgraph.result import status_text, waiting_for
from thinkgraph.state import BaseStep, FinalStep, LLMCallStep, ToolResultStep
from thinkgraph.types import RunStatus, StopReason
from thinkgraph.viz.model import END, START

__all__ = ["RunOverlay", "build_overlay", "overlay_from_result"]


_ALWAYS_WRITES = frozenset(
    {routes.THINK, routes.ACT, routes.OBSERVE, routes.RESET, routes.FINALIZE, "start", "end"}
)
"""Kinds of node that write at least one step every time they run."""


@dataclass(frozen=True, slots=True)
class RunOverlay:
    """What one run did in the graph."""

    path: tuple[str, ...]
    """The nodes in the order they ran, START first; END last when the run finished."""
    node_visits: Mapping[str, int]
    """How many times each node ran (an act round counts once)."""
    edge_visits: Mapping[tuple[str, str], int]
    """How many times each edge was taken."""
    status: str
    """The run's status: running, paused, done or failed."""
    tool_calls: int = 0
    """Tool calls act executed, over all rounds."""
    paused_at: str | None = None
    """The node a paused run waits at."""
    paused_for: str = ""
    """What it waits for, in a few words (`thinkgraph.result.waiting_for`): "ask_human",
    "approval: send_email", "breakpoint before judge", …"""
    question: str = ""
    """The question the pause asks a person, when it asks one."""
    stopped_at: str | None = None
    """The node where a finished (or interrupted) run stopped."""
    stop_reason: str | None = None
    """Why it stopped: a `StopReason`, or "interrupted" for a run whose process died."""
    detail: str = ""
    notes: Mapping[str, str] = field(default_factory=dict)
    """Extra words per node for the diagram, e.g. ``{"act": "3 calls"}``."""
    phrase: str = ""
    """Where the run stands, in the words of every view (`thinkgraph.result.status_text`):
    "paused (approval: send_email)", "done", "failed (no_answer)", "stopped (resume to
    continue)"."""


class _Kinds:
    """Node names by kind and kinds by name, from the graph model (our names without one)."""

    def __init__(self, model: nx.DiGraph | None) -> None:
        self.of: dict[str, str] = {}
        self.named: dict[str, str] = {}
        if model is not None:
            for node, kind in model.nodes(data="kind"):
                self.of[node] = str(kind)
                self.named.setdefault(str(kind), node)

    def kind(self, node: str) -> str:
        return self.of.get(node, node)

    def name(self, kind: str) -> str:
        return self.named.get(kind, kind)


def _visits(chain: Sequence[BaseStep], kinds: _Kinds) -> list[tuple[str, list[BaseStep]]]:
    visits: list[tuple[str, list[BaseStep]]] = []
    has_call = False
    for step in chain:
        node = START if step.node == "start" else step.node
        if not node:
            continue
        opens_think = (
            kinds.kind(node) == routes.THINK
            and isinstance(step, LLMCallStep)
            and step.purpose == "think"
        )
        if not visits or visits[-1][0] != node or (opens_think and has_call):
            visits.append((node, []))
            has_call = False
        visits[-1][1].append(step)
        has_call = has_call or opens_think
    return visits


def _accepted_answer(steps: Iterable[BaseStep]) -> bool:
    return any(
        isinstance(s, FinalStep) and s.stop_reason == "final_answer" and not s.forced for s in steps
    )


def _validated_since_think(path: list[str], kinds: _Kinds) -> bool:
    for node in reversed(path):
        if kinds.kind(node) == routes.VALIDATE:
            return True
        if kinds.kind(node) == routes.THINK:
            return False
    return False


def _bridge(model: nx.DiGraph | None, source: str, target: str) -> list[str]:
    """The nodes after `source` up to and including `target` on the model's shortest path."""
    if model is None or model.has_edge(source, target):
        return [target]
    # Only a node that can run without writing a step can be missing from the chain.
    silent = [
        n
        for n, kind in model.nodes(data="kind")
        if n in (source, target) or kind not in _ALWAYS_WRITES
    ]
    try:
        return list(nx.shortest_path(model.subgraph(silent), source, target)[1:])
    except nx.NetworkXNoPath:
        return [target]  # the run went where the graph has no path: draw no edge for it


def _fill_silent(
    visits: list[tuple[str, list[BaseStep]]], model: nx.DiGraph | None, kinds: _Kinds
) -> list[str]:
    path: list[str] = []
    validate = kinds.name(routes.VALIDATE)
    for node, steps in visits:
        if model is not None and node not in model:
            continue  # a step from outside the graph, e.g. a fork's note
        if not path:
            path.append(node)
            continue
        if (
            kinds.kind(node) == routes.FINALIZE
            and _accepted_answer(steps)
            and (model is None or validate in model)
            and not _validated_since_think(path, kinds)
        ):
            # only validate accepts an answer; with no validators it writes no step
            path.extend(_bridge(model, path[-1], validate))
        path.extend(_bridge(model, path[-1], node))
    return path


def _get(entry: Any, key: str) -> Any:
    return entry.get(key) if isinstance(entry, Mapping) else getattr(entry, key, None)


def _gate(model: nx.DiGraph | None) -> str:
    if model is not None:
        for node, approval in model.nodes(data="approval"):
            if approval:
                return str(node)
    return routes.APPROVE


def _pause(
    pending: Sequence[Any], model: nx.DiGraph | None, kinds: _Kinds
) -> tuple[str | None, str, bool]:
    """(node the run waits at, what for in a few words, whether that node has started)."""
    for entry in pending:
        kind = str(_get(entry, "kind") or "")
        node = _get(entry, "node")
        if kind == "approval":
            return _gate(model), waiting_for(pending), True
        if node:
            when = _get(entry, "when") or "before"
            return str(node), waiting_for([entry]), when != "before"
        if kind == "ask_human":
            return kinds.name(routes.ASK_HUMAN), waiting_for([entry]), True
        if kind:
            return kind, kind, True
    return None, "", False


def _question(pending: Sequence[Any]) -> str:
    return next((str(q) for e in pending if (q := _get(e, "question"))), "")


def build_overlay(
    chain: Sequence[BaseStep],
    *,
    status: str,
    stop_reason: str | None = None,
    detail: str = "",
    pending: Sequence[Any] = (),
    model: nx.DiGraph | None = None,
    waiting_at: Sequence[str] = (),
) -> RunOverlay:
    """Compute a run's overlay from its chain and status.

    Args:
        chain: the run's steps, in order.
        status: the run's status (`RunResult.status`).
        stop_reason: why it stopped (`RunResult.stop_reason`).
        detail: more on the stop.
        pending: what a paused run waits for (`RunResult.pending`: dicts with "kind").
        model: the graph model; with it, nodes that wrote no step are filled in.
        waiting_at: the nodes LangGraph will run next (``snapshot.next``), for a run that
            stopped at a static breakpoint or whose process died.

    Returns:
        The overlay the renderers draw.
    """
    kinds = _Kinds(model)
    path = _fill_silent(_visits(chain, kinds), model, kinds)
    # Only calls act ran: a rejected or answered call has a result written by the gate.
    act = kinds.name(routes.ACT)
    tool_calls = sum(isinstance(s, ToolResultStep) and s.node == act for s in chain)
    paused_at, paused_for, started = _pause(pending, model, kinds)
    stopped = False
    if paused_at is None and status in ("running", "paused") and waiting_at:
        paused_at, started = waiting_at[0], False
        paused_for = f"interrupted before {paused_at}; resume to continue"
        status, stopped = "paused", True
    if paused_at is not None and started and (not path or path[-1] != paused_at):
        path.append(paused_at)
    stopped_at = None
    if paused_at is None and path:
        stopped_at = path[-1]
        if status in ("done", "failed") and kinds.kind(stopped_at) == routes.FINALIZE:
            path.append(END)
        elif stop_reason is None and status == "running":
            stop_reason, stopped = "interrupted", True
    visits = Counter(path)
    edges = Counter(pairwise(path))
    notes = {act: f"{tool_calls} call{'s' * (tool_calls != 1)}"} if tool_calls else {}
    said = cast(RunStatus, "running" if stopped else status)
    phrase = status_text(said, cast(StopReason | None, stop_reason), paused_for, stopped=stopped)
    return RunOverlay(
        path=tuple(path),
        node_visits=dict(visits),
        edge_visits=dict(edges),
        status=status,
        tool_calls=tool_calls,
        paused_at=paused_at,
        paused_for=paused_for,
        question=_question(pending),
        stopped_at=stopped_at,
        stop_reason=stop_reason,
        detail=detail,
        notes=notes,
        phrase=phrase,
    )


def overlay_from_result(
    result: Any, model: nx.DiGraph | None = None, waiting_at: Sequence[str] = ()
) -> RunOverlay:
    """`build_overlay` for a `RunResult` (anything with its fields)."""
    return build_overlay(
        result.chain,
        status=result.status,
        stop_reason=result.stop_reason,
        detail=result.detail,
        pending=result.pending,
        model=model,
        waiting_at=waiting_at,
    )


# -- what the renderers write for an overlay ----------------------------------------------


def node_state(overlay: RunOverlay | None, node: str) -> str:
    """ "paused", "stopped" (failed or interrupted), "done", "visited" or ""."""
    if overlay is None:
        return ""
    if node == overlay.paused_at:
        return "paused"
    if node == overlay.stopped_at:
        return "done" if overlay.status == "done" else "stopped"
    return "visited" if overlay.node_visits.get(node) else ""


def node_notes(overlay: RunOverlay | None, node: str, times: str = "×") -> list[str]:
    """Short lines for a node: its visit count, notes, and the pause or stop it holds."""
    if overlay is None:
        return []
    notes = []
    count = overlay.node_visits.get(node, 0)
    if count:
        notes.append(f"{times}{count}")
    if count and node in overlay.notes:
        notes.append(overlay.notes[node])
    if node in (overlay.paused_at, overlay.stopped_at) and overlay.phrase:
        notes.append(overlay.phrase)
    return notes


def edge_count(overlay: RunOverlay | None, source: str, target: str) -> int:
    """How many times the run took the edge (0 without an overlay)."""
    return 0 if overlay is None else overlay.edge_visits.get((source, target), 0)

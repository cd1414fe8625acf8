"""What a run spent in each node of its graph: tokens and cost, from its steps.

A model call's step (``llm_call``) carries the tokens and cost the model reported, and a
tool that calls a model reports that model's usage on its result; `step_metrics` reads
both, as every view does. They are added up by the node the step was recorded in. A cost
no call of the node reported stays unknown (None), never a made-up 0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypedDict

from thinkgraph.state import BaseStep
from thinkgraph.views._run import step_metrics

__all__ = ["NodeUsage", "usage_by_node"]


class NodeUsage(TypedDict):
    """What a run spent in one node."""

    tokens: int
    """Tokens reported (prompt and completion), by the calls that reported them."""
    cost_usd: float | None
    """Cost in USD; None when no call of the node reported one."""
    calls: int
    """The node's steps that carry usage: model calls, and tool results that report it."""


def usage_by_node(chain: Iterable[BaseStep]) -> dict[str, NodeUsage]:
    """The tokens, cost and metered calls of each node of a run's `chain`, in the order the
    nodes first spent (a node that spent nothing is left out)."""
    spent: dict[str, NodeUsage] = {}
    for step in chain:
        metrics: dict[str, Any] = step_metrics(step)
        if "tokens" not in metrics:
            continue
        node = spent.setdefault(str(step.node), {"tokens": 0, "cost_usd": None, "calls": 0})
        node["calls"] += 1
        node["tokens"] += int(metrics["tokens"] or 0)
        if metrics.get("cost_usd") is not None:
            node["cost_usd"] = (node["cost_usd"] or 0.0) + float(metrics["cost_usd"])
    return spent

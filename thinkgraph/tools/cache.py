"""The tool cache: an identical call within a tool's `cache_ttl_s` reuses the earlier result.

The cache is the chain itself, not a dict in memory. A cached result is whatever an
earlier successful `tool_result` step of the same thread says, so the cache survives a
crash and a resume in another process, and every hit is auditable: the new step is marked
`cached=True` and names the step it repeats in `cached_from`.

The lookup runs when the act tasks are created (`route_think`), because act tasks only
receive their call, never the chain. It costs nothing when no tool has a `cache_ttl_s`,
and otherwise walks the chain backwards only as far as the longest TTL reaches.

Two calls are identical when they name the same tool and their arguments are equal after
validation (defaults filled in, types coerced), compared as canonical JSON. Only results
of real runs are reused: a cached step is never the source of another, so an entry
expires `cache_ttl_s` after the tool actually ran.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from thinkgraph.state import (
    BaseStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    new_id,
    running_node,
)
from thinkgraph.tools.base import ToolContext
from thinkgraph.tools.registry import ToolRegistry
from thinkgraph.tools.runner import validate_args

__all__ = ["call_key", "find_cached", "replay_cached"]


def call_key(registry: ToolRegistry, call: ToolCall) -> str | None:
    """The identity of a call for the cache, or None when it cannot be cached.

    None for an unknown tool, a tool without `cache_ttl_s`, or arguments that do not
    validate (such a call fails anyway and must show the model why).
    """
    tool = registry.get(call.name)
    if tool is None or not tool.cache_ttl_s:
        return None
    args = validate_args(tool, call)
    if args is None:
        return None
    try:
        canonical = json.dumps(args.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        return None  # arguments without a JSON form are never considered equal
    return f"{call.name}:{canonical}"


def find_cached(
    registry: ToolRegistry,
    chain: Sequence[BaseStep],
    calls: Sequence[ToolCall],
    *,
    now: datetime | None = None,
) -> dict[str, ToolResultStep]:
    """The earlier results that can answer `calls`, by call id.

    Args:
        registry: the agent's tools; their `cache_ttl_s` say what may be reused.
        chain: the run's chain so far.
        calls: the calls about to run.
        now: the current time (UTC); for tests.

    Returns:
        For each call an identical successful call answered within the tool's TTL, the
        latest such `ToolResultStep`. Calls without a hit are left out.
    """
    ttls = registry.cache_ttls
    if not ttls:
        return {}
    wanted: dict[str, list[str]] = {}
    longest = 0.0
    for call in calls:
        key = call_key(registry, call) if call.name in ttls else None
        if key is not None:
            wanted.setdefault(key, []).append(call.id)
            longest = max(longest, ttls[call.name])
    if not wanted:
        return {}
    now = now or datetime.now(UTC)
    horizon = now - timedelta(seconds=longest)
    fresh: dict[str, ToolResultStep] = {}  # results within their TTL, awaiting their call
    hits: dict[str, ToolResultStep] = {}
    # Walking backwards meets a round's results before the calls that asked for them, and
    # later rounds before earlier ones: the first match for a key is the freshest.
    for step in reversed(chain):
        if step.at < horizon and not fresh:
            break
        if isinstance(step, ToolResultStep):
            ttl = ttls.get(step.tool)
            if ttl and step.ok and not step.cached and step.at >= now - timedelta(seconds=ttl):
                fresh[step.call_id] = step
        elif isinstance(step, ToolCallStep):
            result = fresh.pop(step.call.id, None)
            key = call_key(registry, step.call) if result is not None else None
            if result is not None and key in wanted and key not in hits:
                hits[key] = result
                if len(hits) == len(wanted):
                    break
    return {call_id: result for key, result in hits.items() for call_id in wanted[key]}


def replay_cached(source: ToolResultStep, call: ToolCall, ctx: ToolContext) -> ToolResultStep:
    """The result of `call` served from `source` without running the tool.

    It gets its own id, call id and idempotency key, `attempts=0` (the tool did not run),
    no usage (nothing was spent) and no copy of a child chain (`cached_from` leads to it).
    """
    return source.model_copy(
        update={
            "id": new_id(),
            "number": -1,
            "at": datetime.now(UTC),
            "node": running_node() or "act",
            "call_id": call.id,
            "tool": call.name,
            "cached": True,
            "cached_from": source.id,
            "duration_s": 0.0,
            "attempts": 0,
            "idempotency_key": ctx.idempotency_key,
            "usage": None,
            "child_chain": None,
        }
    )

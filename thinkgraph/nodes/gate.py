"""The approval gate: which calls need a person, and whether each has a recorded decision.

This module is the one home of that decision. think marks the calls of its round
(`calls_needing_approval`, stored as the state's ``needs_approval``); the router into act,
the approve node and the router after approve all ask `waiting_calls`, which judges the
calls from the tools themselves again, so a state written by hand (``update_state``,
Studio's "edit state", an older graph) cannot send a gated call to act without a person's
recorded decision. The state can add a need for approval, never take one away.

Fail closed: a tool's rule that raises, answers anything but a bool, or would see NaN or an
infinity means "needs a person" (`Tool.needs_approval`); so does a call whose arguments
cannot be determined (act would refuse it anyway; a rule is never asked about arguments it
cannot see). A call to a tool that does not exist needs no approval: it cannot run, and act
tells the model so.

A rule is judged once per call in a round: the verdict is kept with the tool itself (a
weak table beside it, not a field of the agent's parts, which a graph builder may copy),
keyed by the call's id, tool and arguments, so an edited call is judged afresh.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from thinkgraph.hitl import Pending, check_approvals
from thinkgraph.nodes.ask_human import parse_human_answer
from thinkgraph.nodes.deps import Deps
from thinkgraph.state import BaseStep, HumanStep, ThoughtStep, ToolCall
from thinkgraph.tools.base import Tool
from thinkgraph.tools.registry import ToolRegistry
from thinkgraph.tools.runner import validate_args

__all__ = [
    "calls_needing_approval",
    "check_answer",
    "decided_calls",
    "needs_person",
    "waiting_calls",
]

_KEPT_VERDICTS = 256
"""How many rule verdicts a tool keeps; more are dropped (and judged again if asked)."""

_VerdictKey = tuple[str, str, str | None, str]
_verdicts: weakref.WeakKeyDictionary[Tool, dict[_VerdictKey, bool]] = weakref.WeakKeyDictionary()
"""What each tool's approval rule said of the calls it was asked about."""
_verdicts_lock = threading.Lock()


def needs_person(deps: Deps, call: ToolCall) -> bool:
    """Whether `call` needs a person's decision before it runs: the agent's rule or the tool's.

    The tool's rule sees exactly the arguments the tool would get: the model's input mapped
    and validated as act does it (bare text to the single str parameter, defaults filled in).
    """
    tool = deps.tools.get(call.name)
    if tool is None:
        return False  # an unknown tool cannot run; act tells the model so
    if isinstance(deps.approve, frozenset) and call.name in deps.approve:
        return True
    if deps.approve == "side_effects" and tool.side_effects:
        return True
    rule = tool.requires_approval
    if isinstance(rule, bool):
        return rule
    key = _verdict_key(call)
    if key is None:
        return _rule_asks(tool, call)
    with _verdicts_lock:
        kept = _verdicts.setdefault(tool, {}).get(key)
    if kept is None:
        kept = _rule_asks(tool, call)
        with _verdicts_lock:
            verdicts = _verdicts.setdefault(tool, {})
            if len(verdicts) >= _KEPT_VERDICTS:
                verdicts.clear()
            verdicts[key] = kept
    return kept


def _rule_asks(tool: Tool, call: ToolCall) -> bool:
    args = validate_args(tool, call)
    return args is None or tool.needs_approval(args.model_dump())


def _verdict_key(call: ToolCall) -> _VerdictKey | None:
    """What a rule's verdict depends on; None (never kept) for arguments JSON cannot write."""
    try:
        args = json.dumps(call.args, sort_keys=True, allow_nan=True)
    except (TypeError, ValueError):
        return None
    return (call.id, call.name, call.raw_args, args)


def calls_needing_approval(deps: Deps, calls: Sequence[ToolCall]) -> list[str]:
    """Ids of the calls that need a person's decision, in the order of `calls`."""
    return [call.id for call in calls if needs_person(deps, call)]


def decided_calls(chain: Sequence[BaseStep]) -> dict[str, str]:
    """The decisions a person recorded in the current round: call id → what they said.

    Scans back only to the round's thought: a round's decisions follow its calls, and a
    decision from an earlier round never clears a call of this one.
    """
    decided: dict[str, str] = {}
    for step in reversed(chain):
        if isinstance(step, ThoughtStep):
            break
        if isinstance(step, HumanStep) and step.call_id is not None:
            decided.setdefault(step.call_id, step.kind)
    return decided


def waiting_calls(
    state: Mapping[str, Any], deps: Deps, only: Collection[str] | None = None
) -> list[str]:
    """Ids of the round's calls that need a person and have no decision recorded.

    A call needs a person when think marked it (``needs_approval``) or when the tools say
    so now; `only` narrows the check to those call ids.

    Args:
        state: the run's state: its ``pending_calls``, ``needs_approval`` and ``chain``.
        deps: the agent's parts (its tools and approval list).
        only: the ids to check; every pending call when None.
    """
    calls = [c for c in state.get("pending_calls") or [] if only is None or c.id in only]
    if not calls:
        return []
    marked = set(state.get("needs_approval") or [])
    needed = [c.id for c in calls if c.id in marked or needs_person(deps, c)]
    if not needed:
        return []
    decided = decided_calls(state.get("chain") or [])
    return [call_id for call_id in needed if call_id not in decided]


def check_answer(waiting: Any, answer: Any, tools: ToolRegistry) -> Any:
    """A person's answer to a pause, checked as the paused node will check it; or refused.

    For a door that hands the answer on (a worker queue, HTTP) and wants a bad one refused
    where it was given: the same rules as the approval gate's interrupt (one decision per
    waiting call, edits against the tool's schema) and ask_human's.

    Args:
        waiting: what the pause carries (the interrupt's value).
        answer: the person's answer.
        tools: the run's tools, for checking edited arguments.

    Returns:
        The answer as the paused node will take it (approvals in stored form).

    Raises:
        ResumeValueError: the answer would be refused; the run stays as it is.
    """
    if isinstance(waiting, Mapping) and waiting.get("kind") == "approval":
        requests = [Pending.model_validate(r) for r in waiting.get("requests", [])]
        return check_approvals(requests, answer, tools)
    parse_human_answer(answer)
    return answer

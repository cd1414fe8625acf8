"""What a model call was sent, recorded compactly: its place in the graph and its messages.

`ask_model` records each request on its `llm_call` step as a `SentRequest`, coded against
the previous call of the same node and purpose (its `base`): messages that call sent too
are stored as ranges of its messages, new ones whole. A run's record of requests therefore
grows with what each call adds (a reply and an observation per cycle), not with the prompt,
which grows with the run.

Coding a request needs the base's messages. The last ones coded are kept in memory (a
small cache by step id), so a running agent never rebuilds them; after a restart they are
rebuilt once from the chain, following the bases back to a request stored whole.

A call's position (node, visit, call) is what a replay serves a reply by: `visit` counts
the visits of the node that asked the model, `call` the calls within one visit (a node's
execution is told apart by the task LangGraph runs it as).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from operator import itemgetter
from typing import Any

from langchain_core.runnables.config import var_child_runnable_config

from thinkgraph.llm.base import CallPosition, Message
from thinkgraph.state import BaseStep, LLMCallStep, SentRequest

__all__ = ["call_position", "coded_request", "remember", "request_digest", "sent_messages"]

_CACHED_REQUESTS = 128
"""Requests whose messages are kept in memory to code the next call against."""

_Keyed = list[tuple[str, Message]]
"""A request's messages, each with its hash (two messages with one hash are the same)."""

_cache: OrderedDict[str, _Keyed] = OrderedDict()
_lock = threading.Lock()

_VISIT: ContextVar[tuple[str, CallPosition] | None] = ContextVar(
    "thinkgraph_model_visit", default=None
)
"""The execution (LangGraph task) that asked last, and the position of its last call."""


def _hash(value: Any) -> str:
    """A hash of a message (or the tool schemas): of its canonical JSON, 16 hex digits."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _digest(hashes: Sequence[str], tools_hash: str) -> str:
    return hashlib.sha256(f"{'.'.join(hashes)}|{tools_hash}".encode()).hexdigest()[:16]


def request_digest(messages: Sequence[Message], tools_digest: str) -> str:
    """The digest of a request of `messages` with tools `tools_digest`, as `coded_request`
    records it (`SentRequest.digest`): a replay that sends the same is the same request.

    For a record whose messages were changed after the call (masked): its digest computed
    again from what it holds now.
    """
    return _digest([_hash(message) for message in messages], tools_digest)


def _execution() -> str:
    """The LangGraph task running now ("" outside a graph): one visit of one node."""
    config = var_child_runnable_config.get() or {}
    found = (config.get("metadata") or {}).get("langgraph_checkpoint_ns")
    return found if isinstance(found, str) else ""


def _earlier(chain: Sequence[BaseStep], node: str, purpose: str) -> tuple[int, LLMCallStep | None]:
    """The last visit of `node` that asked the model, and its last call for `purpose`.

    Walks the chain backwards only until both are found: for think, a few steps.
    """
    visit = 0
    base: LLMCallStep | None = None
    for step in reversed(chain):
        if not isinstance(step, LLMCallStep) or step.node != node or step.request is None:
            continue
        visit = visit or step.request.visit
        if step.purpose == purpose:
            base = step
            break
    return visit, base


def call_position(chain: Sequence[BaseStep], node: str, purpose: str) -> CallPosition:
    """Where the call `node` is about to make sits in the graph: (node, visit, call)."""
    execution = _execution()
    held = _VISIT.get()
    if execution and held is not None and held[0] == execution and held[1].node == node:
        position = held[1]._replace(call=held[1].call + 1)
    else:
        visit, _ = _earlier(chain, node, purpose)
        position = CallPosition(node, visit + 1, 1)
    _VISIT.set((execution, position))
    return position


_KEY = itemgetter(0)
_MESSAGE = itemgetter(1)


def coded_request(
    chain: Sequence[BaseStep],
    position: CallPosition,
    purpose: str,
    messages: Sequence[Message],
    tools: list[dict[str, Any]] | None,
) -> tuple[SentRequest, _Keyed]:
    """The record of a request, coded against the previous call of its node and purpose.

    A message the base sent too is found by comparing it with the base's next message (a
    prompt mostly grows at its end), so only new messages are hashed: a call costs what it
    adds, not the whole prompt again.

    Returns the record and the messages with their hashes, for `remember` once the step
    exists.
    """
    tools_digest = _hash(tools) if tools else ""
    _, base = _earlier(chain, position.node, purpose)
    base_keyed = None if base is None else _keyed_of(chain, base)
    keyed, parts = _coded(base_keyed or [], messages)
    fields: dict[str, Any] = {
        "digest": _digest(list(map(_KEY, keyed)), tools_digest),
        "visit": position.visit,
        "call": position.call,
        "tools_digest": tools_digest,
    }
    if base is None or base_keyed is None:
        fields["messages"] = [message for _, message in keyed]
        fields["tools"] = tools or None
    else:
        assert base.request is not None
        fields["base"] = base.number
        fields["messages"] = parts
        if tools_digest != base.request.tools_digest:
            fields["tools"] = tools or None
    return SentRequest(**fields), keyed


def remember(step: LLMCallStep, keyed: _Keyed) -> None:
    """Keep a recorded request's messages in memory, to code the next call against."""
    with _lock:
        _cache[step.id] = keyed
        _cache.move_to_end(step.id)
        while len(_cache) > _CACHED_REQUESTS:
            _cache.popitem(last=False)


def _coded(base: _Keyed, messages: Sequence[Message]) -> tuple[_Keyed, list[Message | list[int]]]:
    """`messages` with their hashes, and as ranges of `base`'s messages where it repeats
    them and new messages where it does not."""
    # A prompt mostly grows at its end: find the base repeated whole (or but its last
    # message) at the start in one C-level comparison, so a long run's call costs what it
    # adds, not a Python step per message it repeats.
    sent = list(map(_MESSAGE, base))
    start = 0
    for length in (len(sent), len(sent) - 1):
        if 0 < length <= len(messages) and sent[:length] == list(messages[:length]):
            start = length
            break
    keyed: _Keyed = base[:start]
    parts: list[Message | list[int]] = [[0, start]] if start else []
    following = start  # the base message that follows the last one repeated
    # After the whole base, a message is new: storing it whole (not as a range of an
    # earlier equal one) saves indexing the base on every call.
    where: dict[str, int] | None = {} if start and start == len(base) else None
    for message in messages[start:]:
        last = parts[-1] if parts else None
        if following < len(base) and base[following][1] == message:
            keyed.append(base[following])
            if isinstance(last, list) and last[1] == following:
                last[1] += 1
            else:
                parts.append([following, following + 1])
            following += 1
            continue
        key = _hash(message)
        keyed.append((key, message))
        if where is None:
            where = {}
            for index, (known, _) in enumerate(base):
                where.setdefault(known, index)
        found = where.get(key)
        if found is None:
            parts.append(message)
        else:
            parts.append([found, found + 1])
            following = found + 1
    return keyed, parts


def _at(chain: Sequence[BaseStep], number: int) -> LLMCallStep | None:
    step = chain[number] if 0 <= number < len(chain) else None
    if step is None or step.number != number:
        step = next((s for s in chain if s.number == number), None)
    return step if isinstance(step, LLMCallStep) and step.request is not None else None


def _keyed_of(chain: Sequence[BaseStep], step: LLMCallStep) -> _Keyed | None:
    """The messages `step` recorded sending, from memory or rebuilt from the chain."""
    with _lock:
        held = _cache.get(step.id)
    if held is not None:
        return held
    # Follow the bases back to a request stored whole, then apply the codes forward.
    trail: list[LLMCallStep] = []
    current: LLMCallStep | None = step
    while current is not None and current.request is not None:
        with _lock:
            held = _cache.get(current.id)
        if held is not None:
            break
        trail.append(current)
        base = current.request.base
        if base is None:
            break
        current = _at(chain, base)
        if current is None:
            return None  # the base is not in this chain (pruned): cannot rebuild
    keyed = held
    for recorded in reversed(trail):
        assert recorded.request is not None
        keyed = _decoded(recorded.request, keyed)
        if keyed is None:
            return None
    if keyed is not None:
        remember(step, keyed)
    return keyed


def _decoded(request: SentRequest, base: _Keyed | None) -> _Keyed | None:
    keyed: _Keyed = []
    for part in request.messages:
        if isinstance(part, Mapping):
            keyed.append((_hash(part), dict(part)))
        elif base is None or part[1] > len(base):
            return None
        else:
            keyed.extend(base[part[0] : part[1]])
    return keyed


def sent_messages(chain: Sequence[BaseStep], step: LLMCallStep) -> list[Message] | None:
    """The messages `step`'s call was sent, rebuilt from its record in `chain`.

    None when the step records no request, or its base is no longer in the chain.
    """
    keyed = _keyed_of(chain, step) if step.request is not None else None
    return None if keyed is None else [dict(message) for _, message in keyed]

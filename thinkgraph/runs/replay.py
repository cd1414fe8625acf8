"""Replay a recorded run on today's graph, policy and tools, without the model or the tools.

`areplay` runs a stored run's task again into a new thread (``replay-<id>``), on the graph
and policy the agent has now, and serves everything the run recorded by its place in the
graph, never by the exact request:

- each model call gets the reply the recorded run got at the same position: the same
  node, visit of that node and call of that visit (`thinkgraph.llm.ReplayModel`);
- each tool call gets the recorded result of the call that think step proposed with the
  same tool and arguments; the tool does not run (`Deps.recorded`, served by act);
- each pause is answered with the recorded decision: approve, edit, reject or respond
  for the same call, the recorded answer for the same ask_human pause.

The replay is then compared with its source (`thinkgraph.views.diff.diff_runs`, as
`thinkgraph diff` does), and the report says `same`; `request changed` (the same path, but
a model was sent something else: a prompt edit, shown as a text diff); `changed` (the
same decisions, other content); or the **first divergence**: route, tool, args or answer.

At a divergence the replay stops: the record has nothing more that fits. With
`live_from_divergence` it goes on with the real model, at most `max_calls` calls, and the
real tools; a call that needs approval pauses the replay there, unanswered.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal, TypeAlias

from thinkgraph.errors import ConfigError, ThreadExistsError
from thinkgraph.hitl import Approve, Edit, Reject, Respond
from thinkgraph.llm.base import ChatModel, Message
from thinkgraph.llm.replay import ReplayModel, position_of
from thinkgraph.nodes._requests import sent_messages
from thinkgraph.result import RunResult
from thinkgraph.runs.driver import Driver
from thinkgraph.runs.events import RunEnd, RunEvent, StepEvent
from thinkgraph.state import (
    BaseStep,
    HumanStep,
    LLMCallStep,
    TaskStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    new_id,
    running_node,
)
from thinkgraph.tools.base import Tool, ToolContext
from thinkgraph.views.diff import RunDiff, diff_runs, node_visits
from thinkgraph.views.redact import Redactor
from thinkgraph.views.visibility import tool_map

__all__ = ["REPLAY_PREFIX", "ReplayOutcome", "ReplayReport", "RequestChange", "areplay"]

REPLAY_PREFIX = "replay-"
"""A replay's thread id is its source's with this prefix, unless one is given."""

ReplayOutcome: TypeAlias = Literal["same", "request changed", "changed", "diverged"]


@dataclass(frozen=True, slots=True)
class RequestChange:
    """A model call at the same position that was sent something else."""

    where: str
    """The call's position, e.g. ``think#2``."""
    step_source: int
    """The source's ``llm_call`` step."""
    step_replay: int
    """The replay's ``llm_call`` step."""
    diff: str
    """A unified diff of the prompt as text ("" when only the tool schemas changed)."""
    tools_changed: bool = False
    """Whether the tool schemas sent changed."""


@dataclass(frozen=True)
class ReplayReport:
    """What a replay found (see the module docstring)."""

    source: RunResult
    replay: RunResult
    diff: RunDiff
    """The replay against its source, step by step (`thinkgraph diff SOURCE REPLAY`)."""
    requests: tuple[RequestChange, ...] = ()
    """The calls that were sent something else, in order."""
    served_replies: int = 0
    served_results: int = 0
    served_decisions: int = 0
    model_calls: int = 0
    """Real model calls (only when live from the divergence)."""
    tool_runs: int = 0
    """Real tool runs (only when live from the divergence)."""
    stopped: str = ""
    """Why the replay stopped before the run's end ("" when it did not)."""
    strict: bool = False
    """Whether a changed request (or content) fails the replay."""
    live: bool = False
    """Whether the replay went on live after the divergence."""
    calls: tuple[str, ...] = field(default=())
    """The tools the source run called."""

    @property
    def outcome(self) -> ReplayOutcome:
        """same, request changed, changed (content only) or diverged."""
        if self.diff.divergence is not None:
            return "diverged"
        if self.requests:
            return "request changed"
        return "same" if self.diff.same else "changed"

    @property
    def exit_code(self) -> int:
        """0 same (or a changed request or content, unless strict); 1 otherwise."""
        if self.outcome == "diverged":
            return 1
        return 1 if self.strict and self.outcome != "same" else 0

    def headline(self) -> str:
        """The verdict in one line."""
        if self.outcome == "diverged":
            return self.diff.describe()
        if self.outcome == "request changed":
            first = self.requests[0]
            more = len(self.requests) - 1
            return f"request changed at {first.where}" + (
                f" (and {more} more call{'s' * (more != 1)})" if more else ""
            )
        if self.outcome == "changed":
            return self.diff.describe()
        return "same"

    def to_text(self) -> str:
        """The report as the CLI prints it."""
        lines = [f"replay {self.replay.thread_id} of {self.source.thread_id}: {self.headline()}"]
        if self.outcome == "request changed":
            first = self.requests[0]
            if first.tools_changed:
                lines.append("  the tool schemas sent changed")
            if first.diff:
                lines.append(first.diff.rstrip("\n"))
        lines.append(
            f"served {_count(self.served_replies, 'model reply', 'model replies')}, "
            f"{_count(self.served_results, 'tool result')}, "
            f"{_count(self.served_decisions, 'decision')}; made "
            f"{_count(self.model_calls, 'model call')}, {_count(self.tool_runs, 'tool run')}"
        )
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (``thinkgraph replay --json``)."""
        divergence = self.diff.divergence
        return {
            "format": "thinkgraph.replay/1",
            "source": self.source.thread_id,
            "replay": self.replay.thread_id,
            "outcome": self.outcome,
            "exit_code": self.exit_code,
            "headline": self.headline(),
            "divergence": None
            if divergence is None
            else {
                "kind": divergence.kind,
                "where": divergence.where,
                "step_source": divergence.step_a,
                "step_replay": divergence.step_b,
                "source": divergence.a,
                "replay": divergence.b,
                "changes": [
                    {"path": c.path, "source": c.a, "replay": c.b} for c in divergence.changes
                ],
            },
            "requests": [
                {
                    "where": r.where,
                    "step_source": r.step_source,
                    "step_replay": r.step_replay,
                    "diff": r.diff,
                    "tools_changed": r.tools_changed,
                }
                for r in self.requests
            ],
            "served": {
                "model_replies": self.served_replies,
                "tool_results": self.served_results,
                "decisions": self.served_decisions,
            },
            "model_calls": self.model_calls,
            "tool_runs": self.tool_runs,
            "stopped": self.stopped or None,
            "live": self.live,
        }


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n} {one if n == 1 else (many or one + 's')}"


# -- what the source recorded ----------------------------------------------------------------


def _args_key(args: dict[str, Any] | None, raw: str | None) -> str:
    if args is None:
        return f"raw:{raw}"
    return json.dumps(args, sort_keys=True, ensure_ascii=False, default=repr)


_CallKey = tuple[int, str, str]
"""A call's place: the think step that proposed it, its tool, its arguments."""


class _Record:
    """The source run's tool results and decisions, by the calls' places."""

    def __init__(self, chain: Sequence[BaseStep]) -> None:
        calls: dict[str, ToolCallStep] = {}
        decided: dict[str, HumanStep] = {}
        results: dict[str, ToolResultStep] = {}
        self.answers: list[HumanStep] = []
        for step in chain:
            if isinstance(step, ToolCallStep):
                calls[step.call.id] = step
            elif isinstance(step, HumanStep) and step.call_id is not None:
                decided.setdefault(step.call_id, step)
            elif isinstance(step, HumanStep) and step.kind in ("retry", "guidance", "abort"):
                self.answers.append(step)
            elif isinstance(step, ToolResultStep) and step.call_id not in results:
                results[step.call_id] = step
        self.results: dict[_CallKey, list[ToolResultStep]] = {}
        self.decisions: dict[_CallKey, list[HumanStep]] = {}
        self.called: list[str] = []
        self.proposed: set[_CallKey] = set()
        for call_id, proposed in calls.items():
            call = proposed.call
            self.called.append(call.name)
            key = (proposed.think_step, call.name, _args_key(call.args, call.raw_args))
            self.proposed.add(key)
            decision = decided.get(call_id)
            if decision is not None:
                self.decisions.setdefault(key, []).append(decision)
            run_key = key
            if decision is not None and decision.kind == "edit":
                edited = json.loads(decision.text) if decision.text else {}
                run_key = (proposed.think_step, call.name, _args_key(edited, None))
            result = results.get(call_id)
            if result is not None and (decision is None or decision.kind in ("approve", "edit")):
                self.results.setdefault(run_key, []).append(result)


def _decision(step: HumanStep) -> Approve | Edit | Reject | Respond:
    if step.kind == "edit":
        return Edit(args=json.loads(step.text) if step.text else {})
    if step.kind == "reject":
        return Reject(reason=step.text or "rejected by a person")
    if step.kind == "respond":
        return Respond(text=step.text)
    return Approve()


class _Path:
    """The replay's node visits as its steps come, held against the source's.

    Visits are cut as `thinkgraph.views.diff.node_visits` cuts them (consecutive steps of a
    node, each think call a new visit), so the replay stops where the diff will see the
    route part.
    """

    def __init__(self, source: Sequence[BaseStep]) -> None:
        self.source = node_visits(source)
        self.count = 0
        self.node = ""
        self.has_call = False

    def parted(self, step: BaseStep) -> str:
        """Where the replay's path leaves the source's at `step` ("" while it does not)."""
        if not step.node:
            return ""
        opens = isinstance(step, LLMCallStep) and step.purpose == "think"
        parted = ""
        if step.node != self.node or (opens and self.has_call):
            self.count += 1
            self.node, self.has_call = step.node, False
            expected = self.source[self.count - 1] if self.count <= len(self.source) else None
            if expected != step.node:
                parted = (
                    f"the replay went to {step.node} where the run went to {expected or 'its end'}"
                )
        self.has_call = self.has_call or opens
        return parted


class _Session:
    """One replay in progress: what it served, whether it went live, why it stopped."""

    def __init__(self, source: RunResult, model: ReplayModel, live_allowed: bool) -> None:
        self.record = _Record(source.chain)
        self.path = _Path(source.chain)
        self.model = model
        self.live_allowed = live_allowed
        self.live = False
        self.diverged = ""
        self.served_results = 0
        self.served_decisions = 0
        self.tool_runs = 0
        self.answers = list(self.record.answers)
        model.on_miss = self.miss

    def miss(self, what: str) -> None:
        """The record has nothing for this: the replay diverged here."""
        self.diverged = self.diverged or what
        if self.live_allowed and not self.live:
            self.live = True
            self.model.go_live()

    def serve(self, call: ToolCall, think_step: int, ctx: ToolContext) -> ToolResultStep | None:
        """The recorded result of `call`, or None when live (the tool runs)."""
        if not self.live:
            queue = self.record.results.get(
                (think_step, call.name, _args_key(call.args, call.raw_args))
            )
            if queue:
                self.served_results += 1
                return _served(queue.pop(0), call, ctx)
            self.miss(f"a call of {call.name} at think step {think_step}")
        if self.live:
            self.tool_runs += 1
            return None
        return ToolResultStep(
            call_id=call.id,
            tool=call.name,
            ok=False,
            error="not run: the recorded run made no such call here (replay)",
            error_kind="rejected",
            attempts=0,
            idempotency_key=ctx.idempotency_key,
        )

    def check(self, step: BaseStep) -> None:
        """A route or a tool call the record does not have is a divergence: seen as the
        step comes, before the next node runs."""
        parted = self.path.parted(step)
        if parted:
            self.miss(parted)
        if isinstance(step, ToolCallStep):
            call = step.call
            key = (step.think_step, call.name, _args_key(call.args, call.raw_args))
            if key not in self.record.proposed:
                self.miss(f"{call.name} called at think step {step.think_step}")

    def answer(self, pending: Sequence[Any]) -> Any:
        """The recorded answer to a pause, or None when there is none (or the replay is live)."""
        if self.live:
            return None
        kinds = {p.kind for p in pending}
        if kinds == {"breakpoint"}:
            return {}
        if "ask_human" in kinds:
            if not self.answers:
                self.miss("an ask_human pause")
                return None
            self.served_decisions += 1
            step = self.answers.pop(0)
            return step.text if step.kind == "guidance" else step.kind
        decisions: dict[str, Any] = {}
        for item in pending:
            if item.kind != "approval" or item.call_id is None:
                continue
            key = (item.step, item.tool or "", _args_key(item.args, item.raw_args))
            queue = self.record.decisions.get(key)
            if not queue:
                self.miss(f"the approval of {item.tool} at think step {item.step}")
                return None
            decisions[item.call_id] = _decision(queue.pop(0))
        self.served_decisions += len(decisions)
        return decisions


def _served(recorded: ToolResultStep, call: ToolCall, ctx: ToolContext) -> ToolResultStep:
    """The recorded result, as this replay's step for `call`."""
    return recorded.model_copy(
        update={
            "id": new_id(),
            "number": -1,
            "at": datetime.now(UTC),
            "node": running_node() or recorded.node,
            "call_id": call.id,
            "idempotency_key": ctx.idempotency_key,
        }
    )


# -- comparing requests -------------------------------------------------------------------------


def _as_text(messages: Sequence[Message]) -> list[str]:
    lines: list[str] = []
    for message in messages:
        lines.append(f"[{message.get('role', '?')}]")
        content = message.get("content")
        text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
        lines.extend(text.splitlines() or [""])
    return lines


def request_changes(
    source: Sequence[BaseStep],
    replay: Sequence[BaseStep],
    names: tuple[str, str],
    tools: Sequence[Tool] = (),
) -> tuple[RequestChange, ...]:
    """The model calls made at the same position that were sent something else.

    The prompts' diffs are masked as the views mask a run (`Redactor`): a prompt repeats
    the model's calls, secret arguments included.
    """
    redactor = Redactor([*source, *replay], tool_map(tools), mask_unknown=True)
    recorded = {
        position_of(s): s for s in source if isinstance(s, LLMCallStep) and s.request is not None
    }
    found: list[RequestChange] = []
    for step in replay:
        if not isinstance(step, LLMCallStep) or step.request is None:
            continue
        where = position_of(step)
        before = recorded.get(where)
        if before is None or before.request is None or before.request.digest == step.request.digest:
            continue
        old, new = sent_messages(source, before), sent_messages(replay, step)
        text = ""
        if old is not None and new is not None and old != new:
            text = "".join(
                line + "\n"
                for line in difflib.unified_diff(
                    _as_text(old),
                    _as_text(new),
                    f"{names[0]} {where}",
                    f"{names[1]} {where}",
                    n=1,
                    lineterm="",
                )
            )
        changed = before.request.tools_digest != step.request.tools_digest
        found.append(
            RequestChange(str(where), before.number, step.number, redactor.text(text), changed)
        )
    return tuple(found)


# -- running it -----------------------------------------------------------------------------------


async def _follow(
    events: AsyncIterator[RunEvent], session: _Session
) -> tuple[RunResult | None, bool]:
    """Consume a run's events; stop at a divergence unless live. (result, stopped early)."""
    try:
        async for event in events:
            if isinstance(event, StepEvent):
                session.check(event.step)
            if isinstance(event, RunEnd):
                return event.result, False
            if session.diverged and not session.live:
                return None, True
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    return None, True


async def areplay(
    source_driver: Driver,
    make_driver: Callable[[ChatModel], Driver],
    thread_id: str,
    *,
    new_thread_id: str | None = None,
    strict: bool = False,
    live_from_divergence: bool = False,
    max_calls: int = 0,
    live_model: ChatModel | None = None,
) -> ReplayReport:
    """Replay the run `thread_id` (see the module docstring) and compare it with its source.

    Args:
        source_driver: the driver of the store that holds the run.
        make_driver: the agent's driver on the same store with another model: the replay's.
        thread_id: the run to replay.
        new_thread_id: the replay's thread (``replay-<thread_id>`` when left out).
        strict: a changed request or content fails the replay (`ReplayReport.exit_code`).
        live_from_divergence: go on past the divergence with the real model and tools.
        max_calls: at most this many real model calls after the divergence.
        live_model: the real model (the agent's).

    Raises:
        ThreadNotFoundError: no run under `thread_id`.
        ThreadExistsError: the replay's thread already holds a run: pass another one.
        ConfigError: `live_from_divergence` without `max_calls`.
    """
    target = new_thread_id or f"{REPLAY_PREFIX}{thread_id}"
    if await source_driver.store.ahas_thread(target):
        raise ThreadExistsError(
            f"thread {target!r} already holds a run (an earlier replay?); give the replay "
            "another thread: new_thread_id=... (--thread on the command line)"
        )
    if live_from_divergence and max_calls <= 0:
        raise ConfigError("live_from_divergence needs max_calls above 0: the real calls allowed")
    source = await source_driver.reader.aresult(thread_id)
    task = next((s for s in source.chain if isinstance(s, TaskStep)), None)
    if task is None:
        raise ConfigError(f"run {thread_id!r} has no task step to replay")
    model = ReplayModel(
        source.chain,
        live=live_model if live_from_divergence else None,
        max_live_calls=max_calls if live_from_divergence else 0,
    )
    session = _Session(source, model, live_from_divergence)
    driver = make_driver(model)
    driver.deps.recorded.serve = session.serve
    result, stopped = await _follow(driver.start(task.text, target, replay_of=thread_id), session)
    while result is not None and result.status == "paused":
        answer = session.answer(result.pending)
        if answer is None:
            break
        events = driver.resume(target, answer or None, replaying=True)
        result, stopped = await _follow(events, session)
    replay = await driver.reader.aresult(target)
    why = ""
    if stopped:
        why = f"at the first divergence ({session.diverged}); thread {target} holds the replay"
    elif replay.status == "paused":
        why = "paused for a person: a live replay never answers for one"
    elif model.refused:
        why = f"after {max_calls} real model calls (max_calls)"
    names = (source.thread_id, replay.thread_id)
    tools = list(driver.deps.tools)
    return ReplayReport(
        source=source,
        replay=replay,
        diff=diff_runs(source.chain, replay.chain, a=source, b=replay, tools=tools),
        requests=request_changes(source.chain, replay.chain, names, tools),
        served_replies=model.served,
        served_results=session.served_results,
        served_decisions=session.served_decisions,
        model_calls=model.live_calls,
        tool_runs=session.tool_runs,
        stopped=why,
        strict=strict,
        live=session.live,
        calls=tuple(dict.fromkeys(session.record.called)),
    )

"""Replay a recorded run on today's graph, policy and tools, without the model or the tools.

`areplay` runs a stored run's task again into a new thread (``replay-<id>``), on the graph
and policy the agent has now, and serves everything the run recorded by its place in the
graph, never by the exact request:

- each model call gets the reply the recorded run got at the same position: the same
  node, visit of that node and call of that visit (`thinkgraph.llm.ReplayModel`);
- each tool call gets the recorded result of the call that think step proposed with the
  same tool and arguments; the tool does not run (the session, the run's tool guard);
- each pause is answered with the recorded decision: approve, edit, reject or respond
  for the same call, the recorded answer for the same ask_human pause.

The replay is then compared with its source (`thinkgraph.views.diff.diff_runs`, as
`thinkgraph diff` does), and the report says `same`; `request changed` (the same path, but
a model was sent something else: a prompt edit, shown as a text diff); `changed` (the
same decisions, other content); or the **first divergence**: route, tool, args, answer or
state. For a graph with state of its own (keys beyond `AgentState`), the replay's keys are
compared with the source's at each node, from both runs' checkpoints: the first node visit
after which they differ is a `state` divergence, naming the node, the keys and both values
(masked).

At a route, tool, args or answer divergence the replay stops: the record has nothing more
that fits. A state divergence does not stop it: the record still serves every reply and
result by its place, and it is found once the replay has ended. With
`live_from_divergence` it goes on with the real model, at most `max_calls` requests sent
(retries included), and the real tools; a call that needs approval pauses the replay
there, unanswered.

Whether a tool call is served, refused or run is decided by the replay's session, which is
the run's tool guard (`thinkgraph.tools.guard`): every tool execution asks it, through act
or not, whatever parts the graph's builder gave its nodes; the report counts what it did.
A call that needs approval never runs in a replay: one whose approval the run recorded
without a result (the run died inside the tool) stops the replay there. A replay runs with
its source's stored limits, and its thread records its outcome once compared
(`RunInfo.replay`), so listings show it as a replay and prune treats it as finished. One
that recorded none (its process died) is finished too, as a replay that stopped
(`thinkgraph.runs.reader.status_of`); until then the replay holds its thread's lease.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from thinkgraph.errors import ConfigError, ThreadExistsError
from thinkgraph.graphs.builder import built_graph
from thinkgraph.hitl import Approve, Edit, Reject, Respond
from thinkgraph.llm.base import ChatModel, Message
from thinkgraph.llm.replay import ReplayModel, position_of
from thinkgraph.nodes._requests import sent_messages
from thinkgraph.nodes.deps import Deps
from thinkgraph.nodes.gate import needs_person
from thinkgraph.result import RunResult
from thinkgraph.runs.driver import Driver, open_driver
from thinkgraph.runs.events import NodeStart, RunEnd, RunEvent, StepEvent
from thinkgraph.runs.reader import CheckpointInfo
from thinkgraph.state import (
    BaseStep,
    HumanStep,
    LLMCallStep,
    RunInfo,
    TaskStep,
    ToolCall,
    ToolCallStep,
    ToolResultStep,
    new_id,
    running_node,
)
from thinkgraph.storage.contract import Store
from thinkgraph.tools.base import Tool, ToolContext
from thinkgraph.tools.registry import ToolRegistry
from thinkgraph.types import StepLimits
from thinkgraph.views._run import shown_state
from thinkgraph.views.diff import RunDiff, RunDivergence, diff_runs, visit_starts
from thinkgraph.views.diff_render import change_line
from thinkgraph.views.redact import Redactor
from thinkgraph.views.visibility import tool_map

if TYPE_CHECKING:
    from thinkgraph.agent import Agent

__all__ = [
    "REPLAY_PREFIX",
    "ReplayOutcome",
    "ReplayReport",
    "RequestChange",
    "areplay",
    "fresh_replay_thread",
]

REPLAY_PREFIX = "replay-"
"""A replay's thread id is its source's with this prefix (and ``-2``, ``-3``, ... when taken),
unless one is given."""

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
    requests_sent: int = 0
    """The requests those calls sent, retries included: what `max_calls` caps."""
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
        divergence = self.diff.divergence
        if divergence is not None:  # each field that differs, as `thinkgraph diff` lists them
            lines += [f"  {change_line(change)}" for change in divergence.changes]
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
            f"{_count(self.model_calls, 'model call')}"
            + (
                f" ({_count(self.requests_sent, 'request')})"
                if self.requests_sent != self.model_calls
                else ""
            )
            + f", {_count(self.tool_runs, 'tool run')}"
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
            "requests_sent": self.requests_sent,
            "tool_runs": self.tool_runs,
            "stopped": self.stopped or None,
            "live": self.live,
            "state": [{"path": c.path, "source": c.a, "replay": c.b} for c in self.diff.state],
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
        self.unfinished: set[_CallKey] = set()
        """Calls a person let run that have no result: the run stopped inside the tool."""
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
            let_run = decision is None or decision.kind in ("approve", "edit")
            if result is not None and let_run:
                self.results.setdefault(run_key, []).append(result)
            elif result is None and decision is not None and let_run:
                self.unfinished.add(run_key)


def _decision(step: HumanStep) -> Approve | Edit | Reject | Respond:
    if step.kind == "edit":
        return Edit(args=json.loads(step.text) if step.text else {})
    if step.kind == "reject":
        return Reject(reason=step.text or "rejected by a person")
    if step.kind == "respond":
        return Respond(text=step.text)
    return Approve()


class _Path:
    """The replay's node visits, held against the source's as each node is about to run.

    A node's start (the driver's `NodeStart`, which comes before the node runs) is checked
    against the source's next visit, so a changed route is reported at the route, before the
    other node runs. The source's visits are those its steps name (`visit_starts`); a node
    they never name (one that writes no step) is let through, and its steps, should it
    write any, part the paths then.
    """

    def __init__(self, source: Sequence[BaseStep]) -> None:
        self.visits = visit_starts(source)
        self.known = {node for node, _ in self.visits}
        self.count = 0
        """The source's visits the replay has made."""
        self.node = ""
        """The node of the replay's current visit."""
        self.fresh = False
        """Whether the current visit has written no step yet (a sibling task of it, or the
        node resumed after a pause, is the same visit)."""
        self.route: RunDivergence | None = None
        """Where the replay's route left the source's, once it did."""

    def _expected(self) -> str | None:
        return self.visits[self.count][0] if self.count < len(self.visits) else None

    def _enter(self, node: str, fresh: bool) -> None:
        self.count += 1
        self.node, self.fresh = node, fresh

    def start(self, node: str) -> str:
        """`node` is about to run: where the replay leaves the source's path ("" if not)."""
        if self.route is not None or (node == self.node and self.fresh):
            return ""
        if node == self._expected():
            self._enter(node, True)
            return ""
        if node not in self.known:
            return ""
        return self._parted(node)

    def step(self, step: BaseStep) -> str:
        """A step was written: where the replay left the source's path ("" if it did not)."""
        if self.route is not None or not step.node:
            return ""
        if step.node == self.node:
            self.fresh = False
            return ""
        if step.node == self._expected():
            self._enter(step.node, False)
            return ""
        return self._parted(step.node)

    def _parted(self, node: str) -> str:
        expected = self._expected()
        came = self.visits[: self.count]
        at = came[-1][0] if came else "start"
        visit = max(1, sum(name == at for name, _ in came))
        step = self.visits[self.count][1] if expected is not None else None
        self.route = RunDivergence(
            "route", at, visit, step, None, expected or "nothing (the run ends)", node
        )
        return f"the replay went to {node} where the run went to {expected or 'its end'}"


class _Session:
    """One replay in progress: what it served, refused and ran, whether it went live, why it
    stopped. It is the replay's tool guard (`thinkgraph.tools.guard`): every tool call of
    the replay, on act's path or any other, is decided here, and counted here."""

    def __init__(
        self, source: RunResult, model: ReplayModel, live_allowed: bool, deps: Deps
    ) -> None:
        self.record = _Record(source.chain)
        self.path = _Path(source.chain)
        self.model = model
        self.deps = deps
        self.live_allowed = live_allowed
        self.live = False
        self.diverged = ""
        self.halted = ""
        """Why the replay must stop now, whatever else it may do (a call it will not run)."""
        self.served_results = 0
        self.served_decisions = 0
        self.tool_runs = 0
        self.refused = 0
        self.answers = list(self.record.answers)
        model.on_miss = self.miss

    def miss(self, what: str) -> None:
        """The record has nothing for this: the replay diverged here."""
        self.diverged = self.diverged or what
        if self.live_allowed and not self.live:
            self.live = True
            self.model.go_live()

    def stand_in(
        self, registry: ToolRegistry, call: ToolCall, ctx: ToolContext
    ) -> ToolResultStep | None:
        """The recorded result of `call`, a refusal, or None: the tool runs (live, counted).

        A call that needs a person's approval never runs in a replay: not live, and not
        when the record holds the approval but no result (the run died inside the tool).
        """
        key = (ctx.step, call.name, _args_key(call.args, call.raw_args))
        if not self.live:
            queue = self.record.results.get(key)
            if queue:
                self.served_results += 1
                return _served(queue.pop(0), call, ctx)
            if key in self.record.unfinished:
                return self._halt(
                    call,
                    ctx,
                    f"the run recorded the approval of {call.name} at think step {ctx.step} "
                    "but no result (it stopped inside the tool): a replay never runs a call "
                    "that needs approval",
                )
            self.miss(f"a call of {call.name} at think step {ctx.step}")
        if not self.live:
            return self._refused(call, ctx, "the recorded run made no such call here")
        if self._needs_person(registry, call):
            return self._halt(
                call,
                ctx,
                f"{call.name} at think step {ctx.step} needs a person's approval: a replay "
                "never runs a call that needs approval",
            )
        self.tool_runs += 1
        return None

    def _needs_person(self, registry: ToolRegistry, call: ToolCall) -> bool:
        # The approval rules of the agent, over the tools this call would run with.
        return needs_person(dataclasses.replace(self.deps, tools=registry), call)

    def _halt(self, call: ToolCall, ctx: ToolContext, why: str) -> ToolResultStep:
        self.halted = self.halted or why
        return self._refused(call, ctx, why)

    def _refused(self, call: ToolCall, ctx: ToolContext, why: str) -> ToolResultStep:
        self.refused += 1
        return ToolResultStep(
            call_id=call.id,
            tool=call.name,
            ok=False,
            error=f"not run (replay): {why}",
            error_kind="rejected",
            attempts=0,
            idempotency_key=ctx.idempotency_key,
        )

    def start(self, node: str) -> None:
        """A node is about to run: a route the record does not have is a divergence, seen
        before that node runs."""
        parted = self.path.start(node)
        if parted:
            self.miss(parted)

    def check(self, step: BaseStep) -> None:
        """A step the record does not have there (a node no start announced, a tool call)
        is a divergence: seen as the step comes, before the next node runs."""
        parted = self.path.step(step)
        if parted:
            self.miss(parted)
        if isinstance(step, ToolCallStep):
            call = step.call
            key = (step.think_step, call.name, _args_key(call.args, call.raw_args))
            if key not in self.record.proposed:
                self.miss(f"{call.name} called at think step {step.think_step}")

    def stops(self) -> bool:
        """Whether the replay stops here: it halted, or diverged and may not go live."""
        return bool(self.halted) or bool(self.diverged and not self.live)

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
    """Consume a run's events; stop where the session says (result, stopped early).

    Closing the stream at a node's start stops the run before that node runs: LangGraph
    announces a node's task before it starts it.
    """
    try:
        async for event in events:
            if isinstance(event, NodeStart):
                session.start(event.node)
            elif isinstance(event, StepEvent):
                session.check(event.step)
            elif isinstance(event, RunEnd):
                return event.result, False
            if session.stops():
                return None, True
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    return None, True


async def fresh_replay_thread(store: Store, thread_id: str) -> str:
    """The first free thread of `replay-<thread_id>`, `replay-<thread_id>-2`, ..."""
    base = f"{REPLAY_PREFIX}{thread_id}"
    target, n = base, 1
    while await store.ahas_thread(target):
        n += 1
        target = f"{base}-{n}"
    return target


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
    limits: StepLimits | None = None,
) -> ReplayReport:
    """Replay the run `thread_id` (see the module docstring) and compare it with its source.

    Args:
        source_driver: the driver of the store that holds the run.
        make_driver: the agent's driver on the same store with another model: the replay's.
        thread_id: the run to replay.
        new_thread_id: the replay's thread; by default the first free one of
            ``replay-<thread_id>``, ``replay-<thread_id>-2``, ...
        strict: a changed request or content fails the replay (`ReplayReport.exit_code`).
        live_from_divergence: go on past the divergence with the real model and tools.
        max_calls: at most this many real model calls after the divergence.
        live_model: the real model (the agent's).
        limits: the limits to replay with; by default those the run was made with, read
            from its store.

    Raises:
        ThreadNotFoundError: no run under `thread_id`.
        ThreadExistsError: `new_thread_id` already holds a run: pass another one.
        ConfigError: `live_from_divergence` without `max_calls`.
    """
    if live_from_divergence and max_calls <= 0:
        raise ConfigError("live_from_divergence needs max_calls above 0: the real calls allowed")
    store = source_driver.store
    if new_thread_id is not None and await store.ahas_thread(new_thread_id):
        raise ThreadExistsError(
            f"thread {new_thread_id!r} already holds a run; give the replay another thread, "
            "or leave it out for a fresh one"
        )
    if limits is None:  # one read of the source: its result, and the limits it was made with
        snapshot = await source_driver.reader.asnapshot(thread_id)
        source = source_driver.reader.result_of(thread_id, snapshot)
        stored = snapshot.values.get("limits")
        limits = stored if isinstance(stored, StepLimits) else None
    else:
        source = await source_driver.reader.aresult(thread_id)
    task = next((s for s in source.chain if isinstance(s, TaskStep)), None)
    if task is None:
        raise ConfigError(f"run {thread_id!r} has no task step to replay")
    target = new_thread_id or await fresh_replay_thread(store, thread_id)
    model = ReplayModel(
        source.chain,
        live=live_model if live_from_divergence else None,
        max_live_calls=max_calls if live_from_divergence else 0,
    )
    driver = make_driver(model)
    session = _Session(source, model, live_from_divergence, driver.deps)
    # Held from the replay's first step until its outcome is recorded: a replay that has
    # recorded none reads as finished (`status_of`), so its lease is what keeps a prune off
    # it meanwhile. Nested: the driver's calls below take it through this hold.
    async with driver.store.alease(target):
        events = driver.start(task.text, target, replay_of=thread_id, guard=session, limits=limits)
        result, stopped = await _follow(events, session)
        # What the run waits for, not its status: a replay never reads as paused.
        while result is not None and result.pending and not stopped:
            answer = session.answer(result.pending)
            if answer is None:
                break
            events = driver.resume(target, answer or None, guard=session)
            result, stopped = await _follow(events, session)
        snapshot = await driver.reader.asnapshot(target)
        replay = driver.reader.result_of(target, snapshot)
        why = ""
        if session.halted:
            why = session.halted
        elif stopped:
            why = f"at the first divergence ({session.diverged}); thread {target} holds the replay"
        elif replay.pending:
            why = "paused for a person: a live replay never answers for one"
        elif model.refused:
            why = f"after {_count(max_calls, 'real model request')} (max_calls)"
        names = (source.thread_id, replay.thread_id)
        tools = list(driver.deps.tools)
        if getattr(source_driver, "holds_masked", False):
            # A fixture holds its run masked (a secret never reaches its file): the
            # replay's own state is compared masked the same way.
            masks = Redactor(replay.chain, tool_map(tools), mask_unknown=True)
            replay = replay.model_copy(update={"state": shown_state(replay.state, masks)})
        histories: tuple[list[CheckpointInfo], list[CheckpointInfo]] = ([], [])
        if source.state or replay.state:  # only a graph with state of its own: node by node
            histories = (
                await source_driver.reader.ahistory(thread_id),
                await driver.reader.ahistory(target),
            )
        diff = diff_runs(
            source.chain,
            replay.chain,
            a=source,
            b=replay,
            tools=tools,
            history_a=histories[0],
            history_b=histories[1],
        )
        report = ReplayReport(
            source=source,
            replay=replay,
            diff=_at_the_route(diff, session.path.route),
            requests=request_changes(source.chain, replay.chain, names, tools),
            served_replies=model.served,
            served_results=session.served_results,
            served_decisions=session.served_decisions,
            model_calls=model.live_calls,
            requests_sent=model.requests.sent,
            tool_runs=session.tool_runs,
            stopped=why,
            strict=strict,
            live=session.live,
            calls=tuple(dict.fromkeys(session.record.called)),
        )
        await driver.end(target, _ended(snapshot.values.get("run"), report.outcome, why))
    return report


def _ended(run: Any, outcome: str, why: str) -> RunInfo:
    """How the replay's thread ends: as its run ended (the `RunInfo` it wrote), or, stopped
    short, as done there."""
    if isinstance(run, RunInfo):
        return run.model_copy(update={"replay": outcome})
    return RunInfo(status="done", detail=f"replay stopped: {why}" if why else "", replay=outcome)


def _at_the_route(diff: RunDiff, route: RunDivergence | None) -> RunDiff:
    """The diff with the route divergence the replay saw as it happened: the replay stopped
    before the other node ran, so its chain alone cannot say where it was going."""
    found = diff.divergence
    if route is None or (found is not None and (found.kind, found.where) != ("route", route.where)):
        return diff
    step_b = found.step_b if found is not None else None
    return dataclasses.replace(diff, divergence=dataclasses.replace(route, step_b=step_b))


def replay_drivers(agent: Agent) -> Callable[[ChatModel], Driver]:
    """What makes a replay's driver (`thinkgraph.runs.replay`) for `agent`: its graph,
    built again with its parts but the replay's model, on its store (its driver's saver),
    with its limits, breakpoints and tracing config.

    For a replay of the agent's own runs (`Agent.replay`) and of a recorded fixture
    (`thinkgraph.testing.regress`).
    """
    driver, limits, breakpoints = agent.driver, agent.limits, agent.breakpoints
    build, traced = agent._build, agent._traced

    def make(model: ChatModel) -> Driver:
        deps = dataclasses.replace(driver.deps, model=model)
        builder = build and built_graph(build, deps, limits, name=agent.graph_address)
        return open_driver(builder, deps, driver.saver, limits, breakpoints, traced)

    return make


async def areplay_agent(agent: Agent, thread_id: str, /, **options: Any) -> ReplayReport:
    """Replay a stored run on this agent's graph, policy and tools, from its record.

    Into a new thread (``replay-<thread_id>``), compared with its source, calling no model
    and running no tool; this agent's model only past a divergence, when asked. Options
    (`new_thread_id`, `strict`, `live_from_divergence`, `max_calls`) and errors:
    `areplay`.
    """
    model = agent.deps.model
    make = replay_drivers(agent)
    return await areplay(agent.driver, make, thread_id, live_model=model, **options)

"""Two runs compared: their chains aligned step by step, the first divergence, their totals.

`diff_runs` reads two chains as data (no store, no graph) and returns a `RunDiff`:

- the steps aligned (`difflib.SequenceMatcher` over a key per step: its type, node, and
  for a tool call the tool and its arguments), each pair `same`, `changed` (same kind of
  step, other content: the fields that differ are listed), `inserted` (only in run B) or
  `deleted` (only in run A). Ids, timestamps and durations are never compared: two runs
  of one script are `same`;
- the **first divergence**, where the runs first decide differently, with its kind:
  `route` (from a node, each run goes to another next node), `tool` (another tool is
  called), `args` (the same tool with other arguments: a field-level diff) or `answer`
  (another final answer), or `state` (a node leaves other values in the keys of the
  graph's own state, those it declares beyond `AgentState`: found when the runs'
  checkpoints are given, `history_a` / `history_b`). A difference of content alone (the
  model worded its reply differently, a tool returned something else) changes steps but
  is no divergence;
- the keys of the runs' own state that differ at the end (`RunDiff.state`): a key in one
  run only, or another value, field by field;
- each run's totals side by side: steps, model and tool calls, tokens and cost.

Everything a `RunDiff` holds is masked as the views mask a run (`Redactor`, one for both
chains: a value secret in one run is masked in the other too). The comparison itself is
made on the real values, so a changed secret is reported as changed, shown as `***`.

The renderers (`diff_to_text`, `diff_to_markdown`, `diff_to_json`, `diff_to_html`) live in
`thinkgraph.views.diff_render`.

Example:
    >>> from thinkgraph import Agent, ScriptedModel
    >>> with Agent(ScriptedModel(["Final Answer: 4"] * 2), store="memory://") as agent:
    ...     a, b = agent.run("2 + 2?", "a"), agent.run("2 + 2?", "b")
    >>> diff_runs(a.chain, b.chain, a=a, b=b).outcome
    'same'
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol, TypeAlias

from thinkgraph.state import (
    BaseStep,
    Counters,
    FinalStep,
    LLMCallStep,
    ToolCallStep,
    ToolResultStep,
)
from thinkgraph.tools.base import Tool
from thinkgraph.views._diff_steps import (
    FieldChange,
    PairOp,
    StepPair,
    align,
    field_changes,
    step_key,
    value_changes,
)
from thinkgraph.views._run import shown_state, state_json
from thinkgraph.views.redact import Redactor
from thinkgraph.views.visibility import tool_map

__all__ = [
    "DivergenceKind",
    "FieldChange",
    "NodeState",
    "PairOp",
    "RunDiff",
    "RunDivergence",
    "RunLike",
    "RunTotals",
    "StepPair",
    "diff_runs",
    "node_visits",
    "visit_starts",
]

DivergenceKind: TypeAlias = Literal["route", "tool", "args", "answer", "state"]
Outcome: TypeAlias = Literal["same", "diverged", "changed"]


class RunLike(Protocol):
    """What `diff_runs` reads of a run besides its chain (a `RunResult` has it all)."""

    @property
    def thread_id(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def answer(self) -> str | None: ...
    @property
    def counters(self) -> Counters: ...
    @property
    def state(self) -> Mapping[str, Any]: ...


class NodeState(Protocol):
    """One checkpoint of a run as `diff_runs` reads it (`Agent.history` lists them)."""

    @property
    def node(self) -> str:
        """The node whose completion wrote it ("start" for the task input)."""
        ...

    @property
    def state(self) -> Mapping[str, Any]:
        """The keys of the run's own state there."""
        ...


@dataclass(frozen=True, slots=True)
class RunDivergence:
    """Where two runs first decide differently."""

    kind: DivergenceKind
    """route, tool, args, answer or state."""
    node: str
    """The node where they part: the one that routed, called, answered or left its own
    state keys differently."""
    visit: int
    """Which visit of that node, from 1 (`think#2` is the second think)."""
    step_a: int | None
    """The number of run A's first step that differs (None: run A has none there)."""
    step_b: int | None
    """Likewise in run B."""
    a: str
    """What run A does there: the next node, the tool, the answer, or the value of the first
    state key that differs (JSON, or "absent") — masked."""
    b: str
    """What run B does there."""
    changes: tuple[FieldChange, ...] = ()
    """For `args`: the arguments that differ; for `state`: the state keys."""

    @property
    def where(self) -> str:
        """`node#visit`, e.g. `think#2`."""
        return f"{self.node}#{self.visit}"


@dataclass(frozen=True, slots=True)
class RunTotals:
    """One run's totals, for the side-by-side table."""

    name: str
    """The run's thread id, or "A" / "B" when the diff was given chains only."""
    status: str | None
    stop_reason: str | None
    answer: str | None
    """The final answer, masked."""
    steps: int
    model_calls: int
    tool_calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None
    """None when any model call's cost is unknown."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Two runs compared (see the module docstring)."""

    a: RunTotals
    b: RunTotals
    pairs: tuple[StepPair, ...]
    """Both chains aligned, in order."""
    divergence: RunDivergence | None
    """The first divergence; None when the runs decide alike all the way."""
    path_a: tuple[str, ...] = field(default=())
    """The nodes run A went through, in order, as its steps name them."""
    path_b: tuple[str, ...] = field(default=())
    """Likewise for run B."""
    unknown_tools: tuple[str, ...] = ()
    """Called tools the diff was not given: all their values are masked."""
    state: tuple[FieldChange, ...] = ()
    """The keys of the runs' own state that differ at the end (masked), field by field."""
    more_state: int = 0
    """State fields that differ beyond those in `state`."""

    @property
    def same(self) -> bool:
        """Whether the runs are the same: no divergence, every step the same as its
        counterpart in the other run, and the same own state at the end."""
        return (
            self.divergence is None
            and not self.state
            and all(pair.op == "same" for pair in self.pairs)
        )

    @property
    def outcome(self) -> Outcome:
        """same; diverged (see `divergence`); or changed: the runs decide alike but some
        steps differ in content (a reply worded otherwise, another tool output)."""
        if self.divergence is not None:
            return "diverged"
        return "same" if self.same else "changed"

    def describe(self) -> str:
        """The verdict in one line: `same`, or where and how the runs first diverge."""
        if self.divergence is None:
            if self.same:
                return "same: the runs took the same steps"
            count = sum(pair.op != "same" for pair in self.pairs)
            differ = [f"{count} step{'s' * (count != 1)} differ in content"] if count else []
            if self.state:
                fields = ", ".join(change.path for change in self.state)
                more = f" and {self.more_state} more" if self.more_state else ""
                differ.append(f"their own state differs at the end ({fields}{more})")
            return "changed: same route, tools, arguments and answer; " + ", and ".join(differ)
        return "first divergence: " + describe_divergence(self.divergence, self.a, self.b)


def describe_divergence(d: RunDivergence, a: RunTotals, b: RunTotals) -> str:
    """A divergence in words: `route at think#1: A goes to finalize (#3), B to act (#3)`."""

    def at(step: int | None) -> str:
        return f" (step #{step})" if step is not None else ""

    if d.kind == "route":
        return (
            f"route at {d.where}: {a.name} goes to {d.a}{at(d.step_a)}, "
            f"{b.name} goes to {d.b}{at(d.step_b)}"
        )
    if d.kind == "tool":
        return (
            f"tool at {d.where}: {a.name} calls {d.a}{at(d.step_a)}, "
            f"{b.name} calls {d.b}{at(d.step_b)}"
        )
    if d.kind == "args":
        fields = ", ".join(change.path for change in d.changes)
        return f"args at {d.where}: {d.a} is called with other arguments ({fields}){at(d.step_a)}"
    if d.kind == "state":
        first = d.changes[0].path if d.changes else "the state"
        more = len(d.changes) - 1
        tail = f" (and {more} more field{'s' * (more != 1)})" if more > 0 else ""
        return f"state at {d.where}: {first} is {d.a} in {a.name}, {d.b} in {b.name}{tail}"
    return f"answer at {d.where}: {a.name} answers {d.a!r}, {b.name} answers {d.b!r}"


# -- comparing ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Visit:
    node: str
    number: int
    """Which visit of `node` this is, from 1."""
    steps: list[BaseStep]


def _visits(chain: Sequence[BaseStep]) -> list[_Visit]:
    """The chain cut into node visits: consecutive steps of one node are one visit, but
    each think model call opens a new one (think → think retries are visits too)."""
    visits: list[_Visit] = []
    counts: dict[str, int] = {}
    has_call = False
    for step in chain:
        node = step.node
        if not node:
            continue
        opens = isinstance(step, LLMCallStep) and step.purpose == "think"
        if not visits or visits[-1].node != node or (opens and has_call):
            counts[node] = counts.get(node, 0) + 1
            visits.append(_Visit(node, counts[node], []))
            has_call = False
        visits[-1].steps.append(step)
        has_call = has_call or opens
    return visits


def node_visits(chain: Sequence[BaseStep]) -> tuple[str, ...]:
    """The nodes a run went through, in order, as its steps name them (`start` first)."""
    return tuple(visit.node for visit in _visits(chain))


def visit_starts(chain: Sequence[BaseStep]) -> tuple[tuple[str, int], ...]:
    """Each node visit of a run, in order, as (node, the number of its first step): the
    visits `node_visits` names, cut the same way."""
    return tuple((visit.node, visit.steps[0].number) for visit in _visits(chain))


def _calls(visit: _Visit) -> list[ToolCallStep]:
    return [step for step in visit.steps if isinstance(step, ToolCallStep)]


def _call_divergence(va: _Visit, vb: _Visit, shown: dict[int, BaseStep]) -> RunDivergence | None:
    """A tool or args divergence between the calls two matching visits propose."""
    calls_a, calls_b = _calls(va), _calls(vb)
    if not calls_a or not calls_b:
        return None  # one run calls nothing here: it goes elsewhere, a route divergence
    for index in range(max(len(calls_a), len(calls_b))):
        ca = calls_a[index] if index < len(calls_a) else None
        cb = calls_b[index] if index < len(calls_b) else None
        step_a, step_b = (None if c is None else c.number for c in (ca, cb))
        if ca is None or cb is None or ca.call.name != cb.call.name:
            name_a = "nothing more" if ca is None else ca.call.name
            name_b = "nothing more" if cb is None else cb.call.name
            return RunDivergence("tool", va.node, va.number, step_a, step_b, name_a, name_b)
        if step_key(ca) != step_key(cb):
            fields, _ = field_changes(ca, cb, shown[id(ca)], shown[id(cb)])
            name = ca.call.name
            return RunDivergence(
                "args", va.node, va.number, step_a, step_b, name, name, changes=fields
            )
    return None


def _next(visits: list[_Visit], k: int, status: str | None) -> tuple[str, int | None]:
    if k < len(visits):
        return visits[k].node, visits[k].steps[0].number
    return ("nothing yet (paused)" if status == "paused" else "nothing (the run ends)"), None


def _final(chain: Sequence[BaseStep]) -> FinalStep | None:
    return next((s for s in reversed(chain) if isinstance(s, FinalStep)), None)


def _divergence(
    chain_a: Sequence[BaseStep],
    chain_b: Sequence[BaseStep],
    totals: tuple[RunTotals, RunTotals],
    redactor: Redactor,
    shown: dict[int, BaseStep],
) -> RunDivergence | None:
    visits_a, visits_b = _visits(chain_a), _visits(chain_b)
    common = 0
    while (
        common < min(len(visits_a), len(visits_b))
        and visits_a[common].node == visits_b[common].node
    ):
        common += 1
    # Calls first: at the visit where the routes part, another tool is the sharper news.
    for va, vb in zip(visits_a[:common], visits_b[:common], strict=True):
        found = _call_divergence(va, vb, shown)
        if found is not None:
            return found
    if common < max(len(visits_a), len(visits_b)):
        where = visits_a[common - 1] if common else _Visit("start", 1, [])
        next_a, step_a = _next(visits_a, common, totals[0].status)
        next_b, step_b = _next(visits_b, common, totals[1].status)
        return RunDivergence("route", where.node, where.number, step_a, step_b, next_a, next_b)
    fa, fb = _final(chain_a), _final(chain_b)
    if fa is not None and fb is not None and fa.answer != fb.answer:
        visit = next(v for v in visits_a if any(s is fa for s in v.steps))
        return RunDivergence(
            "answer",
            visit.node,
            visit.number,
            fa.number,
            fb.number,
            "nothing" if fa.answer is None else redactor.text(fa.answer),
            "nothing" if fb.answer is None else redactor.text(fb.answer),
        )
    return None


# -- the runs' own state ----------------------------------------------------------------------

STATE_VALUE_CHARS = 60
"""Longest state value a divergence names in its one line; longer ones end with "…"."""


@dataclass(frozen=True, slots=True)
class _Point:
    """A checkpoint as a node visit: the node, which visit of it, the own state after it."""

    node: str
    visit: int
    state: Mapping[str, Any]


def _points(history: Sequence[NodeState]) -> list[_Point]:
    """A run's checkpoints as node visits, numbered as `_visits` numbers the chain's: each
    checkpoint is one run of its node; LangGraph's two before the first node (the input,
    and the step that starts the graph) are the one `start` visit."""
    points: list[_Point] = []
    counts: dict[str, int] = {}
    for checkpoint in history:
        node = checkpoint.node
        if node == "start" and points and points[-1].node == "start":
            points[-1] = _Point(node, points[-1].visit, checkpoint.state)
            continue
        counts[node] = counts.get(node, 0) + 1
        points.append(_Point(node, counts[node], checkpoint.state))
    return points


def _brief(value: Any, present: bool) -> str:
    if not present:
        return "absent"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    return text if len(text) <= STATE_VALUE_CHARS else text[: STATE_VALUE_CHARS - 1] + "…"


def _state_divergence(
    points_a: Sequence[_Point], points_b: Sequence[_Point], redactor: Redactor
) -> RunDivergence | None:
    """The first node visit, on the path both runs share, after which their own state keys
    differ (compared on the real values, shown masked)."""
    for pa, pb in zip(points_a, points_b, strict=False):
        if pa.node != pb.node:
            return None  # the paths part here: a route, which the chains tell
        raw_a, raw_b = state_json(pa.state), state_json(pb.state)
        if raw_a != raw_b:
            shown = shown_state(pa.state, redactor), shown_state(pb.state, redactor)
            changes, _ = value_changes(raw_a, raw_b, *shown)
            first = changes[0]
            return RunDivergence(
                "state",
                pa.node,
                pa.visit,
                None,
                None,
                _brief(first.a, first.in_a),
                _brief(first.b, first.in_b),
                changes=changes,
            )
    return None


def _earlier(
    chain: RunDivergence | None, state: RunDivergence | None, points_a: Sequence[_Point]
) -> RunDivergence | None:
    """The first of the two divergences along run A's node visits. At one visit, the state:
    what a node leaves in it is what the routes after it read."""
    if chain is None or state is None:
        return state or chain
    order: dict[tuple[str, int], int] = {}
    for index, point in enumerate(points_a):
        order.setdefault((point.node, point.visit), index)

    def at(d: RunDivergence) -> int:
        return order.get((d.node, d.visit), len(points_a))

    return state if at(state) <= at(chain) else chain


def _totals(
    name: str, chain: Sequence[BaseStep], run: RunLike | None, redactor: Redactor
) -> RunTotals:
    llm = [s for s in chain if isinstance(s, LLMCallStep)]
    final = _final(chain)
    answer = run.answer if run is not None else (final.answer if final else None)
    if run is not None:
        c = run.counters
        prompt, completion = c.prompt_tokens, c.completion_tokens
        cost = c.cost_usd if c.cost_known else None
    else:  # from the model calls themselves
        prompt = sum(s.prompt_tokens or 0 for s in llm)
        completion = sum(s.completion_tokens or 0 for s in llm)
        costs = [s.cost_usd for s in llm]
        cost = None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)
    return RunTotals(
        name=run.thread_id if run is not None else name,
        status=run.status if run is not None else None,
        stop_reason=run.stop_reason if run is not None else (final.stop_reason if final else None),
        answer=None if answer is None else redactor.text(answer),
        steps=len(chain),
        model_calls=len(llm),
        tool_calls=sum(isinstance(s, ToolResultStep) for s in chain),
        prompt_tokens=prompt,
        completion_tokens=completion,
        cost_usd=cost,
    )


def diff_runs(
    chain_a: Sequence[BaseStep],
    chain_b: Sequence[BaseStep],
    *,
    a: RunLike | None = None,
    b: RunLike | None = None,
    tools: Mapping[str, Tool] | Iterable[Tool] | None = None,
    history_a: Sequence[NodeState] = (),
    history_b: Sequence[NodeState] = (),
) -> RunDiff:
    """Compare two runs: steps aligned, the first divergence, own state, totals side by side.

    Args:
        chain_a: run A's steps (the reference, e.g. `RunResult.chain`).
        chain_b: run B's steps.
        a: run A's result, for its name (thread id), status, answer and counters; without
            it the totals are read from the chain's model calls.
        b: run B's result.
        tools: the runs' tools, for their sensitive fields (as in every view); calls to
            tools not given and not recorded with the run are masked in full.
        history_a: run A's checkpoints, oldest first (`Agent.history`). With both
            histories the runs' own state keys are compared node by node, and the first
            node visit after which they differ is a `state` divergence; without, they are
            compared at the end only (`RunDiff.state`), a difference of content.
        history_b: run B's checkpoints, oldest first.

    Returns:
        A `RunDiff` whose every value is masked as the views mask a run.
    """
    steps_a, steps_b = list(chain_a), list(chain_b)
    redactor = Redactor([*steps_a, *steps_b], tool_map(tools), mask_unknown=True)
    aligner = align(steps_a, steps_b, redactor)
    # By the object, not the step id: a fork's steps keep the ids of the run it forks.
    shown = {
        id(raw): masked
        for raw, masked in zip(
            [*steps_a, *steps_b], [*aligner.shown_a, *aligner.shown_b], strict=True
        )
    }
    totals = (_totals("A", steps_a, a, redactor), _totals("B", steps_b, b, redactor))
    if totals[0].name == totals[1].name:  # one run against itself, or two unnamed chains
        totals = (
            _renamed(totals[0], f"{totals[0].name} (A)"),
            _renamed(totals[1], f"{totals[1].name} (B)"),
        )
    points_a = _points(history_a)
    divergence = _earlier(
        _divergence(steps_a, steps_b, totals, redactor, shown),
        _state_divergence(points_a, _points(history_b), redactor),
        points_a,
    )
    own_a, own_b = (run.state if run is not None else {} for run in (a, b))
    state, more_state = value_changes(
        state_json(own_a),
        state_json(own_b),
        shown_state(own_a, redactor),
        shown_state(own_b, redactor),
    )
    return RunDiff(
        a=totals[0],
        b=totals[1],
        pairs=tuple(aligner.pairs),
        divergence=divergence,
        path_a=node_visits(steps_a),
        path_b=node_visits(steps_b),
        unknown_tools=tuple(redactor.unknown_tools),
        state=state,
        more_state=more_state,
    )


def _renamed(totals: RunTotals, name: str) -> RunTotals:
    return replace(totals, name=name)

"""The channels of a run's state, and the chain's reducer.

The chain is the single record of a run. It is the audit trail, what the CLI shows and the
source of every prompt: the messages sent to a model are a projection of it, made by the
policy each time, never stored as a second growing list.

The chain lives in a LangGraph `DeltaChannel`: a checkpoint stores only the steps a node
added, so storage grows linearly with the number of steps instead of re-serializing the
whole list at every node. Its reducer (`append_steps`) is the one place steps are numbered.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.channels import BinaryOperatorAggregate, DeltaChannel
from pydantic import BaseModel, ConfigDict
from typing_extensions import TypedDict

from thinkgraph.state.steps import BaseStep, Step, TaskStep, ToolCall, as_step
from thinkgraph.types import Breakpoints, NextAction, RunStatus, StepLimits, StopReason

CHAIN_SNAPSHOT_EVERY = 2000
"""Write a full copy of the chain every this many chain updates, to bound replay on load.

A snapshot costs the whole chain; between snapshots a checkpoint costs only new steps. At
three chain updates per reasoning cycle this is one snapshot every ~650 cycles.
"""


class PackedSteps(BaseModel):
    """Chain steps stored as one record: one bulk validation revives them all.

    The checkpoint serializer packs every list of steps it writes (a node's chain write, a
    chain snapshot) into this, so a resume revives thousands of steps in one call instead
    of one Python callback per step.
    """

    model_config = ConfigDict(frozen=True)

    blob: bytes
    """The steps' fields, msgpack-encoded."""


class Counters(BaseModel):
    """Running totals the guards read."""

    model_config = ConfigDict(frozen=True)

    steps: int = 0
    """Think steps taken."""
    model_calls: int = 0
    """Model calls made (think and finalize); replay models pick their reply by it."""
    resets: int = 0
    consecutive_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    """False once any model call had an unknown cost."""
    elapsed_s: float = 0.0
    """Time spent inside nodes; paused time is never counted."""

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class RunInfo(BaseModel):
    """Final status of a run, written by finalize (a replay's also when it stops short)."""

    model_config = ConfigDict(frozen=True)

    status: RunStatus
    stop_reason: StopReason | None = None
    detail: str = ""
    replay: str | None = None
    """For a replay, once compared with its source: its outcome (same, request changed,
    changed, diverged; `thinkgraph.runs.replay`). Nothing continues it."""


# -- the chain channel --------------------------------------------------------------------
# Steps are numbered here and nowhere else: a step's number is its index in the chain, given
# by the reducer (`append_steps`). Steps are stamped with their node when they are made
# (`BaseStep` asks `running_node`), so the name a user gave our node is the one recorded.


def _placed(step: BaseStep, number: int) -> BaseStep:
    """`step` at chain position `number`, as the reducer appends it.

    A fresh step (number -1: made by a node, appended for the first time) is numbered in
    place: no chain holds it yet, and a copy of every step on every write and every reload
    is what a resume would pay. A step with another number (appended before, perhaps to
    another chain) is copied, never changed.
    """
    if step.number == number:
        return step
    if step.number == -1:
        object.__setattr__(step, "number", number)
        return step
    return step.model_copy(update={"number": number})


def start_state(
    task: str,
    limits: StepLimits,
    breakpoints: Breakpoints | None = None,
    graph: dict[str, Any] | None = None,
    replay_of: str | None = None,
) -> dict[str, Any]:
    """The channels a run starts with: the task step, its limits, zeroed counters.

    `Agent` gives a run this as the graph's input; the server graph's start node makes it
    from ``{"task": ...}``. `graph` is a custom graph's description (see `TaskStep`);
    `replay_of` the run a replay replays (then also in the ``replay_of`` channel).
    """
    chain: list[BaseStep] = [
        TaskStep(node="start", text=task, graph=graph, replay_of=replay_of, number=0)
    ]
    replayed = {} if replay_of is None else {"replay_of": replay_of}
    return {
        **replayed,
        "chain": chain,
        "limits": limits,
        "breakpoints": breakpoints or Breakpoints(),
        "counters": Counters(),
        "next_action": NextAction.CONTINUE,
        "pending_calls": [],
        "needs_approval": [],
        "run_calls": [],
        "candidate": None,
        "answer": None,
        "node": "start",
    }


def append_steps(chain: list[BaseStep], writes: Sequence[Sequence[BaseStep]]) -> list[BaseStep]:
    """The chain's reducer: append each write's steps, numbering them in order.

    The one place steps are numbered: a node emits its steps unnumbered, so steps written
    by parallel act tasks in one super-step still get one gap-free sequence. The numbering
    depends only on the order of writes, which makes the reducer batching-invariant as
    `DeltaChannel` requires: replaying writes in other batches rebuilds the same chain.

    A step given as a plain dict (JSON input from a LangGraph client, the LangGraph server,
    Studio) is validated into its step type by its ``type``; one that does not fit raises
    a pydantic `ValidationError` naming the field.
    """
    out = list(chain)
    for write in writes:
        out.extend(placed_after(write, len(out)))
    return out


def placed_after(steps: Sequence[BaseStep | Mapping[str, Any]], length: int) -> list[BaseStep]:
    """`steps` as the reducer appends them to a chain of `length` steps: numbered from
    `length` on. Also for a reader that holds only the end of a chain and places the
    steps written since in the order LangGraph applies them (`RunReader.steps_since`)."""
    return [_placed(as_step(step), length + i) for i, step in enumerate(steps)]


def joined_counters(before: Counters, written: Sequence[Counters]) -> Counters:
    """The counters after one step in which nodes wrote `written`, from `before`.

    Each node writes the counters it was given plus what it counted, so nodes that ran in
    parallel (a debate's two sides, each asking the model) add up: each adds what it
    counted. A failure in any of them counts once more than before; a reset to zero holds
    only when none failed.
    """
    if len(written) == 1:
        return written[0]
    additive = ("steps", "model_calls", "resets", "prompt_tokens", "completion_tokens")
    update: dict[str, Any] = {
        name: getattr(before, name) + sum(getattr(c, name) - getattr(before, name) for c in written)
        for name in additive
    }
    for name in ("cost_usd", "elapsed_s"):
        update[name] = getattr(before, name) + sum(
            getattr(c, name) - getattr(before, name) for c in written
        )
    update["cost_known"] = all(c.cost_known for c in written)
    failures = [c.consecutive_failures for c in written]
    failed = [f for f in failures if f > before.consecutive_failures]
    update["consecutive_failures"] = (
        before.consecutive_failures + len(failed) if failed else min(failures)
    )
    return before.model_copy(update=update)


class CountersChannel(BinaryOperatorAggregate[Counters]):
    """The ``counters`` channel: one write per step as a plain value, and the writes of
    nodes that ran in parallel joined (`joined_counters`), never refused as a conflict."""

    def __init__(self, typ: Any = Counters, operator: Any = None) -> None:
        super().__init__(typ, operator or _last_written)

    def update(self, values: Sequence[Counters]) -> bool:
        if not values:
            return False
        before = self.value if isinstance(self.value, Counters) else Counters()
        written = [v if isinstance(v, Counters) else Counters.model_validate(v) for v in values]
        self.value = joined_counters(before, written)
        return True


def _last_written(current: Any, new: Any) -> Any:
    return new


def last_value(current: str, new: str) -> str:
    """Reducer for the `node` channel: parallel act tasks may all write it in one step."""
    return new


class AgentState(TypedDict, total=False):
    """The channels of a thinkgraph run."""

    chain: Annotated[
        list[Step], DeltaChannel(append_steps, snapshot_frequency=CHAIN_SNAPSHOT_EVERY)
    ]
    """Every step of the run, append-only.

    Typed as the union of the step types (not `BaseStep`) so that LangGraph finds every
    record type a checkpoint may hold in the state schema: a server whose serializer
    allows only registered types (``LANGGRAPH_STRICT_MSGPACK``) then loads our runs.
    """
    limits: StepLimits
    """The guards, stored with the run."""
    counters: Annotated[Counters, CountersChannel()]
    """Totals the guards read (nodes that run in parallel add up theirs)."""
    next_action: NextAction
    """What the last think (or validate) decided."""
    pending_calls: list[ToolCall]
    """Tool calls proposed by the last think step and not yet observed."""
    candidate: str | None
    """The answer under consideration."""
    answer: str | None
    """The accepted final answer."""
    run: RunInfo
    """Final status, set by finalize."""
    node: Annotated[str, last_value]
    """The node that ran last: tells a breakpoint pause apart and names history entries."""
    needs_approval: list[str]
    """Ids of the pending calls that wait for a person's decision."""
    run_calls: list[str]
    """Ids of the pending calls act should run (after approval; rejected calls are not)."""
    breakpoints: Breakpoints
    """Where this run pauses for debugging."""
    replay_of: str
    """For a replay: the thread it replays (absent otherwise). A replay is not resumed."""


AGENT_KEYS: frozenset[str] = frozenset(AgentState.__annotations__)
"""Our channels: every key of `AgentState`. A graph's state may declare more of its own."""

_DECLARED_KEY = "__thinkgraph_state_keys"


def own_keys(values: Mapping[str, Any]) -> dict[str, Any]:
    """The keys of a run's state that its graph declared beyond `AgentState`, with values.

    Empty for our graph. What `show`, `history`, `diff` and replay show and compare as the
    run's own state, and what a fork may set.
    """
    return {key: value for key, value in values.items() if is_own_key(key)}


def is_own_key(name: str) -> bool:
    """Whether `name` can be a key of a graph's own state: not ours, and not shaped like
    LangGraph's channels (``__start__``, ``branch:to:NODE``), which a checkpoint holds too."""
    return name not in AGENT_KEYS and not name.startswith("__") and ":" not in name


def with_declared_keys(config: RunnableConfig, keys: frozenset[str]) -> RunnableConfig:
    """`config` telling the nodes which keys the running graph's state declares.

    The driver puts them in every run's config, so every node made by
    `thinkgraph.graphs.parts.node` refuses an update with a key that would be dropped.
    """
    return {**config, "configurable": {**config.get("configurable", {}), _DECLARED_KEY: keys}}


def declared_keys() -> frozenset[str] | None:
    """The keys the running graph's state declares, or None outside a run of the driver."""
    config = var_child_runnable_config.get()
    if not config:
        return None
    keys = (config.get("configurable") or {}).get(_DECLARED_KEY)
    return keys if isinstance(keys, frozenset) else None

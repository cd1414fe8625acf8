"""The state of a run: one append-only chain of typed steps, plus a few small channels.

The chain is the single record of a run. It is the audit trail, what the CLI shows and the
source of every prompt: the messages sent to a model are a projection of it, made by the
policy each time, never stored as a second growing list.

The chain lives in a LangGraph `DeltaChannel`: a checkpoint stores only the steps a node
added, so storage grows linearly with the number of steps instead of re-serializing the
whole list at every node.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeAlias

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import var_child_runnable_config
from langgraph.channels import BinaryOperatorAggregate, DeltaChannel
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationInfo, model_validator
from typing_extensions import TypedDict

from thinkgraph.types import Breakpoints, NextAction, RunStatus, StepLimits, StopReason
from thinkgraph.values import storable

__all__ = [
    "AGENT_KEYS",
    "AgentState",
    "BaseStep",
    "Counters",
    "ErrorStep",
    "FinalStep",
    "HumanStep",
    "LLMCallStep",
    "NoteStep",
    "ObservationStep",
    "PackedSteps",
    "ResetStep",
    "RunInfo",
    "SentRequest",
    "Step",
    "TaskStep",
    "ThoughtStep",
    "ToolCall",
    "ToolCallStep",
    "ToolResultStep",
    "ValidationStep",
    "Verdict",
    "append_steps",
    "is_own_key",
    "last_value",
    "new_id",
    "own_keys",
    "running_node",
    "start_state",
]

CHAIN_SNAPSHOT_EVERY = 2000
"""Write a full copy of the chain every this many chain updates, to bound replay on load.

A snapshot costs the whole chain; between snapshots a checkpoint costs only new steps. At
three chain updates per reasoning cycle this is one snapshot every ~650 cycles.
"""


def new_id() -> str:
    """A short random id for a step or a call."""
    return uuid.uuid4().hex[:16]


def _now() -> datetime:
    return datetime.now(UTC)


# -- records ------------------------------------------------------------------------------


class ToolCall(BaseModel):
    """One call the model asked for."""

    model_config = ConfigDict(frozen=True)

    name: str
    """The tool's name as the model wrote it (it may not exist)."""
    args: dict[str, Any] | None = None
    """Arguments parsed as a JSON object, or None when the input was not a JSON object."""
    raw_args: str | None = None
    """A bare non-JSON input, kept as written; mapped to a tool's single string parameter."""
    id: str = Field(default_factory=new_id)
    """The call id that links this call to its approval, result and observation."""


class Verdict(BaseModel):
    """What a validator says of a candidate answer."""

    model_config = ConfigDict(frozen=True)

    passed: bool
    """Whether the answer is accepted."""
    reason: str = ""
    """Why not (shown to the model), or a note on why it passed."""
    reset: bool = False
    """Ask for the reasoning to start over instead of revising the answer."""
    validator: str = ""
    """Which validator spoke."""
    output: Any = None
    """A structured value the validator read from the answer (e.g. the JSON object an
    `output_schema` validator parsed), kept so `RunResult.output` survives a resume."""


class BaseStep(BaseModel):
    """Fields every step has.

    A step holds only what a run can store (see `thinkgraph.values`): whatever a model, a
    tool or a person put in it, a step is made from its nearest storable form (a lone
    surrogate as U+FFFD, an integer wider than 64 bits as its digits, NaN as None), so the
    checkpoint that writes it, the views that show it and the model that reads it next
    never meet a value they cannot encode.
    """

    model_config = ConfigDict(frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _made_here(cls, data: Any, info: ValidationInfo) -> Any:
        # Every step made (by its constructor, `model_validate`, a dict in the chain) passes
        # here; a step revived from the store (`revive_steps`) does not: it was made
        # storable, and named its node, when it was made, and reviving is a resume's cost.
        if info.context is _REVIVED or not isinstance(data, dict):
            return data
        fitted = storable(data)
        if fitted.get("node"):
            return fitted
        return {**fitted, "node": running_node()}

    number: int = -1
    """Position in the chain, from 0; given by the chain's reducer when the step is
    appended (-1 until then): a node never numbers its steps."""
    id: str = Field(default_factory=new_id)
    """Unique id of the step."""
    at: datetime = Field(default_factory=_now)
    """When the step was recorded (UTC)."""
    node: str = ""
    """The graph node that wrote the step: the name the node has in its graph (our think
    node added as "plan" writes "plan"). Left out, it is the node running when the step
    is made (see `running_node`); "" outside any node."""


class TaskStep(BaseStep):
    """The task the run was given."""

    type: Literal["task"] = "task"
    text: str
    graph: dict[str, Any] | None = None
    """The graph the run ran, when it is not the prebuilt one: its diagram model as
    networkx node-link data, so `draw` and `show` draw that graph, not the default."""
    replay_of: str | None = None
    """For a replay (`thinkgraph.runs.replay`): the thread of the run it replays."""


class SentRequest(BaseModel):
    """What one model call was sent, recorded compactly on its `LLMCallStep`.

    A request is coded against the previous call of the same node (`base`): the messages
    it shares with that call are ranges of the base's messages, and only the new ones are
    stored whole, so a run's record grows with what each call adds, not with the prompt.
    `digest` identifies the whole request (messages and tools): two calls sent the same
    thing have the same digest. Read the messages back with
    `thinkgraph.nodes.model.sent_messages`.
    """

    model_config = ConfigDict(frozen=True)

    digest: str
    """A hash of the whole request (messages and tool schemas), 16 hex digits."""
    visit: int = 1
    """Which visit of its node made the call, from 1: `think#3` is think's third visit."""
    call: int = 1
    """Which call of that visit it was, from 1."""
    base: int | None = None
    """The chain number of the earlier `llm_call` step this one is coded against; None:
    `messages` holds every message."""
    messages: list[dict[str, Any] | list[int]] = Field(default_factory=list)
    """The messages in order: a message sent for the first time, or ``[start, stop]``:
    the base's messages ``start`` to ``stop - 1``, sent again unchanged."""
    tools: list[dict[str, Any]] | None = None
    """The tool schemas sent, when they differ from the base's (None: the same, or none)."""
    tools_digest: str = ""
    """A hash of the tool schemas; "" when none were sent."""


class LLMCallStep(BaseStep):
    """One model call: what came back and what it cost."""

    type: Literal["llm_call"] = "llm_call"
    purpose: str = "think"
    """Why the model was called: think, finalize, summarize, critic."""
    model: str = ""
    """The model that answered (the fallback's name when a fallback answered)."""
    provider: str | None = None
    text: str = ""
    """The reply text as the model sent it."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Native tool calls in the reply, if the provider returned any."""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cost_usd: float | None = None
    """Cost in USD; None when unknown (never a made-up 0)."""
    latency_s: float = 0.0
    fallback: bool = False
    """True when a fallback model answered instead of the primary."""
    error: str | None = None
    """Set when the call failed; then `text` is empty."""
    covers_through: int | None = None
    """For a summarize call: the number of the last chain step its summary stands in for."""
    request: SentRequest | None = None
    """What the model was sent, delta-coded (see `SentRequest`); None for a call made
    outside `thinkgraph.nodes.ask_model` or recorded before requests were."""


class ThoughtStep(BaseStep):
    """The model's reasoning and what it decided to do next."""

    type: Literal["thought"] = "thought"
    text: str = ""
    next_action: NextAction = NextAction.CONTINUE
    answer: str | None = None
    """The candidate answer, when next_action is FINAL_ANSWER or VALIDATE."""
    confidence: float | None = None
    llm_call_id: str | None = None
    """The llm_call step this thought was parsed from."""


class ToolCallStep(BaseStep):
    """A tool call the model proposed."""

    type: Literal["tool_call"] = "tool_call"
    call: ToolCall
    think_step: int = 0
    """The think step (1-based) that proposed the call."""
    sensitive: list[str] | None = None
    """The names the called tool declares sensitive, recorded when the call is proposed,
    so a view without the run's tools masks exactly those; None when not recorded (a run
    from before this record, or a tool the run did not have): such a view masks every
    value of the call."""


class ToolResultStep(BaseStep):
    """What a tool call returned, or how it failed. Written by act."""

    type: Literal["tool_result"] = "tool_result"
    call_id: str
    tool: str
    ok: bool
    output: Any = None
    """The tool's return value, made JSON-safe."""
    error: str | None = None
    """What went wrong, worded for the model."""
    error_kind: (
        Literal["unknown_tool", "invalid_args", "timeout", "exception", "rejected"] | None
    ) = None
    duration_s: float = 0.0
    attempts: int = 1
    idempotency_key: str = ""
    cached: bool = False
    """True when the result was served from the tool's cache and the tool did not run."""
    cached_from: str | None = None
    """For a cached result: the id of the tool_result step whose output it repeats."""
    usage: dict[str, Any] | None = None
    """Model usage inside the tool (an `llm_tool`, a sub-agent): prompt_tokens,
    completion_tokens, cost_usd (None when unknown), model_calls; None when none."""
    child_thread_id: str | None = None
    """For a sub-agent call: the thread id of the child run."""
    child_chain: list[dict[str, Any]] | None = None
    """For a sub-agent call: the child run's chain, each step as a JSON-safe dict."""


class ObservationStep(BaseStep):
    """What the model is shown of a tool result. Written by observe."""

    type: Literal["observation"] = "observation"
    call_id: str
    tool: str
    text: str
    is_error: bool = False
    truncated: bool = False


class ErrorStep(BaseStep):
    """Something went wrong in a node; `feedback` is shown to the model."""

    type: Literal["error"] = "error"
    kind: Literal["parse", "model", "refused_action", "validation"] = "parse"
    message: str
    feedback: str = ""
    llm_call_id: str | None = None
    fatal: bool = False
    """The run cannot go on (e.g. the provider refused the API key): retrying is useless."""


class ValidationStep(BaseStep):
    """The validators' verdict on a candidate answer."""

    type: Literal["validation"] = "validation"
    answer: str
    verdicts: list[Verdict] = Field(default_factory=list)
    passed: bool


class ResetStep(BaseStep):
    """The reasoning starts over here; prompts are projected from after this point."""

    type: Literal["reset"] = "reset"
    lesson: str = ""


class HumanStep(BaseStep):
    """What a person said: an approval decision, guidance, a retry or an abort."""

    type: Literal["human"] = "human"
    kind: str
    text: str = ""
    call_id: str | None = None


class NoteStep(BaseStep):
    """What a node wrote for itself: a plan, a reflection, a reviewer's remark.

    A node's own word, not a person's: the model is shown it as the note of the node that
    wrote it ("Note from reflect: ..."), never as guidance from a person, and the views
    show it as a note. Made inside a node, it names that node without being told.

    Example:
        >>> async def reflect(state, *, deps):
        ...     return {"chain": [NoteStep(text="the totals disagree; check the units")]}
    """

    type: Literal["note"] = "note"
    text: str
    """What the node noted."""
    for_model: bool = True
    """Whether later prompts show the note to the model; False keeps it for people only."""


class FinalStep(BaseStep):
    """The end of the run: its answer and why it stopped."""

    type: Literal["final"] = "final"
    answer: str | None
    stop_reason: StopReason
    forced: bool = False
    """True when a guard stopped the run and the answer was demanded by finalize."""


Step: TypeAlias = Annotated[
    TaskStep
    | LLMCallStep
    | ThoughtStep
    | ToolCallStep
    | ToolResultStep
    | ObservationStep
    | ErrorStep
    | ValidationStep
    | ResetStep
    | HumanStep
    | NoteStep
    | FinalStep,
    Field(discriminator="type"),
]
"""Any step of the chain, told apart by its `type`."""

STEP_TYPES: tuple[type[BaseStep], ...] = (
    TaskStep,
    LLMCallStep,
    ThoughtStep,
    ToolCallStep,
    ToolResultStep,
    ObservationStep,
    ErrorStep,
    ValidationStep,
    ResetStep,
    HumanStep,
    NoteStep,
    FinalStep,
)


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


def running_node() -> str:
    """The name of the graph node running now, or "" outside a node.

    LangGraph runs each node (each act task too) with its name in the config's metadata
    (``langgraph_node``), also in the worker thread of a sync node. A step made without a
    ``node`` takes this, so a node never has to know the name its graph gave it.
    """
    config = var_child_runnable_config.get()
    if not config:
        return ""
    node = (config.get("metadata") or {}).get("langgraph_node")
    return node if isinstance(node, str) else ""


def numbered(step: BaseStep, number: int) -> BaseStep:
    """`step` with chain number `number`: itself when it has it, else a copy.

    For a reader that shows a step before the reducer has numbered it (a stream); the
    chain itself is numbered by `append_steps` alone.
    """
    return step if step.number == number else step.model_copy(update={"number": number})


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
        for step in write:
            out.append(_placed(as_step(step), len(out)))
    return out


def as_step(value: BaseStep | Mapping[str, Any]) -> BaseStep:
    """A step, or a plain dict validated into its step type by its ``type``.

    A dict is a step made now (a JSON client's), so it is made storable as every new
    step is (see `BaseStep`).
    """
    return value if isinstance(value, BaseStep) else _STEP.validate_python(value)


def revive_steps(fields: Sequence[Mapping[str, Any]]) -> list[BaseStep]:
    """Steps read back from the store, from the fields they were stored with, in one call.

    Each validates into its step type by its ``type``, as any step does, but skips what
    making a step adds (see `BaseStep`): a stored step was made storable, and named its
    node, when it was made. Walking every value of every step again was most of the cost
    of loading a long run. Fields that may hold what a run cannot (read from a store
    written by other code) are made storable by the caller first.
    """
    return _STEPS.validate_python(fields, context=_REVIVED)


_STEP: TypeAdapter[BaseStep] = TypeAdapter(Step)  # type: ignore[arg-type]
_STEPS: TypeAdapter[list[BaseStep]] = TypeAdapter(list[Step])  # type: ignore[arg-type]
_REVIVED: dict[str, bool] = {"thinkgraph_revived": True}
"""The validation context of `revive_steps`, known by identity."""


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

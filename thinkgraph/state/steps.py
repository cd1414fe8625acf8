"""The steps of a run's chain: one typed record per thing that happened.

Every step names the node that made it (`running_node`, asked when it is made) and gets
its number, its place in the chain, from the chain's reducer (`thinkgraph.state.channels`).
A step is revived from stored or JSON fields by its ``type`` (`as_step`, `revive_steps`).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeAlias

from langchain_core.runnables.config import var_child_runnable_config
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationInfo, model_validator

from thinkgraph.types import NextAction, StopReason
from thinkgraph.values import storable


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

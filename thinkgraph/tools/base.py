"""The tool interface: the `Tool` base class, `ToolContext` and the small shared types.

A tool is anything the agent can call: a function, the model itself, a sub-agent, a
database, the file system, an external API. Every one is described the same way to the
model (a name, a description and a JSON schema of its arguments, from a pydantic model)
and run the same way by `thinkgraph.tools.runner`, which validates the arguments first
and turns every failure into an observation.

A typed function becomes a tool with `@tool` (see `thinkgraph.tools.function`); both
`tool` and `FunctionTool` are importable from here too.

Example:
    >>> class Shout(Tool):
    ...     name = "shout"
    ...     description = "Say it louder."
    ...     class args_model(BaseModel):
    ...         text: str
    ...     def run(self, args, ctx):
    ...         return args.text.upper()
    >>> Shout().openai_schema()["function"]["parameters"]
    {'properties': {'text': {'type': 'string'}}, 'required': ['text'], 'type': 'object'}
"""

from __future__ import annotations

import asyncio
import copy
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, model_validator
from typing_extensions import TypedDict

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools._threads import run_coroutine, submit_to_worker
from thinkgraph.values import problem

__all__ = [
    "Tool",
    "ToolContext",
    "ToolKind",
    "ToolOptions",
    "ToolVisibility",
    "checked_args_model",
]

ToolKind: TypeAlias = Literal["function", "llm", "sub_agent", "database", "file_system", "external"]
"""What a tool is, for display and policies; it does not change how the tool is run."""

ToolVisibility: TypeAlias = Literal["full", "summary", "hidden"]
"""How much of a tool's calls a chain view shows an end user (see `thinkgraph.views`)."""


class ToolOptions(TypedDict, total=False):
    """The per-tool options every tool factory takes (`@tool`, `from_langchain`,
    `mcp_tools`), declared once; each means what the `Tool` attribute of its name means,
    and one left out keeps that attribute's default."""

    kind: ToolKind
    requires_approval: bool | Callable[[dict[str, Any]], bool]
    side_effects: bool
    visibility: ToolVisibility
    summary_template: str | None
    sensitive: Iterable[str]
    timeout_s: float | None
    retries: int
    retry_backoff_s: float
    cache_ttl_s: float | None


_OPTIONS = frozenset(ToolOptions.__annotations__)

_NAME = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool knows about the call it is serving."""

    thread_id: str
    """The run's thread id."""
    call_id: str
    """The id of the `ToolCall` being served."""
    idempotency_key: str
    """thread id + think step + call id: the same every time the same call re-runs.

    A tool with side effects passes it to the outside system so a call re-run after a
    crash or a resume is recognised instead of done twice.
    """
    step: int
    """The think step (1-based) that proposed the call."""
    deadline: float | None = None
    """When the runner stops waiting for this attempt, as a `time.monotonic()` value: the
    tool's `timeout_s` or the run's time left, whichever ends sooner; None for no limit.

    A sync tool cannot be killed when its time is up; long work can stop itself here
    (`sql_query` tells SQLite to give up at it).
    """

    @classmethod
    def for_call(cls, thread_id: str, step: int, call_id: str) -> ToolContext:
        """The context of one call, with its idempotency key.

        The key depends only on the thread, the think step and the call id, all stored in
        the checkpoint, so a call re-run after a crash gets the same key as the first
        attempt, and a tool with side effects can use it to act once.
        """
        key = f"{thread_id}:{step}:{call_id}"
        return cls(thread_id=thread_id, call_id=call_id, idempotency_key=key, step=step)


class Tool:
    """Base class of every tool.

    Subclass it (set the attributes, implement `run` or `arun`) or decorate a typed
    function with `@tool`.

    Example:
        >>> class Echo(Tool):
        ...     name = "echo"
        ...     description = "Repeat the text."
        ...     class args_model(BaseModel):
        ...         text: str
        ...     def run(self, args, ctx):
        ...         return args.text
        >>> Echo().single_str_param()
        'text'
    """

    name: str
    """How the model calls the tool: `^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$`."""
    description: str
    """What the tool does, for the model."""
    args_model: type[BaseModel]
    """The arguments; a call's arguments are validated against it before every call.

    Once the tool is checked (`check_definition`, which every `ToolRegistry` runs), this is
    the model given made to refuse what no tool should receive (see `checked_args_model`):
    NaN and infinities unless the model allows them, and values a run cannot store.
    """
    returns: str = ""
    """What the tool returns, for the model ("" when not described)."""
    kind: ToolKind = "function"
    requires_approval: bool | Callable[[dict[str, Any]], bool] = False
    """Pause for a person before running: always, never, or when the predicate says so."""
    side_effects: bool = False
    """True when a call changes something outside the run (so a re-run is not harmless)."""
    visibility: ToolVisibility = "full"
    """What end users see of a call in chain views: all of it, a summary, or nothing."""
    summary_template: str | None = None
    """The summary shown at visibility "summary", filled from the args: "searched for {query}"."""
    sensitive: frozenset[str] = frozenset()
    """Argument names and top-level result keys shown as "***" in every chain view."""
    timeout_s: float | None = 30.0
    """Give up waiting after this many seconds (30 by default, for `@tool` too); None turns
    the tool's own limit off. A run's `StepLimits.timeout_s` bounds every call as well: a
    call never gets more than the run's time left."""
    retries: int = 0
    """Extra attempts after the tool raised (never after invalid arguments or a timeout)."""
    retry_backoff_s: float = 0.5
    """Pause before the first retry; doubles at each further attempt."""
    cache_ttl_s: float | None = None
    """Serve an identical call (same validated arguments, same thread) made within this many
    seconds from the earlier successful result instead of running the tool; None never."""

    _schema: dict[str, Any] | None = None

    def run(self, args: BaseModel, ctx: ToolContext) -> Any:
        """Run the tool on validated arguments. Raise to report a failure to the model."""
        if type(self).arun is Tool.arun:
            raise NotImplementedError(f"{type(self).__name__} must implement run() or arun()")
        return run_coroutine(lambda: self.arun(args, ctx))

    async def arun(self, args: BaseModel, ctx: ToolContext) -> Any:
        """Run the tool from async code. By default `run` runs in a worker thread."""
        return await asyncio.wrap_future(submit_to_worker(self.run, args, ctx))

    @property
    def is_async(self) -> bool:
        """Whether the tool's work is a coroutine (`arun` only), so a deadline can cancel it."""
        cls = type(self)
        return cls.run is Tool.run and cls.arun is not Tool.arun

    def needs_approval(self, args: dict[str, Any]) -> bool:
        """Whether a call with these arguments must be approved by a person first.

        When in doubt, ask: a predicate that raises (say, on arguments the model got
        wrong) or answers anything but True or False counts as "yes", and so do arguments
        holding NaN, an infinity or another value a predicate cannot be trusted to compare
        (``nan > 100`` is False), whatever the predicate would say.
        """
        rule = self.requires_approval
        if isinstance(rule, bool):
            return rule
        if problem(args) is not None:
            return True
        try:
            answer = rule(args)
        except Exception:
            return True
        return answer if isinstance(answer, bool) else True

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the arguments, without pydantic's generated titles."""
        if self._schema is None:
            self._schema = _trim_titles(self.args_model.model_json_schema())
        # A copy, so a caller that adjusts a schema for its provider cannot corrupt ours.
        return copy.deepcopy(self._schema)

    def openai_schema(self) -> dict[str, Any]:
        """The tool in the OpenAI function-calling format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.json_schema(),
            },
        }

    def single_str_param(self) -> str | None:
        """The name of the only parameter when the tool takes exactly one `str`, else None.

        Such a tool can take a bare, non-JSON input from the model.
        """
        fields = self.args_model.model_fields
        if len(fields) != 1:
            return None
        ((name, info),) = fields.items()
        return name if info.annotation is str else None

    def _set_options(self, options: ToolOptions) -> None:
        """Set the per-tool options a tool made by a factory (`@tool`, `from_langchain`)
        was given (the others keep the class's defaults); `check_definition` checks them.

        Raises:
            TypeError: an option no tool has, named as Python names an unknown keyword.
        """
        for key, value in options.items():
            if key not in _OPTIONS:
                raise TypeError(
                    f"{type(self).__name__}() got an unexpected keyword argument {key!r}"
                )
            setattr(self, key, value)
        sensitive = options.get("sensitive")
        if sensitive is not None:
            # A bare string is one field name, not a set of one-letter names.
            self.sensitive = frozenset([sensitive] if isinstance(sensitive, str) else sensitive)

    def check_definition(self) -> None:
        """Raise `ToolDefinitionError` if the tool cannot be described to a model or run.

        A tool that passes has its `args_model` made to refuse what no tool should receive
        (see `checked_args_model`); checking it again changes nothing.
        """
        for attr in ("name", "description", "args_model"):
            if not hasattr(self, attr):
                raise ToolDefinitionError(
                    f"tool class {type(self).__name__} has no {attr!r}; set it on the class"
                )
        _check_name(self.name)
        if not self.description or not self.description.strip():
            raise ToolDefinitionError(
                f"tool {self.name!r} has no description; write a docstring or pass description=..."
            )
        model = self.args_model
        if not (isinstance(model, type) and issubclass(model, BaseModel)) or model is BaseModel:
            raise ToolDefinitionError(
                f"args_model of tool {self.name!r} is not a pydantic model of its own; "
                "subclass pydantic.BaseModel (class Args(BaseModel): ... even with no fields)"
            )
        if self.retries < 0 or (self.timeout_s is not None and self.timeout_s <= 0):
            raise ToolDefinitionError(
                f"tool {self.name!r} has retries={self.retries}, timeout_s={self.timeout_s}; "
                "use retries >= 0 and a positive timeout_s (or None)"
            )
        if self.cache_ttl_s is not None and self.cache_ttl_s <= 0:
            raise ToolDefinitionError(
                f"tool {self.name!r} has cache_ttl_s={self.cache_ttl_s}; "
                "use a positive number of seconds, or None for no cache"
            )
        if self.cache_ttl_s is not None and self.side_effects:
            # A cached call skips the tool, so its effect would silently not happen.
            raise ToolDefinitionError(
                f"tool {self.name!r} has side effects and cache_ttl_s={self.cache_ttl_s}; "
                "a cached call would skip the effect: drop cache_ttl_s or side_effects=True"
            )
        try:
            self.json_schema()
        except Exception as exc:
            raise ToolDefinitionError(
                f"the arguments of tool {self.name!r} have no JSON schema ({exc}); "
                "use JSON-friendly types (str, int, float, bool, list, dict, a pydantic model)"
            ) from exc
        # Here, where every registry passes, so no tool is handed arguments unchecked.
        self.args_model = checked_args_model(model)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {getattr(self, 'name', '?')!r}>"


# -- checks and schemas shared by every tool ------------------------------------------------

_CHECKED = "__thinkgraph_checked_args__"


def checked_args_model(model: type[BaseModel]) -> type[BaseModel]:
    """`model`, made to refuse arguments no tool should receive; a subclass of it.

    Refused, each as a validation error the runner turns into an observation the model can
    recover from (and a person's edit into a refusal that leaves the run paused):

    - NaN and infinities, as numbers or as text ("nan", "-Infinity"), anywhere in the
      arguments, nested models and free-form dicts included: a predicate or a tool that
      compares one (``amount > 100``) is silently wrong. A model whose config sets
      ``allow_inf_nan=True``, or a field declared ``Field(allow_inf_nan=True)``, says it
      takes them, and gets them.
    - values a run cannot store (see `thinkgraph.values`): a lone surrogate, an integer
      wider than 64 bits, nesting more than `thinkgraph.values.MAX_DEPTH` deep.

    The subclass has the same fields, JSON schema and name, so a tool's `run` still gets an
    instance of its own model. Checking a checked model returns it as is.
    """
    if model.__dict__.get(_CHECKED):
        return model
    takes_all = model.model_config.get("allow_inf_nan") is True
    takes_nonfinite = frozenset(
        name
        for name, info in model.model_fields.items()
        if takes_all or any(getattr(m, "allow_inf_nan", None) is True for m in info.metadata)
    )

    def refuse_unfit(args: BaseModel) -> BaseModel:
        for name, value in args.model_dump().items():
            found = problem({name: value}, finite=name not in takes_nonfinite)
            if found is not None:
                raise ValueError(found)
        return args

    namespace: dict[str, Any] = {
        "__module__": model.__module__,
        "__qualname__": model.__qualname__,
        "__doc__": model.__doc__,
        _CHECKED: True,
        "thinkgraph_refuse_unfit": model_validator(mode="after")(refuse_unfit),
    }
    if not takes_all:
        namespace["model_config"] = ConfigDict(allow_inf_nan=False)
    return type(model.__name__, (model,), namespace)


def _check_name(name: str) -> None:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ToolDefinitionError(
            f"tool name {name!r} is not allowed; use letters, digits, '_' and '-', starting "
            "with a letter or '_', at most 64 characters (pass name=... to @tool)"
        )


def _trim_titles(schema: Any) -> Any:
    """Drop pydantic's "title" keys, which only repeat the field name (costing tokens).

    A property or definition that is itself called "title" is kept: the walk knows
    which dicts map names to schemas.
    """
    if isinstance(schema, list):
        return [_trim_titles(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _trim_titles(sub) for name, sub in value.items()}
        else:
            out[key] = _trim_titles(value)
    return out


_MOVED = {"tool", "FunctionTool"}


def __getattr__(name: str) -> Any:
    # `@tool` and `FunctionTool` live in thinkgraph.tools.function, which builds on this
    # module; re-exporting them here made the two modules import each other.
    if name in _MOVED:
        raise AttributeError(
            f"thinkgraph.tools.base.{name} moved; import it from thinkgraph.tools "
            f"(from thinkgraph.tools import {name})"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

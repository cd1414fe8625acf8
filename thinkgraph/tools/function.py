"""Tools made from typed functions: `FunctionTool` and the `@tool` decorator.

The arguments model is built from the function's signature (defaults and
`Annotated[..., Field()]` kept), the descriptions from its Google-style docstring.

Example:
    >>> @tool
    ... def add(a: int, b: int = 2) -> int:
    ...     '''Add two integers.'''
    ...     return a + b
    >>> add.name, add.description, add(1)
    ('add', 'Add two integers.', 3)
"""

from __future__ import annotations

import functools
import inspect
import sys
import typing
from collections.abc import Callable
from typing import Annotated, Any, Generic, ParamSpec, TypeVar, overload

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.fields import FieldInfo
from typing_extensions import Unpack

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools._docstrings import parse_docstring
from thinkgraph.tools._threads import run_coroutine
from thinkgraph.tools.base import Tool, ToolContext, ToolOptions, _check_name

__all__ = ["FunctionTool", "tool"]

P = ParamSpec("P")
R = TypeVar("R")


class FunctionTool(Tool, Generic[P, R]):
    """A tool made from a typed function by `@tool`. Calling it calls the function.

    The keyword arguments are those of `@tool`, plus `localns`: names to resolve string
    annotations with (`@tool` passes the locals of the scope it is applied in).
    """

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        returns: str | None = None,
        localns: dict[str, Any] | None = None,
        **options: Unpack[ToolOptions],
    ) -> None:
        self.fn = fn
        self._call: Callable[..., Any] = fn  # called with keyword arguments from the model
        self.name = name if name is not None else fn.__name__
        _check_name(self.name)
        doc = parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc.description
        hints = _type_hints(fn, self.name, localns)
        self._is_async = inspect.iscoroutinefunction(fn)
        self._ctx_param, self.args_model = _build_args_model(fn, self.name, hints, doc.params)
        self._params = tuple(self.args_model.model_fields)
        self.returns = returns if returns is not None else doc.returns or _describe(hints)
        self._set_options(options)
        functools.update_wrapper(self, fn, updated=())
        self.check_definition()

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def _kwargs(self, args: BaseModel, ctx: ToolContext) -> dict[str, Any]:
        # Attributes, not model_dump(): the function gets the validated objects (nested
        # models stay models), exactly as its annotations promise.
        kwargs = {param: getattr(args, param) for param in self._params}
        if self._ctx_param is not None:
            kwargs[self._ctx_param] = ctx
        return kwargs

    @property
    def is_async(self) -> bool:
        return self._is_async

    def run(self, args: BaseModel, ctx: ToolContext) -> Any:
        if self._is_async:
            return run_coroutine(lambda: self.arun(args, ctx))
        return self._call(**self._kwargs(args, ctx))

    async def arun(self, args: BaseModel, ctx: ToolContext) -> Any:
        if self._is_async:
            return await self._call(**self._kwargs(args, ctx))
        return await super().arun(args, ctx)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.name!r} from {self.fn.__module__}.{self.fn.__qualname__}>"


@overload
def tool(fn: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    returns: str | None = None,
    **options: Unpack[ToolOptions],
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    returns: str | None = None,
    **options: Unpack[ToolOptions],
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a `Tool` from a typed function (sync or async), bare or with options.

    The arguments model comes from the signature (defaults and `Annotated[..., Field()]`
    kept), parameter descriptions from a Google-style `Args:` section, the description
    from the rest of the docstring. A parameter named `ctx` or annotated `ToolContext`
    receives the call's context and is not shown to the model.

    Example:
        >>> @tool(name="greet", requires_approval=True)
        ... def hello(who: str) -> str:
        ...     '''Say hello.'''
        ...     return f"hello {who}"
        >>> hello.name, hello.single_str_param()
        ('greet', 'who')

    Raises:
        ToolDefinitionError: the function cannot be described to a model (a parameter
            without a type, *args/**kwargs, a bad name, no description).
    """

    # With `from __future__ import annotations` the annotations are strings; a type defined
    # in the function that applies @tool (a local model, say) resolves only with its locals.
    localns = dict(sys._getframe(1).f_locals)

    def wrap(f: Callable[P, R]) -> FunctionTool[P, R]:
        return FunctionTool(
            f,
            name=name,
            description=description,
            returns=returns,
            localns=localns,
            **options,
        )

    return wrap if fn is None else wrap(fn)


# -- building the arguments model -----------------------------------------------------------


def _type_hints(
    fn: Callable[..., Any], name: str, localns: dict[str, Any] | None
) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, localns=localns, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"the type annotations of tool {name!r} cannot be resolved ({exc}); "
            "define or import the types they name at module level"
        ) from exc


def _build_args_model(
    fn: Callable[..., Any], name: str, hints: dict[str, Any], docs: dict[str, str]
) -> tuple[str | None, type[BaseModel]]:
    """The context parameter's name (if any) and the arguments model of a function."""
    ctx_param: str | None = None
    fields: dict[str, Any] = {}
    for param in inspect.signature(fn).parameters.values():
        where = f"parameter {param.name!r} of tool {name!r}"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"tool {name!r} takes *args or **kwargs ({param}); "
                "a tool needs named, typed parameters, so list them explicitly"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(f"{where} is positional-only; remove the '/'")
        hint = hints.get(param.name, param.empty)
        if param.name == "ctx" or hint is ToolContext:
            ctx_param = param.name
            continue
        if hint is param.empty:
            raise ToolDefinitionError(
                f"{where} has no type annotation; annotate it, e.g. {param.name}: int"
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hint, _field(default, docs.get(param.name), hint))
    try:
        model = create_model(  # type: ignore[call-overload]
            f"{name}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
    except Exception as exc:
        raise ToolDefinitionError(
            f"cannot build the arguments of tool {name!r} ({exc}); use JSON-friendly "
            "types (str, int, float, bool, list, dict, Literal, a pydantic model)"
        ) from exc
    return ctx_param, typing.cast(type[BaseModel], model)


def _field(default: Any, doc: str | None, hint: Any) -> Any:
    if isinstance(default, FieldInfo) or not doc:
        return default
    # A description written in Annotated[..., Field(description=...)] wins over the docstring.
    if typing.get_origin(hint) is Annotated and any(
        isinstance(meta, FieldInfo) and meta.description for meta in hint.__metadata__
    ):
        return default
    return Field(default, description=doc)


def _describe(hints: dict[str, Any]) -> str:
    """A return annotation as a short description, e.g. "int" or "list[str]"."""
    hint = hints.get("return")
    if hint is None or hint is type(None):
        return ""
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")

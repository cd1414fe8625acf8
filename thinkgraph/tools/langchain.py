"""LangChain tools as they are: `LangChainTool` and `from_langchain`.

Any `langchain_core.tools.BaseTool` (a `StructuredTool`, a `@langchain_core.tools.tool`
function, a subclass with `_run`/`_arun`) keeps its own name, description and argument
schema; `Agent(tools=...)` and `--tools` wrap a bare one with our defaults, and
`from_langchain` sets our per-tool options on it in one call.

The arguments are validated by our runner like every tool's, against the tool's own
pydantic model, or against a model built from its JSON schema when it gives a dict; the
validated arguments then go to the tool's `ainvoke` as a dict. A `ToolException`, an
invalid argument or any other exception becomes a failed result the model sees. A tool
with `response_format="content_and_artifact"` gives the model its content (the artifact
is LangChain's to keep); `return_direct` is not honoured: the result is an observation
and the model decides what comes next.

Example:
    >>> from langchain_core.tools import tool as lc_tool
    >>> @lc_tool
    ... def shout(text: str) -> str:
    ...     '''Say the text louder.'''
    ...     return text.upper()
    >>> adapted = from_langchain(shout, requires_approval=True)
    >>> adapted.name, adapted.json_schema()["required"]
    ('shout', ['text'])
"""

from __future__ import annotations

import copy
import keyword
from collections.abc import Callable
from typing import Annotated, Any, Literal, Union

from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from pydantic import BaseModel, ConfigDict, Field, create_model
from typing_extensions import Unpack

from thinkgraph.errors import ToolDefinitionError
from thinkgraph.tools.base import _NAME, Tool, ToolContext, ToolOptions, _trim_titles
from thinkgraph.tools.function import tool

__all__ = ["LangChainTool", "as_tool", "from_langchain"]

_MAX_DEPTH = 8
"""How deep a JSON schema is turned into types; anything deeper is taken as it comes."""


class LangChainTool(Tool):
    """A LangChain `BaseTool` run as our `Tool`; make one with `from_langchain`.

    `lc_tool` is the wrapped tool. Calls go through its `ainvoke`, so a sync-only tool
    runs in LangChain's executor and an async one on the run's loop (cancelled at the
    deadline).
    """

    def __init__(
        self,
        lc_tool: BaseTool,
        *,
        name: str | None = None,
        description: str | None = None,
        **options: Unpack[ToolOptions],
    ) -> None:
        self.lc_tool = lc_tool
        self.name = name if name is not None else lc_tool.name
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ToolDefinitionError(
                f"LangChain tool name {self.name!r} is not allowed; use letters, digits, '_' "
                "and '-', starting with a letter or '_' (pass name=... to from_langchain)"
            )
        self.description = description if description is not None else lc_tool.description
        self._dict_schema, self.args_model = _args_model(lc_tool, self.name)
        self._set_options({"kind": "external", **options})
        self.check_definition()

    def json_schema(self) -> dict[str, Any]:
        """The tool's own JSON schema when it gave one as a dict, else its model's."""
        if self._dict_schema is None:
            return super().json_schema()
        return copy.deepcopy(self._dict_schema)

    async def arun(self, args: BaseModel, ctx: ToolContext) -> Any:
        # by_alias: the tool validates the dict again with its own model, which reads
        # aliases; exclude_unset: the tool's own defaults apply, as when LangChain calls it.
        payload = args.model_dump(by_alias=True, exclude_unset=True)
        metadata = {"thread_id": ctx.thread_id, "idempotency_key": ctx.idempotency_key}
        output = await self.lc_tool.ainvoke(payload, config={"metadata": metadata})
        # A dict input gives the content; a tool may still return a ToolMessage itself.
        return output.content if isinstance(output, ToolMessage) else output

    def __repr__(self) -> str:
        return f"<LangChainTool {self.name!r} from {type(self.lc_tool).__name__}>"


def from_langchain(
    lc_tool: BaseTool,
    *,
    name: str | None = None,
    description: str | None = None,
    **options: Unpack[ToolOptions],
) -> LangChainTool:
    """Our `Tool` for a LangChain tool, with our per-tool options set in one call.

    The options mean what they mean on `@tool`; `name` and `description` default to the
    tool's own. Approval predicates and summary templates see the validated arguments.

    Example:
        >>> from langchain_core.tools import StructuredTool
        >>> send = StructuredTool.from_function(
        ...     func=lambda to: f"sent to {to}", name="send", description="Send a note."
        ... )
        >>> from_langchain(send, requires_approval=True, side_effects=True).needs_approval({})
        True

    Raises:
        ToolDefinitionError: the tool cannot be described to a model (a name we do not
            allow, no description, an argument schema that is neither a pydantic model
            nor a JSON schema) or an option is out of range.
    """
    if not isinstance(lc_tool, BaseTool):
        raise TypeError(f"from_langchain takes a LangChain BaseTool, got {type(lc_tool).__name__}")
    return LangChainTool(lc_tool, name=name, description=description, **options)


# -- the arguments model --------------------------------------------------------------------


def _args_model(lc_tool: BaseTool, name: str) -> tuple[dict[str, Any] | None, type[BaseModel]]:
    """The tool's JSON schema if it gave a dict (else None) and the model to validate with.

    `tool_call_schema` is what LangChain shows a model: the arguments without those the
    tool has injected (callbacks, `InjectedToolArg`).
    """
    try:
        schema: Any = lc_tool.tool_call_schema
    except Exception as exc:
        raise ToolDefinitionError(
            f"the arguments of LangChain tool {name!r} cannot be read ({exc}); give it an "
            "args_schema (a pydantic model or a JSON schema dict)"
        ) from exc
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return None, schema
    if isinstance(schema, type) and hasattr(schema, "schema"):  # a pydantic.v1 model
        schema = schema.schema()
    if not isinstance(schema, dict):
        raise ToolDefinitionError(
            f"the args_schema of LangChain tool {name!r} is a {type(schema).__name__}; "
            "use a pydantic model or a JSON schema dict"
        )
    shown = _trim_titles(schema)
    shown.pop("description", None)  # the tool's description, said once already
    return shown, _object_model(f"{name}_args", schema, schema, 0)


def _object_model(
    model_name: str, schema: dict[str, Any], root: dict[str, Any], depth: int
) -> type[BaseModel]:
    """A pydantic model that validates what a JSON schema of an object allows.

    Types, `required`, `enum`/`const`, `anyOf`/`oneOf`, local `$ref`s and the common
    bounds (minimum, maxLength, pattern, minItems, …) are checked; other keywords are
    shown to the model but left for the tool to check.
    """
    required = set(schema.get("required", ()))
    fields: dict[str, Any] = {}
    for prop, sub in (schema.get("properties") or {}).items():
        annotation = _annotation(f"{model_name}_{prop}", sub, root, depth + 1)
        default = ... if prop in required else (sub or {}).get("default")
        # A name that is no Python identifier, or one BaseModel uses, goes through an alias.
        safe = prop.isidentifier() and not keyword.iskeyword(prop) and not prop.startswith("_")
        if safe and not hasattr(BaseModel, prop):
            fields[prop] = (annotation, Field(default))
        else:
            fields[f"field_{len(fields)}"] = (annotation, Field(default, alias=prop))
    closed = schema.get("additionalProperties") is False
    config = ConfigDict(extra="forbid" if closed else "allow", populate_by_name=False)
    return create_model(model_name, __config__=config, **fields)


def _annotation(where: str, schema: Any, root: dict[str, Any], depth: int) -> Any:
    """The Python type a JSON schema stands for (Any where it cannot be said)."""
    if not isinstance(schema, dict) or depth > _MAX_DEPTH:
        return Any
    if "$ref" in schema:
        return _annotation(where, _resolve(schema["$ref"], root), root, depth + 1)
    if "const" in schema:
        return _literal([schema["const"]])
    if "enum" in schema and isinstance(schema["enum"], list):
        return _literal(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            options = [_annotation(where, s, root, depth + 1) for s in schema[key]]
            return Union[tuple(options)] if options else Any  # noqa: UP007
    kind = schema.get("type")
    if isinstance(kind, list):
        options = [_annotation(where, {**schema, "type": k}, root, depth) for k in kind]
        return Union[tuple(options)] if options else Any  # noqa: UP007
    base: Any
    if kind == "object":
        if schema.get("properties"):
            return _object_model(where, schema, root, depth)
        base = dict[str, Any]
    elif kind == "array":
        base = list[_annotation(where, schema.get("items"), root, depth + 1)]  # type: ignore[misc]
    else:
        base = _SCALARS.get(kind, Any) if isinstance(kind, str) else Any
    # (draft 4's boolean exclusiveMinimum is not a bound: it only makes minimum strict)
    bounds = {
        ours: schema[theirs]
        for theirs, ours in _BOUNDS.items()
        if theirs in schema and not isinstance(schema[theirs], bool)
    }
    if base is type(None) or not bounds:
        return base
    return Annotated[base, Field(**bounds)]


_SCALARS: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "null": type(None),
}
_BOUNDS = {
    "minimum": "ge",
    "maximum": "le",
    "exclusiveMinimum": "gt",
    "exclusiveMaximum": "lt",
    "multipleOf": "multiple_of",
    "minLength": "min_length",
    "maxLength": "max_length",
    "pattern": "pattern",
    "minItems": "min_length",
    "maxItems": "max_length",
}


def _literal(values: list[Any]) -> Any:
    try:
        return Literal[tuple(values)]
    except TypeError:  # an unhashable value (a list, a dict): left for the tool to check
        return Any


def _resolve(ref: Any, root: dict[str, Any]) -> Any:
    """A local `$ref` ("#/$defs/Item"); None (no check) for one we cannot follow."""
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, dict):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node


def as_tool(item: Tool | BaseTool | Callable[..., Any]) -> Tool:
    """A tool as the registry takes it: ours as is, a LangChain tool converted, a typed
    function made one (`tool`)."""
    if isinstance(item, Tool):
        return item
    if isinstance(item, BaseTool):  # before `callable`: a LangChain tool is callable too
        return from_langchain(item)
    if callable(item):
        return tool(item)
    raise TypeError(
        f"tools must be Tool objects, typed functions or LangChain tools, got {type(item).__name__}"
    )

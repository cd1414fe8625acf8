"""Reading one JSON object out of a model reply, and wording pydantic errors for a model.

Shared by the JSON policies (`JsonPlan`, `StructuredStep`) and the `output_schema`
validator: all three ask for one JSON object, and real models wrap it in code fences,
`<think>` blocks or a sentence of prose.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from thinkgraph.policies.base import Decision
from thinkgraph.state import ToolCall

Reply = TypeVar("Reply", bound=BaseModel)

__all__ = [
    "JsonFound",
    "ToolAction",
    "describe_errors",
    "error_decision",
    "find_json_object",
    "parse_reply",
]

_THINK_BLOCK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[A-Za-z0-9_+.-]*[ \t]*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 200
"""How many `{` positions are tried; bounds the work on a long reply full of braces."""


class ToolAction(BaseModel):
    """A tool call as the JSON policies write it: a tool and its arguments."""

    model_config = ConfigDict(extra="ignore")

    tool: str = Field(min_length=1)
    args: dict[str, Any] | str = Field(default_factory=dict)
    """A JSON object; a string is kept as the call's `raw_args`."""

    def to_call(self) -> ToolCall:
        """The `ToolCall` act runs."""
        if isinstance(self.args, str):
            return ToolCall(name=self.tool.strip(), raw_args=self.args)
        return ToolCall(name=self.tool.strip(), args=self.args)


@dataclass(frozen=True, slots=True)
class JsonFound:
    """What `find_json_object` read: the object, or why there was none."""

    value: dict[str, Any] | None = None
    error: str | None = None
    """Why no object was read, worded for the model (None when `value` is set)."""


def find_json_object(text: str) -> JsonFound:
    """The first JSON object in a reply, looking inside code fences first.

    `<think>` blocks are removed, then each fenced block and then the whole text are
    searched for a `{` where a JSON object starts; prose before and after it is ignored.

    Example:
        >>> find_json_object('Sure:\\n```json\\n{"a": 1}\\n```').value
        {'a': 1}
    """
    body = _THINK_BLOCK.sub("", text if isinstance(text, str) else "")
    if not body.strip():
        return JsonFound(error="Your reply was empty.")
    first_error: str | None = None
    for candidate in [*(m.group(1) for m in _FENCE.finditer(body)), body]:
        value, error = _first_object(candidate)
        if value is not None:
            return JsonFound(value=value)
        first_error = first_error or error
    if first_error is not None:
        return JsonFound(error=f"Your reply's JSON object is not valid JSON: {first_error}.")
    return JsonFound(error="Your reply had no JSON object.")


def _first_object(text: str) -> tuple[dict[str, Any] | None, str | None]:
    decoder = json.JSONDecoder()
    error: str | None = None
    start = text.find("{")
    tries = 0
    while start >= 0 and tries < _MAX_STARTS:
        tries += 1
        try:
            value, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            # Keep the first failure: it is at the object the model meant to write.
            error = error or f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
        except RecursionError:
            error = error or "the JSON is nested too deeply"
        else:
            if isinstance(value, dict):
                return value, None
        start = text.find("{", start + 1)
    return None, error


def describe_errors(exc: ValidationError) -> str:
    """Pydantic's errors as one line a model can act on: field, then what is wrong.

    Example:
        "'task_complete' is missing; 'actions.0.tool': Input should be a valid string"
    """
    parts: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "the object"
        if error["type"] == "missing":
            parts.append(f"'{where}' is missing")
        else:
            parts.append(f"'{where}': {error['msg']}")
    return "; ".join(parts)


def parse_reply(text: str, model: type[Reply], expected: str) -> Reply | Decision:
    """The reply's JSON object validated as `model`, or the error decision saying what to fix.

    Args:
        text: the model's reply; code fences, `<think>` blocks and prose around the JSON
            object are tolerated.
        model: the reply format.
        expected: the format's description, appended to every error.
    """
    found = find_json_object(text)
    if found.value is None:
        return error_decision(f"{found.error} {expected}")
    try:
        return model.model_validate(found.value)
    except ValidationError as exc:
        return error_decision(
            f"Your JSON object does not fit the format: {describe_errors(exc)}. {expected}"
        )


def error_decision(feedback: str, thought: str = "") -> Decision:
    """A reply that could not be used: `feedback` tells the model what to fix."""
    return Decision(kind="error", thought=thought, error=feedback)

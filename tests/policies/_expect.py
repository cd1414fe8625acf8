"""What a parse should give, written compactly so the case tables read as specifications."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from thinkgraph.policies.base import Decision


@dataclass(frozen=True)
class Call:
    """A reply that calls one tool."""

    name: str
    args: dict[str, Any] | None = None
    raw: str | None = None


@dataclass(frozen=True)
class Final:
    """A reply that gives a final answer."""

    answer: str


@dataclass(frozen=True)
class Error:
    """A reply that is fed back to the model."""

    says: str
    """A fragment the feedback must contain."""


@dataclass(frozen=True)
class Calls:
    """A reply that calls several tools, in this order."""

    calls: tuple[Call, ...]

    def __init__(self, *calls: Call) -> None:
        object.__setattr__(self, "calls", calls)


Expected = Call | Calls | Final | Error


def check(decision: Decision, expected: Expected) -> None:
    """The decision is exactly what was expected, and nothing else is set."""
    if isinstance(expected, Calls):
        assert decision.kind == "tool_calls", decision.error
        got = [(c.name, c.args, c.raw_args) for c in decision.tool_calls]
        assert got == [(c.name, c.args, c.raw) for c in expected.calls]
        assert decision.answer is None and decision.error is None
    elif isinstance(expected, Call):
        assert decision.kind == "tool_calls", decision.error
        assert len(decision.tool_calls) == 1
        call = decision.tool_calls[0]
        assert (call.name, call.args, call.raw_args) == (expected.name, expected.args, expected.raw)
        assert decision.answer is None and decision.error is None
    elif isinstance(expected, Final):
        assert decision.kind == "final", decision.error
        assert decision.answer == expected.answer
        assert decision.tool_calls == [] and decision.error is None
    else:
        assert decision.kind == "error"
        assert decision.error is not None and expected.says in decision.error
        assert decision.tool_calls == [] and decision.answer is None


CALC = Call("calculator", {"expression": "2+2"})
"""The call most cases expect."""


def assert_consistent(decision: Decision) -> None:
    """The decision's fields agree with its kind, whatever the reply was."""
    if decision.kind == "tool_calls":
        assert decision.tool_calls
        for call in decision.tool_calls:
            assert call.name and (call.args is None) != (call.raw_args is None)
        assert decision.answer is None and decision.error is None
    elif decision.kind == "final":
        assert decision.answer and decision.error is None and not decision.tool_calls
    else:
        assert decision.error and decision.answer is None and not decision.tool_calls

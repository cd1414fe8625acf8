"""A tool's result as JSON, made within bounds of size and time.

A tool may return anything: a value, a pydantic model, a dataclass, a generator, an
object. The runner turns it into what a run can store (strict JSON, with
`thinkgraph.values` fixing what JSON cannot hold) here, where the tool runs: in its worker
thread and under its deadline, so a result that takes too long to read is a timeout like
a tool that takes too long to run.

Bounds: a result keeps at most `MAX_RESULT_VALUES` values (every number, text, list and
object counts one) and `MAX_RESULT_CHARS` characters of text (keys included), nested at
most `thinkgraph.values.MAX_DEPTH` deep. What is beyond them is

- cut, with a note saying how much was left out, where the tool returned a value that is
  already whole in memory (a list, a dict, a text, an object): the call succeeds with the
  part that fits;
- refused where the tool returned an iterator (a generator, ``map(...)``,
  ``itertools.count()``): reading one further is what would never end, or end only when
  the machine is out of memory. The call fails with `ResultRefused`, worded for the model.

Reading stops at the deadline as well (`ResultLate`): an iterator that yields slowly for
ever is stopped by the tool's timeout.

Types are converted as pydantic converts them to JSON (``to_jsonable_python``, with
``repr`` for what it cannot), except that lists, dicts, iterators, models and dataclasses
are walked here, so the bounds hold inside them too.

Example:
    >>> to_json({"n": 2, "when": __import__("datetime").date(2024, 5, 1), "gen": iter("ab")})
    {'n': 2, 'when': '2024-05-01', 'gen': ['a', 'b']}
"""

from __future__ import annotations

import base64
import collections
import dataclasses
import math
import time
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from thinkgraph.values import MAX_DEPTH

__all__ = ["MAX_RESULT_CHARS", "MAX_RESULT_VALUES", "ResultLate", "ResultRefused", "to_json"]

MAX_RESULT_VALUES = 1_000_000
"""The most values a tool's result keeps: each number, text, list and object counts one."""
MAX_RESULT_CHARS = 10_000_000
"""The most characters of text a tool's result keeps, keys included (bytes count as their
base64 text)."""

_CUT_DEEP = f"… [nested more than {MAX_DEPTH} levels deep: cut here]"
_BOUNDS = f"a tool's result keeps at most {MAX_RESULT_VALUES:,} values"
_CHECK_EVERY = 1024
"""How many values are walked between two looks at the clock (an iterator's items: each)."""


class ResultRefused(Exception):
    """The result cannot be kept: an iterator that had not ended within the bounds.

    The message follows the tool's name ("tool 'x' " + message) and is worded for the model.
    """


class ResultLate(Exception):
    """The deadline passed while the result was being read."""


def to_json(value: Any, *, deadline: float | None = None) -> Any:
    """`value` as JSON-safe Python data (dict, list, str, int, float, bool, None), within
    the bounds of a tool's result.

    Args:
        value: what the tool returned.
        deadline: a `time.monotonic()` value to stop reading at; None for no limit.

    Raises:
        ResultRefused: an iterator in `value` had not ended within the bounds.
        ResultLate: `deadline` passed before `value` was read.
    """
    return _Walk(deadline).value(value, 0)


class _Walk:
    """One conversion: what is left of the bounds, and the clock."""

    __slots__ = ("chars", "deadline", "values")

    def __init__(self, deadline: float | None) -> None:
        self.values = MAX_RESULT_VALUES
        self.chars = MAX_RESULT_CHARS
        self.deadline = deadline

    def spend(self) -> bool:
        """Count one value; False when none is left. Looks at the clock now and then."""
        if self.values <= 0:
            return False
        self.values -= 1
        if self.values % _CHECK_EVERY == 0:
            self.on_time()
        return True

    def on_time(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise ResultLate

    def value(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if value is None or kind is bool or kind is int:
            return value
        if kind is float:
            return value if math.isfinite(value) else None  # as JSON.stringify makes it null
        if kind is str:
            return self.text(value)
        if isinstance(value, str):  # a str subclass (an enum's value): its text
            return self.text(str.__str__(value))
        if isinstance(value, bytes | bytearray | memoryview):
            return self.bytes(bytes(value))
        if isinstance(value, dict):
            return self.mapping(value, depth)
        if isinstance(value, list | tuple | set | frozenset | collections.deque):
            return self.sized(value, depth)
        if isinstance(value, Iterator):
            return self.iterator(value, depth)
        if isinstance(value, BaseModel):
            # As pydantic writes it (aliases, serializers); an iterator in a field stays
            # lazy in python mode, and is read within the bounds like any other.
            try:
                fields = value.model_dump(mode="python", by_alias=True)
            except Exception:
                return self.text(_shown(value))
            return self.mapping(fields, depth)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
            return self.mapping(fields, depth)
        return self.other(value, depth)

    def text(self, text: str) -> str:
        if len(text) <= self.chars:
            self.chars -= len(text)
            return text
        keep, self.chars = self.chars, 0
        return (
            f"{text[:keep]}… [{len(text) - keep:,} more characters not kept: a tool's result "
            f"keeps at most {MAX_RESULT_CHARS:,} characters]"
        )

    def bytes(self, data: bytes) -> str:
        # base64, as pydantic writes bytes; cut before encoding, never a copy of them all.
        fits = self.chars // 4 * 3
        if len(data) <= fits:
            return self.text(base64.b64encode(data).decode("ascii"))
        shown = base64.b64encode(data[:fits]).decode("ascii")
        self.chars = 0
        return (
            f"{shown}… [{len(data) - fits:,} more bytes not kept: a tool's result keeps at "
            f"most {MAX_RESULT_CHARS:,} characters]"
        )

    def mapping(self, value: dict[Any, Any], depth: int) -> Any:
        if depth >= MAX_DEPTH:
            return _CUT_DEEP
        out: dict[str, Any] = {}
        for position, (key, item) in enumerate(value.items()):
            if not self.spend() or self.chars <= 0:
                left = len(value) - position
                out["…"] = f"[{left:,} more entries not kept: {_BOUNDS} and {_chars()}]"
                break
            key = self.text(key if type(key) is str else _key(key))  # before its value
            out[key] = self.value(item, depth + 1)
        return out

    def sized(self, value: Any, depth: int) -> Any:
        if depth >= MAX_DEPTH:
            return _CUT_DEEP
        out: list[Any] = []
        for position, item in enumerate(value):
            if not self.spend() or self.chars <= 0:
                left = len(value) - position
                out.append(f"… [{left:,} more items not kept: {_BOUNDS} and {_chars()}]")
                break
            out.append(self.value(item, depth + 1))
        return out

    def iterator(self, value: Iterator[Any], depth: int) -> Any:
        if depth >= MAX_DEPTH:
            return _CUT_DEEP  # never read, so never a read without end
        out: list[Any] = []
        for item in value:
            if not self.spend() or self.chars <= 0:
                raise ResultRefused(
                    f"returned an iterator that had not ended after {len(out):,} items; its "
                    f"result was discarded ({_BOUNDS} and {_chars()}): a tool must return a "
                    "finite value"
                )
            self.on_time()  # each item: a generator may take long over every one
            out.append(self.value(item, depth + 1))
        return out

    def other(self, value: Any, depth: int) -> Any:
        try:
            plain = to_jsonable_python(
                value, fallback=repr, inf_nan_mode="null", bytes_mode="base64"
            )
        except Exception:
            return self.text(_shown(value))
        if plain is value or type(plain) is str:
            return self.text(plain) if type(plain) is str else plain
        return self.value(plain, depth)  # made whole by pydantic: a list or a dict, say


def _chars() -> str:
    return f"{MAX_RESULT_CHARS:,} characters"


def _key(key: Any) -> str:
    """A key that is not text as pydantic writes it: ``1`` -> "1", ``(1, 2)`` -> "1,2"."""
    if type(key) is int and -(10**18) < key < 10**18:
        return str(key)  # the common case, and what pydantic writes, without asking it
    try:
        (written,) = to_jsonable_python({key: None}, fallback=repr)
    except Exception:
        return _shown(key)
    return str(written)


def _shown(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # nested too deeply even to print (RecursionError), or a broken __repr__
        return f"<a {type(value).__name__} that cannot be shown>"

"""What a run can hold: the one rule for every value a model, a tool or a person produces.

A run's chain is written by the checkpointer (msgpack), sent back to models, exported as
JSON and printed in terminals and browsers. A value goes everywhere a run goes when it is
what strict JSON holds, encoded in UTF-8:

- text is valid Unicode: no lone surrogate (U+D800 to U+DFFF), which UTF-8 cannot encode;
- an integer fits in 64 bits (``-2**63`` to ``2**64 - 1``), the widest the store encodes;
- a float is finite: JSON has no NaN or Infinity;
- containers are nested at most `MAX_DEPTH` deep.

Where a value enters decides what becomes of one that does not fit:

- a value that would be *acted on* (a tool call's arguments, a person's edit of them) is
  refused there: `problem` says what is wrong, worded for whoever sent it, so a model gets
  it back as feedback and the call never runs;
- a value that is only *recorded* (a reply's text, a thought, a tool's result) is kept in
  its nearest storable form by `storable`: a lone surrogate becomes U+FFFD (as a UTF-8
  decoder does with a bad byte), an integer too wide becomes its decimal digits as text, a
  non-finite float becomes None (as ``JSON.stringify`` makes it null), and nesting too deep
  is cut with a note.

Either way the run goes on, and no value reaches the store that would stop it at the next
checkpoint (and at every resume after it).

Example:
    >>> problem({"q": "\\ud800"})
    "'q' holds a lone surrogate (\\\\ud800), which is not valid Unicode text; send text without it"
    >>> storable({"n": 2**64, "f": float("nan")})
    {'n': '18446744073709551616', 'f': None}
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from itertools import islice
from typing import Any

from pydantic import BaseModel

__all__ = ["MAX_DEPTH", "MAX_INT", "MIN_INT", "problem", "storable"]

MAX_DEPTH = 100
"""The deepest nesting of lists and objects a value may have."""
MIN_INT = -(2**63)
"""The smallest integer the store encodes."""
MAX_INT = 2**64 - 1
"""The largest integer the store encodes."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_CUT = "… [nested more than {depth} levels deep: cut here]"


def problem(value: Any, where: str = "", *, finite: bool = True) -> str | None:
    """What in `value` a run cannot hold, worded for whoever sent it; None when it fits.

    Only the first problem is named: the sender fixes it and tries again.

    Args:
        value: a JSON-like value (str, int, float, bool, None, lists, tuples, dicts, sets);
            other objects are not looked into.
        where: how to name `value` itself in the message, e.g. "the input"; the path to
            a nested value ("'a.b[2]'") is added when the problem is inside it.
        finite: refuse NaN and infinities (a tool's schema may allow them: then False).
    """
    return _problem(value, "", 0, where, finite)


def storable(value: Any) -> Any:
    """`value` in its nearest form a run can hold; `value` itself when it already fits.

    Lists, tuples and dicts are walked, and so are the fields of pydantic models (a changed
    model is copied); any other object is left as it is.
    """
    return _storable(value, 0)


# -- finding a problem ----------------------------------------------------------------------


def _problem(value: Any, path: str, depth: int, where: str, finite: bool) -> str | None:
    if isinstance(value, str):
        surrogate = _SURROGATE.search(value) if not value.isascii() else None
        if surrogate is None:
            return None
        code = f"\\u{ord(surrogate.group()):04x}"
        return (
            f"{_name(path, where)} holds a lone surrogate ({code}), which is not valid "
            "Unicode text; send text without it"
        )
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        if MIN_INT <= value <= MAX_INT:
            return None
        digits = _int_text(value)
        shown = digits if len(digits) <= 30 else digits[:29] + "…"
        return (
            f"{_name(path, where)} is {shown}, an integer wider than 64 bits; "
            f"send a number from {MIN_INT} to {MAX_INT}, or send it as a string"
        )
    if isinstance(value, float | Decimal):
        if not finite or _is_finite(value):
            return None
        nan = value.is_nan() if isinstance(value, Decimal) else math.isnan(value)
        shown = "NaN" if nan else ("Infinity" if value > 0 else "-Infinity")
        return f"{_name(path, where)} is {shown}, not a finite number; send a finite number"
    if isinstance(value, list | tuple | dict | set | frozenset):
        if depth >= MAX_DEPTH:
            return (
                f"{_name(path, where)} is nested more than {MAX_DEPTH} levels deep; "
                "send a flatter value"
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            inner = _join(path, key)
            found = _problem(key, inner, depth + 1, where, finite) if isinstance(key, str) else None
            found = found or _problem(item, inner, depth + 1, where, finite)
            if found is not None:
                return found
    return None


def _is_finite(value: float | Decimal) -> bool:
    return value.is_finite() if isinstance(value, Decimal) else math.isfinite(value)


def _join(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _name(path: str, where: str) -> str:
    shown = _SURROGATE.sub("\ufffd", path)
    if len(shown) > 40:
        shown = shown[:39] + "…"
    if not shown:
        return where or "the value"
    return f"'{shown}' in {where}" if where else f"'{shown}'"


# -- making a value fit ---------------------------------------------------------------------


def _storable(value: Any, depth: int) -> Any:
    # Every step a run makes passes here: the common exact types are told apart by `type`
    # first, which costs far less than a chain of isinstance checks.
    kind = type(value)
    if kind is str:
        return value if value.isascii() or _SURROGATE.search(value) is None else _well_formed(value)
    if value is None or kind is bool:
        return value
    if kind is int:
        return value if MIN_INT <= value <= MAX_INT else _int_text(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return _dict(value, depth)
    if kind is list or kind is tuple:
        return _sequence(value, depth)
    if isinstance(value, str):  # a str subclass (an enum's value): text all the same
        return value if _SURROGATE.search(value) is None else _well_formed(value)
    if isinstance(value, BaseModel):
        return _model(value, depth)
    if isinstance(value, int | float | dict | list | tuple) and not isinstance(value, bool):
        return _storable(_plain(value), depth)
    return value


def _plain(value: Any) -> Any:
    """A subclass of a JSON type as its plain type (an IntEnum as its int, say)."""
    plain: type[Any]
    for plain in (int, float, dict, list, tuple):
        if isinstance(value, plain):
            return plain(value)
    return value


def _dict(value: dict[Any, Any], depth: int) -> Any:
    if depth >= MAX_DEPTH:
        return _CUT.format(depth=MAX_DEPTH)
    fitted: dict[Any, Any] | None = None  # made at the first change only
    for position, (key, item) in enumerate(value.items()):
        new_key, new_item = _storable(key, depth + 1), _storable(item, depth + 1)
        if fitted is None and (new_key is not key or new_item is not item):
            fitted = dict(islice(value.items(), position))
        if fitted is not None:
            fitted[new_key] = new_item
    return value if fitted is None else fitted


def _sequence(value: list[Any] | tuple[Any, ...], depth: int) -> Any:
    if depth >= MAX_DEPTH:
        return _CUT.format(depth=MAX_DEPTH)
    fitted: list[Any] | None = None
    for position, item in enumerate(value):
        new_item = _storable(item, depth + 1)
        if fitted is None and new_item is not item:
            fitted = list(value[:position])
        if fitted is not None:
            fitted.append(new_item)
    if fitted is None:
        return value
    return fitted if isinstance(value, list) else tuple(fitted)


def _model(value: BaseModel, depth: int) -> BaseModel:
    changes = {}
    for name, field in value.__dict__.items():
        fitted = _storable(field, depth + 1)
        if fitted is not field:
            changes[name] = fitted
    return value.model_copy(update=changes) if changes else value


def _well_formed(text: str) -> str:
    # Through UTF-16, so a pair of surrogates that stands for one character (as a JSON
    # escape would write it) becomes that character; a lone one becomes U+FFFD.
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _int_text(value: int) -> str:
    """The integer's decimal digits (Python refuses to print more than 4,300 of them)."""
    try:
        return str(value)
    except ValueError:
        digits = int(value.bit_length() * math.log10(2)) + 1
        sign = "-" if value < 0 else ""
        return f"{sign}(an integer of about {digits} digits)"

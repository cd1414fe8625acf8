"""Where `"name": value` pairs are written in a text, and the texts of a step that may hold one.

`redact.Redactor` decides which names are secret; this module only finds the pairs (in
JSON, in a Python dict's repr, and cut short before a value's closing quote) and writes
one back with its value masked.

Example:
    >>> match = KEY_VALUE.search('Action Input: {"pin": "4821", "door": "back"}')
    >>> match["key"], match["dq"]
    ('pin', '4821')
    >>> masked_pair(match["open"], match["sq"], match["cq"], "***")
    '"pin": "***"'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

__all__ = ["KEY_VALUE", "PAIR_GROUPS", "masked_pair", "texts_with_pairs"]

KEY_VALUE = re.compile(
    r"""(?P<open>(?P<q>["'])(?P<key>[^"'\s:,{}\[\]]{1,64}+)(?P=q)\s*+:\s*+)"""
    r"""(?:"(?P<dq>[^"\\]*+(?:\\.[^"\\]*+)*+)"|'(?P<sq>[^'\\]*+(?:\\.[^'\\]*+)*+)'"""
    r"""|(?P<num>-?\d[\w.+-]*+)|(?P<cq>["'])(?P<cut>(?:(?!(?P=cq))[^\\\n]|\\.)*+)(?=\n|\Z))"""
)
"""A `"name": value` pair written in text: JSON, or a Python dict's repr; `cut` is a
quoted value that a cut ended before its closing quote (up to the line's or text's end).

Its repeats are possessive (`*+`): what follows each can never be what it gave back, so
they match what greedy ones would, without trying each shorter match first (a reply may
write 200,000 pairs)."""

PAIR_GROUPS = ("open", "key", "dq", "sq", "num", "cq", "cut")
"""The groups of a `KEY_VALUE` match read to judge and mask it, all in one call."""


def masked_pair(opening: str, sq: str | None, cq: str | None, mask: str) -> str:
    """A `"name": value` pair written in text (its `open`, `sq` and `cq` groups), its
    value replaced by `mask`."""
    if cq is not None:  # a cut value: no closing quote to put back
        return f"{opening}{cq}{mask}"
    return f"{opening}'{mask}'" if sq is not None else f'{opening}"{mask}"'


def texts_with_pairs(value: Any) -> Iterator[str]:
    """Every string in a step (as its JSON holds them) that may hold a `"name": value` pair."""
    if isinstance(value, str):
        if ":" in value:
            yield value
        return
    if isinstance(value, BaseModel):
        items: Iterable[Any] = value.__dict__.values()
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    elif value is None or isinstance(value, int | float | datetime):
        return
    else:  # what the step's JSON makes of any other object (bytes, a UUID, a path)
        yield from texts_with_pairs(to_jsonable_python(value, fallback=repr))
        return
    for item in items:
        if type(item) is str:  # most items of a big reply: no call per item
            if ":" in item:
                yield item
        elif item is not None:
            yield from texts_with_pairs(item)

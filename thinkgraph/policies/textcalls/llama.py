"""(to be written: the llama formats)."""

from __future__ import annotations

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import Reply

__all__ = ["read_marked", "read_unmarked"]


def read_marked(reply: Reply) -> Decision | None:
    """The decision this format's markers make of `reply`, or None when they are absent."""
    return None


def read_unmarked(reply: Reply) -> Decision | None:
    """The decision the reply's whole shape makes, or None when it is not this shape."""
    return None

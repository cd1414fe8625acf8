"""(to be written: the deepseek formats)."""

from __future__ import annotations

from thinkgraph.policies.base import Decision
from thinkgraph.policies.textcalls._common import Reply

__all__ = ["read"]


def read(reply: Reply) -> Decision | None:
    """The decision this format's markers make of the reply, or None when they are absent."""
    return None

"""Policies: how think talks to a model (prompt format in, Decision out)."""

from thinkgraph.policies.base import Decision, Policy
from thinkgraph.policies.react_text import ReActText

__all__ = ["Decision", "Policy", "ReActText"]

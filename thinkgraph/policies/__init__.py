"""Policies: how think talks to a model (prompt format in, Decision out)."""

from thinkgraph.policies.base import Decision, Policy
from thinkgraph.policies.context import ContextPolicy
from thinkgraph.policies.json_plan import JsonPlan
from thinkgraph.policies.native_tools import NativeTools
from thinkgraph.policies.react_text import ReActText
from thinkgraph.policies.structured_step import StructuredStep

__all__ = [
    "ContextPolicy",
    "Decision",
    "JsonPlan",
    "NativeTools",
    "Policy",
    "ReActText",
    "StructuredStep",
]

"""Who sees what of a chain: visibility levels per tool, per tool kind and per audience.

Every view (text, markdown, JSON, HTML) renders the same list of `ViewItem`s, made here by
`to_view_items`: the chain redacted, then filtered and summarized for one audience. So a
step hidden from end users, or a secret, cannot leak through one renderer that forgot.

A tool declares what end users should see of its calls (`Tool.visibility`: "full",
"summary" through `Tool.summary_template`, or "hidden"); `ViewPolicy` can override that
per tool name or per tool kind, and maps each declared level to what each audience sees:

=============  ======  ========  =======
declared       full    summary   hidden
=============  ======  ========  =======
developer      full    full      hidden
user           full    summary   hidden
auditor        full    full      full
=============  ======  ========  =======

End users also never see the model calls (`llm_call` steps) — only what came of them.

Example:
    >>> policy = ViewPolicy(by_kind={"database": "summary"})
    >>> policy.visibility_for("sql_query", "database", "user")
    'summary'
    >>> policy.visibility_for("sql_query", "database", "auditor")
    'full'
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, TypedDict, Unpack

from thinkgraph.state import BaseStep, LLMCallStep, ObservationStep, ToolCallStep, ToolResultStep
from thinkgraph.tools.base import Tool, ToolVisibility
from thinkgraph.views.redact import Redactor

__all__ = [
    "AUDIENCES",
    "Audience",
    "ViewItem",
    "ViewPolicy",
    "Visibility",
    "to_view_items",
    "tool_map",
    "view_items",
]

Visibility: TypeAlias = ToolVisibility
"""How much of a tool's calls is shown: "full", "summary" or "hidden"."""

Audience: TypeAlias = Literal["developer", "user", "auditor"]
"""Who a view is for."""

AUDIENCES: tuple[Audience, ...] = ("developer", "user", "auditor")

_DEFAULT_LEVELS: dict[Audience, dict[Visibility, Visibility]] = {
    "developer": {"full": "full", "summary": "full", "hidden": "hidden"},
    "user": {"full": "full", "summary": "summary", "hidden": "hidden"},
    "auditor": {"full": "full", "summary": "full", "hidden": "full"},
}


@dataclass(frozen=True, slots=True)
class ViewPolicy:
    """What each audience sees of each tool's calls.

    Args:
        by_tool: a level per tool name, replacing the tool's own `visibility`.
        by_kind: a level per tool kind ("database", "external", …), for tools without a
            `by_tool` entry.
        levels: per audience, the level shown for each declared level (see the table in
            the module docstring); audiences left out keep the default mapping.
    """

    by_tool: Mapping[str, Visibility] = field(default_factory=dict)
    by_kind: Mapping[str, Visibility] = field(default_factory=dict)
    levels: Mapping[Audience, Mapping[Visibility, Visibility]] = field(default_factory=dict)

    def declared(self, tool_name: str, kind: str | None, tool: Tool | None = None) -> Visibility:
        """The level configured for a tool, before the audience is taken into account."""
        if tool_name in self.by_tool:
            return self.by_tool[tool_name]
        if kind is not None and kind in self.by_kind:
            return self.by_kind[kind]
        # Unknown tools (a CLI without the run's tools) are shown in full: hiding what we
        # cannot classify would make a view silently incomplete.
        return getattr(tool, "visibility", "full") if tool is not None else "full"

    def visibility_for(
        self,
        tool_name: str,
        kind: str | None = None,
        audience: Audience = "developer",
        tool: Tool | None = None,
    ) -> Visibility:
        """What `audience` sees of a call to `tool_name` (of `kind`, when known)."""
        mapping = self.levels.get(audience) or _DEFAULT_LEVELS[audience]
        return mapping[self.declared(tool_name, kind, tool)]


@dataclass(frozen=True, slots=True)
class ViewItem:
    """One entry of a view: a redacted step, and how much of it to show."""

    step: BaseStep
    """The step, secrets already masked."""
    level: Literal["full", "summary"]
    """`summary` items show `summary` instead of the step's details."""
    summary: str | None = None
    """The filled summary template, for `summary` items."""
    ok: bool | None = None
    """For a summarized call: whether it succeeded (None if it has no result yet)."""

    @property
    def call_id(self) -> str | None:
        """The tool call this item belongs to, if any."""
        step = self.step
        if isinstance(step, ToolCallStep):
            return step.call.id
        if isinstance(step, ToolResultStep | ObservationStep):
            return step.call_id
        return None


def tool_map(tools: Mapping[str, Tool] | Iterable[Tool] | None) -> dict[str, Tool]:
    """Tools by name, from a mapping, a list of tools, or nothing."""
    if tools is None:
        return {}
    if isinstance(tools, Mapping):
        return dict(tools)
    return {t.name: t for t in tools}


class _Blank(dict[str, Any]):
    # A template naming an argument the model left out shows "?" instead of failing.
    def __missing__(self, key: str) -> str:
        return "?"


def _summary(tool_name: str, tool: Tool | None, args: Mapping[str, Any] | None) -> str:
    template = getattr(tool, "summary_template", None) if tool is not None else None
    if not template:
        return f"used {tool_name}"
    try:
        return string.Formatter().vformat(template, (), _Blank(args or {}))
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return f"used {tool_name}"


def _call_args(step: ToolCallStep, tool: Tool | None) -> dict[str, Any] | None:
    if step.call.args is not None:
        return dict(step.call.args)
    param = tool.single_str_param() if tool is not None else None
    return {param or "input": step.call.raw_args}


class ViewOptions(TypedDict, total=False):
    """What every view of a run takes, each keyword optional (`to_view_items`, `to_text`,
    `to_markdown`, `to_json`, `to_html`)."""

    audience: Audience
    """"developer" (the default), "user" or "auditor"."""
    tools: Mapping[str, Tool] | Iterable[Tool] | None
    """The run's tools (name → Tool, or a list), for visibility, summaries and sensitive
    fields; calls to tools left out are shown with every argument and result value masked
    (see `thinkgraph.views.redact`)."""
    policy: ViewPolicy | None
    """Visibility overrides per tool, per kind and per audience."""


def to_view_items(chain: Sequence[BaseStep], **options: Unpack[ViewOptions]) -> list[ViewItem]:
    """The chain as one audience may see it: redacted, filtered and summarized.

    Args:
        chain: the run's steps.
        **options: see `ViewOptions`.

    Raises:
        ValueError: the audience is not one of `AUDIENCES`.
    """
    by_name = tool_map(options.get("tools"))
    return view_items(chain, Redactor(chain, by_name, mask_unknown=True), by_name, options)


def view_items(
    chain: Sequence[BaseStep], redactor: Redactor, by_name: Mapping[str, Tool], options: ViewOptions
) -> list[ViewItem]:
    """`to_view_items` with the chain's redactor made by the caller, who also reads it."""
    audience = options.get("audience", "developer")
    if audience not in AUDIENCES:
        raise ValueError(f"unknown audience {audience!r}; use one of {', '.join(AUDIENCES)}")
    policy = options.get("policy") or ViewPolicy()
    steps = [redactor.step(s) for s in chain]
    results = {s.call_id: s.ok for s in steps if isinstance(s, ToolResultStep)}
    level_of: dict[str, Visibility] = {}
    for s in steps:
        if isinstance(s, ToolCallStep):
            known = by_name.get(s.call.name)
            kind = getattr(known, "kind", None)
            level_of[s.call.id] = policy.visibility_for(s.call.name, kind, audience, known)

    items: list[ViewItem] = []
    for s in steps:
        if isinstance(s, LLMCallStep) and audience == "user":
            continue
        call_id = ViewItem(s, "full").call_id
        level = level_of.get(call_id, "full") if call_id is not None else "full"
        if level == "hidden":
            continue
        if level == "summary":
            # One line per call: the call becomes its summary, its result and observation
            # are folded into it.
            if isinstance(s, ToolCallStep):
                known = by_name.get(s.call.name)
                summary = _summary(s.call.name, known, _call_args(s, known))
                items.append(ViewItem(s, "summary", summary, results.get(s.call.id)))
            continue
        items.append(ViewItem(s, "full"))
    return items

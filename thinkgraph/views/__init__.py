"""Views of a run's chain for people and programs: text, Markdown, JSON and HTML.

Every view redacts secrets (a tool's `sensitive` fields, secret-looking names, credential
patterns) and shows what its audience may see (`developer`, `user`, `auditor`; see
`thinkgraph.views.visibility`).

Example:
    >>> from thinkgraph import Agent, ScriptedModel
    >>> with Agent(ScriptedModel(["Thought: easy\\nFinal Answer: 4"]), store="memory://") as a:
    ...     result = a.run("2 + 2?", thread_id="v")
    >>> print(to_text(result.chain, audience="user"))
    #0   task        2 + 2?
    #2   thought     easy
                     → final_answer: 4
    #3   final       final_answer: 4
"""

from thinkgraph.views.diff import RunDiff, diff_runs
from thinkgraph.views.diff_render import (
    diff_to_html,
    diff_to_json,
    diff_to_markdown,
    diff_to_text,
)
from thinkgraph.views.html_page import to_html
from thinkgraph.views.json_doc import run_summary_dict, to_json, to_json_dict
from thinkgraph.views.markdown import to_markdown
from thinkgraph.views.redact import MASK, Redactor, redact_chain
from thinkgraph.views.text import format_item, format_step, to_text
from thinkgraph.views.visibility import (
    AUDIENCES,
    Audience,
    ViewItem,
    ViewPolicy,
    Visibility,
    to_view_items,
)

__all__ = [
    "AUDIENCES",
    "MASK",
    "Audience",
    "Redactor",
    "RunDiff",
    "ViewItem",
    "ViewPolicy",
    "Visibility",
    "diff_runs",
    "diff_to_html",
    "diff_to_json",
    "diff_to_markdown",
    "diff_to_text",
    "format_item",
    "format_step",
    "redact_chain",
    "run_summary_dict",
    "to_html",
    "to_json",
    "to_json_dict",
    "to_markdown",
    "to_text",
    "to_view_items",
]

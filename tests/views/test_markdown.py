"""The Markdown view: outcome, totals, one list item per step; model output cannot inject markup."""

from __future__ import annotations

import re

import pytest

from tests.views._runs import TOOLS, expect, login_run
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.views import to_markdown
from thinkgraph.views.markdown import escape_markdown


@pytest.mark.parametrize("audience", ["developer", "user"])
def test_the_markdown_view_of_a_run(audience: str) -> None:
    expect(f"login_run.{audience}.md", to_markdown(login_run(), audience=audience, tools=TOOLS))  # type: ignore[arg-type]


def test_model_output_cannot_close_a_block_or_add_html() -> None:
    hostile = "<script>alert(1)</script>\n~~~\n``` done"
    model = ScriptedModel([f"Thought: {hostile}\nFinal Answer: <b>{hostile}</b>"])
    with Agent(model, store="memory://") as agent:
        md = to_markdown(agent.run("x", thread_id="h"))
    # Raw HTML only inside fenced blocks, where Markdown shows it as text.
    outside = re.sub(r"  ~~~~text\n.*?\n  ~~~~", "", md, flags=re.DOTALL)
    assert "<" not in outside
    # The thought's block is fenced with more tildes than the model wrote.
    assert "  ~~~~text\n  <script>alert(1)</script>\n  ~~~\n  ``` done" in md
    assert "**Answer:** &lt;b\\>&lt;script\\>alert\\(1\\)&lt;/script\\>  \n\\~\\~\\~" in md


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("t-views", "t-views"),
        ("- not a list", "\\- not a list"),
        ("12. not a list", "12\\. not a list"),
        ("*not bold* [no](link)", "\\*not bold\\* \\[no\\]\\(link\\)"),
        ("a < b & c", "a &lt; b &amp; c"),
    ],
)
def test_escape_markdown_shows_text_as_itself(text: str, escaped: str) -> None:
    assert escape_markdown(text) == escaped


def test_a_paused_run_says_what_it_waits_for_without_the_secret() -> None:
    @tool(requires_approval=True)
    def send(to: str, api_key: str) -> str:
        """Send a message."""
        return "sent"

    call = 'Thought: send\nAction: send\nAction Input: {"to": "bob", "api_key": "k-0123456789"}'
    with Agent(ScriptedModel([call]), [send], store="memory://") as agent:
        run = agent.run("x", thread_id="p")
    md = to_markdown(run)
    assert run.status == "paused" and md.startswith("# Run p: paused\n")
    assert f"**Waiting for:** approval of send \\(call {run.pending[0].call_id}\\)" in md
    assert "k-0123456789" not in md and '"api_key": "***"' in md

"""The HTML page: self-contained, escaped, every step an element, calls linked to results."""

from __future__ import annotations

import re

from tests.views._runs import TOOLS, login_run
from thinkgraph import Agent, ScriptedModel
from thinkgraph.views import to_html, to_view_items

SVG = (
    '<?xml version="1.0" encoding="UTF-8" standalone="no"?>\n'
    '<!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN" "x.dtd">\n'
    '<svg width="10pt" height="10pt"><g id="graph0"><title>G</title></g></svg>'
)


def test_every_shown_step_has_an_element_with_its_number() -> None:
    run = login_run()
    for audience in ("developer", "user", "auditor"):
        page = to_html(run, audience=audience, tools=TOOLS)
        shown = [i.step.number for i in to_view_items(run.chain, audience=audience, tools=TOOLS)]
        assert [int(n) for n in re.findall(r'<li id="step-(\d+)"', page)] == shown


def test_a_tool_call_links_to_its_result_and_observation_and_back() -> None:
    page = to_html(login_run(), tools=TOOLS)
    call = page[page.index('<li id="step-3"') : page.index('<li id="step-4"')]
    result = page[page.index('<li id="step-4"') : page.index('<li id="step-5"')]
    observation = page[page.index('<li id="step-5"') : page.index('<li id="step-6"')]
    assert '<span id="call-call1">' in call
    assert '<a href="#result-call1">result</a>' in call
    assert '<a href="#obs-call1">observation</a>' in call
    assert '<span id="result-call1">' in result and '<a href="#call-call1">call</a>' in result
    assert (
        '<span id="obs-call1">' in observation and '<a href="#call-call1">call</a>' in observation
    )


def test_links_only_point_at_steps_on_the_page() -> None:
    page = to_html(login_run(), audience="user", tools=TOOLS)
    targets = set(re.findall(r'href="#([^"]+)"', page))
    anchors = set(re.findall(r'id="([^"]+)"', page))
    assert targets and targets <= anchors


def test_tokens_cost_and_durations_are_shown_per_step_and_in_total() -> None:
    page = to_html(login_run(), tools=TOOLS)
    assert "+0.250s · 0 tokens · $0.000000 · took 0.125s" in page  # step 1, a model call
    assert "+1.000s · took 0.002s" in page  # step 4, a tool result
    totals = [
        "<dt>tokens</dt><dd>0 (0+0)</dd>",
        "<dt>cost</dt><dd>$0.000000</dd>",
        "<dt>model time</dt><dd>0.625s</dd>",
        "<dt>elapsed</dt><dd>0.750s</dd>",
    ]
    assert all(total in page for total in totals)


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = to_html(login_run(), tools=TOOLS, diagram=SVG)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert not re.search(r"(src|href)=\"(?!#)", page)
    assert "<script" not in page and "http://" not in page.replace("http://www.w3.org", "")


def test_model_output_is_escaped() -> None:
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    with Agent(
        ScriptedModel([f"Thought: {hostile}\nFinal Answer: {hostile}"]), store="memory://"
    ) as a:
        page = to_html(a.run("x", thread_id="<b>t</b>"))
    assert "<script>" not in page and "<img" not in page and "<b>t</b>" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_an_svg_diagram_is_embedded_without_its_xml_prolog() -> None:
    page = to_html(login_run(), diagram=SVG)
    assert '<details open><summary><h2>Graph</h2></summary><div class="diagram"><svg ' in page
    assert "<?xml" not in page and "DOCTYPE svg" not in page


def test_a_mermaid_diagram_is_shown_as_escaped_text() -> None:
    page = to_html(login_run(), diagram="graph TD;\n  a --> b;")
    assert '<pre class="mermaid">graph TD;\n  a --&gt; b;</pre>' in page

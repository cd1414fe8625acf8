"""The studio's SVG: a layered layout drawn in pure Python, a run's overlay as CSS classes only."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from bench.svg_layout import synthetic_model
from tests.viz._graphs import DEPS, critic_run, with_critic
from thinkgraph import Agent, ScriptedModel, tool
from thinkgraph.graphs import react_graph
from thinkgraph.graphs.react import build_react_graph
from thinkgraph.tools.builtin import calculator
from thinkgraph.viz import (
    SVG_CSS,
    build_overlay,
    from_description,
    graph_description,
    overlay_from_result,
    to_graph_model,
    to_svg_layout,
)
from thinkgraph.viz.diff import compare_paths, run_graph_model
from thinkgraph.viz.layout import layered_layout
from thinkgraph.viz.model import END, START

SVG = "{http://www.w3.org/2000/svg}"
ADD = 'Thought: add\nAction: calculator\nAction Input: {"expression": "2 + 40"}'
ANSWER = "Thought: done\nFinal Answer: 42"
ROOT = Path(__file__).resolve().parents[2]
SAFE_ID = re.compile(r"^[A-Za-z0-9_-]+$")


# -- reading an SVG back -------------------------------------------------------------------


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    return root


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def nodes_of(root: ET.Element) -> dict[str, ET.Element]:
    found = [g for g in root.iter(f"{SVG}g") if "node" in classes(g)]
    by_name = {str(g.get("data-node")): g for g in found}
    assert len(by_name) == len(found), "two nodes share a data-node"
    return by_name


def edges_of(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    found = [g for g in root.iter(f"{SVG}g") if "edge" in classes(g)]
    by_pair = {(str(g.get("data-from")), str(g.get("data-to"))): g for g in found}
    assert len(by_pair) == len(found), "two edges share data-from and data-to"
    return by_pair


def strip_overlay(svg: str) -> str:
    """The SVG without what an overlay may change: class and data-visits attributes."""
    return re.sub(r' (?:class|data-visits)="[^"]*"', "", svg)


def texts(element: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in element.iter(f"{SVG}text")]


def curve_points(edge: Any, steps: int = 20) -> list[tuple[float, float]]:
    """Points along an edge's cubic Bézier segments."""
    points, (x0, y0) = [], edge.start
    for (x1, y1), (x2, y2), (x3, y3) in edge.segments:
        for i in range(steps + 1):
            t = i / steps
            a, b, c, d = (1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t**2, t**3
            points.append((a * x0 + b * x1 + c * x2 + d * x3, a * y0 + b * y1 + c * y2 + d * y3))
        x0, y0 = x3, y3
    return points


def view_box(root: ET.Element) -> tuple[float, float, float, float]:
    x, y, w, h = (float(v) for v in str(root.get("viewBox")).split())
    return x, y, w, h


# -- graphs ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def react_model() -> nx.DiGraph:
    return to_graph_model(build_react_graph(DEPS))


def planner(state: Any) -> dict[str, Any]:
    """A user's node before think: it writes nothing."""
    return {}


def build_planned(deps: Any) -> Any:
    """Our graph with a node of the user's where runs start (as examples/planner.py)."""
    graph = react_graph(deps)
    graph.add_node("planner", planner).set_entry("planner")
    graph.add_routes("planner", lambda state: "planned", {"planned": "think"}, guards=False)
    return graph.build()


# -- structure ------------------------------------------------------------------------------


def test_our_graph_draws_every_node_and_edge_with_its_label(react_model: nx.DiGraph) -> None:
    root = parse(to_svg_layout(react_model))
    nodes, edges = nodes_of(root), edges_of(root)
    assert set(nodes) == set(react_model.nodes)
    assert set(edges) == set(react_model.edges)
    for name, g in nodes.items():
        assert g.find(f"{SVG}rect") is not None
        assert texts(g)[0] == react_model.nodes[name]["label"]
    for (source, target), g in edges.items():
        assert g.find(f"{SVG}path") is not None
        label = react_model.edges[source, target].get("label")
        assert (label in texts(g)) if label else texts(g) == []
    assert "continue" in texts(edges["think", "act"])


def test_nodes_carry_their_kind_and_guards_as_classes(react_model: nx.DiGraph) -> None:
    nodes = nodes_of(parse(to_svg_layout(react_model)))
    for name, g in nodes.items():
        assert f"kind-{react_model.nodes[name]['kind']}" in classes(g)
    assert {"guarded", "kind-think"} <= classes(nodes["think"])
    assert "approval" in classes(nodes["approve"])
    assert "guarded" not in classes(nodes["act"])
    assert not any("user" in classes(g) for g in nodes.values())


def test_one_arrowhead_marker_and_no_style_block(react_model: nx.DiGraph) -> None:
    svg = to_svg_layout(react_model)
    root = parse(svg)
    markers = list(root.iter(f"{SVG}marker"))
    assert len(markers) == 1
    marker_id = markers[0].get("id")
    for g in edges_of(root).values():
        path = g.find(f"{SVG}path")
        assert path is not None and path.get("marker-end") == f"url(#{marker_id})"
    assert not list(root.iter(f"{SVG}style")) and "<style" not in svg


def test_the_view_box_holds_every_node(react_model: nx.DiGraph) -> None:
    root = parse(to_svg_layout(react_model))
    x0, y0, width, height = view_box(root)
    for g in nodes_of(root).values():
        rect = g.find(f"{SVG}rect")
        assert rect is not None
        x, y = float(rect.get("x", "")), float(rect.get("y", ""))
        w, h = float(rect.get("width", "")), float(rect.get("height", ""))
        assert x0 <= x and x + w <= x0 + width and y0 <= y and y + h <= y0 + height
    assert width < 2000 and height < 1200  # sized to content, not to a canvas


def test_default_css_styles_every_class_the_svg_uses(react_model: nx.DiGraph) -> None:
    for name in ("taken", "visited", "current", "paused", "breakpoint", "only-a", "only-b",
                 "both", "back", "user", "approval"):  # fmt: skip
        assert re.search(rf"\.{name}\b", SVG_CSS), name
    assert "<" not in SVG_CSS


# -- layout ---------------------------------------------------------------------------------


def test_layers_are_the_longest_path_from_start_with_back_edges_removed(
    react_model: nx.DiGraph,
) -> None:
    layout = layered_layout(react_model)
    layer = {name: box.layer for name, box in layout.nodes.items()}
    assert layer[START] == 0 and layer["think"] == 1
    assert layer["approve"] < layer["act"] < layer["observe"]
    assert layer[END] == max(layer.values()) and list(layer.values()).count(layer[END]) == 1
    back = {(e.source, e.target) for e in layout.edges if e.back}
    assert back == {("observe", "think"), ("validate", "think"), ("reset", "think"),
                    ("ask_human", "think")}  # fmt: skip
    for edge in layout.edges:
        if not edge.back and not edge.loop:
            assert layer[edge.source] < layer[edge.target], edge
    assert [(e.source, e.target) for e in layout.edges if e.loop] == [("think", "think")]


def test_nodes_and_labels_never_overlap(react_model: nx.DiGraph) -> None:
    for model in (react_model, to_graph_model(with_critic()), synthetic_model(150, 300)):
        layout = layered_layout(model)
        boxes = [(b.x, b.y, b.x + b.width, b.y + b.height) for b in layout.nodes.values()]
        boxes += [e.label_box for e in layout.edges if e.label_box is not None]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1 :]:
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)


def test_a_loop_is_a_back_edge_drawn_on_the_side() -> None:
    model = nx.DiGraph(name="loop")
    for name, kind in [(START, "start"), ("think", "think"), ("act", "act"),
                       ("observe", "observe"), (END, "end")]:  # fmt: skip
        model.add_node(name, kind=kind, label=name)
    for a, b in [(START, "think"), ("think", "act"), ("act", "observe"), ("observe", "think"),
                 ("think", END)]:  # fmt: skip
        model.add_edge(a, b, conditional=False, label=None)
    layout = layered_layout(model)
    back = next(e for e in layout.edges if (e.source, e.target) == ("observe", "think"))
    assert back.back
    think, observe = layout.nodes["think"], layout.nodes["observe"]
    # it leaves observe and enters think by a side, not through the nodes in between
    assert any(back.start[0] == pytest.approx(x) for x in (observe.x, observe.x + observe.width))
    assert any(back.end[0] == pytest.approx(x) for x in (think.x, think.x + think.width))
    act = layout.nodes["act"]
    beside = [(x, y) for x, y in curve_points(back) if act.y <= y <= act.y + act.height]
    assert beside and all(x <= act.x or x >= act.x + act.width for x, _ in beside)
    edge = edges_of(parse(to_svg_layout(model)))["observe", "think"]
    assert "back" in classes(edge)


def test_a_custom_graph_draws_the_users_nodes() -> None:
    model = to_graph_model(with_critic())
    root = parse(to_svg_layout(model))
    nodes, edges = nodes_of(root), edges_of(root)
    assert {"user", "kind-custom"} <= classes(nodes["critic"])
    assert "user" not in classes(nodes["validate"])
    assert ("validate", "critic") in edges and ("critic", "finalize") in edges


def test_a_run_of_a_custom_graph_draws_its_recorded_shape() -> None:
    with Agent(ScriptedModel([ANSWER]), store="memory://", build_graph=build_planned) as agent:
        result = agent.run("What is 6 * 7?", thread_id="planned")
        # drawn on another graph than the one it ran: the recorded shape wins
        model = run_graph_model(build_react_graph(agent.deps), result.chain)
    overlay = overlay_from_result(result, model)
    nodes = nodes_of(parse(to_svg_layout(model, overlay)))
    assert {"user", "visited", "kind-custom"} <= classes(nodes["planner"])
    layout = layered_layout(model)
    assert layout.nodes["planner"].layer == 1 and layout.nodes["think"].layer == 2


def test_a_recorded_description_draws_the_same_svg(react_model: nx.DiGraph) -> None:
    stored = json.loads(json.dumps(graph_description(react_model)))
    assert to_svg_layout(from_description(stored)) == to_svg_layout(react_model)


# -- a run's overlay ------------------------------------------------------------------------


def test_a_finished_run_marks_its_path_visits_and_where_it_ended() -> None:
    with Agent(ScriptedModel([ADD, ANSWER]), [calculator], store="memory://") as agent:
        result = agent.run("What is 2 + 40?", thread_id="done")
        model = to_graph_model(agent.graph)
    overlay = overlay_from_result(result, model)
    plain, marked = to_svg_layout(model), to_svg_layout(model, overlay)
    assert strip_overlay(plain) == strip_overlay(marked)
    root = parse(marked)
    nodes, edges = nodes_of(root), edges_of(root)
    assert nodes["think"].get("data-visits") == "2" and "visited" in classes(nodes["think"])
    assert nodes["act"].get("data-visits") == "1"
    for name in ("reset", "ask_human", "approve"):
        assert "visited" not in classes(nodes[name]) and nodes[name].get("data-visits") is None
    taken = {pair for pair, g in edges.items() if "taken" in classes(g)}
    assert taken == set(overlay.edge_visits)
    assert edges["observe", "think"].get("data-visits") == "1"
    assert {"current", "done"} <= classes(nodes["finalize"])
    assert [n for n, g in nodes.items() if "current" in classes(g)] == ["finalize"]
    assert not any("paused" in classes(g) for g in nodes.values())
    assert not any("visited" in classes(g) or "taken" in classes(g)
                   for g in parse(plain).iter(f"{SVG}g"))  # fmt: skip


def test_a_run_paused_for_approval_is_current_and_paused_at_the_gate() -> None:
    @tool(requires_approval=True)
    def send_email(to: str) -> str:
        """Send an e-mail."""
        return "sent"

    reply = 'Thought: mail\nAction: send_email\nAction Input: {"to": "a@b.c"}'
    with Agent(ScriptedModel([reply]), [send_email], store="memory://") as agent:
        result = agent.run("mail a@b.c", thread_id="gate")
        model = to_graph_model(agent.graph, approval_tools=["send_email"])
    overlay = overlay_from_result(result, model)
    svg = to_svg_layout(model, overlay)
    assert strip_overlay(svg) == strip_overlay(to_svg_layout(model))
    nodes = nodes_of(parse(svg))
    assert {"paused", "current", "visited", "approval"} <= classes(nodes["approve"])
    assert [n for n, g in nodes.items() if "current" in classes(g)] == ["approve"]
    assert "taken" in classes(edges_of(parse(svg))["think", "approve"])


def test_a_run_paused_at_a_breakpoint_marks_the_breakpoint_node() -> None:
    agent = Agent(ScriptedModel([ADD, ANSWER]), [calculator], store="memory://",
                  breakpoints={"before": ["act"]})  # fmt: skip
    with agent:
        result = agent.run("What is 2 + 40?", thread_id="bp")
        model = to_graph_model(agent.graph, breakpoints=agent.breakpoints)
    overlay = overlay_from_result(result, model)
    plain, svg = to_svg_layout(model), to_svg_layout(model, overlay)
    assert strip_overlay(svg) == strip_overlay(plain)
    act = nodes_of(parse(svg))["act"]
    assert {"breakpoint", "breakpoint-before", "paused", "current"} <= classes(act)
    assert "visited" not in classes(act)  # paused before it: it has not run
    assert "breakpoint" in classes(nodes_of(parse(plain))["act"])  # the model's, not the run's


def test_a_path_diff_of_two_runs_classes_nodes_and_edges() -> None:
    paths = []
    for thread, replies in (("tool", [ADD, ANSWER]), ("direct", [ANSWER])):
        with Agent(ScriptedModel(replies), [calculator], store="memory://") as agent:
            result = agent.run("What is 2 + 40?", thread_id=thread)
            model = to_graph_model(agent.graph)
        paths.append(overlay_from_result(result, model).path)
    diff = compare_paths(*paths)
    svg = to_svg_layout(model, diff=diff)
    assert strip_overlay(svg) == strip_overlay(to_svg_layout(model))
    root = parse(svg)
    nodes, edges = nodes_of(root), edges_of(root)
    assert {"only-a"} <= classes(nodes["act"]) and "only-a" in classes(nodes["observe"])
    assert "only-a" in classes(edges["think", "act"])
    assert "both" in classes(nodes["finalize"]) and "both" in classes(edges["finalize", END])
    assert "both" in classes(nodes[START]) and "shared" in classes(nodes[START])
    assert "diverge" in classes(nodes["think"])
    for untaken in (nodes["reset"], edges["think", "reset"]):
        assert not classes(untaken) & {"only-a", "only-b", "both"}
    swapped = nodes_of(parse(to_svg_layout(model, diff=compare_paths(*reversed(paths)))))
    assert "only-b" in classes(swapped["act"])


# -- determinism and hostile names ----------------------------------------------------------


def test_the_same_model_draws_byte_identical_svg(react_model: nx.DiGraph) -> None:
    again = to_graph_model(build_react_graph(DEPS))
    overlay = build_overlay(critic_run(), status="done", model=react_model)
    assert to_svg_layout(react_model) == to_svg_layout(again)
    assert to_svg_layout(react_model, overlay) == to_svg_layout(again, overlay)


def test_the_svg_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    model = synthetic_model(40, 80, seed=3)
    data = tmp_path / "model.json"
    data.write_text(json.dumps(graph_description(model)))
    script = (
        "import json, sys\n"
        "from thinkgraph.viz.model import from_description\n"
        "from thinkgraph.viz.svg import to_svg_layout\n"
        "sys.stdout.write(to_svg_layout(from_description(json.load(open(sys.argv[1])))))\n"
    )
    # this process has a random hash seed (or the one it was given): the child another
    seed = "1" if os.environ.get("PYTHONHASHSEED") != "1" else "2"
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", script, str(data)], env=env,
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    assert done.stdout == to_svg_layout(from_description(json.loads(data.read_text())))


HOSTILE = [
    "<script>alert(1)</script>",
    "say \"hi\" & 'bye'",
    "a b",
    "a_b",
    "a-b",
    "]]><svg onload=alert(1)>",
    "bell\x07 and\x00nul",
]


def hostile_model() -> nx.DiGraph:
    model = nx.DiGraph(name="<b>graph</b>")
    model.add_node(START, kind="start", label="start")
    for name in HOSTILE:
        model.add_node(name, kind='custom" onclick="x', label=name)
    model.add_node(END, kind="end", label="end")
    model.add_edge(START, HOSTILE[0], conditional=True, label="<img src=x onerror=alert(1)>")
    for a, b in pairwise(HOSTILE):
        model.add_edge(a, b, conditional=False, label='"quoted" & <tag>')
    model.add_edge(HOSTILE[-1], HOSTILE[0], conditional=True, label="back <again>")
    model.add_edge(HOSTILE[-1], END, conditional=False, label=None)
    return model


def test_hostile_names_and_labels_come_out_inert() -> None:
    svg = to_svg_layout(hostile_model())
    root = parse(svg)  # well-formed XML, control characters and all
    tags = {el.tag for el in root.iter()}
    assert tags <= {f"{SVG}{t}" for t in ("svg", "title", "defs", "marker", "path", "g", "rect",
                                          "text")}  # fmt: skip
    for el in root.iter():
        assert not any(attr.lower().startswith("on") for attr in el.attrib), el.attrib
    nodes = nodes_of(root)
    cleaned = {name.replace("\x07", "\ufffd").replace("\x00", "\ufffd") for name in HOSTILE}
    assert set(nodes) == cleaned | {START, END}
    assert texts(nodes["<script>alert(1)</script>"])[0] == "<script>alert(1)</script>"
    ids = [str(g.get("id")) for g in nodes.values()]
    assert len(set(ids)) == len(ids)
    assert all(i.startswith("node-") and SAFE_ID.match(i) for i in ids), ids
    for g in nodes.values():
        assert not any(c.startswith("custom") or '"' in c for c in classes(g))
    edges = edges_of(root)
    assert "<img src=x onerror=alert(1)>" in texts(edges[START, HOSTILE[0]])
    assert "&lt;script&gt;" in svg and "&lt;img" in svg
    assert "<script" not in svg and "<img" not in svg and "<svg onload" not in svg


def test_an_id_prefix_keeps_two_drawings_on_one_page_apart(react_model: nx.DiGraph) -> None:
    a = parse(to_svg_layout(react_model, id_prefix="a-"))
    b = parse(to_svg_layout(react_model, id_prefix="b-"))
    ids_a = {el.get("id") for el in a.iter() if el.get("id")}
    ids_b = {el.get("id") for el in b.iter() if el.get("id")}
    assert ids_a and not ids_a & ids_b
    assert "a-node-think" in ids_a
    with pytest.raises(ValueError, match="id_prefix"):
        to_svg_layout(react_model, id_prefix='x" onload="y')


def test_a_150_node_graph_with_300_edges_renders() -> None:
    model = synthetic_model(150, 300)
    root = parse(to_svg_layout(model))
    assert len(nodes_of(root)) == 152 and len(edges_of(root)) == model.number_of_edges()
    layout = layered_layout(model)
    assert sum(e.back for e in layout.edges) > 0
    for edge in layout.edges:
        if not edge.back and not edge.loop:
            assert layout.nodes[edge.source].layer < layout.nodes[edge.target].layer


def test_an_empty_model_and_bare_nodes_draw() -> None:
    assert nodes_of(parse(to_svg_layout(nx.DiGraph()))) == {}
    bare = nx.DiGraph()
    bare.add_edge("x", "y")  # no kind, no label: a graph networkx made, not ours
    bare.add_edge("y", "y")
    nodes = nodes_of(parse(to_svg_layout(bare)))
    assert set(nodes) == {"x", "y"} and texts(nodes["y"]) == ["y"]
    assert not any(c.startswith("kind-") for c in classes(nodes["x"]))


def test_nodes_link_where_the_caller_says_and_the_geometry_stays(react_model: nx.DiGraph) -> None:
    def href(name: str) -> str | None:
        return None if name in (START, END) else f"/steps?node={name}&x=<1>"

    plain = to_svg_layout(react_model)
    linked = to_svg_layout(react_model, node_href=href)
    root = parse(linked)
    nodes = nodes_of(root)
    for name, g in nodes.items():
        links = list(g.iter(f"{SVG}a"))
        if name in (START, END):
            assert links == [], name
            continue
        assert len(links) == 1, name
        assert links[0].get("href") == f"/steps?node={name}&x=<1>"  # escaped, read back
        assert links[0].get("aria-label") == f"steps of {name}"
        assert links[0].find(f"{SVG}rect") is not None  # the whole box is the link
    assert 'href="/steps?node=think&amp;x=&lt;1&gt;"' in linked
    assert root.get("role") == "group"  # an image's children are hidden from readers
    assert parse(plain).get("role") == "img"
    # Links add elements, never geometry: the boxes are where they were.
    rects = [r.attrib for r in parse(plain).iter(f"{SVG}rect")]
    assert [r.attrib for r in root.iter(f"{SVG}rect")] == rects


def test_a_hostile_link_is_refused_or_inert() -> None:
    model = hostile_model()
    with pytest.raises(ValueError, match="href"):
        to_svg_layout(model, node_href=lambda name: "javascript:alert(1)")
    svg = to_svg_layout(model, node_href=lambda name: "/n?x=" + name)
    assert "<script" not in svg and "<img" not in svg
    for el in parse(svg).iter():
        assert not any(attr.lower().startswith("on") for attr in el.attrib), el.attrib


def test_a_layout_is_kept_by_the_graphs_shape(
    react_model: nx.DiGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same shape (nodes, edges, their labels) is laid out once; another label or edge
    is another shape; only the last `LAYOUTS_KEPT` shapes are kept."""
    import thinkgraph.viz.layout as layout

    made: list[int] = []
    lay_out = layout._lay_out

    def counted(model: nx.DiGraph) -> Any:
        made.append(model.number_of_nodes())
        return lay_out(model)

    monkeypatch.setattr(layout, "_lay_out", counted)
    monkeypatch.setattr(layout, "_kept", type(layout._kept)())
    first = layered_layout(react_model)
    again = layered_layout(nx.DiGraph(react_model))  # a copy: the same shape
    assert again is first and len(made) == 1
    relabelled = nx.DiGraph(react_model)
    relabelled.nodes["think"]["label"] = "a much longer label for think"
    assert layered_layout(relabelled) is not first and len(made) == 2
    assert layered_layout(relabelled).nodes["think"].width > first.nodes["think"].width
    for size in range(layout.LAYOUTS_KEPT):
        layered_layout(synthetic_model(size + 3, size + 3))
    assert layered_layout(react_model) is not first  # pushed out by the newer shapes

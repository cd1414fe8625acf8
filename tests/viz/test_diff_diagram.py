"""Two runs' paths on one diagram: shared path, divergence node, each run's own branch."""

from __future__ import annotations

import networkx as nx
import pytest

from thinkgraph.viz.diff import compare_paths, to_ascii_diff, to_mermaid_diff
from thinkgraph.viz.model import END, START


@pytest.fixture
def model() -> nx.DiGraph:
    """start → think; think ⇢ act | finalize; act → observe → think; finalize → end."""
    g = nx.DiGraph(name="small")
    for node, kind in [
        (START, "start"),
        ("think", "think"),
        ("act", "act"),
        ("observe", "observe"),
        ("finalize", "finalize"),
        (END, "end"),
    ]:
        g.add_node(node, kind=kind, label=kind if kind in ("start", "end") else node)
    g.add_edge(START, "think", conditional=False, label=None)
    g.add_edge("think", "act", conditional=True, label="continue + calls")
    g.add_edge("think", "finalize", conditional=True, label="final_answer")
    g.add_edge("act", "observe", conditional=False, label=None)
    g.add_edge("observe", "think", conditional=True, label="next step")
    g.add_edge("finalize", END, conditional=False, label=None)
    return g  # fmt: skip


TOOL_FIRST = (START, "think", "act", "observe", "think", "finalize", END)
AT_ONCE = (START, "think", "finalize", END)


def test_paths_part_at_the_last_shared_node_and_meet_again() -> None:
    diff = compare_paths(TOOL_FIRST, AT_ONCE)
    assert diff.shared == (START, "think") and diff.split == "think"
    assert diff.nodes == {START: "shared", "think": "diverge", "act": "a", "observe": "a",
                          "finalize": "both", END: "both"}  # fmt: skip
    assert diff.edges == {(START, "think"): "shared", ("think", "act"): "a",
                          ("act", "observe"): "a", ("observe", "think"): "a",
                          ("think", "finalize"): "both", ("finalize", END): "both"}  # fmt: skip


def test_the_same_path_is_all_shared_unless_a_divergence_node_is_given() -> None:
    assert compare_paths(AT_ONCE, AT_ONCE).split is None
    assert set(compare_paths(AT_ONCE, AT_ONCE).nodes.values()) == {"shared"}
    args = compare_paths(AT_ONCE, AT_ONCE, divergence="think")
    assert args.split == "think" and args.nodes["think"] == "diverge"


def test_mermaid_marks_shared_path_divergence_and_each_branch(model: nx.DiGraph) -> None:
    text = to_mermaid_diff(model, TOOL_FIRST, AT_ONCE, kind="route", names=("r1", "r4"))
    assert (
        text
        == """graph TD;
\t%% A: r1 · B: r4
\t__start__(["start"])
\tthink["think<br/>A×2 B×1<br/>first divergence: route"]
\tact["act<br/>A×1"]
\tobserve["observe<br/>A×1"]
\tfinalize["finalize<br/>A×1 B×1"]
\t__end__(["end"])
\t__start__ --> think;
\tthink -.->|"continue + calls · A"| act;
\tthink -.->|"final_answer · A+B"| finalize;
\tact -->|"A"| observe;
\tobserve -.->|"next step · A"| think;
\tfinalize -->|"A+B"| __end__;
\tlinkStyle 0 stroke:#495057,stroke-width:3px;
\tlinkStyle 2,5 stroke:#6f42c1,stroke-width:3px;
\tlinkStyle 1,3,4 stroke:#0d6efd,stroke-width:3px;
\tclassDef first fill-opacity:0;
\tclass __start__ first;
\tclassDef last fill:#bfb6fc;
\tclass __end__ last;
\tclassDef shared fill:#e9ecef,stroke:#495057,stroke-width:2px;
\tclass __start__ shared;
\tclassDef both fill:#e2d9f3,stroke:#6f42c1,stroke-width:2px;
\tclass finalize,__end__ both;
\tclassDef a fill:#cfe2ff,stroke:#0d6efd,stroke-width:2px;
\tclass act,observe a;
\tclassDef diverge fill:#f8d7da,stroke:#c82333,stroke-width:4px;
\tclass think diverge;
"""
    )


def test_mermaid_gives_run_b_its_own_dashed_style(model: nx.DiGraph) -> None:
    text = to_mermaid_diff(model, AT_ONCE, TOOL_FIRST)
    assert "\tclassDef b fill:#ffe5d0,stroke:#fd7e14,stroke-width:2px,stroke-dasharray:5 3;" in text
    assert "\tclass act,observe b;" in text
    assert "\tlinkStyle 1,3,4 stroke:#fd7e14,stroke-width:3px,stroke-dasharray:5 3;" in text


def test_ascii_marks_each_node_and_edge(model: nx.DiGraph) -> None:
    text = to_ascii_diff(model, TOOL_FIRST, AT_ONCE, kind="route", names=("r1", "r4"))
    assert text.splitlines()[3:] == [
        "(start)  [shared]",
        "  -->  think  [shared]",
        "think  [Ax2 Bx1]  << FIRST DIVERGENCE: route",
        "  -.-> act       continue + calls  [A]",
        "  -.-> finalize  final_answer  [A+B]",
        "act  [A only]  [Ax1]",
        "  -->  observe  [A]",
        "finalize  [A and B]  [Ax1 Bx1]",
        "  -->  (end)  [A+B]",
        "observe  [A only]  [Ax1]",
        "  -.-> think  next step  [A]",
        "(end)  [A and B]",
    ]
    assert text.startswith("diff of two runs on small: A = r1, B = r4\n")
    assert text.isascii()

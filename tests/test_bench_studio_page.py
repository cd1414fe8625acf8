"""The studio page benchmark runs (its quick form: one run): `thinkgraph studio` serves the
150-node graph, headless system Chromium loads the page of a run and follows its events,
and every measure comes out as a time in the table, the results page and the JSON line.
Skipped without a system Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import studio_page
from thinkgraph import Agent, ScriptedModel

pytestmark = pytest.mark.skipif(studio_page.CHROMIUM is None, reason=studio_page.NO_CHROMIUM)


def test_the_quick_run_times_the_page_load_and_the_events_of_a_150_node_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "studio_page.md"
    measured = studio_page.main(["--quick", "--out", str(out)])

    [sample] = measured.samples
    for load in (sample.live, sample.done):
        assert 0 < load.server_ms < load.html_ms <= load.drawn_ms
        assert load.html_ms <= load.load_ms < 60_000
        assert load.nodes >= 150 and load.edges >= 300  # the whole graph is drawn
    assert sample.event_ms and all(0 <= ms < 30_000 for ms in sample.event_ms)
    medians = measured.medians()
    assert list(medians) == [
        "server, run going", "HTML received, run going", "load event, run going",
        "drawing visible, run going", "server, run done", "HTML received, run done",
        "load event, run done", "drawing visible, run done", "event → classes",
    ]  # fmt: skip

    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == "| measure | median ms | fastest | slowest | samples |"
    assert printed[-1] == json.dumps({"studio_page": medians})
    written = out.read_text()
    assert "\n".join(printed[:11]) in written and "--repeat 1" in written
    assert f"| event → classes | {medians['event → classes']:.0f} |" in written


def test_the_graph_is_built_with_150_nodes_of_the_users_in_layers() -> None:
    # Building it checks it: every node reachable from the first, every loop guarded.
    model = ScriptedModel([studio_page.ANSWER])
    with Agent(model, build_graph=studio_page.build, store="memory://") as agent:
        drawn = agent.graph.get_graph().nodes
    shape = studio_page.layers()
    names = [name for layer in shape for name in layer]
    assert len(set(names)) == 150 and set(names) <= set(drawn) and shape[0] == ["n000"]
    assert all(len(layer) <= studio_page.WIDTH for layer in shape)

"""Regression fixtures: a recorded run, masked as the views mask it, replays offline.

A run unlocks a door with three secrets (a `sensitive` pin, a token-looking key, a
credential-shaped session in the tool's output), after an approval, then calculates.
Its fixture holds none of them and replays `same` from no store; a changed policy or
prompt makes the replay fail with where it differs, and accepting the change makes the
next replay pass.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.regress_support.sample import (
    PIN,
    SESSION,
    TASK,
    TOKEN,
    FrontDoor,
    described,
    long_script,
    script,
    tools,
)
from thinkgraph import Agent, ScriptedModel
from thinkgraph.errors import ConfigError
from thinkgraph.hitl import Approve
from thinkgraph.result import RunResult
from thinkgraph.state import LLMCallStep
from thinkgraph.testing.regress import (
    Fixture,
    fixture_of,
    graph_mismatch,
    load_tools,
    mismatch,
    replay_fixture,
    updated,
)
from thinkgraph.testing.template import (
    MAX_NAME,
    check_graph_address,
    check_name,
    check_tools_address,
    name_of,
    render,
)
from thinkgraph.views.redact import MASK, redact_chain
from thinkgraph.views.visibility import tool_map

ADDRESS = "tests.regress_support.sample:tools"
OUR_GRAPH = "tests.cli.sample_graphs:other"
"""A module-level builder of thinkgraph's own graph."""


def record(model: ScriptedModel, store: str = "memory://") -> tuple[RunResult, Agent]:
    agent = Agent(model, tools, store=store)
    paused = agent.run(TASK, "door")
    assert paused.status == "paused"
    done = agent.resume("door", {p.call_id: Approve() for p in paused.pending})
    assert done.status == "done", done.detail
    return done, agent


@pytest.fixture
def exported(tmp_path: Path) -> tuple[RunResult, Path]:
    done, agent = record(script())
    with agent:
        fixture = fixture_of(done, tools=tools, tool_addresses=[ADDRESS], limits=agent.limits)
    path = tmp_path / "door.json"
    fixture.dump(path)
    return done, path


def test_the_fixture_holds_no_value_the_views_mask(exported: tuple[RunResult, Path]) -> None:
    done, path = exported
    text = path.read_text()
    for secret in (PIN, TOKEN, SESSION):
        assert secret not in text
    # Every value the views mask in this run is masked in the fixture too.
    shown = json.dumps(
        [s.model_dump(mode="json") for s in redact_chain(done.chain, tool_map(tools))]
    )
    assert MASK in shown and MASK in text
    data = json.loads(text)
    assert data["expect"]["outcome"] == "same"
    assert data["expect"]["answer"] == "the back door is open and 6*7 = 42"
    assert data["approve"] == ["unlock"] and data["tools"] == [ADDRESS]


def leaves(value: object, path: tuple[object, ...] = ()) -> dict[tuple[object, ...], str]:
    """Every string in a JSON value, by its path."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in leaves(item, (*path, key)).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in leaves(item, (*path, i)).items()}
    return {path: value} if isinstance(value, str) else {}


def test_no_value_a_view_masks_is_in_the_fixture(exported: tuple[RunResult, Path]) -> None:
    done, path = exported
    text = path.read_text()
    real = leaves([s.model_dump(mode="json") for s in done.chain])
    shown = leaves([s.model_dump(mode="json") for s in redact_chain(done.chain, tool_map(tools))])
    hidden = {value for where, value in real.items() if shown.get(where) != value}
    assert hidden  # the views do mask something in this run
    for value in hidden:
        for secret in (PIN, TOKEN, SESSION):
            if secret in value:
                assert secret not in text
        if value not in shown.values():  # a whole value the views never show
            assert json.dumps(value)[1:-1] not in text, value[:60]


def test_a_fixture_replays_same_from_no_store(exported: tuple[RunResult, Path]) -> None:
    done, path = exported
    report = replay_fixture(path, tools=[ADDRESS])
    assert report.outcome == "same", report.to_text()
    assert (report.model_calls, report.tool_runs) == (0, 0)
    assert (report.served_replies, report.served_results, report.served_decisions) == (3, 2, 1)
    assert report.replay.answer == done.answer
    assert mismatch(report, Fixture.load(path).expect) == ""


def test_changed_arguments_fail_with_the_field_diff(exported: tuple[RunResult, Path]) -> None:
    _, path = exported
    report = replay_fixture(path, tools=tools, policy=FrontDoor())
    problem = mismatch(report, Fixture.load(path).expect)
    assert report.outcome == "diverged"
    assert "expected same, got first divergence: args at think#1" in problem
    assert "args.door" in problem


def test_a_prompt_change_fails_then_update_makes_it_pass(exported: tuple[RunResult, Path]) -> None:
    _, path = exported
    new_tools = described("Open a locked door; needs its pin.")
    report = replay_fixture(path, tools=new_tools)
    problem = mismatch(report, Fixture.load(path).expect)
    assert problem.startswith("expected same, got request changed at think#1")
    assert "Open a locked door; needs its pin." in problem  # the prompt's diff

    updated(Fixture.load(path), report, new_tools).dump(path)
    assert PIN not in path.read_text() and TOKEN not in path.read_text()
    again = replay_fixture(path, tools=new_tools)
    assert again.outcome == "same" and mismatch(again, Fixture.load(path).expect) == ""
    # The old prompt is now the change.
    assert replay_fixture(path, tools=tools).outcome == "request changed"


def test_an_accepted_divergence_is_expected_from_then_on(exported: tuple[RunResult, Path]) -> None:
    _, path = exported
    report = replay_fixture(path, tools=tools, policy=FrontDoor())
    updated(Fixture.load(path), report, tools).dump(path)
    expect = Fixture.load(path).expect
    assert expect.outcome == "diverged" and expect.divergence == report.headline()
    assert mismatch(replay_fixture(path, tools=tools, policy=FrontDoor()), expect) == ""
    assert "expected diverged, got same" in mismatch(replay_fixture(path, tools=tools), expect)


def test_a_masked_prompt_is_recorded_with_its_own_digest(exported: tuple[RunResult, Path]) -> None:
    done, path = exported
    source = Fixture.load(path).source
    recorded = [s for s in done.chain if isinstance(s, LLMCallStep)]
    masked = [s for s in source.chain if isinstance(s, LLMCallStep)]
    # The first call was sent no secret; the second repeats the unlock call's pin.
    assert masked[0].request and recorded[0].request
    assert masked[0].request.digest == recorded[0].request.digest
    assert masked[1].request and recorded[1].request
    assert masked[1].request.digest != recorded[1].request.digest


def test_a_long_run_replays_from_its_fixture(tmp_path: Path) -> None:
    done, agent = record(long_script(sums=6))
    agent.close()
    assert len(done.chain) >= 20
    path = tmp_path / "long.json"
    fixture_of(done, tools=tools, tool_addresses=[ADDRESS]).dump(path)
    started = time.perf_counter()
    report = replay_fixture(path, tools=tools)
    took = time.perf_counter() - started
    assert report.outcome == "same", report.to_text()
    print(f"replayed {len(done.chain)} steps in {took:.3f}s")  # measured, not asserted


def test_the_plugin_imports_nothing_heavy() -> None:
    code = (
        "import sys, thinkgraph.testing.plugin\n"
        "heavy = [m for m in ('thinkgraph.agent', 'langgraph', 'litellm') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_fixture_s_addresses_are_never_imported(
    exported: tuple[RunResult, Path], tmp_path: Path
) -> None:
    _, path = exported
    data = json.loads(path.read_text())
    never = "tests.regress_support.never_imported"
    path.write_text(json.dumps({**data, "tools": [f"{never}:tools"], "graph": f"{never}:build"}))
    with pytest.raises(ConfigError, match=r"recorded with tools .*pass tools="):
        replay_fixture(path)
    with pytest.raises(ConfigError, match=r"recorded on graph .*pass graph="):
        replay_fixture(path, tools=tools)
    assert never not in sys.modules
    # The graph the caller names is the one replayed on; the fixture's is only compared.
    assert replay_fixture(path, tools=tools, graph=OUR_GRAPH).outcome == "same"
    assert "was recorded on graph" in graph_mismatch(Fixture.load(path), None)
    assert graph_mismatch(Fixture.load(path), f"{never}:build") == ""


def test_a_module_address_is_looked_for_in_root_and_a_missing_one_names_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "roottools_x1.py").write_text(
        "from tests.regress_support.sample import calculator\ntools = [calculator]\n"
    )
    assert [t.name for t in load_tools(["roottools_x1:tools"], tmp_path)] == ["calculator"]
    with pytest.raises(ConfigError) as caught:
        load_tools(["absent_tools_x1:tools"], tmp_path)
    message = str(caught.value)
    assert "module 'absent_tools_x1' is not found from " + str(tmp_path.resolve()) in message
    assert "PYTHONPATH" in message and "\n" not in message


def test_the_test_module_is_its_template_with_only_values_filled(tmp_path: Path) -> None:
    made = render(
        "door.json",
        graph="graphs/my graph.py:build",
        tools=["doortools:tools", "calculator"],
        root=tmp_path,
        test_folder=tmp_path / "tests" / "regress",
    )
    namespace: dict[str, object] = {"__file__": str(tmp_path / "tests" / "regress" / "t.py")}
    exec(compile(made, "test_door.py", "exec"), namespace)
    assert namespace["GRAPH"] == "graphs/my graph.py:build"
    assert namespace["TOOLS"] == ("doortools:tools", "calculator")
    assert namespace["ROOT"] == tmp_path / "tests" / "regress" / "../.."
    assert namespace["FIXTURE"] == tmp_path / "tests" / "regress" / "door.json"
    assert sorted(k for k in namespace if not k.startswith("__")) == [
        "FIXTURE", "GRAPH", "HERE", "Path", "ROOT", "TOOLS", "test_replays_as_recorded",
    ]  # fmt: skip
    plain = render("a.json", graph=None, tools=[], root=tmp_path, test_folder=tmp_path)
    assert plain.count("\n") == made.count("\n")


@pytest.mark.parametrize(
    "address",
    ['g.py:build"""', "g.py:build\nimport os", "mod:build;x", "mod:", "évil:build", "a b:c",
     'we"ird/g.py:build', "g'.py:build", "g.py:build()", "mod:build\\"],
)  # fmt: skip
def test_a_graph_address_a_test_cannot_hold_is_refused(address: str) -> None:
    with pytest.raises(ConfigError, match="cannot be written into a test"):
        check_graph_address(address)
    with pytest.raises(ConfigError):
        render("a.json", graph=address, tools=[], root=Path.cwd(), test_folder=Path.cwd())


@pytest.mark.parametrize(
    "address", ["mod:tools'", "mod.py :tools", "mod:tools.x", "my-tools:tools", "mod :tools", ""]
)
def test_a_tools_address_a_test_cannot_hold_is_refused(address: str) -> None:
    with pytest.raises(ConfigError, match="cannot be written into a test"):
        check_tools_address(address)


def test_good_addresses_and_names_are_kept_as_given() -> None:
    for graph in ("pkg.graphs:build", "graphs/reflect.py:build", "../g.py:Graphs.build",
                  "C:/proj/g.py:build", "/home/me/my proj/g-1.py:build"):  # fmt: skip
        assert check_graph_address(graph) == graph
    for address in ("calculator", "pkg.tools:tools", "_t:x1"):
        assert check_tools_address(address) == address
    assert check_name("door_2") == "door_2"
    for name in ("é", "1door", "a" * 65, "door.json", "", "a b"):
        with pytest.raises(ConfigError, match="ASCII letters"):
            check_name(name)


def test_a_thread_id_gives_a_test_name_made_of_its_ascii_letters() -> None:
    assert name_of("Q3-Report") == "q3_report"
    assert name_of("é") == "e" and name_of("café crème") == "cafe_creme"
    assert name_of("7up") == "run_7up"
    assert name_of('x""";__import__("os")') == "x_import_os"
    for thread in ("日本", '"""', "'''", "\\\\"):
        made = name_of(thread)
        assert made.startswith("run_") and check_name(made) == made
    assert name_of("日本") != name_of("中国")
    assert len(name_of("a" * 256)) <= MAX_NAME

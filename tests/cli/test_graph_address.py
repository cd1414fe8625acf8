"""The address of a graph builder: read, imported, derived, recorded with a run.

`thinkgraph.graphs.address` names a builder as ``module:function`` or
``path/to/file.py:function``; an `Agent` built on one records it in every checkpoint's
metadata, where a resume and a fork carry it on and a reader finds it without building
the graph.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli import sample_graphs, sample_tools
from tests.cli.sample_graphs import OTHER, REFLECT
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.errors import ConfigError
from thinkgraph.graphs.address import (
    GRAPHS_ENV,
    GraphAddressError,
    address_of,
    check_continues_on_its_graph,
    check_trusted,
    graph_source,
    is_gone,
    langgraph_json_address,
    load_builder,
    recorded_address,
    trusted_addresses,
)

ROOT = Path(__file__).resolve().parents[2]
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]


def test_a_module_level_builder_is_its_module_and_name() -> None:
    assert address_of(sample_graphs.build) == REFLECT
    assert load_builder(REFLECT) is sample_graphs.build


def test_a_builder_nobody_can_import_again_has_no_address() -> None:
    def nested(deps: Any) -> Any:
        return sample_graphs.build(deps)

    assert address_of(nested) is None
    assert address_of(lambda deps: sample_graphs.build(deps)) is None
    assert address_of(functools.partial(sample_graphs.build)) is None
    # Its runs record a name that refuses to import, naming what to pass instead.
    builder, address = graph_source(nested, None)
    assert builder is nested and address is not None and address.startswith("<unnamed>:")
    with pytest.raises(GraphAddressError, match="pass --graph module:function"):
        load_builder(address)


def test_a_builder_of_a_script_is_addressed_by_its_file(tmp_path: Path) -> None:
    script = tmp_path / "my_script.py"
    script.write_text(
        "from thinkgraph.graphs.address import address_of\n"
        "def build(deps):\n    return None\n"
        "if __name__ == '__main__':\n    print(address_of(build))\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=ROOT, check=True
    )
    address = done.stdout.strip()
    assert address == f"{script.resolve()}:build"
    # Imported again by that address, the file is not run as a script.
    assert load_builder(address).__name__ == "build"


@pytest.mark.parametrize(
    ("address", "why"),
    [
        ("no_colon_here", "use module:function or path/to/file.py:function"),
        ("tests.cli.sample_graphs:", "use module:function"),
        ("no_such_module_xyz:build", "module 'no_such_module_xyz' is not found"),
        ("tests.cli.sample_graphs:nope", "has no attribute 'nope'"),
        ("tests.cli.sample_graphs:StateGraph", "is a class, not a function"),
        ("tests.cli.sample_graphs:REFLECT", "is a str, not a function"),
        ("./missing/file.py:build", "no file"),
    ],
)
def test_an_address_that_does_not_import_is_one_line(address: str, why: str) -> None:
    with pytest.raises(GraphAddressError, match=why) as caught:
        load_builder(address)
    assert "\n" not in str(caught.value)
    assert isinstance(caught.value, ConfigError)


def test_a_file_that_fails_to_import_says_why_in_one_line(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('no database\\nsecond line')\n")
    with pytest.raises(GraphAddressError, match="RuntimeError: no database") as caught:
        load_builder(f"{broken}:build")
    assert "\n" not in str(caught.value)


def test_langgraph_json_names_the_graph_by_file_from_its_folder(tmp_path: Path) -> None:
    assert langgraph_json_address(tmp_path) is None
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"g": "./src/g.py:build"}}))
    assert langgraph_json_address(tmp_path) == f"{(tmp_path / 'src/g.py').resolve()}:build"
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"g": REFLECT}}))
    assert langgraph_json_address(tmp_path) == REFLECT
    (tmp_path / "langgraph.json").write_text("{not json")
    with pytest.raises(GraphAddressError, match="cannot read it as JSON"):
        langgraph_json_address(tmp_path)


def test_an_agent_takes_a_builder_or_an_address_not_both() -> None:
    agent = Agent(ScriptedModel([]), graph=REFLECT, store="memory://")
    assert agent.graph_address == REFLECT and "reflect" in agent.graph.nodes
    assert Agent(ScriptedModel([]), store="memory://").graph_address is None
    with pytest.raises(GraphAddressError, match="not both"):
        Agent(ScriptedModel([]), graph=REFLECT, build_graph=sample_graphs.build)


def test_the_address_is_in_every_checkpoint_a_resume_and_a_fork_write() -> None:
    tools = [sample_tools.send_email]
    with Agent(ScriptedModel(REPLIES * 2), tools, graph=REFLECT, store="memory://") as agent:
        paused = agent.run("email the ceo", thread_id="t1")
        saver = agent.graph.checkpointer
        assert recorded_address(saver, "t1") == REFLECT
        done = agent.resume("t1", {paused.pending[0].call_id: Approve()})
        assert done.status == "done" and "reflect" in [s.node for s in done.chain]
        addresses = {c.metadata.get("thinkgraph_graph") for c in saver.list(  # type: ignore[union-attr]
            {"configurable": {"thread_id": "t1"}}
        )}  # fmt: skip
        assert addresses == {REFLECT}
        first = agent.history("t1")[2].checkpoint_id
        agent.fork("t1", first, new_thread_id="t2")
        assert recorded_address(saver, "t2") == REFLECT
        assert recorded_address(saver, "no-such-thread") is None


def test_another_graph_is_refused_naming_the_runs() -> None:
    check_continues_on_its_graph("t1", REFLECT, REFLECT)
    check_continues_on_its_graph("t1", None, None)
    with pytest.raises(GraphAddressError, match=f"thread 't1' runs on {REFLECT}"):
        check_continues_on_its_graph("t1", REFLECT, OTHER)
    with pytest.raises(GraphAddressError, match="runs on thinkgraph's built-in graph"):
        check_continues_on_its_graph("t1", None, REFLECT)
    with pytest.raises(GraphAddressError, match=r"runs on tests\.cli\.sample_graphs:build"):
        check_continues_on_its_graph("t1", REFLECT, None)
    # A builder that moved: its old address imports no more, the agent names where it is.
    check_continues_on_its_graph("t1", "tests.cli.gone:build", REFLECT)


def test_the_cli_modules_import_one_another_without_a_cycle() -> None:
    """Counting the imports inside functions too: `_options` and `_app` are at the bottom."""
    edges: dict[str, set[str]] = {}
    for path in (ROOT / "thinkgraph" / "cli").glob("*.py"):
        found = edges.setdefault(path.stem, set())
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                "thinkgraph.cli."
            ):
                found.add(str(node.module).rsplit(".", 1)[1])

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in edges.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    assert [m for m in edges if m != "__init__" and reaches(m, m, set())] == []
    assert edges["_options"] == set() and edges["_app"] == {"_options"}


def _marker_package(root: Path) -> Path:
    """A package whose import (and whose submodule's) writes a file: importing is seen."""
    package = root / "markpkg"
    package.mkdir()
    (package / "__init__.py").write_text(
        f"import pathlib\npathlib.Path({str(root / 'imported')!r}).touch()\n"
    )
    (package / "graphs.py").write_text(
        f"import pathlib\npathlib.Path({str(root / 'imported')!r}).touch()\n"
        "def build(deps):\n    raise SystemExit('built')\n"
    )
    return root / "imported"


def test_a_recorded_address_is_compared_as_text_and_never_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = _marker_package(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    evil_file = f"{tmp_path / 'markpkg' / 'graphs.py'}:build"
    for recorded in ("markpkg.graphs:build", evil_file):
        with pytest.raises(GraphAddressError, match="runs on"):
            check_continues_on_its_graph("t1", recorded, REFLECT)
        with pytest.raises(GraphAddressError, match="runs on"):
            check_continues_on_its_graph("t1", recorded, None)
        assert not is_gone(recorded)
    # A relative path is made absolute from here before it is compared.
    monkeypatch.chdir(tmp_path)
    check_continues_on_its_graph("t1", evil_file, "markpkg/graphs.py:build")
    assert not marker.exists() and "markpkg" not in sys.modules


def test_is_gone_finds_a_moved_builder_without_importing(tmp_path: Path) -> None:
    marker = _marker_package(tmp_path)
    assert is_gone(f"{tmp_path / 'nowhere.py'}:build")
    assert is_gone("tests.cli.gone:build") and is_gone("no_such_top_module:build")
    assert is_gone("<unnamed>:build") and is_gone("not an address")
    assert not is_gone(REFLECT) and not is_gone(f"{tmp_path / 'markpkg' / 'graphs.py'}:build")
    assert not marker.exists()


def test_trusted_addresses_are_named_listed_in_langgraph_json_or_in_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(GRAPHS_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    assert trusted_addresses() == set()
    assert trusted_addresses([REFLECT, None]) == {REFLECT}
    (tmp_path / "langgraph.json").write_text(json.dumps({"graphs": {"a": "./g.py:build"}}))
    assert trusted_addresses() == {f"{(tmp_path / 'g.py').resolve()}:build"}
    monkeypatch.setenv(GRAPHS_ENV, f" {OTHER} ,, not an address, ")
    assert OTHER in trusted_addresses()
    assert check_trusted(OTHER, "t1") == OTHER
    with pytest.raises(GraphAddressError) as refused:
        check_trusted("../../evil.py:build", "t1")
    message = str(refused.value)
    assert "\n" not in message and "'../../evil.py:build'" in message
    assert "not trusted here" in message and GRAPHS_ENV in message and "--graph" in message


# -- one importer for every address ---------------------------------------------------------


def test_every_option_takes_the_same_address_forms(tmp_path: Path) -> None:
    """--tools, --validator and --agent take path/to/file.py:attr as --graph does."""
    from typer.testing import CliRunner

    from thinkgraph.cli import app

    (tmp_path / "mine.py").write_text(
        "from thinkgraph import tool\n"
        "from thinkgraph.state import Verdict\n"
        "@tool\n"
        "def shout(text: str) -> str:\n"
        "    '''Shout it.'''\n"
        "    return text.upper()\n"
        "TOOLS = [shout]\n"
        "def non_empty(answer, state):\n"
        "    return Verdict(passed=bool(answer), reason='empty', validator='non_empty')\n"
    )
    script = tmp_path / "replies.json"
    script.write_text(json.dumps([
        'Thought: shout\nAction: shout\nAction Input: {"text": "hi"}',
        "Thought: done\nFinal Answer: HI",
    ]))  # fmt: skip
    mine = tmp_path / "mine.py"
    done = CliRunner().invoke(
        app,
        ["run", "shout hi", "--thread", "f1", "--no-input", "--store",
         f"sqlite:///{tmp_path / 'runs.db'}", "--script", str(script),
         "--tools", f"{mine}:TOOLS", "--validator", f"{mine}:non_empty"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "shout → ok" in done.output and "answer: HI" in done.output
    assert "validation  passed: non_empty: pass" in done.output
    # The same rules and words as a graph's address, for each option.
    for option in ("--tools", "--validator"):
        missing = CliRunner().invoke(
            app, ["run", "x", "--script", str(script), option, f"{mine}:nope"]
        )
        lines = [line for line in missing.output.splitlines() if line.strip()]
        assert missing.exit_code == 2 and len(lines) == 1, missing.output
        assert lines[0].startswith(f"error: {option} '{mine}:nope': ")
        assert lines[0].endswith("has no attribute 'nope'; check the name")

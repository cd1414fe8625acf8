"""A graph builder that cannot build a graph is one `error:` line (exit 2) from every
command that builds an agent on it, never a traceback, and nothing is stored.

Each command runs from a folder holding the graph file, in this process (the graph file is
read afresh by each: `tests.support.cli`), except the one that must read the file again
after it changed, which is a new process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import thinkgraph_here

ROOT = Path(__file__).resolve().parents[2]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
GRAPHS = """
from thinkgraph.graphs import build_react_graph


def build(deps):
    return build_react_graph(deps)


def raises(deps):
    raise RuntimeError("no graph today")


def takes_none():
    print("takes_none ran")


def takes_two(deps, extra):
    print("takes_two ran")


def returns_none(deps):
    return None


def returns_compiled(deps):
    return build_react_graph(deps).compile()
"""
REFUSED = {
    "graphs.py:raises": "raised RuntimeError: no graph today",
    "graphs.py:takes_none": "takes (), but is called with one argument",
    "graphs.py:takes_two": "takes (deps, extra), but is called with one argument",
    "graphs.py:returns_none": "returned None; return the uncompiled StateGraph",
    "graphs.py:returns_compiled": "returned a CompiledStateGraph",
    "os:system": "is a built-in function, not a Python function",
    "builtins:print": "is a built-in function, not a Python function",
}


def thinkgraph(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [THINKGRAPH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: graph builder "), lines
    return lines[0]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "graphs.py").write_text(GRAPHS)
    (tmp_path / "replies.json").write_text(json.dumps(["Thought: x\nFinal Answer: 1"]))
    return tmp_path


@pytest.mark.parametrize("graph", sorted(REFUSED))
def test_run_on_a_broken_builder_is_one_line_and_stores_nothing(graph: str, folder: Path) -> None:
    done = thinkgraph_here(
        "run", "go", "--graph", graph, "--store", "sqlite:///runs.db", "--script",
        "replies.json", cwd=folder,
    )  # fmt: skip
    line = one_error(done)
    assert REFUSED[graph] in line and graph.split(":")[-1] in line
    assert done.stdout == ""  # nothing ran: no builtin, no builder with the wrong arguments
    assert not (folder / "runs.db").exists()


@pytest.mark.parametrize("graph", ["graphs.py:raises", "graphs.py:takes_none", "os:system"])
def test_draw_of_a_broken_builder_is_one_line(graph: str, folder: Path) -> None:
    line = one_error(thinkgraph_here("draw", "--graph", graph, cwd=folder))
    assert REFUSED[graph] in line


def test_a_run_whose_builder_now_raises_is_read_and_refused_in_one_line_when_run(
    folder: Path,
) -> None:
    store = "sqlite:///runs.db"
    done = thinkgraph_here(
        "run", "go", "--graph", "graphs.py:build", "--store", store, "--script",
        "replies.json", "--thread", "t1", cwd=folder,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    graphs = folder / "graphs.py"
    graphs.write_text(graphs.read_text().replace("return build_react_graph(deps)\n", "1 / 0\n", 1))
    # Reading the run builds no graph: show works whatever the builder does now.
    shown = thinkgraph_here("show", "t1", "--store", store, cwd=folder)
    assert shown.returncode == 0 and "answer: 1" in shown.stdout, shown.stdout + shown.stderr
    # A command that runs it builds the graph: one line.
    line = one_error(thinkgraph("resume", "t1", "--graph", "graphs.py:build", "--store", store,
                                "--script", "replies.json", cwd=folder))  # fmt: skip
    assert "raised ZeroDivisionError: division by zero" in line

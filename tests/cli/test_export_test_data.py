"""An exported test is data: `thinkgraph export-test` writes a fixed template over a JSON fixture.

Whatever a run holds (a thread id, a task, the model's replies, the tools' results), it
reaches the generated test only as data the fixture file holds, read at test time: a run
crafted to end a docstring or a string literal runs nothing when pytest collects the test,
and the test passes on its replay and fails when the replay diverges. The test imports
only the graph and tools the operator confirmed at export, never an address read from the
fixture, and finds them from any working folder (or says in one line where to run from).

`thinkgraph export-test` and `pytest` on the generated file are each a new process, as a
user runs them; the `thinkgraph run` that makes the run to export is called in this
process (`tests.support.cli`, which imports the project's modules afresh each time).
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

TOOLS_MODULE = '''from thinkgraph import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


tools = [add]
'''

GRAPH_FILE = """from tests.cli.sample_graphs import build as _build


def build(deps):
    return _build(deps)
"""

EVIL_MODULE = """from pathlib import Path

Path({marker!r}).touch()


def build(deps):
    raise SystemExit("imported from a fixture")


tools = []
"""


def payload(marker: Path, quote: str) -> str:
    """Code that touches `marker` if it ever runs, between two `quote`s that try to end the
    string it is written in."""
    return f'{quote};__import__("pathlib").Path("{marker}").touch();{quote}'


def thinkgraph(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [THINKGRAPH, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def pytest_on(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest in a new process with only our plugin, and only the repo on PYTHONPATH: the
    project's own folder is not (the generated test must find it by itself)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    env["PYTHONPATH"] = str(ROOT)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "-p", "thinkgraph.testing.plugin", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """A user's project: a tools module, a graph file, a store."""
    folder = tmp_path / "proj"
    (folder / "graphs").mkdir(parents=True)
    (folder / "calctools.py").write_text(TOOLS_MODULE)
    (folder / "graphs" / "reflect.py").write_text(GRAPH_FILE)
    return folder


def store_of(proj: Path) -> str:
    return f"sqlite:///{proj / 'runs.db'}"


def run(proj: Path, thread: str, task: str, replies: list[str], *more: str) -> None:
    """`thinkgraph run` of `task` under `thread`, to the end."""
    script = proj / "replies.json"
    script.write_text(json.dumps(replies))
    done = thinkgraph_here(
        "run", task, "--thread", thread, "--no-input", "--store", store_of(proj),
        "--tools", "calctools:tools", "--script", str(script), *more, cwd=proj,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def export(proj: Path, thread: str, *more: str) -> subprocess.CompletedProcess[str]:
    return thinkgraph(
        proj, "export-test", thread, "-o", "tests/regress", "--store", store_of(proj),
        "--tools", "calctools:tools", *more,
    )  # fmt: skip


def replies(marker: Path) -> list[str]:
    """A run whose thought, arguments and answer each try to end a string literal."""
    return [
        f"Thought: add {payload(marker, chr(39) * 3)}\nAction: add\n"
        'Action Input: {"a": 2, "b": 40}',
        f"Thought: done \\ {payload(marker, chr(34) * 3)}\n"
        f"Final Answer: 42 {payload(marker, chr(34) * 3)} \\",
    ]


def hostile_threads(marker: Path) -> list[str]:
    """Thread ids the CLI and `POST /runs` accept (`thinkgraph.types.thread_id_problem`:
    no control character), each built to break out of a string it is written in."""
    return [
        "x" + payload(marker, '"""'),
        "y" + payload(marker, "'''"),
        "z\\" + payload(marker, '\\"'),
        "é",  # no ASCII letter at all: its test needs a name made up for it
        "日本-" + payload(marker, "'"),
    ]


def test_hostile_runs_export_as_data_collect_with_no_side_effect_and_pass(
    proj: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "PWNED"
    # The task holds what a thread id cannot: newlines, control characters (no NUL).
    task = f"sum\n{payload(marker, chr(34) * 3)}\r\n\t\x07\x1b[31m {payload(marker, chr(39))}é"
    threads = hostile_threads(marker)
    names = []
    for thread in threads:
        run(proj, thread, task, replies(marker))
        exported = export(proj, thread)
        assert exported.returncode == 0, exported.stdout + exported.stderr
        assert "--name" not in exported.stderr  # no option was given, none is blamed
        wrote = [
            line.split()[1] for line in exported.stdout.splitlines() if line.startswith("wrote")
        ]
        names.append(Path(wrote[1]).name)
        assert exported.stdout.splitlines()[-1].startswith("checked: the fixture replays same")
    assert len(set(names)) == len(threads)  # each run its own test

    for test in sorted((proj / "tests" / "regress").glob("test_*.py")):
        source = test.read_text()
        assert "touch" not in source and 'pathlib").Path' not in source
        compile(source, str(test), "exec")  # a Python module, whatever the run held

    collected = pytest_on(proj, "--collect-only", "tests/regress")
    assert collected.returncode == 0, collected.stdout + collected.stderr
    assert f"{len(threads)} tests collected" in collected.stdout
    assert not marker.exists()

    passed = pytest_on(proj, "tests/regress")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert f"{len(threads)} passed" in passed.stdout
    assert not marker.exists()

    # Today's tool is described in other words: every replay sends another prompt.
    tools = proj / "calctools.py"
    tools.write_text(tools.read_text().replace("Add two integers.", "Sum two whole numbers."))
    failed = pytest_on(proj, "tests/regress")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"{len(threads)} failed" in failed.stdout
    assert "expected same, got request changed at think#1" in failed.stdout
    assert not marker.exists()


def test_a_fixture_that_names_another_graph_or_tools_imports_nothing(
    proj: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "IMPORTED"
    (proj / "evil.py").write_text(EVIL_MODULE.format(marker=str(marker)))
    run(proj, "plain", "add 2 and 40", replies(tmp_path / "unused"))
    assert export(proj, "plain", "--name", "plain").returncode == 0
    fixture = proj / "tests" / "regress" / "plain.json"
    original = json.loads(fixture.read_text())

    # The tools it names are not the ones the test imports: still the test's own.
    fixture.write_text(json.dumps({**original, "tools": ["evil:tools"]}))
    passed = pytest_on(proj, "tests/regress")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert not marker.exists()

    # A graph it names is compared with the test's as text, never imported.
    fixture.write_text(json.dumps({**original, "graph": "evil:build", "tools": ["evil:tools"]}))
    failed = pytest_on(proj, "tests/regress")
    assert failed.returncode == 1
    assert not marker.exists()
    lines = [line for line in failed.stdout.splitlines() if "evil:build" in line]
    assert lines and "recorded on graph 'evil:build'" in lines[0], failed.stdout
    assert "thinkgraph's built-in graph" in lines[0]


def test_the_generated_test_finds_its_graph_and_tools_from_any_folder(
    proj: Path, tmp_path: Path
) -> None:
    run(proj, "reflected", "add 2 and 40", replies(tmp_path / "unused"),
        "--graph", "graphs/reflect.py:build")  # fmt: skip
    exported = export(proj, "reflected", "--graph", "graphs/reflect.py:build")
    assert exported.returncode == 0, exported.stdout + exported.stderr
    test = proj / "tests" / "regress" / "test_reflected.py"
    assert str(proj) not in test.read_text()  # the project can move: paths are relative
    fixture = json.loads((proj / "tests" / "regress" / "reflected.json").read_text())
    assert fixture["graph"] == "graphs/reflect.py:build"
    assert "reflect" in fixture["expect"]["path"]

    for folder in (proj, proj / "tests", tmp_path):
        passed = pytest_on(folder, str(test))
        assert passed.returncode == 0, passed.stdout + passed.stderr

    # The project moved as a whole: the test goes with it.
    moved = tmp_path / "moved"
    proj.rename(moved)
    passed = pytest_on(tmp_path, str(moved / "tests" / "regress" / "test_reflected.py"))
    assert passed.returncode == 0, passed.stdout + passed.stderr

    # Its tools module is gone: one line says where the test imports it from.
    (moved / "calctools.py").rename(moved / "elsewhere.py")
    failed = pytest_on(tmp_path, str(moved / "tests" / "regress" / "test_reflected.py"))
    assert failed.returncode == 1
    lines = [line for line in failed.stdout.splitlines() if "calctools:tools" in line]
    assert lines, failed.stdout
    assert "module 'calctools' is not found" in lines[0]
    assert str(moved) in lines[0] and "PYTHONPATH" in lines[0]

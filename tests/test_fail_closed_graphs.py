"""Reading a run runs no code; code runs only from an address the operator named.

A run records the address of its graph in its checkpoints' metadata, and whoever can write
one row of the store can change it (`tests.support.tamper`). So:

- every command that reads a run (`show` in each format, `history`, `pending`,
  `draw --thread`, `draw --diff`, `diff`, `runs`, `export-test`) renders it from its
  record (the run's task step holds its graph's shape as data) and imports nothing, for a
  run of our graph or of a user's graph, whatever address the store names;
- a command that continues a run (`approve`, `reject`, `respond`, `decide`, `resume`,
  `fork`, `replay`) imports the run's graph only from a trusted address: named with
  ``--graph``, listed in the ``graphs`` of the current folder's ``langgraph.json``, or
  listed in ``THINKGRAPH_GRAPHS`` (comma-separated). Any other recorded address is refused
  in one line naming it and the ways to trust it; nothing is imported and the store holds
  exactly what it held;
- in Python, an agent on a named graph refuses, without importing it, a run recorded on
  another address (`GraphAddressError`).

The marker graph writes a file when it is imported and another when it builds: neither may
exist after any command here. Every CLI call runs as a new process would (`thinkgraph_here`:
its arguments, its folder, only its THINKGRAPH_ variables), from the repo root unless a test
says otherwise, with the marker's package on the import path (so a module address in the
store would import if anything tried: the marker's package has a new name for each test,
so no earlier import hides one). One test runs the real script in a new process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.cli import sample_tools
from tests.cli.sample_graphs import REFLECT
from tests.support.cli import thinkgraph_here
from tests.support.tamper import Marker, metadata_of, retarget, stored, threads
from thinkgraph import Agent, Approve, ScriptedModel
from thinkgraph.graphs.address import GRAPH_KEY, GraphAddressError
from thinkgraph.types import Breakpoints

ROOT = Path(__file__).resolve().parents[1]
THINKGRAPH = str(Path(sys.executable).parent / "thinkgraph")
EMAIL = "tests.cli.sample_tools:send_email"
REPLIES = [
    'Thought: tell the ceo\nAction: send_email\nAction Input: {"to": "ceo@x.com", "body": "hi"}',
    "Thought: sent\nFinal Answer: emailed",
]
BREAK_REPLIES = ["Thought: nothing to do\nFinal Answer: done"]


def thinkgraph(
    *args: str, marker: Marker, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The CLI, run here as a new process runs it, with the marker's package importable;
    only `env`'s THINKGRAPH_ variables are set."""
    sys.path.insert(0, str(marker.pythonpath))
    try:
        return thinkgraph_here(*args, cwd=cwd, env=env)
    finally:
        sys.path.remove(str(marker.pythonpath))


def one_error(done: subprocess.CompletedProcess[str]) -> str:
    """The one `error: ...` line of a refusal (exit 2, no traceback)."""
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def nothing_ran(marker: Marker, done: subprocess.CompletedProcess[str] | None = None) -> None:
    shown = "" if done is None else done.stdout + done.stderr
    assert marker.ran() == [], f"the store's graph address was imported:\n{shown}"
    assert "Traceback" not in shown, shown


@dataclass(frozen=True)
class Store:
    """A SQLite store of runs (see `make_runs`) and the marker its tampered runs name."""

    url: str
    marker: Marker
    script: Path
    call: str
    """The call id thread "t1" waits to have approved."""
    first: str
    """The id of the first checkpoint of "t1" (to fork from)."""

    def snapshot(self) -> dict[str, Any]:
        """Every row of every run: equal before and after a command that changed nothing."""
        return {thread: stored(self.url, thread) for thread in threads(self.url)}

    def status(self, thread: str) -> tuple[str, list[str]]:
        with Agent(ScriptedModel([]), store=self.url) as reader:
            result = reader.result(thread)
        return result.status, [step.node for step in result.chain]


def make_runs(folder: Path) -> Store:
    """Runs on the user's graph (`REFLECT`): "t1" paused for approval of send_email, "bp"
    paused at a breakpoint after think, "done" finished through the user's "reflect" node;
    and "ours" on our graph, paused for approval. None tampered yet."""
    marker = Marker.make(folder)
    url = f"sqlite:///{folder / 'runs.db'}"
    script = folder / "replies.json"
    script.write_text(json.dumps(REPLIES))
    tools = [sample_tools.send_email]
    with Agent(ScriptedModel(REPLIES), tools, store=url, graph=REFLECT) as custom:
        paused = custom.run("email the ceo", thread_id="t1")
        assert paused.status == "paused" and paused.pending[0].kind == "approval"
        first = custom.history("t1")[0].checkpoint_id
    with Agent(ScriptedModel(REPLIES), tools, store=url, graph=REFLECT) as custom:
        custom.run("email the ceo", thread_id="done")
        done = custom.resume("done", {custom.result("done").pending[0].call_id: Approve()})
        assert done.status == "done" and "reflect" in [s.node for s in done.chain]
    stops = Breakpoints(after=("think",))
    with Agent(ScriptedModel(BREAK_REPLIES), store=url, graph=REFLECT, breakpoints=stops) as bp:
        at_break = bp.run("look around", thread_id="bp")
        assert at_break.status == "paused" and at_break.pending[0].kind == "breakpoint"
    with Agent(ScriptedModel(REPLIES), tools, store=url) as ours:
        assert ours.run("email the ceo", thread_id="ours").status == "paused"
    call = paused.pending[0].call_id
    assert call is not None
    return Store(url, marker, script, call, first)


def tamper(store: Store, address: str, *threads_: str) -> None:
    for thread in threads_:
        retarget(store.url, thread, address)
        assert {m[GRAPH_KEY] for m in metadata_of(store.url, thread)} == {address}


# -- reading a run runs no code ----------------------------------------------------------


@pytest.fixture(scope="module")
def tampered(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """`make_runs`, every run retargeted: "t1", "bp" and "done" at the marker's file, "mod"
    (a copy of "t1"'s run, made again) at its module, "rel" at its file by a path relative
    to the repo root (../../...), and "ours" (a run of our graph) at its file."""
    folder = tmp_path_factory.mktemp("tampered")
    store = make_runs(folder)
    tools = [sample_tools.send_email]
    for thread in ("mod", "rel"):
        with Agent(ScriptedModel(REPLIES), tools, store=store.url, graph=REFLECT) as custom:
            assert custom.run("email the ceo", thread_id=thread).status == "paused"
    tamper(store, store.marker.file_address, "t1", "bp", "done", "ours")
    tamper(store, store.marker.module_address, "mod")
    tamper(store, store.marker.relative_address(ROOT), "rel")
    yield store


@pytest.fixture
def store(tampered: Store) -> Iterator[Store]:
    tampered.marker.clear()
    yield tampered
    tampered.marker.clear()


Check = Callable[[str], None]


def _paused_for_approval(out: str) -> None:
    assert "paused" in out and "send_email" in out, out


def _json_paused(out: str) -> None:
    doc = json.loads(out)
    assert doc["status"] == "paused" and doc["pending"][0]["tool"] == "send_email", doc


def _html(out: str) -> None:
    assert out.lstrip().lower().startswith("<!doctype html") and "send_email" in out, out[:300]


def _history(out: str) -> None:
    nodes = [line.split()[1] for line in out.splitlines() if line.strip()]
    assert nodes[:3] == ["start", "start", "think"], out


def _waits_for_approval(out: str) -> None:
    assert "waiting for approval of 1 call" in out and "send_email" in out, out


def _drawn_with_reflect(out: str) -> None:
    # The user's node: the drawing is of the run's own graph, from its record.
    assert "reflect" in out and "think" in out, out


def _diffed(out: str) -> None:
    assert "diff t1 done" in out and "reflected on 1 result" in out, out


def _listed(out: str) -> None:
    rows = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert "paused" in rows["t1"] and "done" in rows["done"], out


def _exported(out: str) -> None:
    assert "wrote" in out and "done.json" in out, out


READS: list[tuple[str, list[str], int, Check]] = [
    ("show", ["show", "t1"], 0, _paused_for_approval),
    ("show-markdown", ["show", "t1", "-f", "markdown"], 0, _paused_for_approval),
    ("show-json", ["show", "t1", "-f", "json"], 0, _json_paused),
    ("show-html", ["show", "t1", "-f", "html"], 0, _html),
    ("history", ["history", "t1"], 0, _history),
    ("pending", ["pending", "t1"], 0, _waits_for_approval),
    ("draw-mermaid", ["draw", "--thread", "t1"], 0, _drawn_with_reflect),
    ("draw-ascii", ["draw", "--thread", "t1", "-f", "ascii"], 0, _drawn_with_reflect),
    ("draw-diff", ["draw", "--diff", "t1", "done"], 0, _drawn_with_reflect),
    ("diff", ["diff", "t1", "done"], 1, _diffed),  # 1: the runs differ, as diff(1) says
    ("runs", ["runs"], 0, _listed),
    ("export-test", ["export-test", "done", "--name", "done", "-o", "{out}"], 0, _exported),
]


@pytest.mark.parametrize(
    ("args", "code", "check"), [r[1:] for r in READS], ids=[r[0] for r in READS]
)
def test_reading_a_run_whose_graph_address_was_tampered_imports_nothing(
    store: Store, args: list[str], code: int, check: Check, tmp_path: Path
) -> None:
    before = store.snapshot()
    done = thinkgraph(
        *[a.format(out=tmp_path / "exported") for a in args], "--store", store.url,
        marker=store.marker,
    )  # fmt: skip
    nothing_ran(store.marker, done)
    assert done.returncode == code, done.stdout + done.stderr
    check(done.stdout)
    assert store.snapshot() == before


@pytest.mark.parametrize("thread", ["mod", "rel"])
@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["show"], "status: paused"),
        (["pending"], "waiting for approval of 1 call"),
        (["history"], " think "),
        (["draw", "-f", "ascii", "--thread"], "reflect"),
    ],
    ids=["show", "pending", "history", "draw"],
)
def test_reading_a_run_retargeted_to_a_module_or_a_relative_path_imports_nothing(
    store: Store, args: list[str], shown: str, thread: str
) -> None:
    done = thinkgraph(*args, thread, "--store", store.url, marker=store.marker)
    nothing_ran(store.marker, done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert shown in done.stdout, done.stdout


def test_the_installed_script_in_a_new_process_reads_a_tampered_run_importing_nothing(
    store: Store,
) -> None:
    # The real `thinkgraph` script, with the marker's package on its PYTHONPATH.
    clean = {k: v for k, v in os.environ.items() if not k.startswith("THINKGRAPH_")}
    clean["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(store.marker.pythonpath)])
    for thread in ("t1", "mod"):
        done = subprocess.run(
            [THINKGRAPH, "show", thread, "--store", store.url],
            cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        nothing_ran(store.marker, done)
        assert done.returncode == 0 and "status: paused" in done.stdout, done.stderr


def test_a_run_at_a_breakpoint_reads_as_paused_there_without_importing(store: Store) -> None:
    pending = thinkgraph("pending", "bp", "--store", store.url, marker=store.marker)
    nothing_ran(store.marker, pending)
    assert pending.returncode == 0, pending.stderr
    assert "breakpoint" in pending.stdout and "think" in pending.stdout, pending.stdout
    shown = thinkgraph("show", "bp", "--store", store.url, marker=store.marker)
    nothing_ran(store.marker, shown)
    assert shown.returncode == 0 and "paused" in shown.stdout, shown.stdout + shown.stderr
    drawn = thinkgraph("draw", "--thread", "bp", "-f", "ascii", "--store", store.url,
                       marker=store.marker)  # fmt: skip
    nothing_ran(store.marker, drawn)
    assert drawn.returncode == 0 and "reflect" in drawn.stdout, drawn.stdout + drawn.stderr


def test_a_run_of_our_graph_retargeted_is_still_drawn_and_read_as_ours(store: Store) -> None:
    # The marker's build returns the graph with "reflect": drawing it would show that node.
    drawn = thinkgraph("draw", "--thread", "ours", "-f", "ascii", "--store", store.url,
                       marker=store.marker)  # fmt: skip
    nothing_ran(store.marker, drawn)
    assert drawn.returncode == 0, drawn.stderr
    assert "think" in drawn.stdout and "reflect" not in drawn.stdout, drawn.stdout
    for args in (["show", "ours"], ["pending", "ours"], ["history", "ours"]):
        done = thinkgraph(*args, "--store", store.url, marker=store.marker)
        nothing_ran(store.marker, done)
        assert done.returncode == 0, done.stdout + done.stderr


def test_reading_a_run_in_python_imports_nothing(store: Store) -> None:
    with Agent(ScriptedModel([]), store=store.url) as reader:
        assert reader.result("t1").status == "paused"
        assert len(reader.history("t1")) >= 3
        assert {r.thread_id for r in reader.runs()} >= {"t1", "done", "ours"}
        assert "think" in reader.draw("mermaid", "t1")
    nothing_ran(store.marker)


# -- code runs only from an address the operator named ------------------------------------


@pytest.fixture
def runs(tmp_path: Path) -> Store:
    """A fresh `make_runs` (not tampered): a refusal's test checks that nothing changed."""
    return make_runs(tmp_path)


def _continuing(store: Store, command: str) -> list[str]:
    """The command line of `command` on the run it continues, with the run's tools and
    replies, as an operator would type it."""
    own = ["--tools", EMAIL, "--script", str(store.script), "--no-input", "--store", store.url]
    return {
        "approve": ["approve", "t1", *own],
        "reject": ["reject", "t1", "--reason", "not now", *own],
        "respond": ["respond", "t1", store.call, "sent by hand", *own],
        "decide": ["decide", "t1", "--approve", store.call, *own],
        "resume": ["resume", "bp", *own],
        "fork": ["fork", "t1", store.first, "--thread", "forked", *own],
        "replay": ["replay", "done", "--tools", EMAIL, "--store", store.url],
    }[command]


def _refused_untouched(
    store: Store, args: Sequence[str], named: str, **how: Any
) -> subprocess.CompletedProcess[str]:
    before = store.snapshot()
    done = thinkgraph(*args, marker=store.marker, **how)
    nothing_ran(store.marker, done)
    error = one_error(done)
    assert named in error, error
    assert "--graph" in error and "THINKGRAPH_GRAPHS" in error, error
    assert store.snapshot() == before  # no checkpoint, no write, no new thread
    return done


COMMANDS = ["approve", "reject", "respond", "decide", "resume", "fork", "replay"]


@pytest.mark.parametrize("command", COMMANDS)
def test_continuing_a_run_retargeted_to_a_file_is_refused_and_imports_nothing(
    runs: Store, command: str
) -> None:
    tamper(runs, runs.marker.file_address, "t1", "bp", "done")
    _refused_untouched(runs, _continuing(runs, command), runs.marker.file_address)


@pytest.mark.parametrize("form", ["module", "relative"])
def test_continuing_a_run_retargeted_to_a_module_or_a_relative_path_is_refused(
    runs: Store, form: str
) -> None:
    address = runs.marker.module_address if form == "module" else runs.marker.relative_address(ROOT)
    tamper(runs, address, "t1")
    _refused_untouched(runs, _continuing(runs, "approve"), address.rsplit("/", 1)[-1])


def test_continuing_a_run_of_our_graph_retargeted_is_refused(runs: Store) -> None:
    tamper(runs, runs.marker.file_address, "ours")
    args = ["approve", "ours", "--tools", EMAIL, "--script", str(runs.script), "--no-input",
            "--store", runs.url]  # fmt: skip
    _refused_untouched(runs, args, runs.marker.file_address)


def test_a_trusted_list_that_does_not_name_the_recorded_address_trusts_nothing_else(
    runs: Store,
) -> None:
    # THINKGRAPH_GRAPHS trusts what it lists, not what the store says: the run's real graph
    # listed there does not make the address the store now names trusted.
    tamper(runs, runs.marker.file_address, "t1")
    _refused_untouched(
        runs, _continuing(runs, "approve"), runs.marker.file_address,
        env={"THINKGRAPH_GRAPHS": REFLECT},
    )  # fmt: skip


def test_naming_a_graph_never_imports_the_address_the_store_names(runs: Store) -> None:
    # Whether the run then goes on on the named graph or is refused, the recorded address
    # is not imported.
    tamper(runs, runs.marker.file_address, "t1", "done")
    done = thinkgraph(*_continuing(runs, "approve"), "--graph", REFLECT, marker=runs.marker)
    nothing_ran(runs.marker, done)
    assert done.returncode in (0, 2), done.stdout + done.stderr
    # A replay on a graph named for it runs on that graph (and only imports that one).
    replayed = thinkgraph(*_continuing(runs, "replay"), "--graph", REFLECT, marker=runs.marker)
    nothing_ran(runs.marker, replayed)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "replay replay-done of done: same" in replayed.stdout


def test_a_run_on_a_graph_nobody_named_here_is_refused_until_it_is_trusted(runs: Store) -> None:
    # Not tampered: the address is the run's real one, but nothing here trusts it.
    _refused_untouched(runs, _continuing(runs, "approve"), REFLECT)
    assert runs.status("t1")[0] == "paused"


@pytest.mark.parametrize("trust", ["--graph", "THINKGRAPH_GRAPHS", "langgraph.json"])
def test_a_run_goes_on_on_its_graph_when_the_operator_trusts_its_address(
    runs: Store, trust: str, tmp_path: Path
) -> None:
    args, env, cwd = _continuing(runs, "approve"), {}, ROOT
    if trust == "--graph":
        args = [*args, "--graph", REFLECT]
    elif trust == "THINKGRAPH_GRAPHS":
        env = {"THINKGRAPH_GRAPHS": f"tests.cli.sample_graphs:other,{REFLECT}"}
    else:
        cwd = tmp_path / "project"
        cwd.mkdir()
        (cwd / "langgraph.json").write_text(json.dumps({"graphs": {"agent": REFLECT}}))
    done = thinkgraph(*args, marker=runs.marker, cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: emailed" in done.stdout
    status, nodes = runs.status("t1")
    assert status == "done" and nodes[nodes.index("observe") + 1] == "reflect"


def test_a_graph_file_listed_in_langgraph_json_here_is_trusted_by_its_path(
    tmp_path: Path,
) -> None:
    # langgraph.json names the file relative to itself; the run recorded the absolute path.
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "my_graph.py").write_text(
        "from tests.cli.sample_graphs import build as _build\n\n\n"
        "def build(deps):\n    return _build(deps)\n"
    )
    (folder / "langgraph.json").write_text(json.dumps({"graphs": {"g": "./my_graph.py:build"}}))
    marker = Marker.make(tmp_path)
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    script = tmp_path / "replies.json"
    script.write_text(json.dumps(REPLIES))
    own = ["--tools", EMAIL, "--script", str(script), "--no-input", "--store", store]
    started = thinkgraph("run", "email the ceo", "--thread", "t1", *own, marker=marker,
                         cwd=folder)  # fmt: skip
    assert started.returncode == 3, started.stdout + started.stderr
    done = thinkgraph("approve", "t1", *own, marker=marker, cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer: emailed" in done.stdout


# -- the driver in Python -----------------------------------------------------------------


@pytest.mark.parametrize("form", ["file", "module"])
def test_an_agent_on_a_named_graph_refuses_a_run_recorded_elsewhere_without_importing_it(
    runs: Store, form: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(runs.marker.pythonpath))
    address = runs.marker.file_address if form == "file" else runs.marker.module_address
    tamper(runs, address, "t1")
    before = runs.snapshot()
    tools = [sample_tools.send_email]
    with Agent(ScriptedModel(REPLIES), tools, store=runs.url, graph=REFLECT) as agent:
        with pytest.raises(GraphAddressError) as refused:
            agent.resume("t1", {runs.call: Approve()})
        assert address in str(refused.value) and "\n" not in str(refused.value)
        with pytest.raises(GraphAddressError):
            agent.fork("t1", runs.first)
    nothing_ran(runs.marker)
    assert runs.snapshot() == before

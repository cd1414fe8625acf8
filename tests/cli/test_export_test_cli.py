"""`thinkgraph export-test RUN`: a stored run becomes a pytest test that passes offline.

The generated test runs under pytest in another process, with sockets refused and no API
key, and with no store: it passes; after a prompt edit it fails with the diff; after
`pytest --thinkgraph-update` it passes again.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.cli.sample_graphs import OTHER, REFLECT
from tests.regress_support.sample import PIN, SESSION, TASK, TOKEN, script
from tests.regress_support.sample import tools as sample_tools
from thinkgraph import Agent
from thinkgraph.cli import app
from thinkgraph.hitl import Approve
from thinkgraph.testing.regress import Fixture, mismatch, replay_fixture

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]

TOOLS_MODULE = """import copy

from tests.regress_support.sample import calculator, unlock as recorded

DESCRIPTION = "Unlock a door with its pin."
unlock = copy.copy(recorded)
unlock.description = DESCRIPTION
tools = [unlock, calculator]
"""

NO_NETWORK = """import os
import socket

import pytest


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    def refuse(*args, **kwargs):
        raise OSError("no network in these tests")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    assert not [k for k in os.environ if k.endswith("_API_KEY")]
"""


@pytest.fixture
def project(store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """A project with its tools module and a finished run of them in `store_url`."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "doortools.py").write_text(TOOLS_MODULE)
    (proj / "conftest.py").write_text(NO_NETWORK)
    monkeypatch.chdir(proj)
    monkeypatch.syspath_prepend(str(proj))
    monkeypatch.delitem(sys.modules, "doortools", raising=False)  # this project's own
    import doortools  # type: ignore[import-not-found]

    thread = f"door-{uuid.uuid4().hex[:8]}"
    with Agent(script(), doortools.tools, store=store_url) as agent:
        paused = agent.run(TASK, thread)
        done = agent.resume(thread, {p.call_id: Approve() for p in paused.pending})
    assert done.status == "done", done.detail
    return proj, thread


def pytest_in(proj: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(proj)])
    # Only our plugin, given by name: the same whether or not its entry point is installed.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    return subprocess.run(
        [*command, "-p", "thinkgraph.testing.plugin", *args, "tests/regress"],
        cwd=proj,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_an_exported_run_passes_offline_fails_on_a_change_and_updates(
    store_url: str, project: tuple[Path, str]
) -> None:
    proj, thread = project
    out = runner.invoke(
        app,
        ["export-test", thread, "-o", "tests/regress", "--store", store_url,
         "--tools", "doortools:tools", "--name", "door"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert out.stdout.splitlines()[-1].startswith("checked: the fixture replays same in ")
    fixture = proj / "tests" / "regress" / "door.json"
    assert (proj / "tests" / "regress" / "test_door.py").is_file()
    for secret in (PIN, TOKEN, SESSION):
        assert secret not in fixture.read_text()

    passed = pytest_in(proj)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout

    tools = proj / "doortools.py"
    tools.write_text(tools.read_text().replace("with its pin.", "given its pin code."))
    failed = pytest_in(proj)
    assert failed.returncode == 1
    assert "expected same, got request changed at think#1" in failed.stdout
    assert "given its pin code." in failed.stdout  # the prompt's diff

    updating = pytest_in(proj, "--thinkgraph-update")
    assert updating.returncode == 0, updating.stdout + updating.stderr
    assert "thinkgraph fixtures updated" in updating.stdout
    assert "tests/regress/door.json: now expects same" in updating.stdout
    again = pytest_in(proj)
    assert again.returncode == 0, again.stdout + again.stderr
    assert PIN not in fixture.read_text() and TOKEN not in fixture.read_text()


def test_export_refuses_to_overwrite_and_a_paused_run(
    store_url: str, project: tuple[Path, str]
) -> None:
    _, thread = project
    args = ["export-test", thread, "--store", store_url, "--tools", "doortools:tools"]
    assert runner.invoke(app, args).exit_code == 0
    again = runner.invoke(app, args)
    assert again.exit_code == 2
    assert "exists: pass --force" in again.output
    assert runner.invoke(app, [*args, "--force"]).exit_code == 0

    import doortools

    paused_thread = f"paused-{uuid.uuid4().hex[:8]}"
    with Agent(script(), doortools.tools, store=store_url) as agent:
        assert agent.run(TASK, paused_thread).status == "paused"
    paused = runner.invoke(app, ["export-test", paused_thread, "--store", store_url])
    assert paused.exit_code == 2
    assert "is paused: export a finished run" in paused.output


def test_a_run_on_its_own_graph_exports_with_it(store_url: str, tmp_path: Path) -> None:
    thread = f"reflect-{uuid.uuid4().hex[:8]}"
    with Agent(script(), sample_tools, store=store_url, graph=REFLECT) as agent:
        paused = agent.run(TASK, thread)
        assert agent.resume(thread, {p.call_id: Approve() for p in paused.pending}).status == "done"
    out = runner.invoke(
        app,
        ["export-test", thread, "-o", str(tmp_path), "--store", store_url,
         "--tools", "tests.regress_support.sample:tools", "--name", "reflect"],
    )  # fmt: skip
    # The run's graph is not trusted here: the test is written, unchecked, on no graph.
    assert out.exit_code == 0, out.output
    assert f"not trusted here (nothing was imported); export again with --graph {REFLECT}" in (
        out.output
    )
    assert Fixture.load(tmp_path / "reflect.json").graph is None
    out = runner.invoke(
        app,
        ["export-test", thread, "-o", str(tmp_path), "--store", store_url, "--force",
         "--tools", "tests.regress_support.sample:tools", "--name", "reflect", "--graph", REFLECT],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    fixture = Fixture.load(tmp_path / "reflect.json")
    assert fixture.graph == REFLECT
    assert "reflect" in fixture.expect.path
    assert replay_fixture(fixture, graph=REFLECT, tools=sample_tools).outcome == "same"
    # On our graph instead, the replay parts where the run went to reflect.
    other = replay_fixture(fixture, graph=OTHER, tools=sample_tools)
    assert other.outcome == "diverged"
    assert "route" in mismatch(other, fixture.expect)


def test_a_name_is_blamed_on_name_only_when_one_is_given(
    store_url: str, project: tuple[Path, str]
) -> None:
    proj, thread = project
    given = runner.invoke(app, ["export-test", thread, "--store", store_url, "--name", "é"])
    assert given.exit_code == 2
    assert given.output.startswith("error: --name 'é': use ASCII letters, digits and _")
    assert not (proj / "tests" / "regress").exists()  # nothing written
    odd = runner.invoke(app, ["export-test", thread, "--store", store_url, "--tools", "a b:c"])
    assert odd.exit_code == 2
    assert odd.output.startswith("error: --tools 'a b:c' cannot be written into a test")


def test_a_graph_whose_path_a_test_cannot_hold_is_refused_before_anything_is_written(
    store_url: str, project: tuple[Path, str]
) -> None:
    proj, thread = project
    folder = proj / 'we"ird'
    folder.mkdir()
    (folder / "g.py").write_text("from tests.cli.sample_graphs import other as build\n")
    out = runner.invoke(
        app, ["export-test", thread, "--store", store_url, "--graph", 'we"ird/g.py:build']
    )
    assert out.exit_code == 2
    lines = out.output.strip().splitlines()
    assert len(lines) == 1 and "cannot be written into a test" in lines[0], out.output
    assert not (proj / "tests" / "regress").exists()

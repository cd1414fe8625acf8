"""`thinkgraph export-test RUN -o DIR`: a stored run as a regression test that runs offline.

Writes DIR/NAME.json (the fixture: the recorded run, secrets masked as the views mask them,
and what a replay must give) and DIR/test_NAME.py (a pytest test that replays it with the
``thinkgraph_replay`` fixture). The test module is a fixed template
(`thinkgraph.testing.template`): what the run holds is only in the fixture, and the module
names only the fixture's file and the graph and tools addresses confirmed here. The fixture
is replayed once before the command ends, so an export that would not pass says so.
Exit 2: bad usage, or a run not in the store.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from thinkgraph.cli._app import app, existing_store, fail, guarded, load_tool
from thinkgraph.cli._options import ReadToolsOpt, StoreOpt
from thinkgraph.cli._runs import new_graph, run_graph, untrusted_graph

__all__ = ["export_test"]


@app.command("export-test", rich_help_panel="Inspect")
def export_test(
    run: Annotated[str, typer.Argument(help="The thread id of the run to turn into a test.")],
    out: Annotated[
        Path, typer.Option("--out", "-o", help="The folder to write the fixture and the test in.")
    ] = Path("tests/regress"),
    graph: Annotated[
        str | None,
        typer.Option(
            "--graph",
            metavar="MODULE:FUNCTION",
            help="The graph the test replays on. Default: the graph the run recorded.",
        ),
    ] = None,
    tools: ReadToolsOpt = None,
    store: StoreOpt = "",
    name: Annotated[
        str | None,
        typer.Option("--name", help="The test's name (files NAME.json, test_NAME.py)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the files if they exist.")
    ] = False,
) -> None:
    """Turn a stored run into a pytest test that replays it offline and expects `same`.

    The fixture holds the run's model replies, tool results and decisions with every
    secret masked as `thinkgraph show` masks it; the test needs no store, no network and
    no API key (the pytest plugin gives it `thinkgraph_replay`).
    """
    from thinkgraph.agent import Agent
    from thinkgraph.errors import ConfigError
    from thinkgraph.llm.scripted import ScriptedModel
    from thinkgraph.testing import template
    from thinkgraph.testing.regress import fixture_of, replay_fixture
    from thinkgraph.types import StepLimits

    if name is None:
        given = template.name_of(run)
    else:
        given = name
        try:
            template.check_name(name)
        except ConfigError as exc:
            fail(f"--name {exc}")
    for spec in tools or ():
        try:
            template.check_tools_address(spec)
        except ConfigError as exc:
            fail(f"--tools {exc}")
    loaded = [t for spec in tools or [] for t in load_tool(spec)]
    url = existing_store(store)
    # The run's recorded graph is data: it is imported (to check the test by a replay)
    # only when the operator trusts it; else the test is written unchecked and says so.
    untrusted = None if graph is not None else untrusted_graph(url, run)
    if graph is not None:
        address = new_graph(graph)
    else:
        address = None if untrusted is not None else run_graph(url, run, None)
    root = Path.cwd()
    # As the test holds it: a graph file's path from the folder the export runs in.
    shown_graph = None if address is None else template.portable_graph(address, root)
    fixture_path, test_path = out / f"{given}.json", out / f"test_{given}.py"
    try:
        if shown_graph is not None:
            template.check_graph_address(shown_graph)
        source_code = template.render(
            fixture_path.name,
            graph=shown_graph,
            tools=tools or (),
            root=root,
            test_folder=out.resolve(),
        )
    except ConfigError as exc:
        fail(str(exc))
    for path in (fixture_path, test_path):
        if path.exists() and not force:
            fail(f"{path} exists: pass --force to overwrite it, or another --name")

    def go() -> None:
        with Agent(ScriptedModel([]), loaded, store=url, graph=address) as agent:
            snapshot = agent.reader.snapshot(run)  # read once: the result and its limits
            source = agent.reader.result_of(run, snapshot)
            limits: Any = snapshot.values.get("limits")
        if source.status != "done":
            fail(f"run {run!r} is {source.status}: export a finished run (resume it first)")
        fixture = fixture_of(
            source,
            tools=loaded,
            graph=shown_graph,
            tool_addresses=tools or (),
            limits=limits if isinstance(limits, StepLimits) else None,
        )
        out.mkdir(parents=True, exist_ok=True)
        fixture.dump(fixture_path)
        test_path.write_text(source_code, encoding="utf-8")
        if untrusted is not None:
            typer.echo(f"wrote {fixture_path} ({len(source.chain)} steps, secrets masked)")
            typer.echo(f"wrote {test_path}")
            typer.echo(
                f"warning: not checked: run {run!r} records graph {untrusted}, which is not "
                f"trusted here (nothing was imported); export again with --graph {untrusted} "
                "(or list it in THINKGRAPH_GRAPHS) for a test that replays on it",
                err=True,
            )
            return
        started = time.perf_counter()
        report = replay_fixture(fixture_path, graph=address, tools=loaded)
        took = time.perf_counter() - started
        expect = fixture.expect
        typer.echo(f"wrote {fixture_path} ({len(source.chain)} steps, secrets masked)")
        typer.echo(f"wrote {test_path}")
        typer.echo(f"expects: {expect.outcome}; path {' > '.join(expect.path)}")
        typer.echo(f"checked: the fixture replays {report.headline()} in {took:.2f}s")
        if report.outcome != expect.outcome:
            typer.echo(
                "warning: the fixture does not replay as it expects; the test will fail until "
                "you run: pytest --thinkgraph-update " + str(test_path),
                err=True,
            )

    guarded(go)

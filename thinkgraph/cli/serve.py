"""`thinkgraph serve`: the HTTP surface and its live page (see thinkgraph/server)."""

from __future__ import annotations

from typing import Annotated

import typer

from thinkgraph.cli._app import ApiBaseOpt, ModelOpt, StoreOpt, app, fail, guarded
from thinkgraph.cli.worker import (
    AgentScriptOpt,
    AgentSpecOpt,
    AgentToolsOpt,
    MaxStepsOpt,
    agent_from_options,
)


@app.command(rich_help_panel="Scale out")
def serve(
    store: StoreOpt = "",
    host: Annotated[str, typer.Option(help="Address to listen on (another needs --token).")] = (
        "127.0.0.1"
    ),
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    queue: Annotated[
        str | None,
        typer.Option("--queue", help="Hand runs to the workers of this queue (PostgreSQL)."),
    ] = None,
    agent_spec: AgentSpecOpt = None,
    tools: AgentToolsOpt = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    script: AgentScriptOpt = None,
    max_steps: MaxStepsOpt = 12,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="THINKGRAPH_TOKEN",
            help="Require this token: 'Authorization: Bearer TOKEN', or open /?token=TOKEN.",
        ),
    ] = None,
) -> None:
    """Serve runs over HTTP (start, watch live, approve, resume) with a page at /.

    Runs go on in this process, one at a time, or with --queue on the workers. With
    --token every request must carry it; without one the server stays on 127.0.0.1.
    """
    try:
        import uvicorn

        from thinkgraph.server import build_app
    except ImportError:
        fail("serve needs the server extra: pip install 'thinkgraph[server]'")
    if not token and host not in ("127.0.0.1", "localhost", "::1"):
        fail(
            f"--host {host} lets others reach every run and approve its tool calls; set "
            "--token (or THINKGRAPH_TOKEN), or keep --host 127.0.0.1"
        )
    chosen, _ = agent_from_options(agent_spec, store, tools, model, api_base, script, max_steps)

    def go() -> None:
        with chosen:
            typer.echo(f"serving on http://{host}:{port}/ (Ctrl+C stops)", err=True)
            app = build_app(chosen, queue=queue, token=token or None)
            uvicorn.run(app, host=host, port=port, log_level="info")

    guarded(go)

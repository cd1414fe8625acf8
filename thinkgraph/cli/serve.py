"""`thinkgraph serve`: the HTTP surface and its live page (see thinkgraph/server)."""

from __future__ import annotations

import errno
import resource
import secrets
import socket
from typing import Annotated, Any

import typer

from thinkgraph.cli._app import app, fail, guarded, log_options
from thinkgraph.cli._options import (
    AgentOptions,
    LogFormatOpt,
    LogLevelOpt,
    StoreOpt,
    with_options,
)
from thinkgraph.cli.worker import agent_from_options

MaxBodyOpt = Annotated[
    int | None, typer.Option(min=1, help="The largest request body taken [default: 1 MiB].")
]
MaxTaskOpt = Annotated[
    int | None, typer.Option(min=1, help="The largest task taken [default: 64 KiB].")
]
MaxStreamsOpt = Annotated[
    int | None, typer.Option(min=0, help="The most event streams open at once [default: 32].")
]
MaxRunsOpt = Annotated[
    int | None,
    typer.Option(min=1, help="The most runs advanced at once in this process [default: 100]."),
]
PingOpt = Annotated[
    float | None,
    typer.Option(
        min=0, help="Seconds between keep-alive pings on event streams; 0: none [default: 15]."
    ),
]
MaxConnectionsOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="The most connections open at once; past it, the one waiting longest for "
        "its request is closed [default: 1000].",
    ),
]
HeaderTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        min=0.1,
        help="Seconds a request's line and headers have to arrive in [default: 10].",
    ),
]
"""The server's limits, taken alike by `serve` and `studio`."""


@app.command(rich_help_panel="Scale out")
@with_options(AgentOptions)
def serve(
    store: StoreOpt = "",
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port to listen on.")] = 8000,
    queue: Annotated[
        str | None,
        typer.Option("--queue", help="Hand runs to the workers of this queue (PostgreSQL)."),
    ] = None,
    token: Annotated[
        str | None,
        typer.Option(
            envvar="THINKGRAPH_TOKEN",
            help="Require this token (default: a new random one, printed in the URL).",
        ),
    ] = None,
    no_token: Annotated[
        bool,
        typer.Option("--no-token", help="Require no token (only with a loopback --host)."),
    ] = False,
    allow_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-host",
            help="Also answer to this Host name (NAME or NAME:PORT); repeatable.",
        ),
    ] = None,
    max_body_bytes: MaxBodyOpt = None,
    max_task_bytes: MaxTaskOpt = None,
    max_streams: MaxStreamsOpt = None,
    max_runs: MaxRunsOpt = None,
    ping: PingOpt = None,
    max_connections: MaxConnectionsOpt = None,
    header_timeout: HeaderTimeoutOpt = None,
    log_level: LogLevelOpt = "info",
    log_format: LogFormatOpt = "text",
    *,
    agent: AgentOptions,
) -> None:
    """Serve runs over HTTP (start, watch live, approve, resume) with a page at /.

    Runs go on in this process, many at once (--max-runs), or with --queue on the workers. Every
    request needs a token: a new one each start unless --token sets it; open the printed
    URL. Requests must name this server as their Host, and changes must come from its
    own page or a program.
    """
    _serve(
        agent, store, host, port, queue, token, no_token, allow_host,
        {
            "max_body_bytes": max_body_bytes, "max_task_bytes": max_task_bytes,
            "max_streams": max_streams, "max_runs": max_runs, "ping_s": ping,
        },
        max_connections, header_timeout, log_level, log_format,
    )  # fmt: skip


@app.command(rich_help_panel="Scale out")
@with_options(AgentOptions)
def studio(
    store: StoreOpt = "",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port to listen on (0: a free one).")
    ] = 8000,
    queue: Annotated[
        str | None,
        typer.Option("--queue", help="Hand runs to the workers of this queue (PostgreSQL)."),
    ] = None,
    no_open: Annotated[
        bool, typer.Option("--no-open", help="Print the studio's URL; open no browser.")
    ] = False,
    max_body_bytes: MaxBodyOpt = None,
    max_task_bytes: MaxTaskOpt = None,
    max_streams: MaxStreamsOpt = None,
    max_runs: MaxRunsOpt = None,
    ping: PingOpt = None,
    max_connections: MaxConnectionsOpt = None,
    header_timeout: HeaderTimeoutOpt = None,
    log_level: LogLevelOpt = "info",
    log_format: LogFormatOpt = "text",
    *,
    agent: AgentOptions,
) -> None:
    """Open the studio in your browser: your runs, what waits for you, each run's graph,
    and the forms that approve, edit, reject or continue it.

    The same server as `thinkgraph serve` on 127.0.0.1 with a new token (its API and page
    included); the studio is at /studio.
    """
    made = None
    if agent.agent_spec is None and not (agent.model or agent.script):
        made = _demo_agent(store)
    _serve(
        agent, store, "127.0.0.1", port, queue, None, False, None,
        {
            "max_body_bytes": max_body_bytes, "max_task_bytes": max_task_bytes,
            "max_streams": max_streams, "max_runs": max_runs, "ping_s": ping,
        },
        max_connections, header_timeout, log_level, log_format,
        page="/studio", open_browser=not no_open, made=made,
    )  # fmt: skip


def _demo_agent(store: str) -> Any:
    """With no model, the demo's agent (its scripted analyst and tools): the demo's runs
    can be seen and continued, and a new one started."""
    from thinkgraph.agent import Agent
    from thinkgraph.cli._app import default_store
    from thinkgraph.demo import DEMO_DB, create_sales_db, demo_tools, scripted_analyst
    from thinkgraph.types import StepLimits

    typer.echo(
        "model: ScriptedModel (the demo's analyst, with the demo's tools); pass --model or "
        "--agent for your own",
        err=True,
    )
    tools = demo_tools(create_sales_db(DEMO_DB))
    limits = StepLimits(min_steps=1, max_steps=8)
    return Agent(scripted_analyst(), tools, limits=limits, store=store or default_store())


def _serve(
    agent: AgentOptions,
    store: str,
    host: str,
    port: int,
    queue: str | None,
    token: str | None,
    no_token: bool,
    allow_host: list[str] | None,
    given_limits: dict[str, Any],
    max_connections: int | None,
    header_timeout: float | None,
    log_level: str,
    log_format: str,
    *,
    page: str = "/",
    open_browser: bool = False,
    made: Any = None,
) -> None:
    """Serve the runs of the agent `agent` names, or of `made` (`serve`, `studio`): print
    the URL of `page` (with the token when it was made here), and open it in the browser
    when asked."""
    try:
        import uvicorn

        from thinkgraph.server import build_app
        from thinkgraph.server.guards import LOOPBACK, server_hosts
        from thinkgraph.server.limits import (
            HEADER_TIMEOUT_S,
            MAX_CONNECTIONS,
            bounded_http_protocol,
        )
    except ImportError:
        fail("serve needs the server extra: pip install 'thinkgraph[server]'")
    from thinkgraph.views.logs import configure_logging, startup_line

    level, fmt = log_options(log_level, log_format)
    loopback = host.strip("[]").lower() in LOOPBACK
    if no_token and token:
        fail("give --token or --no-token, not both (THINKGRAPH_TOKEN sets --token)")
    if no_token and not loopback:
        fail(
            f"--no-token is allowed only on 127.0.0.1, localhost or ::1, not --host {host}: "
            "whoever reaches it could approve tool calls; drop --no-token (a token is made) "
            "or set --token"
        )
    try:
        server_hosts(host, port, allow_host or ())
    except ValueError as exc:
        fail(f"--allow-host {exc}")
    secret = None if no_token else token or secrets.token_urlsafe(32)
    chosen = made if made is not None else agent_from_options(agent, store)[0]
    # Bound here, before "serving on" is printed: a port in use is one line, not a log.
    listening = _listen(host, port)
    port = listening.getsockname()[1]  # --port 0 asks for a free one
    shown = host if loopback else "127.0.0.1" if host in ("0.0.0.0", "::") else host
    shown = f"[{shown}]" if ":" in shown else shown
    url = f"http://{shown}:{port}{page}"
    opened = url if secret is None or token else f"{url}?token={secret}"
    if secret is None:
        url += " without a token"
    elif token:
        url += (
            f" with your --token: open {page}?token=TOKEN once, or send "
            "'Authorization: Bearer TOKEN'"
        )
    else:
        url += f"?token={secret}"  # made here: this URL is the only way to learn it

    def go() -> None:
        with chosen:
            app = build_app(
                chosen, queue=queue, token=secret, host=host, port=port or None,
                allow_hosts=allow_host or (),
                **{name: value for name, value in given_limits.items() if value is not None},
            )  # fmt: skip
            protocol = bounded_http_protocol(
                max_connections=_room_for(max_connections or MAX_CONNECTIONS),
                header_timeout_s=header_timeout or HEADER_TIMEOUT_S,
            )
            # No WebSocket route is served: an upgrade is answered as plain HTTP. uvicorn's
            # lines (its access log too) go through our masking handler, not its own.
            config = uvicorn.Config(
                app, host=host, port=port, log_level=level, log_config=None, http=protocol,
                ws="none",
            )  # fmt: skip
            configure_logging(level, fmt)
            typer.echo(startup_line(f"serving on {url} (Ctrl+C stops)", fmt), err=True)
            if open_browser:  # the socket is bound: the browser's request waits for uvicorn
                import webbrowser

                webbrowser.open(opened)
            uvicorn.Server(config).run(sockets=[listening])

    with listening:
        guarded(go)


_SPARE_FILES = 128
"""File descriptors kept for what is not a connection: the store, logs, tools' files."""


def _room_for(connections: int) -> int:
    """How many connections this process can hold, raising its soft limit of open files
    (up to the hard one) to fit `connections` if need be.

    A connection is an open file: past the limit, new ones fail to be accepted and real
    requests with them. So the cap stays below it, with room for the store and the rest.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = connections + _SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < wanted:
        raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
        except (ValueError, OSError):
            pass  # keep the limit there is; the cap fits under it
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return connections
    room = max(1, soft - _SPARE_FILES)
    typer.echo(
        f"note: this process may open {soft} files, so it takes {room} connections at once, "
        f"not --max-connections {connections} (raise the limit with ulimit -n)",
        err=True,
    )
    return room


def _listen(host: str, port: int) -> socket.socket:
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            fail(f"port {port} on {host} is in use; pick another with --port")
        fail(
            f"cannot listen on {host} port {port} ({exc.strerror or exc}); check --host and --port"
        )
    return sock

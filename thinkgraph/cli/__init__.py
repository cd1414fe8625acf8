"""The `thinkgraph` command line."""

from thinkgraph.cli import (  # noqa: F401  - importing registers the commands
    demo,
    diff,
    export_test,
    hitl,
    inspect,
    prune,
    replay,
    run,
    serve,
    travel,
    worker,
)
from thinkgraph.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `thinkgraph` script."""
    app()

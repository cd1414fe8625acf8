"""The `thinkgraph` command line."""

from thinkgraph.cli import demo, diff, hitl, inspect, run, serve, travel, worker  # noqa: F401  - importing registers the commands
from thinkgraph.cli._app import app

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the `thinkgraph` script."""
    app()

"""The `thinkgraph` command line."""

from thinkgraph.cli.app import app, main

__all__ = ["app", "main"]

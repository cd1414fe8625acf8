"""HTTP: run, resume and approve runs over HTTP, follow them as server-sent events.

`build_app(agent)` is a Starlette app; `thinkgraph serve` runs it with uvicorn. Needs the
``server`` extra: ``pip install 'thinkgraph[server]'``.
"""

from thinkgraph.server.app import build_app

__all__ = ["build_app"]

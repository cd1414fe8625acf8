"""The static checks, re-exported: they live with the wiring, in `thinkgraph.graphs.checks`.

Running a graph never depends on drawing it, so the checks moved next to the route table;
this module keeps the names importable from `thinkgraph.viz` for code written against it.
"""

from __future__ import annotations

from thinkgraph.graphs.checks import check_graph
from thinkgraph.graphs.shape import guarded_router, is_guarded_router

__all__ = ["check_graph", "guarded_router", "is_guarded_router"]

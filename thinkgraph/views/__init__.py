"""Views of a run's chain for people: plain text now; markdown, JSON and HTML later."""

from thinkgraph.views.text import format_step, to_text

__all__ = ["format_step", "to_text"]

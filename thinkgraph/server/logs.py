"""No token in the server's logs: uvicorn's access log writes each request's query.

Opening ``/?token=TOKEN`` is how the page gets its token, so the access log would keep it.
`thinkgraph serve` sends every line through the masking handler of
`thinkgraph.views.logs.configure_logging`; an app served by another uvicorn setup calls
`redact_access_log` to put the same filter (`MaskSecrets`: tokens, secret pairs and
credential shapes) on uvicorn's access logger.
"""

from __future__ import annotations

from thinkgraph.views.logs import MaskSecrets, protect_loggers, redact_query

__all__ = ["MaskSecrets", "redact_access_log", "redact_query"]


def redact_access_log(name: str = "uvicorn.access") -> None:
    """Mask tokens in the log `name` (once, however often it is called)."""
    protect_loggers(name)

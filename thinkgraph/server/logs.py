"""No token in the server's logs: uvicorn's access log writes each request's query.

Opening ``/?token=TOKEN`` is how the page gets its token, so the access log would keep it.
`RedactTokens` masks the value of every ``token`` query parameter in a log line;
`redact_access_log` puts it on uvicorn's access logger (after uvicorn set up logging).
"""

from __future__ import annotations

import logging
from urllib.parse import unquote_plus

__all__ = ["RedactTokens", "redact_access_log", "redact_query"]

MASK = "***"


def redact_query(text: str) -> str:
    """`text` with the value of each ``token`` parameter of its query string masked."""
    path, sep, query = text.partition("?")
    if not sep:
        return text
    parts = []
    for part in query.split("&"):
        name, _, _ = part.partition("=")
        parts.append(f"{name}={MASK}" if unquote_plus(name).lower() == "token" else part)
    return f"{path}?{'&'.join(parts)}"


class RedactTokens(logging.Filter):
    """A logging filter that masks ``token=…`` in a record's message and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str) and "?" in record.msg:
            record.msg = redact_query(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(
                redact_query(arg) if isinstance(arg, str) and "?" in arg else arg
                for arg in record.args
            )
        return True


def redact_access_log(name: str = "uvicorn.access") -> None:
    """Mask tokens in the log `name` (once, however often it is called)."""
    logger = logging.getLogger(name)
    if not any(isinstance(f, RedactTokens) for f in logger.filters):
        logger.addFilter(RedactTokens())

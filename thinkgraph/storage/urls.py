"""How a store's URL may be shown: in an error, a log line or a table."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

__all__ = ["shown_url"]


def shown_url(url: str) -> str:
    """`url` as it may be printed: its password, if any, replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))

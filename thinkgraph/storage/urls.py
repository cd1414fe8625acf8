"""How a store's URL may be shown: in an error, a log line or a table."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["MAX_POOL_SIZE", "POOL_SIZE_PARAMETER", "shown_url", "split_pool_size"]


def shown_url(url: str) -> str:
    """`url` as it may be printed: its password, if any, replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


POOL_SIZE_PARAMETER = "pool_size"
"""The store URL's query parameter for the PostgreSQL store's pool size (not libpq's)."""
MAX_POOL_SIZE = 100


def split_pool_size(url: str) -> tuple[str, int | None]:
    """`url` without its ``pool_size`` query parameter (libpq refuses one it does not
    know), and the size it gives, or None when it gives none.

    Every piece of code that hands a store URL to the driver passes it through here, so a
    ``postgresql://…?pool_size=4`` URL serves the store, the leases and the job queue alike.

    Raises:
        ValueError: the size is not a whole number from 1 to `MAX_POOL_SIZE`; the message
            is one line saying what to give.
    """
    parts = urlsplit(url)
    if not parts.query:
        return url, None
    kept: list[tuple[str, str]] = []
    given: str | None = None
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name == POOL_SIZE_PARAMETER:
            given = value
        else:
            kept.append((name, value))
    if given is None:
        return url, None
    size = int(given) if given.isdigit() else 0
    if not 1 <= size <= MAX_POOL_SIZE:
        raise ValueError(
            f"pool_size={given} in the store URL {shown_url(url)}: give a whole number of "
            f"connections from 1 to {MAX_POOL_SIZE}, e.g. ?pool_size=8"
        )
    return urlunsplit(parts._replace(query=urlencode(kept))), size

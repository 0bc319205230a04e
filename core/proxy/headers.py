"""Which headers pass through: all of them, less the hop-by-hop ones (RFC 9110 7.6.1) that belong to one connection."""

from __future__ import annotations

from collections.abc import Iterable

HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)
# Never stored, logged or exported: they pass through to the server and nowhere else.
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"})


def end_to_end(headers: Iterable[tuple[str, str]], *, also_drop: Iterable[str] = ()) -> list[tuple[str, str]]:
    """headers in order and as spelled, without the hop-by-hop ones, those the Connection header names, and
    also_drop (lower case)."""
    pairs = list(headers)
    dropped = set(HOP_BY_HOP) | set(also_drop)
    for name, value in pairs:
        if name.lower() == "connection":
            dropped.update(token.strip().lower() for token in value.split(",") if token.strip())
    return [(name, value) for name, value in pairs if name.lower() not in dropped]

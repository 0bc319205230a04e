"""A server's URL taken apart, with one reason in words for each way it can be malformed."""

from __future__ import annotations

import urllib.parse


class BadServerURL(ValueError):
    """Why a text is not a server's URL, as the end of a sentence."""


def split_server_url(text: str) -> urllib.parse.SplitResult:
    """The URL's parts: an http:// or https:// scheme, a host, and a port from 1 to 65535 when one is given.
    urllib raises ValueError for a bracketed host that is no IPv6 address; port 0 would reach port 80."""
    try:
        parts = urllib.parse.urlsplit(text.strip())
        host = parts.hostname
    except ValueError:
        raise BadServerURL("its host in brackets is not an IPv6 address") from None
    if parts.scheme not in ("http", "https") or not host:
        raise BadServerURL("it needs http:// or https:// and a host")
    try:
        port = parts.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise BadServerURL("its port is not a number from 1 to 65535")
    return parts

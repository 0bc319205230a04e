"""The server the proxy forwards to: a URL checked once, and where each request's path lands on it."""

from __future__ import annotations

from dataclasses import dataclass

from core.remote.server_url import BadServerURL, split_server_url


class BadUpstream(ValueError):
    """The upstream URL cannot be used; the message says why and what would do, in words for the window and the
    command line alike."""


@dataclass(frozen=True)
class Upstream:
    origin: str  # scheme://host:port
    prefix: str  # a path the URL carried (/v1), without its last slash; "" for none

    @classmethod
    def parse(cls, url: str) -> Upstream:
        try:
            parts = split_server_url(url)
        except BadServerURL as bad:
            raise BadUpstream(
                f"the server's address {url!r} will not do: {bad} (an address reads like http://127.0.0.1:11434 for "
                f"Ollama, or http://127.0.0.1:8080/v1)"
            ) from None
        if parts.query or parts.fragment or parts.username or parts.password:
            raise BadUpstream(
                "the server's address takes a scheme, host, port and optional path; no query, fragment or password"
            )
        return cls(origin=f"{parts.scheme}://{parts.netloc}", prefix=parts.path.rstrip("/"))

    def target(self, raw_path: str) -> str:
        """The upstream URL for a request's raw path and query, which pass untouched. A prefix in the upstream URL
        (http://host:8080/v1) is added unless the path already starts with it, so clients told either
        http://proxy/v1 or http://proxy reach the same endpoint."""
        path = raw_path if raw_path.startswith("/") else "/" + raw_path
        bare = path.split("?", 1)[0]
        if self.prefix and not (bare == self.prefix or bare.startswith(self.prefix + "/")):
            path = self.prefix + path
        return self.origin + path

    def __str__(self) -> str:
        return self.origin + self.prefix

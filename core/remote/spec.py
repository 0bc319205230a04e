"""A remote model spec: the server's URL, with the served model and protocol in its fragment (never sent on the wire)."""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass
from typing import TypeGuard

from core.errors import ModelLoadError
from core.remote.server_url import BadServerURL, split_server_url

PROTOCOLS = ("auto", "openai", "ollama")
# Query parameters that carry a secret: a key in a URL ends up in shell history, logs and saved chats.
_SECRET_PARAMETERS = ("key", "api_key", "apikey", "token", "access_token", "auth")


def is_remote_spec(text: str | None) -> TypeGuard[str]:
    return text is not None and text.strip().lower().startswith(("http://", "https://"))


@dataclass(frozen=True)
class RemoteSpec:
    """base_url is what requests go to; model and protocol ride in the fragment, which HTTP never sends."""

    base_url: str
    model: str | None = None
    protocol: str = "auto"

    @classmethod
    def parse(cls, text: str) -> RemoteSpec:
        try:
            parts = split_server_url(text)
        except BadServerURL as bad:
            raise ModelLoadError(
                f"{text!r} is not a server URL: {bad}; give one like http://127.0.0.1:8080/v1."
            ) from None
        if parts.username or parts.password:
            raise ModelLoadError(
                "the server URL holds a user name or password; remove it and give the API key "
                "through LATENCYLAB_API_KEY (or the window's key field) instead."
            )
        query = urllib.parse.parse_qs(parts.query)
        if any(name.lower() in _SECRET_PARAMETERS for name in query):
            raise ModelLoadError(
                "the server URL holds a key in its query; remove it and give the API key through "
                "LATENCYLAB_API_KEY (or the window's key field) instead."
            )
        options = urllib.parse.parse_qs(parts.fragment)
        protocol = options.get("protocol", ["auto"])[0]
        if protocol not in PROTOCOLS:
            raise ModelLoadError(f"protocol must be one of: {', '.join(PROTOCOLS)}; got {protocol!r}.")
        base = urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/"), parts.query, ""))
        return cls(base, options.get("model", [None])[0] or None, protocol)

    def with_choice(self, model: str | None = None, protocol: str | None = None) -> RemoteSpec:
        return RemoteSpec(self.base_url, model if model is not None else self.model, protocol or self.protocol)

    def with_base(self, base_url: str) -> RemoteSpec:
        return RemoteSpec(base_url.rstrip("/"), self.model, self.protocol)

    @property
    def root_url(self) -> str:
        """The server's root: the base URL without a trailing /v1 (where llama.cpp's /props and Ollama's /api live)."""
        base = self.base_url
        return base[:-3] if base.endswith("/v1") else base

    def text(self) -> str:
        options = {
            key: value
            for key, value in (("model", self.model), ("protocol", self.protocol))
            if value and value != "auto"
        }
        fragment = urllib.parse.urlencode(options)
        return f"{self.base_url}#{fragment}" if fragment else self.base_url

    @property
    def host(self) -> str:
        return urllib.parse.urlsplit(self.base_url).hostname or ""

    @property
    def is_encrypted(self) -> bool:
        return self.base_url.startswith("https://")

    @property
    def is_loopback(self) -> bool:
        host = self.host
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def plain_http_warning(self) -> str | None:
        """Said once per host: prompts and replies to another machine over http:// travel unencrypted."""
        if self.is_encrypted or self.is_loopback:
            return None
        return (
            f"warning: {self.host} is reached over plain http://, so prompts, replies and any API key "
            f"cross the network unencrypted; use https:// where the server offers it."
        )

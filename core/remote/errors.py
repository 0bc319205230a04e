"""What can go wrong talking to a server, each worded for the person at the keyboard."""

from __future__ import annotations

import socket
import ssl

from core.errors import LatencyLabError


class RemoteError(LatencyLabError):
    """A server could not be reached, refused the request, or sent something unreadable."""


class StreamCut(RemoteError):
    """The reply's stream ended before the server said it was done."""


class ReplyTooLarge(RemoteError):
    """The reply passed the size a client should hold; what came so far is kept."""


class PastMaxTokens(RemoteError):
    """The server kept sending after the new tokens asked for (it ignored max_tokens); what came up to them is kept."""


def connection_error(where: str, error: BaseException, timeout_s: float) -> RemoteError:
    """An OSError from connecting or reading, as one line that says what to check."""
    if isinstance(error, ssl.SSLCertVerificationError):
        return RemoteError(
            f"TLS error talking to {where}: the certificate was not accepted ({error.verify_message}). "
            "Certificates are always verified; add the server's CA to the system's trust store."
        )
    if isinstance(error, ssl.SSLError):
        return RemoteError(f"TLS error talking to {where}: {error.reason or error}.")
    if isinstance(error, ConnectionRefusedError):
        return RemoteError(
            f"could not connect to {where}: the connection was refused. Is the server running, and on this port?"
        )
    if isinstance(error, socket.gaierror):
        return RemoteError(f"could not find the host of {where}: {error.strerror or error}.")
    if isinstance(error, (TimeoutError, socket.timeout)):
        return RemoteError(
            f"{where} sent nothing for {timeout_s:g} s (the server timeout); the server may be "
            "overloaded or stuck. Raise the timeout if it is just slow."
        )
    if isinstance(error, (ConnectionResetError, BrokenPipeError)):
        return StreamCut(f"{where} closed the connection: {error.strerror or error}.")
    return RemoteError(f"could not reach {where}: {getattr(error, 'strerror', None) or error}.")


def http_status_error(where: str, status: int, reason: str, detail: str) -> RemoteError:
    """An HTTP error status with the server's own words, and what to check."""
    said = f" The server said: {detail}" if detail else ""
    if status in (401, 403):
        return RemoteError(f"{where} refused the request (HTTP {status} {reason}): check the API key.{said}")
    if status == 404:
        return RemoteError(
            f"{where} answered HTTP 404 Not Found: check the base URL (it usually ends in /v1) and "
            f"the model name.{said}"
        )
    if status == 429:
        return RemoteError(f"{where} is rate-limiting requests (HTTP 429 Too Many Requests); wait and try again.{said}")
    if status >= 500:
        return RemoteError(f"{where} failed with a server error (HTTP {status} {reason}).{said}")
    return RemoteError(f"{where} refused the request (HTTP {status} {reason}).{said}")


def server_detail(body: bytes, limit: int = 300) -> str:
    """The error message inside an error body (OpenAI's {"error": {"message"}} or Ollama's {"error"}), shortened."""
    import json

    text = body.decode("utf-8", "replace").strip()
    try:
        document = json.loads(text)
    except (ValueError, RecursionError):
        document = None
    if isinstance(document, dict):
        error = document.get("error", document.get("detail", document.get("message")))
        if isinstance(error, dict):
            error = error.get("message") or error
        if error:
            text = str(error)
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


HIDDEN_KEY = "[API key hidden]"


def redact(text: str, key: str | None) -> str:
    """text with the API key taken out, wherever a server echoed it (an error body that repeats the request's
    headers), also when a shortened message cut the key off at its end. Shown or saved text goes through here."""
    if not key or len(key) < 4:
        return text
    text = text.replace(key, HIDDEN_KEY)
    for length in range(len(key) - 1, 5, -1):  # a key cut off where the message was shortened
        if text.endswith((key[:length], key[:length] + "…")):
            return text[: text.rindex(key[:length])] + HIDDEN_KEY + ("…" if text.endswith("…") else "")
    return text


class StreamRedactor:
    """Text that arrives in pieces, with the API key taken out, also where a piece ends partway into it: such an end is
    held back until the next piece shows whether the key goes on (a server that echoes the Authorization header
    into its reply sends it token by token). flush() gives what is held, at the end of the stream."""

    def __init__(self, key: str | None):
        self._key = key if key and len(key) >= 4 else None
        self._held = ""

    def feed(self, text: str) -> str:
        key = self._key
        if key is None:
            return text
        text = (self._held + text).replace(key, HIDDEN_KEY)
        held = next((length for length in range(min(len(key) - 1, len(text)), 0, -1) if text.endswith(key[:length])), 0)
        self._held = text[len(text) - held :] if held else ""
        return text[: len(text) - held]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return held


def redirect_error(where: str, status: int, location: str | None) -> RemoteError:
    """A 3xx: Latency Lab follows no redirect, so the request (and its API key) never went where it points."""
    target = f" to {location[:200]}" if location else ""
    return RemoteError(
        f"{where} redirected the request{target} (HTTP {status}). Latency Lab does not follow "
        f"redirects, so nothing was sent there, the API key included; if you trust that address, use it "
        f"as the server URL."
    )

"""What the HTTP server says of a request it could not parse: one line on stderr, where aiohttp prints a traceback."""

from __future__ import annotations

import logging
import sys

from aiohttp.http_exceptions import HttpProcessingError

from core.terminal_text import terminal_safe


class _ServerErrors(logging.Handler):
    """A client's malformed request (answered 400 by aiohttp, the proxy never sees it) in one line; anything else,
    a fault of the proxy's own, with its traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError):
            what = (str(error.message).strip().splitlines() or [""])[0].rstrip(":") or type(error).__name__
            peer = f" from {record.args[0]}" if isinstance(record.args, tuple) and record.args else ""
            text = f"latencylab proxy: a malformed request{peer} was refused ({error.code}: {what})"
        else:
            text = logging.Formatter("latencylab proxy: %(message)s").format(record)
        print(terminal_safe(text), file=sys.stderr)  # sys.stderr as it is now: the tests' captured one too


def server_logger() -> logging.Logger:
    """The logger the proxy's HTTP server reports request errors to."""
    logger = logging.getLogger("latencylab.proxy.http")
    if not logger.handlers:
        logger.addHandler(_ServerErrors())
        logger.propagate = False
        logger.setLevel(logging.INFO)  # the bad-method noise aiohttp logs at debug level stays out
    return logger

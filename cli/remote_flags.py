"""Fold --served-model and --protocol into a server URL's spec, check --server-timeout, and warn about plain http once."""

from __future__ import annotations

import argparse
import sys

from core.errors import LatencyLabError
from core.remote.spec import RemoteSpec, is_remote_spec
from core.settings import SERVER_TIMEOUT


def apply_remote_flags(args: argparse.Namespace) -> str | None:
    """Rewrite args.model for a server; the problem in words when the flags do not fit, else None."""
    served, protocol = getattr(args, "served_model", None), getattr(args, "protocol", None)
    timeout = getattr(args, "server_timeout", None)
    if not is_remote_spec(args.model):
        if served or protocol or timeout is not None:
            return "--served-model, --protocol and --server-timeout apply only with a server URL as --model."
        return None
    try:
        if timeout is not None:
            SERVER_TIMEOUT.check(timeout)
        spec = RemoteSpec.parse(args.model).with_choice(model=served, protocol=protocol)
    except LatencyLabError as error:
        return str(error)
    args.model = spec.text()
    warning = spec.plain_http_warning()
    if warning:
        print(warning, file=sys.stderr)
    return None

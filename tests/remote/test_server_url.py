"""A malformed server URL is refused in one line, before anything is sent: no traceback, no other port tried."""

from __future__ import annotations

import pytest

from cli.main import main
from core.proxy.upstream import BadUpstream, Upstream

MALFORMED = [
    ("http://[::1", "its host in brackets is not an IPv6 address"),
    ("http://[zz]/v1", "its host in brackets is not an IPv6 address"),
    ("http://127.0.0.1:99999/v1", "its port is not a number from 1 to 65535"),
    ("http://127.0.0.1:0/v1", "its port is not a number from 1 to 65535"),  # urllib's 0 reached port 80
    ("http://127.0.0.1:eighty/v1", "its port is not a number from 1 to 65535"),
]


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_ask_refuses_a_malformed_server_url_in_one_line(capsys, url, reason):
    with pytest.raises(SystemExit) as ended:
        main(["ask", "Hi", "--model", url])
    assert ended.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last == f"latencylab: error: {url!r} is not a server URL: {reason}; give one like http://127.0.0.1:8080/v1."


@pytest.mark.parametrize(("url", "reason"), MALFORMED)
def test_the_proxy_refuses_a_malformed_upstream_with_the_same_reason(url, reason):
    with pytest.raises(BadUpstream, match=f"will not do: {reason} \\(an address reads like"):
        Upstream.parse(url)

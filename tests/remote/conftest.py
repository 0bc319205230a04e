"""Shared by the remote tests: their servers on 127.0.0.1 are reached directly, whatever proxy the machine names."""

from __future__ import annotations

import pytest

PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture(autouse=True)
def no_proxy_from_the_machine(monkeypatch):
    """A developer behind a corporate proxy has HTTP_PROXY set: the client honours it, and 127.0.0.1 is not the
    proxy's to reach. Tests that want a proxy set one."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)

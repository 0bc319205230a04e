"""Which local process owns a client's connection: the socket's inode by sock_diag or /proc, then the fd holding it."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from core.proxy import client_process
from core.proxy.client_process import ConnectionOwners, is_local
from core.proxy.socket_diag import tcp_socket_inode


def _connected(family: int, listen_on: str, connect_to: str, dual_stack: bool = False):
    server = socket.socket(family)
    if dual_stack:
        server.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    server.bind((listen_on, 0))
    server.listen()
    client = socket.create_connection((connect_to, server.getsockname()[1]))
    accepted, peer = server.accept()
    server.close()
    return client, accepted, peer[:2], accepted.getsockname()[:2]


def _inode(sock: socket.socket) -> int:
    return int(os.readlink(f"/proc/self/fd/{sock.fileno()}").removeprefix("socket:[").removesuffix("]"))


@pytest.mark.parametrize(
    "family, listen_on, connect_to, dual_stack",
    [
        (socket.AF_INET, "127.0.0.1", "127.0.0.1", False),
        (socket.AF_INET6, "::1", "::1", False),
        (socket.AF_INET6, "::", "127.0.0.1", True),  # a v4 client of a dual-stack listener: ::ffff:127.0.0.1
    ],
    ids=["ipv4", "ipv6", "dual-stack"],
)
def test_the_kernel_names_the_clients_socket_and_this_process_holds_it(family, listen_on, connect_to, dual_stack):
    client, accepted, peer, own = _connected(family, listen_on, connect_to, dual_stack)
    with client, accepted:
        assert tcp_socket_inode(peer, own) == _inode(client)
        found = ConnectionOwners().owner(peer, own)
    assert found is not None and found.pid == os.getpid()
    assert found.name == Path("/proc/self/comm").read_text().strip()


def test_without_sock_diag_the_proc_tables_serve(monkeypatch):
    def refused(*_):
        raise OSError("no netlink here")

    monkeypatch.setattr(client_process, "tcp_socket_inode", refused)
    client, accepted, peer, own = _connected(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    with client, accepted:
        found = ConnectionOwners().owner(peer, own)
    assert found is not None and found.pid == os.getpid()


def test_a_connection_already_closed_has_no_owner():
    client, accepted, peer, own = _connected(socket.AF_INET, "127.0.0.1", "127.0.0.1")
    client.close()
    accepted.close()
    assert ConnectionOwners().owner(peer, own) is None


def test_only_clients_on_this_machine_are_looked_up():
    assert is_local("127.0.0.1", "127.0.0.1") and is_local("::1", "::1") and is_local("::ffff:127.0.0.1", "::")
    assert is_local("192.168.1.5", "192.168.1.5")  # a client of this machine's own address
    assert not is_local("192.168.1.7", "192.168.1.5") and not is_local("not an address", "127.0.0.1")


def test_a_client_holding_many_files_is_found_without_reading_each_fd(monkeypatch):
    """Each fd read is a readlink: a client with 1,000 open files cost 2.6 ms of CPU a connection when all were read.
    A program's next connection takes an fd near its last, and that is where the lookup looks first."""
    held = [open(os.devnull) for _ in range(300)]  # noqa: SIM115 - held open for the test's length
    links_read = []
    read_link = client_process._link
    monkeypatch.setattr(client_process, "_link", lambda path: links_read.append(path) or read_link(path))
    owners = ConnectionOwners()
    try:
        for connection in range(6):
            client, accepted, peer, own = _connected(socket.AF_INET, "127.0.0.1", "127.0.0.1")
            with client, accepted:
                links_read.clear()
                found = owners.owner(peer, own)
            assert found is not None and found.pid == os.getpid()
            if connection:  # the first looks through the machine's processes for it; later ones know where to look
                assert len(links_read) <= client_process.NEAR_FDS + 1, len(links_read)
    finally:
        for file in held:
            file.close()

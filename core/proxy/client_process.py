"""The local process that owns a client's connection: its socket's inode (sock_diag, else /proc/net/tcp{,6}), then
whose fd holds it.

Linux only, and only where /proc can be read: another user's processes hide their fds unless the proxy runs as root.
Every failure is None, never an error: which program sent a request is a nicety, not a reason to fail it.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

from core.proxy.socket_diag import tcp_socket_inode

PROC = Path("/proc")
_CACHE_SIZE = 256  # sockets remembered: a kept-alive connection carries many requests, looked up once
_RECENT_PROCESSES = 16
NEAR_FDS = 8  # fds tried on each side of where a process's last connection was found, before all of its fds


@dataclass(frozen=True)
class ClientProcess:
    pid: int
    name: str  # the process's comm (its executable's name, 15 characters at most); never its command line


class ConnectionOwners:
    """Looks up the process behind a client's address; remembers the answer per socket (inode)."""

    def __init__(self, proc: Path = PROC):
        self._proc = proc
        self._known: OrderedDict[int, ClientProcess | None] = OrderedDict()
        self._recent: OrderedDict[int, None] = OrderedDict()  # pids that owned connections lately, newest last
        self._last_fd: OrderedDict[str, int] = OrderedDict()  # where each of those had its last connection
        self._lock = threading.Lock()

    def owner(self, client: tuple[str, int], server: tuple[str, int]) -> ClientProcess | None:
        """The process whose socket runs from client (address, port) to server (the proxy's own end)."""
        try:
            inode = self._socket_inode(client, server)
        except (OSError, ValueError):
            return None
        if inode is None:
            return None
        with self._lock:
            if inode in self._known:
                self._known.move_to_end(inode)
                return self._known[inode]
        found = self._process_holding(inode)
        with self._lock:
            self._known[inode] = found
            while len(self._known) > _CACHE_SIZE:
                self._known.popitem(last=False)
        return found

    def _socket_inode(self, client: tuple[str, int], server: tuple[str, int]) -> int | None:
        if self._proc == PROC:
            try:
                return tcp_socket_inode(client, server)
            except OSError:
                pass  # no sock_diag here: the tables, slower
        return self._table_inode(client, server)

    def _table_inode(self, client: tuple[str, int], server: tuple[str, int]) -> int | None:
        local_ip = ipaddress.ip_address(client[0])
        remote_ip = ipaddress.ip_address(server[0])
        tables = ("tcp", "tcp6") if local_ip.version == 4 else ("tcp6",)
        for table in tables:
            wanted_local = _proc_address(local_ip, client[1], table)
            wanted_remote = _proc_address(remote_ip, server[1], table)
            try:
                lines = (self._proc / "net" / table).read_text().splitlines()[1:]
            except OSError:
                continue
            for line in lines:
                fields = line.split()
                if len(fields) > 9 and fields[1] == wanted_local and fields[2] == wanted_remote:
                    return int(fields[9]) or None  # inode 0: a socket on its way out
        return None

    def _process_holding(self, inode: int) -> ClientProcess | None:
        """The process with the socket among its fds: the ones that sent requests lately first (an agent opens
        connection after connection), then every process (a few ms on a desktop)."""
        target = f"socket:[{inode}]"
        with self._lock:
            recent = list(reversed(self._recent))
        for pid in recent:
            if self._holds(str(pid), target):
                return self._seen(pid)
        try:
            processes = [entry.name for entry in os.scandir(self._proc) if entry.name.isdigit()]
        except OSError:
            return None
        for name in processes:
            if int(name) not in recent and self._holds(name, target):
                return self._seen(int(name))
        return None

    def _holds(self, pid: str, target: str) -> bool:
        """Whether the process has the socket among its fds. Each fd looked at costs a readlink, and listing them all
        costs about a microsecond an fd: a client with 1,000 open files cost 2.6 ms of CPU a connection when every
        one was read. So the fds next to where this process's last connection was found are tried first (a program
        opening connection after connection takes the lowest free fds, near its last), then the rest, highest first
        (a new connection's fd is mostly above the files a program keeps open)."""
        folder = f"{self._proc}/{pid}/fd"
        last = self._last_fd.get(pid)
        if last is not None:
            for fd in (*range(last + 1, last + NEAR_FDS + 1), *range(last, max(last - NEAR_FDS, -1), -1)):
                if _link(f"{folder}/{fd}") == target:
                    return self._found_at(pid, fd)
        try:
            fds = sorted((int(name) for name in os.listdir(folder) if name.isdigit()), reverse=True)
        except OSError:
            return False  # gone, or not ours to read
        return any(_link(f"{folder}/{fd}") == target and self._found_at(pid, fd) for fd in fds)

    def _found_at(self, pid: str, fd: int) -> bool:
        with self._lock:
            self._last_fd[pid] = fd
            self._last_fd.move_to_end(pid)
            while len(self._last_fd) > _RECENT_PROCESSES:
                self._last_fd.popitem(last=False)
        return True

    def _seen(self, pid: int) -> ClientProcess:
        with self._lock:
            self._recent[pid] = None
            self._recent.move_to_end(pid)
            while len(self._recent) > _RECENT_PROCESSES:
                self._recent.popitem(last=False)
        return ClientProcess(pid, _name(str(self._proc / str(pid))))


def _proc_address(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int, table: str) -> str:
    """An address as /proc/net/tcp{,6} writes it: the address's 32-bit words in host order, in hex, then the port."""
    if table == "tcp6" and ip.version == 4:
        ip = ipaddress.IPv6Address("::ffff:" + str(ip))  # a v4 client of a dual-stack socket
    packed = socket.inet_pton(socket.AF_INET if ip.version == 4 else socket.AF_INET6, str(ip))
    words = struct.unpack(f"={len(packed) // 4}I", packed)
    return "".join(f"{word:08X}" for word in words) + f":{port:04X}"


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""  # closed while we looked


def _name(process_path: str) -> str:
    try:
        return Path(process_path, "comm").read_text().strip() or "?"
    except OSError:
        return "?"


def is_local(client_ip: str, server_ip: str) -> bool:
    """Whether a client's process can be on this machine: loopback, or the same address the proxy was reached on."""
    try:
        address = ipaddress.ip_address(client_ip)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or bool(mapped and mapped.is_loopback) or client_ip == server_ip

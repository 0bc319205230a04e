"""A TCP socket's inode by its four addresses, asked of the kernel directly (Linux sock_diag netlink, as `ss` does).

Reading /proc/net/tcp walks the kernel's whole connection table on every read: milliseconds on a machine with a large
one, for every new client connection. An exact sock_diag query costs about a hundred microseconds. OSError where it
cannot be asked (not Linux, netlink refused): the caller falls back to /proc.
"""

from __future__ import annotations

import ipaddress
import socket
import struct

NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
NO_COOKIE = 0xFFFFFFFF
_HEADER = struct.Struct("=IHHII")  # nlmsghdr: length, type, flags, sequence, port id
_REQUEST = struct.Struct("=BBBBI")  # inet_diag_req_v2: family, protocol, extensions, pad, states
_SOCKET_ID = struct.Struct(">HH16s16s")  # inet_diag_sockid: ports and addresses in network order...
_SOCKET_ID_TAIL = struct.Struct("=III")  # ...then interface and cookie in host order
_MESSAGE_TAIL = struct.Struct("=IIIII")  # inet_diag_msg after its id: expires, rqueue, wqueue, uid, inode
_MESSAGE_HEAD = 4  # family, state, timer, retransmits


def tcp_socket_inode(local: tuple[str, int], remote: tuple[str, int]) -> int | None:
    """The inode of the TCP socket whose own end is local and whose peer is remote; None: no such socket (closed).
    OSError: the kernel could not be asked."""
    if not hasattr(socket, "AF_NETLINK"):
        raise OSError("no netlink sockets here")
    try:
        local_ip, remote_ip = ipaddress.ip_address(local[0]), ipaddress.ip_address(remote[0])
    except ValueError:
        return None
    family = socket.AF_INET if local_ip.version == 4 and remote_ip.version == 4 else socket.AF_INET6
    request = _REQUEST.pack(family, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
    request += _SOCKET_ID.pack(local[1], remote[1], _packed(local_ip, family), _packed(remote_ip, family))
    request += _SOCKET_ID_TAIL.pack(0, NO_COOKIE, NO_COOKIE)
    message = _HEADER.pack(_HEADER.size + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + request
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as link:
        link.settimeout(1.0)
        link.sendto(message, (0, 0))
        answer = link.recv(65536)
    return _inode_in(answer)


def _packed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, family: int) -> bytes:
    if family == socket.AF_INET6 and ip.version == 4:
        ip = ipaddress.IPv6Address("::ffff:" + str(ip))
    return ip.packed.ljust(16, b"\0")


def _inode_in(answer: bytes) -> int | None:
    if len(answer) < _HEADER.size:
        return None
    length, kind, *_ = _HEADER.unpack_from(answer)
    if kind == NLMSG_ERROR or kind != SOCK_DIAG_BY_FAMILY:
        return None  # no such socket (it closed), or not an answer to this
    offset = _HEADER.size + _MESSAGE_HEAD + _SOCKET_ID.size + _SOCKET_ID_TAIL.size
    if length < offset + _MESSAGE_TAIL.size or len(answer) < offset + _MESSAGE_TAIL.size:
        return None
    inode = _MESSAGE_TAIL.unpack_from(answer, offset)[4]
    return inode or None

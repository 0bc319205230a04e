"""Messages over a socket to a child process: each pickled, behind its length (multiprocessing's Connection format).

Both ends of every pipe to a child (the engine, the chat template's renderer) frame with this module: encode() and
FrameDecoder for an end that must never block (the window reads the engine's events as its event loop finds the socket
readable), FramedSocket for a blocking end. A frame is a 4-byte big-endian signed length and the pickle; a pickle of
2 GiB or more is marked by the length -1 and carries an 8-byte length after it, as Connection writes them.
"""

from __future__ import annotations

import io
import pickle
import select
import socket
import struct
import time
from collections import deque
from typing import Any

_SHORT = struct.Struct("!i")
_LONG = struct.Struct("!Q")
_LONG_MARK = -1
_READ_CHUNK = 1 << 16


def encode(message: object) -> bytes:
    """One message as one frame."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    if len(payload) > 0x7FFFFFFF:
        return _SHORT.pack(_LONG_MARK) + _LONG.pack(len(payload)) + payload
    return _SHORT.pack(len(payload)) + payload


class _Unpickler(pickle.Unpickler):
    """Finds each class once. pickle.loads imports a message's classes anew for every message, and under Qt that
    import runs PySide's Python-level import hook: half of unpickling a token, measured."""

    _found: dict[tuple[str, str], object] = {}

    def find_class(self, module: str, name: str) -> object:
        key = (module, name)
        found = self._found.get(key)
        if found is None:
            found = self._found[key] = super().find_class(module, name)
        return found


class FrameDecoder:
    """Whole messages out of bytes that arrive in pieces of any size; it never reads a socket itself."""

    def __init__(self):
        self._buffer = bytearray()

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        self._buffer += data

    @property
    def pending_bytes(self) -> int:
        """Bytes of a message still arriving."""
        return len(self._buffer)

    def messages(self) -> list[object]:
        """The whole messages fed so far, in order, taken out; a message still arriving stays. Raises what
        unpickling raises on a garbled stream."""
        buffer, messages = self._buffer, []
        offset, end = 0, len(buffer)
        with memoryview(buffer) as view:
            while end - offset >= _SHORT.size:
                (size,) = _SHORT.unpack_from(buffer, offset)
                start = offset + _SHORT.size
                if size == _LONG_MARK:
                    if end - start < _LONG.size:
                        break
                    (size,) = _LONG.unpack_from(buffer, start)
                    start += _LONG.size
                if end < start + size:
                    break
                messages.append(_Unpickler(io.BytesIO(view[start : start + size])).load())
                offset = start + size
        del buffer[:offset]  # once, not per message: each del moves what is left of the buffer
        return messages


class FramedSocket:
    """A blocking end: send() a message, recv() the next (EOFError once the other end has closed), poll() for one."""

    def __init__(self, sock: socket.socket):
        sock.setblocking(True)
        self._socket = sock
        self._decoder = FrameDecoder()
        self._arrived: deque[object] = deque()
        self._ended = False
        self._chunk = bytearray(_READ_CHUNK)

    def send(self, message: object) -> None:
        """Raises OSError (BrokenPipeError among them) when the other end has gone."""
        self._socket.sendall(encode(message))

    def recv(self) -> Any:
        """The next message, as the other end sent it (what it is, the caller's protocol says)."""
        while not self._arrived and not self._ended:
            self._read()
        if not self._arrived:
            raise EOFError("the other end closed the socket")
        return self._arrived.popleft()

    def poll(self, timeout_s: float) -> bool:
        """Whether recv() would return at once: a whole message is here, or the other end has closed."""
        deadline = time.monotonic() + timeout_s
        while not self._arrived and not self._ended:
            left = max(deadline - time.monotonic(), 0.0)
            if not select.select([self._socket], [], [], left)[0]:
                return False
            self._read()
        return True

    def fileno(self) -> int:
        return self._socket.fileno()

    def close(self) -> None:
        self._socket.close()

    def _read(self) -> None:
        read = self._socket.recv_into(self._chunk)
        if read == 0:
            self._ended = True
            return
        self._decoder.feed(memoryview(self._chunk)[:read])
        self._arrived.extend(self._decoder.messages())

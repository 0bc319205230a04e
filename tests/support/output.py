"""Reading a child process's output as it comes: up to a marker, with no sleep and no time limit of its own."""

from __future__ import annotations


def read_until(stream, marker: bytes) -> bytes:
    """What the stream gave until marker appeared in it (the child is then mid-reply); fails if the stream ends first."""
    shown = b""
    while marker not in shown:
        piece = stream.read1(64)
        assert piece, f"the output ended before {marker!r}: {shown!r}"
        shown += piece
    return shown

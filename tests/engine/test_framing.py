"""Both ends of a child's socket frame messages with core/framing.py, in multiprocessing's Connection format (the
window's non-blocking reader is tested with every engine event in test_event_pickling.py)."""

from __future__ import annotations

import socket
from multiprocessing.connection import Connection

import pytest

from core.framing import FramedSocket, encode

MESSAGES = [("ready", None), {"text": "é" * 70_000}, list(range(5))]  # one longer than a read of the socket


@pytest.fixture
def pair():
    ours, theirs = socket.socketpair()
    yield FramedSocket(ours), theirs
    ours.close()
    theirs.close()


def test_a_blocking_end_reads_what_the_other_sends_in_order(pair):
    ours, theirs = pair
    other = FramedSocket(theirs)
    for message in MESSAGES:
        other.send(message)
    assert [ours.recv() for _ in MESSAGES] == MESSAGES


def test_the_frames_are_multiprocessing_connections(pair):
    """Either end may be a Connection: the format is the one Python's own pipes speak."""
    ours, theirs = pair
    connection = Connection(theirs.detach())
    try:
        connection.send(MESSAGES)
        assert ours.recv() == MESSAGES
        ours.send(MESSAGES)
        assert connection.recv() == MESSAGES
    finally:
        connection.close()


def test_poll_says_whether_a_whole_message_is_there(pair):
    ours, theirs = pair
    assert not ours.poll(0)
    frame = encode(MESSAGES[1])
    theirs.sendall(frame[:100])
    assert not ours.poll(0.05)  # a message half there is not one yet
    theirs.sendall(frame[100:])
    assert ours.poll(5) and ours.recv() == MESSAGES[1]


def test_the_other_end_closing_is_eof_after_what_it_sent(pair):
    ours, theirs = pair
    theirs.sendall(encode("last words"))
    theirs.close()
    assert ours.poll(5) and ours.recv() == "last words"
    assert ours.poll(0)
    with pytest.raises(EOFError):
        ours.recv()

"""Per-save work on the GUI thread is bounded: it does not grow with the size of the chat's text."""

from __future__ import annotations

import sys
import threading

import pytest

from core.chats.record import ChatRecord, default_title
from core.chats.session import ChatSession
from core.chats.store import ChatStore

SIZES = [1_000, 1_000_000, 20_000_000]


def calls_made(function) -> int:
    """How many Python and built-in calls function makes on this thread (a count, not a time)."""
    count = 0

    def profile(frame, event, arg):
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return count


@pytest.fixture
def keeper(qtbot, tmp_path):
    from gui.chats.chat_keeper import ChatKeeper

    keeper = ChatKeeper(ChatStore(tmp_path / "chats"))
    yield keeper
    assert keeper.close(10)


def save_a_turn(keeper, session: ChatSession, text: str) -> None:
    session.add_user(text)
    keeper.capture(session, [], {"temperature": 0.0}, "model", generating=False)
    keeper.save_current()


def per_save_calls(keeper, first_line_chars: int) -> int:
    session = ChatSession()
    save_a_turn(keeper, session, "x" * first_line_chars)  # one huge first line: the title comes from it
    assert keeper.saver.flush(30)
    return calls_made(lambda: save_a_turn(keeper, session, "and one more short turn"))


def test_a_save_costs_the_same_calls_for_a_kilobyte_and_a_20_mb_chat(keeper):
    counts = [per_save_calls(keeper, size) for size in SIZES]
    keeper.start_new()
    # A few calls may differ with whether the saver thread is already waiting; the text's size adds none
    # (the title alone was one isprintable() call per character).
    assert max(counts) - min(counts) < 50, dict(zip(SIZES, counts))


@pytest.mark.parametrize("size", SIZES)
def test_the_title_looks_at_a_bounded_prefix(size):
    text = "\n\n   " + "y" * size + "\nsecond line"
    assert calls_made(lambda: default_title(text)) == calls_made(lambda: default_title("\n\n   " + "y" * 500))
    assert default_title(text) == "y" * 79 + "\u2026"


@pytest.mark.parametrize(
    "text, title",
    [
        ("", "New chat"),
        ("   \n\t\n", "New chat"),
        ("\x00\x01\x02", "New chat"),
        ("  Hello world  \nmore", "Hello world"),
        ("\n\nTab\there", "Tabhere"),
        ("é" * 100, "é" * 79 + "\u2026"),
    ],
)
def test_the_title_is_the_first_printable_line(text, title):
    assert default_title(text) == title


def test_save_builds_the_document_on_the_saver_thread_only(keeper, monkeypatch):
    threads = []
    original = ChatRecord.to_document

    def spy(self):
        threads.append(threading.current_thread().name)
        return original(self)

    monkeypatch.setattr(ChatRecord, "to_document", spy)
    session = ChatSession()
    for turn in range(3):
        save_a_turn(keeper, session, f"turn {turn}")
        assert keeper.saver.flush(30)
    assert threads and set(threads) == {"latencylab-chat-saver"}
    assert len(keeper.store.load(keeper.current.chat_id).messages) == 3


def test_an_unchanged_chat_is_not_saved_again(keeper):
    session = ChatSession()
    save_a_turn(keeper, session, "hello")
    assert keeper.saver.flush(30)
    writes = keeper.saver.writes
    keeper.capture(session, [], {"temperature": 0.0}, "model", generating=False)
    keeper.save_current()
    assert keeper.saver.flush(30) and keeper.saver.writes == writes
    keeper.capture(session, [], {"temperature": 0.5}, "model", generating=False)
    keeper.save_current()
    assert keeper.saver.flush(30) and keeper.saver.writes == writes + 1

"""One 'window' in its own process, using the chat store and background saver the way the window does.

Usage: python two_windows_driver.py FOLDER CHAT_ID CHANGE [--wait]
It opens the chat, then (after a line on stdin with --wait) makes CHANGE and saves through a
BackgroundSaver, prints each notice as 'NOTICE: ...' and exits.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from core.chats.saver import BackgroundSaver
from core.chats.session import Message
from core.chats.store import ChatStore


def main() -> int:
    folder, chat_id, change = sys.argv[1:4]
    store = ChatStore(Path(folder))
    record = store.load(chat_id)
    print("OPENED", len(record.messages), flush=True)
    if "--wait" in sys.argv:
        sys.stdin.readline()
    if change == "add a turn":
        record.messages += [Message("user", "a question from this window"), Message("assistant", "its answer")]
    elif change == "rename":
        record.title, record.title_is_custom = "Renamed here", True
    elif change == "temperature":
        record.settings = {**record.settings, "temperature": 0.7}
    saver = BackgroundSaver(store, on_error=lambda message: print("NOTICE:", message, flush=True))
    saver.save(record)
    assert saver.close(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())

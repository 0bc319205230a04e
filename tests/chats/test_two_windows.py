"""Two windows (processes) on one data folder: no save drops turns the other one wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.chats.session import Message
from core.chats.store import ChatStore

pytestmark = pytest.mark.subprocess  # each test runs latencylab (or Python) in a child process

DRIVER = Path(__file__).with_name("two_windows_driver.py")


def saved_chats(folder: Path) -> dict[str, dict]:
    return {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in folder.glob("*.json")}


def start_window(folder: Path, chat_id: str, change: str, wait: bool) -> subprocess.Popen:
    command = [sys.executable, str(DRIVER), str(folder), chat_id, change] + (["--wait"] if wait else [])
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().startswith("OPENED 2")
    return process


def finish(process: subprocess.Popen, release: bool = False) -> str:
    out, err = process.communicate("go\n" if release else None, timeout=60)
    assert process.returncode == 0, err
    return out


@pytest.fixture
def shared_chat(tmp_path):
    folder = tmp_path / "chats"
    store = ChatStore(folder)
    from test_chat_store import make_chat

    record = make_chat("Dragons")  # 2 messages
    store.save(record)
    return folder, record.chat_id


@pytest.mark.timeout(120)
@pytest.mark.parametrize("change", ["rename", "temperature", "add a turn"])
def test_a_window_saving_a_stale_chat_keeps_the_other_windows_turns(shared_chat, change):
    """B opens X; A opens X, adds a turn and closes (4 messages); B changes X and closes: X keeps 4."""
    folder, chat_id = shared_chat
    window_b = start_window(folder, chat_id, change, wait=True)
    assert "NOTICE" not in finish(start_window(folder, chat_id, "add a turn", wait=False))
    assert len(saved_chats(folder)[chat_id]["messages"]) == 4
    said = finish(window_b, release=True)
    chats = saved_chats(folder)
    assert len(chats[chat_id]["messages"]) == 4  # A's turn survived
    assert chats[chat_id]["title"] == "Dragons"
    copies = [doc for key, doc in chats.items() if key != chat_id]
    assert len(copies) == 1  # and B's version is there too, as a conflict copy
    copy = copies[0]
    assert copy["title"] == ("Renamed here" if change == "rename" else "Dragons") + " (conflict copy)"
    assert copy["messages"][:2] == chats[chat_id]["messages"][:2]
    assert len(copy["messages"]) == (4 if change == "add a turn" else 2)
    if change == "temperature":
        assert copy["settings"]["temperature"] == 0.7
    notices = [line for line in said.splitlines() if line.startswith("NOTICE:")]
    assert len(notices) == 1 and "changed by another Latency Lab window" in notices[0]
    assert copy["title"] in notices[0]


@pytest.mark.timeout(120)
def test_without_another_writer_a_save_overwrites_in_place(shared_chat):
    folder, chat_id = shared_chat
    assert "NOTICE" not in finish(start_window(folder, chat_id, "rename", wait=False))
    chats = saved_chats(folder)
    assert list(chats) == [chat_id] and chats[chat_id]["title"] == "Renamed here"


def test_after_a_conflict_later_saves_go_to_the_copy(shared_chat):
    folder, chat_id = shared_chat
    mine, theirs = ChatStore(folder), ChatStore(folder)
    record, other = mine.load(chat_id), theirs.load(chat_id)
    other.messages.append(Message("user", "theirs"))
    assert theirs.save(other) is None
    record.messages.append(Message("user", "mine"))
    assert "conflict copy" in mine.save(record)
    record.messages.append(Message("user", "mine again"))
    assert mine.save(record) is None  # no second copy: the first one is this window's chat now
    chats = saved_chats(folder)
    assert len(chats) == 2
    assert [m["content"] for m in chats[chat_id]["messages"]][-1] == "theirs"
    copy = next(doc for key, doc in chats.items() if key != chat_id)
    assert [m["content"] for m in copy["messages"]][-2:] == ["mine", "mine again"]


def test_a_file_rewritten_with_the_same_bytes_is_no_conflict(shared_chat):
    folder, chat_id = shared_chat
    store = ChatStore(folder)
    record = store.load(chat_id)
    path = folder / f"{chat_id}.json"
    path.write_bytes(path.read_bytes())  # a new mtime, the same chat
    record.title = "Mine"
    assert store.save(record) is None and list(saved_chats(folder)) == [chat_id]

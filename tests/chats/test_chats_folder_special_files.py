"""Anything in the chats folder that is not a regular chat file is moved aside with a notice, never read."""

from __future__ import annotations

import os
import socket

import pytest
from test_chat_store import make_chat

from core.chats import store as store_module
from core.chats.record import ChatFileError
from core.chats.store import CORRUPT_FOLDER, ChatStore


def fifo(folder, outside):
    os.mkfifo(folder / "x.json")  # opened the ordinary way, this blocks until a writer appears: forever


def link_to_dev_zero(folder, outside):
    os.symlink("/dev/zero", folder / "zero.json")  # read whole, an endless file: MemoryError


def link_outside(folder, outside):
    secret = outside / "elsewhere.json"
    secret.write_bytes(ChatStore(outside).encode(make_chat("Not yours")))
    os.symlink(secret, folder / "elsewhere.json")


def folder_named_json(folder, outside):
    (folder / "y.json").mkdir()


def oversized(folder, outside):
    with open(folder / "huge.json", "wb") as handle:
        handle.truncate(store_module.MAX_CHAT_FILE_BYTES + 1)  # sparse: no disk used


def unix_socket(folder, outside):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "sock.json"))
    server.close()


SPECIAL = {
    "FIFO": (fifo, "x.json", "named pipe"),
    "symlink to /dev/zero": (link_to_dev_zero, "zero.json", "symbolic link"),
    "symlink out of the folder": (link_outside, "elsewhere.json", "symbolic link"),
    "folder named y.json": (folder_named_json, "y.json", "a folder"),
    "oversized file": (oversized, "huge.json", "larger than"),
    "socket": (unix_socket, "sock.json", "socket"),
}


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", list(SPECIAL))
def test_the_scan_moves_special_files_aside_and_loads_the_rest(tmp_path, name):
    make, file_name, reason = SPECIAL[name]
    folder, outside = tmp_path / "chats", tmp_path / "outside"
    folder.mkdir()
    outside.mkdir()
    store = ChatStore(folder)
    good = make_chat("Good chat")
    store.save(good)
    make(folder, outside)
    summaries = store.scan()
    assert [summary.chat_id for summary in summaries] == [good.chat_id]
    assert len(store.notices) == 1
    notice = store.notices[0]
    assert file_name in notice and reason in notice and "moved aside" in notice
    assert not os.path.lexists(folder / file_name)  # moved, so the next launch does not meet it again
    assert len(os.listdir(folder / CORRUPT_FOLDER)) == 1
    if name == "symlink out of the folder":
        assert (outside / "elsewhere.json").exists()  # the link was moved, never what it pointed to


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["FIFO", "symlink to /dev/zero", "folder named y.json", "socket"])
def test_import_refuses_what_is_not_a_regular_file(tmp_path, name):
    make, file_name, reason = SPECIAL[name]
    make(tmp_path, tmp_path)
    with pytest.raises(ChatFileError) as refused:
        ChatStore(tmp_path / "chats").import_chat(tmp_path / file_name)
    assert f"could not import {file_name}" in str(refused.value) and "not a regular file" in str(refused.value)


def test_import_follows_a_link_the_user_chose_to_a_real_chat(tmp_path):
    exported = tmp_path / "export.json"
    ChatStore(tmp_path / "a").export_chat(make_chat("Shared"), exported)
    os.symlink(exported, tmp_path / "link.json")
    assert ChatStore(tmp_path / "b").import_chat(tmp_path / "link.json").title == "Shared"

"""Every file a user names is read by one bounded reader: a FIFO, /dev/zero, a folder or an oversized file is refused in
one line at once, whether it is a race's --history, a replay, a race file, lab results or a chat to import."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core.chats.chat_schema import MAX_CHAT_FILE_BYTES
from core.errors import LatencyLabError
from core.race.document import MAX_RACE_BYTES
from core.timing.replay import MAX_TRACE_BYTES

BAD_FILES = ["a FIFO", "/dev/zero", "a link to /dev/zero", "a folder", "an oversized file"]
REASONS = {
    "a FIFO": "it is a named pipe (FIFO), not a regular file",
    "/dev/zero": "it is a character device, not a regular file",
    "a link to /dev/zero": "it is a character device, not a regular file",
    "a folder": "it is a folder, not a regular file",
}


def plant(kind: str, folder: Path, limit: int) -> Path:
    """The bad file of this kind; an oversized one is sparse: one byte past the reader's limit, nothing on disk."""
    path = folder / "named.json"
    if kind == "a FIFO":
        os.mkfifo(path)
    elif kind == "/dev/zero":
        return Path("/dev/zero")
    elif kind == "a link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "a folder":
        path.mkdir()
    else:
        with open(path, "wb") as handle:
            handle.truncate(limit + 1)
    return path


def refusal(kind: str, limit: int) -> str:
    return REASONS.get(kind, f"the file is larger than {limit // 2**20} MB")


def race_history(path: Path, capsys, open_window) -> str:
    from cli.main import main

    assert main(["race", "Hi", "--a", "streaming=on", "--b", "streaming=off", "--history", str(path)]) == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


def replay(path: Path, capsys, open_window) -> str:
    window = open_window(show=False)
    assert window.open_replay(path) is None
    return window.statusBar().currentMessage()


def race_file(path: Path, capsys, open_window) -> str:
    from gui.race.launch import race_window

    race = race_window(open_window(show=False))
    assert race.open_race(path) is False
    text = race.status.text()
    race.close()
    return text


def lab_results(path: Path, capsys, open_window) -> str:
    from core.lab.results import load_results_json

    with pytest.raises(LatencyLabError) as refused:
        load_results_json(path)
    return str(refused.value)


def chat_import(path: Path, capsys, open_window) -> str:
    from core.chats.store import ChatStore

    with pytest.raises(LatencyLabError) as refused:
        ChatStore(path.parent / "chats").import_chat(path)
    return str(refused.value)


READERS = {  # each reader, and the most its kind of file may hold
    "race --history": (race_history, MAX_CHAT_FILE_BYTES),
    "File → Replay a trace": (replay, max(MAX_TRACE_BYTES, MAX_RACE_BYTES)),
    "the race window's Open": (race_file, MAX_RACE_BYTES),
    "Lab → Load results": (lab_results, 64 * 2**20),
    "File → Import chat": (chat_import, MAX_CHAT_FILE_BYTES),
}


@pytest.mark.parametrize("kind", BAD_FILES)
@pytest.mark.parametrize("reader", list(READERS))
def test_a_named_file_that_is_not_a_bounded_regular_file_is_refused_in_one_line(
    reader, kind, tmp_path, capsys, open_window
):
    read, limit = READERS[reader]
    path = plant(kind, tmp_path, limit)
    said = read(path, capsys, open_window)
    assert refusal(kind, limit) in said and "\n" not in said, said
    assert path.name in said


def test_a_link_to_a_regular_file_is_read(tmp_path, capsys):
    """The user chose the link: what it leads to is read, when that is a regular file."""
    from cli.race import read_history
    from core.chats.record import ChatRecord, encode_document

    chat = tmp_path / "chat.json"
    record = ChatRecord.new()
    record.system_prompt = "Be brief."
    chat.write_bytes(encode_document(record.to_document()))
    link = tmp_path / "link.json"
    link.symlink_to(chat)
    assert read_history(str(link)) == ("Be brief.", ())

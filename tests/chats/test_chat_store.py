"""Chat files on disk: atomic private writes, list/rename/delete, corrupt files moved aside, import and export."""

import json
import os
import stat
from pathlib import Path

import pytest

from core import atomic_file
from core.chats.chat_schema import REPLY_CONTEXT
from core.chats.record import ChatFileError, ChatRecord, ReplyRecord, default_title
from core.chats.reply_context import ReplyContext
from core.chats.session import Message
from core.chats.store import ChatStore, chats_folder
from core.timing.trace import ReplyTrace


def make_chat(title="A chat", text="hello", tokens=("Hi", "!")) -> ChatRecord:
    record = ChatRecord.new(title)
    record.messages = [Message("user", text), Message("assistant", "".join(tokens))]
    trace = ReplyTrace(
        1_000,
        prompt_tokens=12,
        token_ids=list(range(len(tokens))),
        token_texts=list(tokens),
        timestamps_ns=[2_000 + i for i in range(len(tokens))],
        stop_reason="eos",
    )
    record.replies = [ReplyRecord(trace, ReplyContext(streaming=True, message_index=1, settings={"max_new_tokens": 8}))]
    record.settings = {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "seed": None, "streaming": True}
    return record


def test_store_lives_in_the_user_data_dir_and_honours_xdg(tmp_path):
    assert chats_folder() == tmp_path / "data" / "latencylab" / "chats"


def test_store_honours_the_override_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("LATENCYLAB_DATA_DIR", str(tmp_path / "elsewhere"))
    assert chats_folder() == tmp_path / "elsewhere" / "chats"


def test_saved_chat_is_private_and_loads_back_equal(tmp_path):
    store = ChatStore(tmp_path / "chats")
    record = make_chat()
    store.save(record)
    path = store.path_for(record.chat_id)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    loaded = store.load(record.chat_id)
    assert loaded == record
    assert loaded.replies[0].trace.metrics() == record.replies[0].trace.metrics()
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind


def test_every_field_of_a_reply_context_is_saved_and_loaded_back_equal(tmp_path):
    store = ChatStore(tmp_path / "chats")
    record = make_chat()
    context = ReplyContext(
        streaming=False,
        settings={"max_new_tokens": 8, "seed": None},
        decode_loop="lean",
        notice="Older turns were left out.",
        interrupted=True,
        message_index=1,
        after_message=0,
        model="tiny",
        extra={"from_a_newer_version": [1, "two"]},  # a key this version does not know is kept
    )
    record.replies[0].context = context
    store.save(record)
    assert store.load(record.chat_id).replies[0].context == context
    written = json.loads(store.path_for(record.chat_id).read_text())["replies"][0]["context"]
    assert list(written) == [*REPLY_CONTEXT, "from_a_newer_version"] and written["notice"] == context.notice


def test_a_loose_existing_folder_is_tightened(tmp_path):
    folder = tmp_path / "chats"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    ChatStore(folder).save(make_chat())
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_failed_write_leaves_the_previous_file_intact(tmp_path, monkeypatch):
    store = ChatStore(tmp_path / "chats")
    record = make_chat(text="version one")
    store.save(record)
    record.messages[0].content = "version two"

    def failing_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic_file.os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="No space"):
        store.save(record)
    monkeypatch.undo()
    assert store.load(record.chat_id).messages[0].content == "version one"
    assert [p.name for p in store.folder.iterdir()] == [f"{record.chat_id}.json"]


def test_list_rename_and_delete(tmp_path):
    store = ChatStore(tmp_path / "chats")
    first, second = make_chat("first"), make_chat("second")
    first.updated_at, second.updated_at = "2026-01-01T00:00:00+00:00", "2026-02-01T00:00:00+00:00"
    store.save(first)
    store.save(second)
    assert [s.title for s in store.scan()] == ["second", "first"]
    renamed = store.rename(first.chat_id, "  Trip\tplans\n")
    assert renamed.title == "Trip plans" and renamed.title_is_custom
    assert {s.title for s in store.scan()} == {"second", "Trip plans"}
    store.delete(second.chat_id)
    store.delete(second.chat_id)  # deleting twice is not an error
    assert [s.chat_id for s in store.scan()] == [first.chat_id]
    assert store.notices == []


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # truncated mid-write by an old, non-atomic writer
        lambda data: b"",  # empty
        lambda data: b"\xff\xfe" + data,  # not UTF-8
        lambda data: data.replace(b'"user"', b'"robot"'),  # valid JSON, invalid chat
        lambda data: b"[1, 2, 3]",
        lambda data: b"[" * 100_000,  # nesting deep enough to overflow a recursive parser
    ],
)
def test_a_corrupt_chat_is_moved_aside_with_a_notice_and_the_others_still_load(tmp_path, damage):
    store = ChatStore(tmp_path / "chats")
    good, bad = make_chat("good"), make_chat("bad")
    store.save(good)
    store.save(bad)
    bad_path = store.path_for(bad.chat_id)
    bad_path.write_bytes(damage(bad_path.read_bytes()))
    summaries = store.scan()
    assert [s.chat_id for s in summaries] == [good.chat_id]
    assert not bad_path.exists()
    moved = list((store.folder / "corrupt").iterdir())
    assert len(moved) == 1 and moved[0].name.startswith(bad.chat_id)
    assert len(store.notices) == 1
    assert bad_path.name in store.notices[0] and "moved aside" in store.notices[0] and str(moved[0]) in store.notices[0]
    assert store.scan() == summaries and len(store.notices) == 1  # moved once, reported once


def test_loading_a_chat_that_went_bad_raises_a_clear_error_and_moves_it(tmp_path):
    store = ChatStore(tmp_path / "chats")
    record = make_chat()
    store.save(record)
    store.path_for(record.chat_id).write_text("{", encoding="utf-8")
    with pytest.raises(ChatFileError, match="moved aside"):
        store.load(record.chat_id)
    with pytest.raises(ChatFileError, match="no longer exists"):
        store.load(record.chat_id)


def test_stale_temporary_files_from_a_killed_write_are_removed(tmp_path):
    store = ChatStore(tmp_path / "chats")
    store.save(make_chat())
    stale = store.folder / ".tmp-abc.part"
    fresh = store.folder / ".tmp-def.part"
    stale.write_bytes(b'{"half": ')
    fresh.write_bytes(b'{"half": ')
    os.utime(stale, (1, 1))
    assert len(store.scan()) == 1 and store.notices == []
    assert not stale.exists() and fresh.exists()  # a write still in progress elsewhere is left alone


def test_a_file_named_unlike_its_chat_id_is_refused(tmp_path):
    store = ChatStore(tmp_path / "chats")
    record = make_chat()
    store.save(record)
    os.replace(store.path_for(record.chat_id), store.folder / "renamed-by-hand.json")
    assert store.scan() == [] and "does not match" in store.notices[0]


def test_chat_ids_cannot_reach_outside_the_folder(tmp_path):
    store = ChatStore(tmp_path / "chats")
    for bad_id in ("../escape", "a/b", "", "x" * 65):
        with pytest.raises(ChatFileError):
            store.path_for(bad_id)


def test_export_then_import_gives_an_equal_chat_under_a_new_id(tmp_path):
    store = ChatStore(tmp_path / "chats")
    record = make_chat(text="שלום 👋 مرحبا\x00\x07 end")
    store.save(record)
    exported = tmp_path / "exported.json"
    store.export_chat(record, exported)
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    imported = store.import_chat(exported)
    assert imported.chat_id != record.chat_id
    assert imported.messages == record.messages and imported.replies == record.replies
    assert len(store.scan()) == 2


def test_export_holds_only_what_the_user_sees(tmp_path):
    record = make_chat()
    record.model = "SmolLM2-135M-Instruct (Q4_1 GGUF, embedded)"
    exported = tmp_path / "out.json"
    ChatStore(tmp_path / "chats").export_chat(record, exported)
    text = exported.read_text(encoding="utf-8")
    assert str(Path.home()) not in text and str(tmp_path) not in text and "/" not in json.loads(text)["model"]
    assert set(json.loads(text)) == {
        "format",
        "id",
        "title",
        "title_is_custom",
        "created_at",
        "updated_at",
        "model",
        "system_prompt",
        "settings",
        "reply_pending",
        "messages",
        "replies",
    }


@pytest.mark.parametrize(
    "content, message",
    [
        (b"not json", "not complete JSON"),
        (b'{"format": "something-else"}', "not a Latency Lab chat"),
        (
            json.dumps({**make_chat().to_document(), "messages": [{"role": "user"}]}).encode(),
            r"messages\[0\]\.content is missing",
        ),
    ],
)
def test_import_refuses_what_is_not_a_chat_with_the_reason(tmp_path, content, message):
    source = tmp_path / "in.json"
    source.write_bytes(content)
    store = ChatStore(tmp_path / "chats")
    with pytest.raises(ChatFileError, match=message):
        store.import_chat(source)
    assert store.scan() == []


def test_default_title_is_one_printable_line():
    assert default_title("\n\n  Plan a trip\x00 to Rome\nsecond line") == "Plan a trip to Rome"
    assert default_title("   ") == "New chat"
    assert len(default_title("word " * 100)) == 80

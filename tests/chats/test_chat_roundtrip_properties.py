"""Property tests: any text and any trace survive save/load and export/import exactly."""

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.chats.record import ChatRecord, ReplyRecord, decode_document, encode_document
from core.chats.reply_context import ReplyContext
from core.chats.session import Message
from core.chats.store import ChatStore
from core.timing.trace import ReplyTrace

# Every code point, lone surrogates included: Qt hands Python such strings when a paste holds half a pair.
ANY_CHARACTER = st.characters(codec=None, exclude_categories=())
TEXT = st.text(ANY_CHARACTER, max_size=200)
LONG_LINE = st.integers(20_000, 120_000).map(lambda n: "x" * n)


@st.composite
def traces(draw):
    count = draw(st.integers(0, 12))
    start = draw(st.integers(0, 2**62))
    stamps, now = [], start
    for _ in range(count):
        now += draw(st.integers(1, 10**9))
        stamps.append(now)
    return ReplyTrace(
        request_start_ns=start,
        prompt_tokens=draw(st.integers(0, 10**6)),
        token_ids=draw(st.lists(st.integers(0, 2**31), min_size=count, max_size=count)),
        token_texts=draw(st.lists(TEXT, min_size=count, max_size=count)),
        timestamps_ns=stamps,
        stop_reason=draw(st.sampled_from([None, "eos", "max_tokens", "stopped", "error"])),
        error=draw(st.one_of(st.none(), TEXT)),
        tail_text=draw(TEXT),
    )


@st.composite
def chats(draw):
    record = ChatRecord.new(draw(TEXT))
    record.system_prompt = draw(TEXT)
    record.model = draw(st.one_of(st.none(), TEXT))
    record.messages = [
        Message(draw(st.sampled_from(["user", "assistant"])), draw(st.one_of(TEXT, LONG_LINE)))
        for _ in range(draw(st.integers(0, 6)))
    ]
    record.replies = [
        ReplyRecord(draw(traces()), ReplyContext(streaming=draw(st.booleans()), extra={"note": draw(TEXT)}))
        for _ in range(draw(st.integers(0, 3)))
    ]
    record.reply_pending = draw(st.booleans())
    return record


@settings(max_examples=150, deadline=None)
@given(chats())
def test_encode_then_decode_is_the_identity(record):
    assert decode_document(encode_document(record.to_document())) == record


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chats())
def test_save_load_and_export_import_round_trip_any_text(tmp_path, record):
    store = ChatStore(tmp_path / "chats")
    store.save(record)
    assert store.load(record.chat_id) == record
    exported = tmp_path / "export.json"
    store.export_chat(record, exported)
    imported = store.import_chat(exported)
    assert imported.messages == record.messages and imported.replies == record.replies
    assert imported.system_prompt == record.system_prompt and imported.title == record.title
    assert [r.trace.metrics() for r in imported.replies] == [r.trace.metrics() for r in record.replies]
    store.delete(imported.chat_id)


@given(st.text(st.characters(codec="utf-8"), max_size=200))
def test_ordinary_text_is_stored_as_readable_utf8_not_escapes(text):
    record = ChatRecord.new()
    record.messages = [Message("user", text)]
    data = encode_document(record.to_document())
    assert json.loads(data.decode("utf-8"))["messages"][0]["content"] == text
    assert all(ch.encode("utf-8") in data for ch in text if ord(ch) > 127)

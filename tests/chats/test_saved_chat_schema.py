"""A saved chat is input: any field of the wrong type, any number no field may hold, and any chat past the bounds is
moved aside with a notice, and the window starts."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.chats.chat_schema import MAX_REPLIES
from core.chats.record import CHAT_FORMAT, ChatFileError, ChatRecord, ReplyRecord, decode_document, encode_document
from core.chats.reply_context import ReplyContext
from core.chats.session import Message
from core.chats.store import CORRUPT_FOLDER, ChatStore, chats_folder
from core.timing.events import CpuUsage, PromptCacheReport, ServerReport
from core.timing.trace import ReplyTrace

SETTINGS = {"max_new_tokens": 8, "temperature": 0.0, "top_p": 1.0, "seed": None, "decode_loop": "lean"}


def valid_document(chat_id: str = "20250101-000000-aaaaaaaa") -> dict:
    """A chat as the window saves it, with every field the window reads on opening it."""
    record = ChatRecord(
        chat_id=chat_id,
        title="Lighthouses",
        created_at="2025-01-01T00:00:00+00:00",
        updated_at="2025-01-01T00:00:01+00:00",
        system_prompt="Be brief.",
        settings={**SETTINGS, "streaming": True},
        model="tiny",
        messages=[Message("user", "Tell me"), Message("assistant", "Hello there")],
    )
    trace = ReplyTrace(
        request_start_ns=1_000,
        prompt_tokens=5,
        token_ids=[1, 2],
        token_texts=["Hello", " there"],
        timestamps_ns=[2_000, 3_000],
        arrivals_ns=[2_100, 3_100],
        stop_reason="eos",
        prefill_progress=[(1_500, 0.5), (2_000, 1.0)],
        prompt_ready_ns=1_200,
        compute_started_ns=1_300,
        finished_ns=3_000,
        painted_ns=[2_200],
        chunk_of=[0, 1],
        server=ServerReport("llama.cpp", 5, 2, 1_900, 2, {"source": "llama.cpp timings", "prompt_ms": 1.5}),
        cache=PromptCacheReport(5, 3, "llama.cpp reused 3 cached prompt tokens", 3, "llama.cpp timings.cache_n"),
        cpu=CpuUsage(0.5, 1.0, 2),
        window_cpu_s=0.1,
    )
    record.replies = [
        ReplyRecord(
            trace,
            ReplyContext(
                streaming=True,
                settings=dict(SETTINGS),
                decode_loop="lean",
                notice="Older turns were left out.",
                interrupted=False,
                message_index=1,
                after_message=0,
                model="tiny",
            ),
        )
    ]
    return record.to_document()


def paths(value, path=()):
    """Every place in a JSON document: (path, value) pairs, the document itself excluded."""
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return
    for key, item in items:
        yield path + (key,), item
        yield from paths(item, path + (key,))


def replaced(document: dict, path: tuple, new) -> dict:
    copy = json.loads(json.dumps(document))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


def kind(value) -> str:
    return "bool" if isinstance(value, bool) else "number" if isinstance(value, (int, float)) else type(value).__name__


PLACES = [path for path, _ in paths(valid_document())]
JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


def test_the_issues_chat_whose_reply_notice_is_a_list_is_moved_aside_and_the_window_starts(open_window):
    """Was: reply_note raised a TypeError at every launch, because the file was kept."""
    document = valid_document()
    document["replies"][0]["context"]["notice"] = ["not", "text"]
    folder = chats_folder()
    folder.mkdir(parents=True)
    (folder / f"{document['id']}.json").write_bytes(encode_document(document))
    window = open_window(show=False)
    shown = window.chat_panel.transcript.toPlainText()
    assert "replies[0].context.notice must be str or null, not list" in shown and "moved aside" in shown
    assert not (folder / f"{document['id']}.json").exists() and list((folder / CORRUPT_FOLDER).iterdir())
    window.close()
    window = open_window(show=False)  # and the next launch is clean
    assert "could not be read" not in window.chat_panel.transcript.toPlainText()


def test_every_field_of_the_wrong_type_never_stops_the_launch(open_window):
    """Property: one field anywhere in a saved chat replaced by well-formed JSON of another type."""
    window = open_window(show=False)
    store = window.saved_chats.keeper.store

    @settings(
        max_examples=120,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(place=st.sampled_from(PLACES), new=JSON_VALUES)
    def open_edited_chat(place, new):
        original = dict(paths(valid_document()))[place]
        if kind(new) == kind(original):
            return
        chat_id = f"20250101-000000-{abs(hash((place, repr(new)))) % 16**8:08x}"
        document = replaced(valid_document(chat_id), place, new)
        path = store.path_for(chat_id)
        store.folder.mkdir(parents=True, exist_ok=True)
        path.write_bytes(encode_document(document))
        window.saved_chats.restore()  # what the launch does: list the chats, open the newest
        opened = window.saved_chats.current_chat_id == chat_id
        corrupt = store.folder / CORRUPT_FOLDER
        moved = not path.exists() and any(kept.name.startswith(chat_id) for kept in corrupt.glob("*.json"))
        assert opened or moved, (place, new)
        if opened:
            window.saved_chats.keeper.delete(chat_id)

    open_edited_chat()


@pytest.mark.parametrize(
    "field, value, reason",
    [
        (("settings", "temperature"), "hot", "settings.temperature must be int or float, not str"),
        (("replies", 0, "trace", "server", "timings"), ["x"], "server.timings must be dict or null, not list"),
        (
            ("replies", 0, "trace", "server", "timings", "prompt_ms"),
            {"a": 1},
            "timings.prompt_ms must be a number or null",
        ),
        # Text where the meter divides: the server view's TTFT-minus-prompt-time raised a TypeError (found by the
        # property test above).
        (
            ("replies", 0, "trace", "server", "timings", "prompt_ms"),
            "1.5",
            "timings.prompt_ms must be a number or null",
        ),
        (("replies", 0, "trace", "server", "timings", "source"), 3, "timings.source must be text or null"),
        (("replies", 0, "trace", "timestamps_ns", 0), 10**400, "timestamps_ns holds a number past 64 bits"),
        (("replies", 0, "trace", "request_start_ns"), 2**64, "request_start_ns is past 64 bits"),
        (("replies", 0, "context", "message_index"), "1", "message_index must be int or null, not str"),
        (("replies", 0, "context", "streaming"), 1, "context.streaming must be bool, not int"),
        (("replies", 0, "context", "settings", "seed"), 2**80, "context.settings.seed must be int or null"),
    ],
)
def test_a_wrong_field_is_named_in_the_refusal(field, value, reason):
    with pytest.raises(ChatFileError, match=reason.replace("[", r"\[").replace("]", r"\]")):
        decode_document(encode_document(replaced(valid_document(), field, value)))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_numbers_that_are_not_finite_are_refused(literal):
    text = encode_document(valid_document()).decode().replace('"temperature": 0.0', f'"temperature": {literal}')
    with pytest.raises(ChatFileError, match="not a number a chat may hold|too large"):
        decode_document(text.encode())


SMALL_REPLY = {
    "context": {"streaming": True},
    "trace": {
        "request_start_ns": 1000,
        "prompt_tokens": 5,
        "token_ids": [1, 2],
        "token_texts": ["Hi", "!"],
        "timestamps_ns": [2000, 3000],
        "stop_reason": "eos",
        "error": None,
        "tail_text": "",
        "prefill_progress": [],
    },
}


def _many_replies(count: int) -> bytes:
    """A chat of `count` small replies, built as bytes (a million of them: about 212 MB, as in the issue)."""
    document = valid_document()
    reply = json.dumps(SMALL_REPLY).encode()
    document["replies"] = []
    head = encode_document(document)
    assert head.endswith(b'"replies": []}')
    return head[:-3] + b"[" + b", ".join([reply] * count) + b"]}"


def test_the_issues_chat_of_a_million_replies_is_refused_with_its_reason_before_it_is_parsed(open_window):
    """Was: the launch froze for 222 s (8.7 GB) before any window appeared."""
    data = _many_replies(10**6)
    assert 150 * 2**20 < len(data) < 256 * 2**20  # under the file cap: the count is what refuses it
    folder = chats_folder()
    folder.mkdir(parents=True)
    (folder / f"{valid_document()['id']}.json").write_bytes(data)
    del data
    window = open_window(show=False)
    shown = window.chat_panel.transcript.toPlainText()
    assert f"it holds more than {MAX_REPLIES:,} replies" in shown and "moved aside" in shown


def test_a_chat_at_the_bounds_opens_and_one_past_them_is_refused():
    assert len(decode_document(_many_replies(MAX_REPLIES)).replies) == MAX_REPLIES
    with pytest.raises(ChatFileError, match=f"more than {MAX_REPLIES:,} replies"):
        decode_document(_many_replies(MAX_REPLIES + 1))
    store = ChatStore()
    assert store.notices == [] and CHAT_FORMAT

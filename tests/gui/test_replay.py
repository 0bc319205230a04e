"""An exported trace replays in a window marked REPLAY, at its own pace or the sliders'; a bad file is refused."""

import json

import pytest

from core.timing.events import FinishedEvent, PromptCacheReport, StopReason, TokenEvent
from core.timing.export import traces_to_json
from core.timing.replay import ReplayFileError, read_replay
from core.timing.trace import ReplyTrace

MS = 1_000_000


def exported_trace() -> bytes:
    trace = ReplyTrace(request_start_ns=0, prompt_tokens=5)
    trace.record(PromptCacheReport(5, 3, "the chat's history was reused from the cache"))
    for index, (text, at) in enumerate((("Hel", 200), ("lo", 220), (" there", 260), ("!", 280))):
        trace.record(TokenEvent(index, index, text, at * MS))
    trace.record(FinishedEvent(StopReason.EOS, 4, 281 * MS))
    return traces_to_json([trace]).encode("utf-8")


def test_a_replay_is_rescheduled_to_the_chosen_ttft_and_tpot_keeping_its_rhythm():
    reply = read_replay(exported_trace())[0]
    assert reply.ttft_s == pytest.approx(0.2) and reply.tpot_s == pytest.approx(0.08 / 3)
    assert reply.rescheduled(reply.ttft_s, reply.tpot_s) == pytest.approx(reply.times_s)  # real speed
    faster = reply.rescheduled(0.05, reply.tpot_s / 2)
    assert faster == pytest.approx((0.05, 0.06, 0.08, 0.09))


@pytest.mark.parametrize(
    "data, says",
    [
        (b"\xff\xfe", "not JSON"),
        (b'{"format": "latencylab-chat/1"}', "not a Latency Lab trace export"),
        (
            b'{"format": "latencylab-trace/1", "replies": [{"tokens": [{"text": "a", "t_s": 2}, {"text": "b", "t_s": 1}]}]}',
            "goes back in time",
        ),
        (b'{"format": "latencylab-trace/1", "replies": [{"tokens": []}]}', "no reply with tokens"),
    ],
)
def test_bad_trace_files_are_refused_saying_why(data, says):
    with pytest.raises(ReplayFileError, match=says):
        read_replay(data)


def test_the_window_replays_a_trace_marked_as_replay_and_refuses_a_bad_one(qtbot, bare_window, tmp_path):
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_bytes(exported_trace())
    bad.write_text("{ not json", encoding="utf-8")
    assert bare_window.open_replay(bad) is None
    assert "Cannot replay bad.json: the file is not JSON text" in bare_window.statusBar().currentMessage()
    replay = bare_window.open_replay(good)
    assert replay.windowTitle().startswith("REPLAY") and replay.ttft_slider.value() == 200
    assert replay.prompt_label.text() == "prompt: 5 tokens, 3 cached"  # the cached count travels with the trace
    replay.ttft_slider.setValue(20)
    replay.tpot_slider.setValue(5)
    replay.play()
    qtbot.waitUntil(lambda: not replay.playing, timeout=10_000)
    assert replay.shown_text() == "Hello there!" and "replayed 4 tokens" in replay.status.text()
    assert len(replay.plot.ttft_item.getData()[1]) == 1
    replay.close()


@pytest.mark.parametrize("streaming", [True, False], ids=["streaming", "not-streaming"])
def test_a_replay_of_this_chat_shows_what_the_user_saw_with_streaming_on_or_off(qtbot, bare_window, streaming):
    from core.chats.record import ReplyRecord
    from core.chats.reply_context import ReplyContext
    from gui.replay.replay_dialog import replay_this_chat

    trace = read_replay(exported_trace())  # the recorded reply, as the chat keeps it
    recorded = ReplyTrace(request_start_ns=0, prompt_tokens=5)
    for index, (text, at) in enumerate(zip(trace[0].texts, trace[0].times_s)):
        recorded.record(TokenEvent(index, index, text, round(at * 1e9)))
    recorded.record(FinishedEvent(StopReason.EOS, 4, 281 * MS))
    bare_window.saved_chats.records.append(ReplyRecord(recorded, ReplyContext(streaming=True)))
    replay = replay_this_chat(bare_window)
    replay.streaming_toggle.setChecked(streaming)
    replay.ttft_slider.setValue(20)
    replay.tpot_slider.setValue(300)  # gaps of many frames, so tokens show one after another
    replay.play()
    qtbot.waitUntil(lambda: not replay.playing, timeout=10_000)
    assert replay.shown_text() == "Hello there!"
    assert "REPLAY" in replay.plot.getPlotItem().titleLabel.text
    assert "REPLAY" in replay.visible_plot.getPlotItem().titleLabel.text
    steps = replay.visible_plot._y.view()
    # Streaming: a staircase (a frame held up for long on a busy machine may merge two of its four steps);
    # without: flat until E2E, then the whole reply at once.
    levels = len(set(steps.tolist()))
    assert levels >= 3 if streaming else levels == 2


def test_a_replay_at_recorded_speed_puts_the_recorded_gaps_in_the_interval_plot(qtbot, bare_window, tmp_path):
    import numpy as np

    exported = tmp_path / "trace.json"
    exported.write_bytes(exported_trace())
    replay = bare_window.open_replay(exported)
    replay.play()  # the sliders start at the recorded TTFT and TPOT: real speed
    qtbot.waitUntil(lambda: not replay.playing, timeout=10_000)
    recorded = np.array([0.200, 0.220, 0.260, 0.280])
    gaps_ms = np.diff(recorded) * 1000
    assert 10 ** replay.plot.ttft_item.getData()[1][0] == pytest.approx(200, abs=1)  # the plot is logarithmic
    assert np.allclose(10 ** replay.plot._log_y.view(), gaps_ms, rtol=0.02)
    replay.close()


def test_choosing_another_reply_clears_what_the_last_one_left(qtbot, bare_window, tmp_path):
    """Its transcript, plots and "replayed …" line stayed beside the next reply's prompt and sliders."""
    exported = tmp_path / "two.json"
    two = json.loads(exported_trace())
    two["replies"] = [two["replies"][0], dict(two["replies"][0], prompt_tokens=9)]
    exported.write_text(json.dumps(two), encoding="utf-8")
    replay = bare_window.open_replay(exported)
    replay.play()
    qtbot.waitUntil(lambda: not replay.playing, timeout=10_000)
    assert replay.shown_text() == "Hello there!" and replay.status.text().startswith("replayed 4 tokens")
    replay.reply_box.setCurrentIndex(1)
    assert replay.shown_text() == "" and replay.status.text() == ""
    assert replay.plot.ttft_item.getData()[0] is None or len(replay.plot.ttft_item.getData()[0]) == 0
    assert "9 tokens" in replay.prompt_label.text()
    replay.close()

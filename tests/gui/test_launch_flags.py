"""Flags given on the command line win over the window's saved settings for that launch."""

import pytest

from cli.main import build_parser, given_flags
from core.chats.record import ChatRecord
from core.chats.session import Message
from core.chats.store import ChatStore
from gui.launch import window_overrides
from gui.settings.store import WindowSettings, load_window_settings, save_window_settings


def test_generation_flags_given_at_launch_win_over_saved_settings(open_window):
    save_window_settings(
        WindowSettings(dtype="int4", dtype_chosen=True, temperature=0.2, max_new_tokens=99, seed=11, decode_loop="lean")
    )
    args = build_parser().parse_args(
        [
            "--temperature",
            "0.7",
            "--max-new-tokens",
            "50",
            "--seed",
            "3",
            "--decode-loop",
            "generate",
            "--device",
            "cpu",
            "--dtype",
            "float32",
        ]
    )
    window = open_window(show=False, overrides=window_overrides(given_flags(args)))
    panel = window.chat_panel.settings_panel
    settings = panel.generation_settings()
    assert (settings.temperature, settings.max_new_tokens, settings.seed, settings.decode_loop) == (
        0.7,
        50,
        3,
        "generate",
    )
    assert panel.dtype() == "float32"  # an explicit float32 overrides a saved int4


def test_flags_left_out_keep_the_saved_settings(open_window):
    save_window_settings(WindowSettings(dtype="int4", dtype_chosen=True, temperature=0.2, seed=4_000_000_000))
    window = open_window(show=False, overrides=window_overrides(given_flags(build_parser().parse_args([]))))
    try:
        settings = window.chat_panel.settings_panel.generation_settings()
        assert window.chat_panel.settings_panel.dtype() == "int4" and settings.temperature == 0.2
        assert settings.seed == 4_000_000_000  # core's whole seed range, past a spin box's 2**31 - 1
    finally:
        window.close()
    assert load_window_settings().seed == 4_000_000_000


def test_no_seed_is_saved_as_none_like_core_and_an_old_minus_one_reads_as_none(qtbot):
    from gui.settings.store import open_settings

    save_window_settings(WindowSettings(seed=None))
    assert load_window_settings().seed is None
    store = open_settings()
    store.setValue("seed", -1)  # how older versions stored "no seed"
    store.sync()
    assert load_window_settings().seed is None


def test_flags_given_at_launch_win_over_the_settings_of_the_chat_reopened_at_launch(open_window):
    """The app reopens the newest chat as it starts; `latencylab --max-new-tokens 50` still means 50 (an Xvfb launch
    showed the reopened chat's 400). What the flags left out comes from the chat."""
    other, record = ChatRecord.new("older"), ChatRecord.new("newest")
    for chat, settings in (
        (other, {"max_new_tokens": 77}),
        (record, {"max_new_tokens": 99, "temperature": 0.3, "top_p": 0.5}),
    ):
        chat.messages = [Message("user", "hi"), Message("assistant", "hello")]
        chat.settings = settings
        assert ChatStore().save(chat) is None  # saved without a notice
    args = build_parser().parse_args(["--max-new-tokens", "50"])
    window = open_window(show=False, overrides=window_overrides(given_flags(args)))
    panel = window.chat_panel.settings_panel
    assert window.saved_chats.current_chat_id == record.chat_id  # the chat was reopened
    assert panel.max_new_tokens.value() == 50
    assert panel.top_p.value() == pytest.approx(0.5) and panel.temperature.value() == pytest.approx(0.3)
    # A chat the user opens later brings its own settings.
    assert window.saved_chats.open_chat(other.chat_id)
    assert panel.max_new_tokens.value() == 77

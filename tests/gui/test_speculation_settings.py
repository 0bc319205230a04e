"""The speculation fields in the window's settings: core's choices and range, saved like the others, in every reply."""

import pytest

from cli.main import build_parser, given_flags
from core.errors import InvalidSettingsError
from core.settings import DRAFT_TOKENS, SPECULATION
from gui.launch import window_overrides
from gui.main_window import MainWindow
from gui.settings.check import apply_chat_settings
from gui.settings.store import WindowSettings, load_window_settings, open_settings, save_window_settings


def _window(qtbot, overrides=None) -> MainWindow:
    window = MainWindow(overrides=overrides)
    qtbot.addWidget(window)
    return window


def test_the_fields_offer_cores_choices_and_range_and_start_at_its_defaults(qtbot):
    window = _window(qtbot)
    try:
        fields = window.chat_panel.settings_panel.speculation
        assert [fields.choice.itemData(i) for i in range(fields.choice.count())] == list(SPECULATION.choices)
        assert fields.choice.currentText() == "off" and "prompt lookup" in fields.choice.itemText(1)
        assert (fields.drafts.minimum(), fields.drafts.maximum()) == (DRAFT_TOKENS.low, DRAFT_TOKENS.high)
        assert fields.draft_tokens() == DRAFT_TOKENS.default and not fields.drafts.isEnabled()
        settings = window.chat_panel.settings_panel.generation_settings()
        assert (settings.speculation, settings.draft_tokens) == (SPECULATION.default, DRAFT_TOKENS.default)
    finally:
        window.close()


def test_speculation_picked_reaches_the_reply_settings_and_survives_a_restart(qtbot):
    window = _window(qtbot)
    try:
        fields = window.chat_panel.settings_panel.speculation
        fields.choice.setCurrentIndex(fields.choice.findData("ngram"))
        assert fields.drafts.isEnabled()
        fields.drafts.setValue(7)
        settings, _system, _streaming = window._reply_settings()
        assert (settings.speculation, settings.draft_tokens) == ("ngram", 7)
        assert window._chat_settings()["speculation"] == "ngram"  # saved with the chat too
        window.chat_panel.settings_panel.set_folded(True)
        assert "speculate ngram ×7" in window.chat_panel.settings_panel.fold_header.summary.text()
    finally:
        window.close()
    assert (load_window_settings().speculation, load_window_settings().draft_tokens) == ("ngram", 7)
    reopened = _window(qtbot)
    try:
        assert reopened.chat_panel.settings_panel.generation_settings().speculation == "ngram"
        assert reopened.chat_panel.settings_panel.speculation.draft_tokens() == 7
    finally:
        reopened.close()


def test_launch_flags_win_and_a_bad_saved_value_is_refused_with_a_notice(qtbot):
    save_window_settings(WindowSettings(speculation="ngram", draft_tokens=3))
    args = build_parser().parse_args(["--speculate", "off", "--draft-tokens", "9"])
    window = _window(qtbot, window_overrides(given_flags(args)))
    try:
        settings = window.chat_panel.settings_panel.generation_settings()
        assert (settings.speculation, settings.draft_tokens) == ("off", 9)
    finally:
        window.close()
    store = open_settings()
    store.setValue("speculation", "medusa")
    store.setValue("draft_tokens", 99)
    store.sync()
    window = _window(qtbot)
    try:
        settings = window.chat_panel.settings_panel.generation_settings()
        assert (settings.speculation, settings.draft_tokens) == (SPECULATION.default, DRAFT_TOKENS.default)
        notices = window.chat_panel.transcript.toPlainText()
        assert f"speculation must be one of: {', '.join(SPECULATION.choices)}; got 'medusa'" in notices
        assert "draft tokens must be a whole number from 1 to 16; got 99" in notices
    finally:
        window.close()


def test_a_reopened_chats_speculation_is_put_back_and_a_bad_one_refused(qtbot):
    window = _window(qtbot)
    try:
        panel = window.chat_panel.settings_panel
        assert apply_chat_settings(panel, {"speculation": "ngram", "draft_tokens": 5}) == []
        assert (panel.speculation.speculation(), panel.speculation.draft_tokens()) == ("ngram", 5)
        problems = apply_chat_settings(panel, {"speculation": "eagle", "draft_tokens": 0})
        assert len(problems) == 2 and all(problem.startswith("This chat's setting was refused") for problem in problems)
        assert (panel.speculation.speculation(), panel.speculation.draft_tokens()) == ("ngram", 5)
    finally:
        window.close()


def test_a_draft_model_is_a_file_named_beside_the_choice_saved_and_refused_without_one(qtbot, tmp_path):
    drafter = tmp_path / "small.gguf"
    window = _window(qtbot)
    try:
        window.show()
        fields = window.chat_panel.settings_panel.speculation
        assert not fields.draft_model_box.isVisible()  # only for a draft model
        fields.choice.setCurrentIndex(fields.choice.findData("draft"))
        assert fields.draft_model_box.isVisible() and fields.draft_model_button.isVisible()
        with pytest.raises(InvalidSettingsError, match="needs one"):
            window.chat_panel.settings_panel.generation_settings()
        fields.draft_model_box.setText(str(drafter))
        settings = window.chat_panel.settings_panel.generation_settings()
        assert (settings.speculation, settings.draft_model) == ("draft", str(drafter))
    finally:
        window.close()
    assert load_window_settings().draft_model == str(drafter)
    reopened = _window(qtbot)
    try:
        assert reopened.chat_panel.settings_panel.generation_settings().draft_model == str(drafter)
    finally:
        reopened.close()
    save_window_settings(WindowSettings(speculation="draft", draft_model=""))
    window = _window(qtbot)
    try:
        assert window.chat_panel.settings_panel.generation_settings().speculation == SPECULATION.default
        assert "speculation with a draft model needs one" in window.chat_panel.transcript.toPlainText()
    finally:
        window.close()
